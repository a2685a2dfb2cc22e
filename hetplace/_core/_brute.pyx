# Exhaustive search over all (S+1)^K worker -> job assignments (docs/model.md §4.4, "brute force").
# Kernel: inputs are trusted (validated by hetplace.exact); no bounds checks.
cimport numpy as cnp
import numpy as np

cnp.import_array()


def brute_force(const double[:, ::1] rho, const double[::1] work,
                const double[:, ::1] size_cost, long long[::1] best_out):
    """Write the assignment with the smallest total JCT into ``best_out``.

    ``size_cost[i, n]`` is job ``i``'s communication time on ``n`` workers, ``inf``
    for sizes it cannot use (``Problem.size_cost``: above ``max_workers``).
    Enumerates worker -> job maps (job -1 = idle) in odometer order, worker 0
    fastest-changing.  Assignments where a job has no worker, a worker with
    zero throughput for its job, or an infinite size cost are skipped.  Ties
    keep the first found.  Returns the best total JCT (``inf`` if none is
    feasible).
    """
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    cdef Py_ssize_t i, k
    cdef long long[::1] cur = np.full(K, -1, dtype=np.int64)
    cdef long long[::1] cnt = np.zeros(S, dtype=np.int64)
    cdef double[::1] X = np.zeros(S)
    cdef double total, best = np.inf
    cdef bint ok
    with nogil:
        while True:
            # evaluate the current assignment
            ok = True
            for i in range(S):
                X[i] = 0.0
                cnt[i] = 0
            for k in range(K):
                i = cur[k]
                if i >= 0:
                    if rho[i, k] <= 0.0:
                        ok = False
                        break
                    X[i] += rho[i, k]
                    cnt[i] += 1
            if ok:
                total = 0.0
                for i in range(S):
                    if cnt[i] == 0:
                        ok = False
                        break
                    total += work[i] / X[i] + size_cost[i, cnt[i]]
            if ok and total < best:
                best = total
                for k in range(K):
                    best_out[k] = cur[k]
            # next assignment (odometer over -1 .. S-1)
            k = 0
            while k < K:
                cur[k] += 1
                if cur[k] < S:
                    break
                cur[k] = -1
                k += 1
            if k == K:
                break
    return best
