"""SMP with a network topology (docs/model.md §3.13): feasible, reproducible, near brute force; flat path unchanged."""

import math
import hashlib

import numpy as np
import pytest

import hetplace as hp
from hetplace._cost import price
from hetplace._smp_topology import optimistic_table, pack
from hetplace.data import gavel_path
from hetplace.exact import solve_exact
from hetplace.instances import gavel_instance, replacement_instance, speeds_instance
from hetplace.problem import Problem
from hetplace.smp import _cython_available

from instances import tiny_topology

BACKENDS = ["numba", "python"] + (["cython"] if _cython_available(warn=False) else [])


def _with_down_worker(p, k):
    """``p`` with worker ``k`` down (its other arguments kept)."""
    avail = np.ones(p.n_workers, dtype=bool)
    avail[k] = False
    return Problem(p.throughput, p.type_counts, p.batch, p.iterations, p.grad_bytes, p.bandwidth, p.worker_speed,
                   min_workers=p.min_workers, max_workers=p.max_workers, available=avail,
                   **p.topology.args())


def _check_feasible(p, wj):
    wj = np.asarray(wj)
    assert wj.shape == (p.n_workers,)
    assert np.all(wj[~p.available] == -1)
    n = np.bincount(wj[wj >= 0], minlength=p.n_jobs)
    assert np.all(n >= p.min_workers) and np.all(n <= p.max_workers)
    assert np.isfinite(price(p, wj).total)


OPTIONS = [dict(), dict(speeds=True), dict(bounds=True), dict(restarts=True), dict(weights=True),
           dict(racks=True, speeds=True, bounds=True, restarts=True, weights=True)]


@pytest.mark.parametrize("kw", OPTIONS, ids=lambda kw: "-".join(kw) or "plain")
@pytest.mark.parametrize("seed", range(6))
def test_feasible_and_reproducible(seed, kw):
    p = tiny_topology(seed, **kw)
    a = hp.place(p, "smp", seed=seed)
    _check_feasible(p, a.worker_job)
    assert a.info["topology"] is True
    b = hp.place(p, "smp", seed=seed, threads=2)
    assert np.array_equal(a.worker_job, b.worker_job)
    for opts in (dict(sampling="weighted"), dict(matching="ordinal"), dict(polish=False), dict(fairness_tol=0.05),
                 dict(samples=3, polish_top=1)):
        c = hp.place(p, "smp", seed=seed, **opts)
        _check_feasible(p, c.worker_job)
        assert np.array_equal(c.worker_job, hp.place(p, "smp", seed=seed, **opts).worker_job)


@pytest.mark.parametrize("seed", range(4))
def test_down_workers_stay_idle(seed):
    p = _with_down_worker(tiny_topology(seed, n_workers=6, n_jobs=2), seed % 6)
    pl = hp.place(p, "smp", seed=seed)
    _check_feasible(p, pl.worker_job)


@pytest.mark.parametrize("seed", range(2))
def test_backends_agree(seed):
    p = tiny_topology(seed, speeds=True, restarts=seed % 2 == 0)
    got = [hp.place(p, "smp", seed=seed, backend=b).worker_job for b in BACKENDS]
    for wj in got[1:]:
        assert np.array_equal(wj, got[0])


def test_near_brute_force_on_tiny_instances():
    gaps = []
    for seed in range(40):
        kw = dict(speeds=seed % 2 == 1, bounds=seed % 3 == 1, restarts=seed % 4 == 2, weights=seed % 5 == 3)
        p = tiny_topology(seed, **kw)
        pl = hp.place(p, "smp", seed=seed)
        opt = solve_exact(p, method="brute").objective
        gaps.append(pl.mean_jct / opt - 1)
    assert min(gaps) > -1e-9  # never below the optimum
    assert max(gaps) <= 0.0204 and np.mean(gaps) <= 0.005


def test_pack_keeps_type_counts_and_fills_one_node():
    # two 4-GPU nodes of one type; a 3-worker job spread over both is packed into one node
    p = Problem([[10.0], [10.0]], [8], [32, 32], [1000, 1000], [1e8, 1e8], 1e9,
                node=[0, 0, 0, 0, 1, 1, 1, 1], node_bandwidth=20e9)
    wj = np.array([[0, 0, 1, -1, 0, 1, -1, -1]])
    out = pack(p, wj)[0]
    assert np.bincount(out[out >= 0], minlength=2).tolist() == [3, 2]
    assert len(set(p.topology.node[out == 0])) == 1 and len(set(p.topology.node[out == 1])) == 1


def test_optimistic_table_is_a_lower_bound_of_the_topology_cost():
    p = tiny_topology(3, bounds=True)
    table = optimistic_table(p)
    rng = np.random.default_rng(0)
    for _ in range(50):
        wj = rng.integers(-1, p.n_jobs, p.n_workers)
        pr = price(p, wj)
        ok = pr.n > 0
        assert np.all(table[np.arange(p.n_jobs)[ok], pr.n[ok]] <= pr.comm[ok] * (1 + 1e-12))


def test_topology_beats_the_flat_placement_in_the_topology_model():
    ratios = []
    for seed in range(4):
        base = gavel_instance(seed, 32, 6, gavel_path())
        node = np.arange(32) // 4
        p = Problem(base.throughput, base.type_counts, base.batch, base.iterations, base.grad_bytes, base.bandwidth,
                    node=node, node_bandwidth=20 * base.bandwidth)
        topo = hp.place(p, "smp", seed=seed).mean_jct
        flat = price(p, hp.place(base, "smp", seed=seed).worker_job).total / p.n_jobs
        ratios.append(topo / flat)
    assert max(ratios) <= 1.0 + 1e-9 and np.mean(ratios) < 1.0


# Placements of main (83ae860) on flat problems: sha1 of worker_job (int64 bytes), first 16 hex digits.
FLAT = {
    ("gavel", ()): "e50a353e41cf7a9d",
    ("gavel", ("weighted",)): "e50a353e41cf7a9d",
    ("speeds", ()): "dd3f916c9d1400f8",
    ("speeds", ("weighted",)): "4e8ee3bcd6077251",
    ("replace", ()): "0819f510ffc73d88",
    ("replace", ("weighted",)): "0819f510ffc73d88",
}


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "python"])
@pytest.mark.parametrize("name,variant", list(FLAT))
def test_flat_path_unchanged(name, variant, backend):
    table = gavel_path()
    p = {"gavel": lambda: gavel_instance(3, 48, 8, table), "speeds": lambda: speeds_instance(5, 32, 6, table),
         "replace": lambda: replacement_instance(7, 40, 6, table)}[name]()
    opts = dict(sampling="weighted", fairness_tol=0.01) if variant else {}
    pl = hp.place(p, "smp", seed=11, backend=backend, **opts)
    digest = hashlib.sha1(np.ascontiguousarray(pl.worker_job, dtype=np.int64).tobytes()).hexdigest()[:16]
    assert digest == FLAT[name, variant]
    assert "topology" not in pl.info


def test_compound_steps_never_give_a_job_a_type_it_cannot_run():
    """Regression: a kick that takes a whole node put job 0 on a K80 (throughput 0) in the online run."""
    node = [1, 1, 1, 5, 5] + [v for v in range(18, 27) for _ in range(4)]
    p = hp.Problem([[899.749643176527, 664.4668811760423, 0.0], [928.6191550966714, 384.6095064834309, 161.92755895516262]],
                   [5, 0, 36], [512, 10], [185317.46510164306, 2958803.368805737], grad_bytes=[1e8, 8e7],
                   bandwidth=1.25e9, node=node, node_bandwidth=math.inf)
    for backend in ("python", "numba", "cython"):
        if backend == "cython" and not _cython_available():
            continue
        pl = hp.place(p, "smp", seed=10593509024969495158, samples=8, backend=backend, threads=1)
        assert hp.is_feasible(p, pl.worker_job)


@pytest.mark.parametrize("seed", range(12))
def test_zero_throughput_types_stay_unused(seed):
    rng = np.random.default_rng([seed, 31])
    p = tiny_topology(seed, n_workers=int(rng.integers(5, 9)))
    rho = p.throughput.copy()
    rho[rng.integers(p.n_jobs), rng.integers(p.n_types)] = 0.0
    try:
        q = hp.Problem(rho, p.type_counts, p.batch, p.iterations, p.grad_bytes, p.bandwidth, **p.topology.args())
    except hp.HetplaceError:
        return
    for s in range(4):
        assert hp.is_feasible(q, hp.place(q, "smp", seed=s).worker_job)


def _node_candidate_reference(p):
    """The least sum of job times over every way to give each job its own node (slow, obvious)."""
    import itertools

    topo, S = p.topology, p.n_jobs
    nodes = np.unique(topo.node)
    best = math.inf
    for perm in itertools.permutations(nodes, S):
        wj = np.full(p.n_workers, -1)
        for i, v in enumerate(perm):
            ws = [k for k in np.flatnonzero(topo.node == v) if p.worker_throughput[i, k] > 0]
            ws = sorted(ws, key=lambda k: (-p.worker_throughput[i, k], k))[:p.max_workers[i]]
            wj[ws] = i
        n = np.bincount(wj[wj >= 0], minlength=S)
        if np.any(n < np.maximum(p.min_workers, 1)):
            continue
        best = min(best, price(p, wj).total)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_node_candidate_is_the_best_one_job_per_node_placement(seed):
    from hetplace._smp_topology import node_candidate

    p = tiny_topology(seed, n_workers=int(np.random.default_rng(seed).integers(4, 8)), n_jobs=2,
                      speeds=seed % 2 == 0, bounds=seed % 3 == 0)
    want = _node_candidate_reference(p)
    wj = node_candidate(p)
    if not math.isfinite(want):
        assert wj is None
        return
    assert wj is not None
    _check_feasible(p, wj)
    for i in range(p.n_jobs):  # each job on one node
        assert len(set(p.topology.node[wj == i])) == 1
    assert price(p, wj).total == pytest.approx(want, rel=1e-12)


def test_node_candidate_declines_when_jobs_outnumber_nodes():
    from hetplace._smp_topology import node_candidate

    p = next(q for q in (tiny_topology(s, n_workers=6, n_jobs=3) for s in range(100))
             if len(np.unique(q.topology.node)) < 3)
    assert node_candidate(p) is None
    _check_feasible(p, hp.place(p, "smp", seed=0).worker_job)


def _domain_reference(p):
    """The least sum of job times over every way to give each job its own node or its own domain
    of :func:`hetplace._smp_topology._domains` (slow, obvious; node sets pairwise disjoint)."""
    import itertools

    from hetplace._smp_topology import _domains

    topo, S = p.topology, p.n_jobs
    doms = [(int(v),) for v in np.unique(topo.node)] + [tuple(d) for d in _domains(topo)]
    best = math.inf
    for pick in itertools.product(range(len(doms)), repeat=S):
        nodes = [v for d in pick for v in doms[d]]
        if len(nodes) != len(set(nodes)):
            continue
        wj = np.full(p.n_workers, -1)
        for i, d in enumerate(pick):
            ws = [k for k in np.flatnonzero(np.isin(topo.node, doms[d])) if p.worker_throughput[i, k] > 0]
            wj[sorted(ws, key=lambda k: (-p.worker_throughput[i, k], k))[:p.max_workers[i]]] = i
        n = np.bincount(wj[wj >= 0], minlength=S)
        if np.all(n >= np.maximum(p.min_workers, 1)):
            best = min(best, price(p, wj).total)
    return best


def _two_racks(work):
    """Four 4-GPU nodes in two racks; job 0's compute is ``work`` times the others'."""
    batch = np.array([256, 64, 64])
    iters = np.array([1000.0 * work, 1000.0, 1000.0])
    return Problem(np.array([[10.0], [10.0], [10.0]]), [16], batch, iters, [1e9, 1e9, 1e9], 1e9,
                   node=np.repeat(np.arange(4), 4), node_bandwidth=4e10, rack=[0, 0, 1, 1], rack_bandwidth=2e10)


def test_domain_candidate_gives_a_large_job_two_nodes_of_a_rack():
    from hetplace._smp_topology import domain_candidate, node_candidate

    p = _two_racks(50.0)
    wj = domain_candidate(p)
    _check_feasible(p, wj)
    assert sorted(set(p.topology.node[wj == 0])) in ([0, 1], [2, 3])  # job 0: a whole rack
    assert price(p, wj).total == pytest.approx(_domain_reference(p), rel=1e-12)
    assert price(p, wj).total < price(p, node_candidate(p)).total
    even = _two_racks(1.0)  # equal jobs: the idle fourth node still goes to one of them
    assert price(even, domain_candidate(even)).total == pytest.approx(_domain_reference(even), rel=1e-12)


@pytest.mark.parametrize("seed", range(16))
def test_domain_candidate_never_worse_than_one_job_per_node(seed):
    from hetplace._smp_topology import domain_candidate, node_candidate

    p = tiny_topology(seed, n_workers=int(np.random.default_rng(seed).integers(5, 8)), n_jobs=2,
                      racks=seed % 2 == 0, speeds=seed % 3 == 0, bounds=seed % 4 == 0)
    one = node_candidate(p)
    wj = domain_candidate(p)
    if one is None:
        assert wj is None
        return
    _check_feasible(p, wj)
    assert np.array_equal(wj, domain_candidate(p))  # deterministic
    assert price(p, wj).total <= price(p, one).total * (1 + 1e-12)
    assert price(p, wj).total >= _domain_reference(p) * (1 - 1e-12)  # the reference is the best of its kind
    for i in range(p.n_jobs):  # each job on one node, or on nodes of one rack (any two without racks)
        nodes = set(p.topology.node[wj == i])
        assert len(nodes) <= 2 or (p.topology.rack is not None
                                   and len({p.topology.node_rack[v] for v in nodes}) == 1)


def test_sweep_kicks_enumerate_every_kick_once():
    from hetplace._smp_topology import sweep_kicks

    p = tiny_topology(3, n_workers=7, n_jobs=3)
    S, N = p.n_jobs, len(p.topology.node_bandwidth)
    k = sweep_kicks(p)
    assert k.shape == (S * (3 * N + S - 1), 3)
    assert len({tuple(r) for r in k.tolist()}) == len(k)
    assert set(k[:, 0]) == set(range(S)) and set(k[:, 1]) == {0, 1, 2, 3}
    assert k[k[:, 1] < 3, 2].max() == N - 1 and k[k[:, 1] == 3, 2].max() == S - 2


@pytest.mark.parametrize("dp", [True, False], ids=["node-dp", "sweep"])
def test_sweep_finds_a_two_step_improvement(dp, monkeypatch):
    """Held-out instance of the public family where one job must first move to a smaller NVLink node
    so that another can take the whole rack: 7.8 % above the MILP's optimum for seed 0 before the
    sweep, whatever the kicks drew now; that placement is also in the node DP's space (``dp=False``:
    the DP skipped, the full search and the sweep alone)."""
    import hetplace._smp_topology as topo
    from hetplace.instances import topology_instance

    if not dp:
        monkeypatch.setattr(topo, "DP_MAX_WORK", 0)
    p = topology_instance(7047, 64, 6, gavel_path(), racks=True)
    optimum = 306.36821817375704  # solve_exact(p, method="milp"), status optimal
    for seed in range(2):
        assert hp.place(p, "smp", seed=seed).mean_jct == pytest.approx(optimum, rel=1e-9)


@pytest.mark.parametrize("dp", [True, False], ids=["node-dp", "domains"])
def test_domain_candidate_offers_runs_of_a_racks_nodes(dp, monkeypatch):
    """Held-out instance of the public family whose optimum gives one job six of a rack's seven
    nodes: 1.4 % above the MILP's optimum with pairs and whole racks as the only domains (a run of
    the node DP too; ``dp=False``: the DP skipped, the domain candidate runs)."""
    import hetplace._smp_topology as topo
    from hetplace.instances import topology_instance

    if not dp:
        monkeypatch.setattr(topo, "DP_MAX_WORK", 0)
    p = topology_instance(7073, 64, 6, gavel_path(), racks=True)
    optimum = 917.2508496951555  # solve_exact(p, method="milp"), status optimal
    assert hp.place(p, "smp", seed=0).mean_jct == pytest.approx(optimum, rel=1e-9)


def test_one_job_per_node_found_where_the_proxies_spread_a_job():
    """Few large nodes beside many small ones: the optimum gives each job its own node and leaves
    workers idle, where the size-priced proxies spread the largest job over six nodes (4.3 % above
    the optimum before the one-job-per-node candidate; seeded instance 6016 of bench_topology)."""
    g = gavel_instance(6016, 48, 7, gavel_path())
    sizes = [8, 4, 4, 4, 3, 8, 4, 3, 4, 4, 2]
    node = np.repeat(np.arange(len(sizes)), sizes)
    bw = np.array([31.83, 30.29, 28.77, 26.87, 15.12, 38.68, 23.14, 19.26, 14.54, 29.06, 30.63]) * 1.25e9
    p = Problem(g.throughput, g.type_counts, g.batch, g.iterations, g.grad_bytes, 1.25e9, node=node,
                node_bandwidth=bw)
    pl = hp.place(p, "smp", seed=0)
    opt = solve_exact(p, method="milp", time_limit=120)
    assert opt.status == "optimal"
    assert pl.mean_jct <= opt.objective * (1 + 1e-9)


def _line_positions(topo):
    """The node DP's line order as each node's position: rack by rack, node ids within."""
    N = len(topo.node_bandwidth)
    rack = topo.node_rack if topo.rack is not None else np.zeros(N, dtype=int)
    pos = np.empty(N, dtype=int)
    pos[np.lexsort((np.arange(N), rack))] = np.arange(N)
    return pos


def _in_dp_space(wj, wpos, S):
    """Whether ``wj`` is in the node DP's space (forward order): each job on one node, or on
    consecutive positions of which all but the last are wholly its own; the last is its own or
    shared with one-node jobs only, and holds the part of one such job at most."""
    parts = set()
    for i in range(S):
        q = sorted(set(wpos[wj == i].tolist()))
        if len(q) <= 1:
            continue
        if q != list(range(q[0], q[-1] + 1)):
            return False
        if any(np.any(wj[wpos == v] != i) for v in q[:-1]):
            return False
        last = wj[wpos == q[-1]]
        if np.all(last == i):
            continue
        if q[-1] in parts:
            return False
        parts.add(q[-1])
        if any(len(set(wpos[wj == j].tolist())) > 1 for j in set(last.tolist()) - {i, -1}):
            return False
    return True


def _dp_space_reference(p):
    """The least sum of job times over the node DP's space, every assignment tried (slow, obvious)."""
    import itertools

    topo, S, K = p.topology, p.n_jobs, p.n_workers
    wpos = _line_positions(topo)[topo.node]
    rows = np.array(list(itertools.product(range(-1, S), repeat=K)), dtype=np.int64)
    n = np.stack([(rows == i).sum(axis=1) for i in range(S)], axis=1)
    rows = rows[np.all(n >= np.maximum(p.min_workers, 1), axis=1) & np.all(n <= p.max_workers, axis=1)]
    keep = [wj for wj in rows if _in_dp_space(wj, wpos, S)]
    return float(price(p, np.array(keep)).total.min())


def _one_type_nodes(p):
    return all(len(set(p.worker_type[p.topology.node == v].tolist())) == 1
               for v in range(len(p.topology.node_bandwidth)))


def _four_nodes(seed):
    """Eight GPUs of two types in four 2-GPU nodes, two racks (or none), three jobs."""
    rng = np.random.default_rng([seed, 31])
    rho = rng.uniform(1.0, 10.0, (3, 2))
    batch = rng.integers(8, 257, 3)
    iters = rng.integers(100, 2001, 3).astype(float)
    grad = rng.uniform(0.05, 1.5, 3) * batch / rho.mean(axis=1) * 1e9
    kw = dict(node=np.repeat(np.arange(4), 2), node_bandwidth=rng.uniform(10, 40, 4) * 1e9)
    if seed % 2 == 0:
        kw.update(rack=[0, 1, 0, 1], rack_bandwidth=rng.uniform(2, 8) * 1e9)  # the line order: 0, 2, 1, 3
    return Problem(rho, [4, 4], batch, iters, grad, 1e9, **kw)


def _shared_node(seed):
    """Two 4-GPU nodes of a fast type and a 1-GPU node of a slow one; a long job that communicates
    little beside a short one: the best of the DP's space gives the long job a node and most of
    the next, the short one the rest of it (a run with a part)."""
    rng = np.random.default_rng([seed, 37])
    rho = np.column_stack([rng.uniform(5, 10, 2), rng.uniform(0.5, 2, 2)])
    batch = np.array([256, int(rng.integers(16, 129))])
    iters = np.array([2000.0, float(rng.integers(100, 800))])
    grad = rng.uniform(0.002, 0.05, 2) * batch / rho[:, 0] * 1e9
    kw = dict(node=np.array([0] * 4 + [1] * 4 + [2]), node_bandwidth=rng.uniform(10, 40, 3) * 1e9)
    if seed % 2 == 0:
        kw.update(rack=[0, 0, 1], rack_bandwidth=rng.uniform(2, 8) * 1e9)
    return Problem(rho, [8, 1], batch, iters, grad, 1e9, **kw)


@pytest.mark.parametrize("seed", range(14))
def test_node_dp_is_exact_on_its_space(seed):
    """The node DP's forward candidate and its value are the best placement of its space
    (one-type nodes without speeds or size bounds, where its pricing is exact)."""
    from hetplace._smp_topology import dp_candidates

    if seed < 6:
        p = next(q for q in (tiny_topology(100 * seed + t, n_workers=7, n_jobs=3) for t in range(100))
                 if _one_type_nodes(q))
    elif seed < 10:
        p = _four_nodes(seed)
    else:
        p = _shared_node(seed)
    want = _dp_space_reference(p)
    got = dp_candidates(p)
    assert len(got) == 2
    _check_feasible(p, got[0])
    assert price(p, got[0]).total == pytest.approx(want, rel=1e-12)
    assert min(price(p, wj).total for wj in got) <= want * (1 + 1e-12)
    if seed >= 10:  # a run with a part: job 0 on node 0 and part of node 1, job 1 on the rest
        assert set(p.topology.node[got[0] == 0].tolist()) == {0, 1}
        assert set(p.topology.node[got[0] == 1].tolist()) == {1}


def test_node_dp_kernel_agrees_across_backends_with_ties():
    """The kernel's tables and back pointers, bit for bit, on integer costs (many ties) with gaps."""
    from hetplace._core._registry import kernels

    rng = np.random.default_rng(5)
    P, S, C = 5, 4, 4
    f = rng.integers(1, 6, (P, S, C + 1)).astype(float)
    f[rng.random(f.shape) < 0.2] = math.inf
    f[:, :, 0] = math.inf
    cap = rng.integers(1, C + 1, P)
    run_a, run_b = np.triu_indices(P + 1, 1)
    h = rng.integers(1, 9, (len(run_a), S, C + 1)).astype(float)
    h[rng.random(h.shape) < 0.2] = math.inf
    out = [kernels(b).topo_dp(f, cap, h, run_a, run_b, True) for b in BACKENDS]
    assert np.isfinite(out[0][0][P, -1])
    for other in out[1:]:
        for x, y in zip(out[0], other):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("seed", range(12))
def test_node_dp_candidates_are_feasible_and_in_their_space(seed):
    from hetplace._smp_topology import dp_candidates

    p = tiny_topology(seed, racks=seed % 2 == 0, speeds=seed % 3 == 0, bounds=seed % 4 == 0)
    if seed % 5 == 0:
        p = _with_down_worker(p, seed % p.n_workers)
    got = dp_candidates(p)
    again = dp_candidates(p)
    assert len(got) == len(again) and all(np.array_equal(a, b) for a, b in zip(got, again))
    wpos = _line_positions(p.topology)[p.topology.node]
    for t, wj in enumerate(got):
        _check_feasible(p, wj)
        # forward: parts after the runs; reversed: the same with positions mirrored
        assert _in_dp_space(wj, wpos if t == 0 else wpos.max() - wpos, p.n_jobs)


def test_node_dp_skipped_above_its_budget(monkeypatch):
    import hetplace._smp_topology as topo

    p = tiny_topology(4, n_workers=7, n_jobs=3)
    assert topo.dp_candidates(p)
    monkeypatch.setattr(topo, "DP_MAX_WORK", 0)
    assert topo.dp_candidates(p) == []
    _check_feasible(p, hp.place(p, "smp", seed=0).worker_job)
