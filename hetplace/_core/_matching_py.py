"""Deferred-acceptance matching kernels (docs/model.md §3.3-3.5), plain-Python backend.

Private.  The same algorithms as :mod:`hetplace._core._matching_nb` (whose
docstrings describe them), written as plain Python loops over lists that
perform exactly the same floating-point operations in the same order, so the
results (assignments, prices, counters, totals) are bit-identical to the Numba
and Cython backends.  Slow: for tests, debugging and machines without a
compiler.  Signatures match the compiled kernels; the work buffers ``fws`` and
``iws`` are accepted and ignored.
"""

import math

__all__ = [
    "FORM_PRICE",
    "FORM_ORDINAL",
    "auction_workspace_size",
    "gale_shapley_workspace_size",
    "market_workspace_size",
    "auction_kernel",
    "job_order_kernel",
    "relative_rank_kernel",
    "market_category_kernel",
]

_INF = math.inf

#: ``form`` codes of :func:`market_category_kernel` (same values in every backend).
FORM_PRICE = 0
FORM_ORDINAL = 1


def auction_workspace_size(S, K):
    """(n_float, n_int) work-buffer lengths of :func:`auction_kernel`."""
    J = S + 1
    return 2 * J + J * J + K, 7 * J + J * J + 7 * K + 1


def class_market_workspace_size(S, C, K):
    """(n_float, n_int) work-buffer lengths of the class market (``_classes_nb.class_market``).

    Here, not in ``_classes_nb``, so the Cython path sizes its buffers without importing Numba.
    """
    af, ai = auction_workspace_size(C, K)
    return 2 * S + 2 * C + 1 + K * C + af, K + S + 2 * S * C + ai


def gale_shapley_workspace_size(S, K):
    """(n_float, n_int) work-buffer lengths of ``_matching_nb.gale_shapley_kernel``."""
    return 0, 3 * S


def market_workspace_size(S, K):
    """(n_float, n_int) work-buffer lengths of :func:`market_category_kernel`."""
    af, ai = auction_workspace_size(S, K)
    gf, gi = gale_shapley_workspace_size(S, K)
    return 4 * S + 1 + S * K + max(af, gf), 2 * K + S + max(ai, gi)


def _sort_desc(keys, idx):
    """``idx`` sorted by ``keys[idx]`` descending, ties by index ascending."""
    return sorted(idx, key=lambda i: (-keys[i], i))


def _auction(V, A, lo, caps, K, S):
    """Core of :func:`auction_kernel` on lists; returns (wj, q, status, searches, moves).

    ``V`` is the worker-major value list of lists ``V[k][i]``, ``A`` the scale list.
    """
    J = S + 1
    cap = [0] * J
    off = [0] * J
    tot = 0
    for i in range(S):
        cap[i] = caps[i]
        off[i] = tot
        tot += caps[i]
    cap[S] = K - tot
    off[S] = tot
    cnt = [0] * J
    ncell = [0] * J
    q = [0.0] * J
    d = [_INF] * J
    settled = [0] * J
    pj = [0] * J
    pw = [0] * J
    cmin = [_INF] * (J * J)
    carg = [-1] * (J * J)
    cell_cls = [0] * K
    cell_cnt = [0] * K
    worker_job = [-1] * K
    active = [j for j in range(S) if cap[j] != 0]

    # classes: runs of consecutive workers with identical values
    cls_first = []
    for k in range(K):
        same = k > 0
        if same:
            row = V[k]
            prow = V[k - 1]
            for j in active:
                x = row[j]
                y = prow[j]
                ax = x > lo
                ay = y > lo
                if ax != ay or (ax and x != y):
                    same = False
                    break
        if not same:
            cls_first.append(k)
    C = len(cls_first)
    cls_first.append(K)
    single = [cls_first[c + 1] - cls_first[c] == 1 for c in range(C)]
    cellpos = [-1] * C
    supply = [cls_first[c + 1] - cls_first[c] for c in range(C)]

    def value(j, k):
        # value of the pair, or None when not allowed
        if j < S:
            x = V[k][j]
            if not x > lo:
                return None
            return A[j] * x
        return 0.0

    regret = [0.0] * C
    for c in range(C):
        k = cls_first[c]
        b1 = -_INF
        b2 = -_INF
        for j in range(J):
            if cap[j] == 0:
                continue
            v = value(j, k)
            if v is None:
                continue
            if v > b1:
                b2 = b1
                b1 = v
            elif v > b2:
                b2 = v
        if b1 == -_INF:
            regret[c] = -_INF
        elif b2 == -_INF:
            regret[c] = _INF
        else:
            regret[c] = b1 - b2
    order = _sort_desc(regret, range(C))

    def cell_find(m, c):
        if single[c]:
            return cellpos[c]
        base = off[m]
        for t in range(ncell[m]):
            if cell_cls[base + t] == c:
                return t
        return -1

    status = 0
    searches = 0
    moves = 0
    for c0 in order:
        k0 = cls_first[c0]
        while supply[c0] > 0:
            best = -_INF
            for j in range(J):
                settled[j] = 1
                d[j] = _INF
                if cap[j] == 0:
                    continue
                v = value(j, k0)
                if v is None:
                    continue
                u = v - q[j]
                settled[j] = 0
                if u > best:
                    best = u
            if best == -_INF:
                status = 1
                break
            m = -1
            dm = _INF
            for j in range(J):
                if settled[j] == 0:
                    u = value(j, k0) - q[j]
                    d[j] = best - u
                    pj[j] = -1
                    pw[j] = c0
                    if d[j] < dm:
                        dm = d[j]
                        m = j
                if cap[j] > 0:
                    settled[j] = 0
            searches += 1
            tgt = -1
            while m >= 0:
                settled[m] = 1
                if cnt[m] < cap[m]:
                    tgt = m
                    break
                mJ = m * J
                qm = q[m]
                nm = -1
                ndm = _INF
                for l in range(J):
                    if settled[l] != 0:
                        continue
                    c = carg[mJ + l]
                    if c == -2:
                        rc = (cmin[mJ + l] - qm) + q[l]
                        if rc < 0.0:
                            rc = 0.0
                        if dm + rc < d[l]:
                            bk = _INF
                            ba = -1
                            for t in range(ncell[m]):
                                cc = cell_cls[off[m] + t]
                                w = cls_first[cc]
                                vl = value(l, w)
                                if vl is None:
                                    continue
                                key = value(m, w) - vl
                                if key < bk:
                                    bk = key
                                    ba = cc
                            cmin[mJ + l] = bk
                            carg[mJ + l] = ba
                            c = ba
                    if c >= 0:
                        rc = (cmin[mJ + l] - qm) + q[l]
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
            delta = supply[c0]
            n = cap[tgt] - cnt[tgt]
            if n < delta:
                delta = n
            l = tgt
            while pj[l] >= 0:
                m = pj[l]
                c = pw[l]
                n = cell_cnt[off[m] + cell_find(m, c)]
                if n < delta:
                    delta = n
                l = m
            D = d[tgt]
            for j in range(J):
                if cap[j] > 0 and settled[j] != 0 and d[j] < D:
                    q[j] += D - d[j]
            l = tgt
            while True:
                c = pw[l]
                m = pj[l]
                if m >= 0:
                    p = cell_find(m, c)
                    cell_cnt[off[m] + p] -= delta
                    cnt[m] -= delta
                    if cell_cnt[off[m] + p] == 0:
                        last = ncell[m] - 1
                        if p != last:
                            lc = cell_cls[off[m] + last]
                            cell_cls[off[m] + p] = lc
                            cell_cnt[off[m] + p] = cell_cnt[off[m] + last]
                            if single[lc]:
                                cellpos[lc] = p
                        ncell[m] = last
                        if single[c]:
                            cellpos[c] = -1
                        mJ = m * J
                        for l2 in range(J):
                            if carg[mJ + l2] == c:
                                carg[mJ + l2] = -2
                else:
                    supply[c0] -= delta
                p = cell_find(l, c)
                if p >= 0:
                    cell_cnt[off[l] + p] += delta
                else:
                    p = ncell[l]
                    cell_cls[off[l] + p] = c
                    cell_cnt[off[l] + p] = delta
                    ncell[l] = p + 1
                    if single[c]:
                        cellpos[c] = p
                    w = cls_first[c]
                    vw = value(l, w)
                    lJ = l * J
                    for l2 in range(J):
                        if l2 == l or cap[l2] == 0:
                            continue
                        vl = value(l2, w)
                        if vl is None:
                            continue
                        key = vw - vl
                        if key < cmin[lJ + l2]:
                            cmin[lJ + l2] = key
                            carg[lJ + l2] = c
                cnt[l] += delta
                moves += delta
                if m < 0:
                    break
                l = m

    nxt = cls_first[:C]
    for j in range(S):
        for t in range(ncell[j]):
            c = cell_cls[off[j] + t]
            for _ in range(cell_cnt[off[j] + t]):
                worker_job[nxt[c]] = j
                nxt[c] += 1
    return worker_job, q, status, searches, moves


def auction_kernel(vals_t, scale, lo, caps, worker_job, job_price, stats, fws=None, iws=None):
    """Exact ascending-price auction; see :func:`hetplace._core._matching_nb.auction_kernel`."""
    K, S = vals_t.shape
    wj, q, status, searches, moves = _auction(
        vals_t.tolist(), [float(x) for x in scale], float(lo), [int(c) for c in caps], K, S
    )
    worker_job[:] = wj
    job_price[:] = q
    stats[0] = searches
    stats[1] = moves
    return status


def job_order_kernel(vals, lo, job_order, order_len, tmp=None):
    """Job preference lists; see :func:`hetplace._core._matching_nb.job_order_kernel`."""
    S, K = vals.shape
    lo = float(lo)
    for i in range(S):
        row = vals[i].tolist()
        acc = [k for k in range(K) if row[k] > lo]
        acc = _sort_desc(row, acc)
        n = len(acc)
        job_order[i, :n] = acc
        job_order[i, n:] = -1
        order_len[i] = n
    return 0


def relative_rank_kernel(rho, worker_rank):
    """Relative-speed ranks; see :func:`hetplace._core._matching_nb.relative_rank_kernel`."""
    S, K = rho.shape
    for i in range(S):
        row = rho[i].tolist()
        s = 0.0
        for k in range(K):
            s += row[k]
        m = s / K
        if m > 0.0:
            worker_rank[i, :] = [row[k] / m for k in range(K)]
        else:
            worker_rank[i, :] = 0.0
    return 0


def _gale_shapley(order, order_len, rank, caps, S, K):
    """The SMP market's Gale-Shapley (``_matching_nb.gale_shapley_kernel``) on lists; returns (wj, status, proposals)."""
    worker_job = [-1] * K
    ptr = [0] * S
    need = [int(c) for c in caps]
    stack = [i for i in range(S - 1, -1, -1) if caps[i] > 0]
    props = 0
    while stack:
        i = stack.pop()
        lst = order[i]
        ln = order_len[i]
        while need[i] > 0 and ptr[i] < ln:
            k = lst[ptr[i]]
            ptr[i] += 1
            props += 1
            cur = worker_job[k]
            if cur < 0:
                worker_job[k] = i
                need[i] -= 1
            else:
                ri = rank[i][k]
                rc = rank[cur][k]
                if ri > rc or (ri == rc and i < cur):
                    worker_job[k] = i
                    need[i] -= 1
                    need[cur] += 1
                    if need[cur] == 1:
                        stack.append(cur)
    status = 1 if any(n > 0 for n in need) else 0
    return worker_job, status, props


def market_category_kernel(rho, work, comm_time, sizes, form, max_rounds,
                           job_order, order_len, worker_rank,
                           worker_job, stats, fws=None, iws=None):
    """One SMP category; see :func:`hetplace._core._matching_nb.market_category_kernel`."""
    S, K = rho.shape
    R = rho.T.tolist()
    W = [float(x) for x in work]
    CT = comm_time.tolist()
    caps = [int(n) for n in sizes]
    X = [0.0] * S
    if form == FORM_PRICE:
        for i in range(S):
            s = 0.0
            for k in range(K):
                s += R[k][i]
            X[i] = caps[i] * (s / K)
    else:
        lists = job_order.tolist()
        lens = [int(n) for n in order_len]
        rank = worker_rank.tolist()
    best = _INF
    best_wj = None
    prev = None
    rounds = 0
    props = 0
    for r in range(max_rounds):
        rounds += 1
        if form == FORM_PRICE:
            a = [W[i] / (X[i] * X[i]) for i in range(S)]
            cur, _q, status, _s, p = _auction(R, a, 0.0, caps, K, S)
        else:
            cur, status, p = _gale_shapley(lists, lens, rank, caps, S, K)
        props += p
        Xt = [0.0] * S
        cnt = [0] * S
        for k in range(K):
            j = cur[k]
            if j >= 0:
                Xt[j] += R[k][j]
                cnt[j] += 1
        total = 0.0
        for i in range(S):
            if cnt[i] == 0:
                total = _INF
                break
            total += W[i] / Xt[i] + CT[i][cnt[i]]
        if r == 0 or total < best:
            best = total
            best_wj = cur
        if form != FORM_PRICE or status != 0:
            break
        if r > 0 and cur == prev:
            break
        prev = cur
        X = Xt
    worker_job[:] = best_wj
    stats[0] = rounds
    stats[1] = props
    return best
