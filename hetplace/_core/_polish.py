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

__all__ = ["COMPILED", "job_cost", "assignment_total", "polish_kernel", "polish", "polish_rows"]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

#: A step must lower the total JCT by more than this fraction of it.
REL_GAIN = cython.declare(cython.double, 1e-12)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def job_cost(work: cython.const[cython.double][::1], comm: cython.const[cython.double][:, ::1],
             i: cython.Py_ssize_t, X: cython.double, n: cython.longlong) -> cython.double:
    """Total time of job ``i`` with aggregate throughput ``X`` on ``n`` workers."""
    return work[i] / X + comm[i, n]


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def assignment_total(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                     comm: cython.const[cython.double][:, ::1], worker_job: cython.longlong[::1],
                     X: cython.double[::1], n: cython.longlong[::1]) -> cython.double:
    """True total JCT of ``worker_job`` (every job holds a worker), summed in job order; ``X``, ``n``: (S,) work arrays."""
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
        total += work[i] / X[i] + comm[i, n[i]]
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
@cython.nogil
@cython.exceptval(check=False)
def polish_kernel(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                  comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1],
                  uniform: cython.bint, worker_job: cython.longlong[::1], max_steps: cython.longlong,
                  X: cython.double[::1], n: cython.longlong[::1], rep: cython.uchar[::1],
                  seen: cython.uchar[::1]) -> cython.longlong:
    """Improve ``worker_job`` in place; return the number of steps taken.

    Parameters
    ----------
    rho : float64 (S, K)      worker throughput per job
    work : float64 (S,)       iterations * batch
    comm : float64 (S, K+1)   total communication time by job size
    worker_type : int64 (K,)  types 0..G-1
    uniform : bool            all speeds equal (enables class representatives)
    worker_job : int64 (K,)   feasible placement, modified in place
    max_steps : int64         cap on accepted steps
    X, n : float64, int64 (S,)         work arrays
    rep, seen : uint8 (K,), ((S+1) G,)  work arrays
    """
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
    for k in range(K):
        if worker_type[k] + 1 > G:
            G = worker_type[k] + 1
    for i in range(S):
        _recompute(rho, worker_job, X, n, i)
    while steps < max_steps:
        total = 0.0
        for i in range(S):
            total += job_cost(work, comm, i, X[i], n[i])
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
            if a >= 0:
                if n[a] == 1:
                    continue
                da = job_cost(work, comm, a, X[a] - rho[a, k], n[a] - 1) - job_cost(work, comm, a, X[a], n[a])
            for b in range(-1, S):
                if b == a:
                    continue
                d = da
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += job_cost(work, comm, b, X[b] + rho[b, k], n[b] + 1) - job_cost(work, comm, b, X[b], n[b])
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
                    d += job_cost(work, comm, a, X[a] - rho[a, k] + rho[a, l], n[a]) - job_cost(work, comm, a, X[a], n[a])
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += job_cost(work, comm, b, X[b] - rho[b, l] + rho[b, k], n[b]) - job_cost(work, comm, b, X[b], n[b])
                if d < best:
                    best = d
                    kind = 2
                    bk = k
                    bl = l
        if kind == 0:
            break
        if kind == 1:
            a = worker_job[bk]
            worker_job[bk] = bb
            if a >= 0:
                _recompute(rho, worker_job, X, n, a)
            if bb >= 0:
                _recompute(rho, worker_job, X, n, bb)
        else:
            a = worker_job[bk]
            b = worker_job[bl]
            worker_job[bk] = b
            worker_job[bl] = a
            if a >= 0:
                _recompute(rho, worker_job, X, n, a)
            if b >= 0:
                _recompute(rho, worker_job, X, n, b)
        steps += 1
    return steps


@cython.cfunc
@cython.exceptval(check=False)
def _polish_rows_kernel(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                        comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1],
                        uniform: cython.bint, rows: cython.const[cython.longlong][::1], max_steps: cython.longlong,
                        out_wj: cython.longlong[:, ::1], out_total: cython.double[::1],
                        out_stats: cython.longlong[:, ::1], X: cython.double[:, ::1], n: cython.longlong[:, ::1],
                        rep: cython.uchar[:, ::1], seen: cython.uchar[:, ::1], threads: cython.int) -> cython.void:
    j: cython.Py_ssize_t
    s: cython.Py_ssize_t
    for j in prange(rows.shape[0], nogil=True, num_threads=threads, schedule="dynamic"):
        s = rows[j]
        out_stats[s, 2] = polish_kernel(rho, work, comm, worker_type, uniform, out_wj[s], max_steps,
                                        X[j], n[j], rep[j], seen[j])
        out_total[s] = assignment_total(rho, work, comm, out_wj[s], X[j], n[j])


def _workspace(R, S, K, worker_type):
    """Work arrays of :func:`polish_kernel` for ``R`` concurrent rows: X, n (R, S); rep (R, K); seen (R, (S+1) G)."""
    G = int(np.max(worker_type)) + 1 if K > 0 else 0
    return (np.zeros((R, S)), np.zeros((R, S), dtype=np.int64), np.zeros((R, K), dtype=np.uint8),
            np.zeros((R, (S + 1) * G), dtype=np.uint8))


def polish(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
           comm: cython.const[cython.double][:, ::1], worker_type: cython.const[cython.longlong][::1], speed,
           uniform: cython.bint, worker_job: cython.longlong[::1], max_steps: cython.longlong):
    """Improve ``worker_job`` (int64 (K,)) in place by :func:`polish_kernel`; return the steps taken.

    ``speed`` is accepted for the common signature of the polish entries and
    not used (``uniform`` says whether workers of a type are interchangeable).
    """
    X: cython.double[::1]
    n: cython.longlong[::1]
    rep: cython.uchar[::1]
    seen: cython.uchar[::1]
    steps: cython.longlong
    ws = _workspace(1, rho.shape[0], rho.shape[1], worker_type)
    X, n, rep, seen = ws[0][0], ws[1][0], ws[2][0], ws[3][0]
    with cython.nogil:
        steps = polish_kernel(rho, work, comm, worker_type, uniform, worker_job, max_steps, X, n, rep, seen)
    return steps


def polish_rows(rho, work, comm, worker_type, speed, uniform, rows, max_steps, out_wj, out_total, out_stats,
                threads=0):
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
    """
    S, K = rho.shape
    X, n, rep, seen = _workspace(rows.shape[0], S, K, worker_type)
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    _polish_rows_kernel(rho, work, comm, worker_type, uniform, rows, max_steps, out_wj, out_total, out_stats,
                        X, n, rep, seen, nt)
