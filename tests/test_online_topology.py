"""The online simulator on a cluster given node by node (docs/online.md §2.2, §3.2, §5.1.1)."""

import math

import numpy as np
import pytest

from hetplace.data import DEFAULT_GRAD_BYTES, load_gavel
from hetplace.errors import HetplaceError, InvalidOptionError
from hetplace.online import Job, gavel_trace, simulate
from hetplace.online.nodes import Network, Node, parse_layout
from hetplace.online.progress import ProgressModel, spread_rate
from hetplace.online.simulator import _map_gpus, _Run

NODES = {"v100": [4, 4], "p100": [4, 4], "k80": [4, 4]}
MODEL = "ResNet-50 (batch size 64)"


class Fixed:
    """Gives every active job the same allocation (a dict, or a callable of the state)."""

    name = "fixed"

    def __init__(self, alloc):
        self.alloc = alloc
        self.states = []

    def decide(self, state):
        self.states.append(state)
        alloc = self.alloc(state) if callable(self.alloc) else self.alloc
        return {s.job.job_id: alloc for s in state.jobs}


@pytest.mark.parametrize("cluster, network, words", [
    ({"v100": [4, 4]}, None, ["network is required", "Network(inter="]),
    ({"v100": [4, 4]}, math.nan, ["inter-node bandwidth", "nan"]),
    ({"v100": [4, 4]}, 0.0, ["inter-node bandwidth", "> 0"]),
    ({"v100": [4, 4]}, -1.0, ["inter-node bandwidth"]),
    ({"v100": [4, 4]}, math.inf, ["finite"]),
    ({"v100": [4, 4]}, {"inter": 1e9, "intra": 0.0}, ["intra-node bandwidth"]),
    ({"v100": [4, 4]}, {"intra": 1e9}, ["'inter'"]),
    ({"v100": [4, 0]}, 1e9, ["cluster['v100']", ">= 1", "0"]),
    ({"v100": [4, 2.5]}, 1e9, ["cluster['v100']", "2.5"]),
    ({"v100": [4, True]}, 1e9, ["cluster['v100']", "True"]),
    ({"v100": [4, 4], "k80": 8}, 1e9, ["cluster['k80'] = 8", "'k80': [8]"]),
    ({"v100": 8}, 1e9, ["network=1000000000.0 was given", "drop network="]),
    ({"v200": [4]}, 1e9, ["v200"]),
])
def test_bad_nodes_or_network_name_the_parameter_and_the_fix(cluster, network, words):
    trace = [Job(0, MODEL, 0.0, 100.0, 1, math.nan)]
    with pytest.raises(InvalidOptionError) as e:
        simulate(trace, cluster, "fifo", network=network, progress=False)
    assert isinstance(e.value, HetplaceError)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_toml_cluster_with_nodes(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\nbandwidth = "10Gbit/s"\n\n[[types]]\nname = "v100"\ncount = 8\n\n'
                    '[[nodes]]\ntype = "v100"\ncount = 2\ngpus = 4\nbandwidth = "100Gbit/s"\n')
    counts, layout = parse_layout(str(path), None)
    assert counts == {"v100": 8}
    assert layout.nodes == (Node("v100", (0, 1, 2, 3)), Node("v100", (4, 5, 6, 7)))
    assert layout.network == Network(1.25e9, 1.25e10)
    r = simulate([Job(0, MODEL, 0.0, 100.0, 1, math.nan)], str(path), "fifo", progress=False)
    assert r.n_finished == 1
    with pytest.raises(InvalidOptionError, match="drop network="):
        simulate([Job(0, MODEL, 0.0, 100.0, 1, math.nan)], str(path), "fifo", network=1e9, progress=False)
    flat = tmp_path / "flat.toml"
    flat.write_text('[[types]]\nname = "v100"\ncount = 8\n')
    with pytest.raises(InvalidOptionError, match=r"no \[\[nodes\]\]"):
        simulate([Job(0, MODEL, 0.0, 100.0, 1, math.nan)], str(flat), "fifo", progress=False)


def _runs(sizes):
    return {j: _Run(Job(j, "A3C", 0.0, 10.0, n, 1.0)) for j, n in enumerate(sizes)}


def test_consolidation_best_fit_then_fewest_nodes():
    _, layout = parse_layout({"v100": [4, 4, 2]}, 1e9)
    owner = {"v100": np.full(10, -1)}
    runs = _runs([2, 4, 4])
    # largest first: job 1 (4) on node 0, job 2 (4) on node 1, job 0 (2) best fit on node 2
    _map_gpus({0: {"v100": 2}, 1: {"v100": 4}, 2: {"v100": 4}}, runs, owner, 0.0, {"A3C": 0.0}, layout=layout)
    assert runs[1].gpus == {"v100": (0, 1, 2, 3)}
    assert runs[2].gpus == {"v100": (4, 5, 6, 7)}
    assert runs[0].gpus == {"v100": (8, 9)}
    # job 1 leaves; job 0 grows to 6: the roomiest node (node 0: 4 free) then best fit for the last 2 (its own)
    for r in runs.values():
        r.time_run = 360.0
    _map_gpus({0: {"v100": 6}, 2: {"v100": 4}}, runs, owner, 360.0, {"A3C": 0.0}, layout=layout)
    assert runs[2].gpus == {"v100": (4, 5, 6, 7)} and runs[2].restarts == 0  # unchanged counts keep their GPUs
    assert runs[0].gpus == {"v100": (0, 1, 2, 3, 8, 9)} and runs[0].restarts == 1
    assert runs[1].gpus == {} and (owner["v100"] >= 0).sum() == 10


def test_named_gpus_are_validated_and_taken():
    trace = [Job(0, MODEL, 0.0, 1e4, 1, math.nan), Job(1, MODEL, 0.0, 1e4, 1, math.nan)]
    pol = Fixed(lambda s: None)
    pol.decide = lambda state: {0: {"v100": (5, 6)}, 1: {"v100": 2}}
    r = simulate(trace, {"v100": [4, 4]}, pol, network=1e9, progress=False)
    assert r.n_finished == 2
    for bad, words in [({0: {"v100": (8,)}}, ["GPU 8", "0..7"]), ({0: {"v100": (1, 1)}}, ["GPU 1", "twice"]),
                       ({0: {"v100": (1,)}, 1: {"v100": (1,)}}, ["GPU 1", "job 0"]),
                       ({0: {"v100": (-1,)}}, ["GPU -1"])]:
        pol.decide = lambda state, bad=bad: bad
        with pytest.raises(InvalidOptionError) as e:
            simulate(trace, {"v100": [4, 4]}, pol, network=1e9, progress=False)
        for w in words:
            assert w in str(e.value), (w, str(e.value))
    # a named GPU that a job keeping its allocation holds
    calls = []

    def decide(state):
        calls.append(1)
        return {0: {"v100": 1}, 1: {"v100": 1}} if len(calls) == 1 else {0: {"v100": 1}, 1: {"v100": (0,)}}

    pol.decide = decide
    with pytest.raises(InvalidOptionError, match="keeps it"):
        simulate(trace, {"v100": [4, 4]}, pol, network=1e9, progress=False)


def test_progress_slowdown_matches_a_hand_computation():
    table = load_gavel()
    b = 1.25e9
    steps = 2e4
    job = [Job(0, MODEL, 0.0, steps, 8, math.nan)]
    spread = simulate(job, {"v100": [4, 4]}, Fixed({"v100": 8}), network=b, round_s=1e6, table=table,
                      progress=False)
    one = simulate(job, {"v100": [8]}, Fixed({"v100": 8}), network=b, round_s=1e6, table=table, progress=False)
    t8 = table.steps_per_second(MODEL, "v100", 8)
    D = DEFAULT_GRAD_BYTES["ResNet-50"]
    hand = steps * (1.0 / t8 + 2 * 7 / 8 * D / b)
    assert spread.jobs["finish"][0] == pytest.approx(hand, rel=1e-12)
    assert one.jobs["finish"][0] == pytest.approx(steps / t8, rel=1e-12)  # inside one node: the table's rate
    assert spread_rate(t8, 8, D, b) == pytest.approx(steps / hand, rel=1e-12)
    assert spread_rate(0.0, 8, D, b) == 0.0
    assert ProgressModel(table).steps_per_second(MODEL, {"v100": 8}) == t8


def test_one_node_per_type_is_the_flat_cluster_for_single_type_jobs():
    trace = gavel_trace(20, rate=30.0, seed=0, multi_gpu=True)
    flat = simulate(trace, {"v100": 8, "p100": 8, "k80": 8}, "las-aware", progress=False)
    nodes = simulate(trace, {"v100": [8], "p100": [8], "k80": [8]}, "las-aware", network=1e9, progress=False)
    assert np.array_equal(flat.jobs["finish"], nodes.jobs["finish"])


def test_state_exposes_nodes_network_and_free_gpus():
    pol = Fixed({"v100": 2})
    trace = [Job(0, MODEL, 0.0, 1e5, 2, math.nan)]
    simulate(trace, {"v100": [2, 4], "k80": [4]}, pol, network={"inter": 1e9, "intra": 1e11}, progress=False,
             round_s=60)
    first, second = pol.states[:2]
    assert first.cluster == {"v100": 6, "k80": 4}
    assert first.nodes == (Node("v100", (0, 1)), Node("v100", (2, 3, 4, 5)), Node("k80", (0, 1, 2, 3)))
    assert first.network == Network(1e9, 1e11)
    assert first.free == {"v100": tuple(range(6)), "k80": (0, 1, 2, 3)}
    assert second.jobs[0].gpus == {"v100": (0, 1)}  # best fit: the 2-GPU node
    assert second.free == {"v100": (2, 3, 4, 5), "k80": (0, 1, 2, 3)}
    flat = Fixed({"v100": 2})
    simulate(trace, {"v100": 6}, flat, progress=False, round_s=60)
    assert flat.states[0].nodes == () and flat.states[0].network is None and flat.states[0].free == {}


@pytest.mark.parametrize("policy", ["smp", "las-aware", "gavel-mst", "sia"])
def test_short_simulation_with_nodes(policy):
    trace = gavel_trace(10, rate=20.0, seed=1, multi_gpu=True)
    r = simulate(trace, NODES, policy, network=1.25e9, progress=False)
    assert r.status == "complete" and r.n_finished == 10
    assert np.isfinite(r.avg_jct)


def test_smp_with_nodes_prices_the_network_and_may_name_gpus():
    from hetplace.online import make_policy

    trace = gavel_trace(10, rate=20.0, seed=1, multi_gpu=True)
    counts = simulate(trace, NODES, "smp", network=1.25e9, progress=False)
    named = simulate(trace, NODES, make_policy("smp", physical=True), network=1.25e9, progress=False)
    assert counts.n_finished == named.n_finished == 10
    with pytest.raises(InvalidOptionError, match="physical"):
        make_policy("smp", physical="yes")


def test_topology_greedy_when_seeding_fills_every_worker():
    """Regression: keep-greedy's topology greedy raised IndexError when the seeded jobs held every worker
    (found by "smp" on 4-GPU servers: a restricted sub-problem whose jobs need exactly its free GPUs)."""
    from hetplace.baselines import greedy_placement
    from hetplace.problem import Problem

    rho = np.array([[4647.3, 2547.3, 800.7], [899.7, 664.5, 0.0], [4744.7, 2654.9, 799.7]])
    p = Problem(rho, [5, 0, 3], [160.0, 512.0, 128.0], [1e4, 2e4, 3e4], grad_bytes=[1e8, 8e7, 1e8],
                bandwidth=1.25e9, node=[0, 1, 1, 1, 1, 2, 2, 2], node_bandwidth=np.inf,
                min_workers=[2, 4, 2], max_workers=[2, 4, 2])
    wj = greedy_placement(p)
    assert np.bincount(wj[wj >= 0], minlength=3).tolist() == [2, 4, 2]


# ------------------------------------------------------------------ racks (docs/online.md §2.2, §3.2)
RACKED = {"v100": [4, 4, 4, 4]}


@pytest.mark.parametrize("network, words", [
    ({"inter": 1e9, "rack": [0, 0, 1]}, ["network rack", "4", "shape (3,)"]),
    ({"inter": 1e9, "rack": [0, 0, 1, -1], "rack_bandwidth": 1e10}, ["network rack", "-1", "Network(inter="]),
    ({"inter": 1e9, "rack": [0, 0, 1, 1.5], "rack_bandwidth": 1e10}, ["network rack", "1.5"]),
    ({"inter": 1e9, "rack": [0, 0, 1, 1]}, ["network rack_bandwidth is required"]),
    ({"inter": 1e9, "rack_bandwidth": 1e10}, ["rack_bandwidth was given without rack"]),
    ({"inter": 1e9, "rack": [0, 0, 1, 1], "rack_bandwidth": math.nan}, ["network rack_bandwidth", "nan"]),
    ({"inter": 1e9, "rack": [0, 0, 1, 1], "rack_bandwidth": 0.0}, ["network rack_bandwidth", "> 0"]),
    ({"inter": 1e9, "rack": [0, 0, 1, 1], "rack_bandwidth": [1e10, 1e10, 1e10]}, ["one per rack", "(2,)"]),
    ({"inter": 1e9, "racks": [0, 0, 1, 1]}, ["'rack'", "'rack_bandwidth'"]),
])
def test_bad_racks_name_the_parameter_and_the_fix(network, words):
    trace = [Job(0, MODEL, 0.0, 100.0, 1, math.nan)]
    with pytest.raises(InvalidOptionError) as e:
        simulate(trace, RACKED, "fifo", network=network, progress=False)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    if "racks" not in network:  # the same through the dataclass
        with pytest.raises(InvalidOptionError):
            simulate(trace, RACKED, "fifo", network=Network(**network), progress=False)


def test_racks_are_normalised_and_name_the_bandwidth_of_a_span():
    _, layout = parse_layout(RACKED, Network(1e9, rack=[0, 0, 1, 1], rack_bandwidth=[4e9, 8e9]))
    net = layout.network
    assert net.rack == (0, 0, 1, 1) and net.rack_bandwidth == (4e9, 8e9)
    assert net.link_bandwidth({2}) is None
    assert net.link_bandwidth({0, 1}) == 4e9 and net.link_bandwidth({2, 3}) == 8e9
    assert net.link_bandwidth({1, 2}) == 1e9
    _, scalar = parse_layout(RACKED, {"inter": 1e9, "rack": [0, 0, 1, 1], "rack_bandwidth": 5e9})
    assert scalar.network.rack_bandwidth == (5e9, 5e9)


def test_toml_cluster_with_racks(tmp_path):
    path = tmp_path / "r.toml"
    # the k80 nodes come first in the file but are numbered after the v100 ones (type by type, [[types]] order)
    path.write_text('[cluster]\nbandwidth = "10Gbit/s"\nrack_bandwidth = "40Gbit/s"\n\n'
                    '[[types]]\nname = "v100"\n\n[[types]]\nname = "k80"\n\n'
                    '[[nodes]]\ntype = "k80"\ncount = 1\ngpus = 4\nbandwidth = "100Gbit/s"\nrack = "b"\n\n'
                    '[[nodes]]\ntype = "v100"\ncount = 2\ngpus = 4\nbandwidth = "100Gbit/s"\nrack = "a"\n\n'
                    '[[nodes]]\ntype = "v100"\ncount = 1\ngpus = 2\nbandwidth = "100Gbit/s"\nrack = "b"\n\n'
                    '[[racks]]\nname = "b"\nbandwidth = "20Gbit/s"\n')
    from hetplace.io import read_cluster

    spec = read_cluster(str(path))
    counts, layout = parse_layout(str(path), None)
    assert counts == {"v100": 10, "k80": 4}
    assert [len(n.gpus) for n in layout.nodes] == [4, 4, 2, 4]
    by_name = {1.25e9 * 4: "a", 1.25e9 * 2: "b"}
    names = [by_name[layout.network.rack_bandwidth[r]] for r in layout.network.rack]
    assert names == ["a", "a", "b", "b"]
    assert layout.network.inter == 1.25e9 and layout.network.intra == 1.25e10
    # the layout's nodes and racks are the file's, as read_cluster numbers them
    topo = spec.topology
    assert [int(b) for b in np.bincount(topo["node"])] == [len(n.gpus) for n in layout.nodes]
    assert [float(topo["rack_bandwidth"][topo["rack"][v]]) for v in range(4)] == \
        [layout.network.rack_bandwidth[r] for r in layout.network.rack]


def test_progress_inside_a_rack_and_across_racks_match_a_hand_computation():
    table = load_gavel()
    steps, inter, rb = 2e4, 1.25e9, 5e9
    net = Network(inter, rack=(0, 0, 1, 1), rack_bandwidth=rb)
    t8 = table.steps_per_second(MODEL, "v100", 8)
    D = DEFAULT_GRAD_BYTES["ResNet-50"]
    job = [Job(0, MODEL, 0.0, steps, 8, math.nan)]
    inside = simulate(job, RACKED, Fixed({"v100": (0, 1, 2, 3, 4, 5, 6, 7)}), network=net, round_s=1e6,
                      table=table, progress=False)
    across = simulate(job, RACKED, Fixed({"v100": (4, 5, 6, 7, 8, 9, 10, 11)}), network=net, round_s=1e6,
                      table=table, progress=False)
    assert inside.jobs["finish"][0] == pytest.approx(steps * (1 / t8 + 2 * 7 / 8 * D / rb), rel=1e-12)
    assert across.jobs["finish"][0] == pytest.approx(steps * (1 / t8 + 2 * 7 / 8 * D / inter), rel=1e-12)


def test_consolidation_keeps_a_multi_node_job_in_one_rack():
    # racks: nodes 0 and 3 in rack 0, nodes 1 and 2 in rack 1; node 0 has 2 free GPUs: rack 0 has 6 free, rack 1 8
    _, layout = parse_layout(RACKED, Network(1e9, rack=(0, 1, 1, 0), rack_bandwidth=4e9))
    owner = {"v100": np.full(16, -1)}
    owner["v100"][[0, 1]] = 99  # node 0 holds 2 free
    runs = _runs([6])
    _map_gpus({0: {"v100": 6}}, runs, owner, 0.0, {"A3C": 0.0}, layout=layout)
    # rack 0 (nodes 0, 3) has 6 free: the best-fitting rack; there the roomiest node first (node 3), then node 0
    assert runs[0].gpus == {"v100": (2, 3, 12, 13, 14, 15)}
    # without racks the same state takes the roomiest nodes of the cluster (nodes 1 and 2), wherever they are
    _, flat = parse_layout(RACKED, 1e9)
    owner = {"v100": np.full(16, -1)}
    owner["v100"][[0, 1]] = 99
    runs = _runs([6])
    _map_gpus({0: {"v100": 6}}, runs, owner, 0.0, {"A3C": 0.0}, layout=flat)
    assert runs[0].gpus == {"v100": (2, 3, 4, 5, 6, 7)}


def test_racks_at_the_inter_node_bandwidth_change_no_result():
    trace = gavel_trace(12, rate=20.0, seed=2, multi_gpu=True)
    rack = tuple([0, 0, 1, 1] * 3)
    cl = {"v100": [4, 4, 4, 4], "p100": [4, 4, 4, 4], "k80": [4, 4, 4, 4]}
    plain = simulate(trace, cl, "las-aware", network=1.25e9, progress=False)
    same = simulate(trace, cl, "las-aware", network=Network(1.25e9, rack=rack, rack_bandwidth=1.25e9), progress=False)
    assert np.array_equal(plain.jobs["finish"], same.jobs["finish"])


@pytest.mark.parametrize("policy", ["smp", "las-aware"])
def test_short_simulation_with_racks(policy):
    trace = gavel_trace(10, rate=20.0, seed=1, multi_gpu=True)
    seen = []

    class Spy:
        name = "spy"

        def __init__(self):
            from hetplace.online import make_policy

            self.inner = make_policy(policy)

        def decide(self, state):
            seen.append(state.network)
            return self.inner.decide(state)

    net = Network(1.25e9, rack=(0, 1) * 3, rack_bandwidth=(5e9, 2.5e9))
    r = simulate(trace, NODES, Spy(), network=net, progress=False)
    assert r.status == "complete" and r.n_finished == 10 and np.isfinite(r.avg_jct)
    assert seen[0].rack == (0, 1) * 3 and seen[0].rack_bandwidth == (5e9, 2.5e9)
