"""Local-search polish of a placement (docs/model.md §3.7, "beyond the paper"), Numba kernel.

Best-improvement descent over three neighbourhoods:

* move: one worker from its job (or idle) to another job (or idle);
* swap: two workers of different jobs (or one of them idle) trade places.

Workers that are interchangeable (same type, same job, same speed) are
represented by the lowest-indexed one, so on dedicated clusters a pass costs
O((S G)^2) instead of O(K^2).  Each accepted step lowers the total JCT by more
than ``1e-12`` of its value, so the descent terminates.

The same source runs as plain Python: every function is registered with
``register_jitable`` (callable from Python as written, compiled when called from
Numba code), and ``polish_impl`` is the ``backend="python"`` entry; ``polish``
is its compiled form and ``_polish.pyx`` its Cython twin.  All three do the same
floating-point operations in the same order.
"""

import numpy as np
from numba import njit
from ._jit import JIT
from numba.extending import register_jitable


@register_jitable
def _job_cost(work, comm, i, X, n):
    return work[i] / X + comm[i, n]


@register_jitable
def assignment_total(rho, work, comm, worker_job):
    """True total JCT of ``worker_job`` (every job holds a worker), summed in job order."""
    S = rho.shape[0]
    X = np.zeros(S)
    n = np.zeros(S, dtype=np.int64)
    for k in range(worker_job.shape[0]):
        i = worker_job[k]
        if i >= 0:
            X[i] += rho[i, k]
            n[i] += 1
    total = 0.0
    for i in range(S):
        total += work[i] / X[i] + comm[i, n[i]]
    return total


@register_jitable
def _recompute(rho, worker_job, X, n, i):
    s = 0.0
    c = 0
    for k in range(worker_job.shape[0]):
        if worker_job[k] == i:
            s += rho[i, k]
            c += 1
    X[i] = s
    n[i] = c


@register_jitable
def _mark_reps(worker_job, worker_type, speed, uniform, n_jobs, n_types, rep, seen):
    """rep[k] = 1 if worker k is the first of its (job, type[, speed]) class."""
    K = worker_job.shape[0]
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


@register_jitable
def polish_impl(rho, work, comm, worker_type, speed, uniform, worker_job, max_steps):
    """Improve ``worker_job`` in place; return the number of steps taken.

    Parameters
    ----------
    rho : float64 (S, K)      worker throughput per job
    work : float64 (S,)       iterations * batch
    comm : float64 (S, K+1)   total communication time by job size
    worker_type : int64 (K,)
    speed : float64 (K,)
    uniform : bool            all speeds equal (enables class representatives)
    worker_job : int64 (K,)   feasible placement, modified in place
    max_steps : int64         cap on accepted steps
    """
    S = rho.shape[0]
    K = rho.shape[1]
    G = 0
    for k in range(K):
        if worker_type[k] + 1 > G:
            G = worker_type[k] + 1
    X = np.zeros(S)
    n = np.zeros(S, dtype=np.int64)
    for i in range(S):
        _recompute(rho, worker_job, X, n, i)
    rep = np.zeros(K, dtype=np.uint8)
    seen = np.zeros((S + 1) * G, dtype=np.uint8)
    steps = 0
    while steps < max_steps:
        total = 0.0
        for i in range(S):
            total += _job_cost(work, comm, i, X[i], n[i])
        best = -1e-12 * total
        kind = 0
        bk = -1
        bl = -1
        bb = -1
        _mark_reps(worker_job, worker_type, speed, uniform, S, G, rep, seen)
        # moves: worker k from job a (or idle) to job b (or idle)
        for k in range(K):
            if rep[k] == 0:
                continue
            a = worker_job[k]
            da = 0.0
            if a >= 0:
                if n[a] == 1:
                    continue
                da = _job_cost(work, comm, a, X[a] - rho[a, k], n[a] - 1) - _job_cost(work, comm, a, X[a], n[a])
            for b in range(-1, S):
                if b == a:
                    continue
                d = da
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += _job_cost(work, comm, b, X[b] + rho[b, k], n[b] + 1) - _job_cost(work, comm, b, X[b], n[b])
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
                    d += _job_cost(work, comm, a, X[a] - rho[a, k] + rho[a, l], n[a]) - _job_cost(work, comm, a, X[a], n[a])
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d += _job_cost(work, comm, b, X[b] - rho[b, l] + rho[b, k], n[b]) - _job_cost(work, comm, b, X[b], n[b])
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


polish = njit(**JIT)(polish_impl)
