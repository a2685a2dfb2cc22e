"""Tenant quotas in the exact methods, the lower bound and the baselines (docs/model.md §1.7, §4.10).

On seeded tiny instances whose quotas bind (1-2 tenants, 2-3 types, some jobs of no
tenant, some ``inf`` rows, sometimes ``min_workers``, per-worker speeds, a running
placement, weights or a network topology), brute force and the MILP on every solver
equal an independent enumeration (every ``(S+1)**K`` map filtered by
``hetplace.is_feasible`` and priced by ``hetplace.evaluate``), and the lower bound
stays below it (with either pricing).  Every method of :data:`hetplace.api.METHODS`
returns a placement within the quotas or raises a :class:`hetplace.HetplaceError`
naming them (SMP through the table of ``tests/methods.py``; its own tests are
``test_quotas_smp.py``); the type DPs refuse; the greedy baseline equals a plain
reference; a problem whose quotas do not bind places exactly as without tenants.
"""
import itertools
import math

import numpy as np
import pytest

import hetplace as hp
from hetplace import baselines
from hetplace.api import METHODS as PLACE_METHODS
from hetplace.errors import HetplaceError, InvalidOptionError, InvalidProblemError

from instances import seeds, tiny_topology
from methods import CPSAT_REL, EXACT_REL, METHODS as METHOD_ROWS, MILP_SOLVERS, by_name, rows_for, run


def _draw(seed, topology=False, speeds=False, bounds=False, restarts=False, weights=False):
    """One tiny problem with tenants and quotas, or None when the draw is not a valid Problem."""
    rng = np.random.default_rng([seed, 1707])
    G = int(rng.integers(2, 4))
    K = int(rng.integers(max(G, 3), 7 if not topology else 6))
    S = int(rng.integers(1, min(K, 3) + 1))
    counts = np.bincount(np.sort(rng.integers(0, G, K - G)), minlength=G) + 1  # every type has a worker
    rho = rng.uniform(20.0, 300.0, (S, G)).round(1)
    rho[rng.random((S, G)) < 0.2] = 0.0
    rho[np.arange(S), rng.integers(0, G, S)] = rng.uniform(20.0, 300.0, S).round(1)  # a usable type each
    batch = rng.integers(8, 257, S)
    iters = rng.integers(1_000, 50_001, S).astype(float)
    grad = np.where(rng.random(S) < 0.7, rng.uniform(1e6, 3e8, S), 0.0)
    T = int(rng.integers(1, 3))
    tenant = rng.integers(-1, T, S)
    tenant[rng.integers(0, S)] = rng.integers(0, T)  # at least one job of a tenant
    quota = rng.integers(0, counts + 1, (T, G)).astype(float)
    quota[rng.random((T, G)) < 0.2] = math.inf
    if rng.random() < 0.2:
        quota[int(rng.integers(0, T))] = math.inf  # a tenant without limit
    kw = {"tenant": tenant, "quota": quota}
    if speeds:
        kw["worker_speed"] = rng.choice([0.5, 1.0, 1.5], K)
    if bounds:
        kw["min_workers"] = rng.integers(1, 3, S)
        kw["max_workers"] = kw["min_workers"] + rng.integers(0, 3, S)
    if weights:
        kw["weight"] = rng.uniform(0.2, 3.0, S)
    if restarts:
        cur = np.full(K, -1)
        for t, k in enumerate(rng.permutation(K)[: min(K, 2 * S)]):
            if rng.random() < 0.7:
                cur[k] = t % S
        kw["current"] = cur
        kw["restart_time"] = rng.uniform(0.0, 0.5, S) * iters * batch / rho.max(axis=1)
    if topology:
        n_nodes = int(rng.integers(2, min(3, K) + 1))
        kw["node"] = np.sort(rng.integers(0, n_nodes, K))
        kw["node"][0], kw["node"][-1] = 0, n_nodes - 1
        kw["node_bandwidth"] = rng.uniform(10, 40, n_nodes) * 1.25e9
    try:
        return hp.Problem(rho, counts, batch, iters, grad, 1.25e9, **kw)
    except InvalidProblemError:
        return None


def quota_problem(seed, **kw):
    """The first valid draw from ``seed`` on whose quota binds (``has_quota``)."""
    for attempt in range(200):
        p = _draw(seed * 1000 + attempt, **kw)
        if p is not None and p.has_quota:
            return p
    raise AssertionError(f"no quota instance from seed {seed}")  # pragma: no cover


def enumerate_optimum(problem):
    """The least objective (weighted mean JCT, restart losses included) over every feasible map, by enumeration."""
    best = math.inf
    for wj in itertools.product(range(-1, problem.n_jobs), repeat=problem.n_workers):
        if hp.is_feasible(problem, wj):
            best = min(best, hp.evaluate(problem, wj).mean_jct)
    return best


def _rel(solver):
    return CPSAT_REL if solver == "cp-sat" else EXACT_REL


FEATURES = [{}, {"bounds": True}, {"speeds": True}, {"restarts": True}, {"weights": True},
            {"speeds": True, "bounds": True}]


@pytest.mark.parametrize("seed", seeds(330, fast=30))
def test_brute_and_milp_equal_the_enumeration(seed):
    P = quota_problem(seed, **FEATURES[seed % len(FEATURES)])
    ref = enumerate_optimum(P)
    brute = hp.solve_exact(P, method="brute")
    assert brute.status == "optimal", brute.message
    assert brute.objective == pytest.approx(ref, rel=1e-9)
    assert hp.is_feasible(P, brute.placement.worker_job)
    for solver in MILP_SOLVERS:
        res = hp.solve_exact(P, method="milp", solver=solver)
        assert res.status == "optimal", (solver, res.message)
        assert hp.is_feasible(P, res.placement.worker_job)
        assert res.objective == pytest.approx(ref, rel=_rel(solver)), solver
        assert res.bound <= ref * (1 + _rel(solver))
    lb = hp.lower_bound(P)
    assert lb.bound <= ref * (1 + 1e-9)
    if lb.placement is not None:
        assert hp.is_feasible(P, lb.placement.worker_job)


def _with_a_down_worker(P, seed):
    """``P`` with one worker down (its running job, if any, loses it): the first of a seeded order of
    workers that leaves a valid problem whose quota binds, or None."""
    for k in np.random.default_rng(seed).permutation(P.n_workers).tolist():
        d = P.to_dict()
        up = np.ones(P.n_workers, dtype=bool)
        up[k] = False
        d["available"] = up.tolist()
        if "current" in d:
            d["current"] = [c if up[q] else -1 for q, c in enumerate(d["current"])]
        try:
            Q = hp.Problem.from_dict(d)
        except InvalidProblemError:
            continue
        if Q.has_quota:
            return Q
    return None


@pytest.mark.parametrize("seed", range(40, 50))
def test_down_workers_count_for_nobody(seed):
    P = _with_a_down_worker(quota_problem(seed, **FEATURES[seed % len(FEATURES)]), seed)
    if P is None:
        pytest.skip("no valid down worker in this draw")
    ref = enumerate_optimum(P)
    for method in ("brute", "milp"):
        res = hp.solve_exact(P, method=method)
        assert res.status == "optimal", res.message
        assert res.objective == pytest.approx(ref, rel=EXACT_REL), method
        assert np.all(res.placement.worker_job[~P.available] == -1)
    assert hp.lower_bound(P).bound <= ref * (1 + 1e-9)
    for method in ("equal", "random", "greedy", "keep-greedy"):
        assert hp.is_feasible(P, hp.place(P, method=method, seed=seed).worker_job), method


@pytest.mark.parametrize("seed", seeds(80, fast=10))
def test_topology_brute_and_milp_equal_the_enumeration(seed):
    P = quota_problem(seed, topology=True, **FEATURES[seed % 3])
    ref = enumerate_optimum(P)
    brute = hp.solve_exact(P, method="brute")
    assert brute.objective == pytest.approx(ref, rel=1e-9)
    for solver in MILP_SOLVERS:
        res = hp.solve_exact(P, method="milp", solver=solver)
        assert res.status == "optimal", (solver, res.message)
        assert hp.is_feasible(P, res.placement.worker_job)
        assert res.objective == pytest.approx(ref, rel=_rel(solver)), solver
    assert hp.lower_bound(P).bound <= ref * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_auto_runs_the_milp_and_is_exact(seed):
    P = quota_problem(seed + 100)
    res = hp.solve_exact(P)
    assert res.method == "milp" and res.status == "optimal", res.message
    assert res.objective == pytest.approx(hp.solve_exact(P, method="brute").objective, rel=EXACT_REL)


@pytest.mark.parametrize("method", ["dp", "pruned-dp"])
def test_type_dps_refuse_a_binding_quota_and_name_it(method):
    P = quota_problem(3)
    with pytest.raises(InvalidOptionError, match=r"quota\[.*method='milp'"):
        hp.solve_exact(P, method=method)
    with pytest.raises(InvalidOptionError, match="quota"):
        hp.place(P, method="exact", exact_method=method)


def test_every_place_method_but_smp_honours_quotas():
    names = [m for m in PLACE_METHODS if m != "smp"]
    for seed in range(10):
        P = quota_problem(seed + 200, **FEATURES[seed % len(FEATURES)])
        for method in names:
            try:
                pl = hp.place(P, method=method, seed=seed)
            except HetplaceError as exc:  # a refusal must say why: the quota
                assert "quota" in str(exc), (method, str(exc))
                continue
            assert hp.is_feasible(P, pl.worker_job), (method, seed)


def test_every_row_that_applies_honours_quotas_and_the_others_refuse():
    for seed in range(6):
        P = quota_problem(seed + 300, **FEATURES[seed % len(FEATURES)])
        rows = rows_for(P)
        assert by_name("exact-dp") not in rows and by_name("exact-pruned-dp") not in rows
        for row in rows:
            pl = run(row, P)
            assert hp.is_feasible(P, pl.worker_job), (row.name, seed)
        uniform = bool((P.worker_speed == 1.0).all())  # else the DPs refuse the speeds first
        for row in METHOD_ROWS:
            if row.runnable() and not row.quotas and uniform:
                with pytest.raises(InvalidOptionError, match=r"quota\["):
                    run(row, P)


def test_auto_place_falls_back_within_quotas():
    for seed in range(6):
        P = quota_problem(seed + 400)
        pl = hp.place(P)
        assert pl.info["auto_choice"] in ("smp", "greedy")
        assert hp.is_feasible(P, pl.worker_job)


def test_greedy_seed_follows_a_flow_when_round_robin_strands_a_job():
    # job 0 (no tenant, larger) prefers the one type-0 worker, which job 1 (tenant 0, no quota of
    # type 1) needs: the round-robin strands job 1, the flow-guided seed gives job 0 the type-1 worker
    P = hp.Problem(throughput=[[300, 100], [300, 100]], type_counts=[1, 1], batch=[64, 64],
                   iterations=[50_000, 1_000], grad_bytes=[0, 0], bandwidth=1e9,
                   tenant=[-1, 0], quota=[[1, 0]])
    assert P.has_quota
    for method in ("greedy", "equal", "random", "keep-greedy"):
        pl = hp.place(P, method=method, seed=0)
        assert pl.worker_job.tolist() == [1, 0], method
    assert hp.solve_exact(P, method="milp").placement.worker_job.tolist() == [1, 0]


def test_keep_greedy_restarts_kept_jobs_beyond_the_quota():
    # both jobs of tenant 0 run on a type-0 worker each, but the tenant's quota of type 0 is now 1
    P = hp.Problem(throughput=[[100, 50], [100, 50], [80, 80]], type_counts=[3, 2], batch=[64, 64, 64],
                   iterations=[10_000, 20_000, 5_000], grad_bytes=[0, 0, 0], bandwidth=1e9,
                   current=[0, 1, -1, -1, -1], restart_time=[100.0, 100.0, 0.0],
                   tenant=[0, 0, -1], quota=[[1, 2]])
    pl = hp.place(P, method="keep-greedy")
    assert hp.is_feasible(P, pl.worker_job)
    assert pl.worker_job[1] == 1  # the tenant's holders tie: the lower index (job 0) restarts, job 1 keeps
    res = hp.solve_exact(P, method="milp")
    assert res.objective == pytest.approx(enumerate_optimum(P), rel=EXACT_REL)


def _unbinding(P, how):
    """``P`` rebuilt with tenants whose quotas never bind (``how``: "inf" rows, or the available counts)."""
    d = P.to_dict()
    for key in ("tenant", "quota"):
        d.pop(key, None)
    S, G = P.n_jobs, P.n_types
    d["tenant"] = [i % 2 for i in range(S)]
    d["quota"] = [[math.inf] * G] * 2 if how == "inf" else [P.available_counts.tolist()] * 2
    return hp.Problem.from_dict(d)


@pytest.mark.parametrize("how", ["inf", "counts"])
def test_quotas_that_do_not_bind_give_bit_identical_results(how):
    for seed in range(8):
        rng = np.random.default_rng(seed)
        K, S = int(rng.integers(3, 7)), int(rng.integers(1, 4))
        P = hp.Problem(throughput=rng.uniform(10, 300, (S, 3)).round(1), type_counts=np.bincount(
            rng.integers(0, 3, K), minlength=3), batch=rng.integers(8, 257, S), iterations=rng.integers(1e3, 5e4, S),
            grad_bytes=rng.uniform(0, 3e8, S), bandwidth=1.25e9)
        Q = _unbinding(P, how)
        assert Q.tenant is not None and not Q.has_quota
        for method in ("equal", "random", "greedy", "keep-greedy", "auto"):
            a = hp.place(P, method=method, seed=seed).worker_job
            b = hp.place(Q, method=method, seed=seed).worker_job
            assert a.tolist() == b.tolist(), (method, seed)
        assert baselines.greedy_placement(P).tolist() == baselines.greedy_placement(Q).tolist()
        for method in ("dp", "brute", "milp", "auto"):
            a, b = hp.solve_exact(P, method=method), hp.solve_exact(Q, method=method)
            assert a.placement.worker_job.tolist() == b.placement.worker_job.tolist(), method
            assert a.objective == b.objective and a.bound == b.bound, method
        assert hp.lower_bound(P).bound == hp.lower_bound(Q).bound


@pytest.mark.parametrize("seed", range(4))
def test_unbinding_quotas_with_a_topology_and_restarts_are_bit_identical(seed):
    P = tiny_topology(seed, restarts=True, n_workers=5)
    Q = _unbinding(P, "counts")
    for method in ("greedy", "keep-greedy", "equal", "random"):
        assert hp.place(P, method=method, seed=seed).worker_job.tolist() == \
            hp.place(Q, method=method, seed=seed).worker_job.tolist(), method
    for method in ("brute", "milp"):
        a, b = hp.solve_exact(P, method=method), hp.solve_exact(Q, method=method)
        assert a.placement.worker_job.tolist() == b.placement.worker_job.tolist(), method
        assert a.objective == b.objective and a.bound == b.bound, method


@pytest.mark.parametrize("seed", range(6))
def test_results_stopped_by_time_limit_stay_within_quotas(seed):
    P = quota_problem(seed + 500, **FEATURES[seed % len(FEATURES)])
    for method in ("brute", "milp"):
        res = hp.solve_exact(P, method=method, time_limit=1e-6)
        assert res.status != "optimal" or res.objective is not None
        if res.placement is not None:
            assert hp.is_feasible(P, res.placement.worker_job), (method, res.status)
        if res.bound is not None:
            assert res.bound <= hp.solve_exact(P, method="brute").objective * (1 + 1e-9)


def greedy_quota_reference(problem):
    """Greedy within the quotas, worker by worker, every job priced again at every step (slow, plain).

    Seed: ``min_workers`` per job round-robin, biggest work first, each taking its
    fastest free worker (ties: the lower index) whose type its tenant has room for
    (the instances below never strand a job).  Then each step gives the job whose
    ``work / X + size_cost[n]`` drops most (ties: the lower job) its fastest such
    worker, until nothing drops.
    """
    S, K = problem.n_jobs, problem.n_workers
    rho, wt = problem.worker_throughput, problem.worker_type
    left = {(t, g): int(problem.quota_cap[t, g]) for t in range(problem.n_tenants) for g in range(problem.n_types)}
    wj = [-1] * K

    def fastest(i):
        t = int(problem.tenant[i])
        best = None
        for k in range(K):
            if wj[k] < 0 and problem.available[k] and rho[i, k] > 0 and (t < 0 or left[t, int(wt[k])] > 0):
                if best is None or rho[i, k] > rho[i, best]:
                    best = k
        return best

    def give(i, k):
        wj[k] = i
        if problem.tenant[i] >= 0:
            left[int(problem.tenant[i]), int(wt[k])] -= 1

    order = sorted(range(S), key=lambda i: -problem.work[i])
    while any(wj.count(i) < problem.min_workers[i] for i in range(S)):
        for i in order:
            if wj.count(i) < problem.min_workers[i]:
                k = fastest(i)
                assert k is not None, "the reference does not handle a stranded seed"
                give(i, k)
    while True:
        best_gain, best = 0.0, None
        for i in range(S):
            k = fastest(i)
            if k is None:
                continue
            X = sum(rho[i, q] for q in range(K) if wj[q] == i)
            n = wj.count(i)
            gain = (problem.work[i] / X + problem.size_cost[i, n]) - (problem.work[i] / (X + rho[i, k])
                                                                      + problem.size_cost[i, n + 1])
            if gain > best_gain:
                best_gain, best = gain, (i, k)
        if best is None:
            return np.array(wj)
        give(*best)


def test_greedy_within_quotas_equals_the_plain_reference():
    checked = 0
    for seed in range(60):
        rng = np.random.default_rng([seed, 99])
        K, S, G = int(rng.integers(8, 25)), int(rng.integers(2, 7)), 3
        counts = np.bincount(rng.integers(0, G, K), minlength=G)
        T = int(rng.integers(1, 3))
        try:
            P = hp.Problem(throughput=rng.uniform(10, 300, (S, G)).round(1), type_counts=counts,
                           batch=rng.integers(8, 257, S), iterations=rng.integers(1e3, 5e4, S),
                           grad_bytes=rng.uniform(0, 3e8, S), bandwidth=1.25e9, tenant=rng.integers(-1, T, S),
                           quota=rng.integers(0, counts + 1, (T, G)))
        except InvalidProblemError:
            continue
        if not P.has_quota:
            continue
        try:
            ref = greedy_quota_reference(P)
        except AssertionError:  # a stranded round-robin seed: the flow decides (tested above)
            continue
        assert baselines.greedy_placement(P).tolist() == ref.tolist(), seed
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("seed", range(10))
def test_bound_with_the_relaxation_pricing_stays_below_the_optimum(seed, monkeypatch):
    """The pricing kernel runs once per tenant with the prices its jobs pay (the quota rows' included)."""
    import hetplace.bound

    monkeypatch.setattr(hetplace.bound, "ENUM_MAX_VECTORS", 0)  # the Numba relaxation, as on large clusters
    P = quota_problem(seed + 600, **FEATURES[seed % len(FEATURES)])
    res = hp.lower_bound(P)
    assert res.info["pricing"] == "relaxation"
    assert res.bound <= hp.solve_exact(P, method="brute").objective * (1 + 1e-9)
