"""SMP on worker classes: the market over counts, Numba backend (shared source).

A *worker class* is a set of workers with identical throughput columns (same
GPU type and same available speed).  When there are few classes -- a dedicated
cluster has one per GPU type -- a placement is fully described by the count
matrix ``cnt[i, c]`` (workers of class c given to job i), and both steps of an
SMP sample can work on it instead of on single workers.  This module holds the
market; the polish on classes is the single source :mod:`hetplace._core._polish`
(``polish_classes_kernel``, with ``counts_of`` and ``expand_counts``).

market (:func:`class_market`)
    The linearised market of docs/model.md §3.3 is a transportation problem between
    job slots and worker classes.  It is solved by the same exact auction
    (``auction_kernel``) with the roles of the sides swapped: the *slots* of
    each job arrive and the C worker classes are the nodes of the shortest-path
    search, so a search costs O(C^2) instead of O(S^2).  ``K - sum(sizes)``
    dummy slots worth 0 everywhere stand for the idle workers, so every class
    is filled exactly and the kernel's contract is unchanged.

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
from ._matching_py import auction_workspace_size, class_market_workspace_size  # noqa: F401 (re-exported)

__all__ = [
    "class_market_workspace_size",
    "class_totals",
    "fill_units",
    "unit_counts",
    "class_market",
    "class_market_py",
]


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
