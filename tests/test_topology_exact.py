"""The exact methods and the lower bound with a network topology (docs/model.md §1.6, §4.3, §4.8).

Every exact method that accepts a topology (the MILP on each solver, brute
force, ``auto``) equals the slow reference's optimum on tiny instances with
and without per-worker speeds, size bounds, restarts and weights; the lower
bound never exceeds the optimum.
"""
import numpy as np
import pytest

import hetplace as hp
import hetplace.exact as exact
from hetplace.exact import solve_exact

from instances import seeds, tiny_topology, with_down
from methods import CPSAT_REL, EXACT_REL, MILP_SOLVERS
from reference import brute_force_reference, weighted_objective_reference


def _tiny(seed, **kw):
    """Seeds cycle through speeds, bounds, restarts and weights (alone and together)."""
    kw = dict(speeds=seed % 2 == 1, bounds=seed % 3 == 1, restarts=seed % 4 == 2, weights=seed % 5 == 3) | kw
    kw.setdefault("n_workers", int(np.random.default_rng([seed, 24]).integers(3, 7)))
    return tiny_topology(seed, **kw)


def _rel(solver):
    return CPSAT_REL if solver == "cp-sat" else EXACT_REL


@pytest.mark.parametrize("solver", MILP_SOLVERS)
@pytest.mark.parametrize("seed", seeds(60, fast=12))
def test_milp_equals_the_reference(solver, seed):
    P = _tiny(seed)
    ref, _ = brute_force_reference(P, objective=weighted_objective_reference)
    res = solve_exact(P, method="milp", solver=solver)
    assert res.status == "optimal", res.message
    assert res.objective == pytest.approx(ref, rel=_rel(solver))
    assert res.bound <= ref * (1 + _rel(solver))


@pytest.mark.parametrize("seed", seeds(30, fast=6))
def test_milp_with_down_workers_equals_brute_force(seed):
    P = with_down(_tiny(seed, n_workers=6), seed)
    if P is None:
        pytest.skip("no valid set of down workers")
    brute = solve_exact(P, method="brute")
    res = solve_exact(P, method="milp")
    assert res.status == "optimal", res.message
    assert res.objective == pytest.approx(brute.objective, rel=EXACT_REL)
    assert np.all(res.placement.worker_job[~P.available] == -1)


@pytest.mark.parametrize("seed", seeds(60, fast=15))
def test_brute_and_auto_equal_the_reference(seed):
    P = _tiny(seed)
    ref, _ = brute_force_reference(P, objective=weighted_objective_reference)
    brute = solve_exact(P, method="brute")
    auto = solve_exact(P)
    assert brute.status == auto.status == "optimal"
    assert auto.method == "milp"  # the type DPs refuse a topology
    assert brute.objective == pytest.approx(ref, rel=1e-12)
    assert auto.objective == pytest.approx(ref, rel=EXACT_REL)


@pytest.mark.parametrize("seed", range(6))
def test_the_network_changes_the_optimum(seed):
    # without racks, 3 nodes: the flat problem's optimum (every ring at the top level) is no
    # better than the topology's, and the MILP prices the topology, not the flat model
    P = tiny_topology(seed, n_workers=6, n_jobs=2, racks=False)
    flat = hp.Problem(P.throughput, P.type_counts, P.batch, P.iterations, P.grad_bytes, P.bandwidth)
    res = solve_exact(P, method="milp")
    assert res.objective <= solve_exact(flat, method="milp").objective * (1 + 1e-9)
    assert res.info["milp_objective"] == pytest.approx(res.objective, rel=1e-6)


def test_classes_are_split_by_node():
    P = tiny_topology(3, n_workers=6, n_jobs=2, racks=True)
    members, _ = exact._worker_classes(P, "classes")
    for m in members:
        assert np.unique(P.topology.node[m]).size == 1
        assert np.unique(P.worker_type[m]).size == 1
    assert sorted(np.concatenate(members).tolist()) == list(range(P.n_workers))


@pytest.mark.parametrize("seed", range(8))
def test_moves_never_misprice_a_topology(seed):
    # the descent of the exact methods prices the network: what it returns evaluates to what it claims
    P = _tiny(seed)
    start = hp.evaluate(P, exact._incumbent(P).worker_job)
    moved = exact._improve_by_moves(P, start, 1e-9)
    assert moved.mean_jct <= start.mean_jct
    assert moved.mean_jct == pytest.approx(weighted_objective_reference(P, moved.worker_job), rel=1e-12)


@pytest.mark.parametrize("seed", seeds(40, fast=10))
def test_lower_bound_is_below_the_optimum_tiny(seed):
    P = _tiny(seed)
    ref, _ = brute_force_reference(P, objective=weighted_objective_reference)
    lb = hp.lower_bound(P)
    assert lb.bound <= ref * (1 + 1e-9)
    assert lb.bound >= float(np.mean(P.jct_alone)) * (1 - 1e-12) or P.weight is not None


@pytest.mark.parametrize("K, S, seed", [(16, 3, 0), (24, 4, 1), (32, 4, 2)])
def test_lower_bound_is_below_the_milp_optimum(K, S, seed):
    P = tiny_topology(seed, n_workers=K, n_jobs=S, speeds=seed == 1, restarts=seed == 2)
    res = solve_exact(P, method="milp", time_limit=60)
    lb = hp.lower_bound(P)
    assert res.status == "optimal", res.message
    assert float(np.mean(P.jct_alone)) * (1 - 1e-9) <= lb.bound <= res.objective * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_domains_slower_inside_never_give_a_wrong_optimum(seed):
    # a node slower than the links between nodes (or a rack faster than its nodes): the model may
    # price a job below its cost there, and then the check reports "feasible", never a wrong optimum
    P = tiny_topology(seed, n_workers=5, racks=seed % 2 == 0)
    d = P.to_dict()
    rng = np.random.default_rng(seed)
    d["node_bandwidth"] = (rng.uniform(0.2, 3.0, P.topology.n_nodes) * P.bandwidth).tolist()
    if P.topology.rack is not None:
        d["rack_bandwidth"] = float(rng.uniform(0.5, 50.0) * P.bandwidth)
    Q = hp.Problem.from_dict(d)
    ref, _ = brute_force_reference(Q, objective=weighted_objective_reference)
    for solver in MILP_SOLVERS:
        res = solve_exact(Q, method="milp", solver=solver)
        assert res.objective >= ref * (1 - 1e-9)
        if res.status == "optimal":
            assert res.objective == pytest.approx(ref, rel=_rel(solver))
