"""The ``topology`` instance family (hetplace.instances.topology_instance): nodes, racks, links."""
import math

import numpy as np
import pytest

import hetplace as hp
from hetplace import InvalidOptionError
from hetplace.bench import SweepSpec
from hetplace.data import gavel_path, load_gavel
from hetplace.instances import ALL_FAMILIES, FAMILIES, gavel_instance, make_instance, topology_instance

TABLE = load_gavel()


@pytest.mark.parametrize("K, S", [(8, 2), (16, 4), (64, 8), (300, 20)])
@pytest.mark.parametrize("seed", range(4))
def test_nodes_racks_and_links(seed, K, S):
    p = topology_instance(seed, K, S, TABLE)
    base = gavel_instance(seed, K, S, TABLE)
    # the jobs and type counts are gavel_instance's
    np.testing.assert_array_equal(p.throughput, base.throughput)
    np.testing.assert_array_equal(p.type_counts, base.type_counts)
    t = p.topology
    size = np.bincount(t.node, minlength=t.n_nodes)
    assert size.sum() == K and (size > 0).all()
    assert (np.diff(t.node) >= 0).all()  # nodes numbered in worker order, each node's GPUs together
    for v in range(t.n_nodes):
        types = np.unique(p.worker_type[t.node == v])
        assert types.size == 1  # one GPU type per node
        nvlink = p.type_names[types[0]] == "v100"
        assert size[v] <= (8 if nvlink else 4)
        assert t.node_bandwidth[v] == (300e9 if nvlink else 32e9)
    # full nodes, but for each type's last
    last = np.r_[np.flatnonzero(np.diff(p.worker_type[np.searchsorted(t.node, np.arange(t.n_nodes))])), t.n_nodes - 1]
    full = np.setdiff1d(np.arange(t.n_nodes), last)
    assert all(size[v] == (8 if p.type_names[p.worker_type[t.node == v][0]] == "v100" else 4) for v in full)
    racks = np.bincount(t.rack)
    assert (racks[:-1] >= 4).all() and (racks <= 8).all() and (np.diff(t.rack) >= 0).all()
    link = t.rack_bandwidth[0]
    assert (t.rack_bandwidth == link).all() and 10e9 / 8 <= link <= 200e9 / 8
    assert link / 4 <= p.bandwidth <= link


def test_seeded_and_dispatched():
    a = topology_instance(3, 64, 8, TABLE)
    assert a.to_dict() == topology_instance(3, 64, 8, TABLE).to_dict()
    assert a.to_dict() == make_instance("topology", 3, 64, 8, TABLE).to_dict()
    assert a.to_dict() != topology_instance(4, 64, 8, TABLE).to_dict()
    assert "topology" in ALL_FAMILIES and "topology" not in FAMILIES  # not in the default sweeps


def test_options():
    p = topology_instance(0, 64, 8, TABLE, racks=False, nvlink_types=("v100", "p100"), nvlink=150e9, pcie=16e9,
                          inter_node=(100e9, 100e9), p_exclude=0.0)
    t = p.topology
    assert t.rack is None and p.bandwidth == 100e9
    per = np.where(np.isin(np.array(p.type_names)[p.worker_type], ["v100", "p100"]), 150e9, 16e9)
    np.testing.assert_array_equal(t.node_bandwidth[t.node], per)
    q = topology_instance(0, 64, 8, TABLE, rack_nodes=(2, 2), oversubscription=(2.0, 2.0))
    assert (np.bincount(q.topology.rack)[:-1] == 2).all()
    assert q.bandwidth == q.topology.rack_bandwidth[0] / 2


@pytest.mark.parametrize("options, name", [
    ({"nvlink": 0}, "nvlink"), ({"pcie": math.inf}, "pcie"), ({"pcie": "fast"}, "pcie"),
    ({"inter_node": (0, 1e9)}, "inter_node"), ({"inter_node": (2e9, 1e9)}, "inter_node"),
    ({"inter_node": 1e9}, "inter_node"), ({"oversubscription": (0.5, 2)}, "oversubscription"),
    ({"rack_nodes": (0, 4)}, "rack_nodes"), ({"rack_nodes": (2.5, 4)}, "rack_nodes"),
    ({"nvlink_types": "v100"}, "nvlink_types"), ({"racks": 1}, "racks"), ({"p_exclude": 2.0}, "p_exclude"),
])
def test_bad_options_name_the_option(options, name):
    with pytest.raises(InvalidOptionError, match=name):
        topology_instance(0, 16, 4, TABLE, **options)


def test_methods_place_it():
    p = topology_instance(1, 32, 6, TABLE)
    for method in ("greedy", "smp", "equal"):
        assert hp.is_feasible(p, hp.place(p, method=method).worker_job)


def test_bench_accepts_the_family():
    spec = SweepSpec(families=("topology",), K=(8,), S=(2,), seeds=(0,), methods=("greedy",), gavel=str(gavel_path()))
    assert spec.instances() == [("topology", 8, 2, 0)]
    with pytest.raises(InvalidOptionError, match="Gavel"):
        SweepSpec(families=("topology",), K=(8,), S=(2,), seeds=(0,), methods=("greedy",))


def test_a_topology_sweep_runs_without_lying(tmp_path):
    # the exact reference and lower_bound do not price a topology yet: no gap rather than a wrong one
    from hetplace.bench import run_sweep

    spec = SweepSpec(families=("topology",), K=(8,), S=(2,), seeds=(0,), methods=("greedy", "smp"),
                     gavel=str(gavel_path()), exact_time_limit=20.0)
    res = run_sweep(spec)
    assert not res.errors
    for row in res.rows:
        assert math.isfinite(row["mean_jct"])
        assert not row["gap"] < 0  # a gap below 0 would be a wrong reference
