"""Placements: evaluation of a worker -> job assignment (docs/model.md §1.2-1.3)."""

import math

import numpy as np

from ._quota import quota_violation
from ._validation import as_real_array, is_real_scalar
from .errors import InvalidOptionError, InvalidPlacementError, InvalidProblemTypeError, MissingDependencyError
from ._cost import price, restarted, spans
from .problem import Problem, _compact

__all__ = ["Placement", "evaluate", "is_feasible", "largest_remainder_shares", "restarted_jobs",
           "current_counts", "realise_counts"]


def _json_float(x):
    """``x`` as a float, or the string "inf" (JSON has no infinity)."""
    return float(x) if math.isfinite(x) else "inf"


def _check_problem(problem):
    if not isinstance(problem, Problem):
        raise InvalidProblemTypeError(
            f"problem must be a hetplace.Problem; got {type(problem).__name__}. "
            "Build one with hetplace.Problem(throughput, type_counts, batch, iterations, ...)."
        )


def _worker_job_iv(problem, worker_job):
    """Validate ``worker_job`` against ``problem``; return a C-contiguous int64 copy."""
    return _checked(problem, worker_job)[0]


def _checked(problem, worker_job):
    """:func:`_worker_job_iv`, and what it found on the way: ``(arr, busy, job, rate, sizes)``.

    ``busy`` the busy workers (ascending), ``job = arr[busy]``, ``rate`` their
    samples/s (``Problem._rate``) and ``sizes`` (S,) the workers of each job.
    Each check runs as one vectorised test; the one that fails is then
    looked at again to name the first offender.
    """
    K, S = problem.n_workers, problem.n_jobs
    if isinstance(worker_job, (str, bytes)):
        raise InvalidProblemTypeError(
            f"worker_job must be {K} integers (job index per worker, -1 idle); got a string."
        )
    raw = as_real_array(
        worker_job, "worker_job", what="integer job indices (-1 idle)",
        shape_text=f"{K} integers, one job index per worker", error=InvalidProblemTypeError,
    )
    if raw.ndim != 1 or raw.shape[0] != K:
        raise InvalidPlacementError(
            f"worker_job must have one entry per worker, shape ({K},); got shape {raw.shape}."
        )
    if raw.dtype.kind in "fO":
        # whole numbers only; an object array (ints beyond int64, fractions) is checked exactly
        if raw.dtype.kind == "f":
            whole = np.isfinite(raw) & (raw == np.round(raw))
        else:
            whole = np.array([math.isfinite(v) and v == math.floor(v) for v in raw.tolist()], dtype=bool)
        if not whole.all():
            bad = int(np.flatnonzero(~whole)[0])
            raise InvalidPlacementError(
                f"worker_job must hold integer job indices; got {raw.tolist()[bad]!r} for worker {bad}."
            )
    # range check before the cast: a uint64 or float beyond int64 would wrap to a valid-looking index
    if raw.dtype.kind == "O" or (raw.size and (raw.min() < -1 or raw.max() >= S)):
        out = np.flatnonzero((raw < -1) | (raw >= S))
        if out.size:
            k = int(out[0])
            raise InvalidPlacementError(
                f"worker_job[{k}] = {raw.tolist()[k]!r} is not a job index: use 0..{S - 1}, or -1 for an idle worker."
            )
    arr = np.array(raw, dtype=np.int64, order="C", copy=True)  # never freeze the caller's array
    busy = np.flatnonzero(arr >= 0)
    job = arr[busy]
    sizes = np.bincount(job, minlength=S)
    if ((sizes == 0) | (sizes > problem.max_workers) | (sizes < problem.min_workers)).any():
        _size_error(problem, sizes)
    if problem.n_available < K:
        down = busy[~problem.available[busy]]
        if down.size:
            k = int(down[0])
            raise InvalidPlacementError(
                f"worker {k} is down (available[{k}] is False) but is given job {arr[k]} in worker_job. "
                "A down worker gets no job: set it to -1, or mark it available."
            )
    rate = problem._rate(job, busy)
    if (rate <= 0).any():
        k = int(busy[np.flatnonzero(rate <= 0)[0]])
        raise InvalidPlacementError(
            f"worker {k} (type {problem.type_names[problem.worker_type[k]]}) is given job {arr[k]}, "
            f"which cannot run on that type (throughput 0). Give the worker another job or -1."
        )
    if problem.tenant is not None:
        over = quota_violation(problem, arr)
        if over is not None:
            t, g, used, cap = over
            raise InvalidPlacementError(
                f"tenant {t}'s jobs hold {used} workers of type {problem.type_names[g]} in worker_job, more than "
                f"its quota[{t}, {g}] = {cap:g}. Give {used - int(cap)} of them to jobs of other tenants or -1."
            )
    return arr, busy, job, rate, sizes


def _size_error(problem, sizes):
    """Raise for the first job of ``sizes`` without a worker, above its max_workers or below its min_workers."""
    empty = np.flatnonzero(sizes == 0)
    if empty.size:
        raise InvalidPlacementError(
            f"job {int(empty[0])} gets no worker in worker_job; every job needs at least one."
        )
    over = np.flatnonzero(sizes > problem.max_workers)
    if over.size and problem.max_workers[over[0]] < min(problem.batch[over[0]], problem.n_workers):
        i = int(over[0])
        raise InvalidPlacementError(
            f"job {i} gets {int(sizes[i])} workers in worker_job, more than its max_workers = "
            f"{int(problem.max_workers[i])}. Set the surplus workers to -1 (idle)."
        )
    if over.size:
        i = int(over[0])
        raise InvalidPlacementError(
            f"job {i} gets {int(sizes[i])} workers in worker_job, but its batch of "
            f"{int(problem.batch[i])} samples gives at most {int(problem.max_workers[i])} of them a sample; "
            "the others would do no work. Set the surplus workers to -1 (idle)."
        )
    under = np.flatnonzero(sizes < problem.min_workers)
    i = int(under[0])
    raise InvalidPlacementError(
        f"job {i} gets {int(sizes[i])} workers in worker_job, fewer than its min_workers = "
        f"{int(problem.min_workers[i])}. Give it at least {int(problem.min_workers[i])} workers "
        "(of types it can run on)."
    )


def restarted_jobs(problem: Problem, worker_job: np.ndarray) -> np.ndarray:
    """(S,) bool: running jobs whose worker set in ``worker_job`` differs from ``problem.current``.

    ``worker_job`` is trusted (a validated int64 (K,) array).  A worker whose
    job changes restarts both its old and its new job; new jobs never restart.
    """
    return restarted(problem, worker_job)


def current_counts(problem: Problem, members: "list[np.ndarray]") -> np.ndarray:
    """(S, C) int64: how many workers of ``members[c]`` job ``i`` runs on in ``problem.current``.

    ``members`` is trusted: C disjoint int64 arrays of worker indices, the
    worker classes (or types) a method counts in.  All zeros when no job is
    running.  A job keeps its workers only if this row holds all of them
    (``current_counts(...).sum(axis=1)`` equals its current size, docs/model.md §1.4).
    """
    S, C = problem.n_jobs, len(members)
    out = np.zeros((S, C), dtype=np.int64)
    if problem.replacing:
        cur = problem.current
        for c, m in enumerate(members):
            j = cur[m]
            j = j[j >= 0]
            if j.size:
                out[:, c] = np.bincount(j, minlength=S)
    return out


def realise_counts(problem: Problem, counts: np.ndarray, members: "list[np.ndarray]") -> np.ndarray:
    """Workers for a count matrix: job ``i`` gets ``counts[i, c]`` workers of ``members[c]``.

    Parameters
    ----------
    problem : Problem
    counts : ndarray of int64, shape (S, C)
        Workers of every class for every job; ``counts[:, c].sum() <=
        len(members[c])`` (trusted, not checked).
    members : list of C ndarray of int64
        The workers of each class, in increasing index order (disjoint).  The
        workers of a class must be interchangeable (same type and
        ``problem.class_speed``) for the result to have the JCTs the counts
        stand for.

    Returns
    -------
    worker_job : ndarray of int64, shape (K,)
        Job of every worker, -1 for idle (workers in no class stay idle).

    Notes
    -----
    docs/model.md §1.4.  A job whose row equals its current counts
    (:func:`current_counts`) and whose current workers all lie in the classes
    gets exactly its current workers, so it is not restarted.  Class by
    class, every job first takes its own current workers of the class, as
    many as it needs (lowest index first); the current sets are disjoint, so
    no job takes another's here, and a job whose counts equal its current
    ones is done.  Then the jobs still short take free workers in index order,
    jobs in index order.  So jobs that change also keep as many of their
    workers as they can (fewest physical moves).  Without running jobs this is
    plain index order: job 0 takes the first workers of every class, job 1
    the next, and so on.  The one routine that turns counts into workers for
    the type DP, the MILP and SMP: the kernel ``expand_counts_keep`` of
    :mod:`hetplace._core._polish` (SMP calls it inside its kernels).
    """
    from ._core import _registry

    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)  # workers in no class stay idle
    sizes = [len(m) for m in members]
    flat = np.ascontiguousarray(np.concatenate(members) if members else np.zeros(0), dtype=np.int64)
    start = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    backend = "cython" if _registry.unavailable("cython") is None else "python"  # no JIT compile for this
    _registry.kernels(backend).expand_keep(np.ascontiguousarray(counts, dtype=np.int64), flat, start,
                                           problem.current, worker_job)
    return worker_job


def is_feasible(problem: Problem, worker_job: "np.typing.ArrayLike") -> bool:
    """True when ``worker_job`` is a feasible placement of ``problem`` (docs/model.md §1.2)."""
    _check_problem(problem)
    try:
        _worker_job_iv(problem, worker_job)
    except (InvalidPlacementError, InvalidProblemTypeError):
        return False
    return True


def largest_remainder_shares(
    batch: "np.typing.ArrayLike", worker_job: "np.typing.ArrayLike", rho: "np.typing.ArrayLike",
) -> np.ndarray:
    """Integer per-worker shares of each job's batch, proportional to speed.

    Parameters
    ----------
    batch : ndarray of int, shape (S,)
    worker_job : ndarray of int64, shape (K,)
        Job per worker, -1 idle.
    rho : ndarray of float64, shape (S, K)
        Worker throughput for each job.

    Returns
    -------
    ndarray of int64, shape (K,)
        ``shares[k]``: samples per iteration of worker ``k``; idle workers get 0,
        and each job's shares sum to its batch exactly.

    Notes
    -----
    Hamilton's largest-remainder method: floors of the quotas
    ``batch[i] * rho[i, k] / X_i``, then one extra sample each to the largest
    fractional parts (ties to the lower worker index).
    """
    busy = np.flatnonzero(worker_job >= 0)
    return _shares(batch, worker_job, rho[worker_job[busy], busy])


def _shares(batch, worker_job, r):
    """:func:`largest_remainder_shares` from the rates ``r`` of the busy workers (ascending index)."""
    batch = np.asarray(batch, dtype=np.int64)
    busy = np.flatnonzero(worker_job >= 0)
    job = worker_job[busy]
    S = batch.shape[0]
    return _shares_of(batch, worker_job.shape[0], busy, job, r, np.bincount(job, weights=r, minlength=S),
                      np.bincount(job, minlength=S))


def _shares_of(batch, K, busy, job, r, X, n):
    """:func:`_shares` from the busy workers ``busy`` (ascending), their jobs and rates, and per job
    the summed rates ``X`` and worker counts ``n``."""
    batch = np.asarray(batch, dtype=np.int64)
    bj = batch[job]
    quota = bj * r / X[job]
    base = np.minimum(np.floor(quota), bj).astype(np.int64)
    frac = quota - base
    left = batch - np.bincount(job, weights=base, minlength=batch.shape[0]).astype(np.int64)
    # rank workers inside each job by remainder (largest first), ties by worker index (lexsort
    # is stable and ``busy`` ascending)
    order = np.lexsort((-frac, job))
    starts = np.searchsorted(job[order], np.arange(batch.shape[0]))
    rank = np.empty(busy.size, dtype=np.int64)
    rank[order] = np.arange(busy.size) - starts[job[order]]
    # left is in [0, n) up to float rounding; spread any excess in whole rounds
    nj = np.maximum(n[job], 1)
    lj = left[job]
    extra = (lj // nj) + (rank < (lj % nj))
    shares = np.zeros(K, dtype=np.int64)
    shares[busy] = base + extra
    return shares


class Placement:
    """A placement of every job on a set of workers, with its true JCT (docs/model.md §1.2).

    Build one with :func:`evaluate` or get one from :func:`hetplace.place`.
    The constructor validates ``worker_job`` like :func:`evaluate` (whatever
    method produced it), so a placement never gives a job more than
    ``problem.max_workers`` workers, none, or a worker of a type it cannot use.

    Raises
    ------
    InvalidPlacementError, InvalidProblemTypeError
        When ``worker_job`` is not a feasible placement of ``problem``.

    Attributes
    ----------
    problem : Problem
    worker_job : ndarray of int64, shape (K,)
        Job index of every worker, -1 idle.
    type_counts : ndarray of int64, shape (S, G)
        Workers of each type given to each job.
    sizes : ndarray of int64, shape (S,)
        Job sizes ``n_i`` (the category).
    aggregate_throughput : ndarray of float64, shape (S,)
        Aggregate throughput ``X_i`` (samples/s).
    compute_per_iteration, comm_per_iteration : ndarray of float64, shape (S,)
        Per-iteration compute ``Pi_i / X_i`` and ring all-reduce time.
    jct : ndarray of float64, shape (S,)
        ``T_i (t_c + t_m)`` in seconds, plus ``restart_loss`` (the time a
        restarted job loses finishes it that much later).
    restarted : ndarray of bool, shape (S,)
        True for a running job (``problem.running``) whose worker set differs
        from ``problem.current`` in any way (docs/model.md §1.4).
    restart_loss : ndarray of float64, shape (S,)
        ``problem.restart_time`` where ``restarted``, else 0.
    n_restarts : int
        Number of restarted jobs.
    mean_jct : float
        The objective: the mean of ``jct``, restart losses included; with
        ``problem.weight`` the weighted mean ``sum_i w_i jct_i / sum_i w_i``
        (``jct`` stays each job's own JCT; :meth:`gap_to` and
        :meth:`gap_to_bound` compare these weighted means).
    shares : ndarray of int64, shape (K,)
        Samples per iteration of every worker (largest remainder; 0 when idle).
    slowdown : ndarray of float64, shape (S,)
        ``jct / jct_alone``.
    fairness : float
        Jain's index of the slowdowns (1 = perfectly even).
    worst_slowdown : float
    nodes_spanned, racks_spanned : ndarray of int64, shape (S,), or None
        With a network topology (``problem.topology``): the nodes and racks
        holding each job's workers (``racks_spanned`` None without racks); None
        without a topology.
    link_bandwidth : ndarray of float64, shape (S,)
        The bandwidth each job's ring all-reduce runs at (docs/model.md §1.6):
        its node's ``node_bandwidth`` when all its workers share a node, else
        its rack's ``rack_bandwidth`` in one rack, else ``problem.bandwidth``;
        ``inf`` for a job on one worker (it does not communicate).
    method : str
        What produced the placement.
    info : dict
        Method-specific details (timings, samples, bound, ...).
    """

    def __init__(
        self, problem: Problem, worker_job: "np.typing.ArrayLike", method: str = "given",
        info: "dict | None" = None,
    ) -> None:
        # every placement is checked, whatever built it: a job above its max_workers,
        # a job without workers or a worker on a type its job cannot use is an error, never a number
        _check_problem(problem)
        worker_job, busy, job, rate, sizes = _checked(problem, worker_job)
        self.problem = problem
        self.worker_job = worker_job
        self.worker_job.setflags(write=False)
        self.method = method
        self.info = dict(info or {})
        S, G = problem.n_jobs, problem.n_types
        self.type_counts = np.bincount(job * G + problem.worker_type[busy], minlength=S * G).reshape(S, G)
        # the one job cost (hetplace._cost), from the sums aggregate() would take: X in worker order
        X = np.bincount(job, weights=rate, minlength=S)
        priced = price(problem, worker_job, totals=False, aggregated=(X, sizes))
        self.sizes = priced.n
        self.aggregate_throughput = priced.X
        self.compute_per_iteration = problem.batch / self.aggregate_throughput
        self.comm_per_iteration = np.where(problem.iterations > 0, priced.comm / problem.iterations, 0.0)
        self.restarted = priced.restarted
        self.restart_loss = priced.restart_loss
        self.n_restarts = int(self.restarted.sum())
        self.jct = priced.jct
        if problem.weight is None:
            self.mean_jct = float(self.jct.mean())
        else:  # the weighted mean (docs/model.md §1.5), weights scaled to at most 1: no overflow
            v = problem.weight / problem.weight.max()
            self.mean_jct = float(np.dot(v, self.jct) / v.sum())
        self._share_args = (busy, job, rate, X, sizes)  # shares on first use (a decision rarely reads them)
        self._shares = None
        self._slowdown = None  # on first use: jct_alone costs a loop over the jobs (65 ms at S = 1,024)
        if problem.topology is None:
            self.nodes_spanned = self.racks_spanned = None
            self.link_bandwidth = np.where(self.sizes >= 2, problem.bandwidth, math.inf)
        else:
            self.nodes_spanned, self.racks_spanned, bw = spans(problem.topology, worker_job, S)
            if problem.topology.rack is None:
                self.racks_spanned = None
            self.link_bandwidth = np.where(self.sizes >= 2, bw, math.inf)

    @property
    def shares(self):
        """ndarray of int64 (K,): samples per iteration of each worker (see the class docstring)."""
        if self._shares is None:  # two threads may both compute it: the same array, no lock needed
            self._shares = _shares_of(self.problem.batch, self.worker_job.shape[0], *self._share_args)
        return self._shares

    @property
    def slowdown(self):
        """ndarray of float64 (S,): ``jct / problem.jct_alone`` (computed on first use)."""
        if self._slowdown is None:  # two threads may both compute it: the same values
            self._slowdown = self.jct / self.problem.jct_alone
        return self._slowdown

    @property
    def fairness(self):
        """float: Jain's index of the slowdowns (1 = perfectly even)."""
        s = self.slowdown
        return float(s.sum() ** 2 / (s.size * np.square(s).sum()))

    @property
    def worst_slowdown(self):
        """float: the largest slowdown."""
        return float(self.slowdown.max())

    @property
    def status(self):
        """``"optimal"`` when the method that built it proved it optimal, else ``"feasible"``.

        A placement is always feasible (the constructor checks it).
        ``place(method="exact")`` (and ``"auto"`` when it ran the exact DP)
        proves optimality when the solver's status is ``"optimal"``
        (``info["status"]``); every other method gives ``"feasible"``.
        """
        return "optimal" if self.info.get("status") == "optimal" and self.method in ("exact", "auto") else "feasible"

    def gap_to(self, reference):
        """Relative gap ``mean_jct / reference - 1`` to a reference mean JCT.

        Parameters
        ----------
        reference : Placement, ExactResult or float
            A placement, a solver result with a placement (its ``objective``)
            or a mean JCT in seconds (positive and finite).

        Returns
        -------
        float

        Raises
        ------
        InvalidOptionError
            ``reference`` is none of these (a bool, a string, ``None``, 0, NaN,
            inf, a result without a placement).
        """
        if isinstance(reference, Placement):
            ref = reference.mean_jct
        elif hasattr(reference, "objective") and hasattr(reference, "placement"):  # ExactResult (no import cycle)
            ref = reference.objective
        else:
            ref = None
        return self._relative_gap(ref, "reference", "a Placement, an ExactResult with a placement, or a positive, "
                                  "finite mean JCT in seconds", reference)

    def gap_to_bound(self, bound):
        """Certified gap ``mean_jct / bound - 1`` to a proven lower bound of the optimum.

        The true optimality gap ``mean_jct / OPT - 1`` is at most this when
        ``bound`` is a valid lower bound (e.g. :func:`hetplace.lower_bound`).

        Parameters
        ----------
        bound : BoundResult or float
            A result of :func:`hetplace.lower_bound` (its ``bound``) or a lower
            bound on the optimal mean JCT in seconds (positive and finite).

        Returns
        -------
        float

        Raises
        ------
        InvalidOptionError
            ``bound`` is none of these (a bool, a string, ``None``, 0, a
            negative number, NaN, inf).
        """
        ref = bound.bound if hasattr(bound, "bound") and hasattr(bound, "status") else None  # a BoundResult
        return self._relative_gap(ref, "bound", "a BoundResult of hetplace.lower_bound or a positive, finite lower "
                                  "bound on the optimal mean JCT in seconds", bound)

    def _relative_gap(self, ref, name, expected, given):
        """``mean_jct / ref - 1`` for the parameter ``name``: ``ref`` read off a result, else ``given`` as a number."""
        if ref is None and is_real_scalar(given):
            ref = float(given)
        if ref is None or not (0 < ref < math.inf):
            raise InvalidOptionError(f"{name} must be {expected}; got {given!r}.")
        gap = self.mean_jct / ref - 1.0
        if not math.isfinite(gap):  # a reference near 0 (5e-324): the ratio overflows
            raise InvalidOptionError(
                f"{name} = {ref!r} is too small for a relative gap to mean_jct = {self.mean_jct!r} "
                "(the ratio overflows); pass a mean JCT in seconds."
            )
        return gap

    def to_dict(self):
        """JSON-serialisable summary of the placement."""
        p = self.problem
        return {
            "method": self.method,
            "mean_jct": self.mean_jct,
            "fairness": self.fairness,
            "worst_slowdown": self.worst_slowdown,
            "jobs": [
                {
                    "job": p.job_names[i],
                    "size": int(self.sizes[i]),
                    "type_counts": {p.type_names[g]: int(self.type_counts[i, g]) for g in range(p.n_types)},
                    "aggregate_throughput": float(self.aggregate_throughput[i]),
                    "jct": float(self.jct[i]),
                    "slowdown": float(self.slowdown[i]),
                    **({"restarted": bool(self.restarted[i]), "restart_loss": float(self.restart_loss[i])}
                       if p.replacing else {}),
                    **({"nodes_spanned": int(self.nodes_spanned[i]),
                        "link_bandwidth": _json_float(self.link_bandwidth[i])}
                       if p.topology is not None else {}),
                    **({"racks_spanned": int(self.racks_spanned[i])} if self.racks_spanned is not None else {}),
                }
                for i in range(p.n_jobs)
            ],
            "workers": [
                {
                    "worker": k,
                    "type": p.type_names[p.worker_type[k]],
                    "speed": float(p.worker_speed[k]),
                    "job": None if self.worker_job[k] < 0 else p.job_names[self.worker_job[k]],
                    **({"node": int(p.topology.node[k])} if p.topology is not None else {}),
                    "share": int(self.shares[k]),
                }
                for k in range(p.n_workers)
            ],
            "info": {k: v for k, v in self.info.items() if isinstance(v, (int, float, str, bool, type(None)))},
        }

    def to_frame(self):
        """Per-job table as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - depends on the environment
            raise MissingDependencyError(
                "Placement.to_frame needs pandas: pip install pandas"
            ) from None
        p = self.problem
        data = {
            "job": list(p.job_names),
            "size": self.sizes,
            **{f"n_{p.type_names[g]}": self.type_counts[:, g] for g in range(p.n_types)},
            "aggregate_throughput": self.aggregate_throughput,
            "jct": self.jct,
            "slowdown": self.slowdown,
            **({"restarted": self.restarted, "restart_loss": self.restart_loss} if p.replacing else {}),
            **({"nodes_spanned": self.nodes_spanned, "link_bandwidth": self.link_bandwidth}
               if p.topology is not None else {}),
            **({"racks_spanned": self.racks_spanned} if self.racks_spanned is not None else {}),
        }
        return pd.DataFrame(data).set_index("job")

    def format_table(self, workers=True):
        """Readable text table of jobs (and, with ``workers=True``, per-worker shares)."""
        p = self.problem
        name_w = max(4, max(len(n) for n in p.job_names))
        types = [f"{t:>6}" for t in p.type_names]
        restart_head = f" {'restart':>8}" if p.replacing else ""
        topo = p.topology
        # with a topology: the nodes (and racks) each job spans and the bandwidth its ring runs at
        span_head = "" if topo is None else f" {'nodes':>5}" + ("" if topo.rack is None else f" {'racks':>5}") + \
            f" {'link GB/s':>9}"
        lines = [
            f"{'job':<{name_w}} {'n':>4} " + " ".join(types)
            + f" {'samples/s':>11} {'JCT (s)':>12} {'slowdown':>9}{span_head}{restart_head}  shares per worker"
        ]
        for i in range(p.n_jobs):
            ws = np.flatnonzero(self.worker_job == i)
            share_txt = ""
            if workers:
                share_txt = " ".join(f"{k}:{self.shares[k]}" for k in ws)
                if len(share_txt) > 60:
                    share_txt = share_txt[:57] + "..."
            lines.append(
                f"{p.job_names[i]:<{name_w}} {self.sizes[i]:>4} "
                + " ".join(f"{c:>6}" for c in self.type_counts[i])
                + f" {self.aggregate_throughput[i]:>11.1f} {self.jct[i]:>12.1f} {self.slowdown[i]:>9.3f}"
                + ("" if topo is None else f" {self.nodes_spanned[i]:>5}"
                   + ("" if topo.rack is None else f" {self.racks_spanned[i]:>5}")
                   + f" {_gbps(self.link_bandwidth[i]):>9}")
                + (("" if not p.replacing else
                    f" {('+' + format(self.restart_loss[i], '.0f') + 's') if self.restarted[i] else ('kept' if p.running[i] else 'new'):>8}"))
                + f"  {share_txt}"
            )
        idle = int(np.sum(self.worker_job < 0))
        restarts = f" | restarts {self.n_restarts} of {int(p.running.sum())} running" if p.replacing else ""
        lines.append(
            f"mean JCT {self.mean_jct:.1f} s | fairness (Jain) {self.fairness:.3f} | "
            f"worst slowdown {self.worst_slowdown:.3f} | idle workers {idle}{restarts} | method {self.method}"
        )
        return "\n".join(lines)

    def __str__(self):
        return self.format_table()

    def __repr__(self):
        return (
            f"Placement(method={self.method!r}, mean_jct={self.mean_jct:.6g}, "
            f"fairness={self.fairness:.3f}, sizes={_compact(self.sizes)}"
            + (f", restarts={self.n_restarts}" if self.problem.replacing else "") + ")"
        )


def _gbps(b):
    """Bytes/s as GB/s for the text table (``-``: no ring, a job on one worker)."""
    return "-" if not math.isfinite(b) else f"{b / 1e9:.4g}"


def evaluate(
    problem: Problem, worker_job: "np.typing.ArrayLike", *, method: str = "given", info: "dict | None" = None,
) -> "Placement":
    """Evaluate a worker -> job assignment.

    Parameters
    ----------
    problem : Problem
    worker_job : array_like of int, shape (K,)
        Job index of every worker; -1 leaves the worker idle.

    Returns
    -------
    Placement

    Raises
    ------
    InvalidPlacementError
        When a job gets no worker, an index is out of range, or a worker is given
        a job that cannot run on its type.
    """
    _check_problem(problem)
    return Placement(problem, worker_job, method=method, info=info)
