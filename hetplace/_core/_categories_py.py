"""Categories and counter-based RNG in plain Python (the ``backend="python"`` path).

Private kernels: inputs are trusted (validated by :mod:`hetplace.categories`).
This module is the readable twin of ``_rng_nb.py`` + ``_categories_nb.py``
(Numba) and ``_rng.pxd`` + ``_categories.pyx`` (Cython); all three do the same
integer and floating-point operations in the same order, so they return the
same bits.  Integers are Python ints (masked to 64 bits where the compiled
kernels use ``uint64``); floats are IEEE doubles; ``log``, ``log1p`` and ``exp``
come from the C library in every backend.

Definitions shared by all backends (see ``hetplace.categories`` for the
user-level description):

* A *composition* of ``total`` into ``parts`` positive parts is ranked in
  lexicographic order of the part vector.  The number of compositions of ``R``
  into ``m`` parts whose first part is below ``v`` is
  ``C(R-1, m-1) - C(R-v, m-1)`` (hockey-stick identity), so ranking costs
  O(parts) table look-ups and unranking O(parts log total) (binary search).
* A category with ``sum(n) == K`` is a composition of ``K`` into ``S`` parts;
  with ``sum(n) <= K`` it is the composition ``(n_1..n_S, K + 1 - sum(n))`` of
  ``K + 1`` into ``S + 1`` parts (a slack part, last).  Both orders are the
  lexicographic order of the size vector ``n``.
* ``binom[j, d] = C(j + d, j)`` for ``0 <= j < parts``, ``0 <= d <= total - parts``
  (saturated at ``2**63 - 1``); ``C(t, j) = binom[j, t - j]``.
"""

import math

__all__ = [
    "MASK64",
    "STREAM_UNIFORM",
    "STREAM_DIRECT",
    "STREAM_WEIGHTED",
    "STREAM_WEIGHTED_KEYS",
    "STREAM_TOPUP",
    "splitmix64",
    "stream_key",
    "rand_u64",
    "rand_u64_k",
    "rand_u01",
    "rand_u01_k",
    "rand_open01_k",
    "rand_below",
    "rand_below_k",
    "rand_u01_fill",
    "rank_category",
    "unrank_categories",
    "unrank_category",
    "enumerate_categories",
    "sample_uniform_reservoir",
    "sample_uniform_direct",
    "sample_weighted_enum",
    "sample_weighted_perturb",
]

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
STREAM_MUL = 0xD1B54A32D192ED03
TWO_M53 = 1.0 / 9007199254740992.0
TWO_M54 = 0.5 / 9007199254740992.0
HASH_INIT = 0x243F6A8885A308D3  # digits of pi: start value of the category hash

# Reserved stream ids (>= 2**63) of hetplace.categories.
STREAM_UNIFORM = (1 << 63) | 1  # Algorithm L
STREAM_DIRECT = (1 << 63) | 2  # Floyd subsets (uniform, huge spaces)
STREAM_WEIGHTED = (1 << 63) | 3  # weighted: perturbation candidates
STREAM_WEIGHTED_KEYS = (1 << 63) | 4  # weighted: keys over an enumerated space
STREAM_TOPUP = (1 << 63) | 5  # weighted: uniform top-up candidates

# Weighted sampler: number of widening rounds (scale x2 each) before the
# uniform top-up.
WIDEN_ROUNDS = 6
# Sizes up to this value take log(n) from a table (same libm values).
LOG_TABLE_MAX = 1 << 16
# Perturbation exponents b * v are clipped to [-EXP_CLIP, EXP_CLIP].
EXP_CLIP = 20.0


# ----------------------------------------------------------------------------
# Counter-based RNG (see _rng_nb.py for the definitions)
# ----------------------------------------------------------------------------


def splitmix64(x):
    z = (x + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def stream_key(seed, stream):
    return splitmix64(seed ^ ((stream * STREAM_MUL) & MASK64))


def rand_u64_k(key, counter):
    return splitmix64((key + counter * GOLDEN) & MASK64)


def rand_u64(seed, stream, counter):
    return rand_u64_k(stream_key(seed, stream), counter)


def rand_u01_k(key, counter):
    return float(rand_u64_k(key, counter) >> 11) * TWO_M53


def rand_u01(seed, stream, counter):
    return rand_u01_k(stream_key(seed, stream), counter)


def rand_open01_k(key, counter):
    return float(rand_u64_k(key, counter) >> 11) * TWO_M53 + TWO_M54


def rand_below_k(key, counter, n):
    x = rand_u64_k(key, counter)
    limit = (1 << 64) - n
    while True:
        r = x % n
        if x - r <= limit:
            return r
        x = splitmix64(x)


def rand_below(seed, stream, counter, n):
    return rand_below_k(stream_key(seed, stream), counter, n)


def rand_u01_fill(seed, stream, out):
    key = stream_key(seed, stream)
    for c in range(len(out)):
        out[c] = rand_u01_k(key, c)


# ----------------------------------------------------------------------------
# Ranking, unranking, enumeration
# ----------------------------------------------------------------------------


def rank_category(sizes, K, S, exact, binom):
    """Rank of ``sizes`` (length S) among categories of (K, S, exact)."""
    total = K if exact else K + 1
    parts = S if exact else S + 1
    rank = 0
    R = total
    for i in range(parts - 1):  # i < S always
        m = parts - i
        n = sizes[i]
        # C(R-1, m-1) - C(R-n, m-1)
        rank += binom[m - 1][R - m] - binom[m - 1][R - n - m + 1]
        R -= n
    return rank


def unrank_category(rank, K, S, exact, binom, out):
    """Write the category of rank ``rank`` into ``out[:S]``."""
    total = K if exact else K + 1
    parts = S if exact else S + 1
    R = total
    for i in range(parts - 1):
        m = parts - i
        row = binom[m - 1]
        top = row[R - m]  # C(R-1, m-1): compositions of what remains
        target = top - rank  # smallest d with C(d + m-1, m-1) >= target
        lo = 0
        hi = R - m
        while lo < hi:
            mid = (lo + hi) // 2
            if row[mid] >= target:
                hi = mid
            else:
                lo = mid + 1
        # t = lo + m - 1, n = R - t
        n = R - lo - m + 1
        rank -= top - row[lo]
        out[i] = n
        R -= n
    if exact:
        out[S - 1] = R


def unrank_categories(ranks, K, S, exact, binom, out):
    """Unrank every entry of ``ranks`` into the rows of ``out`` (len(ranks), S)."""
    for j in range(len(ranks)):
        unrank_category(int(ranks[j]), K, S, exact, binom, out[j])


def enumerate_categories(K, S, exact, out):
    """Write all categories in rank order into ``out`` (shape (C, S))."""
    total = K if exact else K + 1
    parts = S if exact else S + 1
    cur = [1] * parts
    cur[parts - 1] = total - parts + 1
    C = len(out)
    for r in range(C):
        row = out[r]
        for i in range(S):
            row[i] = cur[i]
        if r == C - 1:
            break
        # lexicographic successor: rightmost i whose suffix can give one unit
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


def sample_uniform_reservoir(seed, C, N, K, S, exact, binom, out, ranks):
    """Algorithm L (Li 1994) over ranks ``[0, C)``; ``N < C``.

    ``ranks`` (N,) receives the reservoir (slot order), ``out`` (N, S) the
    categories.  Returns the number of RNG counters used.
    """
    key = stream_key(seed, STREAM_UNIFORM)
    ctr = 0
    for j in range(N):
        ranks[j] = j
    W = math.exp(math.log(rand_open01_k(key, ctr)) / N)
    ctr += 1
    i = N - 1
    while True:
        q = math.log(rand_open01_k(key, ctr)) / math.log1p(-W)
        ctr += 1
        # floor(q) >= C - i - 1  <=>  q >= C - i - 1 (an integer); also catches q = inf
        if q >= float(C - i - 1):
            break
        i += int(math.floor(q)) + 1
        ranks[rand_below_k(key, ctr, N)] = i
        ctr += 1
        W = W * math.exp(math.log(rand_open01_k(key, ctr)) / N)
        ctr += 1
    unrank_categories(ranks, K, S, exact, binom, out)
    return ctr


def _hash_row(row, S):
    h = HASH_INIT
    for i in range(S):
        h = splitmix64(h ^ int(row[i]))
    return h if h != 0 else 1


def _set_insert(table, mask, h):
    """Insert ``h`` (non-zero) into the open-addressing set; False if present."""
    p = h & mask
    while True:
        v = table[p]
        if v == 0:
            table[p] = h
            return True
        if v == h:
            return False
        p = (p + 1) & mask


def _pow2_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


def _floyd_category(key, ctr, K, S, exact, row):
    """Uniform category by Floyd's subset algorithm; returns the new counter.

    Cut points: an (S-1)-subset of {1..K-1} (exact) or an S-subset of {1..K}:
    for j = n-m+1..n, t = 1 + rand_below(j); insert j if t is already chosen,
    else t.  The sorted cut points give the sizes.  (The compiled kernels keep
    the set in a byte map or a hash table; the chosen set is the same.)
    """
    n = K - 1 if exact else K
    m = S - 1 if exact else S
    chosen = set()
    for j in range(n - m + 1, n + 1):
        t = 1 + rand_below_k(key, ctr, j)
        ctr += 1
        chosen.add(j if t in chosen else t)
    prev = 0
    for i, c in enumerate(sorted(chosen)):
        row[i] = c - prev
        prev = c
    if exact:
        row[S - 1] = K - prev
    return ctr


def sample_uniform_direct(seed, N, K, S, exact, out):
    """N distinct uniform categories by Floyd's algorithm, in draw order.

    A draw whose 64-bit hash was seen before is redrawn with the next counters.
    Returns the number of RNG counters used.
    """
    key = stream_key(seed, STREAM_DIRECT)
    seen = [0] * _pow2_at_least(2 * N + 2)
    mask = len(seen) - 1
    row = [0] * S
    ctr = 0
    got = 0
    while got < N:
        ctr = _floyd_category(key, ctr, K, S, exact, row)
        if _set_insert(seen, mask, _hash_row(row, S)):
            dst = out[got]
            for i in range(S):
                dst[i] = row[i]
            got += 1
    return ctr


# ----------------------------------------------------------------------------
# Weighted sampling (Efraimidis-Spirakis A-Res in log space)
# ----------------------------------------------------------------------------


def _log_table(K):
    """``log(v)`` for ``v = 0..min(K, LOG_TABLE_MAX)`` (entry 0 unused)."""
    top = min(K, LOG_TABLE_MAX)
    return [0.0] + [math.log(float(v)) for v in range(1, top + 1)]


def _log_distance(row, logc, logn, S):
    """RMS log-ratio distance ``sqrt(mean_i (log n_i - log c_i)**2)``."""
    top = len(logn) - 1
    acc = 0.0
    for i in range(S):
        v = row[i]
        lv = logn[v] if v <= top else math.log(float(v))
        d = lv - logc[i]
        acc += d * d
    return math.sqrt(acc / S)


def _heap_worse(hk, hp, a, b):
    """True if slot a is worse (larger key, then later position) than slot b."""
    return hk[a] > hk[b] or (hk[a] == hk[b] and hp[a] > hp[b])


def _sift_up(heap, hk, hp, j):
    while j > 0:
        parent = (j - 1) // 2
        if _heap_worse(hk, hp, heap[j], heap[parent]):
            heap[j], heap[parent] = heap[parent], heap[j]
            j = parent
        else:
            break


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
            heap[j], heap[c] = heap[c], heap[j]
            j = c
        else:
            break


def _offer(heap, hk, hp, count, N, key_val, pos):
    """Offer (key, pos) to the max-heap reservoir; return slot to fill or -1."""
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


def sample_weighted_enum(seed, cats, K, centre, base_index, spread, N, out_index, out_key):
    """A-Res over the whole enumerated space ``cats`` (C, S).

    Key of row r: ``log(-log u_r) + d_r**2 / (2 spread**2)`` (smaller is
    better), ``u_r = rand_open01(seed, STREAM_WEIGHTED_KEYS, r)``; the row
    ``base_index`` (rounded centre) gets ``-inf``.  Writes min(N, C) row
    indices and keys (heap slot order); returns their number.
    """
    C = len(cats)
    S = len(centre)
    logn = _log_table(K)
    logc = [math.log(c) for c in centre]
    inv2s2 = 1.0 / (2.0 * spread * spread)
    key = stream_key(seed, STREAM_WEIGHTED_KEYS)
    hk = [0.0] * N
    hp = [0] * N
    heap = [0] * N
    count = 0
    for r in range(C):
        u = rand_open01_k(key, r)
        if r == base_index:
            kv = -math.inf
        else:
            d = _log_distance(cats[r], logc, logn, S)
            kv = math.log(-math.log(u)) + d * d * inv2s2
        slot = _offer(heap, hk, hp, count, N, kv, r)
        if count < N:
            count += 1
        if slot >= 0:
            out_index[slot] = r
    for j in range(count):
        out_key[j] = hk[j]
    return count


def _perturb_category(key, ctr, K, S, exact, centre, spread_b, y, row):
    """Candidate: centre scaled part-wise by exp(b v_i), rounded; new counter.

    ``b = spread_b * (-log u)``, ``v_i`` uniform in [-1, 1).  The total is K
    (exact) or round(sum y) clipped to [S, K]; the ``total - S`` workers above
    one per job are split in proportion to ``max(y_i - 1, 0)`` by cumulative
    rounding (floor(x + 0.5) of the running sum), so every part stays >= 1.
    """
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
        T = K
    else:
        tf = float(math.floor(sum_y + 0.5))
        if tf >= float(K):
            T = K
        elif tf <= float(S):
            T = S
        else:
            T = int(tf)
    extra = T - S
    uniform_extra = not (sum_e > 0.0)
    f = float(extra) / (float(S) if uniform_extra else sum_e)
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
            cur = int(math.floor(acc * f + 0.5))
            if cur > extra:
                cur = extra
        row[i] = 1 + cur - prev
        prev = cur
    return ctr


def sample_weighted_perturb(seed, N, M, K, S, exact, centre, base, spread,
                            out, out_key, out_pos):
    """A-Res over a stream of perturbed candidates around ``centre``.

    Stream position 0 is ``base`` (the rounded centre, key ``-inf``); positions
    1..M-1 are candidates from ``_perturb_category`` with scale ``spread``.
    While fewer than N distinct categories were seen, further rounds of M
    candidates follow with the scale doubled (at most WIDEN_ROUNDS rounds), then
    uniform Floyd candidates (stream STREAM_TOPUP) until N are found (needs C > N).
    Candidates whose 64-bit hash was seen before are skipped.  Key of a
    candidate: ``log(-log u) + d**2 / (2 spread**2)``, ``u`` the draw following
    its construction.  Fills ``out`` (N, S), keys and stream positions (heap slot
    order); returns N.
    """
    logn = _log_table(K)
    logc = [math.log(c) for c in centre]
    inv2s2 = 1.0 / (2.0 * spread * spread)
    key = stream_key(seed, STREAM_WEIGHTED)
    tkey = stream_key(seed, STREAM_TOPUP)
    seen = [0] * _pow2_at_least(2 * (M + N) + 2)
    mask = len(seen) - 1
    hk = [0.0] * N
    hp = [0] * N
    heap = [0] * N
    y = [0.0] * S
    row = [0] * S
    count = 0
    ctr = 0
    tctr = 0
    pos = 0
    rounds = 0
    scale = spread
    while True:
        if pos == 0:
            for i in range(S):
                row[i] = base[i]
        elif rounds <= WIDEN_ROUNDS:
            ctr = _perturb_category(key, ctr, K, S, exact, centre, scale, y, row)
        else:
            tctr = _floyd_category(tkey, tctr, K, S, exact, row)
        if pos == 0:
            kv = -math.inf
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
        if _set_insert(seen, mask, _hash_row(row, S)):
            slot = _offer(heap, hk, hp, count, N, kv, pos)
            if count < N:
                count += 1
            if slot >= 0:
                dst = out[slot]
                for i in range(S):
                    dst[i] = row[i]
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
    return N
