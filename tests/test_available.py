"""Workers that are down: ``Problem(..., available=)`` (issue 10).

A down worker has throughput 0 for every job and a worker class of its own;
every method must leave it idle, the exact methods must still be exact, and
SMP must stay within its stated gap of the exact optimum.
"""
import itertools
import math

import numpy as np
import pytest

import hetplace
from hetplace import Problem, evaluate, is_feasible, place, solve_exact
from hetplace.errors import InvalidPlacementError, InvalidProblemError, InvalidProblemTypeError
from hetplace.smp import worker_classes

from instances import down_instances, gavel_problem, tiny_random, with_down
from methods import EXACT, SMP, by_name, rows_for, run
from reference import brute_force_reference, mean_jct_reference

BACKENDS = tuple(m.options["backend"] for m in SMP if m.options["backend"] != "auto")
#: beyond the table: SMP's ordinal matching
EXTRA = [("smp", dict(backend="cython" if by_name("smp-cython").runnable() else "numba", matching="ordinal"))]


def _idle_down(problem, worker_job):
    return bool(np.all(np.asarray(worker_job)[~problem.available] == -1))


def _brute_up_only(problem):
    """Best mean JCT over every assignment of the UP workers only (down ones fixed at -1).

    Independent of ``worker_throughput``: the JCT comes from
    :func:`mean_jct_reference`, which prices a job from ``throughput`` and
    ``worker_speed`` and from nothing the Problem derived.
    """
    up = np.flatnonzero(problem.available)
    best, arg = math.inf, None
    for assignment in itertools.product(range(-1, problem.n_jobs), repeat=up.size):
        wj = np.full(problem.n_workers, -1, dtype=np.int64)
        wj[up] = assignment
        value = mean_jct_reference(problem, wj)
        if value < best:
            best, arg = value, wj
    return best, arg


# ---------------------------------------------------------------- the model
def test_down_worker_has_zero_throughput_for_every_job():
    p = Problem([[1.0, 2.0], [3.0, 1.0]], [2, 2], [8, 8], [10.0, 10.0],
                available=[True, False, True, False])
    assert p.worker_throughput[:, [1, 3]].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert p.worker_throughput[:, [0, 2]].tolist() == [[1.0, 2.0], [3.0, 1.0]]
    assert p.n_available == 2 and p.available_counts.tolist() == [1, 1]
    assert not p.uniform_speed  # workers of one type are no longer interchangeable


def test_all_available_is_the_default_problem_bit_for_bit():
    base = tiny_random(3, speeds=True)
    same = Problem.from_dict({**base.to_dict(), "available": [True] * base.n_workers})
    for name in ("worker_throughput", "size_cost", "comm_time", "class_speed"):
        assert np.array_equal(getattr(base, name), getattr(same, name))
    assert base.uniform_speed == same.uniform_speed
    assert "available" not in same.to_dict() and repr(same) == repr(base)
    for method in ("smp", "greedy", "equal"):
        assert place(base, method, seed=5).worker_job.tolist() == place(same, method, seed=5).worker_job.tolist()


def test_down_worker_never_shares_a_class_with_an_up_one():
    p = Problem([[1.0], [2.0]], [4], [8, 8], [10.0, 10.0], available=[True, False, True, False])
    _, mc, class_of, _, _ = worker_classes(p)
    assert class_of[0] == class_of[2] and class_of[1] == class_of[3] and class_of[0] != class_of[1]
    assert sorted(mc.tolist()) == [2, 2]


def test_to_dict_from_dict_and_with_worker_speed_carry_available():
    mask = [True, False, True, True, False]
    p = Problem([[1.0, 2.0], [3.0, 1.0]], [2, 3], [8, 8], [10.0, 10.0], available=mask)
    assert p.to_dict()["available"] == mask
    assert Problem.from_dict(p.to_dict()).available.tolist() == mask
    q = p.with_worker_speed([1.0, 0.5, 0.5, 1.0, 1.0])
    assert q.available.tolist() == mask and q.worker_throughput[:, [1, 4]].sum() == 0.0
    assert "2 down" in repr(p) and "[1, 4]" in repr(p)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("bad, error, text", [
    ([1, 0, 1, 1], InvalidProblemTypeError, "available must be bools"),
    ([1.0, 1.0, 0.0, 1.0], InvalidProblemTypeError, "available must be bools"),
    (["True", "False", "True", "True"], InvalidProblemTypeError, "available must be bools"),
    ([True, None, True, True], InvalidProblemTypeError, "got None at index 1"),
    ("yes", InvalidProblemTypeError, "the string 'yes'"),
    ([True, True, True], InvalidProblemError, "one bool per worker (sum of type_counts = 4)"),
    ([[True, True], [True, True]], InvalidProblemError, "got shape (2, 2)"),
    ([False] * 4, InvalidProblemError, "at least one worker True"),
])
def test_available_malformed_is_rejected(bad, error, text):
    with pytest.raises(error) as exc:
        Problem([[1.0, 2.0], [3.0, 1.0]], [2, 2], [8, 8], [10.0, 10.0], available=bad)
    assert text in str(exc.value)


def test_available_numpy_bool_array_is_accepted():
    p = Problem([[1.0, 2.0]], [2, 2], [8], [10.0], available=np.array([True, False, False, True]))
    assert p.available.tolist() == [True, False, False, True]


def test_more_jobs_than_available_workers_is_rejected():
    with pytest.raises(InvalidProblemError, match="3 jobs for 2 available workers"):
        Problem(np.ones((3, 1)), [4], [8, 8, 8], [10.0] * 3, available=[True, False, True, False])


def test_job_whose_types_are_all_down_is_rejected():
    with pytest.raises(InvalidProblemError, match="no type with an available worker"):
        Problem([[1.0, 0.0], [1.0, 1.0]], [1, 3], [8, 8], [10.0, 10.0], available=[False, True, True, True])


def test_coverability_counts_only_available_workers():
    # both jobs run on type 0 only; one of its two workers is down
    with pytest.raises(InvalidProblemError, match="available workers per type, \\[1, 2\\]"):
        Problem([[1.0, 0.0], [2.0, 0.0]], [2, 2], [8, 8], [10.0, 10.0], available=[True, False, True, True])


def test_min_workers_flow_counts_only_available_workers():
    with pytest.raises(InvalidProblemError, match="have only 2 available workers"):
        Problem([[1.0, 0.0], [1.0, 1.0]], [3, 2], [8, 8], [10.0, 10.0], min_workers=[3, 1],
                available=[True, False, True, True, True])
    with pytest.raises(InvalidProblemError, match="no placement gives every job its min_workers"):
        Problem([[1.0, 0.0], [1.0, 0.0]], [3, 2], [8, 8], [10.0, 10.0], min_workers=[1, 2],
                available=[True, False, True, True, True])


def test_down_worker_given_a_job_is_rejected_by_evaluate():
    p = Problem([[1.0, 2.0], [3.0, 1.0]], [2, 2], [8, 8], [10.0, 10.0], available=[True, False, True, True])
    with pytest.raises(InvalidPlacementError, match=r"worker 1 is down \(available\[1\] is False\)"):
        evaluate(p, [0, 1, -1, -1])
    assert not is_feasible(p, [0, 1, -1, -1])
    assert is_feasible(p, [0, -1, 1, -1])


# ---------------------------------------------------------------- every method
TINY = down_instances(lambda s: tiny_random(s, n_workers=int(3 + s % 5)), range(40))


@pytest.mark.parametrize("seed, p", TINY[:30])
def test_every_method_leaves_down_workers_idle(seed, p):
    """Every row of tests/methods.py that applies (and SMP's ordinal form) leaves the down workers idle."""
    runs = [(m.method, dict(m.options)) for m in rows_for(p)] + EXTRA
    for method, opts in runs:
        wj = place(p, method, seed=seed, **opts).worker_job
        assert _idle_down(p, wj), (method, opts, wj.tolist(), p.available.tolist())


@pytest.mark.parametrize("seed, p", TINY[:30])
def test_exact_equals_brute_force_over_up_workers(seed, p):
    ref, _ = _brute_up_only(p)
    ref2, _ = brute_force_reference(p)
    assert ref == pytest.approx(ref2, rel=1e-12)
    for m in rows_for(p, EXACT):
        got = run(m, p, seed=seed).mean_jct
        assert got == pytest.approx(ref, rel=m.rel), m.name


def test_type_dp_runs_on_available_counts():
    p = Problem([[4.0, 1.0], [1.0, 3.0], [2.0, 2.0]], [3, 3], [64, 64, 64], [100.0, 200.0, 50.0],
                available=[True, False, True, True, True, False])
    assert hetplace.exact._dp_refusal(p) is None
    assert hetplace.exact.dp_size(p)[0] == 3 * 3  # (2 + 1) * (2 + 1) states
    dp = solve_exact(p, method="dp")
    assert dp.method == "dp" and _idle_down(p, dp.placement.worker_job)
    assert dp.objective == pytest.approx(_brute_up_only(p)[0], rel=1e-9)


def test_type_dp_refuses_slow_available_worker_but_not_slow_down_one():
    base = dict(throughput=[[1.0], [2.0]], type_counts=[3], batch=[8, 8], iterations=[10.0, 10.0])
    slow_down = Problem(**base, worker_speed=[1.0, 0.5, 1.0], available=[True, False, True])
    assert hetplace.exact._dp_refusal(slow_down) is None
    slow_up = Problem(**base, worker_speed=[1.0, 0.5, 1.0], available=[True, True, False])
    assert "worker 1 has speed 0.5" in hetplace.exact._dp_refusal(slow_up)
    assert solve_exact(slow_up, method="auto").method == "milp"


@pytest.mark.parametrize("matching", ["price", "ordinal"])
def test_backends_give_identical_placements_with_down_workers(matching):
    for seed, p in TINY[:25]:
        got = [place(p, "smp", seed=seed, backend=b, matching=matching).worker_job.tolist() for b in BACKENDS]
        assert got[0] == got[1] == got[2], (seed, got)


def _gavel_down(seed):
    rng = np.random.default_rng([seed, 78])
    K = int(rng.integers(16, 41))
    S = int(rng.integers(4, 13))
    return gavel_problem(seed, K, S, comm=bool(seed % 2))


GAVEL = down_instances(_gavel_down, range(70), frac=0.25)  # measured: mean 0.029 %, worst 1.55 %


def test_class_level_paths_leave_down_workers_idle():
    """Many jobs, few classes: the class market and class polish run (class_modes); down workers stay idle."""
    for seed in range(6):
        p = with_down(gavel_problem(seed, 24, 12, comm=True), seed, frac=0.4)
        S, K, C = p.n_jobs, p.n_workers, worker_classes(p)[1].size
        assert hetplace.smp.class_modes(S, K, C, "price") == (True, True)
        for b in BACKENDS:
            assert _idle_down(p, place(p, "smp", seed=seed, backend=b).worker_job), (seed, b)


def test_smp_gap_to_exact_with_down_workers():
    assert len(GAVEL) >= 60
    gaps = []
    for seed, p in GAVEL:
        exact = solve_exact(p).objective
        smp = place(p, "smp", seed=seed)
        assert _idle_down(p, smp.worker_job)
        gaps.append(smp.mean_jct / exact - 1.0)
    gaps = np.array(gaps)
    assert gaps.min() > -1e-9
    assert gaps.mean() <= 0.005 and gaps.max() <= 0.0204, (gaps.mean(), gaps.max())
