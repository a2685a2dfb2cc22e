# Deferred-acceptance matching kernels (docs/model.md §3.3-3.5), Cython backend: the
# C-level API for other Cython modules (e.g. the SMP driver):
#
#     from hetplace._core._matching cimport market_category_c, FORM_PRICE
#
# All functions are noexcept nogil, never allocate, never touch Python objects,
# and trust their inputs (C-contiguous, right lengths; see _matching_nb.py for
# the meaning of every argument and the work-buffer sizes).  Results are
# bit-identical to the Numba and pure-Python backends.
from libc.stdint cimport int64_t

cpdef enum:
    FORM_PRICE = 0
    FORM_ORDINAL = 1

# Exact ascending-price auction.  vals_t: (K, S) worker-major; pair allowed iff
# vals_t[k*S + i] > lo, worth scale[i] * vals_t[k*S + i].  caps (S,).
# Out: worker_job (K,), job_price (S+1,), stats (2,) = [searches, proposals].
# fws/iws: auction_workspace_size(S, K) doubles / int64.  Returns 0 or 1 (infeasible).
cdef int auction_c(const double* vals_t, const double* scale, double lo,
                   const int64_t* caps, Py_ssize_t S, Py_ssize_t K,
                   int64_t* worker_job, double* job_price, int64_t* stats,
                   double* fws, int64_t* iws) noexcept nogil

# Job-proposing Gale-Shapley with slots.  job_order (S, K), order_len (S,),
# worker_rank (S, K), caps (S,).  Out: worker_job (K,), stats (2,) = [1, proposals].
# iws: gale_shapley_workspace_size(S, K) int64.  Returns 0 or 1 (a job not filled).
cdef int gale_shapley_c(const int64_t* job_order, const int64_t* order_len,
                        const double* worker_rank, const int64_t* caps,
                        Py_ssize_t S, Py_ssize_t K,
                        int64_t* worker_job, int64_t* stats, int64_t* iws) noexcept nogil

# Job preference lists from vals (S, K): acceptable iff vals > lo; best first,
# ties by lower worker index.  Out: job_order (S, K), order_len (S,).  tmp: K int64.
cdef void job_order_c(const double* vals, double lo, Py_ssize_t S, Py_ssize_t K,
                      int64_t* job_order, int64_t* order_len, int64_t* tmp) noexcept nogil

# worker_rank[i, k] = rho[i, k] / (sum_k rho[i, k] / K); rho and worker_rank (S, K).
cdef void relative_rank_c(const double* rho, Py_ssize_t S, Py_ssize_t K,
                          double* worker_rank) noexcept nogil

# One SMP category.  rho (S, K) throughputs (Problem.worker_throughput), work (S,),
# comm_time (S, K+1), sizes (S,) >= 1 with sum <= K, form FORM_PRICE/FORM_ORDINAL,
# max_rounds >= 1; job_order/order_len/worker_rank only read by the ordinal form
# (may be NULL for the price form).  Out: worker_job (K,), stats (2,) =
# [rounds, proposals].  fws/iws: market_workspace_size(S, K).
# Returns the true total JCT of worker_job (inf when a job got no worker).
cdef double market_category_c(const double* rho, const double* work,
                              const double* comm_time, const int64_t* sizes,
                              Py_ssize_t S, Py_ssize_t K, int form, Py_ssize_t max_rounds,
                              const int64_t* job_order, const int64_t* order_len,
                              const double* worker_rank,
                              int64_t* worker_job, int64_t* stats,
                              double* fws, int64_t* iws) noexcept nogil
