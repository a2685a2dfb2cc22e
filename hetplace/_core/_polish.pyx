# Local-search polish, Cython twin of _polish_nb.py (same operations, same order).
# Kernel: inputs are trusted (validated by the public layer); no bounds checks.
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, calloc, free
cimport numpy as cnp

cnp.import_array()


cdef inline double _job_cost(const double[::1] work, const double[:, ::1] comm,
                             Py_ssize_t i, double X, Py_ssize_t n) noexcept nogil:
    return work[i] / X + comm[i, n]


cdef inline void _recompute(const double[:, ::1] rho, int64_t[::1] worker_job,
                            double* X, long long* n, Py_ssize_t i) noexcept nogil:
    cdef double s = 0.0
    cdef long long c = 0
    cdef Py_ssize_t k
    for k in range(worker_job.shape[0]):
        if worker_job[k] == i:
            s += rho[i, k]
            c += 1
    X[i] = s
    n[i] = c


cdef long long polish_nogil(const double[:, ::1] rho, const double[::1] work,
                            const double[:, ::1] comm, const int64_t[::1] worker_type,
                            bint uniform, int64_t[::1] worker_job,
                            long long max_steps) noexcept nogil:
    """Best-improvement move/swap descent; returns steps taken, or -1 when out of memory."""
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    cdef Py_ssize_t G = 0, k, l, i, t
    cdef long long a, b, bb, key, steps = 0, kind
    cdef Py_ssize_t bk, bl
    cdef double total, best, d, da
    for k in range(K):
        if worker_type[k] + 1 > G:
            G = worker_type[k] + 1
    cdef double* X = <double*> calloc(S, sizeof(double))
    cdef long long* n = <long long*> calloc(S, sizeof(long long))
    cdef unsigned char* rep = <unsigned char*> calloc(K, 1)
    cdef unsigned char* seen = <unsigned char*> calloc((S + 1) * G, 1)
    if X == NULL or n == NULL or rep == NULL or seen == NULL:
        free(X); free(n); free(rep); free(seen)
        return -1
    for i in range(S):
        _recompute(rho, worker_job, X, n, i)
    while steps < max_steps:
        total = 0.0
        for i in range(S):
            total += _job_cost(work, comm, i, X[i], n[i])
        best = -1e-12 * total
        kind = 0
        bk = -1
        bl = -1
        bb = -1
        # class representatives
        if not uniform:
            for k in range(K):
                rep[k] = 1
        else:
            for t in range((S + 1) * G):
                seen[t] = 0
            for k in range(K):
                key = (worker_job[k] + 1) * G + worker_type[k]
                if seen[key] == 0:
                    seen[key] = 1
                    rep[k] = 1
                else:
                    rep[k] = 0
        # moves
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
        # swaps
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
    free(X); free(n); free(rep); free(seen)
    return steps


def polish(const double[:, ::1] rho, const double[::1] work, const double[:, ::1] comm,
           const int64_t[::1] worker_type, const double[::1] speed, bint uniform,
           int64_t[::1] worker_job, long long max_steps):
    """Python entry of :func:`polish_nogil` (same signature as the Numba kernel)."""
    cdef long long steps
    with nogil:
        steps = polish_nogil(rho, work, comm, worker_type, uniform, worker_job, max_steps)
    if steps < 0:
        raise MemoryError("polish: out of memory")
    return steps
