"""Deferred-acceptance matching kernels (docs/model.md §3.3-3.5), Numba backend.

Private: inputs are trusted (validated by :mod:`hetplace.matching`, or built by
the SMP driver); nothing here checks shapes, dtypes or values.  Every kernel is
``@njit(**JIT)``, allocates nothing (callers pass work
buffers), and performs exactly the floating-point operations, in exactly the
order, of :mod:`hetplace._core._matching_py` and :mod:`hetplace._core._matching`
so that the three backends agree bit for bit.

Kernels
-------
auction_kernel
    Price form: exact ascending-price auction (market-clearing prices) for
    "each job i gets exactly caps[i] workers, each worker at most one job",
    maximising the total value.
gale_shapley_kernel
    Ordinal form of the SMP market: job-proposing deferred acceptance with
    slots on the lists below (``hetplace.deferred_acceptance`` runs the
    single-source kernel of :mod:`hetplace._core._ordinal` instead).
job_order_kernel, relative_rank_kernel
    Preference lists of the SMP market's ordinal form (built once per problem).
market_category_kernel
    One SMP category: iterated linearised valuations, price or ordinal market,
    true total JCT of the best assignment seen.

Work buffers
------------
``fws`` (float64) and ``iws`` (int64) of at least the lengths returned by
:func:`auction_workspace_size`, :func:`gale_shapley_workspace_size` or
:func:`market_workspace_size` (plain-Python helpers defined in
``_matching_py`` and re-exported by every backend).
Their contents on entry do not matter.
"""

import numpy as np
from numba import njit
from ._jit import JIT

from ._matching_py import (  # noqa: F401  (re-exported: shared by all backends)
    FORM_ORDINAL,
    FORM_PRICE,
    auction_workspace_size,
    gale_shapley_workspace_size,
    market_workspace_size,
)

__all__ = [
    "FORM_PRICE",
    "FORM_ORDINAL",
    "auction_workspace_size",
    "gale_shapley_workspace_size",
    "market_workspace_size",
    "auction_kernel",
    "gale_shapley_kernel",
    "job_order_kernel",
    "relative_rank_kernel",
    "market_category_kernel",
]


@njit(**JIT)
def _sort_desc(keys, idx, n, tmp):
    """Sort ``idx[0:n]`` by ``keys[idx]`` descending, ties by index ascending.

    Bottom-up merge sort; ``tmp`` is scratch of length >= n.  The order is a
    total order, so any correct sort returns the same permutation.
    """
    width = 1
    in_idx = True  # current data lives in idx (True) or tmp (False)
    while width < n:
        start = 0
        while start < n:
            mid = start + width
            if mid > n:
                mid = n
            hi = start + 2 * width
            if hi > n:
                hi = n
            a = start
            b = mid
            o = start
            while a < mid and b < hi:
                if in_idx:
                    ia = idx[a]
                    ib = idx[b]
                else:
                    ia = tmp[a]
                    ib = tmp[b]
                ka = keys[ia]
                kb = keys[ib]
                if ka > kb or (ka == kb and ia < ib):
                    t = ia
                    a += 1
                else:
                    t = ib
                    b += 1
                if in_idx:
                    tmp[o] = t
                else:
                    idx[o] = t
                o += 1
            while a < mid:
                if in_idx:
                    tmp[o] = idx[a]
                else:
                    idx[o] = tmp[a]
                a += 1
                o += 1
            while b < hi:
                if in_idx:
                    tmp[o] = idx[b]
                else:
                    idx[o] = tmp[b]
                b += 1
                o += 1
            start = hi
        in_idx = not in_idx
        width *= 2
    if not in_idx:
        for t in range(n):
            idx[t] = tmp[t]


@njit(**JIT)
def _cell_find(cell_cls, cellpos, cls_first, off, ncell, m, c):
    """Position (within job m's cells) of class c's cell, or -1."""
    if cls_first[c + 1] - cls_first[c] == 1:
        return cellpos[c]
    for t in range(ncell[m]):
        if cell_cls[off[m] + t] == c:
            return t
    return -1


@njit(**JIT)
def auction_kernel(vals_t, scale, lo, caps, worker_job, job_price, stats, fws, iws):
    """Welfare-maximising assignment by an exact ascending-price auction.

    Parameters
    ----------
    vals_t : float64 (K, S), C-contiguous
        Raw values, worker-major; pair (job i, worker k) is allowed iff
        ``vals_t[k, i] > lo`` (NaN is never allowed) and is then worth
        ``scale[i] * vals_t[k, i]``.
    scale : float64 (S,)
        Per-job multiplier (ones for a plain value matrix).
    lo : float
        Allowed-pair threshold (``-inf``: every non-NaN; ``0.0``: throughput > 0).
    caps : int64 (S,)
        Exact number of workers of each job; ``sum(caps) <= K``.
    worker_job : int64 (K,), out
        Job of every worker, -1 idle.  Only allowed pairs are returned.
    job_price : float64 (S + 1,), out
        Final price of a slot of each job; index S is the idle pseudo-job.
    stats : int64 (2,), out
        ``[augmenting searches, proposals]``; a proposal is one worker moving
        into a job (an arriving worker's or a displaced worker's).
    fws, iws : float64, int64 work buffers (:func:`auction_workspace_size`).

    Returns
    -------
    int
        0 when every job got its capacity, 1 when the capacities cannot be
        filled with allowed pairs (infeasible; the assignment is then partial).

    Notes
    -----
    The exact ascending auction of Demange, Gale and Sotomayor (1986), which
    ends at the minimal market-clearing prices, realised as successive
    shortest augmenting paths over the S + 1 jobs (the Hungarian method of
    Kuhn and Munkres, for the transportation problem).  An idle pseudo-job
    (index S, ``K - sum(caps)`` slots, value 0 for every worker) squares the
    market.  Workers arrive one at a time (largest regret ``best - second best
    value`` first, ties by index) and propose to a job of highest net value
    ``v[i, k] - q[i]``.  A job with a free slot accepts; a full job keeps the
    proposal by passing one of its workers on to another job, along the
    cheapest chain of such displacements that ends in a free slot (Dijkstra on
    the job graph; edge i -> l costs the cheapest
    ``(v[i, w] - q[i]) - (v[l, w] - q[l]) >= 0`` over workers w of job i).  The
    prices of every job nearer than that free slot then rise by the difference
    of distances, so prices only ascend, free slots cost 0 and every placed
    worker sits at a job of maximal net value.  When all workers are placed
    the prices ``q`` and payoffs ``pi[k] = max_i v[i, k] - q[i]`` are an
    optimal dual solution (complementary slackness), so the total value is
    maximal, exactly up to floating-point rounding (reduced costs are clamped
    at 0).

    Runs of consecutive workers with identical values (e.g. workers of one
    type at uniform speed) are merged into classes and moved in bulk, by the
    bottleneck of the chain.  The cheapest class of every job pair (i, l) is
    cached; when it leaves job i the entry turns stale but keeps its key as a
    lower bound, and is recomputed only when that bound could shorten a path.
    Memory O(K + S^2); time O(S * settled jobs) per search, at most one search
    per worker and one per class of identical workers in the best case.
    """
    K = vals_t.shape[0]
    S = vals_t.shape[1]
    J = S + 1
    # float buffers
    d = fws[0:J]
    q = fws[J:2 * J]
    cmin = fws[2 * J:2 * J + J * J]
    regret = fws[2 * J + J * J:2 * J + J * J + K]
    # int buffers
    cap = iws[0:J]
    off = iws[J:2 * J]
    cnt = iws[2 * J:3 * J]
    ncell = iws[3 * J:4 * J]
    settled = iws[4 * J:5 * J]
    pj = iws[5 * J:6 * J]
    pw = iws[6 * J:7 * J]
    carg = iws[7 * J:7 * J + J * J]
    b = 7 * J + J * J
    cell_cls = iws[b:b + K]
    cell_cnt = iws[b + K:b + 2 * K]
    cls_first = iws[b + 2 * K:b + 3 * K + 1]
    supply = iws[b + 3 * K + 1:b + 4 * K + 1]
    cellpos = iws[b + 4 * K + 1:b + 5 * K + 1]
    order = iws[b + 5 * K + 1:b + 6 * K + 1]
    tmp = iws[b + 6 * K + 1:b + 7 * K + 1]

    tot = 0
    for i in range(S):
        cap[i] = caps[i]
        off[i] = tot
        tot += caps[i]
    cap[S] = K - tot
    off[S] = tot
    for j in range(J):
        cnt[j] = 0
        ncell[j] = 0
        q[j] = 0.0
        for l in range(J):
            cmin[j * J + l] = np.inf
            carg[j * J + l] = -1

    # classes: runs of consecutive workers with identical values
    C = 0
    for k in range(K):
        worker_job[k] = -1
        same = k > 0
        if same:
            for j in range(S):
                if cap[j] == 0:
                    continue
                x = vals_t[k, j]
                y = vals_t[k - 1, j]
                ax = x > lo
                ay = y > lo
                if ax != ay or (ax and x != y):
                    same = False
                    break
        if not same:
            cls_first[C] = k
            C += 1
    cls_first[C] = K

    # arrival order: largest regret first (forced classes have regret inf)
    for c in range(C):
        k = cls_first[c]
        supply[c] = cls_first[c + 1] - k
        cellpos[c] = -1
        order[c] = c
        b1 = -np.inf
        b2 = -np.inf
        for j in range(J):
            if cap[j] == 0:
                continue
            if j < S:
                x = vals_t[k, j]
                if not x > lo:
                    continue
                v = scale[j] * x
            else:
                v = 0.0
            if v > b1:
                b2 = b1
                b1 = v
            elif v > b2:
                b2 = v
        if b1 == -np.inf:
            regret[c] = -np.inf
        elif b2 == -np.inf:
            regret[c] = np.inf
        else:
            regret[c] = b1 - b2
    _sort_desc(regret, order, C, tmp)

    status = 0
    searches = 0
    moves = 0
    for t0 in range(C):
        c0 = order[t0]
        k0 = cls_first[c0]
        while supply[c0] > 0:
            # net values of the arriving class
            best = -np.inf
            for j in range(J):
                settled[j] = 1
                d[j] = np.inf
                if cap[j] == 0:
                    continue
                if j < S:
                    x = vals_t[k0, j]
                    if not x > lo:
                        continue
                    u = scale[j] * x - q[j]
                else:
                    u = 0.0 - q[j]
                settled[j] = 0
                if u > best:
                    best = u
            if best == -np.inf:
                status = 1
                break
            m = -1
            dm = np.inf
            for j in range(J):
                if settled[j] == 0:
                    if j < S:
                        u = scale[j] * vals_t[k0, j] - q[j]
                    else:
                        u = 0.0 - q[j]
                    d[j] = best - u
                    pj[j] = -1
                    pw[j] = c0
                    if d[j] < dm:
                        dm = d[j]
                        m = j
                if cap[j] > 0:
                    settled[j] = 0
            searches += 1
            # Dijkstra over jobs until the nearest job with a free slot settles;
            # m is the unsettled job of least label (ties: lowest index)
            tgt = -1
            while m >= 0:
                settled[m] = 1
                if cnt[m] < cap[m]:
                    tgt = m
                    break
                qm = q[m]
                nm = -1
                ndm = np.inf
                for l in range(J):
                    if settled[l] != 0:
                        continue
                    c = carg[m * J + l]
                    if c == -2:
                        # stale pair: its cached key is a lower bound of the
                        # cheapest move; refresh it only if it could improve d[l]
                        rc = (cmin[m * J + l] - qm) + q[l]
                        if rc < 0.0:
                            rc = 0.0
                        if dm + rc < d[l]:
                            bk = np.inf
                            ba = -1
                            for t in range(ncell[m]):
                                cc = cell_cls[off[m] + t]
                                w = cls_first[cc]
                                if l < S:
                                    x = vals_t[w, l]
                                    if not x > lo:
                                        continue
                                    vl = scale[l] * x
                                else:
                                    vl = 0.0
                                if m < S:
                                    vm = scale[m] * vals_t[w, m]
                                else:
                                    vm = 0.0
                                key = vm - vl
                                if key < bk:
                                    bk = key
                                    ba = cc
                            cmin[m * J + l] = bk
                            carg[m * J + l] = ba
                            c = ba
                    if c >= 0:
                        rc = (cmin[m * J + l] - qm) + q[l]
                        if rc < 0.0:
                            rc = 0.0
                        nd = dm + rc
                        if nd < d[l]:
                            d[l] = nd
                            pj[l] = m
                            pw[l] = c
                    if d[l] < ndm:
                        ndm = d[l]
                        nm = l
                m = nm
                dm = ndm
            if tgt < 0:
                status = 1
                break
            # bottleneck of the chain
            delta = supply[c0]
            n = cap[tgt] - cnt[tgt]
            if n < delta:
                delta = n
            l = tgt
            while pj[l] >= 0:
                m = pj[l]
                c = pw[l]
                p = _cell_find(cell_cls, cellpos, cls_first, off, ncell, m, c)
                n = cell_cnt[off[m] + p]
                if n < delta:
                    delta = n
                l = m
            # prices of the jobs nearer than the free slot rise
            D = d[tgt]
            for j in range(J):
                if cap[j] > 0 and settled[j] != 0 and d[j] < D:
                    q[j] += D - d[j]
            # move delta workers along the chain, from the free slot back
            l = tgt
            while True:
                c = pw[l]
                m = pj[l]
                if m >= 0:
                    p = _cell_find(cell_cls, cellpos, cls_first, off, ncell, m, c)
                    cell_cnt[off[m] + p] -= delta
                    cnt[m] -= delta
                    if cell_cnt[off[m] + p] == 0:
                        last = ncell[m] - 1
                        if p != last:
                            lc = cell_cls[off[m] + last]
                            cell_cls[off[m] + p] = lc
                            cell_cnt[off[m] + p] = cell_cnt[off[m] + last]
                            if cls_first[lc + 1] - cls_first[lc] == 1:
                                cellpos[lc] = p
                        ncell[m] = last
                        if cls_first[c + 1] - cls_first[c] == 1:
                            cellpos[c] = -1
                        for l2 in range(J):
                            if carg[m * J + l2] == c:
                                carg[m * J + l2] = -2
                else:
                    supply[c0] -= delta
                p = _cell_find(cell_cls, cellpos, cls_first, off, ncell, l, c)
                if p >= 0:
                    cell_cnt[off[l] + p] += delta
                else:
                    p = ncell[l]
                    cell_cls[off[l] + p] = c
                    cell_cnt[off[l] + p] = delta
                    ncell[l] = p + 1
                    if cls_first[c + 1] - cls_first[c] == 1:
                        cellpos[c] = p
                    w = cls_first[c]
                    if l < S:
                        vw = scale[l] * vals_t[w, l]
                    else:
                        vw = 0.0
                    for l2 in range(J):
                        if l2 == l or cap[l2] == 0:
                            continue
                        if l2 < S:
                            x = vals_t[w, l2]
                            if not x > lo:
                                continue
                            vl = scale[l2] * x
                        else:
                            vl = 0.0
                        key = vw - vl
                        if key < cmin[l * J + l2]:
                            cmin[l * J + l2] = key
                            carg[l * J + l2] = c
                cnt[l] += delta
                moves += delta
                if m < 0:
                    break
                l = m

    # hand out the workers of each class to its jobs, lowest job first
    for c in range(C):
        tmp[c] = cls_first[c]
    for j in range(S):
        for t in range(ncell[j]):
            c = cell_cls[off[j] + t]
            for u in range(cell_cnt[off[j] + t]):
                worker_job[tmp[c]] = j
                tmp[c] += 1
    for j in range(J):
        job_price[j] = q[j]
    stats[0] = searches
    stats[1] = moves
    return status


@njit(**JIT)
def job_order_kernel(vals, lo, job_order, order_len, tmp):
    """Preference lists of the jobs: acceptable workers by value, best first.

    Parameters
    ----------
    vals : float64 (S, K), C-contiguous
        Values; pair (i, k) is acceptable iff ``vals[i, k] > lo``.
    lo : float
    job_order : int64 (S, K), out
        Row i: job i's acceptable workers, highest value first, ties by lower
        worker index, then -1 padding.
    order_len : int64 (S,), out
        Number of acceptable workers of each job.
    tmp : int64 (K,)
        Work buffer.
    """
    S = vals.shape[0]
    K = vals.shape[1]
    for i in range(S):
        n = 0
        for k in range(K):
            if vals[i, k] > lo:
                job_order[i, n] = k
                n += 1
        for k in range(n, K):
            job_order[i, k] = -1
        order_len[i] = n
        _sort_desc(vals[i], job_order[i], n, tmp)
    return 0


@njit(**JIT)
def relative_rank_kernel(rho, worker_rank):
    """Workers' ranking of jobs in the market: relative speed.

    ``worker_rank[i, k] = rho[i, k] / (sum_k rho[i, k] / K)`` (sum in worker
    order; rows summing to 0 get 0).  A worker prefers the job with the larger
    entry, ties to the lower job index.
    """
    S = rho.shape[0]
    K = rho.shape[1]
    for i in range(S):
        s = 0.0
        for k in range(K):
            s += rho[i, k]
        m = s / K
        for k in range(K):
            if m > 0.0:
                worker_rank[i, k] = rho[i, k] / m
            else:
                worker_rank[i, k] = 0.0
    return 0


@njit(**JIT)
def gale_shapley_kernel(job_order, order_len, worker_rank, caps, worker_job, stats, iws):
    """Job-proposing deferred acceptance with slots (ordinal form).

    Parameters
    ----------
    job_order : int64 (S, K)
        Job preference lists (:func:`job_order_kernel`).
    order_len : int64 (S,)
    worker_rank : float64 (S, K)
        Worker k prefers job i to job j iff ``worker_rank[i, k] >
        worker_rank[j, k]``, ties to the lower job index.  Only acceptable
        pairs (those in the job lists) are ever compared.
    caps : int64 (S,)
        Slots of each job.
    worker_job : int64 (K,), out
        Job of every worker, -1 unmatched.
    stats : int64 (2,), out
        ``[1, proposals]``.
    iws : int64 work buffer (:func:`gale_shapley_workspace_size`).

    Returns
    -------
    int
        0 when every job filled its slots, 1 otherwise.

    Notes
    -----
    Gale and Shapley (1962), hospitals/residents with the hospitals (jobs)
    proposing; Roth (1984) for its properties with slots.  A job with free
    slots proposes down its list; a worker holds the job it ranks highest and
    rejects the other, whose slot proposes again.  The result is the
    job-optimal stable matching (unique whatever the order of proposals); jobs
    are processed from a stack, job 0 first.
    """
    S = job_order.shape[0]
    K = worker_job.shape[0]
    ptr = iws[0:S]
    need = iws[S:2 * S]
    stack = iws[2 * S:3 * S]
    for k in range(K):
        worker_job[k] = -1
    top = 0
    for i in range(S - 1, -1, -1):
        ptr[i] = 0
        need[i] = caps[i]
        if caps[i] > 0:
            stack[top] = i
            top += 1
    props = 0
    while top > 0:
        top -= 1
        i = stack[top]
        while need[i] > 0 and ptr[i] < order_len[i]:
            k = job_order[i, ptr[i]]
            ptr[i] += 1
            props += 1
            cur = worker_job[k]
            if cur < 0:
                worker_job[k] = i
                need[i] -= 1
            else:
                ri = worker_rank[i, k]
                rc = worker_rank[cur, k]
                if ri > rc or (ri == rc and i < cur):
                    worker_job[k] = i
                    need[i] -= 1
                    need[cur] += 1
                    if need[cur] == 1:
                        stack[top] = cur
                        top += 1
    status = 0
    for i in range(S):
        if need[i] > 0:
            status = 1
    stats[0] = 1
    stats[1] = props
    return status


@njit(**JIT)
def market_category_kernel(rho, work, comm_time, sizes, form, max_rounds,
                           job_order, order_len, worker_rank,
                           worker_job, stats, fws, iws):
    """Solve one SMP category: iterated linearised market (docs/model.md §3.3).

    Parameters
    ----------
    rho : float64 (S, K), C-contiguous
        Worker throughput per job (``Problem.worker_throughput``); 0 = the
        job cannot use the worker.
    work : float64 (S,)
        ``w_i = iterations * batch``.
    comm_time : float64 (S, K + 1), C-contiguous
        Total communication time of job i on n workers.
    sizes : int64 (S,)
        The category: ``sizes[i] >= 1``, ``sum(sizes) <= K``.
    form : int
        FORM_PRICE (0) or FORM_ORDINAL (1).
    max_rounds : int
        Market solves at most (>= 1).
    job_order, order_len, worker_rank
        Ordinal-form preferences, built once per problem by
        ``job_order_kernel(rho, 0.0, ...)`` and ``relative_rank_kernel(rho,
        ...)``; not read by the price form (pass any int64 (1, 1), int64 (1,)
        and float64 (1, 1) arrays).
    worker_job : int64 (K,), out
        Best assignment seen (job per worker, -1 idle).
    stats : int64 (2,), out
        ``[rounds (market solves), proposals in total]``.
    fws, iws : float64, int64 work buffers (:func:`market_workspace_size`).

    Returns
    -------
    float
        True total JCT ``sum_i work[i] / X_i + comm_time[i, n_i]`` of
        ``worker_job`` (``n_i`` = workers it gives job i, ``X_i`` their summed
        throughput); ``inf`` when a job got no worker.

    Notes
    -----
    The price form works on a worker-major copy of ``rho`` made in ``fws``.
    ``X_i`` starts at ``sizes[i] * (sum_k rho[i, k] / K)``.  Each round values
    pair (i, k) at ``a_i * rho[i, k]`` with ``a_i = work[i] / (X_i * X_i)``
    (the marginal JCT reduction of job i at ``X_i``), solves the market with
    capacities ``sizes``, and sets ``X_i`` to the true throughput of the
    assignment.  The best assignment (strictly smaller total; ties keep the
    earlier) is kept.  Stops when an assignment repeats the previous one,
    after ``max_rounds`` solves, or when the market cannot fill the category
    (then the total is that of the partial assignment).  The ordinal form's
    preferences do not depend on ``a_i``, so it solves once.
    """
    S = rho.shape[0]
    K = rho.shape[1]
    X = fws[0:S]
    a = fws[S:2 * S]
    Xt = fws[2 * S:3 * S]
    jp = fws[3 * S:4 * S + 1]
    rho_t = fws[4 * S + 1:4 * S + 1 + S * K].reshape((K, S))
    fsub = fws[4 * S + 1 + S * K:]
    cur = iws[0:K]
    prev = iws[K:2 * K]
    cnt = iws[2 * K:2 * K + S]
    isub = iws[2 * K + S:]
    if form == FORM_PRICE:
        for i in range(S):
            s = 0.0
            for k in range(K):
                x = rho[i, k]
                rho_t[k, i] = x
                s += x
            X[i] = sizes[i] * (s / K)
    best = np.inf
    rounds = 0
    props = 0
    for r in range(max_rounds):
        rounds += 1
        if form == FORM_PRICE:
            for i in range(S):
                a[i] = work[i] / (X[i] * X[i])
            status = auction_kernel(rho_t, a, 0.0, sizes, cur, jp, stats, fsub, isub)
        else:
            status = gale_shapley_kernel(job_order, order_len, worker_rank, sizes, cur, stats, isub)
        props += stats[1]
        for i in range(S):
            Xt[i] = 0.0
            cnt[i] = 0
        for k in range(K):
            j = cur[k]
            if j >= 0:
                Xt[j] += rho[j, k]
                cnt[j] += 1
        total = 0.0
        for i in range(S):
            if cnt[i] == 0:
                total = np.inf
                break
            total += work[i] / Xt[i] + comm_time[i, cnt[i]]
        if r == 0 or total < best:
            best = total
            for k in range(K):
                worker_job[k] = cur[k]
        if form != FORM_PRICE or status != 0:
            break
        if r > 0:
            same = True
            for k in range(K):
                if cur[k] != prev[k]:
                    same = False
                    break
            if same:
                break
        for k in range(K):
            prev[k] = cur[k]
        for i in range(S):
            X[i] = Xt[i]
    stats[0] = rounds
    stats[1] = props
    return best
