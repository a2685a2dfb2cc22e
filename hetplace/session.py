"""A session a scheduler can hold: jobs and what runs where, kept between decisions (docs/session.md).

:class:`Session` is the state a cluster scheduler keeps from one cycle to the next --
the cluster and which of its nodes are up, the submitted jobs and their progress, the
running placement, the tenants' quotas -- and its decisions: a :class:`Decision` says
what runs where, what changed (:class:`Change`: start, stop, resize, migrate) and why
every other job waits (:class:`Reason`: ``"infeasible"``, ``"quota"``, ``"capacity"``).

Events are validated when they arrive and cost O(1) each; :meth:`Session.decide`
builds the :class:`~hetplace.Problem` of the admitted jobs (:meth:`Session.problem`)
and solves it with :func:`hetplace.place`.  The whole state round-trips through JSON
(:meth:`Session.to_json`, :meth:`Session.from_json`), so a scheduler that restarts
makes the identical next decision.
"""

import functools
import json
import math
import numbers
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ._quota import HALL_MAX_TYPES, hall_fits, quota_flow
from ._validation import REAL_MAX, REAL_MIN, check_seed, is_real_scalar
from .errors import InvalidOptionError, SessionError, SolverError

__all__ = ["Session", "Decision", "Change", "Reason", "REASON_CODES", "ACTIONS", "SESSION_POLICIES"]

#: The codes of :class:`Reason`, each with its exact meaning (docs/session.md §3).
REASON_CODES = {
    "infeasible": "no allocation its own constraints allow exists among the up nodes, even with the cluster empty",
    "quota": "its tenant's quotas leave fewer than min_workers usable GPUs of its types",
    "capacity": "it could run, but this decision gives the GPUs to other jobs",
}
#: The actions of :class:`Change`.
ACTIONS = ("start", "stop", "resize", "migrate")
#: Policies of a session: methods of :func:`hetplace.place` (docs/session.md §4).
SESSION_POLICIES = ("smp", "greedy", "exact", "auto", "keep-greedy", "equal", "random")
#: Version of the JSON state written by :meth:`Session.to_json`.
STATE_VERSION = 1

_EMPTY = ()
#: Keys of the events of :meth:`Session.apply`: ``{type: (required keys, {optional key: default})}``.
_EVENT_KEYS = {
    "submit": (("job", "throughput", "batch", "iterations"),
               {"grad_bytes": 0.0, "min_workers": 1, "max_workers": None, "types": None, "tenant": None,
                "weight": 1.0, "restart_time": 0.0}),
    "progress": (("job", "iterations_left"), {}),
    "finish": (("job",), {}),
    "node_down": (("node",), {}),
    "node_up": (("node",), {}),
}


@dataclass(frozen=True)
class Reason:
    """Why a submitted job does not run in a decision.

    Attributes
    ----------
    code : str
        One of :data:`REASON_CODES`.
    message : str
        One sentence for a person (a dashboard).
    data : dict
        Machine-readable details (docs/session.md §3 lists the keys per code).
    """

    code: str
    message: str
    data: dict = field(default_factory=dict)

    def to_dict(self):
        return {"code": self.code, "message": self.message, "data": dict(self.data)}


@dataclass(frozen=True)
class Change:
    """One job whose workers change in a decision.

    ``action`` is ``"start"`` (no workers before), ``"stop"`` (none after),
    ``"resize"`` (another number of workers) or ``"migrate"`` (as many workers,
    not the same ones); ``before`` and ``after`` are sorted worker indices.
    """

    job_id: object
    action: str
    before: tuple
    after: tuple

    def to_dict(self):
        return {"job": self.job_id, "action": self.action, "before": list(self.before), "after": list(self.after)}


class Decision:
    """A decision of :meth:`Session.decide`.

    Attributes
    ----------
    status : str
        ``"ok"``, or ``"budget"`` when the session's time budget cut the search
        (the placement is then the best found in time).
    assignment : dict
        ``{job_id: tuple of worker indices}`` for every job that runs.
    changes : list of Change
        One per job whose workers change against the running placement.
    pending : dict
        ``{job_id: Reason}`` for every submitted job that does not run.
    placement : hetplace.Placement or None
        The placement on :attr:`problem` (None when no job runs).
    problem : hetplace.Problem or None
        The problem solved: the admitted jobs in submission order.
    jobs : tuple
        Job ids of :attr:`problem`'s jobs, in its order.
    seed : int
        The seed the policy ran with.
    wall_time : float
        Seconds ``decide`` took.
    applied : bool
        Whether the decision became the running state.
    """

    STATUSES = ("ok", "budget")

    def __init__(self, status, assignment, changes, pending, placement, problem, jobs, seed, wall_time, applied,
                 method):
        self.status = status
        self.success = True
        self.assignment = assignment
        self.changes = changes
        self.pending = pending
        self.placement = placement
        self.problem = problem
        self.jobs = jobs
        self.seed = seed
        self.wall_time = wall_time
        self.applied = applied
        self.method = method

    @property
    def mean_jct(self):
        """The placement's objective (weighted mean JCT with restart losses), nan when no job runs."""
        return math.nan if self.placement is None else float(self.placement.mean_jct)

    def to_dict(self):
        """JSON-ready: ``assignment``, ``changes``, ``pending``, ``status``, ``wall_time`` (docs/session.md §2)."""
        return {
            "assignment": {_key(j): list(w) for j, w in self.assignment.items()},
            "changes": [c.to_dict() for c in self.changes],
            "pending": {_key(j): r.to_dict() for j, r in self.pending.items()},
            "status": self.status,
            "wall_time": self.wall_time,
            "mean_jct": None if self.placement is None else self.mean_jct,
            "seed": self.seed,
        }

    def __repr__(self):
        return (f"Decision(status={self.status!r}, running={len(self.assignment)}, changes={len(self.changes)}, "
                f"pending={len(self.pending)}, wall_time={self.wall_time:.4g})")


def _key(job_id):
    """A JSON object key for ``job_id`` (JSON keys are strings)."""
    return job_id if isinstance(job_id, str) else str(job_id)


def _already_submitted(job_id):
    return SessionError(f"job {job_id!r} is already submitted; give a new id, or finish it first.", field="job")


def _not_submitted(job_id):
    return SessionError(f"job {job_id!r} is not submitted (or already finished); submit it first.", field="job")


def _twin(job_id):
    """The other id with ``job_id``'s JSON key: ``"7"`` for 7, 7 for ``"7"`` (None if there is none)."""
    if isinstance(job_id, str):
        try:
            n = int(job_id)
        except ValueError:
            return None
        return n if str(n) == job_id else None
    return str(job_id)


class _Job:
    """One submitted job (validated)."""

    __slots__ = ("id", "seq", "rate", "batch", "iterations", "grad_bytes", "min_workers", "max_workers", "types",
                 "tenant", "weight", "restart_time")

    def to_dict(self, type_names):
        return {
            "id": self.id, "seq": self.seq,
            "throughput": {type_names[g]: r for g, r in enumerate(self.rate) if r > 0},
            "batch": self.batch, "iterations": self.iterations, "grad_bytes": self.grad_bytes,
            "min_workers": self.min_workers, "max_workers": self.max_workers,
            "types": None if self.types is None else [type_names[g] for g in self.types],
            "tenant": self.tenant, "weight": self.weight, "restart_time": self.restart_time,
        }


# ------------------------------------------------------------------ the cluster
class _Cluster:
    """The cluster of a session: types, workers (numbered type by type), nodes, bandwidths."""

    def __init__(self, type_names, type_counts, worker_speed, bandwidth, topology):
        self.type_names = list(type_names)
        self.type_counts = [int(c) for c in type_counts]
        self.index = {n: g for g, n in enumerate(self.type_names)}
        self.K = sum(self.type_counts)
        self.worker_type = np.repeat(np.arange(len(self.type_counts), dtype=np.int64), self.type_counts)
        self.worker_speed = None if worker_speed is None else np.asarray(worker_speed, dtype=np.float64)
        self.bandwidth = float(bandwidth)
        self.topology = None if topology is None else {k: np.asarray(v) for k, v in topology.items()}
        if self.topology is not None:
            node = self.topology["node"].astype(np.int64)
            self.n_nodes = int(node.max()) + 1 if node.size else 0
            order = np.argsort(node, kind="stable")
            bounds = np.searchsorted(node[order], np.arange(self.n_nodes + 1))
            self.node_workers = [tuple(order[bounds[v]:bounds[v + 1]].tolist()) for v in range(self.n_nodes)]
        else:  # a cluster without nodes: every worker is a node of its own
            self.n_nodes = self.K
            self.node_workers = [(k,) for k in range(self.K)]
        self.node_of = np.empty(self.K, dtype=np.int64)
        for v, ws in enumerate(self.node_workers):
            self.node_of[list(ws)] = v
        # what every decision's Problem shares, validated once (Problem._trusted takes it as it is)
        from ._problem_iv import _topology_iv
        from .problem import Problem

        self.counts = np.asarray(self.type_counts, dtype=np.int64)
        self.speed = np.ones(self.K) if self.worker_speed is None else self.worker_speed.astype(np.float64)
        Problem(np.ones((1, len(self.type_counts))), self.counts, [1], [1], bandwidth=self.bandwidth,
                type_names=self.type_names, **self.problem_args())  # the cluster's own checks, once
        self.topo = None if self.topology is None else _topology_iv(
            self.topology["node"], self.topology["node_bandwidth"], self.topology.get("rack"),
            self.topology.get("rack_bandwidth"), self.K)

    def problem_args(self):
        out = {}
        if self.worker_speed is not None:
            out["worker_speed"] = self.worker_speed
        if self.topology is not None:
            out.update(self.topology)
        return out

    def to_dict(self):
        def num(x):
            return x if math.isfinite(x) else "inf"

        out = {"type_names": self.type_names, "type_counts": self.type_counts,
               "worker_speed": None if self.worker_speed is None else self.worker_speed.tolist(),
               "bandwidth": num(self.bandwidth), "topology": None}
        if self.topology is not None:
            out["topology"] = {k: ([num(float(x)) for x in v.tolist()] if v.dtype.kind == "f" else v.tolist())
                               for k, v in self.topology.items()}
        return out

    @classmethod
    def from_dict(cls, d):
        def num(x):
            return math.inf if x == "inf" else x

        topo = d.get("topology")
        if topo is not None:
            topo = {k: np.asarray([num(x) for x in v], dtype=np.float64 if "bandwidth" in k else np.int64)
                    for k, v in topo.items()}
        return cls(d["type_names"], d["type_counts"], d.get("worker_speed"), num(d["bandwidth"]), topo)


def _cluster_iv(cluster, bandwidth, node_bandwidth):
    """A :class:`_Cluster` of the forms :class:`Session` takes, and the quotas a cluster file carries."""
    from . import io

    if isinstance(cluster, io.ClusterSpec):
        spec = cluster
    elif isinstance(cluster, (str,)) or hasattr(cluster, "__fspath__"):
        spec = io.read_cluster(cluster)
    elif isinstance(cluster, dict):
        if not cluster:
            raise SessionError("cluster must name at least one GPU type; got an empty dict.")
        names, counts, node_gpus, node_type = [], [], [], []
        per_node = None
        for name, value in cluster.items():
            if not isinstance(name, str) or not name:
                raise SessionError(f"cluster keys must be GPU type names (non-empty strings); got {name!r}.")
            if isinstance(value, (list, tuple)):
                if per_node is False:
                    raise SessionError(f"cluster mixes counts and node lists (type {name!r}); give every type as "
                                       "a count {type: GPUs} or every type as nodes {type: [GPUs per node, ...]}.")
                per_node = True
                for c in value:
                    _count_arg(f"cluster[{name!r}] node size", c, 1)
                names.append(name)
                counts.append(sum(int(c) for c in value))
                node_gpus += [int(c) for c in value]
                node_type += [len(names) - 1] * len(value)
            else:
                if per_node is True:
                    raise SessionError(f"cluster mixes counts and node lists (type {name!r}); give every type as "
                                       "a count {type: GPUs} or every type as nodes {type: [GPUs per node, ...]}.")
                per_node = False
                names.append(name)
                counts.append(_count_arg(f"cluster[{name!r}]", value, 0))
        if sum(counts) == 0:
            raise SessionError(f"cluster must hold at least one GPU; got {cluster!r}.")
        bw = _bandwidth_arg("bandwidth", math.inf if bandwidth is None else bandwidth)
        topo = None
        if per_node:
            nbw = _bandwidth_arg("node_bandwidth", math.inf if node_bandwidth is None else node_bandwidth)
            topo = {"node": np.repeat(np.arange(len(node_gpus), dtype=np.int64), node_gpus),
                    "node_bandwidth": np.full(len(node_gpus), nbw)}
        elif node_bandwidth is not None:
            raise SessionError("node_bandwidth is given but the cluster has no nodes: give the cluster as "
                               "{type: [GPUs per node, ...]}, or drop node_bandwidth.")
        return _Cluster(names, counts, None, bw, topo), None
    else:
        raise SessionError(
            f"cluster must be a cluster TOML path, a hetplace.io.ClusterSpec, {{type: count}} or "
            f"{{type: [GPUs per node, ...]}}; got {type(cluster).__name__}."
        )
    if bandwidth is not None or node_bandwidth is not None:
        raise SessionError("bandwidth and node_bandwidth go with a dict cluster; a cluster file or ClusterSpec "
                           "carries its own: drop them.")
    return (_Cluster(spec.type_names, spec.type_counts, spec.worker_speed, spec.bandwidth, spec.topology),
            getattr(spec, "quotas", None) or None)


def _count_arg(name, value, lo):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or not lo <= value <= 10**6:
        raise SessionError(f"{name} must be an integer in [{lo}, 1000000]; got {value!r}.")
    return int(value)


def _bandwidth_arg(name, value):
    if not is_real_scalar(value) or not float(value) > 0 or math.isnan(float(value)):
        raise SessionError(f"{name} must be a positive number of bytes/s (inf: free links); got {value!r}.")
    return float(value)


# ------------------------------------------------------------------ the session
class Session:
    """The state a scheduler keeps between cycles, and its decisions (docs/session.md).

    Parameters
    ----------
    cluster : str, path-like, hetplace.io.ClusterSpec or dict
        A cluster TOML path (``[[types]]`` or ``[[nodes]]`` with racks and
        ``[[quotas]]``), a :class:`hetplace.io.ClusterSpec`, ``{type: count}``
        (no nodes: every GPU is a node of its own) or
        ``{type: [GPUs per node, ...]}`` (nodes numbered type by type).
    policy : str
        ``"smp"`` (default) or another method of :func:`hetplace.place`
        (:data:`SESSION_POLICIES`).
    quotas : dict, optional
        ``{tenant: {type name: max GPUs}}`` (a type not named: no limit).
        Default: the cluster file's ``[[quotas]]``, else none.
    seed : int
        Seed of every decision (default 0).
    budget_s : float, optional
        Seconds a decision may take (None: no limit).  The decision then
        returns the best placement found in time, never an infeasible one and
        never worse than keeping what runs where that is a placement of the
        decision's problem; its status is ``"budget"`` when the cut mattered.
    bandwidth, node_bandwidth : float, optional
        With a dict cluster: bytes/s of a link between nodes (default inf: no
        communication) and inside a node (``{type: [...]}`` only).
    options : dict, optional
        Options of the policy's method (e.g. ``{"samples": 32}`` for SMP,
        ``{"time_limit": 10}`` for ``"exact"``).

    Notes
    -----
    Thread-safe: events may come from several threads while another thread
    decides; a decision solves a snapshot of the state and applies what still
    holds (a job finished meanwhile is dropped, one whose node went down
    meanwhile is not running).
    """

    def __init__(self, cluster, policy="smp", *, quotas=None, seed=0, budget_s=None, bandwidth=None,
                 node_bandwidth=None, options=None):
        self._cluster, file_quotas = _cluster_iv(cluster, bandwidth, node_bandwidth)
        self._setup(policy, file_quotas if quotas is None else quotas, seed, budget_s, options)
        self._jobs = {}
        self._running = {}
        self._worker_job = {}
        self._down = set()
        self._seq = 0
        self._lock = threading.RLock()
        self._version = 0
        self._plan_cache = None

    def _setup(self, policy, quotas, seed, budget_s, options):
        if not isinstance(policy, str) or policy not in SESSION_POLICIES:
            raise SessionError(f"policy must be one of {', '.join(map(repr, SESSION_POLICIES))}; got {policy!r}.")
        self.policy = policy
        try:
            self.seed = check_seed(seed) or 0
        except InvalidOptionError as exc:
            raise SessionError(str(exc)) from None
        self.budget_s = budget_s
        if options is not None and not isinstance(options, dict):
            raise SessionError(f"options must be a dict of the policy's options; got {type(options).__name__}.")
        from .api import METHODS

        self.options = dict(options or {})
        allowed = METHODS[policy]
        bad = [k for k in self.options if k not in allowed]
        if bad:
            raise SessionError(f"options {bad} are not options of policy {policy!r}; it takes "
                               f"{', '.join(allowed) or 'none'}.")
        self._set_quotas(quotas)

    @property
    def budget_s(self):
        """Seconds a decision may take (None: no limit); may be changed between decisions."""
        return self._budget

    @budget_s.setter
    def budget_s(self, value):
        if value is not None and (not is_real_scalar(value) or not 0 < float(value) < math.inf):
            raise SessionError(f"budget_s must be None or a positive, finite number of seconds; got {value!r}.")
        self._budget = None if value is None else float(value)

    def _set_quotas(self, quotas):
        c = self._cluster
        self._tenants = {}
        self._quota = None
        if quotas is None:
            self.quotas = None
            return
        if not isinstance(quotas, dict):
            raise SessionError(f"quotas must be {{tenant: {{type name: max GPUs}}}}; got {type(quotas).__name__}.")
        table = np.full((len(quotas), len(c.type_names)), math.inf)
        clean = {}
        for t, (tenant, limits) in enumerate(quotas.items()):
            if not isinstance(tenant, (str, int)) or isinstance(tenant, bool):
                raise SessionError(f"quotas: tenant names are strings or integers; got {tenant!r}.")
            if not isinstance(limits, dict):
                raise SessionError(f"quotas[{tenant!r}] must be {{type name: max GPUs}}; got {limits!r}.")
            clean[tenant] = {}
            for name, q in limits.items():
                if name not in c.index:
                    raise SessionError(f"quotas[{tenant!r}] names type {name!r}, which the cluster does not have "
                                       f"(types: {', '.join(c.type_names)}).")
                if isinstance(q, str) and q == "inf":
                    q = math.inf
                if not is_real_scalar(q) or math.isnan(float(q)) or float(q) < 0 or (
                        math.isfinite(float(q)) and float(q) != round(float(q))):
                    raise SessionError(f"quotas[{tenant!r}][{name!r}] must be a whole number of GPUs >= 0 or inf; "
                                       f"got {q!r}.")
                table[t, c.index[name]] = float(q)
                clean[tenant][name] = float(q) if not math.isfinite(float(q)) else int(q)
            self._tenants[tenant] = t
        self.quotas = clean
        self._quota = table

    # -------------------------------------------------------------- events
    def submit(self, job_id, *, throughput, batch, iterations, grad_bytes=0.0, min_workers=1, max_workers=None,
               types=None, tenant=None, weight=1.0, restart_time=0.0):
        """Submit a job (validated now; the session is unchanged on error).

        Parameters
        ----------
        job_id : str or int
            A new id (not a bool).
        throughput : dict
            ``{type name: samples/s of ONE worker of that type}``; a type not
            named (or 0) is one the job cannot run on.
        batch : int
            Global batch (samples per iteration), >= 1.
        iterations : float
            Iterations still to run, > 0.
        grad_bytes : float
            Gradient bytes exchanged per iteration, >= 0.
        min_workers, max_workers : int
            Size bounds (``max_workers`` None: no bound beyond the batch).
        types : list of str, optional
            The types it may use (None: every type of ``throughput``).
        tenant : str or int, optional
            Its tenant; with quotas it must be one of the quotas' tenants.
        weight : float
            Priority, > 0 and finite.
        restart_time : float
            Seconds it loses when its running worker set changes, >= 0.

        Raises
        ------
        SessionError
            Naming the job, the field, the value and the fix.
        """
        j = self._job_iv(job_id, throughput, batch, iterations, grad_bytes, min_workers, max_workers, types, tenant,
                         weight, restart_time)
        with self._lock:
            if j.id in self._jobs:
                raise _already_submitted(job_id)
            self._check_twin(j.id, None)
            self._add(j)

    def _check_twin(self, job_id, alive):
        """Refuse an id whose JSON key another job has (7 and "7"): decisions key jobs by that text."""
        twin = _twin(job_id)
        if twin is not None and (alive[twin] if alive is not None and twin in alive else twin in self._jobs):
            raise SessionError(f"job {job_id!r}: job {twin!r} is submitted, and the two would have the same key "
                               f"{_key(job_id)!r} in a decision's JSON; give another id.", field="job")

    def _add(self, j):
        """Add a validated job (lock held)."""
        j.seq = self._seq
        self._seq += 1
        self._jobs[j.id] = j
        self._version += 1

    def _job_iv(self, job_id, throughput, batch, iterations, grad_bytes, min_workers, max_workers, types, tenant,
                weight, restart_time):
        c = self._cluster
        if isinstance(job_id, (bool, np.bool_)) or not isinstance(job_id, (str, numbers.Integral)):
            raise SessionError(f"job_id must be a str or an int; got {job_id!r} ({type(job_id).__name__}).", field="job")
        job_id = job_id if isinstance(job_id, str) else int(job_id)
        j = _Job()
        j.id = job_id
        if not isinstance(throughput, dict) or not throughput:
            raise SessionError(f"job {job_id!r}: throughput must be a non-empty dict {{type name: samples/s of one "
                               f"worker}}; got {throughput!r}.", field="throughput")
        rate = [0.0] * len(c.type_names)
        for name, r in throughput.items():
            g = c.index.get(name)
            if g is None:
                raise SessionError(f"job {job_id!r}: throughput names type {name!r}, which the cluster does not "
                                   f"have (types: {', '.join(c.type_names)}).", field="throughput")
            rate[g] = _number(job_id, f"throughput[{name!r}]", r, 0.0, allow_zero=True)
        if types is not None:
            if isinstance(types, str) or not hasattr(types, "__iter__"):
                raise SessionError(f"job {job_id!r}: types must be a list of type names or None; got {types!r}.", field="types")
            allowed = set()
            for name in types:
                if name not in c.index:
                    raise SessionError(f"job {job_id!r}: types names {name!r}, which the cluster does not have "
                                       f"(types: {', '.join(c.type_names)}).", field="types")
                allowed.add(c.index[name])
            rate = [r if g in allowed else 0.0 for g, r in enumerate(rate)]
            j.types = tuple(sorted(allowed))
        else:
            j.types = None
        if not any(r > 0 for r in rate):
            raise SessionError(f"job {job_id!r}: throughput must be positive on at least one allowed type; got "
                               f"{throughput!r}" + ("" if types is None else f" with types={list(types)!r}") + ".", field="throughput")
        j.rate = tuple(rate)
        j.batch = _whole(job_id, "batch", batch, 1)
        j.iterations = _number(job_id, "iterations", iterations, 0.0)
        j.grad_bytes = _number(job_id, "grad_bytes", grad_bytes, 0.0, allow_zero=True)
        j.min_workers = _whole(job_id, "min_workers", min_workers, 1)
        j.max_workers = None if max_workers is None else _whole(job_id, "max_workers", max_workers, 1)
        if j.max_workers is not None and j.min_workers > j.max_workers:
            raise SessionError(f"job {job_id!r}: min_workers = {j.min_workers} > max_workers = {j.max_workers}; "
                               "lower min_workers or raise max_workers.", field="min_workers")
        if j.min_workers > j.batch:
            raise SessionError(f"job {job_id!r}: min_workers = {j.min_workers} > batch = {j.batch}: a worker "
                               "beyond the batch gets no sample. Lower min_workers or raise the batch.", field="min_workers")
        if tenant is not None:
            if isinstance(tenant, bool) or not isinstance(tenant, (str, int)):
                raise SessionError(f"job {job_id!r}: tenant must be a str, an int or None; got {tenant!r}.", field="tenant")
            if self.quotas is not None and tenant not in self._tenants:
                raise SessionError(f"job {job_id!r}: tenant {tenant!r} is not in the session's quotas (tenants: "
                                   f"{', '.join(map(repr, self._tenants))}). Use one of them, None, or add it to "
                                   "quotas (an empty dict: no limit).", field="tenant")
        j.tenant = tenant
        j.weight = _number(job_id, "weight", weight, 0.0)
        j.restart_time = _number(job_id, "restart_time", restart_time, 0.0, allow_zero=True)
        return j

    def progress(self, job_id, iterations_left):
        """Set a job's remaining iterations (> 0; a finished job is :meth:`finish`-ed)."""
        left = _number(job_id, "iterations_left", iterations_left, 0.0)
        with self._lock:
            self._job(job_id).iterations = left
            if job_id not in self._running:  # a waiting job's estimate orders admission
                self._version += 1

    def finish(self, job_id):
        """Remove a job (finished or cancelled); its workers become free."""
        with self._lock:
            self._job(job_id)
            del self._jobs[job_id]
            self._version += 1
            for k in self._running.pop(job_id, _EMPTY):
                del self._worker_job[k]

    def node_down(self, node):
        """Mark a node down; returns the ids of the jobs that ran on it (no longer running)."""
        v = self._node_iv(node)
        with self._lock:
            self._down.add(v)
            self._version += 1
            hit = {self._worker_job[k] for k in self._cluster.node_workers[v] if k in self._worker_job}
            out = [j for j in self._running if j in hit]
            for j in out:
                for k in self._running.pop(j):
                    del self._worker_job[k]
            return out

    def node_up(self, node):
        """Mark a node up again."""
        v = self._node_iv(node)
        with self._lock:
            self._down.discard(v)
            self._version += 1

    def _node_iv(self, node):
        n = self._cluster.n_nodes
        if isinstance(node, (bool, np.bool_)) or not isinstance(node, numbers.Integral) or not 0 <= node < n:
            raise SessionError(f"node must be a node index in [0, {n - 1}] (the cluster's node order"
                               + ("" if self._cluster.topology is not None else "; without nodes, a worker index")
                               + f"); got {node!r}.", field="node")
        return int(node)

    def apply(self, events):
        """Apply a batch of events, all or none (docs/session.md §2).

        The batch form of the event methods, for a scheduler that sends what
        happened since its last cycle in one call (the service's
        ``POST /v1/sessions/{id}/events`` is this method).

        Parameters
        ----------
        events : list of dict
            In order, each one of::

                {"type": "submit", "job": id, <keyword arguments of submit>}
                {"type": "progress", "job": id, "iterations_left": n}
                {"type": "finish", "job": id}
                {"type": "node_down", "node": n}
                {"type": "node_up", "node": n}

        Returns
        -------
        list
            One entry per event: the ids of the jobs a ``node_down`` stopped, else None.

        Raises
        ------
        SessionError
            For the first bad event, its message starting with ``events[i]`` and its
            ``field`` the path of the bad field; then no event of the batch is applied.
        """
        if not isinstance(events, (list, tuple)):
            raise SessionError(f"events must be a list of event dicts; got {type(events).__name__}.", field="events")
        with self._lock:
            ops, alive = [], {}
            for n, ev in enumerate(events):
                try:
                    ops.append(self._event_iv(ev, alive))
                except SessionError as exc:
                    where = f"events[{n}]"
                    raise SessionError(f"{where}: {exc}",
                                       field=f"{where}.{exc.field}" if exc.field else where) from None
            return [op() for op in ops]

    def _event_iv(self, ev, alive):
        """One event of :meth:`apply` validated against the state as the batch leaves it (``alive``:
        ``{job id: submitted?}`` for the jobs the batch submitted or finished so far); returns the
        call that applies it and cannot fail."""
        if not isinstance(ev, dict):
            raise SessionError(f"an event must be a dict with a 'type'; got {type(ev).__name__}.")
        kind = ev.get("type")
        keys = _EVENT_KEYS.get(kind) if isinstance(kind, str) else None
        if keys is None:
            raise SessionError(f"type must be one of {', '.join(map(repr, _EVENT_KEYS))}; got {kind!r}.",
                               field="type")
        required, optional = keys
        for k in ev:
            if k != "type" and k not in required and k not in optional:
                raise SessionError(f"a {kind} event has no key {k!r}; its keys are "
                                   f"{', '.join(map(repr, ('type',) + required + tuple(optional)))}.", field=str(k))
        for k in required:
            if k not in ev:
                raise SessionError(f"a {kind} event needs {k!r}.", field=k)
        if kind in ("node_down", "node_up"):
            v = self._node_iv(ev["node"])
            return functools.partial(self.node_down if kind == "node_down" else self.node_up, v)
        job_id = ev["job"]
        if isinstance(job_id, (bool, np.bool_)) or not isinstance(job_id, (str, numbers.Integral)):
            raise SessionError(f"job must be a str or an int; got {job_id!r} ({type(job_id).__name__}).",
                               field="job")
        job_id = job_id if isinstance(job_id, str) else int(job_id)
        there = alive[job_id] if job_id in alive else job_id in self._jobs
        if kind == "submit":
            if there:
                raise _already_submitted(job_id)
            self._check_twin(job_id, alive)
            kw = {k: ev.get(k, d) for k, d in optional.items()}
            j = self._job_iv(job_id, ev["throughput"], ev["batch"], ev["iterations"], **kw)
            alive[job_id] = True
            return functools.partial(self._add, j)
        if not there:
            raise _not_submitted(job_id)
        if kind == "progress":
            left = _number(job_id, "iterations_left", ev["iterations_left"], 0.0)
            return functools.partial(self.progress, job_id, left)
        alive[job_id] = False
        return functools.partial(self.finish, job_id)

    def _job(self, job_id):
        try:
            return self._jobs[job_id]
        except (KeyError, TypeError):
            raise _not_submitted(job_id) from None

    # -------------------------------------------------------------- views
    @property
    def jobs(self):
        """Ids of the submitted, unfinished jobs, in submission order."""
        with self._lock:
            return list(self._jobs)

    @property
    def running(self):
        """``{job_id: tuple of worker indices}``: the running placement."""
        with self._lock:
            return dict(self._running)

    @property
    def down_nodes(self):
        """Sorted indices of the nodes that are down."""
        with self._lock:
            return sorted(self._down)

    @property
    def n_workers(self):
        return self._cluster.K

    @property
    def n_nodes(self):
        return self._cluster.n_nodes

    @property
    def type_names(self):
        return list(self._cluster.type_names)

    def node_of(self, worker):
        """The node index of a worker."""
        return int(self._cluster.node_of[worker])

    # -------------------------------------------------------------- the problem
    def _snapshot(self):
        with self._lock:
            jobs = list(self._jobs.values())
            running = dict(self._running)
            down = frozenset(self._down)
            iters = [j.iterations for j in jobs]
            version = self._version
        return jobs, running, down, iters, version

    def problem(self):
        """The :class:`~hetplace.Problem` the next :meth:`decide` solves (None when no job is admitted)."""
        return self._plan(*self._snapshot())[0]

    def _available(self, down):
        avail = np.ones(self._cluster.K, dtype=bool)
        for v in down:
            avail[list(self._cluster.node_workers[v])] = False
        return avail

    def _plan(self, jobs, running, down, iters, version):
        """``(problem, admitted jobs, reasons, usable counts)`` of a snapshot (docs/session.md §3).

        Everything but the iterations is kept for the snapshot's ``version`` (bumped by every
        event except the progress of a running job): a decision after progress reports alone
        only rebuilds the Problem with the new iterations.
        """
        from .problem import Problem

        cached = self._plan_cache
        if cached is not None and cached[0] == version:
            _, iv, extra, admitted, reasons, up = cached
            if iv is None:
                return None, admitted, reasons, up
            iv = iv._replace(iterations=np.array([iters[x] for x in admitted], dtype=np.float64))
            return Problem._trusted(iv, **extra), admitted, reasons, up
        c = self._cluster
        G = len(c.type_names)
        avail = self._available(down)
        up = np.bincount(c.worker_type[avail], minlength=G).astype(np.int64)
        reasons = {}
        if not jobs:
            self._plan_cache = (version, None, None, [], reasons, up)
            return None, [], reasons, up
        rate = np.array([j.rate for j in jobs], dtype=np.float64).reshape(len(jobs), G)
        allowed = (rate > 0) & (up > 0)[None, :]
        usable = allowed.astype(np.int64) @ up
        lo = np.array([j.min_workers for j in jobs], dtype=np.int64)
        tix = np.array([self._tenants.get(j.tenant, -1) if self._quota is not None else -1 for j in jobs],
                       dtype=np.int64)
        cap = None
        if self._quota is not None:
            cap = np.minimum(self._quota, up[None, :].astype(np.float64)).astype(np.int64)
        cand = []
        for x, j in enumerate(jobs):
            if usable[x] < lo[x]:
                reasons[j.id] = self._reason_infeasible(j, int(usable[x]))
            elif tix[x] >= 0 and (room := int((allowed[x] * cap[tix[x]]).sum())) < lo[x]:
                reasons[j.id] = self._reason_quota(j, room, None)
            else:
                cand.append(x)
        admitted = self._admit(jobs, cand, running, allowed, up, lo, tix, cap, iters, reasons)
        if not admitted:
            self._plan_cache = (version, None, None, [], reasons, up)
            return None, [], reasons, up
        iv, extra = self._build(jobs, admitted, running, rate, avail, tix, iters)
        self._plan_cache = (version, iv, extra, admitted, reasons, up)
        return Problem._trusted(iv, **extra), admitted, reasons, up

    def _admit(self, jobs, cand, running, allowed, up, lo, tix, cap, iters, reasons):
        """Admitted job positions, in submission order: running jobs first, then the waiting ones by
        shortest estimated weighted time (first fit of their minima, capacity and quotas checked).

        Jobs with the same usable types and tenant are interchangeable for the check, so the
        max-flow runs on those groups (a few, whatever the number of jobs) with their summed minima.
        """
        if not cand:
            return []
        cand = np.asarray(cand, dtype=np.int64)
        quota_bind = cap is not None and bool((tix[cand] >= 0).any())
        G = up.size
        total = int(up.sum())
        if G <= HALL_MAX_TYPES:
            mask = allowed[cand].astype(np.int64) @ (np.int64(1) << np.arange(G, dtype=np.int64))
            if not quota_bind and hall_fits(mask, lo[cand], up):
                return cand.tolist()
            keys, group = np.unique((tix[cand] + 1) * (np.int64(1) << G) + mask, return_inverse=True)
            g_allowed = ((keys[:, None] >> np.arange(G)) & 1).astype(bool)
            g_tenant = (keys >> G) - 1
        else:
            rows = np.concatenate([tix[cand, None], allowed[cand].astype(np.int64)], axis=1)
            keys, group = np.unique(rows, axis=0, return_inverse=True)
            g_allowed, g_tenant = keys[:, 1:].astype(bool), keys[:, 0]
        group = group.reshape(-1)
        no_tenant = np.full(len(keys), -1, dtype=np.int64)
        no_quota = np.zeros((0, G), dtype=np.int64)

        def fits(demand, quotas, lift=-1):
            """Whether the groups' ``demand`` fits, with the quotas (tenant ``lift``'s lifted) or without."""
            if quotas:
                c = cap
                if lift >= 0:
                    c = cap.copy()
                    c[lift] = up
                return quota_flow(g_allowed, up, demand, g_tenant, c) is None
            return quota_flow(g_allowed, up, demand, no_tenant, no_quota) is None

        demand = np.bincount(group, weights=lo[cand], minlength=len(keys)).astype(np.int64)
        if int(demand.sum()) <= total and fits(demand, False) and (not quota_bind or fits(demand, True)):
            return cand.tolist()
        # not every job fits: first fit in priority order
        where = {int(x): int(g) for x, g in zip(cand, group)}
        run = [int(x) for x in cand if jobs[x].id in running]
        wait = [int(x) for x in cand if jobs[x].id not in running]
        est = {x: self._estimate(jobs[x], iters[x], allowed[x], up) for x in wait}
        wait.sort(key=lambda x: (est[x] / jobs[x].weight, jobs[x].seq))
        taken = []
        room = total
        demand[:] = 0
        for x in run + wait:
            if room < lo[x]:
                reasons[jobs[x].id] = None  # capacity, filled in after the placement
                continue
            demand[where[x]] += lo[x]
            if not fits(demand, False):
                reasons[jobs[x].id] = None
            elif quota_bind and not fits(demand, True):
                # its own tenant's quota is the cause when lifting it alone lets the job in; else the GPUs
                # other tenants' quotas leave it are too few: capacity
                own = tix[x] >= 0 and fits(demand, True, lift=int(tix[x]))
                reasons[jobs[x].id] = ("quota", x) if own else None
            else:
                taken.append(x)
                room -= int(lo[x])
                continue
            demand[where[x]] -= lo[x]
        return sorted(taken, key=lambda x: jobs[x].seq)

    def _estimate(self, j, left, allowed, up):
        """Seconds job ``j`` would take alone on the up cluster (its fastest usable workers, the flat ring)."""
        rate = np.asarray(j.rate)
        order = np.argsort(-rate, kind="stable")
        r = np.repeat(rate[order], np.where(allowed[order], up[order], 0))
        hi = min(j.max_workers or r.size, j.batch, r.size)
        if hi < 1:
            return math.inf
        X = np.cumsum(r[:hi])
        n = np.arange(1, hi + 1)
        comm = left * 2.0 * (n - 1) / n * j.grad_bytes / self._cluster.bandwidth
        t = left * j.batch / X + comm
        t[: j.min_workers - 1] = math.inf
        return float(t.min())

    def _build(self, jobs, admitted, running, rate, avail, tix, iters):
        """``(iv, extra)``: the Problem of the admitted jobs, in submission order, as the arguments of
        :meth:`Problem._trusted`.

        Every input was validated when its event arrived and :meth:`_admit` checked that
        the minima fit the up workers and the quotas, so the constructor's checks are not
        run again; the result equals ``Problem(...)`` of the same arguments (tests).
        """
        from ._problem_iv import _ProblemInputs

        c = self._cluster
        S, K = len(admitted), c.K
        sel = [jobs[x] for x in admitted]
        current = np.full(K, -1, dtype=np.int64)
        for i, j in enumerate(sel):
            ws = running.get(j.id)
            if ws:
                current[list(ws)] = i
        names = [str(j.id) for j in sel]
        if len(set(names)) < S:  # ids 1 and "1": the Problem's names are then the ids' repr
            names = [repr(j.id) for j in sel]
        batch = np.array([j.batch for j in sel], dtype=np.float64)
        hi = np.array([K if j.max_workers is None else min(j.max_workers, K) for j in sel], dtype=np.int64)
        hi = np.minimum(hi, batch).astype(np.int64)
        replacing = bool((current >= 0).any())
        all_up = bool(avail.all())
        iv = _ProblemInputs(
            throughput=np.ascontiguousarray(rate[admitted]), type_counts=c.counts, batch=batch,
            iterations=np.array([iters[x] for x in admitted], dtype=np.float64),
            grad_bytes=np.array([j.grad_bytes for j in sel], dtype=np.float64), bandwidth=c.bandwidth,
            worker_speed=c.speed.copy(), job_names=tuple(names), type_names=tuple(c.type_names),
            worker_type=c.worker_type.copy(), available=avail,
            available_counts=c.counts.copy() if all_up else np.bincount(c.worker_type[avail], minlength=len(
                c.type_names)).astype(np.int64),
            min_workers=np.array([j.min_workers for j in sel], dtype=np.int64), max_workers=hi,
            current=current,
            restart_time=np.array([j.restart_time for j in sel], dtype=np.float64) if replacing else np.zeros(S),
        )
        weights = [j.weight for j in sel]
        extra = {"topo": c.topo, "weight": None if all(w == 1.0 for w in weights) else weights}
        if self._quota is not None:
            extra.update(tenant=tix[admitted], quota=self._quota)
        return iv, extra

    # -------------------------------------------------------------- reasons
    def _reason_infeasible(self, j, usable):
        names = self._type_list(j)
        return Reason("infeasible",
                      f"Job {j.id!r} needs at least {_gpus(j.min_workers)} of {names}, but the up nodes have only "
                      f"{usable}; it cannot run even on an empty cluster.",
                      {"min_workers": j.min_workers, "usable_gpus": usable, "types": self._types_of(j)})

    def _reason_quota(self, j, usable, used):
        tq = self.quotas.get(j.tenant, {})
        data = {"tenant": j.tenant, "min_workers": j.min_workers, "usable_gpus": usable,
                "quota": {k: (v if math.isfinite(v) else "inf") for k, v in tq.items()}}
        if used is not None:
            data["used"] = used
        if used is None:
            message = (f"Job {j.id!r} needs at least {_gpus(j.min_workers)}, but the quotas of tenant {j.tenant!r} "
                       f"leave it only {_gpus(usable)} of {self._type_list(j)}.")
        else:
            held = ", ".join(f"{n} {g}" for g, n in used.items() if n) or "none"
            message = (f"Job {j.id!r} needs at least {_gpus(j.min_workers)} of {self._type_list(j)}, but the quotas "
                       f"of tenant {j.tenant!r} cannot hold it beside the tenant's admitted jobs this round "
                       f"(they hold {held}).")
        return Reason("quota", message, data)

    def _types_of(self, j):
        return [self._cluster.type_names[g] for g, r in enumerate(j.rate) if r > 0]

    def _type_list(self, j):
        return ", ".join(self._types_of(j))

    # -------------------------------------------------------------- deciding
    def decide(self, apply=True, *, time_cap=None):
        """Decide what runs where; with ``apply=True`` it becomes the running state.

        Parameters
        ----------
        apply : bool
            Make the decision the running state (default True).
        time_cap : float, optional
            Seconds after which the policy is given up (a service's limit on every
            decision).  Unlike :attr:`budget_s` it changes nothing while the policy
            finishes in time: the decision is then the one made without a cap.  Cut,
            the decision is the fallback of docs/session.md §5, with status
            ``"budget"``.  With both, the smaller limit applies.

        Returns
        -------
        Decision
        """
        t0 = time.perf_counter()
        if not isinstance(apply, (bool, np.bool_)):
            raise SessionError(f"apply must be True or False; got {apply!r}.", field="apply")
        if time_cap is not None and (not is_real_scalar(time_cap) or not 0 < float(time_cap) < math.inf):
            raise SessionError(f"time_cap must be None or a positive, finite number of seconds; got {time_cap!r}.",
                               field="time_cap")
        jobs, running, down, iters, version = self._snapshot()
        problem, admitted, reasons, up = self._plan(jobs, running, down, iters, version)
        placement, status = None, "ok"
        if problem is not None:
            placement, status = self._solve(problem, t0, None if time_cap is None else float(time_cap))
        return self._finish(jobs, admitted, reasons, problem, placement, status, running, down, bool(apply), t0)

    def _solve(self, problem, t0, time_cap):
        from .api import place

        opts = dict(self.options)
        method = self.policy
        opts["seed"] = self.seed  # every policy: "auto" may run SMP, and the methods without randomness ignore it
        budget = self.budget_s
        if budget is not None and (time_cap is None or budget <= time_cap):
            return self._solve_budget(problem, method, opts, t0 + budget)
        if time_cap is None:
            return place(problem, method=method, **opts), "ok"
        if budget is not None:  # the cap is the smaller limit: a budget of its length
            return self._solve_budget(problem, method, opts, t0 + time_cap)
        left = t0 + time_cap - time.perf_counter()
        if left <= 0:
            pl = None
        elif method == "smp" and problem.topology is None:
            # flat SMP stops at its own time_limit (the whole call, its keep candidates included) and runs
            # inline here: a thread would cost as much as the service's other work on a decision
            pl = place(problem, method=method, **dict(opts, time_limit=min(float(opts.get("time_limit") or math.inf),
                                                                           left)))
        else:
            pl = self._policy_until(problem, method, opts, t0 + time_cap)
        if pl is None:
            return self._fallback(problem), "budget"
        return pl, "budget" if _was_cut(pl) else "ok"

    def _fallback(self, problem):
        """What runs now when it is a placement of ``problem`` (no new job, every running one can keep its
        workers), else ``"keep-greedy"``: about a millisecond (docs/session.md §5)."""
        from .api import place
        from .placement import evaluate

        if problem.replacing and problem.can_keep.all():
            held = np.bincount(problem.current[problem.current >= 0], minlength=problem.n_jobs)
            if (held > 0).all():
                return evaluate(problem, problem.current)
        return place(problem, method="keep-greedy")

    def _policy_until(self, problem, method, kw, deadline):
        """The policy's placement if it is done by ``deadline`` (None if not, or if it found none in time).

        It runs in a worker thread, with what is left as its ``time_limit`` where it takes one
        (SMP and ``"exact"`` stop by themselves); a policy not done at the deadline is left to
        finish in the background and its result dropped.
        """
        from .api import place

        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        kw = dict(kw)
        if "time_limit" in _method_options(method):
            kw["time_limit"] = min(float(kw.get("time_limit") or math.inf), left)
        box = {}
        done = threading.Event()

        def work():
            try:
                box["placement"] = place(problem, method=method, **kw)
            except BaseException as exc:  # re-raised in the deciding thread
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="hetplace-session-decide", daemon=True).start()
        if not done.wait(max(deadline - time.perf_counter(), 0.0)):
            return None
        if isinstance(box.get("error"), SolverError):  # e.g. the MILP found nothing in the time left
            return None
        if "error" in box:
            raise box["error"]
        return box["placement"]

    def _solve_budget(self, problem, method, opts, deadline):
        """The best placement found by ``deadline`` (docs/session.md §5): the better of the
        :meth:`_fallback` and the policy (:meth:`_policy_until`), with status ``"budget"`` when the
        policy was cut."""
        best = self._fallback(problem)
        pl = self._policy_until(problem, method, opts, deadline)
        if pl is None:
            return best, "budget"
        if pl.mean_jct < best.mean_jct:
            best = pl
        return best, "budget" if _was_cut(pl) else "ok"

    def _finish(self, jobs, admitted, reasons, problem, placement, status, running, down, apply, t0):
        c = self._cluster
        ids = tuple(jobs[x].id for x in admitted)
        assignment = {}
        if placement is not None:
            wj = placement.worker_job
            order = np.argsort(wj, kind="stable")  # idle workers (-1) first, then job by job, ascending
            bounds = np.searchsorted(wj[order], np.arange(len(ids) + 1)).tolist()
            for i, jid in enumerate(ids):
                assignment[jid] = tuple(order[bounds[i]:bounds[i + 1]].tolist())
        pending = {}
        by_id = {j.id: (x, j) for x, j in enumerate(jobs)}
        if reasons:
            # free GPUs of each type after the decision (up workers no job holds)
            avail = self._available(down)
            up = np.bincount(c.worker_type[avail], minlength=len(c.type_names))
            if placement is not None:
                avail &= placement.worker_job < 0
            free = np.bincount(c.worker_type[avail], minlength=len(c.type_names))
            for jid, r in reasons.items():
                x, j = by_id[jid]
                if isinstance(r, Reason):
                    pending[jid] = r
                elif isinstance(r, tuple):  # quota this round: the tenant's other jobs hold the rest
                    pending[jid] = self._quota_now(j, assignment, jobs, free)
                else:
                    pending[jid] = self._capacity(j, free, up)
        changes = []
        for jid in sorted(set(running) | set(assignment), key=lambda q: by_id[q][1].seq if q in by_id else -1):
            before, after = tuple(sorted(running.get(jid, _EMPTY))), tuple(sorted(assignment.get(jid, _EMPTY)))
            if before == after:
                continue
            if not before:
                action = "start"
            elif not after:
                action = "stop"
            elif len(before) != len(after):
                action = "resize"
            else:
                action = "migrate"
            changes.append(Change(jid, action, before, after))
        applied = False
        if apply:
            with self._lock:
                self._apply(assignment)
            applied = True
        return Decision(status, assignment, changes, pending, placement, problem, ids, self.seed,
                        time.perf_counter() - t0, applied, self.policy)

    def _apply(self, assignment):
        """Make ``assignment`` the running state, minus what changed since the snapshot (lock held)."""
        self._version += 1
        down_w = set()
        for v in self._down:
            down_w.update(self._cluster.node_workers[v])
        self._running = {}
        self._worker_job = {}
        for jid, ws in assignment.items():
            if jid not in self._jobs or any(k in down_w for k in ws):
                continue
            self._running[jid] = ws
            for k in ws:
                self._worker_job[k] = jid

    def _capacity(self, j, free, up):
        c = self._cluster
        allowed = np.asarray(j.rate) > 0
        by_type = {c.type_names[g]: int(free[g]) for g in np.flatnonzero(allowed)}
        n_free = sum(by_type.values())
        est = self._estimate(j, j.iterations, allowed, up)
        return Reason("capacity",
                      f"Job {j.id!r} could run, but this decision gives the GPUs to other jobs: {_gpus(n_free)} of "
                      f"its types {'is' if n_free == 1 else 'are'} free and it needs at least {j.min_workers}.",
                      {"free_gpus": n_free, "free_by_type": by_type, "min_workers": j.min_workers,
                       "best_jct": est})

    def _quota_now(self, j, assignment, jobs, free):
        c = self._cluster
        t = self._tenants[j.tenant]
        used = np.zeros(len(c.type_names), dtype=np.int64)
        by_id = {q.id: q for q in jobs}
        for jid, ws in assignment.items():
            if by_id[jid].tenant == j.tenant:
                np.add.at(used, c.worker_type[list(ws)], 1)
        allowed = np.asarray(j.rate) > 0
        room = np.minimum(self._quota[t] - used, free).clip(min=0)
        usable = int(np.where(allowed, room, 0).sum())
        return self._reason_quota(j, usable, {c.type_names[g]: int(used[g]) for g in np.flatnonzero(allowed)})

    # -------------------------------------------------------------- state
    def to_json(self):
        """The whole state as a JSON string (cluster, jobs, running placement, down nodes, quotas, seed, options)."""
        with self._lock:
            tn = self._cluster.type_names
            state = {
                "version": STATE_VERSION,
                "cluster": self._cluster.to_dict(),
                "policy": self.policy,
                "seed": self.seed,
                "budget_s": self.budget_s,
                "options": self.options,
                "quotas": None if self.quotas is None else [
                    [t, {k: (v if math.isfinite(v) else "inf") for k, v in q.items()}] for t, q in self.quotas.items()],
                "jobs": [j.to_dict(tn) for j in self._jobs.values()],
                "next_seq": self._seq,
                "running": [[jid, list(ws)] for jid, ws in self._running.items()],
                "down": sorted(self._down),
            }
        return json.dumps(state, allow_nan=False)

    @classmethod
    def from_json(cls, text):
        """A session from :meth:`to_json`'s text: its next decision is the one the original would make."""
        try:
            d = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise SessionError(f"text must be the JSON of Session.to_json(); it does not parse ({exc}).") from None
        if not isinstance(d, dict) or d.get("version") != STATE_VERSION:
            raise SessionError(f"text must be the JSON of Session.to_json() (state version {STATE_VERSION}); "
                               f"got version {d.get('version') if isinstance(d, dict) else None!r}.")
        s = cls.__new__(cls)
        try:
            s._cluster = _Cluster.from_dict(d["cluster"])
            quotas = None if d["quotas"] is None else {t: q for t, q in d["quotas"]}
            s._setup(d["policy"], quotas, d["seed"], d["budget_s"], d["options"])
            s._jobs = {}
            s._running = {}
            s._worker_job = {}
            s._down = set(int(v) for v in d["down"])
            s._lock = threading.RLock()
            s._version = 0
            s._plan_cache = None
            tn = s._cluster.type_names
            for jd in d["jobs"]:
                rate = jd["throughput"]
                j = s._job_iv(jd["id"], rate, jd["batch"], jd["iterations"], jd["grad_bytes"], jd["min_workers"],
                              jd["max_workers"], jd["types"], jd["tenant"], jd["weight"], jd["restart_time"])
                j.seq = int(jd["seq"])
                s._jobs[j.id] = j
            s._seq = int(d["next_seq"])
            for jid, ws in d["running"]:
                s._running[jid] = tuple(int(k) for k in ws)
                for k in ws:
                    s._worker_job[int(k)] = jid
            del tn
        except (KeyError, TypeError) as exc:
            raise SessionError(f"text is not a complete Session state: {exc!r} is missing or malformed.") from None
        return s

    def __repr__(self):
        return (f"Session(policy={self.policy!r}, workers={self._cluster.K}, nodes={self._cluster.n_nodes}, "
                f"jobs={len(self._jobs)}, running={len(self._running)}, down={len(self._down)})")


def _gpus(n):
    """``"1 GPU"``, ``"3 GPUs"``."""
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _was_cut(placement):
    """Whether a policy's own time limit stopped it early."""
    return bool(placement.info.get("time_limit_hit", False)) or placement.info.get("status") == "time_limit"


def _method_options(method):
    from .api import METHODS

    return METHODS[method]


#: Magnitudes a session accepts where a value is not 0 (docs/session.md §2): the Problem's range
#: (hetplace._validation.REAL_MIN..REAL_MAX), narrower for the weights and what they scale, so that a
#: weighted Problem of any jobs a session holds is always valid (weights within 1e12 of each other).
_RANGES = {"weight": (1e-6, 1e6), "iterations": (1e-18, 1e30), "iterations_left": (1e-18, 1e30),
           "restart_time": (1e-18, 1e30)}


def _number(job_id, name, value, lo, allow_zero=False):
    if type(value) is not float and type(value) is not int and not is_real_scalar(value):  # fast path: plain numbers
        raise SessionError(f"job {job_id!r}: {name} must be a number; got {value!r}.", field=name)
    v = float(value)
    if not math.isfinite(v) or v < lo or (v == lo and not allow_zero):
        rel = ">=" if allow_zero else ">"
        raise SessionError(f"job {job_id!r}: {name} must be a finite number {rel} {lo:g}; got {value!r}.", field=name)
    if v != 0.0:
        a, b = _RANGES.get(name, (REAL_MIN, REAL_MAX))
        if not a <= v <= b:
            raise SessionError(f"job {job_id!r}: {name} = {value!r} is outside the supported range [{a:g}, {b:g}] "
                               "(or 0 where 0 is allowed); rescale the units (e.g. samples per hour, MB).", field=name)
    return v


def _whole(job_id, name, value, lo):
    if type(value) is int and lo <= value <= 2**53:  # fast path
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or not lo <= value <= 2**53:
        if is_real_scalar(value) and float(value).is_integer() and lo <= float(value) <= 2**53:
            return int(value)
        raise SessionError(f"job {job_id!r}: {name} must be a whole number >= {lo}; got {value!r}.", field=name)
    return int(value)
