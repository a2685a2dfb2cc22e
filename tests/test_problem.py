"""The placement model: validation messages pinned, derived quantities checked by hand."""

import math
import re

import numpy as np
import pytest

import hetplace as hp
from hetplace import InvalidPlacementError, InvalidProblemError, InvalidProblemTypeError


def make(**kw):
    args = dict(
        throughput=[[10.0, 20.0], [5.0, 0.0]],
        type_counts=[2, 1],
        batch=[64, 32],
        iterations=[100, 50],
    )
    args.update(kw)
    return hp.Problem(**args)


@pytest.mark.parametrize(
    "kw, exc, pattern",
    [
        (dict(throughput=[1.0, 2.0]), InvalidProblemError, r"throughput must be a 2-D array of shape \(n_jobs, n_types\); got an array of shape \(2,\)"),
        (dict(throughput="fast"), InvalidProblemTypeError, r"throughput must be numbers; got the string 'fast'"),
        (dict(throughput=[[np.nan, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be finite; got nan at index \(0, 0\)"),
        (dict(throughput=[[np.inf, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be finite; got inf"),
        (dict(throughput=[[-1.0, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be >= 0; got -1.0 for job 0 on type 0"),
        (dict(type_counts=[2, 1, 1]), InvalidProblemError, r"type_counts must have one entry per type \(throughput has 2 columns\); got shape \(3,\)"),
        (dict(type_counts=[2.5, 1]), InvalidProblemError, r"type_counts must be non-negative integers; got 2.5 for type 0"),
        (dict(type_counts=[-1, 3]), InvalidProblemError, r"type_counts must be non-negative integers; got -1.0 for type 0"),
        (dict(type_counts=[0, 0]), InvalidProblemError, r"at least one worker; got \[0, 0\] \(zero workers\)"),
        (dict(throughput=[[1.0, 1.0]] * 4, batch=[1] * 4, iterations=[1] * 4), InvalidProblemError, r"n_jobs <= n_workers; got 4 jobs .* for 3 workers"),
        (dict(throughput=[[10.0, 20.0], [0.0, 0.0]]), InvalidProblemError, r"job 1 can run on no type present in the cluster"),
        (dict(throughput=[[10.0, 20.0], [0.0, 5.0]], type_counts=[2, 0]), InvalidProblemError, r"job 1 can run on no type present"),
        (dict(throughput=[[0.0, 20.0], [0.0, 5.0]]), InvalidProblemError, r"no placement gives every job a worker"),
        (dict(batch=[64]), InvalidProblemError, r"batch must have one value per job, shape \(2,\); got shape \(1,\)"),
        (dict(batch=[64, 0]), InvalidProblemError, r"batch must be > 0 for every job; got 0.0 for job 1"),
        (dict(batch=[64, 2.5]), InvalidProblemError, r"batch must be whole numbers of samples; got 2.5 for job 1"),
        (dict(iterations=[100, np.nan]), InvalidProblemError, r"iterations must be finite; got nan at index 1"),
        (dict(iterations=[100, -3]), InvalidProblemError, r"iterations must be > 0 for every job; got -3.0 for job 1"),
        (dict(grad_bytes=[1.0, -1.0]), InvalidProblemError, r"grad_bytes must be >= 0 for every job; got -1.0 for job 1"),
        (dict(bandwidth=0.0), InvalidProblemError, r"bandwidth must be > 0 bytes/s .*; got 0.0"),
        (dict(bandwidth=float("nan")), InvalidProblemError, r"bandwidth must be > 0 bytes/s"),
        (dict(bandwidth="10G"), InvalidProblemTypeError, r"bandwidth must be a number of bytes/s .*; got the string '10G'"),
        (dict(worker_speed=[1.0, 0.5]), InvalidProblemError, r"worker_speed must have one value per worker \(sum of type_counts = 3\); got shape \(2,\)"),
        (dict(worker_speed=[1.0, 0.0, 1.0]), InvalidProblemError, r"worker_speed must lie in \(0, 1\]; got 0.0 for worker 1"),
        (dict(worker_speed=[1.0, 1.5, 1.0]), InvalidProblemError, r"worker_speed must lie in \(0, 1\]; got 1.5 for worker 1"),
        (dict(worker_speed=[1.0, np.nan, 1.0]), InvalidProblemError, r"worker_speed must be finite; got nan at index 1"),
        (dict(job_names=["a"]), InvalidProblemError, r"job_names must hold 2 names; got 1"),
        (dict(job_names="ab"), InvalidProblemTypeError, r"job_names must be a sequence of 2 names"),
        (dict(type_names=["x", "x"]), InvalidProblemError, r"type_names must be distinct"),
    ],
)
def test_bad_problem_messages(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make(**kw)


def test_errors_are_value_and_type_errors():
    with pytest.raises(ValueError):
        make(batch=[0, 1])
    with pytest.raises(TypeError):
        make(throughput="x")


def test_derived_quantities():
    p = make(grad_bytes=[1e6, 2e6], bandwidth=1e8, worker_speed=[1.0, 0.5, 1.0])
    assert p.n_jobs == 2 and p.n_types == 2 and p.n_workers == 3
    np.testing.assert_array_equal(p.worker_type, [0, 0, 1])
    np.testing.assert_allclose(p.worker_throughput, [[10, 5, 20], [5, 2.5, 0]])
    np.testing.assert_allclose(p.work, [6400, 1600])
    # ring all-reduce: T * 2 (n-1)/n * D / r
    assert p.comm_time[0, 1] == 0.0
    assert math.isclose(p.comm_time[0, 2], 100 * 2 * 0.5 * 1e6 / 1e8)
    assert math.isclose(p.comm_time[1, 3], 50 * 2 * (2 / 3) * 2e6 / 1e8)
    assert not p.uniform_speed
    # alone: job 0 best of {20}, {20,10}, {20,10,5}: 6400/20=320, 6400/30+1=214.3, 6400/35+100*2*(2/3)*0.01=184.19
    assert math.isclose(p.jct_alone[0], 6400 / 35 + 100 * 2 * (2 / 3) * 1e6 / 1e8)
    assert math.isclose(p.jct_alone[1], min(1600 / 5, 1600 / 7.5 + 50 * 1e6 * 2 / 1e8 * 2 * 0.5 / 2 * 2))


def test_arrays_are_read_only_and_roundtrip():
    p = make()
    with pytest.raises(ValueError):
        p.throughput[0, 0] = 3
    q = hp.Problem.from_dict(p.to_dict())
    np.testing.assert_array_equal(q.worker_throughput, p.worker_throughput)
    assert q.bandwidth == math.inf


def test_scalar_per_job_values_broadcast():
    p = make(iterations=10)
    np.testing.assert_array_equal(p.iterations, [10, 10])


# ---------------------------------------------------------------- hostile numbers
def test_type_counts_sum_overflow_is_rejected():
    # each count passes alone; their int64 sum wraps to 3 and np.repeat used to segfault
    with pytest.raises(InvalidProblemError, match=r"type_counts sums to 18446744073709551619; at most 1000000"):
        hp.Problem([[1.0] * 5], [2**62, 2**62, 2**62, 2**62, 3], [1], [1])


def test_worker_total_limit_applies_to_the_exact_sum():
    hp.Problem([[1.0, 1.0]], [500_000, 500_000], [1], [1])  # exactly the limit
    with pytest.raises(InvalidProblemError, match=r"type_counts sums to 1000001"):
        hp.Problem([[1.0, 1.0]], [500_000, 500_001], [1], [1])
    with pytest.raises(InvalidProblemError, match=r"type_counts holds an integer too large for a float64"):
        hp.Problem([[1.0]], [10**400], [1], [1])


@pytest.mark.parametrize("batch", [2**53 + 1, np.uint64(2**64 - 1), 2**70])
def test_batch_above_count_max_is_rejected_exactly(batch):
    # 2**53 + 1 rounds to 2**53 as a float: the check compares the integers themselves
    with pytest.raises(InvalidProblemError, match=r"batch must be at most 2\*\*53 = 9007199254740992; got \d+ for job 1"):
        make(batch=[64, batch])


def test_batch_at_count_max_is_accepted():
    assert make(batch=[64, 2**53]).batch[1] == 2.0**53


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(bandwidth=1e-300, grad_bytes=[1e6, 1e6]), r"bandwidth must have a magnitude in \[1e-30, 1e\+30\].*got 1e-300"),
        (dict(bandwidth=1e31), r"bandwidth must have a magnitude in \[1e-30, 1e\+30\]"),
        (dict(throughput=[[1e308, 5e307], [1e307, 0.0]]), r"throughput must have a magnitude .*got 1e\+308 at index \(0, 0\)"),
        (dict(throughput=[[1e-31, 1.0], [1.0, 0.0]]), r"throughput must have a magnitude .*got 1e-31 at index \(0, 0\)"),
        (dict(iterations=[1e308, 1.0]), r"iterations must have a magnitude .*got 1e\+308 at index 0"),
        (dict(iterations=[1.0, 1e-31]), r"iterations must have a magnitude .*got 1e-31 at index 1"),
        (dict(grad_bytes=[1e31, 0.0]), r"grad_bytes must have a magnitude .*got 1e\+31 at index 0"),
        (dict(grad_bytes=[0.0, 1e-40]), r"grad_bytes must have a magnitude .*got 1e-40 at index 1"),
        (dict(worker_speed=[1.0, 1e-200, 1.0]), r"worker_speed must have a magnitude .*got 1e-200 at index 1"),
    ],
)
def test_values_outside_the_supported_range_are_rejected(kw, pattern):
    with pytest.raises(InvalidProblemError, match=pattern):
        make(**kw)


def test_supported_range_edges_are_accepted():
    p = make(throughput=[[1e-30, 1e30], [1e30, 0.0]], iterations=[1e30, 1e-30],
             grad_bytes=[1e30, 1e-30], bandwidth=1e-30, worker_speed=[1.0, 1e-30, 1.0])
    assert np.all(np.isfinite(p.comm_time)) and np.all(np.isfinite(p.jct_alone))


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(throughput=[["40", 1.0], [1.0, 1.0]]), r"throughput must be numbers \(real, not bool or complex\); got a string, '40' at index \(0, 0\)"),
        (dict(throughput=[[1.0, "40"], [1.0, 1.0]]), r"got a string, '40' at index \(0, 1\)"),
        (dict(throughput=np.array([[1.0, 2.0], [3.0, 1.0]], dtype=object) + 1j), r"throughput .*got a complex number, \(1\+1j\) at index \(0, 0\)"),
        (dict(throughput=[[1 + 1j, 1.0], [1.0, 1.0]]), r"throughput .*got a complex number, \(1\+1j\)"),
        (dict(throughput=np.array([[1.0, 2.0], [3.0, 1.0]]) + 0j), r"throughput .*got a complex number"),
        (dict(throughput=[[True, 1.0], [1.0, 1.0]]), r"throughput .*got a bool, True at index \(0, 0\)"),
        (dict(throughput=np.ones((2, 2), dtype=bool)), r"throughput .*got a bool, True"),
        (dict(type_counts=[True, 1]), r"type_counts .*got a bool, True at index 0"),
        (dict(type_counts=[2, None]), r"type_counts .*got None at index 1"),
        (dict(batch=[64, 1 + 0j]), r"batch .*got a complex number"),
        (dict(batch=[64.0, True]), r"batch .*got a bool, True at index 1"),
        (dict(iterations=np.array([100, 50], dtype=np.complex128)), r"iterations .*got a complex number"),
        (dict(iterations=np.array(["100", "50"])), r"iterations .*got a string, '100' at index 0"),
        (dict(grad_bytes=[b"1", 0.0]), r"grad_bytes .*got a string"),
        (dict(worker_speed=[1.0, 0.5 + 0j, 1.0]), r"worker_speed .*got a complex number"),
        (dict(bandwidth=True), r"bandwidth must be a number of bytes/s .*got a bool, True"),
        (dict(bandwidth=np.bool_(True)), r"bandwidth .*got a bool"),
        (dict(bandwidth=1e9 + 0j), r"bandwidth .*got a complex number"),
        (dict(bandwidth=[1e9]), r"bandwidth must be a single number of bytes/s"),
    ],
)
def test_non_real_elements_are_rejected(kw, pattern):
    with pytest.raises(InvalidProblemTypeError, match=pattern) if "single number" not in pattern else \
            pytest.raises(InvalidProblemError, match=pattern):
        make(**kw)


@pytest.mark.parametrize("bw", [np.float64(1e9), np.array(1e9), np.float32(1e9), np.int64(10**9), 10**9])
def test_zero_dim_and_numpy_scalar_bandwidth_is_accepted(bw):
    assert make(grad_bytes=[1e6, 1e6], bandwidth=bw).bandwidth == float(bw)


def test_exotic_real_numbers_are_accepted():
    from decimal import Decimal
    from fractions import Fraction

    p = make(throughput=[[Fraction(10), Decimal("20")], [5, 0]], type_counts=np.array([2, 1], dtype=np.uint8),
             batch=np.array([64, 32], dtype=np.int16), iterations=[np.float32(100), 50])
    np.testing.assert_array_equal(p.throughput, [[10, 20], [5, 0]])
    assert p.n_workers == 3


# ------------------------------------------------------------------------- pandas
def test_dataframe_throughput_keeps_its_labels():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame([[10.0, 20.0], [5.0, 0.0]], index=["resnet", "bert"], columns=["v100", "k80"])
    p = hp.Problem(df, [2, 1], [64, 32], [100, 50])
    assert p.job_names == ("resnet", "bert") and p.type_names == ("v100", "k80")
    np.testing.assert_array_equal(p.throughput, df.to_numpy())
    # explicit names win; a default 0..n-1 index keeps the default names
    assert hp.Problem(df, [2, 1], [64, 32], [100, 50], job_names=["a", "b"]).job_names == ("a", "b")
    assert hp.Problem(pd.DataFrame([[1.0, 2.0]]), [1, 1], [4], [1]).job_names == ("job0",)


def test_labelled_series_are_aligned_with_the_job_and_type_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame([[10.0, 20.0], [5.0, 0.0]], index=["resnet", "bert"], columns=["v100", "k80"])
    p = hp.Problem(df, pd.Series({"k80": 1, "v100": 2}), pd.Series({"bert": 32, "resnet": 64}),
                   pd.Series([100.0, 50.0]))  # an unlabelled Series is taken in order
    np.testing.assert_array_equal(p.type_counts, [2, 1])
    np.testing.assert_array_equal(p.batch, [64, 32])
    np.testing.assert_array_equal(p.iterations, [100, 50])
    with pytest.raises(InvalidProblemError, match=r"batch is labelled \['resnet', 'gpt'\], which are not the job names"):
        hp.Problem(df, [2, 1], pd.Series({"resnet": 64, "gpt": 32}), [100, 50])


def test_problem_repr_is_compact():
    p = hp.Problem(np.ones((1, 50)), np.ones(50, dtype=int), [64], [1])
    assert len(repr(p)) < 200 and "..." in repr(p) and "(50 entries)" in repr(p)
    assert "type_counts=[2, 1]" in repr(make())


def test_dense_tables_are_built_on_request_and_over_the_cell_limit_refused_before_allocating():
    # 3,000 jobs on 1,000,000 workers: the Problem itself is O(S + K); each dense table
    # would be 24 GB, so asking for one is refused with the limit, at once
    import tracemalloc

    tracemalloc.start()
    p = hp.Problem(np.ones((3000, 1)), [1_000_000], np.full(3000, 64), np.full(3000, 10.0))
    for name in ("worker_throughput", "comm_time", "size_cost"):
        with pytest.raises(InvalidProblemError, match=rf"Problem.{name} is a dense table.*at most 536,870,912"):
            getattr(p, name)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20
    assert p.size_cost_spec.shape == (3000, 3)


def test_dense_tables_equal_their_compact_forms():
    # the tables built on request, the O(S) accessors and the kernels' spec agree bit for bit
    rng = np.random.default_rng(3)
    for _ in range(20):
        S, G = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        counts = rng.integers(1, 5, G)
        K = int(counts.sum())
        up = np.r_[True, rng.random(K - 1) < 0.8]
        S = min(S, int(up.sum()))
        hi = rng.integers(1, K + 1, S)
        lo = np.ones(S, dtype=int)
        lo[0] = min(2, hi[0], int(up.sum()) - S + 1)  # one job with a lower bound, when it fits
        p = hp.Problem(rng.uniform(0.5, 9.0, (S, G)), counts, rng.integers(1, 9, S), rng.uniform(1, 1e4, S),
                       grad_bytes=rng.uniform(0, 1e8, S), bandwidth=float(rng.choice([1e9, math.inf])),
                       worker_speed=rng.choice([0.5, 1.0], K), min_workers=lo, max_workers=hi, available=up)
        jobs, n = np.meshgrid(np.arange(S), np.arange(K + 1), indexing="ij")
        assert np.array_equal(p.comm_time, p._comm(jobs, n))
        assert np.array_equal(p.size_cost, p._cost(jobs, n))
        ks = np.meshgrid(np.arange(S), np.arange(K), indexing="ij")
        assert np.array_equal(p.worker_throughput, p._rate(*ks))
        spec = p.size_cost_spec
        assert np.array_equal(spec[:, 0], p.comm_coef) and np.array_equal(-spec[:, 1], p.min_workers)
        assert np.array_equal(spec[:, 2], p.max_workers)


def test_size_cost_is_comm_time_where_no_size_is_capped():
    p = hp.Problem([[1.0, 2.0]], [2, 2], [64], [10], grad_bytes=[1e6], bandwidth=1e9)
    assert p.size_cost is p.comm_time
    q = hp.Problem([[1.0, 2.0]], [2, 2], [2], [10], grad_bytes=[1e6], bandwidth=1e9)
    assert np.array_equal(q.size_cost[0, :3], q.comm_time[0, :3]) and np.all(np.isinf(q.size_cost[0, 3:]))


@pytest.mark.parametrize("args", [(0, 0.0, 1), (0, math.nan, 1), (0, math.inf, 1), (0, -1.0, 1), (0, "8", 1),
                                  (5, 10.0, 1), (-1, 10.0, 1), (True, 10.0, 1), (0.0, 10.0, 1), (0, 10.0, 0),
                                  (0, 10.0, 99), (0, 10.0, 1.0)])
def test_job_jct_rejects_out_of_range_job_size_and_throughput(args):
    # it indexed past the arrays (IndexError), broadcast a bool index, or returned inf / NaN
    p = hp.Problem([[10.0, 20.0], [5.0, 8.0]], [2, 2], [64, 32], [100.0, 50.0])
    with pytest.raises(InvalidProblemError, match="job|n_workers|throughput_sum"):
        p.job_jct(*args)
    assert p.job_jct(0, 10.0, 1) == p.work[0] / 10.0


@pytest.mark.parametrize("data", [None, 3, "x", [("throughput", [[1.0]])], {"throughput": [[1.0]]},
                                  {"throughput": [[1.0]], "type_counts": [1], "batch": [1], "iterations": [1.0], "x": 1}])
def test_problem_from_dict_rejects_non_mappings_and_wrong_keys(data):
    # None was a TypeError from dict(), missing keys a TypeError from __init__
    with pytest.raises(InvalidProblemError, match="data must"):
        hp.Problem.from_dict(data)
    p = hp.Problem([[10.0, 20.0]], [2, 2], [64], [100.0])
    assert hp.Problem.from_dict(p.to_dict()).to_dict() == p.to_dict()


def test_problem_does_not_freeze_the_callers_float_arrays():
    # np.asarray kept a float64 input itself, and Problem then made it read-only (also when it raised)
    rho, iters, speed = np.array([[1.0, 2.0]]), np.array([4.0]), np.ones(2)
    hp.Problem(rho, [1, 1], [4], iters, worker_speed=speed)
    assert rho.flags.writeable and iters.flags.writeable and speed.flags.writeable
    bad = np.array([[0.0, 0.0]])
    with pytest.raises(InvalidProblemError):
        hp.Problem(bad, [1, 1], [4], [1.0])
    assert bad.flags.writeable


# ------------------------------------------------------------ Hall's condition without recursion
def _chain(n):
    """n + 1 jobs on n + 1 single-worker types where placing the last job moves every other one.

    Job k (k < n) may use types n - 1 - k and n - k and takes the first; the last job may use
    only type 0, so its augmenting path runs through all n jobs before it finds type n free.
    """
    rho = np.zeros((n + 1, n + 1))
    for k in range(n):
        rho[k, n - 1 - k] = rho[k, n - k] = 1.0
    rho[n, 0] = 1.0
    return rho


def _first_uncoverable_reference(can, counts):
    """The first job i such that jobs 0..i cannot all get a worker (-1: none), by enumeration."""
    import itertools

    S = can.shape[0]
    for i in range(S):
        options = [np.flatnonzero(can[j] & (counts > 0)).tolist() for j in range(i + 1)]
        if not any(np.all(np.bincount(pick, minlength=counts.size) <= counts)
                   for pick in itertools.product(*options)):
            return i
    return -1


@pytest.mark.slow  # several seconds: the long campaign runs it
def test_coverability_of_a_chain_of_a_thousand_types_does_not_recurse():
    # the Hall's-condition check augmented recursively: RecursionError at about 1,000 types
    for n in (1_000, 3_000):
        rho = _chain(n)
        p = hp.Problem(rho, np.ones(n + 1, dtype=int), 8, 1.0)
        assert p.n_jobs == n + 1
        wj = hp.place(p, method="greedy").worker_job  # the baselines' matching seed walks the same chain
        assert hp.is_feasible(p, wj)
    # the same chain with type n's worker moved to a type no job uses: the last job is named
    with pytest.raises(InvalidProblemError, match=rf"job {n} \(and the jobs before it\)"):
        hp.Problem(np.c_[rho, np.zeros(n + 1)], np.r_[np.ones(n, dtype=int), 0, 1], 8, 1.0)


def test_coverability_of_two_thousand_sparse_single_worker_types_does_not_recurse():
    rng = np.random.default_rng(20)
    S = G = 2_000
    rho = np.zeros((S, G))
    perm = rng.permutation(G)
    rho[np.arange(S), perm] = 1.0  # a perfect matching exists
    for i in range(S):
        rho[i, rng.choice(G, 3, replace=False)] = 2.0  # three more types each: RecursionError before
    p = hp.Problem(rho, np.ones(G, dtype=int), 8, 1.0)
    assert hp.is_feasible(p, hp.place(p, method="equal").worker_job)


def test_augmenting_assignment_finds_the_first_uncoverable_job_like_enumeration():
    from hetplace._problem_iv import augmenting_assignment

    rng = np.random.default_rng(2020)
    failing = 0
    for _ in range(400):
        S, G = int(rng.integers(1, 7)), int(rng.integers(1, 5))
        can = rng.random((S, G)) < rng.uniform(0.2, 0.8)
        counts = rng.integers(0, 3, G)
        want = _first_uncoverable_reference(can, counts)
        for free_first in (False, True):
            choices = [np.flatnonzero(can[i]).tolist() for i in range(S)]
            holders, failed = augmenting_assignment(choices, counts.tolist(), free_first=free_first)
            assert failed == want, (can, counts, free_first)
            placed = sorted(j for h in holders for j in h)
            assert placed == list(range(S if failed < 0 else failed))
            assert all(len(h) <= c and all(can[j, g] for j in h) for g, (h, c) in enumerate(zip(holders, counts)))
        failing += want >= 0
        if want < 0 and can.any(axis=1).all():
            try:
                hp.Problem(np.where(can, 1.0, 0.0), np.maximum(counts, 0), 8, 1.0)
            except InvalidProblemError as exc:  # another check (too few workers in total), not Hall's
                assert "no placement gives every job a worker" not in str(exc)
    assert failing >= 50


# ------------------------------------------------------------ immutable after pickle and copy
_ARRAY_ATTRS = ("throughput", "type_counts", "batch", "iterations", "grad_bytes", "worker_speed", "worker_type",
                "available", "available_counts", "class_speed", "work", "comm_coef", "min_workers", "max_workers",
                "size_cost_spec", "current", "running", "restart_time", "restart_cost", "can_keep",
                "worker_throughput", "comm_time", "size_cost", "jct_alone")


def _read_only_everywhere(p):
    """Every array a Problem holds or hands out: (name, array) pairs."""
    out = [(name, getattr(p, name)) for name in _ARRAY_ATTRS]
    out += [(f"worker_classes[{j}]", a) for j, a in enumerate(p.worker_classes)]
    out += [(name, v) for name, v in vars(p).items() if isinstance(v, np.ndarray)]
    return out


@pytest.mark.parametrize("how", ["pickle", "pickle-5", "deepcopy", "copy"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "tables-built"])
def test_problem_arrays_stay_read_only_after_pickle_and_copy(how, warm):
    # pickle and copy.deepcopy rebuilt the arrays writable, though Problem is documented immutable
    import copy
    import pickle

    p = make(worker_speed=[1.0, 0.5, 1.0], min_workers=[1, 1], max_workers=[2, 1], available=[True, True, False],
             current=[0, 1, -1], restart_time=[3.0, 4.0])
    if warm:
        _read_only_everywhere(p)  # builds the cached tables, classes and jct_alone before the copy
    q = {"pickle": lambda: pickle.loads(pickle.dumps(p)),
         "pickle-5": lambda: pickle.loads(pickle.dumps(p, protocol=5)),
         "deepcopy": lambda: copy.deepcopy(p), "copy": lambda: copy.copy(p)}[how]()
    arrays = _read_only_everywhere(q)
    assert len(arrays) >= len(_ARRAY_ATTRS) + 3
    for name, arr in arrays:
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            arr[(0,) * arr.ndim] = arr[(0,) * arr.ndim]
    for name, arr in _read_only_everywhere(p):  # the original too, and the copy equals it
        assert not arr.flags.writeable, name
        np.testing.assert_array_equal(arr, getattr(q, name) if hasattr(q, name) else arr)
    assert q.to_dict() == p.to_dict()
