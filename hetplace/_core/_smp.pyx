# SMP sample driver, Cython twin of _smp_nb.py: every sampled category through the
# market, on single workers (run_samples) or on worker classes (run_samples_classes,
# with the Cython twins of the kernels in _classes_nb.py: same operations, same
# order), in an OpenMP prange without the GIL.  The polish of the best results is
# the single source _polish.py (hetplace._core._registry).
# Kernel: inputs are trusted (validated by hetplace.smp); no bounds checks.
from cython.parallel cimport prange
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc

from hetplace._core._matching cimport FORM_PRICE, auction_c, market_category_c

cimport numpy as cnp

cnp.import_array()


cdef double _market_one(const double[:, ::1] rho, const double[::1] work,
                        const double[:, ::1] comm, const int64_t* sizes, int form,
                        Py_ssize_t max_rounds, const int64_t* jo, const int64_t* ol,
                        const double* wr, int64_t* wj, int64_t* stats,
                        Py_ssize_t nf, Py_ssize_t ni) noexcept nogil:
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    cdef double total
    cdef int64_t mstats[2]
    cdef double* fws = <double*> malloc((nf + 1) * sizeof(double))
    cdef int64_t* iws = <int64_t*> malloc((ni + 1) * sizeof(int64_t))
    if fws == NULL or iws == NULL:
        free(fws)
        free(iws)
        stats[0] = -1
        return INFINITY
    mstats[0] = 0
    mstats[1] = 0
    total = market_category_c(&rho[0, 0], &work[0], &comm[0, 0], sizes, S, K, form, max_rounds,
                              jo, ol, wr, wj, mstats, fws, iws)
    free(fws)
    free(iws)
    stats[0] = mstats[0]
    stats[1] = mstats[1]
    return total


def run_samples(const double[:, ::1] rho, const double[::1] work, const double[:, ::1] comm,
                const int64_t[::1] worker_type, const double[::1] speed, bint uniform,
                const int64_t[:, ::1] cats, int form, Py_ssize_t max_rounds,
                const int64_t[:, ::1] job_order, const int64_t[::1] order_len,
                const double[:, ::1] worker_rank, bint do_polish, int64_t max_steps,
                int64_t[:, ::1] out_wj, double[::1] out_total, int64_t[:, ::1] out_stats,
                Py_ssize_t nf, Py_ssize_t ni, int threads):
    """Every category through the market (same contract as ``_smp_nb.run_samples``).

    ``threads <= 0`` uses OpenMP's default.  Raises MemoryError when a work
    buffer cannot be allocated.
    """
    cdef Py_ssize_t N = cats.shape[0], s
    cdef int nt = threads if threads > 0 else 1
    cdef const int64_t* jo = NULL
    cdef const int64_t* ol = NULL
    cdef const double* wr = NULL
    if form != FORM_PRICE:
        jo = &job_order[0, 0]
        ol = &order_len[0]
        wr = &worker_rank[0, 0]
    if threads <= 0:
        import os
        nt = os.cpu_count() or 1
    for s in prange(N, nogil=True, num_threads=nt, schedule="dynamic"):
        out_total[s] = _market_one(rho, work, comm, &cats[s, 0], form, max_rounds, jo, ol, wr,
                                   &out_wj[s, 0], &out_stats[s, 0], nf, ni)
    for s in range(N):
        if out_stats[s, 0] < 0:
            raise MemoryError("SMP: out of memory while evaluating a sample")


# ------------------------------------------------------------ worker classes
# Twins of hetplace/_core/_classes_nb.py (see its docstrings).  Matrices are
# row-major pointers: rhoC and cnt (S, C), comm (S, K1) with K1 = K + 1.

cdef double _class_totals(const double* rhoC, const double* work, const double* comm,
                          Py_ssize_t K1, const int64_t* cnt, Py_ssize_t S, Py_ssize_t C,
                          double* X, int64_t* n) noexcept nogil:
    cdef Py_ssize_t i, c
    cdef double s, total = 0.0
    cdef int64_t m
    for i in range(S):
        s = 0.0
        m = 0
        for c in range(C):
            if cnt[i * C + c] > 0:
                s += cnt[i * C + c] * rhoC[i * C + c]
                m += cnt[i * C + c]
        X[i] = s
        n[i] = m
    for i in range(S):
        if n[i] == 0:
            return INFINITY
        total += work[i] / X[i] + comm[i * K1 + n[i]]
    return total


cdef void _expand_counts(const int64_t* cnt, Py_ssize_t S, Py_ssize_t C, const int64_t* members,
                         const int64_t* cls_start, int64_t* wj) noexcept nogil:
    cdef Py_ssize_t c, i, p
    cdef int64_t t
    for c in range(C):
        p = cls_start[c]
        for i in range(S):
            for t in range(cnt[i * C + c]):
                wj[members[p]] = i
                p += 1
        while p < cls_start[c + 1]:
            wj[members[p]] = -1
            p += 1


cdef void _fill_units(const double* rhoC, const double* work, const double* X,
                      const int64_t* sizes, Py_ssize_t S, Py_ssize_t C, Py_ssize_t K,
                      double* V) noexcept nogil:
    cdef Py_ssize_t i, c, u = 0
    cdef int64_t t
    cdef double a, x
    for i in range(S):
        a = work[i] / (X[i] * X[i])
        for t in range(sizes[i]):
            for c in range(C):
                x = rhoC[i * C + c]
                if x > 0.0:
                    V[u * C + c] = a * x
                else:
                    V[u * C + c] = NAN
            u += 1
    while u < K:
        for c in range(C):
            V[u * C + c] = 0.0
        u += 1


cdef double _class_market_c(const double* rhoC, const double* work, const double* comm,
                            Py_ssize_t K1, const int64_t* mc, const int64_t* sizes,
                            Py_ssize_t S, Py_ssize_t C, Py_ssize_t max_rounds,
                            int64_t* cnt_best, int64_t* stats,
                            double* fws, int64_t* iws) noexcept nogil:
    """Twin of _classes_nb.class_market; buffers of class_market_workspace_size."""
    cdef Py_ssize_t K = 0, i, c, r, u, t
    cdef double s, total, best = INFINITY
    cdef int status
    cdef int64_t rounds = 0, props = 0
    cdef bint same
    for c in range(C):
        K += mc[c]
    cdef double* X = fws
    cdef double* Xt = fws + S
    cdef double* ones = fws + 2 * S
    cdef double* jp = fws + 2 * S + C
    cdef double* V = fws + 2 * S + 2 * C + 1
    cdef double* fsub = V + K * C
    cdef int64_t* unit_col = iws
    cdef int64_t* n = iws + K
    cdef int64_t* cnt = iws + K + S
    cdef int64_t* prev = iws + K + S + S * C
    cdef int64_t* isub = iws + K + S + 2 * S * C
    for c in range(C):
        ones[c] = 1.0
    for i in range(S):
        s = 0.0
        for c in range(C):
            s += mc[c] * rhoC[i * C + c]
        X[i] = sizes[i] * (s / K)
    for r in range(max_rounds):
        rounds += 1
        _fill_units(rhoC, work, X, sizes, S, C, K, V)
        status = auction_c(V, ones, -INFINITY, mc, C, K, unit_col, jp, stats, fsub, isub)
        props += stats[1]
        u = 0
        for i in range(S):
            for c in range(C):
                cnt[i * C + c] = 0
            for t in range(sizes[i]):
                if unit_col[u] >= 0:
                    cnt[i * C + unit_col[u]] += 1
                u += 1
        total = _class_totals(rhoC, work, comm, K1, cnt, S, C, Xt, n)
        if r == 0 or total < best:
            best = total
            for t in range(S * C):
                cnt_best[t] = cnt[t]
        if status != 0:
            break
        if r > 0:
            same = True
            for t in range(S * C):
                if cnt[t] != prev[t]:
                    same = False
                    break
            if same:
                break
        for t in range(S * C):
            prev[t] = cnt[t]
        for i in range(S):
            X[i] = Xt[i]
    stats[0] = rounds
    stats[1] = props
    return best


cdef double _class_sample(const double[:, ::1] rhoC, const double[::1] work,
                          const double[:, ::1] comm, const int64_t[::1] mc,
                          const int64_t[::1] members, const int64_t[::1] cls_start,
                          const int64_t* sizes, Py_ssize_t max_rounds, int64_t* wj,
                          int64_t* stats, Py_ssize_t nf, Py_ssize_t ni) noexcept nogil:
    cdef Py_ssize_t S = rhoC.shape[0], C = rhoC.shape[1]
    cdef double total
    cdef int64_t mstats[2]
    cdef double* fws = <double*> malloc((nf + 1) * sizeof(double))
    cdef int64_t* iws = <int64_t*> malloc((ni + 1) * sizeof(int64_t))
    cdef int64_t* cnt = <int64_t*> calloc(S * C, sizeof(int64_t))
    if fws == NULL or iws == NULL or cnt == NULL:
        free(fws); free(iws); free(cnt)
        stats[0] = -1
        return INFINITY
    mstats[0] = 0
    mstats[1] = 0
    total = _class_market_c(&rhoC[0, 0], &work[0], &comm[0, 0], comm.shape[1], &mc[0], sizes,
                            S, C, max_rounds, cnt, mstats, fws, iws)
    _expand_counts(cnt, S, C, &members[0], &cls_start[0], wj)
    free(fws)
    free(iws)
    free(cnt)
    stats[0] = mstats[0]
    stats[1] = mstats[1]
    return total


def run_samples_classes(const double[:, ::1] rhoC, const double[::1] work, const double[:, ::1] comm,
                        const int64_t[::1] mc, const int64_t[::1] members, const int64_t[::1] cls_start,
                        const int64_t[:, ::1] cats, Py_ssize_t max_rounds,
                        int64_t[:, ::1] out_wj, double[::1] out_total, int64_t[:, ::1] out_stats,
                        Py_ssize_t nf, Py_ssize_t ni, int threads):
    """Class-level market for every category (same contract as ``_smp_nb.run_samples_classes``)."""
    cdef Py_ssize_t N = cats.shape[0], s
    cdef int nt = threads if threads > 0 else 1
    if threads <= 0:
        import os
        nt = os.cpu_count() or 1
    for s in prange(N, nogil=True, num_threads=nt, schedule="dynamic"):
        out_total[s] = _class_sample(rhoC, work, comm, mc, members, cls_start, &cats[s, 0],
                                     max_rounds, &out_wj[s, 0], &out_stats[s, 0], nf, ni)
    for s in range(N):
        if out_stats[s, 0] < 0:
            raise MemoryError("SMP: out of memory while evaluating a sample")


def class_market_kernel(const double[:, ::1] rhoC, const double[::1] work, const double[:, ::1] comm,
                        const int64_t[::1] mc, const int64_t[::1] sizes, Py_ssize_t max_rounds,
                        int64_t[:, ::1] cnt_best, int64_t[::1] stats, double[::1] fws, int64_t[::1] iws):
    """One category on classes (see ``_classes_nb.class_market``)."""
    cdef double total
    with nogil:
        total = _class_market_c(&rhoC[0, 0], &work[0], &comm[0, 0], comm.shape[1], &mc[0], &sizes[0],
                                rhoC.shape[0], rhoC.shape[1], max_rounds, &cnt_best[0, 0], &stats[0],
                                &fws[0], &iws[0])
    return total


cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int hp_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int hp_omp_max_threads(void) { return 1; }
    #endif
    """
    int hp_omp_max_threads() nogil


def max_threads():
    """OpenMP's current thread limit: ``OMP_NUM_THREADS``, ``omp_set_num_threads`` (threadpoolctl)."""
    return hp_omp_max_threads()
