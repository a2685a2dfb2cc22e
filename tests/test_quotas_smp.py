"""SMP under tenant quotas (docs/model.md §3.14): feasible, reproducible, near the optimum.

The optimum of a tiny instance comes from an obvious brute force: every one of the
``(S + 1) ** K`` assignments (K <= 7, S <= 3), the ones ``hp.is_feasible`` accepts
priced by ``hp.evaluate``.  Pricing 16,384 rows one by one would take seconds per
instance, so the rows are screened in one vectorised pass (pairs, sizes, quotas) and
the winner is re-checked with ``hp.is_feasible`` and re-priced with ``hp.evaluate``;
``test_screen_matches_is_feasible`` checks the screen row by row on small cases.
"""

import itertools

import numpy as np
import pytest

import hetplace as hp
from hetplace import _smp_quota
from hetplace._cost import price
from hetplace._quota import quota_usage
from hetplace.errors import InvalidProblemError

BACKENDS = ("python", "numba", "cython")


def quota_problem(seed, topology=False, replacing=False, weights=None, speeds=None, max_workers=7):
    """A seeded tiny problem whose quotas bind: two tenants limited on the fast type, sometimes a tenant
    with none of a type, jobs of no tenant, min_workers; retried until it validates."""
    rng = np.random.default_rng([seed, 4242])
    while True:
        G = int(rng.integers(2, 4))
        K = int(rng.integers(max(G, 3), max_workers + 1))
        S = int(rng.integers(2, 4))
        counts = rng.multinomial(K - G, np.ones(G) / G) + 1
        base = np.sort(rng.uniform(20, 400, G))
        thr = np.round(base[None, :] * rng.uniform(0.6, 1.4, (S, G)), 1)
        thr[rng.random((S, G)) < 0.15] = 0.0
        thr[np.arange(S), rng.integers(0, G, S)] = np.round(base.max(), 1)
        args = dict(
            throughput=thr.tolist(), type_counts=counts.tolist(), batch=rng.choice([8, 32, 256], S).tolist(),
            iterations=rng.integers(1_000, 30_000, S).tolist(),
            grad_bytes=(rng.uniform(0, 4e8, S) * (rng.random(S) < 0.7)).tolist(), bandwidth=1.25e9,
        )
        tenant = rng.integers(-1, 2, S)
        tenant[:2] = [0, 1]
        quota = np.full((2, G), np.inf)
        for t in range(2):
            for g in range(G):
                u = rng.random()
                if g == G - 1 or u < 0.4:
                    quota[t, g] = 0 if u > 0.85 else int(rng.integers(0, counts[g] + 1))
        args.update(tenant=tenant.tolist(), quota=quota.tolist())
        if rng.random() < 0.3:
            args["min_workers"] = rng.integers(1, 3, S).tolist()
        if weights if weights is not None else rng.random() < 0.2:
            args["weight"] = rng.uniform(0.5, 3.0, S).tolist()
        if speeds if speeds is not None else rng.random() < 0.2:
            args["worker_speed"] = rng.choice([0.5, 0.8, 1.0], K).tolist()
        if topology:
            args["node"] = (np.arange(K) // 2).tolist()
            args["node_bandwidth"] = 40e9
        if replacing:
            args["current"] = rng.integers(-1, S - 1, K).tolist()
            args["restart_time"] = rng.uniform(0, 2_000, S).tolist()
        try:
            problem = hp.Problem(**args)
        except InvalidProblemError:
            continue
        if problem.has_quota:
            return problem


def screen(problem, rows):
    """(R,) objective of every row (the problem's weighted mean JCT), inf where ``is_feasible`` would refuse it."""
    target = problem.objective_problem
    busy = rows >= 0
    ok = (~busy | (target.throughput[np.maximum(rows, 0), target.worker_type[None, :]] > 0)).all(axis=1)
    ok &= (~busy | problem.available[None, :]).all(axis=1)
    t = np.append(problem.tenant, -1)[rows]
    for tt in range(problem.n_tenants):
        for g in range(problem.n_types):
            ok &= ((t == tt) & (problem.worker_type[None, :] == g)).sum(axis=1) <= problem.quota[tt, g]
    total = np.where(ok, price(target, rows).total, np.inf)  # inf: a job without worker or outside its bounds
    return total / target.n_jobs * problem.objective_scale


def brute_force(problem):
    """(optimal objective, its worker_job) over every assignment."""
    rows = np.array(list(itertools.product(range(-1, problem.n_jobs), repeat=problem.n_workers)), dtype=np.int64)
    obj = screen(problem, rows)
    best = int(np.argmin(obj))
    assert hp.is_feasible(problem, rows[best])
    opt = hp.evaluate(problem, rows[best]).mean_jct
    assert np.isclose(opt, obj[best], rtol=1e-9)
    return opt, rows[best]


def test_screen_matches_is_feasible():
    for seed in range(6):
        problem = quota_problem(seed, max_workers=4)
        rows = np.array(list(itertools.product(range(-1, problem.n_jobs), repeat=problem.n_workers)),
                        dtype=np.int64)
        obj = screen(problem, rows)
        for r, v in zip(rows, obj):
            feasible = hp.is_feasible(problem, r)
            assert feasible == np.isfinite(v), (seed, r)
            if feasible:
                assert np.isclose(v, hp.evaluate(problem, r).mean_jct, rtol=1e-9)


def _gaps(seeds, **kw):
    gaps = []
    for seed in seeds:
        problem = quota_problem(seed, **kw)
        opt, _ = brute_force(problem)
        pl = hp.place(problem, method="smp", seed=seed)
        assert hp.is_feasible(problem, pl.worker_job), seed
        gaps.append(pl.mean_jct / opt - 1)
    return np.array(gaps)


def test_gap_to_brute_force_flat():
    """100 tiny flat instances with binding quotas: within 0.5 % mean and 2.04 % worst of the optimum."""
    gaps = _gaps(range(100))
    assert gaps.min() > -1e-9  # never below a proven optimum
    assert gaps.mean() <= 0.005 and gaps.max() <= 0.0204, (gaps.mean(), gaps.max(), int(np.argmax(gaps)))


def test_gap_to_brute_force_topology_and_replacing():
    gaps = np.concatenate([_gaps(range(20), topology=True), _gaps(range(20), replacing=True)])
    assert gaps.min() > -1e-9
    assert gaps.mean() <= 0.005 and gaps.max() <= 0.0204, (gaps.mean(), gaps.max())


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"topology": True}, {"replacing": True}, {"topology": True, "replacing": True}])
def test_gap_to_brute_force_campaign(kw):
    gaps = _gaps(range(1000, 1300), **kw)
    assert gaps.min() > -1e-9
    assert gaps.mean() <= 0.005 and gaps.max() <= 0.0204, (gaps.mean(), gaps.max(), int(np.argmax(gaps)))


@pytest.mark.parametrize("kw", [dict(), dict(weights=True), dict(speeds=True), dict(topology=True),
                                dict(replacing=True), dict(topology=True, replacing=True)])
def test_feasible_on_random_instances(kw):
    for seed in range(12):
        problem = quota_problem(500 + seed, max_workers=12, **kw)
        pl = hp.place(problem, method="smp", seed=seed, samples=16)
        assert hp.is_feasible(problem, pl.worker_job), seed
        assert pl.info["quota_steps"] >= 0


def test_feasible_on_a_gavel_cluster():
    """K = 64, S = 8 Gavel jobs, two tenants limited on the v100s, one with no k80 at all."""
    from hetplace.instances import gavel_instance, load_gavel

    base = gavel_instance(3, 64, 8, load_gavel())
    d = base.to_dict()
    G = base.n_types
    quota = np.full((2, G), np.inf)
    quota[0, G - 1], quota[1, G - 1], quota[1, 0] = 3, 5, 0
    d.update(tenant=[0, 1, 0, 1, -1, 0, 1, -1], quota=quota.tolist())
    problem = hp.Problem.from_dict(d)
    assert problem.has_quota
    pl = hp.place(problem, method="smp", seed=0)
    assert hp.is_feasible(problem, pl.worker_job)
    free = hp.place(base, method="smp", seed=0)
    assert pl.mean_jct >= free.mean_jct * (1 - 1e-12)  # quotas can only cost


@pytest.mark.parametrize("kw", [dict(), dict(speeds=True), dict(topology=True), dict(replacing=True)])
def test_backends_and_threads_agree(kw):
    for seed in range(2 if kw.get("topology") else 3):  # the plain-Python topology search is slow
        problem = quota_problem(700 + seed, max_workers=10, **kw)
        ref = None
        for backend in BACKENDS:
            for threads in ((1, 2) if backend != "python" else (1,)):
                wj = hp.place(problem, method="smp", seed=seed, backend=backend, threads=threads).worker_job
                if ref is None:
                    ref = wj
                assert np.array_equal(wj, ref), (seed, backend, threads)


def test_same_seed_same_placement():
    problem = quota_problem(31, max_workers=10)
    a = hp.place(problem, method="smp", seed=5)
    b = hp.place(problem, method="smp", seed=5)
    assert np.array_equal(a.worker_job, b.worker_job) and a.mean_jct == b.mean_jct


def test_tenants_without_binding_quota_change_nothing():
    """Tenants whose quotas never bind: SMP runs none of the quota search, the placement is the plain one."""
    args = dict(throughput=[[40, 130, 250], [70, 250, 430], [50, 0, 300]], type_counts=[4, 6, 6],
                batch=[256, 128, 64], iterations=[20_000, 30_000, 10_000], grad_bytes=[1e8, 2.5e8, 5e7],
                bandwidth=1.25e9)
    plain = hp.Problem(**args)
    loose = hp.Problem(**args, tenant=[0, 1, 0], quota=[[4, 6, 6], [np.inf, 6, 6]])
    assert not loose.has_quota
    a = hp.place(plain, method="smp", seed=3)
    b = hp.place(loose, method="smp", seed=3)
    assert np.array_equal(a.worker_job, b.worker_job) and "quota_steps" not in b.info


def test_zero_quota_on_the_fast_type():
    """A tenant with no v100 at all: its jobs run on the other types, the other tenant takes the v100s."""
    problem = hp.Problem(
        throughput=[[40, 130, 250], [70, 250, 430]], type_counts=[4, 6, 6], batch=[256, 128],
        iterations=[20_000, 30_000], grad_bytes=[1e8, 2.5e8], bandwidth=1.25e9,
        tenant=[0, 1], quota=[[4, 6, 0], [0, 2, 6]],
    )
    for backend in BACKENDS:
        pl = hp.place(problem, method="smp", seed=0, backend=backend)
        assert hp.is_feasible(problem, pl.worker_job)
        used = quota_usage(problem.tenant, 2, pl.worker_job, problem.worker_type, 3)
        assert used[0, 2] == 0 and used[1, 0] == 0 and used[1, 1] <= 2


def test_quota_with_min_workers():
    problem = hp.Problem(
        throughput=[[100, 300], [120, 280], [90, 310]], type_counts=[4, 4], batch=[256, 256, 256],
        iterations=[10_000, 10_000, 10_000], tenant=[0, 0, 1], quota=[[2, 2], [np.inf, 1]],
        min_workers=[2, 2, 1],
    )
    pl = hp.place(problem, method="smp", seed=1)
    assert hp.is_feasible(problem, pl.worker_job)
    opt, _ = brute_force(problem)
    assert pl.mean_jct <= opt * (1 + 1e-9)


def test_quota_start_is_feasible():
    """The max-flow start gives every job its min_workers within quotas and capacities (the fallback row)."""
    for seed in range(20):
        problem = quota_problem(900 + seed, max_workers=12)
        counts = _smp_quota._quota_counts(problem)
        assert (counts.sum(axis=1) == problem.min_workers).all()
        wj = _smp_quota._quota_start(problem)
        assert hp.is_feasible(problem, wj), seed


def test_repair_of_a_violating_row():
    """The quota search turns a finite assignment into a feasible one (here: nearly all to tenant 0's job)."""
    checked = 0
    for seed in range(20):
        problem = quota_problem(1200 + seed, max_workers=10).objective_problem
        wj = np.zeros(problem.n_workers, dtype=np.int64)
        wj[problem.throughput[0, problem.worker_type] == 0] = -1
        wj[np.flatnonzero(problem.throughput[1, problem.worker_type] > 0)[:1]] = 1
        if problem.n_jobs > 2:
            free = np.flatnonzero((problem.throughput[2, problem.worker_type] > 0) & (wj != 1))
            wj[free[:1]] = 2
        if not np.isfinite(price(problem, wj).total):  # a job without worker or outside its size bounds
            continue
        search = _smp_quota.QuotaSearch(problem)
        assert search.descend(wj) == 0
        assert hp.is_feasible(problem, wj), seed
        checked += 1
    assert checked >= 3


def test_keep_candidates_respect_the_room_left():
    """A re-placement whose running jobs fill tenant 0's v100 quota: the new job of tenant 0 gets none."""
    problem = hp.Problem(
        throughput=[[40, 130, 250], [70, 250, 430], [100, 200, 300]], type_counts=[2, 2, 4],
        batch=[256, 128, 64], iterations=[20_000, 30_000, 5_000], grad_bytes=[1e8, 2.5e8, 2e7],
        bandwidth=1.25e9, current=[-1, -1, 1, 1, 0, 0, -1, -1], restart_time=[5_000.0, 5_000.0, 0.0],
        tenant=[0, 1, 0], quota=[[2, 2, 2], [np.inf, np.inf, np.inf]],
    )
    pl = hp.place(problem, method="smp", seed=0)
    assert hp.is_feasible(problem, pl.worker_job)
    assert pl.info["keep_candidates"] >= 1
    opt, _ = brute_force(problem)
    assert pl.mean_jct <= opt * (1 + 1e-9)
