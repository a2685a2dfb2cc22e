# Deferred-acceptance matching kernels (docs/model.md §3.3-3.5), Cython backend.
#
# Private: inputs are trusted (validated by hetplace.matching, or built by the
# SMP driver).  The cdef functions (declared in _matching.pxd) are noexcept
# nogil, allocate nothing and perform exactly the floating-point operations, in
# the same order, of _matching_nb.py (whose docstrings document the
# algorithms) and _matching_py.py, so the three backends agree bit for bit
# (setup.py compiles with -ffp-contract=off: no fused multiply-add).
# The def wrappers take NumPy arrays with the Numba kernels' signatures.
from libc.math cimport INFINITY
from libc.stdint cimport int64_t

# Python-level work-buffer sizes, shared by all backends (FORM_PRICE and
# FORM_ORDINAL come from the cpdef enum in _matching.pxd)
from ._matching_py import (  # noqa: F401
    auction_workspace_size,
    gale_shapley_workspace_size,
    market_workspace_size,
)


cdef void _sort_desc(const double* keys, int64_t* idx, Py_ssize_t n,
                     int64_t* tmp) noexcept nogil:
    # idx[0:n] sorted by keys[idx] descending, ties by index ascending
    # (bottom-up merge sort; tmp: scratch of length >= n).
    cdef Py_ssize_t width = 1, start, mid, hi, a, b, o, t
    cdef int64_t ia, ib, tv
    cdef double ka, kb
    cdef bint in_idx = True
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
                    tv = ia
                    a += 1
                else:
                    tv = ib
                    b += 1
                if in_idx:
                    tmp[o] = tv
                else:
                    idx[o] = tv
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


cdef inline Py_ssize_t _cell_find(const int64_t* cell_cls, const int64_t* cellpos,
                                  const int64_t* cls_first, const int64_t* off,
                                  const int64_t* ncell, Py_ssize_t m,
                                  int64_t c) noexcept nogil:
    cdef Py_ssize_t t
    if cls_first[c + 1] - cls_first[c] == 1:
        return cellpos[c]
    for t in range(ncell[m]):
        if cell_cls[off[m] + t] == c:
            return t
    return -1


cdef int auction_c(const double* vals_t, const double* scale, double lo,
                   const int64_t* caps, Py_ssize_t S, Py_ssize_t K,
                   int64_t* worker_job, double* job_price, int64_t* stats,
                   double* fws, int64_t* iws) noexcept nogil:
    cdef Py_ssize_t J = S + 1
    # float buffers
    cdef double* d = fws
    cdef double* q = fws + J
    cdef double* cmin = fws + 2 * J
    cdef double* regret = fws + 2 * J + J * J
    # int buffers
    cdef int64_t* cap = iws
    cdef int64_t* off = iws + J
    cdef int64_t* cnt = iws + 2 * J
    cdef int64_t* ncell = iws + 3 * J
    cdef int64_t* settled = iws + 4 * J
    cdef int64_t* pj = iws + 5 * J
    cdef int64_t* pw = iws + 6 * J
    cdef int64_t* carg = iws + 7 * J
    cdef Py_ssize_t bb = 7 * J + J * J
    cdef int64_t* cell_cls = iws + bb
    cdef int64_t* cell_cnt = iws + bb + K
    cdef int64_t* cls_first = iws + bb + 2 * K
    cdef int64_t* supply = iws + bb + 3 * K + 1
    cdef int64_t* cellpos = iws + bb + 4 * K + 1
    cdef int64_t* order = iws + bb + 5 * K + 1
    cdef int64_t* tmp = iws + bb + 6 * K + 1

    cdef Py_ssize_t i, j, k, l, l2, m, nm, t, t0, p, last, C, k0, w, tgt
    cdef int64_t tot, c, cc, c0, lc, delta, n, u_
    cdef double x, y, v, u, b1, b2, best, dm, ndm, bk, vl, vm, key, qm, rc, nd, D, vw
    cdef int64_t ba
    cdef bint same, ax, ay
    cdef int status = 0
    cdef int64_t searches = 0, moves = 0

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
            cmin[j * J + l] = INFINITY
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
                x = vals_t[k * S + j]
                y = vals_t[(k - 1) * S + j]
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
        b1 = -INFINITY
        b2 = -INFINITY
        for j in range(J):
            if cap[j] == 0:
                continue
            if j < S:
                x = vals_t[k * S + j]
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
        if b1 == -INFINITY:
            regret[c] = -INFINITY
        elif b2 == -INFINITY:
            regret[c] = INFINITY
        else:
            regret[c] = b1 - b2
    _sort_desc(regret, order, C, tmp)

    for t0 in range(C):
        c0 = order[t0]
        k0 = cls_first[c0]
        while supply[c0] > 0:
            # net values of the arriving class
            best = -INFINITY
            for j in range(J):
                settled[j] = 1
                d[j] = INFINITY
                if cap[j] == 0:
                    continue
                if j < S:
                    x = vals_t[k0 * S + j]
                    if not x > lo:
                        continue
                    u = scale[j] * x - q[j]
                else:
                    u = 0.0 - q[j]
                settled[j] = 0
                if u > best:
                    best = u
            if best == -INFINITY:
                status = 1
                break
            m = -1
            dm = INFINITY
            for j in range(J):
                if settled[j] == 0:
                    if j < S:
                        u = scale[j] * vals_t[k0 * S + j] - q[j]
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
                ndm = INFINITY
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
                            bk = INFINITY
                            ba = -1
                            for t in range(ncell[m]):
                                cc = cell_cls[off[m] + t]
                                w = cls_first[cc]
                                if l < S:
                                    x = vals_t[w * S + l]
                                    if not x > lo:
                                        continue
                                    vl = scale[l] * x
                                else:
                                    vl = 0.0
                                if m < S:
                                    vm = scale[m] * vals_t[w * S + m]
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
                        vw = scale[l] * vals_t[w * S + l]
                    else:
                        vw = 0.0
                    for l2 in range(J):
                        if l2 == l or cap[l2] == 0:
                            continue
                        if l2 < S:
                            x = vals_t[w * S + l2]
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
            for u_ in range(cell_cnt[off[j] + t]):
                worker_job[tmp[c]] = j
                tmp[c] += 1
    for j in range(J):
        job_price[j] = q[j]
    stats[0] = searches
    stats[1] = moves
    return status


cdef void job_order_c(const double* vals, double lo, Py_ssize_t S, Py_ssize_t K,
                      int64_t* job_order, int64_t* order_len, int64_t* tmp) noexcept nogil:
    cdef Py_ssize_t i, k, n
    for i in range(S):
        n = 0
        for k in range(K):
            if vals[i * K + k] > lo:
                job_order[i * K + n] = k
                n += 1
        for k in range(n, K):
            job_order[i * K + k] = -1
        order_len[i] = n
        _sort_desc(vals + i * K, job_order + i * K, n, tmp)


cdef void relative_rank_c(const double* rho, Py_ssize_t S, Py_ssize_t K,
                          double* worker_rank) noexcept nogil:
    cdef Py_ssize_t i, k
    cdef double s, m
    for i in range(S):
        s = 0.0
        for k in range(K):
            s += rho[i * K + k]
        m = s / K
        for k in range(K):
            if m > 0.0:
                worker_rank[i * K + k] = rho[i * K + k] / m
            else:
                worker_rank[i * K + k] = 0.0


cdef int gale_shapley_c(const int64_t* job_order, const int64_t* order_len,
                        const double* worker_rank, const int64_t* caps,
                        Py_ssize_t S, Py_ssize_t K,
                        int64_t* worker_job, int64_t* stats, int64_t* iws) noexcept nogil:
    cdef int64_t* ptr = iws
    cdef int64_t* need = iws + S
    cdef int64_t* stack = iws + 2 * S
    cdef Py_ssize_t i, k, top = 0
    cdef int64_t cur, props = 0
    cdef double ri, rc
    cdef int status = 0
    for k in range(K):
        worker_job[k] = -1
    for i in range(S - 1, -1, -1):
        ptr[i] = 0
        need[i] = caps[i]
        if caps[i] > 0:
            stack[top] = i
            top += 1
    while top > 0:
        top -= 1
        i = stack[top]
        while need[i] > 0 and ptr[i] < order_len[i]:
            k = job_order[i * K + ptr[i]]
            ptr[i] += 1
            props += 1
            cur = worker_job[k]
            if cur < 0:
                worker_job[k] = i
                need[i] -= 1
            else:
                ri = worker_rank[i * K + k]
                rc = worker_rank[cur * K + k]
                if ri > rc or (ri == rc and i < cur):
                    worker_job[k] = i
                    need[i] -= 1
                    need[cur] += 1
                    if need[cur] == 1:
                        stack[top] = cur
                        top += 1
    for i in range(S):
        if need[i] > 0:
            status = 1
    stats[0] = 1
    stats[1] = props
    return status


cdef double market_category_c(const double* rho, const double* work,
                              const double* comm_time, const int64_t* sizes,
                              Py_ssize_t S, Py_ssize_t K, int form, Py_ssize_t max_rounds,
                              const int64_t* job_order, const int64_t* order_len,
                              const double* worker_rank,
                              int64_t* worker_job, int64_t* stats,
                              double* fws, int64_t* iws) noexcept nogil:
    cdef double* X = fws
    cdef double* a = fws + S
    cdef double* Xt = fws + 2 * S
    cdef double* jp = fws + 3 * S
    cdef double* rho_t = fws + 4 * S + 1
    cdef double* fsub = fws + 4 * S + 1 + S * K
    cdef int64_t* cur = iws
    cdef int64_t* prev = iws + K
    cdef int64_t* cnt = iws + 2 * K
    cdef int64_t* isub = iws + 2 * K + S
    cdef Py_ssize_t i, k, r, j
    cdef double s, total, x
    cdef double best = INFINITY
    cdef int64_t rounds = 0, props = 0
    cdef int status
    cdef bint same
    if form == FORM_PRICE:
        for i in range(S):
            s = 0.0
            for k in range(K):
                x = rho[i * K + k]
                rho_t[k * S + i] = x
                s += x
            X[i] = sizes[i] * (s / K)
    for r in range(max_rounds):
        rounds += 1
        if form == FORM_PRICE:
            for i in range(S):
                a[i] = work[i] / (X[i] * X[i])
            status = auction_c(rho_t, a, 0.0, sizes, S, K, cur, jp, stats, fsub, isub)
        else:
            status = gale_shapley_c(job_order, order_len, worker_rank, sizes, S, K,
                                    cur, stats, isub)
        props += stats[1]
        for i in range(S):
            Xt[i] = 0.0
            cnt[i] = 0
        for k in range(K):
            j = cur[k]
            if j >= 0:
                Xt[j] += rho[j * K + k]
                cnt[j] += 1
        total = 0.0
        for i in range(S):
            if cnt[i] == 0:
                total = INFINITY
                break
            total += work[i] / Xt[i] + comm_time[i * (K + 1) + cnt[i]]
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


# ----------------------------------------------------------------- wrappers
# Same signatures as the Numba kernels in _matching_nb.py.

cdef inline double* _fptr(double[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline int64_t* _iptr(int64_t[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL


def auction_kernel(const double[:, ::1] vals_t, const double[::1] scale, double lo,
                   const int64_t[::1] caps, int64_t[::1] worker_job,
                   double[::1] job_price, int64_t[::1] stats,
                   double[::1] fws, int64_t[::1] iws):
    """Exact ascending-price auction (see ``_matching_nb.auction_kernel``)."""
    cdef Py_ssize_t K = vals_t.shape[0], S = vals_t.shape[1]
    cdef int status
    cdef double* f = _fptr(fws)
    cdef int64_t* iw = _iptr(iws)
    with nogil:
        status = auction_c(&vals_t[0, 0], &scale[0], lo, &caps[0], S, K,
                           &worker_job[0], &job_price[0], &stats[0], f, iw)
    return status


def job_order_kernel(const double[:, ::1] vals, double lo, int64_t[:, ::1] job_order,
                     int64_t[::1] order_len, int64_t[::1] tmp):
    """Job preference lists (see ``_matching_nb.job_order_kernel``)."""
    cdef Py_ssize_t S = vals.shape[0], K = vals.shape[1]
    with nogil:
        job_order_c(&vals[0, 0], lo, S, K, &job_order[0, 0], &order_len[0], &tmp[0])
    return 0


def relative_rank_kernel(const double[:, ::1] rho, double[:, ::1] worker_rank):
    """Relative-speed ranks (see ``_matching_nb.relative_rank_kernel``)."""
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    with nogil:
        relative_rank_c(&rho[0, 0], S, K, &worker_rank[0, 0])
    return 0


def market_category_kernel(const double[:, ::1] rho, const double[::1] work,
                           const double[:, ::1] comm_time, const int64_t[::1] sizes,
                           int form, Py_ssize_t max_rounds,
                           const int64_t[:, ::1] job_order, const int64_t[::1] order_len,
                           const double[:, ::1] worker_rank,
                           int64_t[::1] worker_job, int64_t[::1] stats,
                           double[::1] fws, int64_t[::1] iws):
    """One SMP category (see ``_matching_nb.market_category_kernel``)."""
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    cdef double total
    cdef const int64_t* jo = NULL
    cdef const int64_t* ol = NULL
    cdef const double* wr = NULL
    if form != FORM_PRICE:
        jo = &job_order[0, 0]
        ol = &order_len[0]
        wr = &worker_rank[0, 0]
    with nogil:
        total = market_category_c(&rho[0, 0], &work[0], &comm_time[0, 0], &sizes[0],
                                  S, K, form, max_rounds, jo, ol, wr,
                                  &worker_job[0], &stats[0], &fws[0], &iws[0])
    return total
