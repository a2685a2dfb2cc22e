"""A simulated cluster given node by node, and its network (docs/online.md §3.2).

``simulate(..., cluster={"v100": [4] * 9, "p100": [4] * 9}, network=Network(1.25e9))``:
GPUs per node of each type, and the bandwidths between and inside nodes.  Racks are not
modelled here (every pair of nodes is one inter-node hop).
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
    intra : float
        Inside a node (default ``math.inf``).  The progress model does not use
        it (Gavel's rates were measured inside one server and carry it); the
        ``"smp"`` policy hands it to its Problem as ``node_bandwidth``.
    """

    inter: float
    intra: float = math.inf


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
    if isinstance(network, Network):
        inter, intra = network.inter, network.intra
    elif isinstance(network, Mapping):
        unknown = set(network) - {"inter", "intra"}
        if unknown or "inter" not in network:
            raise InvalidOptionError(
                f"network={dict(network)!r}: a dict needs 'inter' (bytes/s between nodes) and optionally 'intra'; "
                "e.g. {'inter': 1.25e9}."
            )
        inter, intra = network["inter"], network.get("intra", math.inf)
    else:
        inter, intra = network, math.inf
    return Network(_bandwidth(inter, "network inter-node bandwidth", False),
                   _bandwidth(intra, "network intra-node bandwidth", True))


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
    node = spec.topology["node"]
    sizes = np.bincount(node)
    per_type, start = {}, 0
    for g, c in zip(spec.type_names, spec.type_counts):
        ids = np.unique(node[start:start + c])
        per_type[g] = [int(sizes[k]) for k in ids]
        start += c
    nbw = spec.topology["node_bandwidth"]
    intra = float(nbw.min()) if nbw.size else math.inf
    return per_type, Network(_bandwidth(spec.bandwidth, f"bandwidth of {str(path)!r}", False), intra)


def parse_layout(cluster, network):
    """``(counts, layout)`` of a cluster given node by node; ``layout`` is a :class:`Layout`.

    ``cluster``: ``{gpu_type: [GPUs per node, ...]}`` or the path of a cluster
    TOML file with ``[[nodes]]`` (:func:`hetplace.io.read_cluster`; its top-level
    bandwidth is the inter-node one, the smallest node bandwidth the intra-node one).
    Nodes are numbered type by type in the dict's order; a node's GPUs are
    consecutive indices of its type.
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
    return counts, Layout(tuple(nodes), node_of, net)
