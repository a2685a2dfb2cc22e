"""Categories (docs/model.md §3.2, §3.6, §3.10): counter-based RNG, ranking, enumeration, sampling; one source, three backends.

Written once in Cython's pure-Python mode (the rules are those of
:mod:`hetplace._core._polish`): ``cythonize`` builds it at install
(``backend="cython"``; ``_categories.pxd`` declares the kernels other Cython
modules may ``cimport``), and :func:`hetplace._core._source.load` compiles
every ``@cython.cfunc`` / ``@cython.ccall`` with Numba (``backend="numba"``)
or runs it as plain Python (``backend="python"``, which with exact Python
integers and a binomial "table" of them also serves the public big-integer
rank and unrank).  Every backend does the same integer and floating-point
operations in the same order (``log``, ``log1p``, ``exp`` from the C library),
so all return the same bits.  Unsigned 64-bit values are ``uint64_t``
and go through ``cython.cast`` where they meet signed ones (Numba would
otherwise make ``float64`` of the mix; as Python they are masked ints).
Private: inputs are trusted (validated by :mod:`hetplace.categories`).

Random numbers: a draw is a pure function of ``(seed, stream, counter)``:

* ``splitmix64(x)``: the SplitMix64 output function (Steele, Lea & Flood,
  2014): ``z = x + 0x9E3779B97F4A7C15``; ``z = (z ^ (z >> 30)) *
  0xBF58476D1CE4E5B9``; ``z = (z ^ (z >> 27)) * 0x94D049BB133111EB``;
  ``z ^ (z >> 31)``, all modulo 2**64;
* ``stream_key(seed, stream) = splitmix64(seed ^ (stream * 0xD1B54A32D192ED03))``;
* ``rand_u64(seed, stream, counter) = splitmix64(key + counter * 0x9E3779B97F4A7C15)``:
  the ``counter``-th output of a SplitMix64 generator seeded with the key;
* ``rand_u01 = (rand_u64 >> 11) * 2**-53`` in [0, 1); ``rand_open01 =
  rand_u01 + 2**-54`` in (0, 1) (never 0 or 1: its ``log`` is finite);
* ``rand_below(..., n)``: unbiased in [0, n) by rejection (``x % n`` unless
  ``x - x % n > 2**64 - n``, then ``x = splitmix64(x)``): one counter value.

The ``*_k`` variants take the key instead of ``(seed, stream)``.  Streams
``>= 2**63`` are reserved for the samplers here (``STREAM_*``).

Categories (see :mod:`hetplace.categories`): a category with ``sum(n) == K``
is a composition of K into S positive parts; with ``sum(n) <= K`` it is the
composition ``(n_1..n_S, K + 1 - sum(n))`` of K + 1 into S + 1 parts (a slack
part, last); both ranked in lexicographic order of ``n``.  The compositions
of R into m parts whose first part is below v number ``C(R-1, m-1) -
C(R-v, m-1)``, so ranking reads O(S) entries of ``binom[j, d] = C(j + d, j)``
(int64, shape ``(parts, total - parts + 1)``, saturated at ``2**63 - 1``) and
unranking O(S log K) (binary search).
"""

from __future__ import annotations

import cython
import numpy as np
from cython.cimports.libc.math import INFINITY, exp, floor, log, log1p, sqrt
from cython.cimports.libc.stdint import int64_t, uint64_t

__all__ = [
    "COMPILED", "splitmix64", "stream_key", "rand_u64", "rand_u64_k", "rand_u01", "rand_u01_k", "rand_open01_k",
    "rand_below", "rand_below_k", "rand_u01_fill", "rank_category", "unrank_category", "unrank_categories",
    "enumerate_categories", "sample_uniform_reservoir", "sample_uniform_direct", "sample_weighted_enum",
    "sample_weighted_perturb",
]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

ZERO = cython.declare(uint64_t, 0)
ONE = cython.declare(uint64_t, 1)
STREAM_MUL = cython.declare(uint64_t, 0xD1B54A32D192ED03)
#: Start value of the category hash (digits of pi).
HASH_INIT = cython.declare(uint64_t, 0x243F6A8885A308D3)

# Reserved stream ids (>= 2**63) of the samplers.
STREAM_UNIFORM = cython.declare(uint64_t, (1 << 63) | 1)  # Algorithm L
STREAM_DIRECT = cython.declare(uint64_t, (1 << 63) | 2)  # Floyd subsets (uniform, huge spaces)
STREAM_WEIGHTED = cython.declare(uint64_t, (1 << 63) | 3)  # weighted: perturbation candidates
STREAM_WEIGHTED_KEYS = cython.declare(uint64_t, (1 << 63) | 4)  # weighted: keys over an enumerated space
STREAM_TOPUP = cython.declare(uint64_t, (1 << 63) | 5)  # weighted: uniform top-up candidates

#: Weighted sampler: widening rounds (scale x2 each) before the uniform top-up.
WIDEN_ROUNDS = cython.declare(int64_t, 6)
#: Sizes up to this value take log(n) from a table (the same libm values).
LOG_TABLE_MAX = cython.declare(int64_t, 1 << 16)
#: Perturbation exponents b * v are clipped to [-EXP_CLIP, EXP_CLIP].
EXP_CLIP = cython.declare(cython.double, 20.0)


# ------------------------------------------------------------------ counter-based RNG
# The constants of the hot loops are written as calls of _u64, which the C compiler
# and LLVM fold into immediates: as declared module constants they were loads from
# memory and made the Cython draws slower (docs/results.md §4; benchmarks/bench_categories.py).


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _u64(hi: uint64_t, lo: uint64_t) -> uint64_t:
    """The 64-bit constant ``hi * 2**32 + lo`` (``hi``, ``lo`` below ``2**32``)."""
    return (cython.cast(uint64_t, hi) << 32) | cython.cast(uint64_t, lo)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _mask64() -> uint64_t:
    """``2**64 - 1``: the wrap-around of the plain-Python run (a no-op compiled)."""
    return _u64(0xFFFFFFFF, 0xFFFFFFFF)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _golden() -> uint64_t:
    """``0x9E3779B97F4A7C15``, SplitMix64's increment."""
    return _u64(0x9E3779B9, 0x7F4A7C15)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def splitmix64(x: uint64_t) -> uint64_t:
    """SplitMix64 output function of ``x`` (uint64 -> uint64)."""
    z: uint64_t = (cython.cast(uint64_t, x) + _golden()) & _mask64()
    z = ((z ^ (z >> 30)) * _u64(0xBF58476D, 0x1CE4E5B9)) & _mask64()
    z = ((z ^ (z >> 27)) * _u64(0x94D049BB, 0x133111EB)) & _mask64()
    return z ^ (z >> 31)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def stream_key(seed: uint64_t, stream: uint64_t) -> uint64_t:
    """Key of stream ``stream`` under ``seed``."""
    return splitmix64(cython.cast(uint64_t, seed)
                      ^ ((cython.cast(uint64_t, stream) * STREAM_MUL) & _mask64()))


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_u64_k(key: uint64_t, counter: uint64_t) -> uint64_t:
    """``counter``-th 64-bit draw of the stream with key ``key``."""
    return splitmix64((cython.cast(uint64_t, key) + cython.cast(uint64_t, counter) * _golden()) & _mask64())


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_u64(seed: uint64_t, stream: uint64_t, counter: uint64_t) -> uint64_t:
    """64-bit draw number ``counter`` of stream ``stream`` under ``seed``."""
    return rand_u64_k(stream_key(seed, stream), counter)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_u01_k(key: uint64_t, counter: uint64_t) -> cython.double:
    """Uniform double in [0, 1) with 53 random bits."""
    return cython.cast(cython.double, rand_u64_k(key, counter) >> 11) * (1.0 / 9007199254740992.0)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_u01(seed: uint64_t, stream: uint64_t, counter: uint64_t) -> cython.double:
    """Uniform double in [0, 1): ``(rand_u64 >> 11) * 2**-53``."""
    return rand_u01_k(stream_key(seed, stream), counter)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_open01_k(key: uint64_t, counter: uint64_t) -> cython.double:
    """Uniform double in (0, 1): ``rand_u01 + 2**-54`` (exact)."""
    return cython.cast(cython.double, rand_u64_k(key, counter) >> 11) * (1.0 / 9007199254740992.0) + (
        0.5 / 9007199254740992.0)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_below_k(key: uint64_t, counter: uint64_t, n: int64_t) -> int64_t:
    """Unbiased integer in [0, n) (``1 <= n < 2**63``); consumes one counter value."""
    un: uint64_t = cython.cast(uint64_t, n)
    x: uint64_t = rand_u64_k(key, counter)
    limit: uint64_t = (ZERO - un) & _mask64()  # 2**64 - n
    r: uint64_t
    while True:
        r = x % un
        if x - r <= limit:
            return cython.cast(int64_t, r)
        x = splitmix64(x)


@cython.ccall
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def rand_below(seed: uint64_t, stream: uint64_t, counter: uint64_t,
               n: int64_t) -> int64_t:
    """Unbiased integer in [0, n) of stream ``stream`` under ``seed``."""
    return rand_below_k(stream_key(seed, stream), counter, n)


@cython.ccall
@cython.nogil
@cython.exceptval(check=False)
def rand_u01_fill(seed: uint64_t, stream: uint64_t, out: cython.double[::1]) -> cython.void:
    """``out[c] = rand_u01(seed, stream, c)`` for every ``c`` (benchmarks, tests)."""
    key: uint64_t = stream_key(seed, stream)
    c: cython.Py_ssize_t
    for c in range(out.shape[0]):
        out[c] = rand_u01_k(key, c)


# ------------------------------------------------------------------ ranking, unranking, enumeration


@cython.ccall
@cython.nogil
@cython.exceptval(check=False)
def rank_category(sizes: cython.const[int64_t][::1], K: int64_t, S: int64_t,
                  exact: cython.bint, binom: cython.const[int64_t][:, ::1]) -> int64_t:
    """Rank of the category ``sizes[:S]`` among those of (K, S, exact): sum of ``C(R-1, m-1) - C(R-n, m-1)``."""
    total: int64_t = K if exact else K + 1
    parts: int64_t = S if exact else S + 1
    rank: int64_t = 0
    R: int64_t = total
    m: int64_t
    n: int64_t
    i: int64_t
    for i in range(parts - 1):  # i < S always
        m = parts - i
        n = sizes[i]
        rank += binom[m - 1, R - m] - binom[m - 1, R - n - m + 1]
        R -= n
    return rank


@cython.ccall
@cython.nogil
@cython.exceptval(check=False)
def unrank_category(rank: int64_t, K: int64_t, S: int64_t, exact: cython.bint,
                    binom: cython.const[int64_t][:, ::1], out: int64_t[::1]) -> cython.void:
    """Write the category of rank ``rank`` into ``out[:S]``: per part, a binary search over ``C(t, m-1)``."""
    total: int64_t = K if exact else K + 1
    parts: int64_t = S if exact else S + 1
    r: int64_t = rank
    R: int64_t = total
    m: int64_t
    top: int64_t
    target: int64_t
    lo: int64_t
    hi: int64_t
    mid: int64_t
    n: int64_t
    i: int64_t
    for i in range(parts - 1):
        m = parts - i
        top = binom[m - 1, R - m]  # C(R-1, m-1): compositions of what remains
        target = top - r  # smallest d with C(d + m-1, m-1) >= target
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


@cython.ccall
@cython.nogil
@cython.exceptval(check=False)
def unrank_categories(ranks: cython.const[int64_t][::1], K: int64_t, S: int64_t,
                      exact: cython.bint, binom: cython.const[int64_t][:, ::1],
                      out: int64_t[:, ::1]) -> cython.void:
    """Unrank every entry of ``ranks`` into the rows of ``out`` (len(ranks), S)."""
    j: cython.Py_ssize_t
    for j in range(ranks.shape[0]):
        unrank_category(ranks[j], K, S, exact, binom, out[j])


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _enumerate_kernel(K: int64_t, S: int64_t, exact: cython.bint, out: int64_t[:, ::1],
                      cur: int64_t[::1]) -> cython.void:
    """Fill ``out`` (C, S) with the categories of ranks 0..C-1; ``cur`` (parts,): work array of ones."""
    total: int64_t = K if exact else K + 1
    parts: int64_t = S if exact else S + 1
    C: cython.Py_ssize_t = out.shape[0]
    r: cython.Py_ssize_t
    i: int64_t
    j: int64_t
    s: int64_t
    cur[parts - 1] = total - parts + 1
    for r in range(C):
        for i in range(S):
            out[r, i] = cur[i]
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


def enumerate_categories(K: int64_t, S: int64_t, exact: cython.bint, out: int64_t[:, ::1]):
    """Write all categories of (K, S, exact) in rank order into ``out`` (C, S)."""
    cur: int64_t[::1] = np.ones(S if exact else S + 1, dtype=np.int64)
    with cython.nogil:
        _enumerate_kernel(K, S, exact, out, cur)


# ------------------------------------------------------------------ uniform sampling


@cython.ccall
@cython.nogil
@cython.exceptval(check=False)
def sample_uniform_reservoir(seed: uint64_t, C: int64_t, N: int64_t, K: int64_t,
                             S: int64_t, exact: cython.bint, binom: cython.const[int64_t][:, ::1],
                             out: int64_t[:, ::1], ranks: int64_t[::1]) -> int64_t:
    """Algorithm L (Li 1994) over the ranks [0, C), ``N < C``; returns the RNG counters used.

    ``ranks`` (N,) receives the reservoir (slot order), ``out`` (N, S) its categories.
    """
    key: uint64_t = stream_key(seed, STREAM_UNIFORM)
    ctr: int64_t = 0
    i: int64_t
    j: int64_t
    W: cython.double
    q: cython.double
    for j in range(N):
        ranks[j] = j
    W = exp(log(rand_open01_k(key, ctr)) / N)
    ctr += 1
    i = N - 1
    while True:
        q = log(rand_open01_k(key, ctr)) / log1p(-W)
        ctr += 1
        # floor(q) >= C - i - 1  <=>  q >= C - i - 1 (an integer); also catches q = inf
        if q >= cython.cast(cython.double, C - i - 1):
            break
        i += cython.cast(int64_t, floor(q)) + 1
        ranks[rand_below_k(key, ctr, N)] = i
        ctr += 1
        W = W * exp(log(rand_open01_k(key, ctr)) / N)
        ctr += 1
    unrank_categories(ranks, K, S, exact, binom, out)
    return ctr


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _hash_row(rows: cython.const[int64_t][:, ::1], r: cython.Py_ssize_t, S: int64_t) -> uint64_t:
    """Non-zero 64-bit hash of the category ``rows[r, :S]``."""
    h: uint64_t = HASH_INIT
    i: int64_t
    for i in range(S):
        h = splitmix64(h ^ cython.cast(uint64_t, rows[r, i]))
    if h == ZERO:
        h = ONE
    return h


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _set_insert(table: uint64_t[::1], h: uint64_t, probe: uint64_t) -> cython.bint:
    """Insert ``h`` (non-zero) into the open-addressing set ``table`` (size a power of two), probing from ``probe``; False if present."""
    mask: uint64_t = cython.cast(uint64_t, table.shape[0] - 1)
    p: uint64_t = probe & mask
    v: uint64_t
    while True:
        v = table[p]
        if v == ZERO:
            table[p] = h
            return True
        if v == h:
            return False
        p = (p + ONE) & mask


def _pow2_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _sift(a: int64_t[::1], root: int64_t, n: int64_t) -> cython.void:
    """Sift ``a[root]`` down the max-heap ``a[:n]``."""
    child: int64_t
    t: int64_t
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and a[child + 1] > a[child]:
            child += 1
        if a[root] >= a[child]:
            return
        t = a[root]
        a[root] = a[child]
        a[child] = t
        root = child


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sort(a: int64_t[::1], n: int64_t) -> cython.void:
    """Sort ``a[:n]`` ascending (heapsort: in place, O(n log n))."""
    i: int64_t
    t: int64_t
    for i in range(n // 2 - 1, -1, -1):
        _sift(a, i, n)
    for i in range(n - 1, 0, -1):
        t = a[0]
        a[0] = a[i]
        a[i] = t
        _sift(a, 0, i)


def _floyd_scratch(K, S, exact):
    """Work arrays of :func:`_floyd_category`: ``(mark, small, chosen)``.

    A byte map of n + 1 zeros when ``n <= 64 (m + 16)`` (``small`` unused),
    else an empty map and a hash set of at least ``2 m + 2`` slots.
    """
    n = K - 1 if exact else K
    m = S - 1 if exact else S
    if n <= 64 * (m + 16):
        return np.zeros(n + 1, dtype=np.uint8), np.zeros(1, dtype=np.uint64), np.zeros(m + 1, dtype=np.int64)
    return (np.zeros(0, dtype=np.uint8), np.zeros(_pow2_at_least(2 * m + 2), dtype=np.uint64),
            np.zeros(m + 1, dtype=np.int64))


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _floyd_category(key: uint64_t, ctr: int64_t, K: int64_t, S: int64_t,
                    exact: cython.bint, mark: cython.uchar[::1], small: uint64_t[::1],
                    chosen: int64_t[::1], out: int64_t[:, ::1], r: cython.Py_ssize_t) -> int64_t:
    """A uniform category into ``out[r]`` by Floyd's subset algorithm; returns the new counter.

    Cut points: an (S-1)-subset of {1..K-1} (exact) or an S-subset of {1..K}:
    for j = n-m+1..n, t = 1 + rand_below(j); j is chosen if t already is, else
    t.  The sorted cut points give the sizes.  The set is the byte map ``mark``
    (left cleared) when it has entries, else the hash set ``small``; the chosen
    set, hence the category, is the same either way.
    """
    n: int64_t = K - 1 if exact else K
    m: int64_t = S - 1 if exact else S
    first: int64_t = n - m + 1
    j: int64_t
    t: int64_t
    i: int64_t
    p: int64_t
    cnt: int64_t
    prev: int64_t = 0
    if mark.shape[0] > 0:
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
        for p in range(small.shape[0]):
            small[p] = 0
        for j in range(first, n + 1):
            t = 1 + rand_below_k(key, ctr, j)
            ctr += 1
            if not _set_insert(small, cython.cast(uint64_t, t), splitmix64(t)):
                _set_insert(small, cython.cast(uint64_t, j), splitmix64(j))
                t = j
            chosen[j - first] = t
        _sort(chosen, m)
    for i in range(m):
        out[r, i] = chosen[i] - prev
        prev = chosen[i]
    if exact:
        out[r, S - 1] = K - prev
    return ctr


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _direct_kernel(seed: uint64_t, N: int64_t, K: int64_t, S: int64_t,
                   exact: cython.bint, out: int64_t[:, ::1], mark: cython.uchar[::1],
                   small: uint64_t[::1], chosen: int64_t[::1],
                   seen: uint64_t[::1]) -> int64_t:
    key: uint64_t = stream_key(seed, STREAM_DIRECT)
    ctr: int64_t = 0
    got: int64_t = 0
    h: uint64_t
    while got < N:
        ctr = _floyd_category(key, ctr, K, S, exact, mark, small, chosen, out, got)
        h = _hash_row(out, got, S)
        if _set_insert(seen, h, h):  # a repeat is overwritten by the next draw
            got += 1
    return ctr


def sample_uniform_direct(seed: uint64_t, N: int64_t, K: int64_t, S: int64_t,
                          exact: cython.bint, out: int64_t[:, ::1]):
    """N distinct uniform categories (Floyd) into ``out`` (N, S), in draw order; returns the RNG counters used.

    A draw whose 64-bit hash was seen before is redrawn with the next counters.
    """
    mark: cython.uchar[::1]
    small: uint64_t[::1]
    chosen: int64_t[::1]
    mark, small, chosen = _floyd_scratch(K, S, exact)
    seen: uint64_t[::1] = np.zeros(_pow2_at_least(2 * N + 2), dtype=np.uint64)
    ctr: int64_t
    with cython.nogil:
        ctr = _direct_kernel(seed, N, K, S, exact, out, mark, small, chosen, seen)
    return ctr


# ------------------------------------------------------------------ weighted sampling (Efraimidis-Spirakis A-Res in log space)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _fill_logs(logn: cython.double[::1], centre: cython.const[cython.double][::1], logc: cython.double[::1]) -> cython.void:
    """``logn[v] = log(v)`` (entry 0 unused) and ``logc[i] = log(centre[i])``."""
    v: cython.Py_ssize_t
    logn[0] = 0.0
    for v in range(1, logn.shape[0]):
        logn[v] = log(cython.cast(cython.double, v))
    for v in range(centre.shape[0]):
        logc[v] = log(centre[v])


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _log_distance(rows: cython.const[int64_t][:, ::1], r: cython.Py_ssize_t,
                  logc: cython.const[cython.double][::1], logn: cython.const[cython.double][::1],
                  S: int64_t) -> cython.double:
    """RMS log-ratio distance ``sqrt(mean_i (log n_i - log c_i)**2)`` of the category ``rows[r]``."""
    top: int64_t = logn.shape[0] - 1
    acc: cython.double = 0.0
    lv: cython.double
    d: cython.double
    i: int64_t
    v: int64_t
    for i in range(S):
        v = rows[r, i]
        if v <= top:
            lv = logn[v]
        else:
            lv = log(cython.cast(cython.double, v))
        d = lv - logc[i]
        acc += d * d
    return sqrt(acc / S)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _ares_key(u: cython.double, d: cython.double, inv2s2: cython.double) -> cython.double:
    """A-Res key of a candidate at distance ``d``: ``log(-log u) + d**2 / (2 spread**2)`` (smaller is better)."""
    return log(-log(u)) + d * d * inv2s2


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _heap_worse(hk: cython.double[::1], hp: int64_t[::1], a: int64_t, b: int64_t) -> cython.bint:
    """True if slot a is worse (larger key, then later position) than slot b."""
    return hk[a] > hk[b] or (hk[a] == hk[b] and hp[a] > hp[b])


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sift_up(heap: int64_t[::1], hk: cython.double[::1], hp: int64_t[::1],
             j: int64_t) -> cython.void:
    parent: int64_t
    t: int64_t
    while j > 0:
        parent = (j - 1) // 2
        if _heap_worse(hk, hp, heap[j], heap[parent]):
            t = heap[j]
            heap[j] = heap[parent]
            heap[parent] = t
            j = parent
        else:
            break


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sift_down(heap: int64_t[::1], hk: cython.double[::1], hp: int64_t[::1],
               n: int64_t) -> cython.void:
    j: int64_t = 0
    left: int64_t
    c: int64_t
    t: int64_t
    while True:
        left = 2 * j + 1
        if left >= n:
            break
        c = left
        if left + 1 < n and _heap_worse(hk, hp, heap[left + 1], heap[left]):
            c = left + 1
        if _heap_worse(hk, hp, heap[c], heap[j]):
            t = heap[j]
            heap[j] = heap[c]
            heap[c] = t
            j = c
        else:
            break


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _offer(heap: int64_t[::1], hk: cython.double[::1], hp: int64_t[::1], count: int64_t,
           N: int64_t, key_val: cython.double, pos: int64_t) -> int64_t:
    """Offer (key, pos) to the max-heap reservoir of N slots holding ``count``; return the slot to fill or -1."""
    slot: int64_t
    top: int64_t
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


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _weighted_enum_kernel(seed: uint64_t, cats: cython.const[int64_t][:, ::1], K: int64_t,
                          centre: cython.const[cython.double][::1], base_index: int64_t,
                          spread: cython.double, N: int64_t, out_index: int64_t[::1],
                          out_key: cython.double[::1], logn: cython.double[::1], logc: cython.double[::1],
                          hk: cython.double[::1], hp: int64_t[::1], heap: int64_t[::1]) -> int64_t:
    C: cython.Py_ssize_t = cats.shape[0]
    S: int64_t = centre.shape[0]
    inv2s2: cython.double = 1.0 / (2.0 * spread * spread)
    key: uint64_t = stream_key(seed, STREAM_WEIGHTED_KEYS)
    count: int64_t = 0
    r: cython.Py_ssize_t
    slot: int64_t
    u: cython.double
    kv: cython.double
    _fill_logs(logn, centre, logc)
    for r in range(C):
        u = rand_open01_k(key, r)
        if r == base_index:
            kv = -INFINITY
        else:
            kv = _ares_key(u, _log_distance(cats, r, logc, logn, S), inv2s2)
        slot = _offer(heap, hk, hp, count, N, kv, r)
        if count < N:
            count += 1
        if slot >= 0:
            out_index[slot] = r
    for r in range(count):
        out_key[r] = hk[r]
    return count


def sample_weighted_enum(seed: uint64_t, cats: cython.const[int64_t][:, ::1], K: int64_t,
                         centre: cython.const[cython.double][::1], base_index: int64_t, spread: cython.double,
                         N: int64_t, out_index: int64_t[::1], out_key: cython.double[::1]):
    """A-Res over every row of ``cats`` (C, S); writes min(N, C) row indices and keys (heap slot order), returns their number.

    Key of row r: ``log(-log u_r) + d_r**2 / (2 spread**2)`` with ``u_r =
    rand_open01(seed, STREAM_WEIGHTED_KEYS, r)`` and ``d_r`` the RMS log-ratio
    distance to ``centre``; the row ``base_index`` (the rounded centre) gets ``-inf``.
    """
    logn: cython.double[::1] = np.zeros(min(K, LOG_TABLE_MAX) + 1)
    logc: cython.double[::1] = np.zeros(centre.shape[0])
    hk: cython.double[::1] = np.zeros(N)
    hp: int64_t[::1] = np.zeros(N, dtype=np.int64)
    heap: int64_t[::1] = np.zeros(N, dtype=np.int64)
    count: int64_t
    with cython.nogil:
        count = _weighted_enum_kernel(seed, cats, K, centre, base_index, spread, N, out_index, out_key, logn, logc,
                                      hk, hp, heap)
    return count


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _perturb_category(key: uint64_t, ctr: int64_t, K: int64_t, S: int64_t,
                      exact: cython.bint, centre: cython.const[cython.double][::1], spread_b: cython.double,
                      y: cython.double[::1], out: int64_t[:, ::1], r: cython.Py_ssize_t) -> int64_t:
    """A candidate into ``out[r]``: the centre scaled part-wise by exp(b v_i), rounded; returns the new counter.

    ``b = spread_b * (-log u)``, ``v_i`` uniform in [-1, 1).  The total is K
    (exact) or round(sum y) clipped to [S, K]; the ``total - S`` workers above
    one per job are split in proportion to ``max(y_i - 1, 0)`` by cumulative
    rounding (floor(x + 0.5) of the running sum), so every part stays >= 1.
    """
    b: cython.double = spread_b * -log(rand_open01_k(key, ctr))
    sum_y: cython.double = 0.0
    sum_e: cython.double = 0.0
    v: cython.double
    t: cython.double
    yi: cython.double
    e: cython.double
    tf: cython.double
    f: cython.double
    acc: cython.double = 0.0
    i: int64_t
    T: int64_t
    extra: int64_t
    prev: int64_t = 0
    cur: int64_t
    uniform_extra: cython.bint
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
        if tf >= cython.cast(cython.double, K):
            T = K
        elif tf <= cython.cast(cython.double, S):
            T = S
        else:
            T = cython.cast(int64_t, tf)
    extra = T - S
    uniform_extra = not (sum_e > 0.0)
    if uniform_extra:
        f = cython.cast(cython.double, extra) / cython.cast(cython.double, S)
    else:
        f = cython.cast(cython.double, extra) / sum_e
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
            cur = cython.cast(int64_t, floor(acc * f + 0.5))
            if cur > extra:
                cur = extra
        out[r, i] = 1 + cur - prev
        prev = cur
    return ctr


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _weighted_perturb_kernel(seed: uint64_t, N: int64_t, M: int64_t, K: int64_t,
                             S: int64_t, exact: cython.bint, centre: cython.const[cython.double][::1],
                             base: cython.const[int64_t][::1], spread: cython.double,
                             out: int64_t[:, ::1], out_key: cython.double[::1], out_pos: int64_t[::1],
                             logn: cython.double[::1], logc: cython.double[::1], seen: uint64_t[::1],
                             hk: cython.double[::1], hp: int64_t[::1], heap: int64_t[::1],
                             y: cython.double[::1], row: int64_t[:, ::1], mark: cython.uchar[::1],
                             small: uint64_t[::1], chosen: int64_t[::1]) -> int64_t:
    inv2s2: cython.double = 1.0 / (2.0 * spread * spread)
    key: uint64_t = stream_key(seed, STREAM_WEIGHTED)
    tkey: uint64_t = stream_key(seed, STREAM_TOPUP)
    count: int64_t = 0
    ctr: int64_t = 0
    tctr: int64_t = 0
    pos: int64_t = 0
    rounds: int64_t = 0
    scale: cython.double = spread
    i: int64_t
    slot: int64_t
    u: cython.double
    kv: cython.double
    h: uint64_t
    _fill_logs(logn, centre, logc)
    while True:
        # stream position 0: the rounded centre; then perturbed candidates; after the
        # widening rounds, uniform Floyd candidates
        if pos == 0:
            for i in range(S):
                row[0, i] = base[i]
            kv = -INFINITY
        else:
            if rounds <= WIDEN_ROUNDS:
                ctr = _perturb_category(key, ctr, K, S, exact, centre, scale, y, row, 0)
                u = rand_open01_k(key, ctr)
                ctr += 1
            else:
                tctr = _floyd_category(tkey, tctr, K, S, exact, mark, small, chosen, row, 0)
                u = rand_open01_k(tkey, tctr)
                tctr += 1
            kv = _ares_key(u, _log_distance(row, 0, logc, logn, S), inv2s2)
        h = _hash_row(row, 0, S)
        if _set_insert(seen, h, h):
            slot = _offer(heap, hk, hp, count, N, kv, pos)
            if count < N:
                count += 1
            if slot >= 0:
                for i in range(S):
                    out[slot, i] = row[0, i]
        pos += 1
        if rounds <= WIDEN_ROUNDS and pos % M == 0:
            if count >= N:
                break
            rounds += 1
            scale = scale * 2.0
        elif rounds > WIDEN_ROUNDS and count >= N:
            break
    for i in range(N):
        out_key[i] = hk[i]
        out_pos[i] = hp[i]
    return N


def sample_weighted_perturb(seed: uint64_t, N: int64_t, M: int64_t, K: int64_t,
                            S: int64_t, exact: cython.bint, centre: cython.const[cython.double][::1],
                            base: cython.const[int64_t][::1], spread: cython.double,
                            out: int64_t[:, ::1], out_key: cython.double[::1], out_pos: int64_t[::1]):
    """A-Res over a stream of perturbed candidates around ``centre``; fills ``out`` (N, S), keys and positions, returns N.

    Stream position 0 is ``base`` (the rounded centre, key ``-inf``);
    positions 1..M-1 are :func:`_perturb_category` candidates with scale
    ``spread``.  While fewer than N distinct categories were seen, further
    rounds of M candidates follow with the scale doubled (at most
    ``WIDEN_ROUNDS``), then uniform Floyd candidates (stream ``STREAM_TOPUP``)
    until N are found (needs C > N).  Candidates whose 64-bit hash was seen
    are skipped.  Key: ``log(-log u) + d**2 / (2 spread**2)``, ``u`` the draw
    after the candidate's construction.  Keys and stream positions are in heap
    slot order.
    """
    logn: cython.double[::1] = np.zeros(min(K, LOG_TABLE_MAX) + 1)
    logc: cython.double[::1] = np.zeros(S)
    seen: uint64_t[::1] = np.zeros(_pow2_at_least(2 * (M + N) + 2), dtype=np.uint64)
    hk: cython.double[::1] = np.zeros(N)
    hp: int64_t[::1] = np.zeros(N, dtype=np.int64)
    heap: int64_t[::1] = np.zeros(N, dtype=np.int64)
    y: cython.double[::1] = np.zeros(S)
    row: int64_t[:, ::1] = np.zeros((1, S), dtype=np.int64)
    mark: cython.uchar[::1]
    small: uint64_t[::1]
    chosen: int64_t[::1]
    mark, small, chosen = _floyd_scratch(K, S, exact)
    count: int64_t
    with cython.nogil:
        count = _weighted_perturb_kernel(seed, N, M, K, S, exact, centre, base, spread, out, out_key, out_pos, logn,
                                         logc, seen, hk, hp, heap, y, row, mark, small, chosen)
    return count
