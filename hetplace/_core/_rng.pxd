# Counter-based random numbers (docs/model.md §3.10), Cython inline functions.
#
# Header-only: ``from hetplace._core._rng cimport rand_u01`` inlines the
# functions into the caller (nothing to import at run time).  Definitions and
# constants are those of _rng_nb.py (Numba) and _categories_py.py (Python);
# the three give the same bits:
#   splitmix64(x)            SplitMix64 output function
#   stream_key(seed, stream) = splitmix64(seed ^ (stream * 0xD1B54A32D192ED03))
#   rand_u64(seed, stream, counter) = splitmix64(key + counter * 0x9E3779B97F4A7C15)
#   rand_u01  = (rand_u64 >> 11) * 2**-53           in [0, 1)
#   rand_open01 = rand_u01 + 2**-54                 in (0, 1)
#   rand_below(seed, stream, counter, n)            unbiased in [0, n), one counter
# All functions are ``noexcept nogil`` and safe in ``prange`` loops.
from libc.stdint cimport int64_t, uint64_t


cdef inline uint64_t splitmix64(uint64_t x) noexcept nogil:
    cdef uint64_t z = x + 0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint64_t stream_key(uint64_t seed, uint64_t stream) noexcept nogil:
    return splitmix64(seed ^ (stream * 0xD1B54A32D192ED03ULL))


cdef inline uint64_t rand_u64_k(uint64_t key, uint64_t counter) noexcept nogil:
    return splitmix64(key + counter * 0x9E3779B97F4A7C15ULL)


cdef inline uint64_t rand_u64(uint64_t seed, uint64_t stream, uint64_t counter) noexcept nogil:
    return rand_u64_k(stream_key(seed, stream), counter)


cdef inline double rand_u01_k(uint64_t key, uint64_t counter) noexcept nogil:
    return <double>(rand_u64_k(key, counter) >> 11) * (1.0 / 9007199254740992.0)


cdef inline double rand_u01(uint64_t seed, uint64_t stream, uint64_t counter) noexcept nogil:
    return rand_u01_k(stream_key(seed, stream), counter)


cdef inline double rand_open01_k(uint64_t key, uint64_t counter) noexcept nogil:
    return (<double>(rand_u64_k(key, counter) >> 11) * (1.0 / 9007199254740992.0)
            + (0.5 / 9007199254740992.0))


cdef inline int64_t rand_below_k(uint64_t key, uint64_t counter, int64_t n) noexcept nogil:
    cdef uint64_t un = <uint64_t>n
    cdef uint64_t x = rand_u64_k(key, counter)
    cdef uint64_t limit = 0ULL - un
    cdef uint64_t r
    while True:
        r = x % un
        if x - r <= limit:
            return <int64_t>r
        x = splitmix64(x)


cdef inline int64_t rand_below(uint64_t seed, uint64_t stream, uint64_t counter,
                               int64_t n) noexcept nogil:
    return rand_below_k(stream_key(seed, stream), counter, n)
