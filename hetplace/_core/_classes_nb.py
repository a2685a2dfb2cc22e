"""SMP on worker classes: market and polish over counts, Numba backend (shared source).

A *worker class* is a set of workers with identical throughput columns (same
GPU type and same available speed).  When there are few classes -- a dedicated
cluster has one per GPU type -- a placement is fully described by the count
matrix ``cnt[i, c]`` (workers of class c given to job i), and both steps of an
SMP sample can work on it instead of on single workers:

market (:func:`class_market`)
    The linearised market of docs/model.md §3.3 is a transportation problem between
    job slots and worker classes.  It is solved by the same exact auction
    (``auction_kernel``) with the roles of the sides swapped: the *slots* of
    each job arrive and the C worker classes are the nodes of the shortest-path
    search, so a search costs O(C^2) instead of O(S^2).  ``K - sum(sizes)``
    dummy slots worth 0 everywhere stand for the idle workers, so every class
    is filled exactly and the kernel's contract is unchanged.
polish (:func:`polish_classes_impl`)
    The same move/swap best-improvement descent as ``_polish_nb`` (same
    neighbourhood: one worker to another job or idle, two workers of different
    jobs trading places), but the best move of class c and the best swap of a
    class pair (c, d) are found in O(S) each from the two best partners, so a
    step costs O(S C^2) instead of O((S C)^2).

Every function is registered with ``register_jitable``: called from Python it
runs as written (the ``backend="python"`` reference), called from Numba code
it is compiled; ``_smp.pyx`` holds the Cython twins.  All perform the same
floating-point operations in the same order, so the three backends agree bit
for bit.  Private: inputs are trusted (built by :mod:`hetplace.smp`).
"""

import numpy as np
from numba import njit
from ._jit import JIT
from numba.extending import register_jitable

from ._matching_nb import auction_kernel
from ._matching_py import auction_workspace_size

__all__ = [
    "class_market_workspace_size",
    "class_totals",
    "expand_counts",
    "counts_of",
    "fill_units",
    "unit_counts",
    "class_market",
    "class_market_py",
    "polish_classes_impl",
    "polish_classes",
]


@register_jitable
def _cost(work, comm, i, X, n):
    return work[i] / X + comm[i, n]


def class_market_workspace_size(S, C, K):
    """(n_float, n_int) work-buffer lengths of :func:`class_market`."""
    af, ai = auction_workspace_size(C, K)
    return 2 * S + 2 * C + 1 + K * C + af, K + S + 2 * S * C + ai


@register_jitable
def class_totals(rhoC, work, comm, cnt, X, n):
    """Set ``X[i]``, ``n[i]`` from the counts; return the true total JCT (inf if a job is empty).

    ``X[i] = sum_c cnt[i, c] * rhoC[i, c]`` summed in class order.
    """
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    for i in range(S):
        s = 0.0
        m = 0
        for c in range(C):
            if cnt[i, c] > 0:
                s += cnt[i, c] * rhoC[i, c]
                m += cnt[i, c]
        X[i] = s
        n[i] = m
    total = 0.0
    for i in range(S):
        if n[i] == 0:
            return np.inf
        total += work[i] / X[i] + comm[i, n[i]]
    return total


@register_jitable
def expand_counts(cnt, members, cls_start, worker_job):
    """Workers of each class (``members[cls_start[c]:cls_start[c+1]]``, ascending) to jobs 0, 1, ..., rest idle."""
    S = cnt.shape[0]
    C = cnt.shape[1]
    for c in range(C):
        p = cls_start[c]
        for i in range(S):
            for t in range(cnt[i, c]):
                worker_job[members[p]] = i
                p += 1
        while p < cls_start[c + 1]:
            worker_job[members[p]] = -1
            p += 1


@register_jitable
def counts_of(worker_job, class_of, cnt):
    """``cnt[i, c]`` = workers of class c placed on job i."""
    for i in range(cnt.shape[0]):
        for c in range(cnt.shape[1]):
            cnt[i, c] = 0
    for k in range(worker_job.shape[0]):
        i = worker_job[k]
        if i >= 0:
            cnt[i, class_of[k]] += 1


@register_jitable
def fill_units(rhoC, work, X, sizes, V):
    """Slot-major values: ``sizes[i]`` rows ``work[i] / X[i]^2 * rhoC[i, c]`` (NaN: not allowed), then 0-rows."""
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    u = 0
    for i in range(S):
        a = work[i] / (X[i] * X[i])
        for t in range(sizes[i]):
            for c in range(C):
                x = rhoC[i, c]
                if x > 0.0:
                    V[u, c] = a * x
                else:
                    V[u, c] = np.nan
            u += 1
    while u < V.shape[0]:
        for c in range(C):
            V[u, c] = 0.0
        u += 1


@register_jitable
def unit_counts(unit_col, sizes, cnt):
    """``cnt[i, c]`` = slots of job i that the auction gave class c."""
    S = cnt.shape[0]
    u = 0
    for i in range(S):
        for c in range(cnt.shape[1]):
            cnt[i, c] = 0
        for t in range(sizes[i]):
            c = unit_col[u]
            if c >= 0:
                cnt[i, c] += 1
            u += 1


@register_jitable
def _market_init(rhoC, mc, sizes, X, ones):
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    K = 0
    for c in range(C):
        K += mc[c]
        ones[c] = 1.0
    for i in range(S):
        s = 0.0
        for c in range(C):
            s += mc[c] * rhoC[i, c]
        X[i] = sizes[i] * (s / K)
    return K


@register_jitable
def _same_counts(a, b):
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            if a[i, c] != b[i, c]:
                return False
    return True


@register_jitable
def _copy_counts(src, dst):
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@register_jitable
def _after_round(r, status, rhoC, work, comm, sizes, unit_col, X, Xt, n, cnt, prev, cnt_best, best):
    """Book-keeping after market solve r: counts, true total, best so far, next X.

    Returns ``(stop, best)``: stop when infeasible or the counts repeat.
    """
    unit_counts(unit_col, sizes, cnt)
    total = class_totals(rhoC, work, comm, cnt, Xt, n)
    if r == 0 or total < best:
        best = total
        _copy_counts(cnt, cnt_best)
    if status != 0:
        return True, best
    if r > 0 and _same_counts(cnt, prev):
        return True, best
    _copy_counts(cnt, prev)
    for i in range(X.shape[0]):
        X[i] = Xt[i]
    return False, best


@njit(**JIT)
def class_market(rhoC, work, comm, mc, sizes, max_rounds, cnt_best, stats, fws, iws):
    """One SMP category on worker classes (iterated linearised market, docs/model.md §3.8).

    Parameters
    ----------
    rhoC : float64 (S, C)     throughput of one worker of class c for job i (0: not allowed)
    work : float64 (S,)       iterations * batch
    comm : float64 (S, K+1)   total communication time by job size
    mc : int64 (C,)           workers per class (sum K)
    sizes : int64 (S,)        the category, ``sizes[i] >= 1``, ``sum(sizes) <= K``
    max_rounds : int          market solves at most (>= 1)
    cnt_best : int64 (S, C), out
        Counts of the best assignment seen.
    stats : int64 (2,), out   ``[rounds, proposals]``
    fws, iws : work buffers of :func:`class_market_workspace_size` lengths.

    Returns
    -------
    float
        True total JCT of ``cnt_best`` (inf when a job got no worker).

    Notes
    -----
    Same iteration as ``_matching_nb.market_category_kernel`` (values
    ``work[i] / X_i^2 * rho``, X updated to the true throughput, stop on a
    repeat, on ``max_rounds`` or when infeasible; strictly better totals
    replace the best), with the market solved on classes (module docstring).
    ``X_i`` starts at ``sizes[i]`` times the job's mean worker throughput.
    """
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    X = fws[0:S]
    Xt = fws[S:2 * S]
    ones = fws[2 * S:2 * S + C]
    jp = fws[2 * S + C:2 * S + 2 * C + 1]
    K = 0
    for c in range(C):
        K += mc[c]
    b = 2 * S + 2 * C + 1
    V = fws[b:b + K * C].reshape((K, C))
    fsub = fws[b + K * C:]
    unit_col = iws[0:K]
    n = iws[K:K + S]
    cnt = iws[K + S:K + S + S * C].reshape((S, C))
    prev = iws[K + S + S * C:K + S + 2 * S * C].reshape((S, C))
    isub = iws[K + S + 2 * S * C:]
    _market_init(rhoC, mc, sizes, X, ones)
    best = np.inf
    rounds = 0
    props = 0
    for r in range(max_rounds):
        rounds += 1
        fill_units(rhoC, work, X, sizes, V)
        status = auction_kernel(V, ones, -np.inf, mc, unit_col, jp, stats, fsub, isub)
        props += stats[1]
        stop, best = _after_round(r, status, rhoC, work, comm, sizes, unit_col, X, Xt, n, cnt, prev, cnt_best, best)
        if stop:
            break
    stats[0] = rounds
    stats[1] = props
    return best


def class_market_py(rhoC, work, comm, mc, sizes, max_rounds, cnt_best, stats, fws=None, iws=None):
    """Plain-Python twin of :func:`class_market` (pure-Python auction); same contract."""
    from ._matching_py import auction_kernel as auction_py

    S, C = rhoC.shape
    K = int(np.sum(mc))
    X = np.empty(S)
    Xt = np.empty(S)
    ones = np.empty(C)
    jp = np.empty(C + 1)
    V = np.empty((K, C))
    unit_col = np.empty(K, dtype=np.int64)
    n = np.empty(S, dtype=np.int64)
    cnt = np.empty((S, C), dtype=np.int64)
    prev = np.empty((S, C), dtype=np.int64)
    _market_init(rhoC, mc, sizes, X, ones)
    best = np.inf
    rounds = 0
    props = 0
    for r in range(max_rounds):
        rounds += 1
        fill_units(rhoC, work, X, sizes, V)
        status = auction_py(V, ones, -np.inf, mc, unit_col, jp, stats)
        props += stats[1]
        stop, best = _after_round(r, status, rhoC, work, comm, sizes, unit_col, X, Xt, n, cnt, prev, cnt_best, best)
        if stop:
            break
    stats[0] = rounds
    stats[1] = props
    return best


@register_jitable
def _push2(v, j, v1, j1, v2, j2):
    """Insert candidate (v, j) into the two smallest (v1, j1) <= (v2, j2); strict ``<``."""
    if v < v1:
        return v, j, v1, j1
    if v < v2:
        return v1, j1, v, j
    return v1, j1, v2, j2


@register_jitable
def _partner(a, v1, j1, v2, j2):
    """Best of the two smallest entries whose index is not ``a`` (index -1: none)."""
    if j1 != a:
        return v1, j1
    return v2, j2


@register_jitable
def _refresh(rhoC, cnt, X, n, i):
    s = 0.0
    m = 0
    for c in range(rhoC.shape[1]):
        if cnt[i, c] > 0:
            s += cnt[i, c] * rhoC[i, c]
            m += cnt[i, c]
    X[i] = s
    n[i] = m


@register_jitable
def _step_gain(rhoC, work, comm, cnt, idle, X, n, kind, c, e, a, b):
    """Cost change of repeating the step just taken (``inf``: no longer possible).

    kind 1: a class-c worker from a to b; kind 2: a gives c and takes e, b the
    opposite.  Index S is the idle pool.
    """
    S = rhoC.shape[0]
    K = comm.shape[1] - 1
    g = 0.0
    if kind == 1:
        if a < S:
            if cnt[a, c] == 0 or n[a] == 1:
                return np.inf
            g += _cost(work, comm, a, X[a] - rhoC[a, c], n[a] - 1) - _cost(work, comm, a, X[a], n[a])
        elif idle[c] == 0:
            return np.inf
        if b < S:
            if n[b] >= K:
                return np.inf
            g += _cost(work, comm, b, X[b] + rhoC[b, c], n[b] + 1) - _cost(work, comm, b, X[b], n[b])
        return g
    if a < S:
        if cnt[a, c] == 0:
            return np.inf
        g += _cost(work, comm, a, X[a] - rhoC[a, c] + rhoC[a, e], n[a]) - _cost(work, comm, a, X[a], n[a])
    elif idle[c] == 0:
        return np.inf
    if b < S:
        if cnt[b, e] == 0:
            return np.inf
        g += _cost(work, comm, b, X[b] - rhoC[b, e] + rhoC[b, c], n[b]) - _cost(work, comm, b, X[b], n[b])
    elif idle[e] == 0:
        return np.inf
    return g


@register_jitable
def polish_classes_impl(rhoC, work, comm, mc, cnt, max_steps):
    """Improve the counts ``cnt`` (S, C) in place by move/swap descent; return the steps taken.

    Parameters
    ----------
    rhoC : float64 (S, C)     throughput of one worker of class c for job i (0: not allowed)
    work : float64 (S,)
    comm : float64 (S, K+1)
    mc : int64 (C,)           workers per class; ``mc[c] - sum_i cnt[i, c]`` are idle
    cnt : int64 (S, C)        feasible counts (every job >= 1 worker), modified in place
    max_steps : int64         cap on accepted steps

    Notes
    -----
    Index S stands for "idle" (cost 0, any class, never emptied).  Each step
    takes the best of:

    * move a class-c worker from a (job with >= 2 workers, or idle) to b != a:
      ``rem[a] + add[b]``;
    * swap: a gives a class-c worker and takes a class-d one (c < d), b does
      the opposite, a != b: ``g[a] + h[b]``;

    where the best partner of every a is the best b != a, read off the two
    smallest entries.  A step is taken only if it lowers the total by more
    than ``1e-12`` of it, so the descent terminates.  Ties: first found in
    the order classes, then a (and b by strict ``<``) ascending; moves before
    swaps.  A step taken is repeated (same classes, same jobs) while it still
    lowers the total by that margin, each repetition counting as a step: one
    class-level step moves a single worker, and at K = 4096 a full re-scan per
    worker was most of the decision time (``_step_gain``).
    """
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    K = comm.shape[1] - 1
    X = np.zeros(S)
    n = np.zeros(S, dtype=np.int64)
    idle = np.zeros(C, dtype=np.int64)
    for i in range(S):
        _refresh(rhoC, cnt, X, n, i)
    for c in range(C):
        u = mc[c]
        for i in range(S):
            u -= cnt[i, c]
        idle[c] = u
    steps = 0
    while steps < max_steps:
        total = 0.0
        for i in range(S):
            total += _cost(work, comm, i, X[i], n[i])
        best = -1e-12 * total
        kind = 0
        bc = -1
        bd = -1
        ba = -1
        bb = -1
        # moves of one class-c worker from a to b
        for c in range(C):
            v1 = np.inf
            j1 = -1
            v2 = np.inf
            j2 = -1
            for b in range(S + 1):
                if b < S:
                    x = rhoC[b, c]
                    if x <= 0.0 or n[b] >= K:  # K: every worker already on b
                        continue
                    v = _cost(work, comm, b, X[b] + x, n[b] + 1) - _cost(work, comm, b, X[b], n[b])
                else:
                    v = 0.0
                v1, j1, v2, j2 = _push2(v, b, v1, j1, v2, j2)
            for a in range(S + 1):
                if a < S:
                    if cnt[a, c] == 0 or n[a] == 1:
                        continue
                    r = _cost(work, comm, a, X[a] - rhoC[a, c], n[a] - 1) - _cost(work, comm, a, X[a], n[a])
                else:
                    if idle[c] == 0:
                        continue
                    r = 0.0
                v, t = _partner(a, v1, j1, v2, j2)
                if t < 0:
                    continue
                d = r + v
                if d < best:
                    best = d
                    kind = 1
                    bc = c
                    ba = a
                    bb = t
        # swaps: a gives c takes d, b gives d takes c
        # (the trade's cost change is written out in both loops: as a helper taking the
        # arrays it made the Numba kernel 13x slower at K=16384, S=1024)
        for c in range(C):
            for e in range(c + 1, C):
                v1 = np.inf
                j1 = -1
                v2 = np.inf
                j2 = -1
                for b in range(S + 1):
                    if b < S:
                        if cnt[b, e] == 0:
                            continue
                        x = rhoC[b, c]
                        if x <= 0.0:
                            continue
                        v = _cost(work, comm, b, X[b] - rhoC[b, e] + x, n[b]) - _cost(work, comm, b, X[b], n[b])
                    else:
                        if idle[e] == 0:
                            continue
                        v = 0.0
                    v1, j1, v2, j2 = _push2(v, b, v1, j1, v2, j2)
                if j1 < 0:
                    continue
                for a in range(S + 1):
                    if a < S:
                        if cnt[a, c] == 0:
                            continue
                        x = rhoC[a, e]
                        if x <= 0.0:
                            continue
                        g = _cost(work, comm, a, X[a] - rhoC[a, c] + x, n[a]) - _cost(work, comm, a, X[a], n[a])
                    else:
                        if idle[c] == 0:
                            continue
                        g = 0.0
                    v, t = _partner(a, v1, j1, v2, j2)
                    if t < 0:
                        continue
                    d = g + v
                    if d < best:
                        best = d
                        kind = 2
                        bc = c
                        bd = e
                        ba = a
                        bb = t
        if kind == 0:
            break
        # take the step, then repeat it while it still lowers the total by the same
        # margin (one class-level step moves one worker; this saves the re-scans)
        while True:
            if kind == 1:
                if ba < S:
                    cnt[ba, bc] -= 1
                    _refresh(rhoC, cnt, X, n, ba)
                else:
                    idle[bc] -= 1
                if bb < S:
                    cnt[bb, bc] += 1
                    _refresh(rhoC, cnt, X, n, bb)
                else:
                    idle[bc] += 1
            else:
                if ba < S:
                    cnt[ba, bc] -= 1
                    cnt[ba, bd] += 1
                    _refresh(rhoC, cnt, X, n, ba)
                else:
                    idle[bc] -= 1
                    idle[bd] += 1
                if bb < S:
                    cnt[bb, bd] -= 1
                    cnt[bb, bc] += 1
                    _refresh(rhoC, cnt, X, n, bb)
                else:
                    idle[bd] -= 1
                    idle[bc] += 1
            steps += 1
            if steps >= max_steps:
                break
            total = 0.0
            for i in range(S):
                total += _cost(work, comm, i, X[i], n[i])
            if not _step_gain(rhoC, work, comm, cnt, idle, X, n, kind, bc, bd, ba, bb) < -1e-12 * total:
                break
    return steps


polish_classes = njit(**JIT)(polish_classes_impl)
