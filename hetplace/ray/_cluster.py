"""The cluster a :class:`~hetplace.ray.RayScheduler` sees: Ray's node table as a session's nodes.

Pure Python (no Ray import): it reads the dicts of ``ray.nodes()``, so the tests
drive it with plain dicts.  A node counts when it is alive, has a ``GPU``
resource and a GPU type: its label ``type_label``, else its
``accelerator_type:<name>`` resource.  The session's cluster is
``{type: [GPUs per node, ...]}``, nodes numbered type by type (the session's
numbering); :class:`ClusterView` keeps the map between those indices and
Ray's node ids, and rebuilds it when nodes join.
"""

import math

from ..errors import InvalidOptionError

__all__ = ["ClusterView", "node_type", "gpu_nodes"]

#: The label every Ray node carries with its own id (Ray >= 2.4x); a bundle selector on it pins a bundle.
NODE_ID_LABEL = "ray.io/node-id"
_ACCEL = "accelerator_type:"


def node_type(node, type_label):
    """The GPU type of one entry of ``ray.nodes()``, or None.

    Parameters
    ----------
    node : dict
        One entry of ``ray.nodes()`` (``Labels``, ``Resources``).
    type_label : str
        The label naming the GPU type.

    Returns
    -------
    str or None
        The label's value, else the name of the node's single
        ``accelerator_type:<name>`` resource, else None.
    """
    labels = node.get("Labels") or {}
    value = labels.get(type_label)
    if isinstance(value, str) and value:
        return value
    accel = sorted(k[len(_ACCEL):] for k in (node.get("Resources") or {}) if k.startswith(_ACCEL))
    return accel[0] if len(accel) == 1 else None


def gpu_nodes(nodes, type_label):
    """``[(node_id, type, gpus)]`` of the alive nodes with GPUs and a type, in Ray's order.

    Nodes with GPUs but no type are left out (they are logged by the scheduler);
    a fractional GPU resource counts its whole GPUs.
    """
    out = []
    for n in nodes:
        if not n.get("Alive", False):
            continue
        gpus = (n.get("Resources") or {}).get("GPU", 0.0)
        if not gpus or gpus < 1:
            continue
        t = node_type(n, type_label)
        if t is None:
            continue
        out.append((n["NodeID"], t, int(math.floor(gpus + 1e-9))))
    return out


def untyped_gpu_nodes(nodes, type_label):
    """Ids of the alive nodes that have GPUs but no GPU type (neither the label nor one accelerator)."""
    return [n["NodeID"] for n in nodes if n.get("Alive", False)
            and (n.get("Resources") or {}).get("GPU", 0) >= 1 and node_type(n, type_label) is None]


class ClusterView:
    """The session's numbering of a set of Ray GPU nodes.

    Parameters
    ----------
    nodes : list of (str, str, int)
        ``(node_id, type, gpus)`` per node (:func:`gpu_nodes`); nodes that are
        gone but still held by the session (down) are kept in it.

    Attributes
    ----------
    type_names : list of str
        In order of first appearance.
    node_ids : list of str
        Ray node id of every session node, in the session's order (type by type).
    node_type : list of str
    node_gpus : list of int
    worker_node : list of int
        Session node of every worker (workers numbered type by type, node by node).
    """

    def __init__(self, nodes):
        if not nodes:
            raise InvalidOptionError(
                "the Ray cluster has no GPU node with a GPU type: give each GPU node a label "
                "(e.g. ray start --labels='{\"gpu_type\": \"v100\"}', or labels= in Cluster.add_node) or an "
                "accelerator_type:<name> resource, and a GPU resource (num_gpus)."
            )
        types = []
        for _, t, _ in nodes:
            if t not in types:
                types.append(t)
        ordered = [n for t in types for n in nodes if n[1] == t]
        self.type_names = types
        self.node_ids = [n[0] for n in ordered]
        self.node_type = [n[1] for n in ordered]
        self.node_gpus = [n[2] for n in ordered]
        self.index = {nid: v for v, nid in enumerate(self.node_ids)}
        self.worker_node = [v for v, g in enumerate(self.node_gpus) for _ in range(g)]
        self.node_first = []
        k = 0
        for g in self.node_gpus:
            self.node_first.append(k)
            k += g

    @property
    def n_workers(self):
        return len(self.worker_node)

    def session_cluster(self):
        """``{type: [GPUs per node, ...]}``: the cluster argument of :class:`hetplace.Session`."""
        out = {t: [] for t in self.type_names}
        for t, g in zip(self.node_type, self.node_gpus):
            out[t].append(g)
        return out

    def worker_slot(self, k):
        """``(node_id, slot)``: the Ray node of session worker ``k`` and its position among the node's GPUs."""
        v = self.worker_node[k]
        return self.node_ids[v], k - self.node_first[v]

    def worker_of(self, node_id, slot):
        """Session worker index of ``(node_id, slot)``."""
        return self.node_first[self.index[node_id]] + slot

    def with_nodes(self, added):
        """A view with ``added`` (``(node_id, type, gpus)``) joined, every known node kept."""
        known = list(zip(self.node_ids, self.node_type, self.node_gpus))
        return ClusterView(known + [n for n in added if n[0] not in self.index])
