"""Job-size categories (docs/model.md §3.2, §3.6): counting, ranking, enumeration, sampling.

A *category* is a job-size vector ``n = (n_1, ..., n_S)`` with every ``n_i >= 1``:
how many workers each of the S jobs gets out of K.  With ``exact=True`` the sizes
use every worker (``sum(n) == K``, ``C(K-1, S-1)`` categories); with
``exact=False`` workers may stay idle (``sum(n) <= K``, ``C(K, S)`` categories).

Order and ranks
    Categories are ranked in **lexicographic order of the size vector**.  For
    ``exact=True`` rank 0 is ``(1, ..., 1, K-S+1)`` and the last rank is
    ``(K-S+1, 1, ..., 1)``; for ``exact=False`` rank 0 is ``(1, ..., 1)``.
    Ranking and unranking use the combinatorial number system on compositions
    (see :func:`rank_category`).

Backends
    ``"python"`` (plain Python, slow, always available), ``"numba"`` (JIT,
    compiled and cached on first use), ``"cython"`` (compiled at install time)
    and ``"auto"`` (``"cython"`` if its extension is built, else ``"numba"``).
    All three are compilations of one source, ``hetplace/_core/_categories.py``,
    reached through the backend registry (``hetplace._core._registry``), and
    return identical arrays for the same inputs and seed: they draw from the
    same counter-based generator (docs/model.md §3.10) and do the same
    floating-point operations in the same order.

Random numbers
    Every draw is ``rand_u64(seed, stream, counter)`` (SplitMix64 of the stream
    key plus the counter; see ``hetplace._core._categories``); the samplers use
    the reserved streams ``2**63 + 1 .. 2**63 + 5``, so callers drawing with
    small stream ids (e.g. one per sample) get unrelated numbers from the same
    seed.

Kernels for other modules
    The RNG and the rank/unrank kernels of ``hetplace._core._categories`` are
    ``nogil``: Numba code calls ``_source.load("_categories", "numba")``'s
    functions, Cython code ``cimport``s them from ``_categories.pxd``.  They do
    not validate; ``_binomial_table(K, S, exact)`` below builds (and caches,
    read-only) the int64 table they take.
"""

import functools
import heapq
import math
import numbers

import numpy as np

from ._core._registry import BACKEND_CHOICES
from ._validation import check_choice, check_positive_int, check_seed, exact_int_sum
from .errors import (
    InvalidOptionError,
    InvalidProblemError,
    InvalidProblemTypeError,
)

__all__ = [
    "count_categories",
    "rank_category",
    "unrank_category",
    "enumerate_categories",
    "sample_categories",
    "DEFAULT_SPREAD",
    "WEIGHTED_OVERSAMPLE",
    "COUNT_BITS_MAX",
    "RANK_WORK_MAX",
    "MEMORY_MAX",
]

#: Default ``spread`` of ``sample_categories(method="weighted")``: the RMS
#: relative (log-ratio) deviation from the centre at which a candidate's weight
#: drops to ``exp(-1/2)``.
DEFAULT_SPREAD = 0.25
#: The weighted sampler draws its N categories from a stream of
#: ``WEIGHTED_OVERSAMPLE * N`` candidates.
WEIGHTED_OVERSAMPLE = 8
#: Uniform sampling uses reservoir sampling over ranks only when the int64
#: binomial table has at most this many entries (else the direct method).
RESERVOIR_TABLE_MAX = 1 << 24
#: Default ``limit`` of :func:`enumerate_categories` (categories).
ENUMERATE_LIMIT = 1_000_000
#: Exact big-integer counts (:func:`count_categories`, and the counts behind
#: :func:`rank_category` and :func:`unrank_category`) are computed only up to
#: ``2**COUNT_BITS_MAX`` categories (a 524,288-bit integer, 157,827 decimal
#: digits; e.g. K = 10**6 workers with up to 118,246 jobs).  Beyond it
#: ``math.comb`` takes seconds to hours; the samplers never need such counts.
COUNT_BITS_MAX = 1 << 19
#: :func:`rank_category` and :func:`unrank_category` evaluate O(S) resp.
#: O(S log K) binomials of up to ``log2(count)`` bits, in a Python loop over
#: the S parts: they accept ``n_jobs * (log2(count) + 16) <= RANK_WORK_MAX``
#: (e.g. K=16384, S=1024 uses 5.7e6; at most 524,288 jobs).
RANK_WORK_MAX = 1 << 23
#: Largest memory, in bytes, :func:`sample_categories` and
#: :func:`enumerate_categories` may allocate: the int64 result (rows x n_jobs x
#: 8 bytes) plus the sampler's scratch (hash set of drawn categories, sort copy),
#: checked before anything is allocated.  4 GiB: a uniform sample of about
#: ``2**28 / n_jobs`` rows (SMP's thousands of samples of up to 10**4 jobs use
#: well under 1 GiB).  A module constant: raise it deliberately on a larger machine.
MEMORY_MAX = 1 << 32

_INT64_MAX = (1 << 63) - 1
_MAX_WORKERS = 1 << 62
_METHODS = ("uniform", "weighted")
_SPREAD_RANGE = (1e-3, 1e3)


# ----------------------------------------------------------------------------
# Validation helpers
# ----------------------------------------------------------------------------


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


_NO_JOBS = object()  # _check_dims(n_workers, _NO_JOBS): validate n_workers only


def _check_dims(n_workers, n_jobs, *, cap=True):
    """Validate ``n_workers`` and ``n_jobs``; return them as Python ints.

    ``n_jobs=None`` is an error like any other non-integer; pass ``_NO_JOBS``
    to validate ``n_workers`` alone (then ``(K, None)`` is returned).
    """
    if not _is_int(n_workers):
        raise InvalidProblemTypeError(
            f"n_workers must be an integer (the number of workers K); got "
            f"{n_workers!r} of type {type(n_workers).__name__}. Pass an int >= 1."
        )
    K = int(n_workers)
    if K < 1:
        raise InvalidProblemError(f"n_workers must be >= 1; got {K}. Pass the number of workers.")
    if cap and K > _MAX_WORKERS:
        raise InvalidProblemError(
            f"n_workers must be at most 2**62 for array results; got {K}. "
            "Use count_categories for counts of larger clusters."
        )
    if n_jobs is _NO_JOBS:
        return K, None
    if not _is_int(n_jobs):
        raise InvalidProblemTypeError(
            f"n_jobs must be an integer (the number of jobs S); got {n_jobs!r} of type "
            f"{type(n_jobs).__name__}. Pass an int with 1 <= n_jobs <= n_workers."
        )
    S = int(n_jobs)
    if not 1 <= S <= K:
        raise InvalidProblemError(
            f"n_jobs must satisfy 1 <= n_jobs <= n_workers={K} (every job needs a worker); "
            f"got n_jobs={S}. Use fewer jobs or more workers."
        )
    return K, S


def _check_exact(exact):
    if not isinstance(exact, (bool, np.bool_)):
        raise InvalidOptionError(
            f"exact must be True (sum of sizes == n_workers) or False (sum <= n_workers); "
            f"got {exact!r}."
        )
    return bool(exact)


def _backend(backend):
    """Resolve ``backend`` to ``(name, kernels)`` by the backend registry (:func:`hetplace._core._registry.resolve`)."""
    from ._core import _registry

    return _registry.resolve(check_choice("backend", backend, BACKEND_CHOICES))


def _exact_kernels():
    """The plain-Python compilation of the kernels: with Python ints and :class:`_ExactBinomial`, exact at any size."""
    from ._core import _registry

    return _registry.kernels("python")


def _count(K, S, exact):
    return math.comb(K - 1, S - 1) if exact else math.comb(K, S)


def _log2_count(K, S, exact):
    """log2 of the number of categories, from ``lgamma`` (no big integers; never below the truth by more than rounding)."""
    n, k = (K - 1, S - 1) if exact else (K, S)
    r = min(k, n - k)
    if r <= 0:
        return 0.0
    if n < 1 << 53:
        nats = math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)
    else:  # lgamma(n + 1) would lose every digit of the difference: log C(n, r) <= r log n - log r!
        nats = r * math.log(n) - math.lgamma(r + 1)
    return max(nats, 0.0) / math.log(2)


def _count_capped(K, S, exact, cap):
    """The number of categories if it is at most ``cap``, else ``cap + 1``.

    Multiplies out ``C(n - r + i, i)`` for i = 1..r (each an exact integer,
    increasing, and at least ``2**i``), stopping once above ``cap``: O(min(r,
    log2 cap)) steps however large K and S are.
    """
    n, k = (K - 1, S - 1) if exact else (K, S)
    r = min(k, n - k)
    c = 1
    for i in range(1, r + 1):
        c = c * (n - r + i) // i
        if c > cap:
            return cap + 1
    return c


def _check_count_bits(K, S, exact, work=None):
    """Refuse exact big-integer combinatorics beyond :data:`COUNT_BITS_MAX` (and :data:`RANK_WORK_MAX`)."""
    bits = _log2_count(K, S, exact)
    if bits > COUNT_BITS_MAX:
        raise InvalidProblemError(
            f"n_workers={K}, n_jobs={S} (exact={exact}) has about 2**{bits:.4g} categories; exact "
            f"counts, ranks and unranks are supported up to 2**{COUNT_BITS_MAX} categories "
            f"(COUNT_BITS_MAX). Use fewer jobs or workers; sample_categories draws from any "
            "number of categories without counting them."
        )
    if work is not None and S * (bits + 16) > RANK_WORK_MAX:
        raise InvalidProblemError(
            f"{work} with n_workers={K}, n_jobs={S} (exact={exact}) needs {S} binomials of about "
            f"{bits:.0f} bits; n_jobs * (log2(count) + 16) = {S * (bits + 16):.4g} exceeds the "
            f"supported {RANK_WORK_MAX} (RANK_WORK_MAX). Use fewer jobs or workers."
        )
    return bits


def _check_memory(nbytes, what, fix):
    if nbytes > MEMORY_MAX:
        raise InvalidOptionError(
            f"{what} needs about {nbytes / 2**30:.4g} GiB ({nbytes} bytes); at most "
            f"{MEMORY_MAX} bytes ({MEMORY_MAX / 2**30:g} GiB, MEMORY_MAX) are supported. {fix}"
        )


@functools.lru_cache(maxsize=64)
def _binomial_table(K, S, exact):
    """int64 table ``binom[j, d] = C(j + d, j)``, shape (parts, K - S + 1), saturated.

    ``parts = S`` if ``exact`` else ``S + 1``.  Entries above ``2**63 - 1`` are
    set to ``2**63 - 1``; the kernels only read entries not above the number of
    categories, so they are exact whenever that number is below ``2**63``.
    The array is cached and read-only (pass it to the rank/unrank kernels).
    """
    parts = S if exact else S + 1
    width = K - S + 1
    table = np.empty((parts, width), dtype=np.int64)
    row = np.ones(width, dtype=np.uint64)
    table[0] = 1
    limit = np.uint64(_INT64_MAX)
    for j in range(1, parts):
        # Row entries are <= 2**63 - 1, so the running sum reaches 2**63 before it
        # can wrap around 2**64: everything before the first crossing is exact.
        cs = np.cumsum(row, dtype=np.uint64)
        over = np.flatnonzero(cs > limit)
        if over.size:
            cs[over[0]:] = limit
        row = cs
        table[j] = row.astype(np.int64)
    table.flags.writeable = False
    return table


class _ExactBinomial:
    """``binom[j, d] = C(j + d, j)`` as exact Python ints: the table of the plain-Python kernels for the public rank API."""

    def __getitem__(self, jd):
        j, d = jd
        return math.comb(j + d, j)


# ----------------------------------------------------------------------------
# Counting, ranking, unranking
# ----------------------------------------------------------------------------


def count_categories(n_workers: int, n_jobs: int, exact: bool = True) -> int:
    """Number of categories (job-size vectors) of S jobs on K workers.

    Parameters
    ----------
    n_workers : int
        K >= 1 (any size: the result is an exact Python int, of at most
        :data:`COUNT_BITS_MAX` bits).
    n_jobs : int
        S with ``1 <= S <= K``.
    exact : bool, default True
        True counts ``sum(n) == K`` (``C(K-1, S-1)``), False ``sum(n) <= K``
        (``C(K, S)``).

    Returns
    -------
    int
        The exact count (may exceed 2**63).

    Raises
    ------
    InvalidProblemError
        Bad K or S, or a count above ``2**COUNT_BITS_MAX`` (see
        :data:`COUNT_BITS_MAX`; estimated from ``lgamma`` before any big-integer
        arithmetic, so e.g. ``count_categories(10**30, 10**15)`` is refused at
        once instead of running for ever).

    Examples
    --------
    >>> count_categories(64, 8)
    553270671
    >>> count_categories(4, 2, exact=False)
    6
    """
    K, S = _check_dims(n_workers, n_jobs, cap=False)
    exact = _check_exact(exact)
    _check_count_bits(K, S, exact)
    return _count(K, S, exact)


def _check_sizes(sizes, K, exact):
    """Validate a category; return it as a list of Python ints."""
    if isinstance(sizes, (str, bytes)):
        raise InvalidProblemTypeError(
            f"sizes must be a sequence of integers (one per job); got the string {sizes!r}."
        )
    arr = np.asarray(sizes, dtype=object) if not isinstance(sizes, np.ndarray) else sizes
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise InvalidProblemError(
            f"sizes must be a 1-D sequence with one worker count per job; got shape "
            f"{np.shape(sizes)}."
        )
    vals = []
    for i, v in enumerate(arr.tolist()):
        if not _is_int(v):
            raise InvalidProblemTypeError(
                f"sizes must be integers; got {v!r} for job {i}. Pass whole worker counts."
            )
        v = int(v)
        if v < 1:
            raise InvalidProblemError(
                f"sizes must be >= 1 (every job needs a worker); got {v} for job {i}."
            )
        vals.append(v)
    if len(vals) > K:
        raise InvalidProblemError(
            f"sizes has {len(vals)} jobs but n_workers={K}; a category needs n_jobs <= n_workers."
        )
    total = sum(vals)
    if exact and total != K:
        raise InvalidProblemError(
            f"sizes must sum to n_workers={K} when exact=True; got sum {total}. "
            "Pass exact=False to allow idle workers."
        )
    if not exact and total > K:
        raise InvalidProblemError(
            f"sizes must sum to at most n_workers={K}; got sum {total}."
        )
    return vals


def rank_category(sizes: "np.typing.ArrayLike", n_workers: int, exact: bool = True) -> int:
    """Rank of a category in lexicographic order of its size vector.

    Parameters
    ----------
    sizes : sequence of int, shape (S,)
        The category: every entry >= 1, ``sum == n_workers`` (``exact=True``)
        or ``<= n_workers``.
    n_workers : int
        K.
    exact : bool, default True
        Which family of categories ``sizes`` belongs to (see module docs).

    Returns
    -------
    int
        Rank in ``[0, count_categories(K, S, exact))`` (exact Python int).

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        Bad sizes or K; more than ``2**COUNT_BITS_MAX`` categories, or
        ``S * (log2(count) + 16) > RANK_WORK_MAX`` (see :data:`RANK_WORK_MAX`).

    Notes
    -----
    A category of ``exact=True`` is a composition of K into S positive parts
    (it corresponds to the (S-1)-subset ``{n_1, n_1+n_2, ...}`` of cut points
    in ``{1..K-1}``); with ``exact=False`` the slack ``K + 1 - sum(n)`` is
    appended as a last part, giving a composition of K+1 into S+1 parts.  In
    lexicographic order, the compositions of R into m parts whose first part
    is below v number ``C(R-1, m-1) - C(R-v, m-1)`` (hockey-stick identity), so

        rank = sum_i [C(R_i - 1, m_i - 1) - C(R_i - n_i, m_i - 1)]

    with ``R_i`` the remaining total and ``m_i`` the remaining parts: O(S)
    binomials (combinatorial number system; Knuth, TAOCP 7.2.1.3).

    Examples
    --------
    >>> rank_category([1, 1, 2], 4)
    0
    >>> rank_category([2, 1, 1], 4)
    2
    """
    K, _ = _check_dims(n_workers, _NO_JOBS, cap=False)
    exact = _check_exact(exact)
    vals = _check_sizes(sizes, K, exact)
    _check_count_bits(K, len(vals), exact, work="rank_category")
    return _exact_kernels().rank_category(vals, K, len(vals), exact, _ExactBinomial())


def unrank_category(rank: int, n_workers: int, n_jobs: int, exact: bool = True) -> np.ndarray:
    """The category of a given rank (inverse of :func:`rank_category`).

    Parameters
    ----------
    rank : int
        In ``[0, count_categories(n_workers, n_jobs, exact))``; any size.
    n_workers, n_jobs : int
        K and S, ``1 <= S <= K <= 2**62``.
    exact : bool, default True
        ``sum == K`` (True) or ``sum <= K`` (False).

    Returns
    -------
    numpy.ndarray of int64, shape (S,)
        The job sizes.

    Raises
    ------
    InvalidProblemError
        Bad K or S; more than ``2**COUNT_BITS_MAX`` categories, or
        ``S * (log2(count) + 16) > RANK_WORK_MAX``.
    InvalidOptionError
        ``rank`` outside ``[0, count)``.

    Notes
    -----
    Part by part, the largest first part whose preceding block of ranks fits
    below the remaining rank is found by binary search over ``C(t, m-1)``:
    O(S log K) binomial evaluations (exact Python integers here; the compiled
    kernels use an int64 table).

    Examples
    --------
    >>> unrank_category(2, 4, 3).tolist()
    [2, 1, 1]
    """
    K, S = _check_dims(n_workers, n_jobs)
    exact = _check_exact(exact)
    _check_count_bits(K, S, exact, work="unrank_category")
    C = _count(K, S, exact)
    if not _is_int(rank) or not 0 <= int(rank) < C:
        raise InvalidOptionError(
            f"rank must be an integer in [0, {C}) for n_workers={K}, n_jobs={S}, "
            f"exact={exact}; got {rank!r}."
        )
    out = [0] * S
    _exact_kernels().unrank_category(int(rank), K, S, exact, _ExactBinomial(), out)
    return np.array(out, dtype=np.int64)


# ----------------------------------------------------------------------------
# Enumeration
# ----------------------------------------------------------------------------


def _enumerate(mod, K, S, exact, C):
    out = np.empty((C, S), dtype=np.int64)
    mod.enumerate_categories(K, S, exact, out)
    return out


def enumerate_categories(n_workers: int, n_jobs: int, exact: bool = True, backend: str = "auto",
                         limit: int = ENUMERATE_LIMIT) -> np.ndarray:
    """All categories of S jobs on K workers, in rank (lexicographic) order.

    Parameters
    ----------
    n_workers, n_jobs : int
        K and S, ``1 <= S <= K``.
    exact : bool, default True
        ``sum == K`` (True) or ``sum <= K`` (False).
    backend : {"auto", "python", "numba", "cython"}, default "auto"
        Kernel implementation ("auto": Cython if built, else Numba).
    limit : int, default 1_000_000
        Refuse (``InvalidOptionError``) when there are more categories than
        this, or when the result (C x S x 8 bytes) exceeds :data:`MEMORY_MAX`.

    Returns
    -------
    numpy.ndarray of int64, shape (C, S)
        Row r is the category of rank r.

    Notes
    -----
    Walks the lexicographic successor (increment the rightmost part whose suffix
    can give up a worker, reset the suffix to ``(1, ..., 1, rest)``): O(S) per
    category, no binomials.

    Examples
    --------
    >>> enumerate_categories(4, 2).tolist()
    [[1, 3], [2, 2], [3, 1]]
    """
    K, S = _check_dims(n_workers, n_jobs)
    exact = _check_exact(exact)
    limit = check_positive_int("limit", limit, allow_none=False, fix="Pass the largest number of rows you accept.")
    _, mod = _backend(backend)
    C = _count_capped(K, S, exact, limit)
    if C > limit:
        counted = f"{_count(K, S, exact)}" if _log2_count(K, S, exact) < 64 else f"about 2**{_log2_count(K, S, exact):.4g}"
        raise InvalidOptionError(
            f"n_workers={K}, n_jobs={S} (exact={exact}) has {counted} categories, more than "
            f"limit={limit}. Draw a subset with sample_categories({K}, {S}, n_samples) "
            "instead, or raise limit."
        )
    _check_memory(8 * C * S, f"enumerate_categories({K}, {S}) ({C} rows of {S} int64)",
                  "Use fewer jobs, or draw a subset with sample_categories.")
    return _enumerate(mod, K, S, exact, C)


# ----------------------------------------------------------------------------
# Sampling
# ----------------------------------------------------------------------------


def _check_centre(centre, K, S, exact):
    """Validate the weighted-sampling centre; return (scaled float64 centre, base)."""
    if centre is None:
        c = np.full(S, K / S, dtype=np.float64)
    else:
        if isinstance(centre, (str, bytes)):
            raise InvalidProblemTypeError(
                f"centre must be numbers (target job sizes); got the string {centre!r}."
            )
        try:
            c = np.array(centre, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidProblemTypeError(
                f"centre must be numbers (target job sizes, shape ({S},)); got "
                f"{type(centre).__name__} that numpy cannot convert to float ({exc})."
            ) from None
        if c.shape != (S,):
            raise InvalidProblemError(
                f"centre must have one target size per job, shape ({S},); got shape {c.shape}."
            )
        bad = np.flatnonzero(~np.isfinite(c) | (c <= 0))
        if bad.size:
            raise InvalidProblemError(
                f"centre must be finite and > 0 for every job; got {float(c[bad[0]])!r} for job "
                f"{bad[0]}. Pass target sizes such as sqrt(work) scaled to n_workers."
            )
    with np.errstate(over="ignore", under="ignore"):
        total = float(c.sum())
        if exact or total > K:
            c = c * (K / total)
    if not np.all(np.isfinite(c) & (c > 0)):
        raise InvalidProblemError(
            f"centre could not be scaled to n_workers={K} (got {centre!r}); pass target "
            "sizes of moderate magnitude."
        )
    return np.ascontiguousarray(c), _round_centre(c, K, S, exact)


def _round_centre(c, K, S, exact):
    """Round a positive centre to a category (largest remainder, parts >= 1).

    Total: K (exact) or ``floor(sum(c) + 0.5)`` clipped to [S, K].  Parts start
    at ``max(floor(c_i), 1)``; missing workers go to the largest fractional
    parts (ties: lower index), surplus ones (from parts raised to 1) leave the
    parts with the largest ``n_i - c_i`` among those with ``n_i >= 2``.
    """
    if exact:
        T = K
    else:
        T = int(min(max(math.floor(float(c.sum()) + 0.5), S), K))
    fl = np.floor(c)
    n = np.maximum(fl, 1.0).astype(np.int64)
    diff = T - exact_int_sum(n)
    if diff > 0:
        # one worker each in turn to the largest fractional parts: diff // S rounds,
        # then the first diff % S of the order (O(S), however large diff is)
        order = np.argsort(-(c - fl), kind="stable")
        n += diff // S
        n[order[:diff % S]] += 1
    if diff < 0:
        # repeatedly take a worker from the part of largest excess n_i - c_i among
        # n_i >= 2 (ties: lowest index), as argmax would, with a heap: O(|diff| log S)
        # instead of O(|diff| S) (|diff| can reach S)
        nl = n.tolist()
        cl = c.tolist()
        heap = [(-(float(nl[i]) - cl[i]), i) for i in range(S) if nl[i] >= 2]
        heapq.heapify(heap)
        for _ in range(-diff):
            _, i = heapq.heappop(heap)
            nl[i] -= 1
            if nl[i] >= 2:
                heapq.heappush(heap, (-(float(nl[i]) - cl[i]), i))
        n = np.array(nl, dtype=np.int64)
    return n


def _lex_order(rows):
    """Indices sorting the (distinct, positive) rows lexicographically."""
    N, S = rows.shape
    if N <= 1:
        return np.arange(N)
    if S <= 16:
        return np.lexsort(rows.T[::-1])
    # Many columns: compare whole rows as big-endian bytes (memcmp order equals
    # the numeric lexicographic order for non-negative int64).
    keys = np.ascontiguousarray(rows, dtype=">i8").view(np.dtype((np.void, 8 * S))).ravel()
    return np.argsort(keys, kind="stable")


def sample_categories(
    n_workers: int, n_jobs: int, n_samples: int, seed: "int | None" = None, exact: bool = False,
    method: str = "uniform", centre: "np.typing.ArrayLike | None" = None, spread: "float | None" = None,
    backend: str = "auto",
) -> np.ndarray:
    """Draw distinct categories (job-size vectors), uniformly or around a centre.

    Parameters
    ----------
    n_workers, n_jobs : int
        K and S, ``1 <= S <= K <= 2**62``.
    n_samples : int
        N >= 1.  Fewer rows are returned only when there are fewer categories
        than N: then all of them.  The result and the sampler's scratch must
        fit in :data:`MEMORY_MAX` bytes (4 GiB: about ``2**28 / n_jobs`` rows).
    seed : int in [0, 2**64) or None
        Seed of the counter-based generator.  ``None`` takes 64 bits of fresh
        OS entropy (``numpy.random.SeedSequence().entropy``): not reproducible,
        pass an int for that.
    exact : bool, default False
        False: ``sum(n) <= K`` (idle workers allowed); True: ``sum(n) == K``.
    method : {"uniform", "weighted"}, default "uniform"
        Uniform over all categories, or weighted towards ``centre``.
    centre : array_like of float, shape (S,), optional
        Weighted only.  Target job sizes (e.g. ``sqrt(w_i)`` scaled to K).
        Scaled to sum K if ``exact`` or if it sums above K; ``None`` means the
        equal split ``K / S``.
    spread : float, optional
        Weighted only, in [1e-3, 1e3]; default :data:`DEFAULT_SPREAD` (0.25).
        Typical relative deviation of a job's size from the centre (see Notes).
    backend : {"auto", "python", "numba", "cython"}, default "auto"
        Kernel implementation; all give identical results.

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        Bad K or S (``1 <= S <= K <= 2**62``), or centre.
    InvalidOptionError
        Bad n_samples, seed, exact, method, spread or backend; a result plus
        scratch above :data:`MEMORY_MAX` bytes (checked before allocating).

    Returns
    -------
    numpy.ndarray of int64, shape (min(N, C), S)
        Distinct categories.  ``method="uniform"``: in rank (lexicographic)
        order.  ``method="weighted"``: in order of increasing A-Res key (ties by
        stream position), so row 0 is the rounded centre and the first n rows
        are the A-Res sample of size n from the same candidate stream.

    Notes
    -----
    The result depends only on ``(seed, K, S, N, exact, method, centre, spread)``.

    **Uniform.** If ``N >= C`` all categories are returned.  Otherwise, when
    ``C < 2**63`` and the int64 binomial table has at most
    :data:`RESERVOIR_TABLE_MAX` entries, reservoir sampling over the stream of
    ranks ``0..C-1`` with Algorithm L (Li, ACM TOMS 20(4), 1994): geometric
    jumps skip non-selected ranks, so it costs O(N (1 + log(C/N))) draws, and
    the N reservoir ranks are unranked (distinct by construction).  Otherwise
    (astronomically many categories, e.g. K=4096, S=256) the **direct method**:
    each sample is a uniform (S-1)-subset of cut points of ``{1..K-1}``
    (an S-subset of ``{1..K}`` when ``exact=False``) drawn with Floyd's
    algorithm (Bentley & Floyd, CACM 30(9), 1987), which is uniform over
    categories; a draw whose 64-bit hash was seen before is redrawn with the
    next counters.  O(N S log S) time, O(N + S) scratch, no binomial table.

    **Weighted.** Efraimidis–Spirakis A-Res (IPL 97(5), 2006) in log space:
    candidate n gets weight ``w = exp(-d**2 / (2 spread**2))`` with
    ``d = sqrt(mean_i log(n_i / c_i)**2)`` (RMS relative deviation from the
    centre c) and key ``log(-log u) + d**2 / (2 spread**2)`` (``u`` uniform; the
    N smallest keys win, i.e. the N largest ``u**(1/w)``).  The rounded centre
    (largest remainder, parts >= 1) is always included (key ``-inf``).  If
    ``C <= WEIGHTED_OVERSAMPLE * N`` the candidate stream is every category;
    otherwise it is ``M = WEIGHTED_OVERSAMPLE * N`` candidates generated from
    the centre: candidate sizes ``y_i = c_i exp(b v_i)``, ``v_i`` uniform in
    [-1, 1), per-candidate scale ``b = spread * Exp(1)``, rounded to a category
    (the total is K, or ``round(sum y)`` clipped to [S, K] when idle workers
    are allowed; the workers above one per job are split in proportion to
    ``max(y_i - 1, 0)`` by cumulative rounding).  Duplicates (same 64-bit hash)
    are skipped.  If fewer than N distinct candidates appear, further rounds of
    M candidates follow with the scale doubled (up to 6 rounds), then uniform
    Floyd draws.  Cost O(M S).

    Examples
    --------
    >>> sample_categories(64, 8, 3, seed=1).shape
    (3, 8)
    >>> sample_categories(4, 2, 10, seed=1, exact=True).tolist()
    [[1, 3], [2, 2], [3, 1]]
    """
    K, S = _check_dims(n_workers, n_jobs)
    N = check_positive_int("n_samples", n_samples, allow_none=False, fix="Pass how many categories to draw.")
    seed = check_seed(seed, entropy=True)  # None: a fresh seed from OS entropy (the kernels take an integer)
    exact = _check_exact(exact)
    method = check_choice("method", method, _METHODS)
    if method == "uniform":
        if centre is not None:
            raise InvalidOptionError(
                "centre is only used with method='weighted'; got method='uniform' and a "
                "centre. Pass method='weighted' or drop centre."
            )
        if spread is not None:
            raise InvalidOptionError(
                f"spread is only used with method='weighted'; got method='uniform' and "
                f"spread={spread!r}. Pass method='weighted' or drop spread."
            )
    else:
        if spread is None:
            spread = DEFAULT_SPREAD
        lo, hi = _SPREAD_RANGE
        if (not isinstance(spread, numbers.Real) or isinstance(spread, (bool, np.bool_))
                or not lo <= float(spread) <= hi):
            raise InvalidOptionError(
                f"spread must be a number in [{lo}, {hi}]; got {spread!r}. "
                f"The default is {DEFAULT_SPREAD}."
            )
        spread = float(spread)
    _, mod = _backend(backend)
    # the exact count only when it is below 2**63 (the samplers compare it with N,
    # 8 N and 2**63 - 1 only): never big-integer combinatorics on huge K and S
    C = _count_capped(K, S, exact, _INT64_MAX)
    _check_memory(_sample_bytes(N, C, K, S, exact, method),
                  f"sample_categories({K}, {S}, n_samples={N}, method={method!r})",
                  "Draw fewer samples (n_samples) or use fewer jobs.")
    if method == "uniform":
        return _sample_uniform(mod, seed, C, N, K, S, exact)
    c, base = _check_centre(centre, K, S, exact)
    return _sample_weighted(mod, seed, C, N, K, S, exact, c, base, spread)


def _sample_bytes(N, C, K, S, exact, method):
    """Bytes :func:`sample_categories` allocates: result, sort copy and scratch (an upper estimate)."""
    rows = min(N, C)
    out = 8 * rows * S
    if method == "uniform":
        if N >= C:
            return out
        parts = S if exact else S + 1
        table = 8 * parts * (K - S + 1) if parts * (K - S + 1) <= RESERVOIR_TABLE_MAX else 0
        return 2 * out + 8 * (4 * N + 4) + 8 * N + table + 64 * (S + 16)
    M = WEIGHTED_OVERSAMPLE * N
    if C <= M:
        return 8 * C * S + out + 32 * rows
    return 2 * out + 8 * (4 * (M + N) + 4) + 40 * N + 16 * S + 64 * (S + 16)


def _sample_uniform(mod, seed, C, N, K, S, exact):
    if N >= C:
        return _enumerate(mod, K, S, exact, C)
    out = np.empty((N, S), dtype=np.int64)
    parts = S if exact else S + 1
    if C <= _INT64_MAX and parts * (K - S + 1) <= RESERVOIR_TABLE_MAX:
        ranks = np.empty(N, dtype=np.int64)
        mod.sample_uniform_reservoir(np.uint64(seed), C, N, K, S, exact, _binomial_table(K, S, exact), out, ranks)
        return out[np.argsort(ranks)]  # rank order == lexicographic order
    mod.sample_uniform_direct(np.uint64(seed), N, K, S, exact, out)
    return out[_lex_order(out)]


def _sample_weighted(mod, seed, C, N, K, S, exact, c, base, spread):
    M = WEIGHTED_OVERSAMPLE * N
    if C <= M:
        cats = _enumerate(mod, K, S, exact, C)
        base_index = _exact_kernels().rank_category(base.tolist(), K, S, exact, _ExactBinomial())
        n_out = min(N, C)
        index = np.empty(n_out, dtype=np.int64)
        keys = np.empty(n_out, dtype=np.float64)
        mod.sample_weighted_enum(np.uint64(seed), cats, K, c, base_index, spread, n_out, index, keys)
        order = np.lexsort((index, keys))
        return cats[index[order]]
    out = np.empty((N, S), dtype=np.int64)
    keys = np.empty(N, dtype=np.float64)
    pos = np.empty(N, dtype=np.int64)
    mod.sample_weighted_perturb(np.uint64(seed), N, M, K, S, exact, c, base, spread, out, keys, pos)
    return out[np.lexsort((pos, keys))]
