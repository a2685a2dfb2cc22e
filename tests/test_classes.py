"""SMP on worker classes (the market in the single source hetplace/_core/_market.py, the polish
in the single source hetplace/_core/_polish.py).

* the class grouping is right (identical throughput columns, nothing merged that differs);
* the class market's first round is welfare-optimal (SciPy's exact assignment on the
  slot x worker matrix) and all three backends return the same counts and totals;
* the class polish ends in a local optimum of the worker neighbourhood (slow full scan
  in tests/reference.py), never worsens, and is bit-identical on every backend.
"""

import numpy as np
import pytest

import hetplace as hp
from hetplace._core._registry import BACKENDS, kernels, unavailable
from hetplace._core._source import load
from hetplace.smp import class_modes, worker_classes

from reference import assignment_optimum_reference, is_local_optimum_reference, mean_jct_reference
from methods import needs_cython
from instances import random_problem, seeds

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]
HAVE_CYTHON = "cython" in AVAILABLE
_py = load("_polish", "python")
counts_of, expand_counts, polish_classes_impl = _py.counts_of, _py.expand_counts, _py.polish_classes


def _problem(seed, **kw):
    p = random_problem(seed, **kw)
    return p, worker_classes(p)


@pytest.mark.parametrize("seed", range(40))
def test_worker_classes_group_identical_columns_only(seed):
    p, (rhoC, mc, class_of, members, cls_start) = _problem(seed)
    rho = p.worker_throughput
    assert mc.sum() == p.n_workers and (mc > 0).all()
    for c in range(mc.size):
        ws = members[cls_start[c]:cls_start[c + 1]]
        assert (np.diff(ws) > 0).all()
        assert (class_of[ws] == c).all()
        np.testing.assert_array_equal(rho[:, ws], np.repeat(rhoC[:, [c]], ws.size, axis=1))
    keys = {(int(p.worker_type[members[s]]), float(p.worker_speed[members[s]])) for s in cls_start[:-1]}
    assert len(keys) == mc.size


def test_class_modes_rule():
    assert class_modes(S=256, K=4096, C=3, matching="price") == (True, True)
    assert class_modes(S=256, K=4096, C=3, matching="ordinal") == (False, True)
    assert class_modes(S=4, K=16, C=16, matching="price") == (False, False)


def _market_all(p, classes, sizes, max_rounds):
    rhoC, mc, _, _, _ = classes
    S, C = rhoC.shape
    nf, ni = kernels("python").class_market_workspace_size(S, C, p.n_workers)
    out = []
    for name in AVAILABLE:
        fn = kernels(name).class_market_kernel
        cnt = np.zeros((S, C), dtype=np.int64)
        st = np.zeros(2, dtype=np.int64)
        total = fn(rhoC, p.work, p.comm_time, mc, sizes, max_rounds, cnt, st, np.empty(nf), np.empty(ni, dtype=np.int64))
        out.append((name, total, cnt, st.copy()))
    return out


def _random_sizes(p, rng):
    S, K = p.n_jobs, p.n_workers
    total = int(rng.integers(S, K + 1))
    return (1 + rng.multinomial(total - S, np.ones(S) / S)).astype(np.int64)


@pytest.mark.parametrize("seed", seeds(60, fast=20))
def test_class_market_first_round_is_welfare_optimal_and_backends_agree(seed):
    p, classes = _problem(seed)
    rhoC, mc, class_of, _, _ = classes
    rng = np.random.default_rng(seed)
    sizes = _random_sizes(p, rng)
    res = _market_all(p, classes, sizes, max_rounds=1)
    _, total0, cnt0, st0 = res[0]
    for name, total, cnt, st in res[1:]:
        np.testing.assert_array_equal(cnt, cnt0, err_msg=name)
        assert total == total0 or (np.isinf(total) and np.isinf(total0)), name
        np.testing.assert_array_equal(st, st0, err_msg=name)
    # welfare of the first round against SciPy on the slot x worker matrix
    K = p.n_workers
    X0 = sizes * ((mc[None, :] * rhoC).sum(axis=1) / K)
    a = p.work / (X0 * X0)
    rho = p.worker_throughput
    values = a[:, None] * rho
    opt = assignment_optimum_reference(values, sizes, allowed=rho > 0)
    if opt is None:  # the category cannot be filled: the partial assignment comes back
        assert (cnt0.sum(axis=1) < sizes).any()
        return
    assert cnt0.sum(axis=1).tolist() == sizes.tolist()
    assert (cnt0.sum(axis=0) <= mc).all()
    assert ((cnt0 == 0) | (rhoC > 0)).all()
    welfare = float((cnt0 * a[:, None] * rhoC).sum())
    assert welfare == pytest.approx(opt, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_class_market_iterated_backends_agree(seed):
    p, classes = _problem(500 + seed, K_max=40, S_max=8)
    sizes = _random_sizes(p, np.random.default_rng(seed))
    res = _market_all(p, classes, sizes, max_rounds=8)
    _, total0, cnt0, st0 = res[0]
    for name, total, cnt, st in res[1:]:
        np.testing.assert_array_equal(cnt, cnt0, err_msg=name)
        assert total == total0 or (np.isinf(total) and np.isinf(total0)), name
        np.testing.assert_array_equal(st, st0, err_msg=name)


def _start(p, rng):
    """A feasible placement with some idle workers (every job >= 1 allowed worker)."""
    rho = p.worker_throughput
    for _ in range(1000):
        wj = np.full(p.n_workers, -1, dtype=np.int64)
        for k in range(p.n_workers):
            ok = np.flatnonzero(rho[:, k] > 0)
            if ok.size and rng.random() < 0.8:
                wj[k] = rng.choice(ok)
        if np.bincount(wj[wj >= 0], minlength=p.n_jobs).min() > 0:
            return wj
    return hp.place(p, method="greedy").worker_job.copy()


@pytest.mark.parametrize("seed", seeds(60, fast=20))
def test_class_polish_local_optimum_and_backends_agree(seed):
    # small instances, and larger ones (K up to 60) where a step is repeated many times
    big = seed >= 40
    p, (rhoC, mc, class_of, members, cls_start) = _problem(seed, K_max=60 if big else 9, S_max=6 if big else 4)
    start = _start(p, np.random.default_rng(seed))
    S, C = rhoC.shape
    ref = np.zeros((S, C), dtype=np.int64)
    counts_of(start, class_of, ref)
    begin = ref.copy()
    steps = polish_classes_impl(rhoC, p.work, p.comm_time, mc, ref, 100_000)
    for fn in (kernels(b).polish_classes for b in AVAILABLE):
        cnt = begin.copy()
        assert fn(rhoC, p.work, p.comm_time, mc, cnt, 100_000) == steps
        np.testing.assert_array_equal(cnt, ref)
    wj = np.empty(p.n_workers, dtype=np.int64)
    expand_counts(ref, members, cls_start, wj)
    assert hp.is_feasible(p, wj)
    assert mean_jct_reference(p, wj) <= mean_jct_reference(p, start) * (1 + 1e-12)
    assert is_local_optimum_reference(p, wj)


@pytest.mark.parametrize("seed", range(20))
def test_expand_and_count_round_trip(seed):
    p, (rhoC, mc, class_of, members, cls_start) = _problem(seed)
    wj = _start(p, np.random.default_rng(seed))
    cnt = np.zeros(rhoC.shape, dtype=np.int64)
    counts_of(wj, class_of, cnt)
    out = np.empty_like(wj)
    expand_counts(cnt, members, cls_start, out)
    again = np.zeros_like(cnt)
    counts_of(out, class_of, again)
    np.testing.assert_array_equal(again, cnt)
    # the expansion is canonical: lowest-indexed workers of a class go to the lowest job
    for c in range(mc.size):
        ws = members[cls_start[c]:cls_start[c + 1]]
        js = out[ws]
        busy = js[js >= 0]
        assert (np.diff(busy) >= 0).all() and (js[busy.size:] == -1).all()


def _tied_problem(seed):
    """A random problem with copies of some jobs (exact ties between jobs) and a random running placement."""
    rng = np.random.default_rng(seed)
    base = random_problem(seed, K_max=70, S_max=7)
    extra = int(rng.integers(1, 4))
    idx = np.r_[np.arange(base.n_jobs), rng.integers(0, base.n_jobs, extra)]
    idx = idx[:base.n_workers]
    p = hp.Problem(base.throughput[idx], base.type_counts, base.batch[idx], base.iterations[idx],
                   base.grad_bytes[idx], base.bandwidth, base.worker_speed)
    return p, worker_classes(p)


@pytest.mark.parametrize("seed", seeds(40, fast=7))
def test_class_polish_trees_take_the_scans_steps(seed):
    # the trees (O(C^2 log S) per step) and the scan (O(S C^2)) pick the same step every
    # time, exact ties included (copies of jobs), on every backend, with the (S, 3) cost
    # spec and the dense table, with and without restart losses
    p, (rhoC, mc, class_of, members, cls_start) = _tied_problem(seed)
    rng = np.random.default_rng(seed + 1000)
    start = _start(p, rng)
    S, C = rhoC.shape
    begin = np.zeros((S, C), dtype=np.int64)
    counts_of(start, class_of, begin)
    cur = np.zeros((S, C), dtype=np.int64)
    counts_of(_start(p, rng), class_of, cur)
    restart = (np.where(rng.random(S) < 0.5, rng.uniform(0, 50, S), 0.0), None, cur)
    for rs in (None, restart):
        ref = begin.copy()
        steps = polish_classes_impl(rhoC, p.work, p.size_cost, mc, ref, 100_000, rs, False)
        for b in AVAILABLE:
            for comm in (p.size_cost, p.size_cost_spec):
                for trees in (True, "leaves", False, None):
                    cnt = begin.copy()
                    got = kernels(b).polish_classes(rhoC, p.work, comm, mc, cnt, 100_000, rs, trees)
                    assert got == steps, (b, trees, rs is None)
                    np.testing.assert_array_equal(cnt, ref, err_msg=f"{b} trees={trees}")


@pytest.mark.parametrize("seed", seeds(300, fast=60))
def test_tree_best_is_the_scans_choice_with_ties(seed):
    # one structure's best (side1(a) + side0(b), a, b), a != b, from the trees against the
    # plain scan over all pairs in order (lowest a, then its lowest best partner), on values
    # drawn from a few numbers so that ties (and impossible entries) are everywhere
    py = load("_polish", "python")
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, 12))
    L = rng.choice([-1.5, -0.5, 0.0, 0.5, np.inf], S + 1)
    R = rng.choice([-1.0, 0.0, 1.0, np.inf], S + 1)
    P = 1
    while P < S + 1:
        P *= 2
    T = np.full(4 * P, np.inf)
    for i in range(S + 1):
        py._tree_set(T, 0, P, i, float(L[i]))
        py._tree_set(T, 2 * P, P, i, float(R[i]))
    best = (np.inf, -1, -1)
    for a in range(S + 1):
        if not R[a] < np.inf:
            continue
        others = [b for b in range(S + 1) if b != a and L[b] < np.inf]
        if not others:
            continue
        b = min(others, key=lambda b: (L[b], b))
        d = R[a] + L[b]
        if d < best[0]:
            best = (d, a, b)
    got = py._tree_best(T, 0, 2 * P, P)
    assert (got[0], got[1], got[2]) == best or (best[0] == np.inf and got[0] == np.inf)


@needs_cython
def test_polish_max_steps_is_honoured():
    p, (rhoC, mc, class_of, _, _) = _problem(5, K_max=30, S_max=6)
    cnt = np.zeros(rhoC.shape, dtype=np.int64)
    counts_of(_start(p, np.random.default_rng(0)), class_of, cnt)
    for cap in (1, 2, 3, 5):
        for fn in (kernels(b).polish_classes for b in AVAILABLE):
            assert fn(rhoC, p.work, p.comm_time, mc, cnt.copy(), cap) <= cap


# ----------------------------------------------------------------- speed buckets


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("B", [1, 2, 3, 7])
def test_speed_buckets_partition_each_type_by_speed(seed, B):
    p = random_problem(seed, K_max=30)
    rhoC, mc, class_of, members, cls_start = worker_classes(p, buckets=B)
    t, sp, rho = p.worker_type, p.worker_speed, p.worker_throughput
    assert mc.sum() == p.n_workers and (mc > 0).all()
    for c in range(mc.size):
        ws = members[cls_start[c]:cls_start[c + 1]]
        assert np.unique(t[ws]).size == 1
        assert (np.diff(sp[ws]) <= 0).all()  # fastest first
        np.testing.assert_allclose(rhoC[:, c], rho[:, ws].mean(axis=1), rtol=1e-12)
    for g in range(p.n_types):
        cls = [c for c in range(mc.size) if t[members[cls_start[c]]] == g]
        if cls:
            assert len(cls) <= B and mc[cls].max() - mc[cls].min() <= 1
            # buckets of one type do not interleave: every worker of a bucket is at
            # least as fast as every worker of the next one
            for c0, c1 in zip(cls[:-1], cls[1:]):
                assert sp[members[cls_start[c0]:cls_start[c0 + 1]]].min() >= sp[members[cls_start[c1]:cls_start[c1 + 1]]].max()


@pytest.fixture
def buckets_always(monkeypatch):
    """Use speed buckets on small instances too (the size threshold is for speed only)."""
    import hetplace.smp

    monkeypatch.setattr(hetplace.smp, "BUCKET_MIN_SIZE", 0)


def _speeds_problem(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 6))
    K = int(rng.integers(3 * S, 40))
    G = int(rng.integers(1, 4))
    rho = rng.uniform(1, 100, (S, G)) * (rng.random((S, G)) > 0.2)
    rho[:, 0] = np.maximum(rho[:, 0], 1.0)
    return hp.Problem(rho, rng.multinomial(K, np.ones(G) / G), rng.integers(1, 512, S), rng.uniform(10, 1000, S),
                      grad_bytes=rng.uniform(0, 5e7, S), bandwidth=1e8, worker_speed=rng.uniform(0.3, 1.0, K))


@pytest.mark.parametrize("seed", range(25))
def test_speed_bucket_placements_agree_across_backends_and_threads(seed, buckets_always):
    p = _speeds_problem(seed)
    runs = {b: hp.place(p, method="smp", seed=seed, backend=b, samples=8) for b in ("python", "numba")}
    if HAVE_CYTHON:
        runs["cython"] = hp.place(p, method="smp", seed=seed, backend="cython", samples=8)
        two = hp.place(p, method="smp", seed=seed, backend="cython", samples=8, threads=2)
        np.testing.assert_array_equal(two.worker_job, runs["cython"].worker_job)
    ref = runs["python"]
    assert ref.info["speed_buckets"] == 3
    for b, pl in runs.items():
        np.testing.assert_array_equal(pl.worker_job, ref.worker_job, err_msg=b)
    assert hp.is_feasible(p, ref.worker_job)
    for i in range(p.n_jobs):
        assert ref.shares[ref.worker_job == i].sum() == p.batch[i]


@pytest.mark.parametrize("seed", range(25))
def test_sort_buckets_keeps_bucket_counts_and_never_worsens(seed):
    from hetplace.smp import _sort_buckets, _true_totals

    p = _speeds_problem(seed)
    _, _, class_of, members, cls_start = worker_classes(p, buckets=2)
    wj = _start(p, np.random.default_rng(seed))
    before = _true_totals(p, wj[None, :])[0]
    after_wj = wj.copy()
    after = _sort_buckets(p, after_wj, members, cls_start, before)
    assert after <= before
    assert after == pytest.approx(mean_jct_reference(p, after_wj) * p.n_jobs, rel=1e-12)
    for c in range(cls_start.size - 1):
        ws = members[cls_start[c]:cls_start[c + 1]]
        assert sorted(wj[ws].tolist()) == sorted(after_wj[ws].tolist())
    assert hp.is_feasible(p, after_wj)


def test_speed_buckets_off_and_threshold():
    from hetplace.smp import BUCKET_MIN_SIZE

    p = _speeds_problem(3)
    assert p.n_workers * p.n_jobs <= BUCKET_MIN_SIZE  # small: exact classes by default
    assert hp.place(p, method="smp", seed=1).info["speed_buckets"] is None
    with pytest.raises(hp.InvalidOptionError, match="speed_buckets"):
        hp.place(p, method="smp", speed_buckets=0)
