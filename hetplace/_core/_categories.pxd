# The kernels of _categories.py that other Cython modules may cimport (all noexcept nogil):
#
#   from hetplace._core._categories cimport rand_u01, rand_below, unrank_category
#
# Declarations only: the one definition of each is in _categories.py, whose
# module docstring gives the RNG streams and the category conventions.
from libc.stdint cimport int64_t, uint64_t

cpdef uint64_t splitmix64(uint64_t x) noexcept nogil
cpdef uint64_t stream_key(uint64_t seed, uint64_t stream) noexcept nogil
cpdef uint64_t rand_u64_k(uint64_t key, uint64_t counter) noexcept nogil
cpdef uint64_t rand_u64(uint64_t seed, uint64_t stream,
                                  uint64_t counter) noexcept nogil
cpdef double rand_u01_k(uint64_t key, uint64_t counter) noexcept nogil
cpdef double rand_u01(uint64_t seed, uint64_t stream, uint64_t counter) noexcept nogil
cpdef double rand_open01_k(uint64_t key, uint64_t counter) noexcept nogil
cpdef int64_t rand_below_k(uint64_t key, uint64_t counter, int64_t n) noexcept nogil
cpdef int64_t rand_below(uint64_t seed, uint64_t stream, uint64_t counter,
                           int64_t n) noexcept nogil
cpdef int64_t rank_category(const int64_t[::1] sizes, int64_t K, int64_t S, bint exact,
                              const int64_t[:, ::1] binom) noexcept nogil
cpdef void unrank_category(int64_t rank, int64_t K, int64_t S, bint exact, const int64_t[:, ::1] binom,
                           int64_t[::1] out) noexcept nogil
cpdef void unrank_categories(const int64_t[::1] ranks, int64_t K, int64_t S, bint exact,
                             const int64_t[:, ::1] binom, int64_t[:, ::1] out) noexcept nogil
