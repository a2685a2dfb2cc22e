"""Pollux's NSGA-II over replicas per virtual node (docs/online.md §10.2) -- Numba kernel.

Kernel: inputs are trusted (built by :mod:`hetplace.online.goodput_pollux`); no checks here.
Random draws come from the counter-based generator of ``_categories`` (key, counter), so the
compiled kernel and the same source run as plain Python (``NUMBA_DISABLE_JIT=1``) give the same
search bit for bit.

Shapes: ``P`` individuals, ``J`` jobs, ``V`` virtual nodes of ``size`` GPUs each; an individual is
a ``(J, V)`` array of replicas.
"""
import numba as nb
import numpy as np

from ._jit import JIT
from ._source import load

_CAT = load("_categories", "numba")
rand_u01_k = _CAT.rand_u01_k
rand_below_k = _CAT.rand_below_k

__all__ = ["fitness", "utility", "repair", "offspring", "fronts", "crowding", "search"]

#: Added to every speedup before the power mean (a job with no GPUs has speedup 0).
EPS = 1e-3


@nb.njit(**JIT)
def _u01(key, ctr):
    x = rand_u01_k(key, ctr[0])
    ctr[0] += np.uint64(1)
    return x


@nb.njit(**JIT)
def _below(key, ctr, n):
    x = rand_below_k(key, ctr[0], n)
    ctr[0] += np.uint64(1)
    return x


@nb.njit(**JIT)
def fitness(ind, stack, caps, base, fac, p):
    """Power mean (power ``p``) over jobs of speedup/4 (+EPS), a changed job's speedup times ``fac``.

    ``stack[j, n, r]``: speedup of job ``j`` on ``n`` virtual nodes with ``r`` replicas (replicas
    past ``caps[j]`` count as ``caps[j]``, nodes past the table's last as its last).
    """
    J, V = ind.shape
    acc = 0.0
    nmax = stack.shape[1] - 1
    for j in range(J):
        n = 0
        r = 0
        changed = False
        for v in range(V):
            x = ind[j, v]
            if x > 0:
                n += 1
                r += x
            if x != base[j, v]:
                changed = True
        s = stack[j, min(n, nmax), min(r, caps[j])] / 4.0
        if changed:
            s *= fac[j]
        acc += (s + EPS) ** p
    return (acc / J) ** (1.0 / p)


@nb.njit(**JIT)
def utility(ind, stack, caps, size):
    """Pollux's cluster utility: each job's share of the GPUs of the active virtual nodes (those with
    any replica) weighted by its speedup per replica, summed: ``sum_j speedup_j / active GPUs``."""
    J, V = ind.shape
    nmax = stack.shape[1] - 1
    active = 0
    for v in range(V):
        for j in range(J):
            if ind[j, v] > 0:
                active += 1
                break
    if active == 0:
        return 0.0
    tot = 0.0
    for j in range(J):
        n = 0
        r = 0
        for v in range(V):
            if ind[j, v] > 0:
                n += 1
                r += ind[j, v]
        if r > 0:
            tot += stack[j, min(n, nmax), min(r, caps[j])]
    return tot / (active * size)


@nb.njit(**JIT)
def repair(ind, caps, size, pinned, base, key, ctr):
    """Pollux's repair of one individual, in place; pinned jobs are set to ``base`` before and after.

    Negative counts become 0; on each virtual node, from the second distributed job present (in
    job order) on, every job's replicas there are zeroed (Pollux's literal cumulative rule: single-node
    jobs listed after it too); each job keeps at most ``caps[j]`` replicas over its nodes taken
    in a random order; each node holds at most ``size``, filled in job order.
    """
    J, V = ind.shape
    for j in range(J):
        if pinned[j]:
            for v in range(V):
                ind[j, v] = base[j, v]
    dist = np.zeros(J, dtype=np.bool_)
    for j in range(J):
        n = 0
        for v in range(V):
            if ind[j, v] < 0:
                ind[j, v] = 0
            if ind[j, v] > 0:
                n += 1
        dist[j] = n > 1
    for v in range(V):
        seen = 0  # distributed jobs present on v so far, in job order
        for j in range(J):
            if dist[j] and ind[j, v] > 0:
                seen += 1
            if seen >= 2:
                ind[j, v] = 0
    order = np.empty(V, dtype=np.int64)
    for j in range(J):
        for v in range(V):  # Fisher-Yates: a random order of the nodes
            order[v] = v
        for v in range(V - 1, 0, -1):
            w = _below(key, ctr, v + 1)
            t = order[v]
            order[v] = order[w]
            order[w] = t
        room = caps[j]
        for k in range(V):
            v = order[k]
            x = min(ind[j, v], room)
            ind[j, v] = x
            room -= x
    for v in range(V):
        room = size
        for j in range(J):
            x = min(ind[j, v], room)
            ind[j, v] = x
            room -= x
    for j in range(J):
        if pinned[j]:
            for v in range(V):
                ind[j, v] = base[j, v]


@nb.njit(**JIT)
def _tournament(rank, crowd, a, b):
    """NSGA-II's binary tournament: the lower front, then the larger crowding distance, then ``a``."""
    if rank[a] != rank[b]:
        return a if rank[a] < rank[b] else b
    return a if crowd[a] >= crowd[b] else b


@nb.njit(**JIT)
def offspring(pop, rank, crowd, base, size, key, ctr, kid):
    """One child into ``kid``: binary tournaments, one-point crossover over jobs, Pollux's mutation.

    Mutation: a job's row back to ``base`` (probability 0.1); a job selected with probability 0.1
    has each count zeroed with probability 0.1; then on every node with free GPUs a job's count is
    redrawn uniformly in ``[its count, size]`` with probability ``p1 + p2 - p1 p2`` (``p1`` = 1 /
    nodes with free GPUs, ``p2`` = 1 / such nodes the job is on, if it is on this one).
    """
    P, J, V = pop.shape
    a0 = _below(key, ctr, P)
    a1 = _below(key, ctr, P)
    pa = _tournament(rank, crowd, a0, a1)
    b0 = _below(key, ctr, P)
    b1 = _below(key, ctr, P)
    pb = _tournament(rank, crowd, b0, b1)
    cut = _below(key, ctr, J + 1)
    for j in range(J):
        src = pa if j < cut else pb
        reset = _u01(key, ctr) < 0.1
        sel = _u01(key, ctr) < 0.1
        for v in range(V):
            x = base[j, v] if reset else pop[src, j, v]
            if sel and _u01(key, ctr) < 0.1:
                x = 0
            kid[j, v] = x
    free = np.empty(V, dtype=np.int64)
    nfit = 0
    for v in range(V):
        u = 0
        for j in range(J):
            u += kid[j, v]
        free[v] = size - u
        if free[v] > 0:
            nfit += 1
    if nfit == 0:
        return
    p1 = 1.0 / nfit
    for j in range(J):
        nhas = 0
        for v in range(V):
            if free[v] > 0 and kid[j, v] > 0:
                nhas += 1
        for v in range(V):
            if free[v] <= 0:
                continue
            q = p1
            if kid[j, v] > 0:
                p2 = 1.0 / nhas
                q = p1 + p2 - p1 * p2
            if _u01(key, ctr) < q:
                lo = min(max(kid[j, v], 0), size)
                kid[j, v] = lo + _below(key, ctr, size - lo + 1)


@nb.njit(**JIT)
def _same(a, b):
    J, V = a.shape
    for j in range(J):
        for v in range(V):
            if a[j, v] != b[j, v]:
                return False
    return True


@nb.njit(**JIT)
def fronts(M, U, idx):
    """Non-dominated fronts (both objectives maximised) of the individuals ``idx``: rank per position."""
    n = idx.shape[0]
    rank = np.full(n, -1, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)  # how many dominate each
    for a in range(n):
        for b in range(n):
            i, k = idx[a], idx[b]
            if M[k] >= M[i] and U[k] >= U[i] and (M[k] > M[i] or U[k] > U[i]):
                count[a] += 1
    r = 0
    left = n
    while left > 0:
        cur = np.nonzero((count == 0) & (rank < 0))[0]
        for a in cur:
            rank[a] = r
        left -= cur.shape[0]
        for a in cur:
            i = idx[a]
            for b in range(n):
                k = idx[b]
                if rank[b] < 0 and M[i] >= M[k] and U[i] >= U[k] and (M[i] > M[k] or U[i] > U[k]):
                    count[b] -= 1
        r += 1
    return rank


@nb.njit(**JIT)
def crowding(M, U, idx):
    """Crowding distance of each of ``idx`` (one front) over the two objectives (ends: inf)."""
    n = idx.shape[0]
    d = np.zeros(n)
    if n <= 2:
        d[:] = np.inf
        return d
    for obj in range(2):
        f = np.empty(n)
        for a in range(n):
            f[a] = M[idx[a]] if obj == 0 else U[idx[a]]
        order = np.argsort(f, kind="mergesort")
        span = f[order[n - 1]] - f[order[0]]
        d[order[0]] = np.inf
        d[order[n - 1]] = np.inf
        if span > 0:
            for k in range(1, n - 1):
                d[order[k]] += (f[order[k + 1]] - f[order[k - 1]]) / span
    return d


@nb.njit(**JIT)
def _survive(M, U, idx, population):
    """NSGA-II's survival: whole fronts in order, the front that overflows by crowding distance
    (largest first; ties in pool order).  Returns ``(chosen, rank, crowd)`` of the survivors."""
    rank = fronts(M, U, idx)
    n = idx.shape[0]
    crowd = np.zeros(n)
    for r in range(rank.max() + 1):
        members = np.nonzero(rank == r)[0]
        d = crowding(M, U, idx[members])
        for k in range(members.shape[0]):
            crowd[members[k]] = d[k]
    key = np.empty(n)
    for a in range(n):  # rank first, then the larger crowding distance
        key[a] = rank[a] * 4.0 - (2.0 if crowd[a] == np.inf else crowd[a] / (1.0 + crowd[a]))
    order = np.argsort(key, kind="mergesort")[:population]
    return idx[order], rank[order], crowd[order]


@nb.njit(**JIT)
def search(pop0, base, pinned, caps, stack, fac, size, population, generations, p, key):
    """Pollux's NSGA-II over (power mean of speedups, cluster utility), both maximised.

    ``pop0`` seeds it (each individual repaired); every generation breeds ``population``
    children (binary tournaments by front and crowding distance, :func:`offspring`,
    :func:`repair`), pools them with the parents, drops repeated individuals (the first kept)
    and keeps ``population`` by NSGA-II's survival (:func:`_survive`).  Returns the
    non-dominated front of the last population, largest power mean first (ties: population
    order), and those power means.
    """
    ctr = np.zeros(1, dtype=np.uint64)
    n0, J, V = pop0.shape
    pop = pop0.copy()
    M = np.empty(n0)
    U = np.empty(n0)
    for i in range(n0):
        repair(pop[i], caps, size, pinned, base, key, ctr)
        M[i] = fitness(pop[i], stack, caps, base, fac, p)
        U[i] = utility(pop[i], stack, caps, size)
    sel, rank, crowd = _survive(M, U, _distinct(pop, M), population)
    pop, M, U = pop[sel].copy(), M[sel].copy(), U[sel].copy()
    for _ in range(generations):
        P = pop.shape[0]
        allp = np.empty((P + population, J, V), dtype=pop.dtype)
        allM = np.empty(P + population)
        allU = np.empty(P + population)
        allp[:P] = pop
        allM[:P] = M
        allU[:P] = U
        for k in range(population):
            kid = allp[P + k]
            offspring(pop, rank, crowd, base, size, key, ctr, kid)
            repair(kid, caps, size, pinned, base, key, ctr)
            allM[P + k] = fitness(kid, stack, caps, base, fac, p)
            allU[P + k] = utility(kid, stack, caps, size)
        sel, rank, crowd = _survive(allM, allU, _distinct(allp, allM), population)
        pop, M, U = allp[sel].copy(), allM[sel].copy(), allU[sel].copy()
    front = np.nonzero(rank == 0)[0]
    order = front[np.argsort(-M[front], kind="mergesort")]
    return pop[order].copy(), M[order].copy()


@nb.njit(**JIT)
def _distinct(pop, M):
    """Positions of the individuals of ``pop`` not seen before in it (equal individuals have equal ``M``)."""
    n = pop.shape[0]
    keep = np.ones(n, dtype=np.bool_)
    for a in range(n):
        if not keep[a]:
            continue
        for b in range(a + 1, n):
            if keep[b] and M[b] == M[a] and _same(pop[a], pop[b]):
                keep[b] = False
    return np.nonzero(keep)[0]
