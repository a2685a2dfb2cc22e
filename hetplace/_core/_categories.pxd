# Categories (docs/model.md §3.2, §3.6): nogil kernels shared with other Cython modules.
#
#   from hetplace._core._categories cimport unrank_category_nogil
#   from hetplace._core._rng cimport rand_u01          # counter-based RNG (inline)
#
# Conventions (see _categories_py.py): categories of (K, S, exact) in
# lexicographic order of the size vector; ``binom[j, d] = C(j + d, j)`` with
# shape (parts, total - parts + 1), (total, parts) = (K, S) if exact else
# (K + 1, S + 1).  The sampling functions allocate scratch with malloc and
# return -1 if it fails (the caller raises MemoryError).
from libc.stdint cimport int64_t, uint64_t


cdef int64_t rank_category_nogil(const int64_t[::1] sizes, int64_t K, int64_t S, bint exact,
                                 const int64_t[:, ::1] binom) noexcept nogil

cdef void unrank_category_nogil(int64_t rank, int64_t K, int64_t S, bint exact,
                                const int64_t[:, ::1] binom, int64_t[::1] out) noexcept nogil

cdef void unrank_categories_nogil(const int64_t[::1] ranks, int64_t K, int64_t S, bint exact,
                                  const int64_t[:, ::1] binom, int64_t[:, ::1] out) noexcept nogil

cdef int64_t enumerate_categories_nogil(int64_t K, int64_t S, bint exact,
                                     int64_t[:, ::1] out) noexcept nogil

cdef int64_t sample_uniform_reservoir_nogil(uint64_t seed, int64_t C, int64_t N, int64_t K,
                                            int64_t S, bint exact,
                                            const int64_t[:, ::1] binom,
                                            int64_t[:, ::1] out,
                                            int64_t[::1] ranks) noexcept nogil

cdef int64_t sample_uniform_direct_nogil(uint64_t seed, int64_t N, int64_t K, int64_t S,
                                         bint exact, int64_t[:, ::1] out) noexcept nogil

cdef int64_t sample_weighted_enum_nogil(uint64_t seed, const int64_t[:, ::1] cats, int64_t K,
                                        const double[::1] centre, int64_t base_index,
                                        double spread, int64_t N, int64_t[::1] out_index,
                                        double[::1] out_key) noexcept nogil

cdef int64_t sample_weighted_perturb_nogil(uint64_t seed, int64_t N, int64_t M, int64_t K,
                                           int64_t S, bint exact, const double[::1] centre,
                                           const int64_t[::1] base, double spread,
                                           int64_t[:, ::1] out, double[::1] out_key,
                                           int64_t[::1] out_pos) noexcept nogil
