"""Local-search polish of a placement (docs/model.md §3.7, "beyond the paper"): one source, three backends.

Best-improvement descent over two neighbourhoods:

* move: one worker from its job (or idle) to another job (or idle);
* swap: two workers of different jobs (or one of them idle) trade places.

Workers that are interchangeable (same type, same job, uniform speeds) are
represented by the lowest-indexed one, so on dedicated clusters a pass costs
O((S G)^2) instead of O(K^2).  Each accepted step lowers the total JCT by more
than ``1e-12`` of its value, so the descent terminates.

This module is written once, in Cython's pure-Python mode, and compiled three
ways (see :mod:`hetplace._core._source`): ``cythonize`` builds it at install
(``backend="cython"``), :func:`hetplace._core._source.load` compiles every
``@cython.cfunc`` with Numba (``backend="numba"``; functions that use
``prange`` in parallel), and the same loader runs it as plain Python
(``backend="python"``).  Every backend does the same floating-point operations
in the same order, so placements agree bit for bit.

Rules of the source (so that all three compilers accept it): kernels
(``@cython.cfunc``) take typed arrays and scalars only, never allocate (work
arrays come from the ``def`` entries, which allocate with NumPy), call no
``cython.*`` function in their body, and declare every local with an
annotation; ``prange`` options are dropped for Numba, which takes none.
Private: inputs are trusted (validated by :mod:`hetplace.smp`).
"""

from __future__ import annotations

import os

import cython
import numpy as np
from cython.parallel import prange


__all__ = [
    "COMPILED", "job_cost", "comm_is_spec", "assignment_total", "polish_kernel", "polish", "polish_rows",
    "class_totals", "expand_counts", "counts_of", "polish_classes_kernel", "polish_classes", "polish_rows_classes",
    "restart_loss", "restart_arrays", "class_restart_loss", "class_trees", "TREE_CELLS", "TREE_MIN_JOBS", "expand_counts_keep", "expand_keep", "keep_rows",
]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

#: A step must lower the total JCT by more than this fraction of it.
REL_GAIN = cython.declare(cython.double, 1e-12)
#: Cost of a step that is not possible.
INF = cython.declare(cython.double, float("inf"))
#: The stop flag of a call that cannot be stopped (read-only, never set).
_GO = np.zeros(1, dtype=np.int64)
_GO.flags.writeable = False


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def job_cost(work: cython.const[cython.double][::1], comm: cython.const[cython.double][:, ::1],
             spec: cython.bint, i: cython.Py_ssize_t, X: cython.double, n: cython.longlong) -> cython.double:
    """Total time of job ``i`` with aggregate throughput ``X`` on ``n`` workers (docs/model.md §1.2).

    ``comm`` comes in one of two layouts, which ``spec`` names
    (:func:`comm_is_spec`; a kernel reads it once, not per call):

    * ``spec`` True: shape (S, 3), ``[coef, -lo, hi]`` per job
      (``Problem.size_cost_spec``): communication ``coef * 2 (n-1)/n`` (0 for
      ``n <= 1``), ``+inf`` for sizes ``0 < n < lo`` or ``n > hi``; O(1)
      memory per job;
    * ``spec`` False: shape (S, K + 1), entries >= 0 or ``+inf``: a table,
      ``comm[i, n]`` (``Problem.size_cost``).

    Both give the same bits for the same problem.
    """
    if spec:
        if n > comm[i, 2] or (n > 0 and n < -comm[i, 1]):
            return work[i] / X + INF
        if n <= 1:
            return work[i] / X + 0.0
        return work[i] / X + comm[i, 0] * (2.0 * (n - 1.0) / n)
    return work[i] / X + comm[i, n]


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def comm_is_spec(comm: cython.const[cython.double][:, ::1]) -> cython.bint:
    """True when ``comm`` is the (S, 3) spec of :func:`job_cost`, False for a table.

    The spec stores ``-lo <= -1`` in column 1 and a table the communication of
    one worker (0 or ``+inf``) there, so the first row tells them apart (at K = 2
    both have 3 columns).  A kernel calls it once and passes the answer down.
    """
    return comm.shape[0] > 0 and comm.shape[1] == 3 and comm[0, 1] < 0.0


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def assignment_total(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                     comm: cython.const[cython.double][:, ::1], worker_job: cython.longlong[::1],
                     X: cython.double[::1], n: cython.longlong[::1]) -> cython.double:
    """True total JCT of ``worker_job`` (every job holds a worker), summed in job order; ``X``, ``n``: (S,) work arrays."""
    spec: cython.bint = comm_is_spec(comm)
    S: cython.Py_ssize_t = rho.shape[0]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    total: cython.double = 0.0
    for i in range(S):
        X[i] = 0.0
        n[i] = 0
    for k in range(worker_job.shape[0]):
        i = worker_job[k]
        if i >= 0:
            X[i] += rho[i, k]
            n[i] += 1
    for i in range(S):
        total += job_cost(work, comm, spec, i, X[i], n[i])
    return total


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _recompute(rho: cython.const[cython.double][:, ::1], worker_job: cython.longlong[::1],
               X: cython.double[::1], n: cython.longlong[::1], i: cython.Py_ssize_t) -> cython.void:
    s: cython.double = 0.0
    c: cython.longlong = 0
    k: cython.Py_ssize_t
    for k in range(worker_job.shape[0]):
        if worker_job[k] == i:
            s += rho[i, k]
            c += 1
    X[i] = s
    n[i] = c


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _mark_reps(worker_job: cython.longlong[::1], worker_type: cython.const[cython.longlong][::1],
               uniform: cython.bint, n_types: cython.Py_ssize_t, rep: cython.uchar[::1],
               seen: cython.uchar[::1]) -> cython.void:
    """``rep[k] = 1`` if worker k is the first of its (job, type) class (every worker when not ``uniform``)."""
    K: cython.Py_ssize_t = worker_job.shape[0]
    k: cython.Py_ssize_t
    t: cython.Py_ssize_t
    key: cython.longlong
    if not uniform:
        for k in range(K):
            rep[k] = 1
        return
    for t in range(seen.shape[0]):
        seen[t] = 0
    for k in range(K):
        key = (worker_job[k] + 1) * n_types + worker_type[k]
        if seen[key] == 0:
            seen[key] = 1
            rep[k] = 1
        else:
            rep[k] = 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _pen_step(p: cython.double, d: cython.longlong, delta: cython.longlong) -> cython.double:
    """Change of a job's restart loss ``p * [d > 0]`` when its mismatch count ``d`` changes by ``delta``."""
    if d > 0:
        if d + delta > 0:
            return 0.0
        return -p
    if d + delta > 0:
        return p
    return 0.0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _own(c: cython.longlong, i: cython.longlong) -> cython.longlong:
    """Mismatch change of job ``i`` losing a worker whose current job is ``c`` (gaining it: the negative)."""
    if c == i:
        return 1
    return -1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _worker_diff(worker_job: cython.longlong[::1], current: cython.const[cython.longlong][::1],
                 diff: cython.longlong[::1], i: cython.Py_ssize_t) -> cython.void:
    """``diff[i]``: workers in job i's set or its current set but not in both."""
    m: cython.longlong = 0
    k: cython.Py_ssize_t
    for k in range(worker_job.shape[0]):
        if (worker_job[k] == i) != (current[k] == i):
            m += 1
    diff[i] = m


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def restart_loss(pen: cython.const[cython.double][::1], diff: cython.longlong[::1]) -> cython.double:
    """Sum of ``pen[i]`` over the jobs with ``diff[i] > 0`` (restarted), in job order."""
    total: cython.double = 0.0
    i: cython.Py_ssize_t
    for i in range(pen.shape[0]):
        if diff[i] > 0:
            total += pen[i]
    return total


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def polish_kernel(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                  comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1],
                  uniform: cython.bint, worker_job: cython.longlong[::1], max_steps: cython.longlong,
                  X: cython.double[::1], n: cython.longlong[::1], rep: cython.uchar[::1],
                  seen: cython.uchar[::1], replacing: cython.bint, pen: cython.const[cython.double][::1],
                  current: cython.const[cython.longlong][::1], diff: cython.longlong[::1],
                  stop: cython.const[cython.longlong][::1]) -> cython.longlong:
    """Improve ``worker_job`` in place; return the number of steps taken.

    Parameters
    ----------
    rho : float64 (S, K)      worker throughput per job
    work : float64 (S,)       iterations * batch
    comm : float64 (S, 3) or (S, K+1)   communication by job size (:func:`job_cost`)
    worker_type : int64 (K,)  types 0..G-1
    uniform : bool            all speeds equal (enables class representatives)
    worker_job : int64 (K,)   feasible placement, modified in place
    max_steps : int64         cap on accepted steps
    X, n : float64, int64 (S,)         work arrays
    rep, seen : uint8 (K,), ((S+1) G,)  work arrays
    replacing : bool          add restart losses (docs/model.md §1.4): job i pays
                              ``pen[i]`` while its set differs from ``current``
    pen : float64 (S,)        restart cost per job (0 for new jobs)
    current : int64 (K,)      running placement (-1 none)
    diff : int64 (S,)         work array: per job, workers in exactly one of its
                              set and its current set
    stop : int64 (1,)         the descent ends before a step once ``stop[0]`` is
                              nonzero (:mod:`hetplace._interrupt`: the caller then
                              discards the row); read every step, so a Ctrl-C waits
                              for one step, not one row
    """
    spec: cython.bint = comm_is_spec(comm)
    S: cython.Py_ssize_t = rho.shape[0]
    K: cython.Py_ssize_t = rho.shape[1]
    G: cython.Py_ssize_t = 0
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    l: cython.Py_ssize_t
    bk: cython.Py_ssize_t
    bl: cython.Py_ssize_t
    a: cython.longlong
    b: cython.longlong
    bb: cython.longlong
    kind: cython.int
    steps: cython.longlong = 0
    total: cython.double
    best: cython.double
    d: cython.double
    da: cython.double
    ck: cython.longlong = -1
    for k in range(K):
        if worker_type[k] + 1 > G:
            G = worker_type[k] + 1
    if replacing:
        uniform = False  # same type, same job, but one may be the job's own current worker
    for i in range(S):
        _recompute(rho, worker_job, X, n, i)
        if replacing:
            _worker_diff(worker_job, current, diff, i)
    while steps < max_steps:
        if stop[0] != 0:
            break
        total = 0.0
        for i in range(S):
            total += job_cost(work, comm, spec, i, X[i], n[i])
        if replacing:
            total += restart_loss(pen, diff)
        best = -REL_GAIN * total
        kind = 0
        bk = -1
        bl = -1
        bb = -1
        _mark_reps(worker_job, worker_type, uniform, G, rep, seen)
        # moves: worker k from job a (or idle) to job b (or idle)
        for k in range(K):
            if rep[k] == 0:
                continue
            a = worker_job[k]
            da = 0.0
            if replacing:
                ck = current[k]
            if a >= 0:
                if n[a] == 1:
                    continue
                da = (job_cost(work, comm, spec, a, X[a] - rho[a, k], n[a] - 1)
                      - job_cost(work, comm, spec, a, X[a], n[a]))
                if replacing:
                    da += _pen_step(pen[a], diff[a], _own(ck, a))
            for b in range(-1, S):
                if b == a:
                    continue
                d = da
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += (job_cost(work, comm, spec, b, X[b] + rho[b, k], n[b] + 1)
                          - job_cost(work, comm, spec, b, X[b], n[b]))
                    if replacing:
                        d += _pen_step(pen[b], diff[b], -_own(ck, b))
                elif a < 0:
                    continue
                if d < best:
                    best = d
                    kind = 1
                    bk = k
                    bb = b
        # swaps: workers k and l of different jobs trade places (one may be idle)
        for k in range(K):
            if rep[k] == 0:
                continue
            a = worker_job[k]
            for l in range(k + 1, K):
                if rep[l] == 0:
                    continue
                b = worker_job[l]
                if a == b:
                    continue
                d = 0.0
                if a >= 0:
                    if rho[a, l] <= 0.0:
                        continue
                    d += (job_cost(work, comm, spec, a, X[a] - rho[a, k] + rho[a, l], n[a])
                          - job_cost(work, comm, spec, a, X[a], n[a]))
                    if replacing:
                        d += _pen_step(pen[a], diff[a], _own(current[k], a) - _own(current[l], a))
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += (job_cost(work, comm, spec, b, X[b] - rho[b, l] + rho[b, k], n[b])
                          - job_cost(work, comm, spec, b, X[b], n[b]))
                    if replacing:
                        d += _pen_step(pen[b], diff[b], _own(current[l], b) - _own(current[k], b))
                if d < best:
                    best = d
                    kind = 2
                    bk = k
                    bl = l
        if kind == 0:
            break
        if kind == 1:
            a = worker_job[bk]
            b = bb
            worker_job[bk] = bb
        else:
            a = worker_job[bk]
            b = worker_job[bl]
            worker_job[bk] = b
            worker_job[bl] = a
        if a >= 0:
            _recompute(rho, worker_job, X, n, a)
            if replacing:
                _worker_diff(worker_job, current, diff, a)
        if b >= 0:
            _recompute(rho, worker_job, X, n, b)
            if replacing:
                _worker_diff(worker_job, current, diff, b)
        steps += 1
    return steps


@cython.cfunc
@cython.exceptval(check=False)
def _polish_rows_kernel(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                        comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1],
                        uniform: cython.bint, rows: cython.const[cython.longlong][::1], max_steps: cython.longlong,
                        out_wj: cython.longlong[:, ::1], out_total: cython.double[::1],
                        out_stats: cython.longlong[:, ::1], X: cython.double[:, ::1], n: cython.longlong[:, ::1],
                        rep: cython.uchar[:, ::1], seen: cython.uchar[:, ::1], replacing: cython.bint,
                        pen: cython.const[cython.double][::1], current: cython.const[cython.longlong][::1],
                        diff: cython.longlong[:, ::1], stop: cython.const[cython.longlong][::1],
                        threads: cython.int) -> cython.void:
    j: cython.Py_ssize_t
    s: cython.Py_ssize_t
    i: cython.Py_ssize_t
    for j in prange(rows.shape[0], nogil=True, num_threads=threads, schedule="dynamic"):
        s = rows[j]
        out_stats[s, 2] = polish_kernel(rho, work, comm, worker_type, uniform, out_wj[s], max_steps,
                                        X[j], n[j], rep[j], seen[j], replacing, pen, current, diff[j], stop)
        out_total[s] = assignment_total(rho, work, comm, out_wj[s], X[j], n[j])
        if replacing:
            for i in range(rho.shape[0]):
                _worker_diff(out_wj[s], current, diff[j], i)
            out_total[s] = out_total[s] + restart_loss(pen, diff[j])


def restart_arrays(restart, S, C, K):
    """``(replacing, pen (S,), current (K,), curC (S, C))`` of the polish kernels from ``restart``.

    ``restart`` is None (no job is running) or, in every polish entry, the
    same triple ``(pen, current, curC)``: restart costs (float64 (S,),
    ``Problem.restart_cost``), the running placement (int64 (K,),
    ``Problem.current``) and the current counts per worker class (int64
    (S, C)).  An entry that does not read a field accepts None there: the
    worker-level entries read no ``curC``, :func:`polish_classes` no ``current``.
    """
    if restart is None:
        return False, np.zeros(S), np.full(K, -1, dtype=np.int64), np.zeros((S, C), dtype=np.int64)
    pen, current, curC = restart
    if current is None:
        current = np.full(K, -1, dtype=np.int64)
    if curC is None:
        curC = np.zeros((S, C), dtype=np.int64)
    return True, pen, current, curC


def _workspace(R, S, K, worker_type):
    """Work arrays of :func:`polish_kernel` for ``R`` concurrent rows: X, n (R, S); rep (R, K); seen (R, (S+1) G)."""
    G = int(np.max(worker_type)) + 1 if K > 0 else 0
    return (np.zeros((R, S)), np.zeros((R, S), dtype=np.int64), np.zeros((R, K), dtype=np.uint8),
            np.zeros((R, (S + 1) * G), dtype=np.uint8))


def polish(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
           comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1], speed,
           uniform: cython.bint, worker_job: cython.longlong[::1], max_steps: cython.longlong, restart=None):
    """Improve ``worker_job`` (int64 (K,)) in place by :func:`polish_kernel`; return the steps taken.

    ``speed`` is accepted for the common signature of the polish entries and
    not used (``uniform`` says whether workers of a type are interchangeable).
    ``restart``: None, or ``(pen, current, curC)`` (:func:`restart_arrays`;
    ``curC`` unused, may be None) to add restart losses.
    """
    X: cython.double[::1]
    n: cython.longlong[::1]
    rep: cython.uchar[::1]
    seen: cython.uchar[::1]
    pen: cython.const[cython.double][::1]
    current: cython.const[cython.longlong][::1]
    diff: cython.longlong[::1] = np.zeros(rho.shape[0], dtype=np.int64)
    go: cython.const[cython.longlong][::1] = _GO
    replacing: cython.bint
    steps: cython.longlong
    ws = _workspace(1, rho.shape[0], rho.shape[1], worker_type)
    X, n, rep, seen = ws[0][0], ws[1][0], ws[2][0], ws[3][0]
    replacing, pen, current, _ = restart_arrays(restart, rho.shape[0], 0, rho.shape[1])
    with cython.nogil:
        steps = polish_kernel(rho, work, comm, worker_type, uniform, worker_job, max_steps, X, n, rep, seen,
                              replacing, pen, current, diff, go)
    return steps


def polish_rows(rho, work, comm, worker_type, speed, uniform, rows, max_steps, out_wj, out_total, out_stats,
                threads=0, restart=None, stop=None):
    """Polish the assignments ``out_wj[rows[j]]`` in place, in parallel over ``j``; update totals and steps.

    Parameters
    ----------
    rho, work, comm, worker_type, speed, uniform, max_steps
        As :func:`polish` (``speed`` unused).
    rows : int64 (R,)           distinct rows of ``out_wj`` to polish
    out_wj : int64 (N, K)       assignments, modified in place
    out_total : float64 (N,)    ``out_total[rows[j]]`` set to the polished true total JCT
    out_stats : int64 (N, 3)    ``out_stats[rows[j], 2]`` set to the steps taken
    threads : int               Cython's OpenMP threads (<= 0: one per core); Numba's are
                                set by the caller (``numba.set_num_threads``)
    restart : None or (pen, current, curC)
        As :func:`polish`; the totals then include the restart losses.
    stop : int64 (1,), optional
        A stop flag (:func:`hetplace._interrupt.new_stop`): once ``stop[0]``
        is nonzero every row ends its descent before its next step (the
        caller discards the rows).  Unset, it changes nothing.
    """
    S, K = rho.shape
    X, n, rep, seen = _workspace(rows.shape[0], S, K, worker_type)
    replacing, pen, current, _ = restart_arrays(restart, S, 0, K)
    diff = np.zeros((rows.shape[0], S), dtype=np.int64)
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    _polish_rows_kernel(rho, work, comm, worker_type, uniform, rows, max_steps, out_wj, out_total, out_stats, X, n,
                        rep, seen, replacing, pen, current, diff, _GO if stop is None else stop, nt)


# ------------------------------------------------------------------ worker classes
# The same descent on the count matrix cnt[i, c] (workers of class c on job i; see
# hetplace.smp.worker_classes).  Index S stands for "idle" (cost 0, any class, never
# emptied).  The best move of class c and the best swap of a class pair (c, e) are
# read off two min-trees per pair (:func:`_tree_best`), kept up to date in
# O(C^2 log S) per step; with too many classes for the trees, found by a scan in
# O(S) each from the two best partners.


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def class_totals(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                 comm: cython.const[cython.double][:, ::1], cnt: cython.longlong[:, ::1],
                 X: cython.double[::1], n: cython.longlong[::1]) -> cython.double:
    """Set ``X[i]``, ``n[i]`` from the counts; return the true total JCT (inf if a job is empty).

    ``X[i] = sum_c cnt[i, c] * rhoC[i, c]`` summed in class order.
    """
    spec: cython.bint = comm_is_spec(comm)
    S: cython.Py_ssize_t = rhoC.shape[0]
    i: cython.Py_ssize_t
    total: cython.double = 0.0
    for i in range(S):
        _refresh(rhoC, cnt, X, n, i)
    for i in range(S):
        if n[i] == 0:
            return INF
        total += job_cost(work, comm, spec, i, X[i], n[i])
    return total


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def expand_counts(cnt: cython.longlong[:, ::1], members: cython.const[cython.longlong][::1],
                  cls_start: cython.const[cython.longlong][::1], worker_job: cython.longlong[::1]) -> cython.void:
    """Workers of each class (``members[cls_start[c]:cls_start[c+1]]``, ascending) to jobs 0, 1, ..., rest idle."""
    S: cython.Py_ssize_t = cnt.shape[0]
    C: cython.Py_ssize_t = cnt.shape[1]
    c: cython.Py_ssize_t
    i: cython.Py_ssize_t
    p: cython.Py_ssize_t
    t: cython.longlong
    for c in range(C):
        p = cls_start[c]
        for i in range(S):
            for t in range(cnt[i, c]):
                worker_job[members[p]] = i
                p += 1
        while p < cls_start[c + 1]:
            worker_job[members[p]] = -1
            p += 1


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def counts_of(worker_job: cython.longlong[::1], class_of: cython.const[cython.longlong][::1],
              cnt: cython.longlong[:, ::1]) -> cython.void:
    """``cnt[i, c]`` = workers of class c placed on job i."""
    i: cython.Py_ssize_t
    c: cython.Py_ssize_t
    k: cython.Py_ssize_t
    for i in range(cnt.shape[0]):
        for c in range(cnt.shape[1]):
            cnt[i, c] = 0
    for k in range(worker_job.shape[0]):
        i = worker_job[k]
        if i >= 0:
            cnt[i, class_of[k]] += 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _refresh(rhoC: cython.const[cython.double][:, ::1], cnt: cython.longlong[:, ::1], X: cython.double[::1],
             n: cython.longlong[::1], i: cython.Py_ssize_t) -> cython.void:
    s: cython.double = 0.0
    m: cython.longlong = 0
    c: cython.Py_ssize_t
    for c in range(rhoC.shape[1]):
        if cnt[i, c] > 0:
            s += cnt[i, c] * rhoC[i, c]
            m += cnt[i, c]
    X[i] = s
    n[i] = m


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _class_diff(cnt: cython.longlong[:, ::1], curC: cython.const[cython.longlong][:, ::1], diff: cython.longlong[::1],
                i: cython.Py_ssize_t) -> cython.void:
    """``diff[i] = sum_c |cnt[i, c] - curC[i, c]|``: 0 exactly when job i can keep its current workers."""
    m: cython.longlong = 0
    c: cython.Py_ssize_t
    for c in range(cnt.shape[1]):
        if cnt[i, c] > curC[i, c]:
            m += cnt[i, c] - curC[i, c]
        else:
            m += curC[i, c] - cnt[i, c]
    diff[i] = m


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _lose(cnt: cython.longlong[:, ::1], curC: cython.const[cython.longlong][:, ::1], i: cython.Py_ssize_t,
          c: cython.Py_ssize_t) -> cython.longlong:
    """Change of ``diff[i]`` when job i loses a class-c worker."""
    if cnt[i, c] > curC[i, c]:
        return -1
    return 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _gain(cnt: cython.longlong[:, ::1], curC: cython.const[cython.longlong][:, ::1], i: cython.Py_ssize_t,
          c: cython.Py_ssize_t) -> cython.longlong:
    """Change of ``diff[i]`` when job i gains a class-c worker."""
    if cnt[i, c] < curC[i, c]:
        return -1
    return 1


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def class_restart_loss(pen: cython.const[cython.double][::1], cnt: cython.longlong[:, ::1],
                       curC: cython.const[cython.longlong][:, ::1], diff: cython.longlong[::1]) -> cython.double:
    """Restart losses of the counts ``cnt`` (``diff`` is set, a work array)."""
    i: cython.Py_ssize_t
    for i in range(cnt.shape[0]):
        _class_diff(cnt, curC, diff, i)
    return restart_loss(pen, diff)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def expand_counts_keep(cnt: cython.longlong[:, ::1], members: cython.const[cython.longlong][::1],
                       cls_start: cython.const[cython.longlong][::1], current: cython.const[cython.longlong][::1],
                       worker_job: cython.longlong[::1], taken: cython.longlong[::1]) -> cython.void:
    """:func:`expand_counts` that gives every job its own current workers of a class first.

    In each class, job i first takes up to ``cnt[i, c]`` of the class's
    workers it runs on now (``current``), then the class's other workers go,
    in ascending order, to jobs 0, 1, ... that still need some; the rest are
    idle.  The current sets are disjoint, so every job whose counts equal its
    current counts gets exactly its current workers (docs/model.md §1.4).
    ``taken``: (S,) work array.
    """
    S: cython.Py_ssize_t = cnt.shape[0]
    C: cython.Py_ssize_t = cnt.shape[1]
    c: cython.Py_ssize_t
    i: cython.Py_ssize_t
    p: cython.Py_ssize_t
    k: cython.longlong
    j: cython.longlong
    for c in range(C):
        for i in range(S):
            taken[i] = 0
        for p in range(cls_start[c], cls_start[c + 1]):
            k = members[p]
            j = current[k]
            if j >= 0 and taken[j] < cnt[j, c]:
                worker_job[k] = j
                taken[j] += 1
            else:
                worker_job[k] = -2  # not yet given
        i = 0
        for p in range(cls_start[c], cls_start[c + 1]):
            k = members[p]
            if worker_job[k] != -2:
                continue
            while i < S and taken[i] >= cnt[i, c]:
                i += 1
            if i < S:
                worker_job[k] = i
                taken[i] += 1
            else:
                worker_job[k] = -1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _push2(v: cython.double, j: cython.Py_ssize_t, v1: cython.double, j1: cython.Py_ssize_t, v2: cython.double,
           j2: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.double, cython.Py_ssize_t]:
    """Insert candidate (v, j) into the two smallest (v1, j1) <= (v2, j2); strict ``<``."""
    if v < v1:
        return v, j, v1, j1
    if v < v2:
        return v1, j1, v, j
    return v1, j1, v2, j2


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _partner(a: cython.Py_ssize_t, v1: cython.double, j1: cython.Py_ssize_t, v2: cython.double,
             j2: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t]:
    """Best of the two smallest entries whose index is not ``a`` (index -1: none)."""
    if j1 != a:
        return v1, j1
    return v2, j2


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _leaf(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
          comm: cython.const[cython.double][:, ::1], spec: cython.bint, cnt: cython.longlong[:, ::1],
          idle: cython.longlong[::1],
          X: cython.double[::1], n: cython.longlong[::1], B: cython.const[cython.double][::1],
               K: cython.longlong, replacing: cython.bint,
          pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
          diff: cython.longlong[::1], c: cython.Py_ssize_t, e: cython.Py_ssize_t, side: cython.int,
          i: cython.Py_ssize_t) -> cython.double:
    """Cost change of job ``i`` (S: the idle pool) in one half of a step; ``inf`` where it cannot take part.

    ``e < 0``, a move of a class-c worker: side 0 receives it (``b``), side 1
    gives it (``a``).  ``e >= 0``, a swap of classes c and e: side 0 gives e and
    takes c (``b``), side 1 gives c and takes e (``a``).  A step's change is
    ``side1(a) + side0(b)`` with ``a != b``.  NaN is returned as ``inf``.
    """
    S: cython.Py_ssize_t = rhoC.shape[0]
    v: cython.double
    x: cython.double
    if i == S:
        if side == 0 and e < 0:
            return 0.0  # the idle pool takes any worker
        if (side == 1 and idle[c] == 0) or (side == 0 and idle[e] == 0):
            return INF
        return 0.0
    if e < 0:
        if side == 0:
            x = rhoC[i, c]
            if x <= 0.0 or n[i] >= K:  # K: every worker already on i
                return INF
            v = job_cost(work, comm, spec, i, X[i] + x, n[i] + 1) - B[i]
            if replacing:
                v += _pen_step(pen[i], diff[i], _gain(cnt, curC, i, c))
        else:
            if cnt[i, c] == 0 or n[i] == 1:
                return INF
            v = job_cost(work, comm, spec, i, X[i] - rhoC[i, c], n[i] - 1) - B[i]
            if replacing:
                v += _pen_step(pen[i], diff[i], _lose(cnt, curC, i, c))
    elif side == 0:
        if cnt[i, e] == 0:
            return INF
        x = rhoC[i, c]
        if x <= 0.0:
            return INF
        v = job_cost(work, comm, spec, i, X[i] - rhoC[i, e] + x, n[i]) - B[i]
        if replacing:
            v += _pen_step(pen[i], diff[i], _lose(cnt, curC, i, e) + _gain(cnt, curC, i, c))
    else:
        if cnt[i, c] == 0:
            return INF
        x = rhoC[i, e]
        if x <= 0.0:
            return INF
        v = job_cost(work, comm, spec, i, X[i] - rhoC[i, c] + x, n[i]) - B[i]
        if replacing:
            v += _pen_step(pen[i], diff[i], _lose(cnt, curC, i, c) + _gain(cnt, curC, i, e))
    if v < INF:
        return v
    return INF


# A min-tree over the S + 1 entries of one side (leaves T[off + P + i], P a power
# of two > S, unused leaves inf; node j holds the smaller of 2j and 2j + 1).  A
# step changes the entries of two jobs and of the idle pool only, so the best step
# is kept up to date in O(C^2 log S) per step instead of a rescan in O(S C^2).


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _tree_set(T: cython.double[::1], off: cython.Py_ssize_t, P: cython.Py_ssize_t, i: cython.Py_ssize_t,
              v: cython.double) -> cython.void:
    j: cython.Py_ssize_t = P + i
    T[off + j] = v
    j = j >> 1
    while j >= 1:
        if T[off + 2 * j] <= T[off + 2 * j + 1]:
            T[off + j] = T[off + 2 * j]
        else:
            T[off + j] = T[off + 2 * j + 1]
        j = j >> 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _tree_first(T: cython.double[::1], off: cython.Py_ssize_t, P: cython.Py_ssize_t, shift: cython.double,
                target: cython.double) -> cython.Py_ssize_t:
    """Lowest leaf ``i`` with ``T[leaf i] + shift == target``, given that the root meets it.

    Rounding is monotone, so a subtree holds such a leaf exactly when its
    minimum does; with ``target = min + 0.0`` this is the lowest minimum.
    """
    j: cython.Py_ssize_t = 1
    while j < P:
        if T[off + 2 * j] + shift == target:
            j = 2 * j
        else:
            j = 2 * j + 1
    return j - P


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _tree_best(T: cython.double[::1], offL: cython.Py_ssize_t, offR: cython.Py_ssize_t,
               P: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.Py_ssize_t]:
    """Best ``(side1(a) + side0(b), a, b)``, ``a != b``, of one structure (``inf, -1, -1``: none).

    The same choice as the scan: ``b`` is the lowest best partner of ``a``
    (the best entry of side 0, or the second best when that is ``a``), and
    ``a`` the lowest index of the smallest sum.
    """
    v1: cython.double = T[offL + 1]
    v2: cython.double
    j1: cython.Py_ssize_t
    j2: cython.Py_ssize_t = -1
    save: cython.double
    m: cython.double
    fa: cython.double = INF
    fb: cython.double = INF
    aa: cython.Py_ssize_t = -1
    ab: cython.Py_ssize_t = -1
    if not v1 < INF:
        return INF, -1, -1
    j1 = _tree_first(T, offL, P, 0.0, v1 + 0.0)
    save = T[offL + P + j1]
    _tree_set(T, offL, P, j1, INF)
    v2 = T[offL + 1]
    if v2 < INF:
        j2 = _tree_first(T, offL, P, 0.0, v2 + 0.0)
    _tree_set(T, offL, P, j1, save)
    if j2 >= 0 and T[offR + P + j1] < INF:  # a = j1 pairs with the second best
        fa = T[offR + P + j1] + v2
        aa = j1
    save = T[offR + P + j1]
    _tree_set(T, offR, P, j1, INF)
    m = T[offR + 1]
    if m < INF:  # every other a pairs with j1
        fb = m + v1
        if fb < INF:
            ab = _tree_first(T, offR, P, v1, fb)
    _tree_set(T, offR, P, j1, save)
    if ab >= 0 and (fb < fa or (fb == fa and ab < aa)):
        return fb, ab, j1
    if aa >= 0 and fa < INF:
        return fa, aa, j2
    return INF, -1, -1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _scan_pass(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
               comm: cython.const[cython.double][:, ::1], spec: cython.bint, cnt: cython.longlong[:, ::1],
          idle: cython.longlong[::1],
               X: cython.double[::1], n: cython.longlong[::1], B: cython.const[cython.double][::1],
               K: cython.longlong, replacing: cython.bint,
               pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
               diff: cython.longlong[::1], c: cython.Py_ssize_t,
               e: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.Py_ssize_t]:
    """The body of :func:`_scan_best` (one structure (c, e), a scan in O(S))."""
    S: cython.Py_ssize_t = rhoC.shape[0]
    a: cython.Py_ssize_t
    b: cython.Py_ssize_t
    t: cython.Py_ssize_t
    j1: cython.Py_ssize_t = -1
    j2: cython.Py_ssize_t = -1
    v: cython.double
    v1: cython.double = INF
    v2: cython.double = INF
    d: cython.double
    bd: cython.double = INF
    ba: cython.Py_ssize_t = -1
    bb: cython.Py_ssize_t = -1
    for b in range(S + 1):
        v = _leaf(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e, 0, b)
        v1, j1, v2, j2 = _push2(v, b, v1, j1, v2, j2)
    if j1 < 0:
        return INF, -1, -1
    for a in range(S + 1):
        d = _leaf(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e, 1, a)
        if not d < INF:
            continue
        v, t = _partner(a, v1, j1, v2, j2)
        if t < 0:
            continue
        d = d + v
        if d < bd:
            bd = d
            ba = a
            bb = t
    return bd, ba, bb


# Not inline: the class polish calls it twice (spec True and False, each then without a branch
# per job cost); inlined, both copies made the tree path's kernel slower (docs/results.md §0.2).
@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _scan_best(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
               comm: cython.const[cython.double][:, ::1], spec: cython.bint, cnt: cython.longlong[:, ::1],
               idle: cython.longlong[::1],
               X: cython.double[::1], n: cython.longlong[::1], B: cython.const[cython.double][::1],
               K: cython.longlong, replacing: cython.bint,
               pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
               diff: cython.longlong[::1], c: cython.Py_ssize_t,
               e: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.Py_ssize_t]:
    """:func:`_tree_best` of structure (c, e) by a scan in O(S) computing every entry (no trees).

    A move (``e < 0``) and a swap each get their own copy of :func:`_scan_pass`, in which
    :func:`_leaf`'s test of ``e`` is decided at compile time (Cython; Numba inlines it too).
    """
    if e < 0:
        return _scan_pass(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, -1)
    return _scan_pass(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e)


# The scan of _scan_pass over stored entries.  A twin of its two loops, not a call: with the
# entries' source as an argument of one body, GCC stopped inlining the computing scan into the
# class polish (12 % more of its instructions at K = 64, S = 8).  Tested against it and the
# trees with ties (tests/test_classes.py, trees="leaves").
@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _leaves_best(T: cython.const[cython.double][::1], offL: cython.Py_ssize_t, offR: cython.Py_ssize_t,
                 P: cython.Py_ssize_t,
                 S: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.Py_ssize_t]:
    """:func:`_tree_best` of one structure by a scan of its trees' leaves (``T[off + P + i]``, i <= S) in O(S)."""
    a: cython.Py_ssize_t
    b: cython.Py_ssize_t
    t: cython.Py_ssize_t
    j1: cython.Py_ssize_t = -1
    j2: cython.Py_ssize_t = -1
    v: cython.double
    v1: cython.double = INF
    v2: cython.double = INF
    d: cython.double
    bd: cython.double = INF
    ba: cython.Py_ssize_t = -1
    bb: cython.Py_ssize_t = -1
    for b in range(S + 1):
        v1, j1, v2, j2 = _push2(T[offL + P + b], b, v1, j1, v2, j2)
    if j1 < 0:
        return INF, -1, -1
    for a in range(S + 1):
        d = T[offR + P + a]
        if not d < INF:
            continue
        v, t = _partner(a, v1, j1, v2, j2)
        if t < 0:
            continue
        d = d + v
        if d < bd:
            bd = d
            ba = a
            bb = t
    return bd, ba, bb


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _stored_best(T: cython.double[::1], offL: cython.Py_ssize_t, offR: cython.Py_ssize_t, P: cython.Py_ssize_t,
                 trees: cython.bint,
                 S: cython.Py_ssize_t) -> tuple[cython.double, cython.Py_ssize_t, cython.Py_ssize_t]:
    """The best step of one structure from ``T``: :func:`_tree_best`, or :func:`_leaves_best` without the trees."""
    if trees:
        return _tree_best(T, offL, offR, P)
    return _leaves_best(T, offL, offR, P, S)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _structure(s: cython.Py_ssize_t, C: cython.Py_ssize_t) -> tuple[cython.Py_ssize_t, cython.Py_ssize_t]:
    """Classes ``(c, e)`` of structure ``s``: the moves of class 0..C-1 (``e = -1``), then the swaps (c < e) in lexical order."""
    c: cython.Py_ssize_t = 0
    r: cython.Py_ssize_t
    if s < C:
        return s, -1
    r = s - C
    while r >= C - 1 - c:
        r -= C - 1 - c
        c += 1
    return c, c + 1 + r


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _set_leaves(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                comm: cython.const[cython.double][:, ::1], spec: cython.bint, cnt: cython.longlong[:, ::1],
          idle: cython.longlong[::1],
                X: cython.double[::1], n: cython.longlong[::1], B: cython.const[cython.double][::1],
               K: cython.longlong, replacing: cython.bint,
                pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
                diff: cython.longlong[::1], T: cython.double[::1], P: cython.Py_ssize_t, trees: cython.bint,
                i: cython.Py_ssize_t) -> cython.void:
    """Refresh entry ``i`` (a job, or S) of every structure's two trees (``trees`` False: the leaves only)."""
    C: cython.Py_ssize_t = rhoC.shape[1]
    c: cython.Py_ssize_t
    e: cython.Py_ssize_t
    s: cython.Py_ssize_t
    side: cython.int
    v: cython.double
    for s in range(C * (C + 1) // 2):
        c, e = _structure(s, C)
        for side in range(2):
            v = _leaf(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e, side, i)
            if trees:
                _tree_set(T, (2 * s + side) * 2 * P, P, i, v)
            else:
                T[(2 * s + side) * 2 * P + P + i] = v


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _counts_total(work: cython.const[cython.double][::1], comm: cython.const[cython.double][:, ::1], spec: cython.bint,
                  X: cython.double[::1], n: cython.longlong[::1], replacing: cython.bint,
                  pen: cython.const[cython.double][::1], diff: cython.longlong[::1]) -> cython.double:
    """The total of the current ``X``, ``n`` (and restart losses), summed in job order."""
    total: cython.double = 0.0
    i: cython.Py_ssize_t
    for i in range(X.shape[0]):
        total += job_cost(work, comm, spec, i, X[i], n[i])
    if replacing:
        total += restart_loss(pen, diff)
    return total


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def polish_classes_kernel(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                          comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                          cnt: cython.longlong[:, ::1], max_steps: cython.longlong, X: cython.double[::1],
                          n: cython.longlong[::1], B: cython.double[::1], idle: cython.longlong[::1],
                          replacing: cython.bint,
                          pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
                          diff: cython.longlong[::1], T: cython.double[::1],
                          P: cython.Py_ssize_t, trees: cython.bint,
                          stop: cython.const[cython.longlong][::1]) -> cython.longlong:
    """Improve the counts ``cnt`` (S, C) in place by move/swap descent; return the steps taken.

    Parameters
    ----------
    rhoC : float64 (S, C)     throughput of one worker of class c for job i (0: not allowed)
    work : float64 (S,)
    comm : float64 (S, 3) or (S, K+1)   see :func:`job_cost`
    mc : int64 (C,)           workers per class; ``mc[c] - sum_i cnt[i, c]`` are idle
    cnt : int64 (S, C)        feasible counts (every job >= 1 worker), modified in place
    max_steps : int64         cap on accepted steps
    X, n, B : float64, int64, float64 (S,); idle : int64 (C,)   work arrays (``B[i]``: job i's
                              :func:`job_cost` now, which every candidate step of job i subtracts)
    replacing : bool          add restart losses: job i pays ``pen[i]`` unless its
                              counts equal ``curC[i]`` (docs/model.md §1.4)
    pen : float64 (S,); curC : int64 (S, C)   restart costs, current counts
    diff : int64 (S,)         work array (``sum_c |cnt - curC|`` per job)
    T : float64 (C (C + 1) * 2 P,), P, trees   work array of the trees (:func:`class_trees`): with
                              ``trees`` the best step is read off them, else from a scan of their
                              leaves; P = 0: a scan computing every entry (no T)
    stop : int64 (1,)         as in :func:`polish_kernel`: read before every step

    Notes
    -----
    Each step takes the best of:

    * move a class-c worker from a (job with >= 2 workers, or idle) to b != a;
    * swap: a gives a class-c worker and takes a class-e one (c < e), b does
      the opposite, a != b;

    the best partner of every a being the best b != a (:func:`_leaf` gives both
    halves).  A step is taken only if it lowers the total by more than
    ``1e-12`` of it, so the descent terminates.  Ties: first found in the order
    classes (moves of class 0..C-1, then swaps (c, e) in lexical order), then a,
    then b ascending.  A step taken is repeated (same classes, same jobs) while
    it still lowers the total by that margin, each repetition counting as a
    step: one class-level step moves a single worker.  With trees a step costs
    O(C^2 log S), with their leaves O(S C^2) reads, without O(S C^2) job costs.
    """
    spec: cython.bint = comm_is_spec(comm)
    S: cython.Py_ssize_t = rhoC.shape[0]
    C: cython.Py_ssize_t = rhoC.shape[1]
    K: cython.longlong = 0
    i: cython.Py_ssize_t
    c: cython.Py_ssize_t
    e: cython.Py_ssize_t
    s: cython.Py_ssize_t
    a: cython.Py_ssize_t
    b: cython.Py_ssize_t
    t: cython.Py_ssize_t
    bc: cython.Py_ssize_t
    be: cython.Py_ssize_t
    u: cython.longlong
    steps: cython.longlong = 0
    total0: cython.double
    est: cython.double
    thr: cython.double
    d: cython.double
    g: cython.double
    gap: cython.double
    fresh: cython.bint
    for i in range(S):
        _refresh(rhoC, cnt, X, n, i)
        B[i] = job_cost(work, comm, spec, i, X[i], n[i])
        if replacing:
            _class_diff(cnt, curC, diff, i)
    for c in range(C):
        K += mc[c]
        u = mc[c]
        for i in range(S):
            u -= cnt[i, c]
        idle[c] = u
    total0 = _counts_total(work, comm, spec, X, n, replacing, pen, diff)
    if not total0 < INF:
        return 0  # an infeasible start: no step lowers an infinite total
    est = total0
    if P > 0:
        for i in range(T.shape[0]):
            T[i] = INF
        for i in range(S + 1):
            _set_leaves(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, T, P, trees, i)
    while steps < max_steps:
        if stop[0] != 0:
            break
        # the best step over all structures, the first one on ties
        d = INF
        a = -1
        b = -1
        bc = -1
        be = -1
        for s in range(C * (C + 1) // 2):
            c, e = _structure(s, C)
            if P > 0:
                g, i, t = _stored_best(T, 2 * s * 2 * P, (2 * s + 1) * 2 * P, P, trees, S)
            elif spec:  # spec as a constant in each copy of the scan: no branch per job cost
                g, i, t = _scan_best(rhoC, work, comm, True, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e)
            else:
                g, i, t = _scan_best(rhoC, work, comm, False, cnt, idle, X, n, B, K, replacing, pen, curC, diff, c, e)
            if g < d:
                d = g
                a = i
                b = t
                bc = c
                be = e
        # take it while it lowers the total by more than REL_GAIN of it, then look again
        fresh = True
        while True:
            thr = -REL_GAIN * est
            # ``est`` is the total up to a few ulps of ``total0`` per step, far below
            # 1e-6 of it for any run within max_steps: only a gain that close to the
            # threshold needs the exact sum (O(S), most of the polish time at K = 100,000)
            gap = d - thr
            if gap < 0.0:
                gap = -gap
            if not gap > REL_GAIN * 1e-6 * total0:
                est = _counts_total(work, comm, spec, X, n, replacing, pen, diff)
                thr = -REL_GAIN * est
            if not d < thr:
                break
            fresh = False
            if a < S:
                cnt[a, bc] -= 1
                if be >= 0:
                    cnt[a, be] += 1
                _refresh(rhoC, cnt, X, n, a)
                B[a] = job_cost(work, comm, spec, a, X[a], n[a])
                if replacing:
                    _class_diff(cnt, curC, diff, a)
            else:
                idle[bc] -= 1
                if be >= 0:
                    idle[be] += 1
            if b < S:
                cnt[b, bc] += 1
                if be >= 0:
                    cnt[b, be] -= 1
                _refresh(rhoC, cnt, X, n, b)
                B[b] = job_cost(work, comm, spec, b, X[b], n[b])
                if replacing:
                    _class_diff(cnt, curC, diff, b)
            else:
                idle[bc] += 1
                if be >= 0:
                    idle[be] -= 1
            est += d
            steps += 1
            if P > 0:  # entries of a and b (S: the idle pool, whose entries depend on idle only)
                _set_leaves(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, T, P, trees, a)
                _set_leaves(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, T, P, trees, b)
            if steps >= max_steps:
                break
            # the same step again: its two halves, now
            d = (_leaf(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, bc, be, 1, a)
                 + _leaf(rhoC, work, comm, spec, cnt, idle, X, n, B, K, replacing, pen, curC, diff, bc, be, 0, b))
        if fresh:
            break  # the best step does not lower the total enough: a local optimum
    return steps


@cython.cfunc
@cython.exceptval(check=False)
def _polish_rows_classes_kernel(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                                comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                                class_of: cython.const[cython.longlong][::1],
                                members: cython.const[cython.longlong][::1],
                                cls_start: cython.const[cython.longlong][::1], rows: cython.const[cython.longlong][::1],
                                max_steps: cython.longlong, out_wj: cython.longlong[:, ::1],
                                out_total: cython.double[::1], out_stats: cython.longlong[:, ::1],
                                cnt: cython.longlong[:, :, ::1], X: cython.double[:, ::1], n: cython.longlong[:, ::1],
                                B: cython.double[:, ::1], idle: cython.longlong[:, ::1], replacing: cython.bint,
                                pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
                                current: cython.const[cython.longlong][::1], diff: cython.longlong[:, ::1],
                                T: cython.double[:, ::1], P: cython.Py_ssize_t, trees: cython.bint,
                                stop: cython.const[cython.longlong][::1], threads: cython.int) -> cython.void:
    j: cython.Py_ssize_t
    s: cython.Py_ssize_t
    for j in prange(rows.shape[0], nogil=True, num_threads=threads, schedule="dynamic"):
        s = rows[j]
        counts_of(out_wj[s], class_of, cnt[j])
        out_stats[s, 2] = polish_classes_kernel(rhoC, work, comm, mc, cnt[j], max_steps, X[j], n[j], B[j], idle[j],
                                                replacing, pen, curC, diff[j], T[j], P, trees, stop)
        if replacing:
            expand_counts_keep(cnt[j], members, cls_start, current, out_wj[s], diff[j])  # diff: taken
            out_total[s] = class_totals(rhoC, work, comm, cnt[j], X[j], n[j]) + class_restart_loss(
                pen, cnt[j], curC, diff[j])
        else:
            expand_counts(cnt[j], members, cls_start, out_wj[s])
            out_total[s] = class_totals(rhoC, work, comm, cnt[j], X[j], n[j])


#: Most float64 cells of the polish trees of one call (all rows): 256 MiB.  Above,
#: the class polish scans instead (many classes: C (C + 1) trees per row).
TREE_CELLS = 2**25
#: Fewest jobs for the trees: below, a scan in O(S C^2) per step is faster (measured in
#: docs/results.md §4).
TREE_MIN_JOBS = 128
#: Fewest jobs for the trees' leaves without the trees: each step then recomputes two jobs'
#: entries, where the scan computes every entry of the steps that look for a new best, which
#: costs less below (Gavel, 3 classes: leaves/scan time 1.31 at 8 jobs, 1.01 at 24, 0.78 at 64).
LEAF_MIN_JOBS = 24
#: Most float64 cells of the trees' leaves of one call (all rows) below :data:`TREE_MIN_JOBS`
#: jobs: 8 MiB.  Above, the scan computes every entry.
LEAF_CELLS = 2**20


def class_trees(S, C, rows=1, trees=None, cells=TREE_CELLS):
    """``(T, P, full)``: tree work arrays (m, C (C + 1) 2 P) for :func:`polish_classes_kernel`.

    ``full`` True: the trees, a step's best read off them in O(C^2 log S);
    False: their leaves only, kept up to date and scanned (O(S C^2) reads per
    step, two jobs' entries recomputed); P = 0: no work array, a scan that
    computes every entry of every step.  ``m = min(rows, cells // width)``
    rows fit in ``cells``: callers polish ``m`` rows at a time.  ``trees``:
    None chooses (the trees from :data:`TREE_MIN_JOBS` jobs when one row's
    fit, the leaves from :data:`LEAF_MIN_JOBS` when every row's fit in
    :data:`LEAF_CELLS`, else the full scan); True, ``"leaves"`` and False
    force each (the same steps).
    """
    P = 1
    while P < S + 1:
        P *= 2
    width = C * (C + 1) * 2 * P
    if trees is None:
        if S >= TREE_MIN_JOBS:
            trees = width <= cells
        else:
            trees = "leaves" if S >= LEAF_MIN_JOBS and width * rows <= LEAF_CELLS else False
    if trees is False:
        return np.zeros((rows, 1)), 0, False
    return np.zeros((max(1, min(rows, cells // width)), width)), P, trees is True


def polish_classes(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                   comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                   cnt: cython.longlong[:, ::1], max_steps: cython.longlong, restart=None, trees=None):
    """Improve the class counts ``cnt`` (int64 (S, C)) in place by :func:`polish_classes_kernel`; return the steps taken.

    ``restart``: None, or ``(pen, current, curC)`` (:func:`restart_arrays`;
    ``current`` unused, may be None), to add restart losses.  ``trees``: see
    :func:`class_trees` (True: keep the trees, ``"leaves"``: their leaves, False: scan; the same steps).
    """
    X: cython.double[::1] = np.zeros(rhoC.shape[0])
    n: cython.longlong[::1] = np.zeros(rhoC.shape[0], dtype=np.int64)
    B: cython.double[::1] = np.zeros(rhoC.shape[0])
    idle: cython.longlong[::1] = np.zeros(rhoC.shape[1], dtype=np.int64)
    diff: cython.longlong[::1] = np.zeros(rhoC.shape[0], dtype=np.int64)
    pen: cython.const[cython.double][::1]
    curC: cython.const[cython.longlong][:, ::1]
    replacing: cython.bint
    steps: cython.longlong
    replacing, pen, _, curC = restart_arrays(restart, rhoC.shape[0], rhoC.shape[1], 0)
    T2, P, full = class_trees(rhoC.shape[0], rhoC.shape[1], 1, trees)
    T: cython.double[::1] = T2[0]
    p: cython.Py_ssize_t = P
    tr: cython.bint = full
    go: cython.const[cython.longlong][::1] = _GO
    with cython.nogil:
        steps = polish_classes_kernel(rhoC, work, comm, mc, cnt, max_steps, X, n, B, idle, replacing, pen, curC, diff,
                                      T, p, tr, go)
    return steps


def polish_rows_classes(rhoC, work, comm, mc, class_of, members, cls_start, rows, max_steps, out_wj, out_total,
                        out_stats, threads=0, restart=None, tree_cells=TREE_CELLS, stop=None):
    """Polish ``out_wj[rows[j]]`` on class counts, in place and in parallel over ``j``.

    Each row is counted per class (``class_of``), polished by
    :func:`polish_classes_kernel`, expanded back to workers (``members``,
    ``cls_start``: see :func:`hetplace.smp.worker_classes`) and scored;
    ``out_total``, ``out_stats`` and ``threads`` as in :func:`polish_rows`.
    ``restart``: None, or ``(pen, current, curC)`` (:func:`restart_arrays`):
    restart costs (S,), the running placement (K,) and current counts per class (S, C); rows are
    then expanded keeping current workers (:func:`expand_counts_keep`) and
    their totals include the restart losses.  The rows are polished as many
    at a time as their trees fit in ``tree_cells`` (all of them, but for
    hundreds of thousands of jobs); each row's result does not depend on that.
    ``stop``: as in :func:`polish_rows`.
    """
    S, C = rhoC.shape
    replacing, pen, current, curC = restart_arrays(restart, S, C, out_wj.shape[1])
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    want = max(rows.shape[0], 1)
    T, P, full = class_trees(S, C, want, None, tree_cells)
    m = T.shape[0] if P > 0 else want
    cnt = np.zeros((m, S, C), dtype=np.int64)
    X, n, idle = np.zeros((m, S)), np.zeros((m, S), dtype=np.int64), np.zeros((m, C), dtype=np.int64)
    B = np.zeros((m, S))
    diff = np.zeros((m, S), dtype=np.int64)
    flag = _GO if stop is None else stop
    for a in range(0, rows.shape[0], m):
        if flag[0] != 0:
            return
        chunk = np.ascontiguousarray(rows[a:a + m])
        _polish_rows_classes_kernel(rhoC, work, comm, mc, class_of, members, cls_start, chunk, max_steps, out_wj,
                                    out_total, out_stats, cnt, X, n, B, idle, replacing, pen, curC, current, diff, T, P,
                                    full, flag, nt)


def expand_keep(cnt: cython.longlong[:, ::1], members: cython.const[cython.longlong][::1],
                cls_start: cython.const[cython.longlong][::1], current: cython.const[cython.longlong][::1],
                worker_job: cython.longlong[::1]):
    """Python entry of :func:`expand_counts_keep`: write the workers of the counts ``cnt`` into ``worker_job``."""
    taken: cython.longlong[::1] = np.zeros(cnt.shape[0], dtype=np.int64)
    with cython.nogil:
        expand_counts_keep(cnt, members, cls_start, current, worker_job, taken)


@cython.cfunc
@cython.exceptval(check=False)
def _keep_rows_kernel(class_of: cython.const[cython.longlong][::1], members: cython.const[cython.longlong][::1],
                      cls_start: cython.const[cython.longlong][::1], current: cython.const[cython.longlong][::1],
                      pen: cython.const[cython.double][::1], curC: cython.const[cython.longlong][:, ::1],
                      out_wj: cython.longlong[:, ::1], out_loss: cython.double[::1], cnt: cython.longlong[:, :, ::1],
                      diff: cython.longlong[:, ::1], threads: cython.int) -> cython.void:
    s: cython.Py_ssize_t
    for s in prange(out_wj.shape[0], nogil=True, num_threads=threads, schedule="static"):
        counts_of(out_wj[s], class_of, cnt[s])
        expand_counts_keep(cnt[s], members, cls_start, current, out_wj[s], diff[s])
        out_loss[s] = class_restart_loss(pen, cnt[s], curC, diff[s])


def keep_rows(class_of, members, cls_start, current, pen, curC, out_wj, threads=0):
    """Give every job its own current workers first, row by row; return the restart loss of each row.

    Each row of ``out_wj`` (int64 (N, K)) keeps its counts per exact class
    (``class_of``, ``members``, ``cls_start``: :func:`hetplace.smp.worker_classes`)
    and is re-expanded by :func:`expand_counts_keep`, which leaves its JCT
    unchanged (workers of an exact class are interchangeable) and keeps every
    job whose counts equal its current ones (``curC``, (S, C)).  Returns
    float64 (N,): the sum of ``pen`` over the jobs that still restart.
    """
    N = out_wj.shape[0]
    S, C = curC.shape
    cnt = np.zeros((N, S, C), dtype=np.int64)
    diff = np.zeros((N, S), dtype=np.int64)
    out_loss = np.zeros(N)
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    _keep_rows_kernel(class_of, members, cls_start, current, pen, curC, out_wj, out_loss, cnt, diff, nt)
    return out_loss
