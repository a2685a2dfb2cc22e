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

__all__ = ["ring_fraction", "RingAllReduce", "comm_cost", "job_time", "aggregate", "restarted", "Priced", "price"]


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


def comm_cost(problem, jobs, n, worker_job=None):
    """``Problem.size_cost[jobs, n]``: the communication time, ``+inf`` for sizes ``0 < n < min_workers``
    and ``n > max_workers`` (arrays of one shape), without the dense table."""
    n = np.asarray(n)
    out = problem.comm_model.time(jobs, n, worker_job)
    return np.where((n > problem.max_workers[jobs]) | ((n > 0) & (n < problem.min_workers[jobs])), math.inf, out)


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


def price(problem, worker_job, totals=True):
    """Price assignments: per-job times, restart losses and totals (docs/model.md §1.2-1.4).

    Parameters
    ----------
    problem : Problem
    worker_job : ndarray of int64, shape (R, K) or (K,)
        Job of every worker, -1 idle; trusted (indices in range).  A job may
        have no worker (its time and the row's total are then inf).
    totals : bool, default True
        False leaves ``total`` None (a caller that needs the per-job fields only).

    Returns
    -------
    Priced
    """
    S = problem.n_jobs
    X, n = aggregate(problem, worker_job)
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
