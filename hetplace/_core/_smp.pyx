# SMP sample driver, Cython twin of _smp_nb.py: every sampled category through the
# market (run_samples), then the best distinct results through the polish
# (polish_rows), each in an OpenMP prange without the GIL.
# Kernel: inputs are trusted (validated by hetplace.smp); no bounds checks.
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from hetplace._core._matching cimport FORM_PRICE, market_category_c
from hetplace._core._polish cimport polish_nogil

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


cdef double _total(const double[:, ::1] rho, const double[::1] work, const double[:, ::1] comm,
                   int64_t[::1] wj) noexcept nogil:
    """True total JCT, same operation order as the Numba and Python twins; inf on OOM."""
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1], k, i
    cdef double total = 0.0
    cdef double* X = <double*> malloc(S * sizeof(double))
    cdef int64_t* n = <int64_t*> malloc(S * sizeof(int64_t))
    if X == NULL or n == NULL:
        free(X)
        free(n)
        return INFINITY
    for i in range(S):
        X[i] = 0.0
        n[i] = 0
    for k in range(K):
        i = wj[k]
        if i >= 0:
            X[i] += rho[i, k]
            n[i] += 1
    for i in range(S):
        total += work[i] / X[i] + comm[i, n[i]]
    free(X)
    free(n)
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


def polish_rows(const double[:, ::1] rho, const double[::1] work, const double[:, ::1] comm,
                const int64_t[::1] worker_type, const double[::1] speed, bint uniform,
                const int64_t[::1] rows, int64_t max_steps, int64_t[:, ::1] out_wj,
                double[::1] out_total, int64_t[:, ::1] out_stats, int threads):
    """Polish ``out_wj[rows[j]]`` in place (same contract as ``_smp_nb.polish_rows``)."""
    cdef Py_ssize_t R = rows.shape[0], j, s
    cdef int nt = threads if threads > 0 else 1
    if threads <= 0:
        import os
        nt = os.cpu_count() or 1
    for j in prange(R, nogil=True, num_threads=nt, schedule="dynamic"):
        s = rows[j]
        out_stats[s, 2] = polish_nogil(rho, work, comm, worker_type, uniform, out_wj[s], max_steps)
        out_total[s] = _total(rho, work, comm, out_wj[s])
    for j in range(R):
        if out_stats[rows[j], 2] < 0 or out_total[rows[j]] == INFINITY:
            raise MemoryError("SMP: out of memory while polishing")
