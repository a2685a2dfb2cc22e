# Categories (docs/model.md §3.2, §3.6): ranking, enumeration and sampling, Cython kernels.
# Twin of _categories_nb.py / _categories_py.py (same operations, same order, same
# bits); the algorithms and stream ids are documented in _categories_py.py.
# Kernel: inputs are trusted (validated by hetplace.categories); no bounds checks.
from libc.math cimport INFINITY, exp, floor, log, log1p, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memset

from hetplace._core._rng cimport (
    rand_below_k,
    rand_open01_k,
    rand_u01_k,
    splitmix64 as _splitmix64,
    stream_key as _stream_key,
    rand_u64 as _rand_u64,
    rand_u01 as _rand_u01,
    rand_below as _rand_below,
)

# Keep in sync with _categories_py.py and _categories_nb.py.
cdef uint64_t STREAM_UNIFORM = (1ULL << 63) | 1ULL
cdef uint64_t STREAM_DIRECT = (1ULL << 63) | 2ULL
cdef uint64_t STREAM_WEIGHTED = (1ULL << 63) | 3ULL
cdef uint64_t STREAM_WEIGHTED_KEYS = (1ULL << 63) | 4ULL
cdef uint64_t STREAM_TOPUP = (1ULL << 63) | 5ULL
cdef uint64_t HASH_INIT = 0x243F6A8885A308D3ULL
cdef int WIDEN_ROUNDS = 6
cdef int64_t LOG_TABLE_MAX = 1 << 16
cdef double EXP_CLIP = 20.0


# ----------------------------------------------------------------------------
# Ranking, unranking, enumeration
# ----------------------------------------------------------------------------


cdef int64_t rank_category_nogil(const int64_t[::1] sizes, int64_t K, int64_t S, bint exact,
                                 const int64_t[:, ::1] binom) noexcept nogil:
    cdef int64_t total = K if exact else K + 1
    cdef int64_t parts = S if exact else S + 1
    cdef int64_t rank = 0, R = total, m, n, i
    for i in range(parts - 1):
        m = parts - i
        n = sizes[i]
        rank += binom[m - 1, R - m] - binom[m - 1, R - n - m + 1]
        R -= n
    return rank


cdef void unrank_category_nogil(int64_t rank, int64_t K, int64_t S, bint exact,
                                const int64_t[:, ::1] binom, int64_t[::1] out) noexcept nogil:
    cdef int64_t total = K if exact else K + 1
    cdef int64_t parts = S if exact else S + 1
    cdef int64_t r = rank, R = total, m, top, target, lo, hi, mid, n, i
    for i in range(parts - 1):
        m = parts - i
        top = binom[m - 1, R - m]
        target = top - r
        lo = 0
        hi = R - m
        while lo < hi:
            mid = (lo + hi) // 2
            if binom[m - 1, mid] >= target:
                hi = mid
            else:
                lo = mid + 1
        n = R - lo - m + 1
        r -= top - binom[m - 1, lo]
        out[i] = n
        R -= n
    if exact:
        out[S - 1] = R


cdef void unrank_categories_nogil(const int64_t[::1] ranks, int64_t K, int64_t S, bint exact,
                                  const int64_t[:, ::1] binom, int64_t[:, ::1] out) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(ranks.shape[0]):
        unrank_category_nogil(ranks[j], K, S, exact, binom, out[j])


cdef int64_t enumerate_categories_nogil(int64_t K, int64_t S, bint exact,
                                     int64_t[:, ::1] out) noexcept nogil:
    cdef int64_t total = K if exact else K + 1
    cdef int64_t parts = S if exact else S + 1
    cdef int64_t C = out.shape[0]
    cdef int64_t r, i, j, s
    cdef int64_t* cur = <int64_t*>malloc(parts * sizeof(int64_t))
    if cur == NULL:
        return -1
    for i in range(parts):
        cur[i] = 1
    cur[parts - 1] = total - parts + 1
    for r in range(C):
        for i in range(S):
            out[r, i] = cur[i]
        if r == C - 1:
            break
        s = cur[parts - 1]
        i = parts - 2
        while s <= parts - 1 - i:
            s += cur[i]
            i -= 1
        cur[i] += 1
        for j in range(i + 1, parts - 1):
            cur[j] = 1
        cur[parts - 1] = s - 1 - (parts - 2 - i)
    free(cur)
    return 0


# ----------------------------------------------------------------------------
# Uniform sampling
# ----------------------------------------------------------------------------


cdef int64_t sample_uniform_reservoir_nogil(uint64_t seed, int64_t C, int64_t N, int64_t K,
                                            int64_t S, bint exact,
                                            const int64_t[:, ::1] binom,
                                            int64_t[:, ::1] out,
                                            int64_t[::1] ranks) noexcept nogil:
    cdef uint64_t key = _stream_key(seed, STREAM_UNIFORM)
    cdef int64_t ctr = 0, i, j
    cdef double W, q
    for j in range(N):
        ranks[j] = j
    W = exp(log(rand_open01_k(key, ctr)) / N)
    ctr += 1
    i = N - 1
    while True:
        q = log(rand_open01_k(key, ctr)) / log1p(-W)
        ctr += 1
        if q >= <double>(C - i - 1):
            break
        i += <int64_t>floor(q) + 1
        ranks[rand_below_k(key, ctr, N)] = i
        ctr += 1
        W = W * exp(log(rand_open01_k(key, ctr)) / N)
        ctr += 1
    unrank_categories_nogil(ranks, K, S, exact, binom, out)
    return ctr


cdef inline uint64_t _hash_row(const int64_t* row, int64_t S) noexcept nogil:
    cdef uint64_t h = HASH_INIT
    cdef int64_t i
    for i in range(S):
        h = _splitmix64(h ^ <uint64_t>row[i])
    if h == 0:
        h = 1
    return h


cdef inline bint _set_insert(uint64_t* table, int64_t size, uint64_t h) noexcept nogil:
    """Insert h (non-zero) into the open-addressing set; False if present."""
    cdef uint64_t mask = <uint64_t>(size - 1)
    cdef uint64_t p = h & mask
    cdef uint64_t v
    while True:
        v = table[p]
        if v == 0:
            table[p] = h
            return True
        if v == h:
            return False
        p = (p + 1) & mask


cdef inline int64_t _pow2_at_least(int64_t n) noexcept nogil:
    cdef int64_t p = 1
    while p < n:
        p *= 2
    return p


cdef int _cmp_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef inline bint _small_insert(uint64_t* table, int64_t size, uint64_t t) noexcept nogil:
    """Insert t (>= 1) into a hash set probed from splitmix64(t); False if present."""
    cdef uint64_t mask = <uint64_t>(size - 1)
    cdef uint64_t p = _splitmix64(t) & mask
    cdef uint64_t v
    while True:
        v = table[p]
        if v == 0:
            table[p] = t
            return True
        if v == t:
            return False
        p = (p + 1) & mask


cdef inline bint _floyd_use_map(int64_t K, int64_t S, bint exact) noexcept nogil:
    """Byte map of n+1 entries when n <= 64 (m + 16), else a hash set + sort."""
    cdef int64_t n = K - 1 if exact else K
    cdef int64_t m = S - 1 if exact else S
    return n <= 64 * (m + 16)


cdef int64_t _floyd_category(uint64_t key, int64_t ctr, int64_t K, int64_t S, bint exact,
                             unsigned char* mark, uint64_t* small, int64_t small_size,
                             int64_t* chosen, int64_t* row) noexcept nogil:
    """Uniform category by Floyd's subset algorithm; returns the new counter.

    ``mark`` (byte map of n+1 zeros, left zeroed) if not NULL, else the hash
    set ``small``; the chosen set, hence the result, is the same either way.
    """
    cdef int64_t n = K - 1 if exact else K
    cdef int64_t m = S - 1 if exact else S
    cdef int64_t first = n - m + 1
    cdef int64_t j, t, i, prev, cnt, p
    if mark != NULL:
        for j in range(first, n + 1):
            t = 1 + rand_below_k(key, ctr, j)
            ctr += 1
            if mark[t] != 0:
                t = j
            mark[t] = 1
        cnt = 0
        p = 1
        while cnt < m:
            if mark[p] != 0:
                mark[p] = 0
                chosen[cnt] = p
                cnt += 1
            p += 1
    else:
        memset(small, 0, small_size * sizeof(uint64_t))
        for j in range(first, n + 1):
            t = 1 + rand_below_k(key, ctr, j)
            ctr += 1
            if not _small_insert(small, small_size, <uint64_t>t):
                _small_insert(small, small_size, <uint64_t>j)
                t = j
            chosen[j - first] = t
        if m > 1:
            qsort(chosen, m, sizeof(int64_t), _cmp_int64)
    prev = 0
    for i in range(m):
        row[i] = chosen[i] - prev
        prev = chosen[i]
    if exact:
        row[S - 1] = K - prev
    return ctr


cdef int64_t sample_uniform_direct_nogil(uint64_t seed, int64_t N, int64_t K, int64_t S,
                                         bint exact, int64_t[:, ::1] out) noexcept nogil:
    cdef uint64_t key = _stream_key(seed, STREAM_DIRECT)
    cdef int64_t m = S - 1 if exact else S
    cdef int64_t small_size = _pow2_at_least(2 * m + 2)
    cdef int64_t seen_size = _pow2_at_least(2 * N + 2)
    cdef int64_t ctr = 0, got = 0, i
    cdef bint use_map = _floyd_use_map(K, S, exact)
    cdef unsigned char* mark = NULL
    cdef uint64_t* small = NULL
    cdef uint64_t* seen = <uint64_t*>malloc(seen_size * sizeof(uint64_t))
    cdef int64_t* chosen = <int64_t*>malloc((m + 1) * sizeof(int64_t))
    cdef int64_t* row = <int64_t*>malloc(S * sizeof(int64_t))
    if use_map:
        mark = <unsigned char*>calloc(K + 1, 1)
    else:
        small = <uint64_t*>malloc(small_size * sizeof(uint64_t))
    if (mark == NULL and small == NULL) or seen == NULL or chosen == NULL or row == NULL:
        free(mark); free(small); free(seen); free(chosen); free(row)
        return -1
    memset(seen, 0, seen_size * sizeof(uint64_t))
    while got < N:
        ctr = _floyd_category(key, ctr, K, S, exact, mark, small, small_size, chosen, row)
        if _set_insert(seen, seen_size, _hash_row(row, S)):
            for i in range(S):
                out[got, i] = row[i]
            got += 1
    free(mark); free(small); free(seen); free(chosen); free(row)
    return ctr


# ----------------------------------------------------------------------------
# Weighted sampling (Efraimidis-Spirakis A-Res in log space)
# ----------------------------------------------------------------------------


cdef double* _log_table(int64_t K, int64_t* top_out) noexcept nogil:
    cdef int64_t top = K if K < LOG_TABLE_MAX else LOG_TABLE_MAX
    cdef int64_t v
    cdef double* t = <double*>malloc((top + 1) * sizeof(double))
    if t == NULL:
        return NULL
    t[0] = 0.0
    for v in range(1, top + 1):
        t[v] = log(<double>v)
    top_out[0] = top
    return t


cdef inline double _log_distance(const int64_t* row, const double* logc, const double* logn,
                                 int64_t top, int64_t S) noexcept nogil:
    cdef double acc = 0.0, lv, d
    cdef int64_t i, v
    for i in range(S):
        v = row[i]
        if v <= top:
            lv = logn[v]
        else:
            lv = log(<double>v)
        d = lv - logc[i]
        acc += d * d
    return sqrt(acc / S)


cdef inline bint _heap_worse(const double* hk, const int64_t* hp, int64_t a,
                             int64_t b) noexcept nogil:
    return hk[a] > hk[b] or (hk[a] == hk[b] and hp[a] > hp[b])


cdef inline void _sift_up(int64_t* heap, const double* hk, const int64_t* hp,
                          int64_t j) noexcept nogil:
    cdef int64_t parent, tmp
    while j > 0:
        parent = (j - 1) // 2
        if _heap_worse(hk, hp, heap[j], heap[parent]):
            tmp = heap[j]
            heap[j] = heap[parent]
            heap[parent] = tmp
            j = parent
        else:
            break


cdef inline void _sift_down(int64_t* heap, const double* hk, const int64_t* hp,
                            int64_t n) noexcept nogil:
    cdef int64_t j = 0, left, c, tmp
    while True:
        left = 2 * j + 1
        if left >= n:
            break
        c = left
        if left + 1 < n and _heap_worse(hk, hp, heap[left + 1], heap[left]):
            c = left + 1
        if _heap_worse(hk, hp, heap[c], heap[j]):
            tmp = heap[j]
            heap[j] = heap[c]
            heap[c] = tmp
            j = c
        else:
            break


cdef inline int64_t _offer(int64_t* heap, double* hk, int64_t* hp, int64_t count, int64_t N,
                           double key_val, int64_t pos) noexcept nogil:
    """Offer (key, pos) to the max-heap reservoir; return the slot to fill or -1."""
    cdef int64_t slot, top
    if count < N:
        slot = count
        hk[slot] = key_val
        hp[slot] = pos
        heap[count] = slot
        _sift_up(heap, hk, hp, count)
        return slot
    top = heap[0]
    if key_val < hk[top] or (key_val == hk[top] and pos < hp[top]):
        hk[top] = key_val
        hp[top] = pos
        _sift_down(heap, hk, hp, N)
        return top
    return -1


cdef int64_t sample_weighted_enum_nogil(uint64_t seed, const int64_t[:, ::1] cats, int64_t K,
                                        const double[::1] centre, int64_t base_index,
                                        double spread, int64_t N, int64_t[::1] out_index,
                                        double[::1] out_key) noexcept nogil:
    cdef int64_t C = cats.shape[0]
    cdef int64_t S = centre.shape[0]
    cdef int64_t top = 0, count = 0, r, i, j, slot
    cdef double inv2s2 = 1.0 / (2.0 * spread * spread)
    cdef uint64_t key = _stream_key(seed, STREAM_WEIGHTED_KEYS)
    cdef double u, d, kv
    cdef double* logn = _log_table(K, &top)
    cdef double* logc = <double*>malloc(S * sizeof(double))
    cdef double* hk = <double*>malloc(N * sizeof(double))
    cdef int64_t* hp = <int64_t*>malloc(N * sizeof(int64_t))
    cdef int64_t* heap = <int64_t*>malloc(N * sizeof(int64_t))
    if logn == NULL or logc == NULL or hk == NULL or hp == NULL or heap == NULL:
        free(logn); free(logc); free(hk); free(hp); free(heap)
        return -1
    for i in range(S):
        logc[i] = log(centre[i])
    for r in range(C):
        u = rand_open01_k(key, <uint64_t>r)
        if r == base_index:
            kv = -INFINITY
        else:
            d = _log_distance(&cats[r, 0], logc, logn, top, S)
            kv = log(-log(u)) + d * d * inv2s2
        slot = _offer(heap, hk, hp, count, N, kv, r)
        if count < N:
            count += 1
        if slot >= 0:
            out_index[slot] = r
    for j in range(count):
        out_key[j] = hk[j]
    free(logn); free(logc); free(hk); free(hp); free(heap)
    return count


cdef int64_t _perturb_category(uint64_t key, int64_t ctr, int64_t K, int64_t S, bint exact,
                               const double[::1] centre, double spread_b, double* y,
                               int64_t* row) noexcept nogil:
    cdef double b = spread_b * -log(rand_open01_k(key, ctr))
    cdef double sum_y = 0.0, sum_e = 0.0, v, t, yi, e, tf, f, acc
    cdef int64_t i, T, extra, prev, cur
    cdef bint uniform_extra
    ctr += 1
    for i in range(S):
        v = 2.0 * rand_u01_k(key, ctr) - 1.0
        ctr += 1
        t = b * v
        if t > EXP_CLIP:
            t = EXP_CLIP
        elif t < -EXP_CLIP:
            t = -EXP_CLIP
        yi = centre[i] * exp(t)
        y[i] = yi
        sum_y += yi
        e = yi - 1.0
        if e > 0.0:
            sum_e += e
    if exact:
        T = K
    else:
        tf = floor(sum_y + 0.5)
        if tf >= <double>K:
            T = K
        elif tf <= <double>S:
            T = S
        else:
            T = <int64_t>tf
    extra = T - S
    uniform_extra = not (sum_e > 0.0)
    if uniform_extra:
        f = <double>extra / <double>S
    else:
        f = <double>extra / sum_e
    acc = 0.0
    prev = 0
    for i in range(S):
        if uniform_extra:
            acc += 1.0
        else:
            e = y[i] - 1.0
            if e > 0.0:
                acc += e
        if i == S - 1:
            cur = extra
        else:
            cur = <int64_t>floor(acc * f + 0.5)
            if cur > extra:
                cur = extra
        row[i] = 1 + cur - prev
        prev = cur
    return ctr


cdef int64_t sample_weighted_perturb_nogil(uint64_t seed, int64_t N, int64_t M, int64_t K,
                                           int64_t S, bint exact, const double[::1] centre,
                                           const int64_t[::1] base, double spread,
                                           int64_t[:, ::1] out, double[::1] out_key,
                                           int64_t[::1] out_pos) noexcept nogil:
    cdef int64_t top = 0, count = 0, ctr = 0, tctr = 0, pos = 0, i, j, slot
    cdef int rounds = 0
    cdef double scale = spread, u, d, kv
    cdef double inv2s2 = 1.0 / (2.0 * spread * spread)
    cdef uint64_t key = _stream_key(seed, STREAM_WEIGHTED)
    cdef uint64_t tkey = _stream_key(seed, STREAM_TOPUP)
    cdef int64_t m = S - 1 if exact else S
    cdef int64_t seen_size = _pow2_at_least(2 * (M + N) + 2)
    cdef int64_t small_size = _pow2_at_least(2 * m + 2)
    cdef double* logn = _log_table(K, &top)
    cdef double* logc = <double*>malloc(S * sizeof(double))
    cdef uint64_t* seen = <uint64_t*>malloc(seen_size * sizeof(uint64_t))
    cdef bint use_map = _floyd_use_map(K, S, exact)
    cdef unsigned char* mark = NULL
    cdef uint64_t* small = NULL
    cdef int64_t* chosen = <int64_t*>malloc((m + 1) * sizeof(int64_t))
    cdef double* hk = <double*>malloc(N * sizeof(double))
    cdef int64_t* hp = <int64_t*>malloc(N * sizeof(int64_t))
    cdef int64_t* heap = <int64_t*>malloc(N * sizeof(int64_t))
    cdef double* y = <double*>malloc(S * sizeof(double))
    cdef int64_t* row = <int64_t*>malloc(S * sizeof(int64_t))
    if use_map:
        mark = <unsigned char*>calloc(K + 1, 1)
    else:
        small = <uint64_t*>malloc(small_size * sizeof(uint64_t))
    if (logn == NULL or logc == NULL or seen == NULL or (mark == NULL and small == NULL)
            or chosen == NULL or hk == NULL or hp == NULL or heap == NULL or y == NULL
            or row == NULL):
        free(logn); free(logc); free(seen); free(mark); free(small); free(chosen)
        free(hk); free(hp); free(heap); free(y); free(row)
        return -1
    memset(seen, 0, seen_size * sizeof(uint64_t))
    for i in range(S):
        logc[i] = log(centre[i])
    while True:
        if pos == 0:
            for i in range(S):
                row[i] = base[i]
        elif rounds <= WIDEN_ROUNDS:
            ctr = _perturb_category(key, ctr, K, S, exact, centre, scale, y, row)
        else:
            tctr = _floyd_category(tkey, tctr, K, S, exact, mark, small, small_size, chosen,
                                   row)
        if pos == 0:
            kv = -INFINITY
        elif rounds <= WIDEN_ROUNDS:
            u = rand_open01_k(key, ctr)
            ctr += 1
            d = _log_distance(row, logc, logn, top, S)
            kv = log(-log(u)) + d * d * inv2s2
        else:
            u = rand_open01_k(tkey, tctr)
            tctr += 1
            d = _log_distance(row, logc, logn, top, S)
            kv = log(-log(u)) + d * d * inv2s2
        if _set_insert(seen, seen_size, _hash_row(row, S)):
            slot = _offer(heap, hk, hp, count, N, kv, pos)
            if count < N:
                count += 1
            if slot >= 0:
                for i in range(S):
                    out[slot, i] = row[i]
        pos += 1
        if rounds <= WIDEN_ROUNDS and pos % M == 0:
            if count >= N:
                break
            rounds += 1
            scale = scale * 2.0
        elif rounds > WIDEN_ROUNDS and count >= N:
            break
    for j in range(N):
        out_key[j] = hk[j]
        out_pos[j] = hp[j]
    free(logn); free(logc); free(seen); free(mark); free(small); free(chosen)
    free(hk); free(hp); free(heap); free(y); free(row)
    return N


# ----------------------------------------------------------------------------
# Python wrappers (same signatures as the Numba kernels in _categories_nb.py)
# ----------------------------------------------------------------------------


def splitmix64(uint64_t x):
    """SplitMix64 output function (see _rng.pxd)."""
    return _splitmix64(x)


def stream_key(uint64_t seed, uint64_t stream):
    """Key of stream ``stream`` under ``seed``."""
    return _stream_key(seed, stream)


def rand_u64(uint64_t seed, uint64_t stream, uint64_t counter):
    """64-bit counter-based draw (see _rng.pxd)."""
    return _rand_u64(seed, stream, counter)


def rand_u01(uint64_t seed, uint64_t stream, uint64_t counter):
    """Uniform double in [0, 1) (see _rng.pxd)."""
    return _rand_u01(seed, stream, counter)


def rand_below(uint64_t seed, uint64_t stream, uint64_t counter, int64_t n):
    """Unbiased integer in [0, n) (see _rng.pxd)."""
    return _rand_below(seed, stream, counter, n)


def rank_category(const int64_t[::1] sizes, int64_t K, int64_t S, bint exact,
                  const int64_t[:, ::1] binom):
    return rank_category_nogil(sizes, K, S, exact, binom)


def unrank_category(int64_t rank, int64_t K, int64_t S, bint exact,
                    const int64_t[:, ::1] binom, int64_t[::1] out):
    unrank_category_nogil(rank, K, S, exact, binom, out)


def unrank_categories(const int64_t[::1] ranks, int64_t K, int64_t S, bint exact,
                      const int64_t[:, ::1] binom, int64_t[:, ::1] out):
    with nogil:
        unrank_categories_nogil(ranks, K, S, exact, binom, out)


def rand_u01_fill(uint64_t seed, uint64_t stream, double[::1] out):
    """``out[c] = rand_u01(seed, stream, c)`` for every ``c`` (benchmarks, tests)."""
    cdef uint64_t key = _stream_key(seed, stream)
    cdef Py_ssize_t c
    with nogil:
        for c in range(out.shape[0]):
            out[c] = rand_u01_k(key, <uint64_t>c)


def enumerate_categories(int64_t K, int64_t S, bint exact, int64_t[:, ::1] out):
    cdef int64_t res
    with nogil:
        res = enumerate_categories_nogil(K, S, exact, out)
    if res < 0:
        raise MemoryError("enumerate_categories: out of memory for scratch arrays")


def sample_uniform_reservoir(uint64_t seed, int64_t C, int64_t N, int64_t K, int64_t S,
                             bint exact, const int64_t[:, ::1] binom, int64_t[:, ::1] out,
                             int64_t[::1] ranks):
    cdef int64_t res
    with nogil:
        res = sample_uniform_reservoir_nogil(seed, C, N, K, S, exact, binom, out, ranks)
    return res


def sample_uniform_direct(uint64_t seed, int64_t N, int64_t K, int64_t S, bint exact,
                          int64_t[:, ::1] out):
    cdef int64_t res
    with nogil:
        res = sample_uniform_direct_nogil(seed, N, K, S, exact, out)
    if res < 0:
        raise MemoryError("sample_uniform_direct: out of memory for scratch arrays")
    return res


def sample_weighted_enum(uint64_t seed, const int64_t[:, ::1] cats, int64_t K,
                         const double[::1] centre, int64_t base_index, double spread,
                         int64_t N, int64_t[::1] out_index, double[::1] out_key):
    cdef int64_t res
    with nogil:
        res = sample_weighted_enum_nogil(seed, cats, K, centre, base_index, spread, N,
                                         out_index, out_key)
    if res < 0:
        raise MemoryError("sample_weighted_enum: out of memory for scratch arrays")
    return res


def sample_weighted_perturb(uint64_t seed, int64_t N, int64_t M, int64_t K, int64_t S,
                            bint exact, const double[::1] centre, const int64_t[::1] base,
                            double spread, int64_t[:, ::1] out, double[::1] out_key,
                            int64_t[::1] out_pos):
    cdef int64_t res
    with nogil:
        res = sample_weighted_perturb_nogil(seed, N, M, K, S, exact, centre, base, spread,
                                            out, out_key, out_pos)
    if res < 0:
        raise MemoryError("sample_weighted_perturb: out of memory for scratch arrays")
    return res
