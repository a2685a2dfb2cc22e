"""A simulated cluster given node by node, and its network (docs/online.md §3.2).

``simulate(..., cluster={"v100": [4] * 9, "p100": [4] * 9}, network=Network(1.25e9))``:
GPUs per node of each type, and the bandwidths between and inside nodes; optionally racks
(``Network(inter, rack=..., rack_bandwidth=...)``: the rack of every node and the bandwidth between
the nodes of a rack; ``inter`` is then the bandwidth between racks), as in ``Problem(node=, rack=)``
(docs/model.md §1.6).
"""

import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import is_real_scalar
from ..errors import InvalidOptionError

__all__ = ["Network", "Node", "Layout", "has_nodes", "parse_layout"]


@dataclass(frozen=True)
class Network:
    """Bandwidths of a cluster given as nodes (bytes/s).

    Attributes
    ----------
    inter : float
        Between two nodes (e.g. 1.25e9 = 10 Gbit/s), > 0 and finite.
        With racks, between two nodes of different racks.
    intra : float
        Inside a node (default ``math.inf``).  The progress model does not use
        it (Gavel's rates were measured inside one server and carry it); the
        ``"smp"`` policy hands it to its Problem as ``node_bandwidth``.
    rack : tuple of int, optional
        The rack (or any second level: block, spine group) of every node, in
        the order of the cluster's nodes (type by type, as
        :class:`Layout` numbers them); ids 0, 1, 2, ...  None (default): no racks.
    rack_bandwidth : float or tuple of float, optional
        Between two nodes of one rack (> 0; ``math.inf`` allowed): one number,
        or one per rack id.  Required with ``rack``; kept as one per rack.
    """

    inter: float
    intra: float = math.inf
    rack: "tuple | None" = None
    rack_bandwidth: "tuple | None" = None

    def link_bandwidth(self, nodes):
        """The bandwidth a job on the node ids ``nodes`` all-reduces over between nodes.

        None when they are one node (the measured rate holds it); the rack's
        ``rack_bandwidth`` when they share one rack; else ``inter``
        (docs/online.md §2.2).
        """
        nodes = set(nodes)
        if len(nodes) <= 1:
            return None
        if self.rack is not None:
            racks = {self.rack[v] for v in nodes}
            if len(racks) == 1:
                return self.rack_bandwidth[racks.pop()]
        return self.inter


@dataclass(frozen=True)
class Node:
    """One node as a policy sees it: its GPU type and its physical GPUs (indices of that type)."""

    gpu_type: str
    gpus: tuple


@dataclass(frozen=True)
class Layout:
    """The simulator's view of the nodes: ``nodes`` (global ids in order), ``node_of[type]`` (GPU -> node id)."""

    nodes: tuple
    node_of: dict
    network: Network


def has_nodes(cluster):
    """Whether ``cluster`` is given node by node (a TOML path, or a dict with a list of GPUs per node)."""
    if isinstance(cluster, os.PathLike) or (isinstance(cluster, str) and cluster.strip().endswith(".toml")):
        return True
    return isinstance(cluster, Mapping) and any(
        isinstance(v, Sequence) and not isinstance(v, (str, bytes)) for v in cluster.values())


def _bandwidth(value, name, allow_inf):
    if not is_real_scalar(value) or not float(value) > 0 or math.isnan(float(value)) or (
            not allow_inf and math.isinf(float(value))):
        raise InvalidOptionError(
            f"{name} must be a number of bytes/s > 0{'' if allow_inf else ' and finite'} (10 Gbit/s = 1.25e9); "
            f"got {value!r}. Fix: pass e.g. network=Network(inter=1.25e9)."
        )
    return float(value)


def _network(network):
    if network is None:
        raise InvalidOptionError(
            "network is required when the cluster is given as nodes: pass network=Network(inter=1.25e9) "
            "(bytes/s between nodes; intra=... optional), or a number (the inter-node bandwidth)."
        )
    rack = rack_bw = None
    if isinstance(network, Network):
        inter, intra, rack, rack_bw = network.inter, network.intra, network.rack, network.rack_bandwidth
    elif isinstance(network, Mapping):
        unknown = set(network) - {"inter", "intra", "rack", "rack_bandwidth"}
        if unknown or "inter" not in network:
            raise InvalidOptionError(
                f"network={dict(network)!r}: a dict needs 'inter' (bytes/s between nodes, or racks) and optionally "
                "'intra', 'rack' and 'rack_bandwidth'; e.g. {'inter': 1.25e9}."
            )
        inter, intra = network["inter"], network.get("intra", math.inf)
        rack, rack_bw = network.get("rack"), network.get("rack_bandwidth")
    else:
        inter, intra = network, math.inf
    return Network(_bandwidth(inter, "network inter-node bandwidth", False),
                   _bandwidth(intra, "network intra-node bandwidth", True), rack, rack_bw)


def _racks(net, n_nodes):
    """``net`` with its racks checked against the cluster's ``n_nodes`` nodes (the Problem's rules)."""
    from .._problem_iv import _ids, _link_bandwidth
    from ..errors import HetplaceError

    if net.rack is None:
        if net.rack_bandwidth is not None:
            raise InvalidOptionError(
                "network rack_bandwidth was given without rack: give rack (the rack of every node, "
                f"{n_nodes} ids) too, or leave rack_bandwidth out."
            )
        return net
    try:
        rack = _ids(net.rack, "network rack", n_nodes, "rack",
                    f"one rack id per node, {n_nodes} of them (nodes numbered type by type)")
        bw = _link_bandwidth(net.rack_bandwidth, "network rack_bandwidth", int(rack.max()) + 1 if n_nodes else 0,
                             "rack")
    except HetplaceError as exc:
        raise InvalidOptionError(f"{exc} Fix: e.g. network=Network(inter=1.25e9, rack=(0, 0, 1, 1), "
                                 "rack_bandwidth=5e9) for four nodes in two racks.") from None
    return Network(net.inter, net.intra, tuple(int(r) for r in rack), tuple(float(b) for b in bw))


def _from_toml(path, network):
    from ..io import read_cluster

    spec = read_cluster(path)
    if spec.topology is None:
        raise InvalidOptionError(
            f"cluster={str(path)!r} has no [[nodes]] tables; give the cluster node by node there, or pass "
            "a dict {gpu_type: n_gpus}."
        )
    if network is not None:
        raise InvalidOptionError(
            f"network={network!r} was given with the cluster file {str(path)!r}, which has its own bandwidths; "
            "drop network=."
        )
    topo = spec.topology
    node = topo["node"]
    sizes = np.bincount(node)
    per_type, start, order = {}, 0, []
    for g, c in zip(spec.type_names, spec.type_counts):
        ids = np.unique(node[start:start + c])
        per_type[g] = [int(sizes[k]) for k in ids]
        order.extend(int(k) for k in ids)
        start += c
    nbw = topo["node_bandwidth"]
    intra = float(nbw.min()) if nbw.size else math.inf
    rack = rack_bw = None
    if topo.get("rack") is not None:  # the file's top level is then between racks
        rack, rack_bw = tuple(int(topo["rack"][k]) for k in order), tuple(float(b) for b in topo["rack_bandwidth"])
    return per_type, Network(_bandwidth(spec.bandwidth, f"bandwidth of {str(path)!r}", False), intra, rack, rack_bw)


def parse_layout(cluster, network):
    """``(counts, layout)`` of a cluster given node by node; ``layout`` is a :class:`Layout`.

    ``cluster``: ``{gpu_type: [GPUs per node, ...]}`` or the path of a cluster
    TOML file with ``[[nodes]]`` (:func:`hetplace.io.read_cluster`; its top-level
    bandwidth is the inter-node one (between racks when its nodes name racks,
    whose bandwidths it keeps), the smallest node bandwidth the intra-node one).
    Nodes are numbered type by type in the dict's order; a node's GPUs are
    consecutive indices of its type.  ``network``'s racks, when given, are
    checked against the nodes.
    """
    if isinstance(cluster, (str, os.PathLike)):
        per_type, net = _from_toml(cluster, network)
    else:
        per_type, net = {}, _network(network)
        for g, sizes in cluster.items():
            if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
                raise InvalidOptionError(
                    f"cluster[{g!r}] = {sizes!r}: a cluster given as nodes needs a list of GPUs per node for every "
                    f"type, e.g. {{{g!r}: [4, 4, 4]}}; write {g!r}: [{sizes!r}] for one node."
                )
            for s in sizes:
                if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral) or s < 1:
                    raise InvalidOptionError(
                        f"cluster[{g!r}] = {list(sizes)!r}: every node needs a whole number >= 1 of GPUs; got {s!r}. "
                        "Fix: drop empty nodes, e.g. [4, 4, 4]."
                    )
            per_type[g] = [int(s) for s in sizes]
    counts = {str(g): sum(v) for g, v in per_type.items()}
    nodes, node_of = [], {}
    for g, sizes in per_type.items():
        of = np.empty(sum(sizes), dtype=np.int64)
        start = 0
        for s in sizes:
            of[start:start + s] = len(nodes)
            nodes.append(Node(str(g), tuple(range(start, start + s))))
            start += s
        node_of[str(g)] = of
    return counts, Layout(tuple(nodes), node_of, _racks(net, len(nodes)))
