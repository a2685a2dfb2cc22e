"""The network topology (docs/model.md §1.6): validation, evaluation, jct_alone and brute force."""
import math
import pickle

import numpy as np
import pytest

import hetplace as hp
from hetplace.errors import InvalidOptionError, InvalidProblemError
from hetplace.exact import solve_exact

from instances import tiny_topology
from reference import brute_force_reference, link_bandwidth_reference, weighted_objective_reference

RHO = np.array([[10.0, 5.0], [8.0, 8.0], [3.0, 6.0]])


def _problem(**kw):
    args = dict(grad_bytes=[1e8, 2e8, 5e7], bandwidth=1e9, node=[0, 0, 1, 1, 2, 2, 3, 3],
                node_bandwidth=20e9, rack=[0, 0, 1, 1], rack_bandwidth=5e9)
    args.update(kw)
    return hp.Problem(RHO, [4, 4], [64, 64, 32], [1000, 2000, 500], **args)


def test_no_topology_is_the_flat_model_bit_for_bit():
    P = _problem(node=None, node_bandwidth=None, rack=None, rack_bandwidth=None)
    T = _problem(node=[0, 1, 2, 3, 4, 5, 6, 7], node_bandwidth=1e12, rack=None, rack_bandwidth=None)
    assert P.topology is None and T.topology is not None
    rng = np.random.default_rng(0)
    for _ in range(50):
        wj = rng.integers(-1, 3, 8)
        wj[:3] = [0, 1, 2]
        # every job spans nodes (one worker per node): the top level, the flat model's numbers
        a, b = hp.evaluate(P, wj), hp.evaluate(T, wj)
        np.testing.assert_array_equal(a.jct[a.sizes >= 2], b.jct[b.sizes >= 2])


def test_link_bandwidth_and_spans():
    P = _problem()
    pl = hp.evaluate(P, [0, 0, 1, 1, 1, 2, -1, -1])
    np.testing.assert_array_equal(pl.nodes_spanned, [1, 2, 1])
    np.testing.assert_array_equal(pl.racks_spanned, [1, 2, 1])
    np.testing.assert_array_equal(pl.link_bandwidth, [20e9, 1e9, math.inf])
    pl = hp.evaluate(P, [0, 0, 1, 1, 2, 2, 1, 1])
    np.testing.assert_array_equal(pl.link_bandwidth, [20e9, 1e9, 20e9])
    pl = hp.evaluate(P, [0, 1, 0, 1, 2, 2, 1, 1])
    np.testing.assert_array_equal(pl.link_bandwidth, [5e9, 1e9, 20e9])
    flat = hp.evaluate(_problem(node=None, node_bandwidth=None, rack=None, rack_bandwidth=None), [0, 0, 1, 1, 1, 2, 2, -1])
    assert flat.nodes_spanned is None and flat.racks_spanned is None


def test_per_node_and_per_rack_bandwidths():
    P = _problem(node_bandwidth=[20e9, 10e9, 300e9, 40e9], rack_bandwidth=[5e9, 7e9])
    pl = hp.evaluate(P, [1, 1, 0, 0, 2, 2, 2, 2])
    np.testing.assert_array_equal(pl.link_bandwidth, [10e9, 20e9, 7e9])


@pytest.mark.parametrize("seed", range(40))
def test_evaluate_equals_the_reference(seed):
    P = tiny_topology(seed, speeds=seed % 2 == 0, restarts=seed % 3 == 0, weights=seed % 4 == 0)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        wj = rng.integers(-1, P.n_jobs, P.n_workers)
        if not hp.is_feasible(P, wj):
            continue
        pl = hp.evaluate(P, wj)
        ref = weighted_objective_reference(P, wj)
        assert pl.mean_jct == pytest.approx(ref, rel=1e-12)
        for i in range(P.n_jobs):
            b = link_bandwidth_reference(P, np.flatnonzero(wj == i))
            assert (pl.link_bandwidth[i] == b) or pl.sizes[i] == 1


@pytest.mark.parametrize("seed", range(30))
def test_jct_alone_is_each_jobs_best_alone(seed):
    P = tiny_topology(seed, n_workers=int(np.random.default_rng(seed).integers(3, 7)), speeds=seed % 2 == 0)
    K = P.n_workers
    for i in range(P.n_jobs):
        best = math.inf
        for mask in range(1, 2 ** K):
            ks = [k for k in range(K) if mask >> k & 1]
            wj = np.full(K, -1)
            wj[ks] = 0
            sub = hp.Problem(P.throughput[[i]], P.type_counts, P.batch[[i]], P.iterations[[i]], P.grad_bytes[[i]],
                             P.bandwidth, P.worker_speed, min_workers=P.min_workers[[i]],
                             max_workers=P.max_workers[[i]], available=P.available, **P.topology.args())
            if hp.is_feasible(sub, wj):
                best = min(best, hp.evaluate(sub, wj).mean_jct)
        assert P.jct_alone[i] == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_brute_force_equals_the_reference(seed):
    kw = dict(speeds=seed % 2 == 1, bounds=seed % 3 == 1, restarts=seed % 4 == 2, weights=seed % 5 == 3)
    P = tiny_topology(seed, n_workers=int(np.random.default_rng(seed).integers(3, 7)), **kw)
    res = solve_exact(P, method="brute")
    ref, _ = brute_force_reference(P, objective=weighted_objective_reference)
    assert res.status == "optimal"
    assert res.placement.mean_jct == pytest.approx(ref, rel=1e-12)


def test_type_dps_refuse_a_topology():
    P = _problem()
    for method in ("dp", "pruned-dp"):
        with pytest.raises(InvalidOptionError, match="network topology"):
            solve_exact(P, method=method)
    with pytest.raises(InvalidProblemError, match="topology"):
        P.job_jct(0, 10.0, 2)


def test_round_trips():
    P = _problem(node_bandwidth=[20e9, math.inf, 300e9, 40e9])
    wj = [0, 0, 1, 1, 1, 2, 2, -1]
    want = hp.evaluate(P, wj).mean_jct
    for Q in (hp.Problem.from_dict(P.to_dict()), pickle.loads(pickle.dumps(P)), P.with_worker_speed(None)):
        assert Q.topology is not None
        assert hp.evaluate(Q, wj).mean_jct == want
        assert not Q.topology.node.flags.writeable
    sub = P._restrict([0, 1], [0, 1, 2, 3])
    assert sub.topology.n_nodes == 2 and sub.topology.n_racks == 1
    assert "nodes=4, racks=2" in repr(P)


@pytest.mark.parametrize("kw, match", [
    (dict(node=[0, 0, 1, 1, 2, 2, 3, -1]), "node must hold whole numbers >= 0"),
    (dict(node=[0, 0, 1, 1, 2, 2, 3, 1.5]), "node must hold whole numbers >= 0"),
    (dict(node=[0, 0, 1, 1]), r"node must have one node id per worker, shape \(8,\)"),
    (dict(node_bandwidth=None), "node_bandwidth is required"),
    (dict(node_bandwidth=float("nan")), "node_bandwidth must be > 0"),
    (dict(node_bandwidth=0.0), "node_bandwidth must be > 0"),
    (dict(node_bandwidth=[1e9, 2e9]), r"node_bandwidth must be one number of bytes/s or one per node \(shape \(4,\)"),
    (dict(rack_bandwidth=-1.0), "rack_bandwidth must be > 0"),
    (dict(rack=[0, 0, 1, 1, 1]), r"rack must have one rack id per node, shape \(4,\)"),
    (dict(rack=[0, 0, 1, 1], rack_bandwidth=None), "rack_bandwidth is required"),
    (dict(rack=None), "rack_bandwidth was given without rack"),
    (dict(node=None), "node_bandwidth was given without node"),
])
def test_bad_topology_input_names_the_parameter(kw, match):
    with pytest.raises(InvalidProblemError, match=match):
        _problem(**kw)


def test_a_string_node_is_a_type_error():
    with pytest.raises(hp.errors.InvalidProblemTypeError, match="node must be whole non-negative node ids"):
        _problem(node="abc")
