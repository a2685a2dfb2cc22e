"""The cost of a placement (docs/model.md §1.2-1.4): its one home on the Python side.

Job ``i`` run on ``n_i`` workers of summed throughput ``X_i`` costs

    ``JCT_i = work_i / X_i + comm_i + loss_i``

with ``comm_i`` the communication time the problem's :class:`CommModel` gives
(``+inf`` outside the job's size bounds) and ``loss_i`` its restart loss
(``Problem.restart_cost[i]`` when its worker set differs from
``Problem.current``).  Everything that prices a placement on the Python side
(:class:`~hetplace.placement.Placement`, SMP's scoring and choice, the exact
methods' incumbent and caps, the baselines, ``Problem.jct_alone``) calls
:func:`job_time` or :func:`price`; the compiled kernels price a job with
``hetplace._core._cost`` from the model's :attr:`RingAllReduce.spec`, the same
bits.  A new term of the model (a network topology, job weights) is added here.

Private: inputs are trusted (a validated :class:`~hetplace.problem.Problem`
and int64 assignments).  This module imports no other hetplace module, so the
problem, the placements and every method can import it.
"""

import math
from typing import NamedTuple

import numpy as np

__all__ = ["ring_fraction", "RingAllReduce", "Topology", "HierarchicalRing", "spans", "comm_cost", "comm_cost_at",
           "job_time", "aggregate", "restarted", "Priced", "price"]


def ring_fraction(n):
    """``2 (n-1)/n`` for ``n >= 2``, 0 below (float64, elementwise): a ring all-reduce's share of ``D_i / r``."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros(n.shape)
    big = n >= 2
    out[big] = 2.0 * (n[big] - 1.0) / n[big]
    return out


class RingAllReduce:
    """Communication of a ring all-reduce over one bandwidth per worker link (docs/model.md §1.2).

    Job ``i`` on ``n`` workers communicates ``coef[i] * 2 (n-1)/n`` seconds in
    all (0 for ``n <= 1``), with ``coef[i] = T_i D_i / r`` (0 when ``r`` is
    inf).  The first communication model of a :class:`~hetplace.problem.Problem`
    (its ``comm_model``); a model whose time depends on which workers a job
    has (a topology) implements the same methods and reads ``worker_job``.

    Parameters
    ----------
    iterations, grad_bytes : ndarray of float64, shape (S,)
    bandwidth : float
        Bytes/s per worker link, > 0; ``inf`` switches communication off.

    Attributes
    ----------
    coef : ndarray of float64, shape (S,)
        ``T_i D_i / r`` (read-only).
    by_size : bool
        True: a job's time depends on its number of workers only, so it can be
        tabulated per size (:meth:`table`) and the kernels price it from
        :attr:`~hetplace.problem.Problem.size_cost_spec`.
    """

    by_size = True

    def __init__(self, iterations, grad_bytes, bandwidth):
        coef = np.zeros(len(iterations)) if math.isinf(bandwidth) else iterations * grad_bytes / bandwidth
        self.coef = np.ascontiguousarray(coef)
        self.coef.setflags(write=False)

    def time(self, jobs, n, worker_job=None):
        """Communication time of ``jobs[t]`` on ``n[t]`` workers (arrays of one shape, or scalars).

        ``worker_job`` is the assignment those workers come from ((K,) or, with
        ``jobs`` and ``n`` of shape (R, S), (R, K)); this model needs only the
        sizes and ignores it.
        """
        return self.coef[jobs] * ring_fraction(n)

    def table(self, n_workers):
        """ndarray (S, K + 1): :meth:`time` of every job on ``0..n_workers`` workers."""
        return self.coef[:, None] * ring_fraction(np.arange(n_workers + 1))[None, :]

    def __reduce__(self):
        return (_ring_from_coef, (np.array(self.coef),))


def _ring_from_coef(coef):
    """A :class:`RingAllReduce` with the coefficients ``coef`` (for pickling)."""
    model = RingAllReduce.__new__(RingAllReduce)
    model.coef = np.ascontiguousarray(coef)
    model.coef.setflags(write=False)
    return model


class Topology:
    """GPUs in nodes and racks (docs/model.md §1.6): the validated ``Problem(node=, ...)`` arguments.

    Attributes (read-only arrays)
    -----------------------------
    node : ndarray of int64, shape (K,)
        The node of every worker.
    n_nodes : int
        ``N = node.max() + 1``.
    node_bandwidth : ndarray of float64, shape (N,)
        Bytes/s of the links inside each node.
    rack : ndarray of int64, shape (N,), or None
        The rack of every node (None: no second level).
    n_racks : int
        ``R = rack.max() + 1`` (0 without racks).
    rack_bandwidth : ndarray of float64, shape (R,), or None
        Bytes/s between the nodes of each rack.
    bandwidth : float
        Bytes/s of the top level: between racks, or between nodes without racks.
    node_rack : ndarray of int64, shape (N,)
        ``rack``, or ``arange(N)`` without racks (every node its own second-level
        domain, whose bandwidth is then never used: a job on two nodes spans the top).
    """

    def __init__(self, node, node_bandwidth, rack, rack_bandwidth, bandwidth):
        self.node = _frozen(np.asarray(node, dtype=np.int64))
        self.n_nodes = int(self.node.max()) + 1 if self.node.size else 0
        self.node_bandwidth = _frozen(np.asarray(node_bandwidth, dtype=np.float64))
        self.rack = None if rack is None else _frozen(np.asarray(rack, dtype=np.int64))
        self.rack_bandwidth = None if rack_bandwidth is None else _frozen(np.asarray(rack_bandwidth, dtype=np.float64))
        self.n_racks = 0 if rack is None else (int(self.rack.max()) + 1 if self.rack.size else 0)
        self.bandwidth = float(bandwidth)
        self.node_rack = self.rack if rack is not None else _frozen(np.arange(self.n_nodes, dtype=np.int64))

    def to_dict(self):
        """The Problem arguments that rebuild this topology (JSON-ready)."""
        def bw(a):
            out = [v if math.isfinite(v) else "inf" for v in a.tolist()]
            return out[0] if len(set(out)) == 1 else out
        d = {"node": self.node.tolist(), "node_bandwidth": bw(self.node_bandwidth)}
        if self.rack is not None:
            d.update(rack=self.rack.tolist(), rack_bandwidth=bw(self.rack_bandwidth))
        return d

    def args(self):
        """The Problem arguments that rebuild this topology (arrays; inf kept as a float)."""
        d = {"node": self.node, "node_bandwidth": self.node_bandwidth}
        if self.rack is not None:
            d.update(rack=self.rack, rack_bandwidth=self.rack_bandwidth)
        return d

    def restrict(self, workers):
        """The topology of ``workers`` alone (node and rack ids kept; trailing empty ones dropped)."""
        node = self.node[workers]
        N = int(node.max()) + 1 if node.size else 0
        if self.rack is None:
            return Topology(node, self.node_bandwidth[:N], None, None, self.bandwidth)
        rack = self.rack[:N]
        R = int(rack.max()) + 1 if rack.size else 0
        return Topology(node, self.node_bandwidth[:N], rack, self.rack_bandwidth[:R], self.bandwidth)

    def __setstate__(self, state):
        self.__dict__.update(state)
        for v in state.values():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)


def _frozen(arr):
    """``arr`` as a C-contiguous read-only array (the Problem's and the cost model's attributes)."""
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


def spans(topology, worker_job, n_jobs):
    """Nodes and racks each job's workers span, and the bandwidth its ring runs at.

    Parameters
    ----------
    topology : Topology
    worker_job : ndarray of int64, shape (R, K) or (K,)
    n_jobs : int

    Returns
    -------
    nodes, racks : ndarray of int64, shape (R, S) (or (S,))
        Distinct nodes and racks (second-level domains) holding the job's workers (0 without worker).
    bandwidth : ndarray of float64, shape (R, S) (or (S,))
        The bandwidth of the smallest domain holding all of them: its node's
        ``node_bandwidth`` on one node, else its rack's ``rack_bandwidth`` in one
        rack, else the top level's (also for a job without worker).
    """
    one = np.ndim(worker_job) == 1
    wj = np.atleast_2d(worker_job)
    Rw, K = wj.shape
    S = n_jobs
    rows, ks = np.nonzero(wj >= 0)
    cell = rows * S + wj[rows, ks]
    nd = topology.node[ks]
    rk = topology.node_rack[nd]
    N, NR = max(topology.n_nodes, 1), max(int(topology.node_rack.max()) + 1 if topology.n_nodes else 1, 1)
    nodes = np.bincount(np.unique(cell * N + nd) // N, minlength=Rw * S)
    racks = np.bincount(np.unique(cell * NR + rk) // NR, minlength=Rw * S)
    first = np.full(Rw * S, -1, dtype=np.int64)
    first[cell[::-1]] = nd[::-1]  # the node of each job's lowest-indexed worker
    bw = np.full(Rw * S, topology.bandwidth)
    in_rack = (racks == 1) & (nodes > 1)
    if topology.rack is not None and in_rack.any():
        bw[in_rack] = topology.rack_bandwidth[topology.node_rack[first[in_rack]]]
    in_node = nodes == 1
    bw[in_node] = topology.node_bandwidth[first[in_node]]
    shape = (S,) if one else (Rw, S)
    return nodes.reshape(shape), racks.reshape(shape), bw.reshape(shape)


class HierarchicalRing:
    """Ring all-reduce on a cluster of nodes and racks (docs/model.md §1.6).

    Job ``i`` on ``n`` workers communicates ``(T_i D_i / b) * 2 (n-1)/n``
    seconds, ``b`` the bandwidth of the smallest domain (node, rack, cluster)
    holding all of its workers (:func:`spans`).  A job on the top level costs
    what :class:`RingAllReduce` at ``bandwidth`` gives, bit for bit.

    Parameters
    ----------
    iterations, grad_bytes : ndarray of float64, shape (S,)
    topology : Topology

    Attributes
    ----------
    coef : ndarray of float64, shape (S,)
        ``T_i D_i / bandwidth``: the top level's (the flat model's) coefficient.
    volume : ndarray of float64, shape (S,)
        ``T_i D_i``, bytes each worker sends and receives in all, over ``2 (n-1)/n``.
    floor_scale : ndarray of float64, shape (K + 1,)
        ``2 (n-1)/n / b*(n)``, ``b*(n)`` the largest bandwidth of a domain with
        at least ``n`` workers: ``volume[i] * floor_scale[n]`` is a lower bound
        of job ``i``'s communication on any ``n`` workers.
    by_size : bool
        False: the time depends on which workers a job has.
    """

    by_size = False

    def __init__(self, iterations, grad_bytes, topology):
        self.topology = topology
        self.volume = _frozen(iterations * grad_bytes)
        self.coef = _frozen(self._at(topology.bandwidth))
        K = topology.node.size
        node_size = np.bincount(topology.node, minlength=topology.n_nodes)
        caps = [(K, topology.bandwidth)]
        caps += list(zip(node_size.tolist(), topology.node_bandwidth.tolist()))
        if topology.rack is not None:
            rack_size = np.bincount(topology.rack, weights=node_size, minlength=topology.n_racks).astype(np.int64)
            caps += list(zip(rack_size.tolist(), topology.rack_bandwidth.tolist()))
        best = np.zeros(K + 2)
        for cap, b in caps:  # b*(n) = max over domains with cap >= n: a suffix maximum
            best[cap] = max(best[cap], b)
        best = np.maximum.accumulate(best[::-1])[::-1][: K + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(np.isinf(best), 0.0, ring_fraction(np.arange(K + 1)) / best)
        self.floor_scale = _frozen(scale)

    @staticmethod
    def _per(volume, b):
        """``volume / b``, 0 where ``b`` is inf (elementwise, broadcast)."""
        b = np.asarray(b, dtype=np.float64)
        return np.where(np.isinf(b), 0.0, volume / np.where(np.isinf(b), 1.0, b))

    def _at(self, b):
        """``T_i D_i / b`` of every job (0 when ``b`` is inf)."""
        return self._per(self.volume, b)

    def at_bandwidth(self, jobs, n, b):
        """Communication of ``jobs[t]`` on ``n[t]`` workers whose ring runs at ``b[t]`` bytes/s (elementwise)."""
        return self._per(self.volume[jobs], b) * ring_fraction(n)

    def time(self, jobs, n, worker_job=None):
        """Communication time of ``jobs[t]`` on ``n[t]`` workers of ``worker_job`` (required here)."""
        if worker_job is None:
            raise ValueError("a topology's communication depends on the workers: pass worker_job")
        S = len(self.volume)
        bw = spans(self.topology, worker_job, S)[2]
        jobs = np.asarray(jobs)
        b = bw[jobs] if bw.ndim == 1 else np.take_along_axis(bw, jobs, axis=1)  # jobs: (R, S') with (R, K)
        return self.at_bandwidth(jobs, n, b)

    def table(self, n_workers):
        """ndarray (S, K + 1): the top level's time of every job on ``0..n_workers`` workers (the flat model)."""
        return self.coef[:, None] * ring_fraction(np.arange(n_workers + 1))[None, :]

    def floor(self, jobs, n):
        """A lower bound of ``jobs[t]``'s communication on any ``n[t]`` workers: ``volume * floor_scale[n]``."""
        return self.volume[jobs] * self.floor_scale[n]


def comm_cost(problem, jobs, n, worker_job=None):
    """``Problem.size_cost[jobs, n]``: the communication time, ``+inf`` for sizes ``0 < n < min_workers``
    and ``n > max_workers`` (arrays of one shape), without the dense table."""
    n = np.asarray(n)
    return _bounded(problem, jobs, n, problem.comm_model.time(jobs, n, worker_job))


def comm_cost_at(problem, jobs, n, b):
    """:func:`comm_cost` of ``jobs[t]`` on ``n[t]`` workers whose ring runs at ``b[t]`` bytes/s (a topology's).

    ``HierarchicalRing.at_bandwidth`` with the size bounds: what a worker set
    whose bottleneck bandwidth (:func:`spans`) is ``b`` costs, without
    building the set (the topology-aware baselines price candidate workers so).
    """
    n = np.asarray(n)
    return _bounded(problem, jobs, n, problem.comm_model.at_bandwidth(jobs, n, b))


def _bounded(problem, jobs, n, comm):
    """``comm`` with ``+inf`` where ``0 < n < min_workers`` or ``n > max_workers``."""
    if not problem._capped.size:  # no job's bounds exclude a size in 1..K: nothing to mark
        return comm
    return np.where((n > problem.max_workers[jobs]) | ((n > 0) & (n < problem.min_workers[jobs])), math.inf, comm)


def job_time(problem, jobs, X, n, table=None, worker_job=None, comm=None):
    """``work / X + comm`` of ``jobs[t]`` with summed throughput ``X[t]`` on ``n[t]`` workers (elementwise).

    The job's time without its restart loss: the one place the Python side
    writes it.  ``table`` is ``Problem.size_cost`` when the caller holds it (a
    look-up instead of :func:`comm_cost`; the same bits); ``worker_job`` is
    passed on to the communication model; ``comm``, when given, is
    :func:`comm_cost` already computed for these jobs.
    """
    if comm is None:
        comm = table[jobs, n] if table is not None else comm_cost(problem, jobs, n, worker_job)
    return problem.work[jobs] / X + comm


def aggregate(problem, worker_job):
    """``(X, n)`` of every row of ``worker_job`` ((R, K) int64, or (K,)): each job's summed throughput and size.

    Shapes (R, S) (or (S,)); summed over workers in index order (the order of the kernels).
    """
    S = problem.n_jobs
    if np.ndim(worker_job) == 1:
        ks = np.flatnonzero(worker_job >= 0)
        js = worker_job[ks]
        return np.bincount(js, weights=problem._rate(js, ks), minlength=S), np.bincount(js, minlength=S)
    R = worker_job.shape[0]
    rows, ks = np.nonzero(worker_job >= 0)
    js = worker_job[rows, ks]
    cell = rows * S + js
    X = np.bincount(cell, weights=problem._rate(js, ks), minlength=R * S).reshape(R, S)
    n = np.bincount(cell, minlength=R * S).reshape(R, S)
    return X, n


def restarted(problem, worker_job):
    """Bool, the shape of :func:`aggregate`'s: running jobs whose worker set differs from ``problem.current``.

    A worker whose job changes restarts both its old and its new job; new jobs never restart.
    """
    if not problem.replacing:
        return np.zeros(np.shape(worker_job)[:-1] + (problem.n_jobs,), dtype=bool)
    wj = np.atleast_2d(worker_job)
    out = np.zeros((wj.shape[0], problem.n_jobs), dtype=bool)
    cur = problem.current
    moved = wj != cur
    rows, ks = np.nonzero(moved & (cur >= 0))
    out[rows, cur[ks]] = True
    rows, ks = np.nonzero(moved & (wj >= 0))
    out[rows, wj[rows, ks]] = True
    out &= problem.running
    return out[0] if np.ndim(worker_job) == 1 else out


class Priced(NamedTuple):
    """What :func:`price` returns; per-job fields have shape (R, S) (or (S,) for one assignment)."""

    #: summed throughput ``X_i`` and size ``n_i``
    X: np.ndarray
    n: np.ndarray
    #: ``work_i / X_i`` (inf for a job without worker) and communication (inf outside the size bounds)
    compute: np.ndarray
    comm: np.ndarray
    #: the job's time without restart loss, ``compute + comm``
    time: np.ndarray
    restarted: np.ndarray
    #: ``restart_cost`` where restarted, else 0
    restart_loss: np.ndarray
    #: ``time + restart_loss``
    jct: np.ndarray
    #: (R,) (or a float): ``sum(time) + sum of the restart losses`` (the kernels' total), inf when
    #: a job has no worker; None when not asked for
    total: "np.ndarray | float"


def price(problem, worker_job, totals=True, aggregated=None):
    """Price assignments: per-job times, restart losses and totals (docs/model.md §1.2-1.4).

    Parameters
    ----------
    problem : Problem
    worker_job : ndarray of int64, shape (R, K) or (K,)
        Job of every worker, -1 idle; trusted (indices in range).  A job may
        have no worker (its time and the row's total are then inf).
    totals : bool, default True
        False leaves ``total`` None (a caller that needs the per-job fields only).
    aggregated : tuple, optional
        ``aggregate(problem, worker_job)`` when the caller has it already.

    Returns
    -------
    Priced
    """
    S = problem.n_jobs
    X, n = aggregate(problem, worker_job) if aggregated is None else aggregated
    jobs = np.arange(S) if n.ndim == 1 else np.broadcast_to(np.arange(S), n.shape)
    comm = comm_cost(problem, jobs, n, worker_job)
    with np.errstate(divide="ignore"):  # a job without worker: inf
        compute = problem.work / X
        time = job_time(problem, jobs, X, n, comm=comm)
    rs = restarted(problem, worker_job)
    loss = np.where(rs, problem.restart_cost, 0.0) if problem.replacing else np.zeros(n.shape)
    total = None
    if totals:
        rows = (time,) if n.ndim == 1 else time
        total = np.empty(len(rows))
        for r, row in enumerate(rows):
            sizes, restarts = (n, rs) if n.ndim == 1 else (n[r], rs[r])
            total[r] = np.inf if (sizes == 0).any() else float(np.sum(row))
            if problem.replacing and np.isfinite(total[r]):
                total[r] += float(problem.restart_cost[restarts].sum())
        if n.ndim == 1:
            total = float(total[0])
    return Priced(X, n, compute, comm, time, rs, loss, time + loss, total)
