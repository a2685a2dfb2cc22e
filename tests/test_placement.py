"""evaluate/Placement: formulas by hand, invalid worker_job pinned, share invariants by hypothesis."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetplace as hp
from hetplace import InvalidPlacementError, InvalidProblemTypeError
from hetplace.placement import largest_remainder_shares


@pytest.fixture
def problem():
    return hp.Problem(
        [[10.0, 20.0, 0.0], [5.0, 5.0, 8.0]], [2, 2, 1], [64, 32], [100, 1000],
        grad_bytes=[1e6, 2e6], bandwidth=1e8,
    )


def test_evaluate_by_hand(problem):
    pl = hp.evaluate(problem, [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(pl.type_counts, [[1, 2, 0], [1, 0, 1]])
    np.testing.assert_allclose(pl.throughput, [50.0, 13.0])
    jct0 = 100 * (64 / 50 + 2 * (2 / 3) * 1e6 / 1e8)
    jct1 = 1000 * (32 / 13 + 2 * (1 / 2) * 2e6 / 1e8)
    np.testing.assert_allclose(pl.jct, [jct0, jct1])
    assert math.isclose(pl.mean_jct, (jct0 + jct1) / 2)
    # quotas 12.8, 25.6, 25.6 -> 13, 26, 25 (largest remainder, ties to the lower index)
    np.testing.assert_array_equal(pl.shares, [13, 12, 26, 25, 20])
    s = pl.slowdown
    assert math.isclose(pl.fairness, s.sum() ** 2 / (2 * (s**2).sum()))
    assert "mean JCT" in str(pl) and "resnet" not in str(pl)


def test_idle_worker_gets_no_share(problem):
    pl = hp.evaluate(problem, [0, -1, 0, 0, 1])
    assert pl.shares[1] == 0
    assert pl.shares[[0, 2, 3]].sum() == 64


@pytest.mark.parametrize(
    "worker_job, exc, pattern",
    [
        ([0, 1, 0], InvalidPlacementError, r"worker_job must have one entry per worker, shape \(5,\); got shape \(3,\)"),
        ([0, 1, 0, 0, 2], InvalidPlacementError, r"worker_job\[4\] = 2 is not a job index: use 0..1, or -1"),
        ([0, 1, 0, 0, -2], InvalidPlacementError, r"worker_job\[4\] = -2 is not a job index"),
        ([0, 0, 0, 0, -1], InvalidPlacementError, r"job 1 gets no worker in worker_job; every job needs at least one"),
        ([1, 1, 1, 1, 0], InvalidPlacementError, r"worker 4 \(type type2\) is given job 0, which cannot run on that type"),
        ([0, 1.5, 0, 0, 1], InvalidPlacementError, r"worker_job must hold integer job indices; got 1.5 for worker 1"),
        (["a"] * 5, InvalidProblemTypeError, r"worker_job must be integer job indices \(-1 idle\) \(real, not bool or complex\); got a string, 'a' at index 0"),
        ("01001", InvalidProblemTypeError, r"worker_job must be 5 integers"),
    ],
)
def test_bad_worker_job(problem, worker_job, exc, pattern):
    with pytest.raises(exc, match=pattern):
        hp.evaluate(problem, worker_job)
    assert not hp.is_feasible(problem, worker_job)


def test_evaluate_needs_problem():
    with pytest.raises(InvalidProblemTypeError, match=r"problem must be a hetplace.Problem; got list"):
        hp.evaluate([1, 2], [0])


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda S: st.tuples(
            st.lists(st.integers(1, 10_000), min_size=S, max_size=S),
            st.lists(st.integers(-1, S - 1), min_size=S, max_size=12),
            st.lists(st.floats(0.01, 1000.0), min_size=12 * S, max_size=12 * S),
        )
    )
)
def test_shares_sum_to_batch(data):
    batch, worker_job, rates = data
    S = len(batch)
    worker_job = np.array(list(range(S)) + worker_job, dtype=np.int64)  # every job has a worker
    K = worker_job.size
    rho = np.resize(np.array(rates), S * K).reshape(S, K)
    shares = largest_remainder_shares(np.array(batch), worker_job, rho)
    assert (shares >= 0).all()
    assert (shares[worker_job < 0] == 0).all()
    for i in range(S):
        mine = worker_job == i
        assert shares[mine].sum() == batch[i]
        # each share is within one sample of its exact quota
        quota = batch[i] * rho[i, mine] / rho[i, mine].sum()
        assert np.all(np.abs(shares[mine] - quota) < 1.0 + 1e-9)


def test_evaluate_does_not_freeze_callers_array(problem):
    # regression: Placement froze the caller's worker_job when no copy was needed
    wj = np.array([0, 1, 0, 0, 1], dtype=np.int64)
    pl = hp.evaluate(problem, wj)
    assert wj.flags.writeable
    wj[0] = 1
    assert pl.worker_job[0] == 0
