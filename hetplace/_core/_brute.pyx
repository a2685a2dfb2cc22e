# Exhaustive search over all (S+1)^K worker -> job assignments (docs/model.md §4.4, "brute force").
# Kernel: inputs are trusted (validated by hetplace.exact); no bounds checks.
cimport numpy as cnp
import numpy as np

from hetplace._core._polish cimport comm_is_spec, job_cost

cnp.import_array()

#: Assignments between two looks at the stop flag (about 2 ms).
cdef enum:
    POLL_ASSIGNMENTS = 65536


def brute_force(const double[:, ::1] rho, const double[::1] work,
                const double[:, ::1] size_cost, const long long[::1] current,
                const double[::1] restart_cost, long long[::1] best_out, const long long[::1] stop):
    """Write the assignment with the smallest total JCT into ``best_out``.

    ``size_cost`` prices job ``i`` on ``n`` workers, ``inf`` for sizes it cannot
    use: ``Problem.size_cost_spec`` (S, 3) or ``Problem.size_cost`` (S, K + 1),
    read by ``_polish.job_cost``.
    ``current`` (K,) is the running placement (-1: none) and ``restart_cost``
    (S,) what a job pays when its worker set differs from it in any way
    (``Problem.restart_cost``: 0 for new jobs; docs/model.md §1.4): a worker
    whose job differs from ``current`` restarts both jobs.
    Enumerates worker -> job maps (job -1 = idle) in odometer order, worker 0
    fastest-changing.  Assignments where a job has no worker, a worker with
    zero throughput for its job, or an infinite size cost are skipped.  Ties
    keep the first found.  Returns the best total JCT, restart losses
    included (``inf`` if none is feasible).
    ``stop`` (int64 (1,), :func:`hetplace._interrupt.new_stop`) is polled every
    ``POLL_ASSIGNMENTS`` assignments: once nonzero the search returns the best
    found so far (``best_out`` unchanged, ``inf``, when none was).
    """
    cdef Py_ssize_t S = rho.shape[0], K = rho.shape[1]
    cdef Py_ssize_t i, k
    cdef long long[::1] cur = np.full(K, -1, dtype=np.int64)
    cdef long long[::1] cnt = np.zeros(S, dtype=np.int64)
    cdef unsigned char[::1] changed = np.zeros(S, dtype=np.uint8)
    cdef double[::1] X = np.zeros(S)
    cdef double total, jct, best = np.inf
    cdef bint ok
    cdef bint spec = comm_is_spec(size_cost)
    cdef long long polls = 0
    with nogil:
        while True:
            polls += 1
            if polls == POLL_ASSIGNMENTS:
                polls = 0
                if stop[0] != 0:
                    break
            # evaluate the current assignment
            ok = True
            for i in range(S):
                X[i] = 0.0
                cnt[i] = 0
                changed[i] = 0
            for k in range(K):
                i = cur[k]
                if cur[k] != current[k]:  # both the old and the new job of worker k restart
                    if i >= 0:
                        changed[i] = 1
                    if current[k] >= 0:
                        changed[current[k]] = 1
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
                    jct = job_cost(work, size_cost, spec, i, X[i], cnt[i])
                    if changed[i] and restart_cost[i] != 0.0:
                        jct += restart_cost[i]
                    total += jct
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
