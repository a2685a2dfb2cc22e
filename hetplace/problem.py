"""The placement problem (docs/model.md §1): inputs and derived quantities.

Every input is validated by :func:`hetplace._problem_iv._problem_iv`; this module stores
what it returns and derives the tables from it.
"""

import math
import numbers
from collections.abc import Mapping

import numpy as np

# MAX_WORKERS, MAX_TABLE_CELLS and min_worker_flow keep their home here for callers (baselines, io, bench)
from ._cost import HierarchicalRing, RingAllReduce, Topology, _frozen, comm_cost, job_time
from ._problem_iv import (  # noqa: F401
    _topology_iv,
    MAX_TABLE_CELLS, MAX_WORKERS, _compact, _problem_iv, _weight_iv, min_worker_flow,
)
from ._quota import quota_iv
from ._validation import is_real_scalar
from .errors import InvalidProblemError

__all__ = ["Problem", "MAX_WORKERS", "MAX_TABLE_CELLS"]

#: Keys of :meth:`Problem.to_dict` (the parameters of :class:`Problem`).
_REQUIRED_KEYS = ("throughput", "type_counts", "batch", "iterations")
_OPTIONAL_KEYS = ("grad_bytes", "bandwidth", "worker_speed", "job_names", "type_names",
                  "min_workers", "max_workers", "available", "current", "restart_time", "weight",
                  "node", "node_bandwidth", "rack", "rack_bandwidth", "tenant", "quota")


def _index_arg(name, value, lo, hi, what):
    """``value`` as an int in [lo, hi]; bools, floats and strings are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
        raise InvalidProblemError(f"{name} must be {what}, an integer in [{lo}, {hi}]; got {value!r}.")
    return int(value)


class Problem:
    """A multi-job placement problem on a heterogeneous cluster (docs/model.md §1.1).

    Parameters
    ----------
    throughput : array_like of float, shape (S, G)
        Samples/s of job ``i`` on ONE worker of type ``g``; 0 means job ``i``
        cannot run on type ``g``.
    type_counts : array_like of int, shape (G,)
        Number of workers of each type.  Workers are numbered type by type:
        workers ``0 .. type_counts[0]-1`` are of type 0, and so on.
    batch : array_like of int, shape (S,)
        Global batch of each job (samples per iteration), a positive integer.
    iterations : array_like of float, shape (S,)
        Iterations each job still has to run (> 0).
    grad_bytes : array_like of float, shape (S,), optional
        Gradient size exchanged per iteration (bytes, >= 0).  Default 0.
    bandwidth : float, optional
        Network bandwidth per worker link in bytes/s (> 0).  ``inf`` (default)
        switches communication off.
    worker_speed : array_like of float, shape (K,), optional
        Fraction of each worker's nominal speed that is available, in (0, 1].
        Default: all 1 (dedicated workers).
    job_names, type_names : sequence of str, optional
        Labels used in tables and files.
    min_workers : int or array_like of int, shape (S,), optional
        Fewest workers each job may get (>= 1; a scalar applies to every
        job).  Default 1.
    max_workers : int or array_like of int, shape (S,), optional
        Most workers each job may get (>= 1).  Default K.  The bound in force
        is ``min(max_workers, batch, K)``; ``min_workers == max_workers``
        makes a rigid job (exactly that many workers).
    available : array_like of bool, shape (K,), optional
        False for a worker that is down (failed or draining): it gets no job,
        while the numbering of the workers stays as it is.  Default: all
        True.  At least one worker must be available, and the available
        ones must still give every job its ``min_workers``.
    current : array_like of int, shape (K,), optional
        The running placement: job index of every worker, -1 for none
        (docs/model.md §1.4).  A job with no worker in ``current`` is new; one
        with workers is running.  A running job's current workers must be of
        types it can run on; some may be down (then it cannot keep them).
        Default: no job is running.
    restart_time : float or array_like of float, shape (S,), optional
        Seconds a running job loses (checkpoint, restart, warm-up) when its
        worker set changes in any way: other workers, more or fewer.  ``>= 0``
        (a scalar applies to every job); ignored for new jobs.  Default 0.
        The objective becomes the mean over jobs of
        ``JCT_i + restart_time_i * restarted_i``.
    weight : array_like of float, shape (S,), optional
        Positive, finite priority of each job (docs/model.md §1.5).  The
        objective becomes the weighted mean ``sum_i w_i JCT_i / sum_i w_i``
        (each ``JCT_i`` with its restart loss).  Default None: the plain
        mean, bit for bit as without weights.
    tenant : array_like of int, shape (S,), optional
        Tenant index of each job, ``-1`` for a job of no tenant (docs/model.md
        §1.7).  Default None: no tenants.
    quota : array_like of float, shape (n_tenants, G), optional
        ``quota[t, g]``: most workers of type ``g`` the jobs of tenant ``t``
        hold together; a whole number ``>= 0`` or ``inf`` (no limit).  Needs
        ``tenant``; ``tenant`` without ``quota`` sets no limit.  Every method
        honours it (or refuses clearly); the objective is unchanged.

    Attributes
    ----------
    n_jobs, n_types, n_workers : int
        S, G and K = sum(type_counts).
    worker_type : ndarray of int64, shape (K,)
        Type index of every worker.
    worker_throughput : ndarray of float64, shape (S, K)
        ``rho[i, k] = throughput[i, worker_type[k]] * worker_speed[k]``, and 0
        for every job on a down worker.  Built on first use, like ``comm_time``
        and ``size_cost`` (each at most :data:`MAX_TABLE_CELLS` cells): the
        solvers work on the per-type ``throughput``, the worker classes and
        ``size_cost_spec``, so a 100,000-worker problem never builds them.
    available : ndarray of bool, shape (K,)
        The parameter (all True by default).
    n_available : int
        Number of available workers.
    available_counts : ndarray of int64, shape (G,)
        Available workers of each type (``type_counts`` when none is down).
    class_speed : ndarray of float64, shape (K,)
        ``worker_speed``, with 0 for a down worker: the key of the worker
        classes, so workers of one type and one ``class_speed`` have the same
        throughput column and a down worker never shares a class with an up one.
    work : ndarray of float64, shape (S,)
        ``w_i = iterations[i] * batch[i]`` (samples still to process).
    comm_model : hetplace._cost.RingAllReduce
        The communication model: a ring all-reduce over ``bandwidth`` (private
        module :mod:`hetplace._cost`, the one home of the job cost).
    comm_coef : ndarray of float64, shape (S,)
        ``T_i * D_i / r``: job ``i``'s communication time is ``comm_coef[i] * 2 (n-1)/n``
        on ``n >= 2`` workers (0 when ``bandwidth`` is inf); ``comm_model.coef``.
    comm_time : ndarray of float64, shape (S, K + 1)
        ``comm_time[i, n]``: total communication time of job ``i`` run on ``n``
        workers, ``T_i * 2 (n-1)/n * D_i / r`` (0 for ``n <= 1``).  Built on first use.
    min_workers : ndarray of int64, shape (S,)
        Fewest workers job ``i`` may get (the parameter; all 1 by default).
    max_workers : ndarray of int64, shape (S,)
        Most workers job ``i`` can use: ``min(max_workers, batch[i], K)``.  Its
        batch is split into whole samples, so a worker beyond ``batch[i]`` would
        get none and do no work; every method keeps
        ``min_workers[i] <= n_i <= max_workers[i]``.
    size_cost : ndarray of float64, shape (S, K + 1)
        ``comm_time`` with ``+inf`` for sizes ``0 < n < min_workers[i]`` and
        ``n > max_workers[i]``: the cost table the kernels use, so a size
        outside the bounds is never chosen (``size_cost is comm_time`` when no
        size is excluded).  Built on first use.
    size_cost_spec : ndarray of float64, shape (S, 3)
        ``[comm_coef, -min_workers, max_workers]`` per job: ``size_cost`` in
        O(S), the form the compiled kernels take (``hetplace._core._polish.job_cost``
        gives the same bits as the table; the negated minimum tells the two apart).
    current : ndarray of int64, shape (K,)
        The parameter (all -1 by default).
    running : ndarray of bool, shape (S,)
        True for a job with a worker in ``current``.
    restart_cost : ndarray of float64, shape (S,)
        ``restart_time`` for running jobs, 0 for new ones: what a job pays when
        its worker set differs from ``current``.
    can_keep : ndarray of bool, shape (S,)
        True for a running job that may keep exactly its current workers: all
        of them available and their number within its size bounds.
    replacing : bool
        True when some job is running (a re-placement, docs/model.md §1.4).
    weight : ndarray of float64, shape (S,), or None
        The parameter.  Every other attribute keeps its unweighted meaning
        (``work``, ``comm_coef``, ``restart_cost``, ``jct_alone``: each job's
        own); the methods optimise the weighted objective by solving
        ``objective_problem``.
    objective_problem : Problem
        ``self`` without weights; with weights, the unweighted problem whose
        mean JCT is the weighted objective times ``sum(v) / S``: iterations
        and restart times scaled by ``v = weight / max(weight)``, so work,
        communication and restart loss all scale by ``v_i``.  The one place
        the weights enter the optimisation (docs/model.md §1.5).
    objective_scale : float
        ``S / sum(v)`` (1.0 without weights): ``objective_problem``'s mean JCT
        times this is the weighted objective of the same placement.
    tenant, quota : ndarray or None
        The parameters (``quota`` float64 with ``inf``), None without tenants.
    n_tenants : int
        Rows of ``quota`` (0 without tenants).
    quota_cap : ndarray of int64, shape (n_tenants, G), or None
        ``min(quota, available_counts)``: the quota as a finite count.
    has_quota : bool
        True when some quota binds: below the available workers of a type
        that one of the tenant's jobs can run on.  Methods that cannot honour
        quotas refuse only then.
    uniform_speed : bool
        True when every worker speed is 1 and every worker is available, so
        workers of one type are interchangeable.  The type DP also runs when
        only the available workers all have speed 1 (on ``available_counts``).

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        With a message naming the parameter, the value and the fix; also for
        bounds no placement can meet (a minimum above the maximum in force,
        minima summing above K, or jobs whose allowed types hold fewer
        workers than their minima).

    Notes
    -----
    Model of K. Liu et al., *Sampling-Based Multi-Job Placement for
    Heterogeneous Deep Learning Clusters*, IEEE TPDS 35(6), 2024.
    Instances are immutable: arrays are read-only.
    """

    def __init__(
        self,
        throughput: "np.typing.ArrayLike",
        type_counts: "np.typing.ArrayLike",
        batch: "np.typing.ArrayLike",
        iterations: "np.typing.ArrayLike",
        grad_bytes: "np.typing.ArrayLike | None" = None,
        bandwidth: float = math.inf,
        worker_speed: "np.typing.ArrayLike | None" = None,
        job_names: "list[str] | None" = None,
        type_names: "list[str] | None" = None,
        min_workers: "np.typing.ArrayLike | None" = None,
        max_workers: "np.typing.ArrayLike | None" = None,
        available: "np.typing.ArrayLike | None" = None,
        current: "np.typing.ArrayLike | None" = None,
        restart_time: "np.typing.ArrayLike | None" = None,
        weight: "np.typing.ArrayLike | None" = None,
        node: "np.typing.ArrayLike | None" = None,
        node_bandwidth: "float | np.typing.ArrayLike | None" = None,
        rack: "np.typing.ArrayLike | None" = None,
        rack_bandwidth: "float | np.typing.ArrayLike | None" = None,
        tenant: "np.typing.ArrayLike | None" = None,
        quota: "np.typing.ArrayLike | None" = None,
    ) -> None:
        iv = _problem_iv(throughput, type_counts, batch, iterations, grad_bytes, bandwidth, worker_speed,
                         job_names, type_names, min_workers, max_workers, available, current, restart_time)
        topo = _topology_iv(node, node_bandwidth, rack, rack_bandwidth, len(iv.worker_type))
        self._init(iv, topo, weight, tenant, quota, True)

    @classmethod
    def _trusted(cls, iv, topo=None, weight=None, tenant=None, quota=None):
        """A Problem of inputs already validated and normalised (``iv`` as :func:`_problem_iv` returns them,
        ``topo`` as :func:`_topology_iv`): what :class:`hetplace.Session` builds each decision.

        The caller vouches for every check :func:`_problem_iv` makes, including that every job's
        minimum fits within the available workers and the quotas; ``tests/test_session.py``
        holds such a Problem equal to one built through the constructor.
        """
        self = cls.__new__(cls)
        self._init(iv, topo, weight, tenant, quota, False)
        return self

    def _init(self, iv, topo, weight, tenant, quota, check):
        rho, iters, grad, speed, avail = iv.throughput, iv.iterations, iv.grad_bytes, iv.worker_speed, iv.available
        (S, G), K = rho.shape, len(iv.worker_type)
        self.throughput = _frozen(rho)
        self.type_counts = _frozen(iv.type_counts)
        self.batch = _frozen(iv.batch)
        self.iterations = _frozen(iters)
        self.grad_bytes = _frozen(grad)
        self.bandwidth = iv.bandwidth
        self.worker_speed = _frozen(speed)
        self.job_names = iv.job_names
        self.type_names = iv.type_names

        self.n_jobs, self.n_types, self.n_workers = S, G, K
        self.worker_type = _frozen(iv.worker_type)
        self.available = _frozen(avail)
        self.n_available = int(avail.sum())
        self.available_counts = _frozen(iv.available_counts)
        if self.n_available < K:
            self.class_speed = _frozen(np.where(avail, speed, 0.0))  # a down worker runs no job
        else:
            self.class_speed = self.worker_speed
        self.work = _frozen(iters * iv.batch)
        self.uniform_speed = bool((speed == 1.0).all()) and self.n_available == K
        if topo is None:
            self.topology = None
            self.comm_model = RingAllReduce(iters, grad, iv.bandwidth)
        else:
            self.topology = Topology(topo.node, topo.node_bandwidth, topo.rack, topo.rack_bandwidth, iv.bandwidth)
            self.comm_model = HierarchicalRing(iters, grad, self.topology)
        coef = self.comm_coef = self.comm_model.coef
        # 2 (n-1)/n >= 1 for n >= 2, so a positive coefficient is positive communication
        self.has_communication = bool(K >= 2 and (coef > 0).any())
        if topo is not None:  # any finite link can carry a ring
            self.has_communication = bool(K >= 2 and (self.comm_model.floor_scale > 0).any()
                                          and (self.comm_model.volume > 0).any())
        lo, hi = iv.min_workers, iv.max_workers
        self.min_workers = _frozen(lo)
        self.max_workers = _frozen(hi)
        spec = np.empty((S, 3))  # one allocation: the same array as np.stack of the three columns
        spec[:, 0], spec[:, 1], spec[:, 2] = coef, -lo, hi
        self.size_cost_spec = _frozen(spec)
        self._capped = _frozen(np.flatnonzero((hi < K) | (lo > 1)))
        self._tables = {}
        self._classes = None
        self._class_rates_mc = None
        self._set_quota(tenant, quota, iv, check)
        self._set_restart(iv.current, iv.restart_time)
        self._jct_alone = None
        self._set_weight(weight, iv)

    def _set_quota(self, tenant, quota, iv, check=True):
        """Set ``tenant``, ``quota``, ``n_tenants``, ``quota_cap`` and ``has_quota`` (docs/model.md §1.7)."""
        t, q = quota_iv(tenant, quota, iv.throughput, iv.available_counts, iv.min_workers, iv.job_names,
                        iv.type_names, check)
        self.tenant = None if t is None else _frozen(t)
        self.quota = None if q is None else _frozen(q)
        self.n_tenants = 0 if q is None else q.shape[0]
        self.has_quota = False
        self.quota_cap = None
        if q is not None:
            up = iv.available_counts
            self.quota_cap = _frozen(np.minimum(q, up[None, :].astype(np.float64)).astype(np.int64))
            # a quota binds when it is below what the tenant's jobs could otherwise take of the type
            for tt in np.unique(t[t >= 0]):
                can = (iv.throughput[t == tt] > 0).any(axis=0) & (up > 0)
                if (self.quota_cap[tt][can] < up[can]).any():
                    self.has_quota = True
                    break

    def _set_weight(self, weight, iv):
        """Set ``weight``, ``objective_problem`` and ``objective_scale`` (docs/model.md §1.5)."""
        self.weight, self._objective, self.objective_scale = None, None, 1.0
        if weight is None:
            return
        w = _weight_iv(weight, self.n_jobs, self.job_names)
        v = w / w.max()  # in (0, 1]: the scaled problem's numbers never grow
        try:
            twin = Problem(
                self.throughput, self.type_counts, self.batch, self.iterations * v, self.grad_bytes,
                self.bandwidth, self.worker_speed, self.job_names, self.type_names,
                min_workers=self.min_workers, max_workers=self.max_workers, available=self.available,
                current=self.current if self.replacing else None,
                restart_time=self.restart_time * v if self.replacing else None,
                **self._topology_dict(), **self._quota_dict(),
            )
        except InvalidProblemError as exc:
            raise InvalidProblemError(
                f"weight = {w.tolist()!r} spans too wide a range: the weighted work or restart times "
                f"leave the supported range ({exc}). Give weights within a factor of about 1e100 of each other."
            ) from None
        self.weight = _frozen(w)
        self._objective = twin
        self.objective_scale = float(self.n_jobs / v.sum())

    @property
    def objective_problem(self):
        """The unweighted problem the methods solve: ``self`` without weights (docs/model.md §1.5)."""
        return self if self._objective is None else self._objective

    def __setstate__(self, state):
        """Restore a pickled or copied Problem with every array read-only again.

        ``pickle`` and ``copy.deepcopy`` rebuild numpy arrays writable; the
        attributes, the cached tables and the worker classes are frozen here
        as the constructor froze them (``copy.copy`` shares the frozen arrays).
        """
        state = dict(state)
        state["_tables"] = {name: _frozen(arr) for name, arr in state.get("_tables", {}).items()}
        for name, value in state.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
            elif isinstance(value, tuple) and value and all(isinstance(v, np.ndarray) for v in value):
                for v in value:  # the worker classes
                    v.setflags(write=False)
        self.__dict__.update(state)
        for name, default in (("weight", None), ("_objective", None), ("objective_scale", 1.0), ("topology", None),
                              ("_class_rates_mc", None), ("tenant", None), ("quota", None), ("n_tenants", 0),
                              ("quota_cap", None), ("has_quota", False)):
            self.__dict__.setdefault(name, default)  # a Problem pickled before job weights

    def _set_restart(self, cur, rt):
        """Set ``current``, ``running``, ``restart_time``, ``restart_cost``, ``can_keep`` and ``replacing``."""
        busy = cur >= 0
        if not busy.any():  # nothing runs: the common first decision, without the bookkeeping below
            self.current = _frozen(cur)
            self.running = self.can_keep = _frozen(np.zeros(self.n_jobs, dtype=bool))
            self.restart_time = _frozen(rt)
            self.restart_cost = _frozen(np.zeros(self.n_jobs))
            self.replacing = False
            return
        held = np.bincount(cur[busy], minlength=self.n_jobs)
        running = held > 0
        lost = np.zeros(self.n_jobs, dtype=bool)  # a running job with a current worker that is down
        if self.n_available < self.n_workers:
            np.logical_or.at(lost, cur[busy & ~self.available], True)
        keep = running & ~lost & (held >= self.min_workers) & (held <= self.max_workers)
        self.current = _frozen(cur)
        self.running = _frozen(running)
        self.restart_time = _frozen(rt)
        self.restart_cost = _frozen(np.where(running, rt, 0.0))
        self.can_keep = _frozen(keep)
        self.replacing = bool(running.any())

    # ------------------------------------------------------------- dense tables (on request)
    def _table(self, name, build):
        """The dense table ``name``, built by ``build()`` on first use and kept (read-only)."""
        out = self._tables.get(name)
        if out is None:
            cells = self.n_jobs * (self.n_workers + 1)
            if cells > MAX_TABLE_CELLS:
                raise InvalidProblemError(
                    f"Problem.{name} is a dense table of {cells:,} cells for {self.n_jobs} jobs on "
                    f"{self.n_workers} workers; at most {MAX_TABLE_CELLS:,} are supported (4 GiB). "
                    "method='smp' works on worker classes and needs no dense table; for other methods place "
                    "the jobs in several rounds or split the cluster."
                )
            out = self._tables[name] = _frozen(build())
        return out

    @property
    def worker_throughput(self):
        """ndarray (S, K): ``throughput[i, worker_type[k]] * worker_speed[k]``, 0 on a down worker.

        Built on first use (S K cells); the solvers work on worker classes and
        :meth:`_rate` instead.
        """
        def build():
            return self.throughput[:, self.worker_type] * self.class_speed[None, :]
        return self._table("worker_throughput", build)

    @property
    def comm_time(self):
        """ndarray (S, K + 1): ``comm_time[i, n] = comm_coef[i] * 2 (n-1)/n`` (0 for ``n <= 1``); built on first use."""
        def build():
            return self.comm_model.table(self.n_workers)
        return self._table("comm_time", build)

    @property
    def size_cost(self):
        """ndarray (S, K + 1): ``comm_time`` with ``+inf`` outside each job's size bounds; built on first use.

        The same values as :meth:`_cost`; ``size_cost is comm_time`` when no size is excluded.
        """
        if not self._capped.size:
            return self.comm_time

        def build():
            cost = self.comm_time.copy()
            lo, hi = self.min_workers, self.max_workers
            for i in self._capped:  # row by row: no (S, K + 1) temporary
                cost[i, 1:lo[i]] = math.inf
                cost[i, hi[i] + 1:] = math.inf
            return cost
        return self._table("size_cost", build)

    @property
    def worker_classes(self):
        """The worker classes (docs/model.md §2.2), computed once: ``(members, starts, class_of)``.

        Workers of one type and one ``class_speed`` have the same throughput
        column; a down worker (speed 0) is never in a class with an up one.
        Classes are ordered by type, then speed (ascending); class ``c`` is
        ``members[starts[c]:starts[c + 1]]`` in ascending worker index, and
        ``class_of[k]`` is worker k's class.  Every method groups workers this
        way (SMP, the MILP, the baselines, ``jct_alone``), each in the order it
        needs.
        """
        if self._classes is None:
            t, sp, K = self.worker_type, self.class_speed, self.n_workers
            members = np.lexsort((sp, t)).astype(np.int64)  # stable: ascending index within a class
            ts, ss = t[members], sp[members]
            new = np.ones(K, dtype=bool)
            new[1:] = (ts[1:] != ts[:-1]) | (ss[1:] != ss[:-1])
            starts = np.append(np.flatnonzero(new), K).astype(np.int64)
            class_of = np.empty(K, dtype=np.int64)
            class_of[members] = np.cumsum(new) - 1
            self._classes = (_frozen(members), _frozen(starts), _frozen(class_of))
        return self._classes

    @property
    def _class_table(self):
        """``(rhoC, mc)`` of :attr:`worker_classes`: every job's samples/s on one worker of each class
        ((S, C), C-contiguous) and the workers of each class ((C,)); computed once, read-only."""
        if self._class_rates_mc is None:
            members, starts, _ = self.worker_classes
            self._class_rates_mc = (_frozen(np.ascontiguousarray(self._class_rates(members[starts[:-1]]))),
                                _frozen(np.diff(starts)))
        return self._class_rates_mc

    def _class_rates(self, workers, rows=slice(None)):
        """(jobs, len(workers)): the ``rows`` jobs' samples/s on each of ``workers``: ``worker_throughput[rows][:, workers]``."""
        return self.throughput[rows, self.worker_type[workers]] * self.class_speed[workers][None, :]

    def _rate(self, jobs, workers):
        """Samples/s of ``jobs[t]`` on ``workers[t]`` (arrays of one shape): ``worker_throughput[jobs, workers]``."""
        return self.throughput[jobs, self.worker_type[workers]] * self.class_speed[workers]

    def _comm(self, jobs, n):
        """``comm_time[jobs, n]`` (arrays of one shape) without the table."""
        return self.comm_model.time(jobs, n)

    def _cost(self, jobs, n):
        """``size_cost[jobs, n]`` (arrays of one shape) without the table (:func:`hetplace._cost.comm_cost`)."""
        return comm_cost(self, jobs, n)

    # ------------------------------------------------------------- quantities
    @property
    def jct_alone(self):
        """ndarray (S,): each job's best JCT with the whole cluster to itself (docs/model.md §1.3)."""
        if self._jct_alone is None and self.topology is not None:
            self._jct_alone = _frozen(self._jct_alone_topology())
        if self._jct_alone is None:
            # Workers of one type and speed are interchangeable, so each job's throughputs
            # sorted fastest first are its class values, sorted, each repeated by the class
            # size: the same array as sorting all K of them, in O(C log C + K) per job.
            # Sizes above max_workers cost inf and are never the best.
            members, starts, _ = self.worker_classes
            sizes = np.diff(starts)
            values = self._class_rates(members[starts[:-1]])
            out = np.empty(self.n_jobs)
            for i in range(self.n_jobs):
                order = np.argsort(-values[i], kind="stable")
                v, m = values[i, order], sizes[order]
                r = np.repeat(v[v > 0], m[v > 0])[: self.max_workers[i]]
                X = np.cumsum(r)
                n = np.arange(1, r.size + 1)
                jct = job_time(self, np.full(n.size, i), X, n)
                out[i] = jct.min()
            self._jct_alone = _frozen(out)
        return self._jct_alone

    def _jct_alone_topology(self):
        """``jct_alone`` with a topology: the best over every domain (node, rack, cluster) of its best size.

        Inside a domain the job takes its fastest workers there, and its ring
        runs at least at that domain's bandwidth (a smaller domain is another
        candidate), so the best over domains is the job's best JCT alone.
        Domains work on worker classes (type and speed): one with the same
        bandwidth and class counts as another is priced once.
        """
        topo = self.topology
        members, starts, class_of = self.worker_classes
        C = starts.size - 1
        values = self._class_rates(members[starts[:-1]])  # (S, C)
        up = self.available
        domains = {(topo.bandwidth, np.bincount(class_of[up], minlength=C).tobytes())}
        levels = [(topo.node, topo.node_bandwidth, topo.n_nodes)]
        if topo.rack is not None:
            levels.append((topo.rack[topo.node], topo.rack_bandwidth, topo.n_racks))
        for ids, bws, count in levels:
            counts = np.zeros((count, C), dtype=np.int64)
            np.add.at(counts, (ids[up], class_of[up]), 1)
            for d in np.flatnonzero(counts.any(axis=1)):
                domains.add((float(bws[d]), counts[d].tobytes()))
        out = np.full(self.n_jobs, np.inf)
        for b, raw in sorted(domains):
            m = np.frombuffer(raw, dtype=np.int64)
            for i in range(self.n_jobs):
                order = np.argsort(-values[i], kind="stable")
                v, cnt = values[i, order], m[order]
                keep = (v > 0) & (cnt > 0)
                r = np.repeat(v[keep], cnt[keep])[: self.max_workers[i]]
                if r.size < self.min_workers[i]:
                    continue
                n = np.arange(1, r.size + 1)
                jobs = np.full(n.size, i)
                comm = self.comm_model.at_bandwidth(jobs, n, np.full(n.size, b))
                comm[n < self.min_workers[i]] = math.inf
                out[i] = min(out[i], float(job_time(self, jobs, np.cumsum(r), n, comm=comm).min()))
        return out

    def job_jct(self, job, throughput_sum, n_workers):
        """JCT of ``job`` given its aggregate throughput and number of workers.

        Parameters
        ----------
        job : int
            Job index, ``0 <= job < n_jobs``.
        throughput_sum : float
            Summed samples/s of its workers, > 0 and finite.
        n_workers : int
            Its number of workers, ``min_workers[job] <= n_workers <= max_workers[job]``.

        Returns
        -------
        float
            ``work[job] / throughput_sum + comm_time[job, n_workers]``.

        Raises
        ------
        InvalidProblemError
            An index, throughput or size outside those ranges (a bool, a float
            index or a string too).
        """
        if self.topology is not None:
            raise InvalidProblemError(
                "job_jct prices a job by its size alone, but this problem has a network topology (node=...): "
                "its communication depends on which nodes the workers are in. Price a placement with "
                "hetplace.evaluate(problem, worker_job) instead."
            )
        job = _index_arg("job", job, 0, self.n_jobs - 1, "a job index")
        n = _index_arg("n_workers", n_workers, int(self.min_workers[job]), int(self.max_workers[job]),
                       f"a number of workers job {job} can use (its min_workers..max_workers)")
        if not is_real_scalar(throughput_sum) or not (0 < float(throughput_sum) < math.inf):
            raise InvalidProblemError(
                f"throughput_sum must be a positive, finite number of samples/s; got {throughput_sum!r}."
            )
        return float(job_time(self, job, float(throughput_sum), n))

    def with_worker_speed(self, worker_speed):
        """A copy of this problem with other per-worker speeds."""
        return Problem(
            self.throughput, self.type_counts, self.batch, self.iterations, self.grad_bytes,
            self.bandwidth, worker_speed, self.job_names, self.type_names,
            **self._bounds_dict(), **self._available_dict(), **self._restart_dict(), **self._weight_dict(),
            **self._topology_dict(), **self._quota_dict(),
        )

    def _topology_dict(self):
        """``node``, ``node_bandwidth`` (and ``rack``, ``rack_bandwidth``) as Problem arguments, or ``{}``."""
        return {} if self.topology is None else self.topology.args()

    def _quota_dict(self, jobs=None):
        """``tenant`` and ``quota`` as Problem arguments (of ``jobs`` only, when given), or ``{}``."""
        if self.tenant is None:
            return {}
        t = self.tenant if jobs is None else self.tenant[jobs]
        return {"tenant": t.tolist(), "quota": self.quota.tolist()}

    def _weight_dict(self):
        """``{"weight": [...]}`` when the problem is weighted, else ``{}``."""
        return {} if self.weight is None else {"weight": self.weight.tolist()}

    def _restrict(self, jobs, workers, quota=None):
        """The problem of ``jobs`` alone on ``workers`` (ascending indices), none of them running.

        With tenants, the sub-problem's quota is ``quota`` when given (the room
        the other jobs leave), else this problem's.
        Worker ``t`` of the result is ``workers[t]`` here (numbering by type
        is kept: workers are numbered type by type).  Raises
        :class:`InvalidProblemError` when those workers cannot hold those jobs.
        """
        jobs, workers = np.asarray(jobs, dtype=np.int64), np.asarray(workers, dtype=np.int64)
        return Problem(
            self.throughput[jobs], np.bincount(self.worker_type[workers], minlength=self.n_types),
            self.batch[jobs], self.iterations[jobs], self.grad_bytes[jobs], self.bandwidth,
            self.worker_speed[workers], [self.job_names[j] for j in jobs], self.type_names,
            min_workers=self.min_workers[jobs], max_workers=self.max_workers[jobs],
            available=self.available[workers] if self.n_available < self.n_workers else None,
            **(self.topology.restrict(workers).args() if self.topology is not None else {}),
            **({} if self.tenant is None else {"tenant": self.tenant[jobs].tolist(),
                                                "quota": (self.quota if quota is None else quota).tolist()}),
        )

    def _restart_dict(self):
        """``current`` and ``restart_time`` as Problem arguments when some job is running, else ``{}``."""
        if not self.replacing:
            return {}
        return {"current": self.current.tolist(), "restart_time": self.restart_time.tolist()}

    def _available_dict(self):
        """``{"available": [...]}`` when some worker is down, else ``{}``."""
        return {} if self.n_available == self.n_workers else {"available": self.available.tolist()}

    def _bounds_dict(self):
        """The size bounds as Problem arguments, only those that differ from the defaults."""
        out = {}
        if (self.min_workers > 1).any():
            out["min_workers"] = self.min_workers.tolist()
        if (self.max_workers < np.minimum(self.batch, self.n_workers)).any():
            out["max_workers"] = self.max_workers.tolist()
        return out

    @property
    def bounded(self):
        """bool: True when ``min_workers`` or ``max_workers`` was given and binds some job."""
        return bool(self._bounds_dict())

    def to_dict(self):
        """Plain-Python description (JSON-serialisable)."""
        return {
            "throughput": self.throughput.tolist(),
            "type_counts": self.type_counts.tolist(),
            "batch": self.batch.tolist(),
            "iterations": self.iterations.tolist(),
            "grad_bytes": self.grad_bytes.tolist(),
            "bandwidth": self.bandwidth if math.isfinite(self.bandwidth) else "inf",
            "worker_speed": None if self.uniform_speed else self.worker_speed.tolist(),
            "job_names": list(self.job_names),
            "type_names": list(self.type_names),
            **self._bounds_dict(),
            **self._available_dict(),
            **self._restart_dict(),
            **self._weight_dict(),
            **({} if self.topology is None else self.topology.to_dict()),
            **({} if self.tenant is None else {
                "tenant": self.tenant.tolist(),
                "quota": [[q if math.isfinite(q) else "inf" for q in row] for row in self.quota.tolist()]}),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        InvalidProblemError
            ``data`` is not a mapping, lacks a required key or has an unknown one.
        """
        if not isinstance(data, Mapping):
            raise InvalidProblemError(
                f"data must be a dict as returned by Problem.to_dict(); got {type(data).__name__}."
            )
        data = dict(data)
        missing = [k for k in _REQUIRED_KEYS if k not in data]
        unknown = sorted(map(str, set(data) - set(_REQUIRED_KEYS) - set(_OPTIONAL_KEYS)))
        if missing or unknown:
            raise InvalidProblemError(
                "data must have the keys of Problem.to_dict(); "
                + (f"missing {', '.join(missing)}" if missing else "")
                + ("; " if missing and unknown else "")
                + (f"unknown {', '.join(unknown)}" if unknown else "")
                + f". Required: {', '.join(_REQUIRED_KEYS)}; optional: {', '.join(_OPTIONAL_KEYS)}."
            )
        if data.get("bandwidth") == "inf":
            data["bandwidth"] = math.inf
        if isinstance(data.get("quota"), list):  # "inf" as to_dict writes it
            data["quota"] = [[math.inf if isinstance(x, str) and x == "inf" else x for x in row]
                             if isinstance(row, list) else row for row in data["quota"]]
        for key in ("node_bandwidth", "rack_bandwidth"):  # "inf" as Topology.to_dict writes it
            v = data.get(key)
            if isinstance(v, str) and v == "inf":
                data[key] = math.inf
            elif isinstance(v, list):
                data[key] = [math.inf if isinstance(x, str) and x == "inf" else x for x in v]
        return cls(**data)

    def __repr__(self):
        comm = "off" if not self.has_communication else f"{self.bandwidth:.3g} B/s"
        speeds = "uniform" if bool(np.all(self.worker_speed == 1.0)) else "per-worker"
        down = self.n_workers - self.n_available
        avail = "" if not down else f", available={self.n_available} ({down} down: {_compact(np.flatnonzero(~self.available))})"
        run = "" if not self.replacing else f", running={int(self.running.sum())}"
        run += "" if self.weight is None else ", weighted"
        run += "" if self.tenant is None else f", tenants={self.n_tenants}" + (", quotas bind" if self.has_quota else "")
        if self.topology is not None:
            t = self.topology
            run += f", nodes={t.n_nodes}" + ("" if t.rack is None else f", racks={t.n_racks}")
        return (
            f"Problem(n_jobs={self.n_jobs}, n_types={self.n_types}, n_workers={self.n_workers}, "
            f"type_counts={_compact(self.type_counts)}, communication={comm}, speeds={speeds}{avail}{run})"
        )
