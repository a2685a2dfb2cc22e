"""Categories (docs/model.md §3.2, §3.6): ranking, enumeration and sampling, Numba kernels.

Private kernels: inputs are trusted (validated by :mod:`hetplace.categories`).
The algorithms, stream ids and conventions are documented in
``_categories_py.py`` (the plain-Python twin); this module and
``_categories.pyx`` do the same operations in the same order, so the three
backends return the same bits.  All kernels are ``nogil`` and can be called
from other ``@njit`` code (e.g. inside ``prange`` loops):

* ``rank_category(sizes, K, S, exact, binom) -> int64``
* ``unrank_category(rank, K, S, exact, binom, out)`` writes ``out[:S]``
* ``unrank_categories(ranks, K, S, exact, binom, out)`` fills ``out`` (len(ranks), S)
* ``enumerate_categories(K, S, exact, out)`` fills ``out`` (C, S)
* ``sample_uniform_reservoir(seed, C, N, K, S, exact, binom, out, ranks)``
* ``sample_uniform_direct(seed, N, K, S, exact, out)``
* ``sample_weighted_enum(seed, cats, K, centre, base_index, spread, N, out_index, out_key)``
* ``sample_weighted_perturb(seed, N, M, K, S, exact, centre, base, spread, out, out_key, out_pos)``

``binom`` is the int64 table ``binom[j, d] = C(j + d, j)`` of shape
``(parts, total - parts + 1)`` where ``(total, parts) = (K, S)`` if ``exact``
else ``(K + 1, S + 1)``.  Integer arguments are int64; ``seed`` is uint64.
"""

import math

import numpy as np
from numba import njit
from ._jit import JIT

from ._rng_nb import rand_below_k, rand_open01_k, rand_u01_k, splitmix64, stream_key

__all__ = [
    "rank_category",
    "unrank_category",
    "unrank_categories",
    "enumerate_categories",
    "sample_uniform_reservoir",
    "sample_uniform_direct",
    "sample_weighted_enum",
    "sample_weighted_perturb",
]

# Keep in sync with _categories_py.py and _categories.pyx.
STREAM_UNIFORM = np.uint64((1 << 63) | 1)
STREAM_DIRECT = np.uint64((1 << 63) | 2)
STREAM_WEIGHTED = np.uint64((1 << 63) | 3)
STREAM_WEIGHTED_KEYS = np.uint64((1 << 63) | 4)
STREAM_TOPUP = np.uint64((1 << 63) | 5)
HASH_INIT = np.uint64(0x243F6A8885A308D3)
WIDEN_ROUNDS = 6
LOG_TABLE_MAX = 1 << 16
EXP_CLIP = 20.0
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


# ----------------------------------------------------------------------------
# Ranking, unranking, enumeration
# ----------------------------------------------------------------------------


@njit(**JIT)
def rank_category(sizes, K, S, exact, binom):
    """Rank (int64) of the category ``sizes[:S]`` in lexicographic order."""
    total = np.int64(K) if exact else np.int64(K) + 1
    parts = np.int64(S) if exact else np.int64(S) + 1
    rank = np.int64(0)
    R = total
    for i in range(parts - 1):
        m = parts - i
        n = np.int64(sizes[i])
        rank += binom[m - 1, R - m] - binom[m - 1, R - n - m + 1]
        R -= n
    return rank


@njit(**JIT)
def unrank_category(rank, K, S, exact, binom, out):
    """Write the category of rank ``rank`` into ``out[:S]`` (O(S log K))."""
    total = np.int64(K) if exact else np.int64(K) + 1
    parts = np.int64(S) if exact else np.int64(S) + 1
    r = np.int64(rank)
    R = total
    for i in range(parts - 1):
        m = parts - i
        top = binom[m - 1, R - m]
        target = top - r
        lo = np.int64(0)
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


@njit(**JIT)
def unrank_categories(ranks, K, S, exact, binom, out):
    """Unrank every entry of ``ranks`` into the rows of ``out`` (len(ranks), S)."""
    for j in range(ranks.shape[0]):
        unrank_category(ranks[j], K, S, exact, binom, out[j])


@njit(**JIT)
def enumerate_categories(K, S, exact, out):
    """Fill ``out`` (C, S) with all categories in rank order."""
    total = np.int64(K) if exact else np.int64(K) + 1
    parts = np.int64(S) if exact else np.int64(S) + 1
    cur = np.ones(parts, dtype=np.int64)
    cur[parts - 1] = total - parts + 1
    C = out.shape[0]
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


# ----------------------------------------------------------------------------
# Uniform sampling
# ----------------------------------------------------------------------------


@njit(**JIT)
def sample_uniform_reservoir(seed, C, N, K, S, exact, binom, out, ranks):
    """Algorithm L (Li 1994) over ranks [0, C), N < C; returns counters used."""
    key = stream_key(seed, STREAM_UNIFORM)
    ctr = np.int64(0)
    for j in range(N):
        ranks[j] = j
    W = math.exp(math.log(rand_open01_k(key, ctr)) / N)
    ctr += 1
    i = np.int64(N) - 1
    while True:
        q = math.log(rand_open01_k(key, ctr)) / math.log1p(-W)
        ctr += 1
        if q >= np.float64(C - i - 1):
            break
        i += np.int64(np.floor(q)) + 1
        ranks[rand_below_k(key, ctr, N)] = i
        ctr += 1
        W = W * math.exp(math.log(rand_open01_k(key, ctr)) / N)
        ctr += 1
    unrank_categories(ranks, K, S, exact, binom, out)
    return ctr


@njit(**JIT)
def _hash_row(row, S):
    h = HASH_INIT
    for i in range(S):
        h = splitmix64(h ^ np.uint64(row[i]))
    if h == _ZERO:
        h = _ONE
    return h


@njit(**JIT)
def _set_insert(table, h):
    """Insert ``h`` (non-zero uint64) into the open-addressing set; False if present."""
    mask = np.uint64(table.shape[0] - 1)
    p = h & mask
    while True:
        v = table[p]
        if v == _ZERO:
            table[p] = h
            return True
        if v == h:
            return False
        p = (p + _ONE) & mask


@njit(**JIT)
def _pow2_at_least(n):
    p = np.int64(1)
    while p < n:
        p *= 2
    return p


@njit(**JIT)
def _small_insert(table, t):
    """Insert ``t`` (uint64 >= 1) into a hash set probed from splitmix64(t); False if present."""
    mask = np.uint64(table.shape[0] - 1)
    p = splitmix64(t) & mask
    while True:
        v = table[p]
        if v == _ZERO:
            table[p] = t
            return True
        if v == t:
            return False
        p = (p + _ONE) & mask


@njit(**JIT)
def _floyd_scratch(K, S, exact):
    """Scratch for _floyd_category: byte map of n+1 entries when n <= 64 (m + 16),
    else (empty map and) a hash set of >= 2m + 2 slots."""
    n = np.int64(K) - 1 if exact else np.int64(K)
    m = np.int64(S) - 1 if exact else np.int64(S)
    if n <= 64 * (m + 16):
        mark = np.zeros(n + 1, dtype=np.uint8)
        small = np.zeros(1, dtype=np.uint64)
    else:
        mark = np.zeros(0, dtype=np.uint8)
        small = np.zeros(_pow2_at_least(2 * m + 2), dtype=np.uint64)
    chosen = np.zeros(m + 1, dtype=np.int64)
    return mark, small, chosen


@njit(**JIT)
def _floyd_category(key, ctr, K, S, exact, mark, small, chosen, row):
    """Uniform category by Floyd's subset algorithm; returns the new counter."""
    n = np.int64(K) - 1 if exact else np.int64(K)
    m = np.int64(S) - 1 if exact else np.int64(S)
    first = n - m + 1
    if mark.shape[0] > 0:
        for j in range(first, n + 1):
            t = 1 + rand_below_k(key, ctr, j)
            ctr += 1
            if mark[t] != 0:
                t = j
            mark[t] = 1
        cnt = 0
        p = np.int64(1)
        while cnt < m:
            if mark[p] != 0:
                mark[p] = 0
                chosen[cnt] = p
                cnt += 1
            p += 1
    else:
        small[:] = 0
        for j in range(first, n + 1):
            t = 1 + rand_below_k(key, ctr, j)
            ctr += 1
            if not _small_insert(small, np.uint64(t)):
                _small_insert(small, np.uint64(j))
                t = j
            chosen[j - first] = t
        chosen[:m].sort()
    prev = np.int64(0)
    for i in range(m):
        row[i] = chosen[i] - prev
        prev = chosen[i]
    if exact:
        row[S - 1] = K - prev
    return ctr


@njit(**JIT)
def sample_uniform_direct(seed, N, K, S, exact, out):
    """N distinct uniform categories (Floyd), draw order; returns counters used."""
    key = stream_key(seed, STREAM_DIRECT)
    mark, small, chosen = _floyd_scratch(K, S, exact)
    seen = np.zeros(_pow2_at_least(2 * np.int64(N) + 2), dtype=np.uint64)
    row = np.zeros(S, dtype=np.int64)
    ctr = np.int64(0)
    got = 0
    while got < N:
        ctr = _floyd_category(key, ctr, K, S, exact, mark, small, chosen, row)
        if _set_insert(seen, _hash_row(row, S)):
            for i in range(S):
                out[got, i] = row[i]
            got += 1
    return ctr


# ----------------------------------------------------------------------------
# Weighted sampling (Efraimidis-Spirakis A-Res in log space)
# ----------------------------------------------------------------------------


@njit(**JIT)
def _log_table(K):
    top = min(np.int64(K), LOG_TABLE_MAX)
    t = np.zeros(top + 1, dtype=np.float64)
    for v in range(1, top + 1):
        t[v] = math.log(np.float64(v))
    return t


@njit(**JIT)
def _log_centre(centre):
    S = centre.shape[0]
    t = np.empty(S, dtype=np.float64)
    for i in range(S):
        t[i] = math.log(centre[i])
    return t


@njit(**JIT)
def _log_distance(row, logc, logn, S):
    top = logn.shape[0] - 1
    acc = 0.0
    for i in range(S):
        v = row[i]
        if v <= top:
            lv = logn[v]
        else:
            lv = math.log(np.float64(v))
        d = lv - logc[i]
        acc += d * d
    return math.sqrt(acc / S)


@njit(**JIT)
def _heap_worse(hk, hp, a, b):
    return hk[a] > hk[b] or (hk[a] == hk[b] and hp[a] > hp[b])


@njit(**JIT)
def _sift_up(heap, hk, hp, j):
    while j > 0:
        parent = (j - 1) // 2
        if _heap_worse(hk, hp, heap[j], heap[parent]):
            tmp = heap[j]
            heap[j] = heap[parent]
            heap[parent] = tmp
            j = parent
        else:
            break


@njit(**JIT)
def _sift_down(heap, hk, hp, n):
    j = 0
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


@njit(**JIT)
def _offer(heap, hk, hp, count, N, key_val, pos):
    """Offer (key, pos) to the max-heap reservoir; return the slot to fill or -1."""
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
    return np.int64(-1)


@njit(**JIT)
def sample_weighted_enum(seed, cats, K, centre, base_index, spread, N, out_index, out_key):
    """A-Res over all rows of ``cats`` (C, S); returns min(N, C)."""
    C = cats.shape[0]
    S = centre.shape[0]
    logn = _log_table(K)
    logc = _log_centre(centre)
    inv2s2 = 1.0 / (2.0 * spread * spread)
    key = stream_key(seed, STREAM_WEIGHTED_KEYS)
    hk = np.zeros(N, dtype=np.float64)
    hp = np.zeros(N, dtype=np.int64)
    heap = np.zeros(N, dtype=np.int64)
    count = np.int64(0)
    for r in range(C):
        u = rand_open01_k(key, r)
        if r == base_index:
            kv = -np.inf
        else:
            d = _log_distance(cats[r], logc, logn, S)
            kv = math.log(-math.log(u)) + d * d * inv2s2
        slot = _offer(heap, hk, hp, count, N, kv, np.int64(r))
        if count < N:
            count += 1
        if slot >= 0:
            out_index[slot] = r
    for j in range(count):
        out_key[j] = hk[j]
    return count


@njit(**JIT)
def _perturb_category(key, ctr, K, S, exact, centre, spread_b, y, row):
    """Perturbed, rounded candidate around ``centre``; returns the new counter."""
    b = spread_b * -math.log(rand_open01_k(key, ctr))
    ctr += 1
    sum_y = 0.0
    sum_e = 0.0
    for i in range(S):
        v = 2.0 * rand_u01_k(key, ctr) - 1.0
        ctr += 1
        t = b * v
        if t > EXP_CLIP:
            t = EXP_CLIP
        elif t < -EXP_CLIP:
            t = -EXP_CLIP
        yi = centre[i] * math.exp(t)
        y[i] = yi
        sum_y += yi
        e = yi - 1.0
        if e > 0.0:
            sum_e += e
    if exact:
        T = np.int64(K)
    else:
        tf = np.floor(sum_y + 0.5)
        if tf >= np.float64(K):
            T = np.int64(K)
        elif tf <= np.float64(S):
            T = np.int64(S)
        else:
            T = np.int64(tf)
    extra = T - S
    uniform_extra = not (sum_e > 0.0)
    if uniform_extra:
        f = np.float64(extra) / np.float64(S)
    else:
        f = np.float64(extra) / sum_e
    acc = 0.0
    prev = np.int64(0)
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
            cur = np.int64(np.floor(acc * f + 0.5))
            if cur > extra:
                cur = extra
        row[i] = 1 + cur - prev
        prev = cur
    return ctr


@njit(**JIT)
def sample_weighted_perturb(seed, N, M, K, S, exact, centre, base, spread,
                            out, out_key, out_pos):
    """A-Res over perturbed candidates around ``centre`` (see _categories_py); returns N."""
    logn = _log_table(K)
    logc = _log_centre(centre)
    inv2s2 = 1.0 / (2.0 * spread * spread)
    key = stream_key(seed, STREAM_WEIGHTED)
    tkey = stream_key(seed, STREAM_TOPUP)
    seen = np.zeros(_pow2_at_least(2 * (np.int64(M) + N) + 2), dtype=np.uint64)
    hk = np.zeros(N, dtype=np.float64)
    hp = np.zeros(N, dtype=np.int64)
    heap = np.zeros(N, dtype=np.int64)
    y = np.zeros(S, dtype=np.float64)
    row = np.zeros(S, dtype=np.int64)
    mark, small, chosen = _floyd_scratch(K, S, exact)
    count = np.int64(0)
    ctr = np.int64(0)
    tctr = np.int64(0)
    pos = np.int64(0)
    rounds = 0
    scale = spread
    while True:
        if pos == 0:
            for i in range(S):
                row[i] = base[i]
        elif rounds <= WIDEN_ROUNDS:
            ctr = _perturb_category(key, ctr, K, S, exact, centre, scale, y, row)
        else:
            tctr = _floyd_category(tkey, tctr, K, S, exact, mark, small, chosen, row)
        if pos == 0:
            kv = -np.inf
        elif rounds <= WIDEN_ROUNDS:
            u = rand_open01_k(key, ctr)
            ctr += 1
            d = _log_distance(row, logc, logn, S)
            kv = math.log(-math.log(u)) + d * d * inv2s2
        else:
            u = rand_open01_k(tkey, tctr)
            tctr += 1
            d = _log_distance(row, logc, logn, S)
            kv = math.log(-math.log(u)) + d * d * inv2s2
        if _set_insert(seen, _hash_row(row, S)):
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
    return np.int64(N)
