"""evaluate/Placement: formulas by hand, invalid worker_job pinned, share invariants by hypothesis."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetplace as hp
from hetplace import InvalidPlacementError, InvalidProblemTypeError
from hetplace.placement import largest_remainder_shares

from methods import HEURISTIC, METHODS

#: the baselines of tests/methods.py (rows without options): equal, random, greedy, keep-greedy
BASELINES = [m.method for m in HEURISTIC if m.method not in ("smp", "auto")]


@pytest.fixture
def problem():
    return hp.Problem(
        [[10.0, 20.0, 0.0], [5.0, 5.0, 8.0]], [2, 2, 1], [64, 32], [100, 1000],
        grad_bytes=[1e6, 2e6], bandwidth=1e8,
    )


def test_evaluate_by_hand(problem):
    pl = hp.evaluate(problem, [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(pl.type_counts, [[1, 2, 0], [1, 0, 1]])
    np.testing.assert_allclose(pl.aggregate_throughput, [50.0, 13.0])
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


# ---------------------------------------------------------------- hostile numbers
@pytest.mark.parametrize(
    "worker_job, exc, pattern",
    [
        # uint64 2**64-1 used to wrap to -1: the worker silently idle, is_feasible True
        (np.array([2**64 - 1, 1, 0, 0, 1], dtype=np.uint64), InvalidPlacementError, r"worker_job\[0\] = 18446744073709551615 is not a job index"),
        (np.array([1e30, 1, 0, 0, 1]), InvalidPlacementError, r"worker_job\[0\] = 1e\+30 is not a job index"),
        ([2**70, 1, 0, 0, 1], InvalidPlacementError, r"worker_job\[0\] = 1180591620717411303424 is not a job index"),
        (np.array([0, 1, 0, 0, np.nan]), InvalidPlacementError, r"worker_job must hold integer job indices; got nan for worker 4"),
        (np.array([True, False, True, True, False]), InvalidProblemTypeError, r"worker_job .*got a bool, True at index 0"),
        ([0, True, 0, 0, 1], InvalidProblemTypeError, r"worker_job .*got a bool, True at index 1"),
        (np.array([0, 1, 0, 0, 1], dtype=complex), InvalidProblemTypeError, r"worker_job .*got a complex number"),
        ([0, 1, 0, 0, None], InvalidProblemTypeError, r"worker_job .*got None at index 4"),
    ],
)
def test_worker_job_outside_int64_or_not_an_integer_is_rejected(problem, worker_job, exc, pattern):
    with pytest.raises(exc, match=pattern):
        hp.evaluate(problem, worker_job)
    assert not hp.is_feasible(problem, worker_job)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.float32, object])
def test_worker_job_of_any_integer_valued_dtype_is_accepted(problem, dtype):
    pl = hp.evaluate(problem, np.array([0, 1, 0, 0, 1], dtype=dtype))
    np.testing.assert_array_equal(pl.worker_job, [0, 1, 0, 0, 1])


def test_placement_construction_rejects_a_job_above_max_workers():
    p = hp.Problem(throughput=[[1, 2]], type_counts=[4, 4], batch=[2], iterations=[10])
    with pytest.raises(InvalidPlacementError, match=r"job 0 gets 3 workers in worker_job, but its batch of 2 samples"):
        hp.Placement(p, np.array([-1, -1, -1, -1, 0, 0, 0, -1]))
    with pytest.raises(InvalidPlacementError, match=r"job 0 gets no worker"):
        hp.Placement(p, np.full(8, -1))


def test_placement_repr_is_compact():
    p = hp.Problem(np.ones((500, 1)), [1000], np.full(500, 8), np.ones(500))
    pl = hp.evaluate(p, np.repeat(np.arange(500), 2))
    assert len(repr(pl)) < 200 and "(500 entries)" in repr(pl)
    assert len(str(pl).splitlines()) == 502  # the table is unchanged: one line per job


# ---------------------------------------------------------------------- baselines
def _baseline_instances():
    from instances import tiny_random

    from hetplace.instances import make_instance

    yield from (tiny_random(s) for s in range(120))
    # small batches (8..256) make max_workers bind on some of these
    yield from (tiny_random(s, n_workers=12, n_jobs=3) for s in range(20))
    for fam in ("gavel", "speeds", "synthetic"):
        for s in range(4):
            yield make_instance(fam, s, 40 + 37 * s, 2 + 3 * s)


def test_baselines_match_the_worker_level_reference():
    # the class-level baselines give the placements of the one-worker-at-a-time rules
    import reference as ref
    from hetplace import baselines

    for p in _baseline_instances():
        np.testing.assert_array_equal(baselines.equal_placement(p), ref.equal_placement_reference(p))
        np.testing.assert_array_equal(baselines.greedy_placement(p), ref.greedy_placement_reference(p))
        for seed in range(2):
            np.testing.assert_array_equal(
                baselines.random_placement(p, np.random.default_rng(seed)),
                ref.random_placement_reference(p, np.random.default_rng(seed)),
            )


@pytest.mark.parametrize("method", BASELINES)
def test_baselines_honour_max_workers(method):
    p = hp.Problem(throughput=[[1, 2]], type_counts=[4, 4], batch=[2], iterations=[10])
    pl = hp.place(p, method=method, seed=0)
    assert 1 <= pl.sizes[0] <= 2
    if method == "greedy":
        np.testing.assert_array_equal(pl.type_counts, [[0, 2]])
        assert pl.mean_jct == 5.0
    for q in _baseline_instances():
        assert np.all(hp.place(q, method=method, seed=1).sizes <= q.max_workers)


def test_matching_seed_of_thousands_of_jobs_does_not_recurse():
    # the fastest-first seed strands a job here; the matching seed used to be recursive (RecursionError)
    from hetplace.baselines import _seed_by_matching

    rho = np.zeros((3000, 2))
    rho[:, 0] = 1.0
    rho[2999] = [2.0, 1.0]
    p = hp.Problem(rho, [2999, 1], np.full(3000, 8), np.ones(3000))
    wj = _seed_by_matching(p)
    assert hp.is_feasible(p, wj) and np.all(np.bincount(wj[wj >= 0]) == 1)
    assert hp.place(p, method="equal").sizes.min() == 1


# ------------------------------------------------------------ numeric range edges
def _rebuilt(p, **kw):
    args = dict(throughput=p.throughput, type_counts=p.type_counts, batch=p.batch, iterations=p.iterations,
                grad_bytes=p.grad_bytes, bandwidth=p.bandwidth, worker_speed=None if p.uniform_speed else p.worker_speed)
    args.update(kw)
    return hp.Problem(**args)


#: every row of tests/methods.py whose digits hetplace decides (a MILP solver may round a
#: scaled model differently and pick another of tied optima)
EDGE_METHODS = [(m.method, dict(m.options)) for m in METHODS
                if m.runnable() and m.options.get("exact_method") not in ("milp", "auto")]


@pytest.mark.parametrize("seed", range(6))
def test_answers_are_right_at_the_edges_of_the_supported_range(seed):
    # scaling throughputs by 1e-25 / 1e25 (communication scaled alike), iterations up to 1e30,
    # or gradient size and bandwidth together, changes no placement and scales the JCT exactly
    from instances import tiny_random

    p = tiny_random(seed, speeds=False, comm=True)
    bw, t, g = p.bandwidth, 1e30 / p.iterations.max(), p.grad_bytes[p.grad_bytes > 0]
    up, down = min(1e30 / g.max(), 1e30 / bw), max(1e-30 / g.min(), 1e-30 / bw)  # to either edge
    cases = [
        (_rebuilt(p, throughput=p.throughput * 1e-25, bandwidth=bw * 1e-25), 1e25),
        (_rebuilt(p, throughput=p.throughput * 1e25, grad_bytes=p.grad_bytes / 1e25), 1e-25),
        (_rebuilt(p, iterations=p.iterations * t), t),
        (_rebuilt(p, grad_bytes=p.grad_bytes * down, bandwidth=bw * down), 1.0),
        (_rebuilt(p, grad_bytes=p.grad_bytes * up, bandwidth=bw * up), 1.0),
    ]
    for method, opts in EDGE_METHODS:
        base = hp.place(p, method=method, seed=3, **opts)
        for q, factor in cases:
            got = hp.place(q, method=method, seed=3, **opts)
            np.testing.assert_array_equal(got.worker_job, base.worker_job, err_msg=f"{method} {opts}")
            assert math.isclose(got.mean_jct, base.mean_jct * factor, rel_tol=1e-12), (method, opts)


# ---------------------------------------------------------------- numeric options
@pytest.mark.parametrize(
    "method, options",
    [
        ("smp", dict(fairness_tol=np.float32(0.1))),
        ("smp", dict(fairness_tol=np.array(0.1))),
        ("smp", dict(fairness_tol=0)),
        ("smp", dict(samples=np.int64(8), polish_top=np.int32(4), max_rounds=np.uint8(4))),
        ("auto", dict(latency_budget=np.float32(0.01))),
        ("auto", dict(latency_budget=np.int64(1))),
    ],
)
def test_numpy_numeric_options_are_accepted(problem, method, options):
    assert np.isfinite(hp.place(problem, method=method, seed=0, **options).mean_jct)


@pytest.mark.parametrize(
    "method, options, pattern",
    [
        ("smp", dict(fairness_tol=True), r"fairness_tol must be a number in \[0, 1\)"),
        ("smp", dict(fairness_tol=0.1 + 0j), r"fairness_tol must be a number in \[0, 1\)"),
        ("smp", dict(fairness_tol=np.nan), r"fairness_tol must be a number in \[0, 1\)"),
        ("smp", dict(fairness_tol="0.1"), r"fairness_tol must be a number in \[0, 1\)"),
        ("smp", dict(samples=True), r"samples must be a positive integer"),
        ("smp", dict(polish_top=4 + 0j), r"polish_top must be a positive integer"),
        ("auto", dict(latency_budget=True), r"latency_budget must be a positive number of seconds"),
        ("auto", dict(latency_budget=1j), r"latency_budget must be a positive number of seconds"),
        ("auto", dict(latency_budget=10**400), r"latency_budget must be a positive number of seconds"),
    ],
)
def test_bool_and_complex_numeric_options_are_rejected(problem, method, options, pattern):
    with pytest.raises(hp.InvalidOptionError, match=pattern):
        hp.place(problem, method=method, seed=0, **options)


@pytest.mark.parametrize("reference", [None, "x", "1.0", 0, 0.0, -1.0, math.nan, math.inf, True, 1 + 0j, [1.0],
                                       np.array([1.0, 2.0])])
def test_gap_to_rejects_a_reference_that_is_not_a_positive_mean_jct(problem, reference):
    # None / strings were TypeError / ValueError, 0 ZeroDivisionError, NaN and inf silent NaN / -1 gaps
    pl = hp.place(problem, "greedy")
    with pytest.raises(hp.InvalidOptionError, match="reference must be"):
        pl.gap_to(reference)


def test_gap_to_accepts_placements_results_and_numbers(problem):
    pl = hp.place(problem, "greedy")
    res = hp.solve_exact(problem)
    assert pl.gap_to(pl) == 0.0
    assert pl.gap_to(res) == pl.mean_jct / res.objective - 1.0
    assert pl.gap_to(np.float32(2.0)) == pl.gap_to(2) == pl.mean_jct / 2.0 - 1.0


@pytest.mark.parametrize("reference", [5e-324, 1e-310])
def test_gap_to_a_subnormal_reference_is_an_error_not_inf(problem, reference):
    pl = hp.place(problem, "greedy")
    with pytest.raises(hp.InvalidOptionError, match="too small"):
        pl.gap_to(reference)


def test_shares_computed_on_first_use_are_the_largest_remainder_shares_from_any_thread():
    """``Placement.shares`` is computed when first read (a decision rarely reads it); threads that
    read it first at the same time all get the same, right values."""
    import threading

    from hetplace.data import gavel_path
    from hetplace.instances import gavel_instance

    p = gavel_instance(3, 64, 8, gavel_path())
    wj = hp.place(p, "greedy").worker_job
    want = largest_remainder_shares(p.batch, wj, p.worker_throughput)
    for _ in range(20):
        pl = hp.evaluate(p, wj)
        got = []
        threads = [threading.Thread(target=lambda: got.append(np.array(pl.shares))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 4 and all(np.array_equal(g, want) for g in got)
