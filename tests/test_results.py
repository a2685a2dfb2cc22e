"""One result base (hetplace._result.Result): the same common fields on every solver result."""

import numpy as np
import pytest

import hetplace as hp
from hetplace._result import Result
from hetplace.data import default_problem
from hetplace.matching import MarketResult, MatchingResult


def _results():
    p = default_problem()
    values = np.array([[3.0, 1.0, 2.0], [1.0, 3.0, 2.0]])
    return [
        hp.solve_exact(p),
        hp.deferred_acceptance(values, [1, 1]),
        hp.deferred_acceptance(values, [1, 1], form="ordinal"),
        hp.market_category(p.worker_throughput, p.work, p.comm_time, [3, 3, 3, 3, 4]),
    ]


@pytest.mark.parametrize("index", range(4))
def test_every_result_has_the_common_and_only_its_own_fields(index):
    res = _results()[index]
    assert isinstance(res, Result)
    d = res.to_dict()
    assert list(d) == list(Result.COMMON + type(res).FIELDS)
    assert res.status in type(res).STATUSES
    assert res.success == (res.status in type(res).SUCCESS)
    assert isinstance(res.message, str) and res.message and isinstance(res.info, dict)


def test_result_classes_share_the_base():
    for cls in (hp.ExactResult, MatchingResult, MarketResult):
        assert issubclass(cls, Result) and not set(cls.FIELDS) & set(Result.COMMON)


def test_a_result_with_a_missing_or_unknown_field_is_a_programming_error():
    with pytest.raises(TypeError, match="missing"):
        MarketResult(status="filled", message="x", worker_job=None)
    with pytest.raises(ValueError, match="status"):
        MarketResult(status="optimal", message="x")


def test_placement_status_says_whether_optimality_was_proved():
    p = default_problem()
    assert hp.place(p, method="exact").status == "optimal"
    assert hp.place(p, method="smp", seed=0).status == "feasible"
    assert hp.evaluate(p, hp.place(p, method="exact").worker_job).status == "feasible"  # re-evaluated: no proof
