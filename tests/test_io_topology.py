"""Cluster files given node by node: ``[[nodes]]`` and ``[[racks]]`` in the cluster TOML (docs/bench.md)."""
import io
import json
from pathlib import Path

import numpy as np
import pytest

import hetplace as hp
from hetplace.cli import main
from hetplace.data import example_path
from hetplace.errors import InvalidOptionError
from hetplace.io import InputFileError, load_problem, read_cluster, write_cluster

from instances import tiny_topology

ROOT = Path(__file__).resolve().parents[1]
NODES = example_path("cluster_nodes.toml")
JOBS = example_path("jobs.csv")


def test_the_example_builds_the_topology():
    spec = read_cluster(NODES)
    assert spec.type_names == ["v100", "p100", "k80"] and spec.type_counts == [16, 8, 8]
    assert spec.bandwidth == 25e9 / 8
    p = load_problem(NODES, JOBS)
    t = p.topology
    np.testing.assert_array_equal(t.node, np.repeat(np.arange(6), [8, 8, 4, 4, 4, 4]))
    np.testing.assert_array_equal(t.node_bandwidth, [300e9, 300e9, 32e9, 32e9, 16e9, 16e9])
    np.testing.assert_array_equal(t.rack, [0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(t.rack_bandwidth, [100e9 / 8, 50e9 / 8])
    assert t.bandwidth == p.bandwidth == 25e9 / 8


def test_nodes_are_sorted_by_type_and_types_may_be_given():
    text = """
[cluster]
bandwidth = 1e9

[[types]]
name = "a"
speeds = [1.0, 1.0, 0.5, 0.5, 1.0, 1.0]

[[types]]
name = "b"
count = 2

[[nodes]]
type = "b"
gpus = 2
bandwidth = 3e10

[[nodes]]
count = 2
type = "a"
gpus = 2
bandwidth = "20GB/s"

[[nodes]]
type = "a"
gpus = 2
bandwidth = 1e10
"""
    spec = _spec(text)
    assert spec.type_names == ["a", "b"] and spec.type_counts == [6, 2]
    np.testing.assert_array_equal(spec.topology["node"], [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(spec.topology["node_bandwidth"], [2e10, 2e10, 1e10, 3e10])
    assert "rack" not in spec.topology
    np.testing.assert_array_equal(spec.worker_speed, [1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0])


def _spec(text):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "cluster.toml"
        f.write_text(text)
        return read_cluster(f)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kw", [{}, {"speeds": True}, {"racks": True}, {"racks": False}], ids=str)
def test_write_read_round_trips(tmp_path, seed, kw):
    p = tiny_topology(seed, **kw)
    f = tmp_path / "c.toml"
    write_cluster(f, p)
    spec = read_cluster(f)
    q = hp.Problem(p.throughput, spec.type_counts, p.batch, p.iterations, p.grad_bytes, spec.bandwidth,
                   spec.worker_speed, p.job_names, spec.type_names, **spec.topology)
    # tiny_topology numbers its nodes type by type and keeps each node's workers together: the same problem
    assert q.to_dict() == p.to_dict()


def test_round_trip_renumbers_nodes_out_of_worker_order(tmp_path):
    p = hp.Problem([[5.0, 2.0]], [4, 2], [64], [100.0], grad_bytes=[1e9], bandwidth=1e9,
                   worker_speed=[1.0, 0.5, 1.0, 0.5, 1.0, 1.0], node=[3, 1, 3, 1, 0, 0],
                   node_bandwidth=[1e10, 2e10, 5e10, 4e10])  # node 2 holds no worker
    f = tmp_path / "c.toml"
    write_cluster(f, p)
    spec = read_cluster(f)
    q = hp.Problem([[5.0, 2.0]], spec.type_counts, [64], [100.0], grad_bytes=[1e9], bandwidth=spec.bandwidth,
                   worker_speed=spec.worker_speed, type_names=spec.type_names, **spec.topology)
    np.testing.assert_array_equal(q.topology.node, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(q.topology.node_bandwidth, [4e10, 2e10, 1e10])
    # worker t of q is worker order[t] of p: every placement costs the same
    order = [0, 2, 1, 3, 4, 5]
    rng = np.random.default_rng(0)
    for _ in range(20):
        wj = rng.integers(0, 1, 6) - rng.integers(0, 2, 6)
        wj[0] = 0
        wq = np.asarray(wj)[order]
        assert hp.evaluate(p, wj).mean_jct == hp.evaluate(q, wq).mean_jct


def test_a_node_of_two_types_is_refused(tmp_path):
    p = hp.Problem([[5.0, 2.0]], [2, 2], [64], [100.0], node=[0, 0, 0, 1], node_bandwidth=1e10, bandwidth=1e9)
    with pytest.raises(InvalidOptionError, match=r"node 0 holds GPUs of several types.*to_dict"):
        write_cluster(tmp_path / "c.toml", p)


HEAD = '[cluster]\nbandwidth = "10Gbit/s"\n'
NODE = '[[nodes]]\ncount = 2\ntype = "v100"\ngpus = 4\nbandwidth = "300GB/s"\n'

BAD = {
    "count_mismatch": (HEAD + '[[types]]\nname = "v100"\ncount = 6\n' + NODE,
                       ["[[types]] #1 (v100), key 'count'", "count = 6 but the [[nodes]] of type 'v100' hold 8 GPUs"]),
    "unknown_type": (HEAD + '[[types]]\nname = "k80"\ncount = 0\n' + NODE,
                     ["[[nodes]] #1, key 'type'", "'v100' is not a GPU type of the [[types]] tables (k80)"]),
    "type_without_nodes": (HEAD + '[[types]]\nname = "v100"\n[[types]]\nname = "k80"\ncount = 4\n' + NODE,
                           ["[[types]] #2 (k80), key 'count'", "count = 4 but the [[nodes]] of type 'k80' hold 0"]),
    "no_node_bandwidth": (HEAD + '[[nodes]]\ntype = "v100"\ngpus = 4\n',
                          ["[[nodes]] #1, key 'bandwidth'", "inside these nodes is missing", "300GB/s"]),
    "bad_node_bandwidth": (HEAD + '[[nodes]]\ntype = "v100"\ngpus = 4\nbandwidth = -1\n',
                           ["[[nodes]] #1, key 'bandwidth'", "positive number of bytes/s"]),
    "no_cluster_bandwidth": (NODE, ["cluster.bandwidth", "needs the bandwidth between its nodes"]),
    "gpus_zero": (HEAD + '[[nodes]]\ntype = "v100"\ngpus = 0\nbandwidth = 1e10\n',
                  ["[[nodes]] #1, key 'gpus'", "positive integer; got 0"]),
    "count_string": (HEAD + '[[nodes]]\ncount = "2"\ntype = "v100"\ngpus = 4\nbandwidth = 1e10\n',
                     ["[[nodes]] #1, key 'count'", "got '2'"]),
    "unknown_node_key": (HEAD + NODE + 'gpu = 4\n', ["[[nodes]] #1, key 'gpu'", "use only count, type, gpus"]),
    "some_racks": (HEAD + 'rack_bandwidth = 1e10\n' + NODE + 'rack = "a"\n' + NODE,
                   ["[[nodes]] #2, key 'rack'", "some [[nodes]] name a rack and others do not"]),
    "rack_no_bandwidth": (HEAD + NODE + 'rack = "a"\n', ["racks", "rack 'a' has no bandwidth", "rack_bandwidth"]),
    "racks_unknown": (HEAD + NODE + 'rack = "a"\n[[racks]]\nname = "b"\nbandwidth = 1e10\n',
                      ["[[racks]] #1, key 'name'", "rack 'b' holds no node"]),
    "racks_twice": (HEAD + NODE + 'rack = "a"\n[[racks]]\nname = "a"\nbandwidth = 1e10\n'
                    '[[racks]]\nname = "a"\nbandwidth = 1e10\n', ["[[racks]] #2, key 'name'", "given twice"]),
    "racks_without_rack": (HEAD + NODE + '[[racks]]\nname = "a"\nbandwidth = 1e10\n',
                           ["racks", "no [[nodes]] table names a rack"]),
    "racks_without_nodes": (HEAD + '[[types]]\nname = "a"\ncount = 1\n[[racks]]\nname = "a"\nbandwidth = 1e10\n',
                            ["racks", "[[racks]] is given without [[nodes]]"]),
    "rack_bandwidth_without_nodes": (HEAD + 'rack_bandwidth = 1e10\n[[types]]\nname = "a"\ncount = 1\n',
                                     ["cluster.rack_bandwidth", "rack_bandwidth is given without [[nodes]]"]),
    "rack_bool": (HEAD + NODE + 'rack = true\n', ["[[nodes]] #1, key 'rack'", "a name or a number"]),
    "nodes_not_tables": ('nodes = [1, 2]\n' + HEAD, ["nodes", "'nodes' must be an array of tables"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_node_files_name_file_key_and_fix(tmp_path, case):
    text, fragments = BAD[case]
    f = tmp_path / "cluster.toml"
    f.write_text(text)
    with pytest.raises(InputFileError, match="Fix:") as info:
        read_cluster(f)
    msg = str(info.value)
    assert str(f) in msg
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def test_place_shows_nodes_spanned_and_link_bandwidth():
    out = io.StringIO()
    assert main(["place", "--cluster", str(NODES), "--jobs", str(JOBS), "--method", "greedy"], out=out) == 0
    text = out.getvalue()
    assert "nodes=6, racks=2" in text and "nodes racks link GB/s" in text
    assert "worker  type  node   rack" in text.replace("   node", "  node")  # the worker table names nodes
    out = io.StringIO()
    assert main(["place", "--cluster", str(NODES), "--jobs", str(JOBS), "--method", "greedy", "--json"], out=out) == 0
    jobs = json.loads(out.getvalue())["jobs"]
    assert all("nodes_spanned" in j and "racks_spanned" in j and "link_bandwidth" in j for j in jobs)


def test_the_example_copy_in_examples_matches_the_shipped_one():
    assert (ROOT / "examples" / "cluster_nodes.toml").read_bytes() == NODES.read_bytes()
