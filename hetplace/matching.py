"""Deferred-acceptance matching markets (docs/model.md §3.3-3.5): the public, validated API.

Building blocks for people embedding SMP's market in their own schedulers:

deferred_acceptance(values, capacities, form="price" | "ordinal", ...)
    Assign workers to jobs, each job exactly ``capacities[i]`` workers.  The
    price form maximises the total value (exact ascending auction with
    market-clearing prices); the ordinal form is job-proposing Gale-Shapley.
is_stable(values, capacities, worker_job, worker_rank=None)
    Certificate checker: does an assignment have no blocking pair?
market_category(throughput, work, comm_time, sizes, ...)
    One SMP category: the iterated, linearised market of docs/model.md §3.3, scored
    by the true total JCT.

Every function validates its inputs and then calls a kernel of the chosen
backend: ``"cython"`` (compiled at install), ``"numba"`` (JIT, cached on
disk), ``"python"`` (plain loops, slow) or ``"auto"``.  All three give
bit-identical results.  ``"auto"`` picks Cython when the extension is built
(no JIT warm-up; as fast as or faster than Numba in ``benchmarks/
bench_matching.py``), else Numba.
"""

import math
import numbers

import numpy as np

from ._core._registry import BACKEND_CHOICES as BACKENDS  # re-exported: the backend= choices
from ._result import Result
from ._validation import as_array, as_real_array, check_choice, check_real_range, exact_int_sum, float64_copy
from .errors import (
    InvalidOptionError,
    InvalidPlacementError,
    InvalidProblemError,
    InvalidProblemTypeError,
)

__all__ = [
    "FORMS",
    "BACKENDS",
    "MAX_ABS_VALUE",
    "MARKET_RATE_RANGE",
    "MARKET_COMM_MAX",
    "DEFAULT_MAX_ROUNDS",
    "MatchingResult",
    "MarketResult",
    "deferred_acceptance",
    "is_stable",
    "market_category",
]

FORMS = ("price", "ordinal")
#: Largest accepted magnitude of an allowed value (rescale larger values:
#: only differences matter to the price form, only the order to the ordinal one).
#: Values are only compared, added and subtracted (no division), so tiny values,
#: subnormal ones included, are exact IEEE arithmetic on every backend and need
#: no lower bound; sums of K values below this bound cannot overflow.
MAX_ABS_VALUE = 1e150
#: Supported magnitudes of :func:`market_category`'s inputs, which are derived
#: quantities of a :class:`~hetplace.Problem` (products of up to three inputs of
#: the range ``REAL_MIN..REAL_MAX``): non-zero throughputs and works in
#: ``[REAL_MIN**2, REAL_MAX**2]``, finite comm_time entries at most 1e100 (a Problem's
#: are below ``2 * REAL_MAX**3``: iterations * gradient bytes / bandwidth * 2(n-1)/n).
#: Inside them every quantity of the market (``X_i**2``, the valuations
#: ``work[i] / X_i**2 * rho[i, k]``, the JCTs) is a normal finite float on every
#: backend, for any number of workers an array can hold.
MARKET_RATE_RANGE = (1e-60, 1e60)
MARKET_COMM_MAX = 1e100
#: Default number of market solves per category (``max_rounds``).  The
#: iteration usually stops earlier, when an assignment repeats.
DEFAULT_MAX_ROUNDS = 8
_MAX_ROUNDS_LIMIT = 10_000


# ----------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------


class MatchingResult(Result):
    """Outcome of :func:`deferred_acceptance`.

    Attributes
    ----------
    worker_job : ndarray of int64, shape (K,)
        Job of every worker, -1 idle.  Only allowed pairs appear.
    prices : ndarray of float64, shape (K,), or None
        Price form: each worker's price ``pi[k] = max_i (values[i, k] -
        job_prices[i])`` over its allowed jobs with capacity (and idleness,
        worth 0, when ``sum(capacities) < K``); ``-inf`` for a worker that can
        go nowhere.  ``None`` for the ordinal form.
    job_prices : ndarray of float64, shape (S,), or None
        Price form: the final price of a slot of each job (0 for jobs with
        capacity 0).  ``prices[k] + job_prices[i] >= values[i, k]`` for every
        allowed pair, with equality on assigned pairs.  ``None`` for ordinal.
    idle_price : float or None
        Price form: the price of an idle slot (0 when ``sum(capacities) == K``).
    welfare : float
        Sum of ``values[worker_job[k], k]`` over assigned workers.
    bound : float or None
        Price form: ``sum(prices) + capacities @ job_prices + (K -
        sum(capacities)) * idle_price``, an upper bound on the best possible
        welfare (LP duality); equal to ``welfare`` up to rounding when
        ``success``.  ``None`` for ordinal.
    status : str
        ``"optimal"`` (every job got its capacity; price form: welfare maximal;
        ordinal form: the job-optimal stable matching) or ``"infeasible"``.
    success : bool
        ``status == "optimal"``.
    message : str
        Human-readable status.
    info : dict
        Empty (the common field of every result, :class:`hetplace._result.Result`).
    form : str
        ``"price"`` or ``"ordinal"``.
    rounds : int
        Price form: augmenting searches (at most one per arriving worker or
        class of identical workers).  Ordinal form: 1.
    bids : int
        Proposals: workers moving into a job (price form; arriving and
        displaced ones) or job-to-worker proposals (ordinal form).
    backend : str
        Backend that ran the kernel.
    """

    FIELDS = ("worker_job", "prices", "job_prices", "idle_price", "welfare", "bound", "form", "rounds", "bids",
              "backend")
    STATUSES = ("optimal", "infeasible")
    SUCCESS = ("optimal",)
    SHOWN = ("form", "status", "welfare", "rounds", "bids")


class MarketResult(Result):
    """Outcome of :func:`market_category` (one SMP category).

    Attributes
    ----------
    status : str
        ``"filled"`` (every job got exactly ``sizes[i]`` workers) or
        ``"unfilled"``; ``success`` is ``status == "filled"``.
    message : str
    worker_job : ndarray of int64, shape (K,)
        Best assignment seen (job per worker, -1 idle).
    total_jct : float
        Its true total JCT ``sum_i work[i] / X_i + comm_time[i, n_i]`` with
        ``n_i`` the workers it gives job i and ``X_i`` their summed
        throughput; ``inf`` when a job got no worker.
    mean_jct : float
        ``total_jct / S``.
    filled : bool
        ``success`` (kept for callers of the 0.x API).
    rounds : int
        Market solves performed.
    bids : int
        Proposals over all rounds (see :class:`MatchingResult`).
    form, backend : str
    info : dict
        Empty (the common field of every result).
    """

    FIELDS = ("worker_job", "total_jct", "mean_jct", "filled", "rounds", "bids", "form", "backend")
    STATUSES = ("filled", "unfilled")
    SUCCESS = ("filled",)
    SHOWN = ("form", "total_jct", "filled", "rounds")


# ----------------------------------------------------------------------------
# Validation helpers
# ----------------------------------------------------------------------------


def _kernels(backend):
    """Resolve ``backend`` to ``(name, kernels)`` by the backend registry (:func:`hetplace._core._registry.resolve`)."""
    from ._core import _registry

    backend = check_choice("backend", backend, BACKENDS)
    return _registry.resolve(backend)


def _float_matrix(value, name, what):
    """``value`` as a float64 copy; bools, complex numbers, strings and other objects are rejected."""
    raw = as_real_array(value, name, what="numbers", shape_text=what, error=InvalidProblemTypeError)
    return float64_copy(raw, name, f"Pass {what}, rescaled.")


def _values_iv(values, allowed):
    """(S, K) float64 values and bool allowed mask, validated."""
    what = "a 2-D array of shape (n_jobs, n_workers)"
    if allowed is None and type(values) is np.ndarray and values.dtype == np.float64 and values.ndim == 2 \
            and values.size and values.flags.c_contiguous:
        # the common case, checked in two reductions and used without a copy (it is only
        # read): no NaN or +inf (the max would be NaN or inf), nothing beyond the bound
        if values.max() <= MAX_ABS_VALUE:
            if values.min() >= -MAX_ABS_VALUE:
                return values, np.ones(values.shape, dtype=bool)
            mask = values > -math.inf  # finite: no NaN or +inf is left
            if not (mask & (values < -MAX_ABS_VALUE)).any():
                return values, mask
    v = _float_matrix(values, "values", what)
    if v.ndim != 2:
        raise InvalidProblemError(f"values must be {what}; got an array of shape {v.shape}.")
    S, K = v.shape
    if S == 0 or K == 0:
        raise InvalidProblemError(
            f"values must have at least one job (row) and one worker (column); got shape {v.shape}."
        )
    if allowed is None:
        if np.isnan(v).any():
            i, k = (int(t) for t in np.argwhere(np.isnan(v))[0])
            raise InvalidProblemError(
                f"values must not contain NaN; got NaN for job {i}, worker {k}. "
                "Mark forbidden pairs with -inf or pass an allowed mask."
            )
        bad = np.isposinf(v)
        if bad.any():
            i, k = (int(t) for t in np.argwhere(bad)[0])
            raise InvalidProblemError(
                f"values must be finite or -inf (forbidden pair); got +inf for job {i}, worker {k}. "
                f"Use a finite value (at most {MAX_ABS_VALUE:g} in magnitude)."
            )
        mask = np.isfinite(v)
    else:
        if isinstance(allowed, (str, bytes)):
            raise InvalidProblemTypeError(
                f"allowed must be a boolean array of shape {v.shape}; got the string {allowed!r}."
            )
        a = np.asarray(allowed)
        if a.dtype != np.bool_:
            raise InvalidProblemTypeError(
                f"allowed must be a boolean array of shape {v.shape} (True = the pair may be "
                f"matched); got dtype {a.dtype}. Pass e.g. values > 0."
            )
        if a.shape != v.shape:
            raise InvalidProblemError(
                f"allowed must have the shape of values {v.shape}; got shape {a.shape}."
            )
        mask = a.copy()
        bad = mask & ~np.isfinite(v)
        if bad.any():
            i, k = (int(t) for t in np.argwhere(bad)[0])
            raise InvalidProblemError(
                f"values must be finite on allowed pairs; got {float(v[i, k])!r} for job {i}, worker {k} "
                "where allowed is True. Give it a finite value or set allowed[i, k] = False."
            )
    big = mask & (np.abs(np.where(mask, v, 0.0)) > MAX_ABS_VALUE)
    if big.any():
        i, k = (int(t) for t in np.argwhere(big)[0])
        raise InvalidProblemError(
            f"values must be at most {MAX_ABS_VALUE:g} in magnitude; got {float(v[i, k])!r} for job {i}, "
            f"worker {k}. Rescale the values (the result depends only on their differences/order)."
        )
    return v, mask


def _int_vector(value, name, n, fix):
    """``value`` as a list of ``n`` exact Python ints (no int64 wrap-around on the way)."""
    arr = as_array(value, name, f"integers, shape ({n},)", f" {fix}", InvalidProblemTypeError)
    if arr.dtype.kind not in "iufO":
        raise InvalidProblemTypeError(
            f"{name} must be integers, shape ({n},); got dtype {arr.dtype}. {fix}"
        )
    # element rule of every real input: no bools (also inside a list), complex, None, ...
    as_real_array(value, name, what=f"integers, shape ({n},)", error=InvalidProblemTypeError)
    if arr.shape != (n,):
        raise InvalidProblemError(f"{name} must have shape ({n},) (one entry per job); got shape {arr.shape}. {fix}")
    if arr.dtype.kind == "O" and not all(isinstance(x, numbers.Integral) for x in arr.tolist()):
        try:
            arr = arr.astype(np.float64)
        except OverflowError:
            raise InvalidProblemError(f"{name} must be at most 2**53; got an integer too large for a float. {fix}") from None
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float64)  # float16 / float32 exactly; 2**53 cast to float16 overflowed (RuntimeWarning)
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidProblemError(f"{name} must be whole numbers; got {float(arr[i])!r} for job {i}. {fix}")
        if np.abs(arr).max(initial=0) > 2**53:
            raise InvalidProblemError(f"{name} must be at most 2**53; got {np.abs(arr).max()!r}. {fix}")
    return [int(x) for x in arr.tolist()]


def _capacities_iv(capacities, S, K):
    fix = f"Pass one non-negative integer per job with sum(capacities) <= n_workers = {K}."
    caps = _int_vector(capacities, "capacities", S, fix)
    neg = [i for i, c in enumerate(caps) if c < 0]
    if neg:
        raise InvalidProblemError(
            f"capacities must be >= 0; got {caps[neg[0]]} for job {neg[0]}. {fix}"
        )
    # exact sum before any int64 arithmetic: every capacity is then <= K, so the
    # kernels' offsets and workspace sizes cannot wrap
    total = exact_int_sum(caps)
    if total > K:
        raise InvalidProblemError(
            f"sum(capacities) = {total} exceeds the number of workers K = {K} (columns of values); "
            "each worker takes at most one slot. Lower the capacities or add workers."
        )
    return np.array(caps, dtype=np.int64)


def _worker_rank_iv(worker_rank, mask):
    S, K = mask.shape
    what = f"a float array of shape ({S}, {K}) (larger = preferred by the worker)"
    r = _float_matrix(worker_rank, "worker_rank", what)
    if r.shape != (S, K):
        raise InvalidProblemError(f"worker_rank must be {what}; got shape {r.shape}.")
    bad = mask & np.isnan(r)
    if bad.any():
        i, k = (int(t) for t in np.argwhere(bad)[0])
        raise InvalidProblemError(
            f"worker_rank must not be NaN on allowed pairs; got NaN for job {i}, worker {k}."
        )
    return np.where(mask, r, 0.0)


def _default_rank_div(v, mask):
    """(S,) divisors of the default worker rank: the mean of job i's allowed values, 1 when it is <= 0.

    NumPy's row sums of ``where(mask, v, 0)`` (pairwise summation along the
    rows of a C-ordered ``v``), as the ordinal form has always computed them:
    the default ranks, and so every tie between them, are unchanged.
    """
    S, K = v.shape
    vz = np.where(mask, v, 0.0)
    n = mask.sum(axis=1)
    mean = np.divide(vz.sum(axis=1), n, out=np.zeros(S), where=n > 0)
    return np.where(mean > 0, mean, 1.0)


def _default_worker_rank(v, mask):
    """Relative value: ``values[i, k] / mean of job i's allowed values`` (raw when mean <= 0)."""
    return np.where(mask, v, 0.0) / _default_rank_div(v, mask)[:, None]


def _check_max_rounds(max_rounds):
    if isinstance(max_rounds, (bool, np.bool_)) or not isinstance(max_rounds, numbers.Integral):
        raise InvalidOptionError(
            f"max_rounds must be an integer in [1, {_MAX_ROUNDS_LIMIT}]; got {max_rounds!r}."
        )
    if not 1 <= int(max_rounds) <= _MAX_ROUNDS_LIMIT:
        raise InvalidOptionError(
            f"max_rounds must be an integer in [1, {_MAX_ROUNDS_LIMIT}]; got {int(max_rounds)}."
        )
    return int(max_rounds)


# ----------------------------------------------------------------------------
# deferred_acceptance
# ----------------------------------------------------------------------------


def deferred_acceptance(
    values: "np.typing.ArrayLike", capacities: "np.typing.ArrayLike", form: str = "price",
    allowed: "np.typing.ArrayLike | None" = None, worker_rank: "np.typing.ArrayLike | None" = None,
    backend: str = "auto",
) -> "MatchingResult":
    """Match workers to jobs, each job taking exactly ``capacities[i]`` workers.

    Parameters
    ----------
    values : array_like of float, shape (S, K)
        ``values[i, k]``: what worker k is worth to job i.  ``-inf`` marks a
        forbidden pair (when ``allowed`` is not given).  At most
        :data:`MAX_ABS_VALUE` in magnitude.
    capacities : array_like of int, shape (S,)
        Slots of each job (>= 0), ``sum(capacities) <= K`` (summed exactly, so
        huge capacities are rejected, never wrapped); the other workers stay
        idle.
    form : {"price", "ordinal"}, default "price"
        ``"price"``: maximise the total value (welfare).  ``"ordinal"``:
        job-proposing Gale-Shapley, job-optimal and stable.
    allowed : array_like of bool, shape (S, K), optional
        Pairs that may be matched (default: the finite entries of ``values``).
        Values of disallowed pairs are ignored.
    worker_rank : array_like of float, shape (S, K), optional
        Ordinal form only: worker k prefers job i to job j iff
        ``worker_rank[i, k] > worker_rank[j, k]`` (ties to the lower job
        index).  Default: the relative value ``values[i, k] / m_i`` where
        ``m_i`` is the mean of job i's allowed values (``values[i, k]`` itself
        when ``m_i <= 0``).
    backend : {"auto", "cython", "numba", "python"}, default "auto"

    Returns
    -------
    MatchingResult
        ``status`` is ``"infeasible"`` when the capacities cannot be filled
        (price form: no assignment with allowed pairs fills them; ordinal form:
        the stable matchings leave a job short).

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        Bad values, allowed mask, capacities or worker_rank (the message names
        the entry and the fix).
    InvalidOptionError
        Unknown ``form`` or ``backend``; ``worker_rank`` with the price form.
    MissingDependencyError
        The requested backend is not available.

    Notes
    -----
    **Price form.**  The exact ascending auction of Demange, Gale and
    Sotomayor, *Multi-item auctions*, J. Political Economy 94(4), 1986 (the
    market-clearing-price form of deferred acceptance): workers arrive one at
    a time and propose to the job of highest net value ``values[i, k] -
    job_prices[i]``; a full job keeps the proposal by passing a worker on
    along the cheapest chain of displacements to a free slot, and the prices
    of the over-demanded jobs rise by exactly the amount that clears them.
    Implemented as successive shortest augmenting paths on the job graph
    (Kuhn-Munkres for transportation problems), with an idle pseudo-job of
    ``K - sum(capacities)`` slots worth 0.  The result is welfare-maximal
    exactly, not to within ``eps * K``: the final prices certify it
    (``bound == welfare`` up to floating-point rounding).  Consecutive
    workers with identical columns are moved in bulk.

    **Ordinal form.**  D. Gale and L. S. Shapley, *College admissions and the
    stability of marriage*, Amer. Math. Monthly 69, 1962, with jobs as the
    proposing side: jobs rank workers by ``values[i, k]`` (higher first, ties
    to the lower worker index), workers rank jobs by ``worker_rank``;
    disallowed pairs are unacceptable to both.  The result is the
    job-optimal stable matching (see :func:`is_stable`).

    Examples
    --------
    >>> from hetplace.matching import deferred_acceptance
    >>> r = deferred_acceptance([[3.0, 1.0, 2.0], [2.0, 2.0, 0.0]], [1, 1])
    >>> r.worker_job.tolist(), r.welfare
    ([0, 1, -1], 5.0)
    """
    v, mask = _values_iv(values, allowed)
    S, K = v.shape
    caps = _capacities_iv(capacities, S, K)
    form = check_choice("form", form, FORMS)
    if form == "price" and worker_rank is not None:
        raise InvalidOptionError(
            "worker_rank applies to form='ordinal' only (the price form ranks by value); "
            "drop it or pass form='ordinal'."
        )
    name, mod = _kernels(backend)
    worker_job = np.empty(K, dtype=np.int64)
    stats = np.zeros(2, dtype=np.int64)
    if form == "price":
        # The auction never looks at a job of capacity 0 (its slot price stays 0), so
        # only the jobs with capacity go to the kernel: at most K of them, which keeps
        # its O((S + 1)**2) workspace within O((K + 1)**2) however many rows values has.
        act = np.flatnonzero(caps > 0)
        A = act.size
        vals_t = np.ascontiguousarray(np.where(mask[act], v[act], np.nan).T)
        nf, ni = mod.auction_workspace_size(A, K)
        price_act = np.empty(A + 1)
        wj_act = np.empty(K, dtype=np.int64)
        status = mod.auction_kernel(vals_t, np.ones(A), -math.inf, np.ascontiguousarray(caps[act]), wj_act,
                                    price_act, stats, np.empty(max(nf, 1)), np.empty(max(ni, 1), dtype=np.int64))
        worker_job[:] = np.where(wj_act >= 0, act[np.maximum(wj_act, 0)] if A else -1, -1)
        job_price = np.zeros(S + 1)
        job_price[act] = price_act[:A]
        job_price[S] = price_act[A]
        active = mask & (caps > 0)[:, None]
        q = job_price[:S].copy()
        net = np.where(active, v - q[:, None], -np.inf)
        idle = K - int(caps.sum())
        prices = net.max(axis=0)
        idle_price = float(job_price[S]) if idle > 0 else 0.0
        if idle > 0:
            prices = np.maximum(prices, 0.0 - idle_price)
        bound = float(prices.sum() + caps @ q + idle * idle_price) if np.isfinite(prices).all() else math.inf
    else:
        # one kernel from the values themselves: pair (i, k) is acceptable iff vals[i, k] > -inf
        # (without a mask the forbidden pairs already are -inf), and worker k ranks job i by
        # rank[i, k] / div[i], divided on proposed pairs only
        vals = np.ascontiguousarray(v if allowed is None else np.where(mask, v, np.nan))
        if worker_rank is None:
            rank, div = vals, _default_rank_div(v, mask)
        else:
            rank, div = np.ascontiguousarray(_worker_rank_iv(worker_rank, mask)), np.ones(S)
        status = mod.ordinal_match(vals, -math.inf, rank, div, caps, worker_job, stats)
        prices = q = idle_price = bound = None
    busy = np.flatnonzero(worker_job >= 0)
    welfare = float(v[worker_job[busy], busy].sum()) if busy.size else 0.0
    counts = np.bincount(worker_job[busy], minlength=S)
    short = np.flatnonzero(counts < caps)
    if status == 0:
        st = "optimal"
        msg = (
            "every job got its capacity; the assignment maximises the total value "
            "(certified by the market-clearing prices)" if form == "price" else
            "every job got its capacity; this is the job-optimal stable matching"
        )
    else:
        st = "infeasible"
        jobs = ", ".join(str(int(i)) for i in short[:10]) + (" ..." if short.size > 10 else "")
        if form == "price":
            msg = (
                f"the capacities cannot be filled with allowed pairs: job(s) {jobs} got fewer "
                "workers than their capacity. Lower those capacities or allow more pairs."
            )
        else:
            msg = (
                f"the job-optimal stable matching leaves job(s) {jobs} short of capacity "
                "(every stable matching leaves the same slots empty). Lower those capacities, "
                "allow more pairs, or use form='price'."
            )
    return MatchingResult(
        worker_job=worker_job,
        prices=prices,
        job_prices=q,
        idle_price=idle_price,
        welfare=welfare,
        bound=bound,
        status=st,
        message=msg,
        form=form,
        rounds=int(stats[0]),
        bids=int(stats[1]),
        backend=name,
    )


# ----------------------------------------------------------------------------
# is_stable
# ----------------------------------------------------------------------------


def is_stable(
    values: "np.typing.ArrayLike", capacities: "np.typing.ArrayLike", worker_job: "np.typing.ArrayLike",
    worker_rank: "np.typing.ArrayLike | None" = None, allowed: "np.typing.ArrayLike | None" = None,
) -> bool:
    """True when the assignment has no blocking pair (ordinal stability).

    Parameters
    ----------
    values : array_like of float, shape (S, K)
        Jobs' preferences: job i prefers worker k to worker k' iff
        ``values[i, k] > values[i, k']`` or they are equal and ``k < k'``.
        ``-inf`` marks an unacceptable pair (when ``allowed`` is not given).
    capacities : array_like of int, shape (S,)
    worker_job : array_like of int, shape (K,)
        Job of every worker, -1 idle.
    worker_rank : array_like of float, shape (S, K), optional
        Workers' preferences: worker k prefers job i to job j iff
        ``worker_rank[i, k] > worker_rank[j, k]`` or they are equal and
        ``i < j``.  Default as in :func:`deferred_acceptance`.
    allowed : array_like of bool, shape (S, K), optional
        Acceptable pairs (default: finite entries of ``values``).

    Returns
    -------
    bool
        False when a worker is matched to an unacceptable job, or when some
        acceptable pair (i, k), with k not in job i, blocks: job i has a free
        slot (fewer than ``capacities[i]`` workers) or prefers k to one of its
        workers, AND worker k is idle or prefers i to its job.  Every
        acceptable job is preferred to being idle, on both sides.

    Raises
    ------
    InvalidPlacementError
        ``worker_job`` is not a matching: wrong shape, a job index out of
        range, or a job with more workers than its capacity.

    Notes
    -----
    The stability notion of Gale and Shapley (1962) for many-to-one markets
    (Roth, 1984) with strict preferences (ties broken by index) and
    responsive job preferences.
    """
    v, mask = _values_iv(values, allowed)
    S, K = v.shape
    caps = _capacities_iv(capacities, S, K)
    wj = np.asarray(worker_job)
    if wj.shape != (K,) or not np.issubdtype(wj.dtype, np.integer):
        raise InvalidPlacementError(
            f"worker_job must be an integer array of shape ({K},) (job per worker, -1 idle); "
            f"got shape {wj.shape} and dtype {wj.dtype}."
        )
    bad = np.flatnonzero((wj < -1) | (wj >= S))  # on the given dtype: a uint64 must not wrap to -1
    if bad.size:
        k = int(bad[0])
        raise InvalidPlacementError(
            f"worker_job[{k}] = {int(wj[k])} is not a job index; use 0..{S - 1} or -1 for idle."
        )
    wj = wj.astype(np.int64)
    busy = np.flatnonzero(wj >= 0)
    counts = np.bincount(wj[busy], minlength=S)
    over = np.flatnonzero(counts > caps)
    if over.size:
        i = int(over[0])
        raise InvalidPlacementError(
            f"worker_job gives job {i} {int(counts[i])} workers but its capacity is {int(caps[i])}."
        )
    if not mask[wj[busy], busy].all():
        return False
    rank = _default_worker_rank(v, mask) if worker_rank is None else _worker_rank_iv(worker_rank, mask)
    jobs = np.arange(S)[:, None]
    # job side: free slot, or k beats the job's least preferred worker
    job_wants = np.zeros((S, K), dtype=bool)
    for i in range(S):
        mine = busy[wj[busy] == i]
        if counts[i] < caps[i]:
            job_wants[i] = True
        elif mine.size:
            vals_i = v[i, mine]
            low = vals_i.min()
            worst = mine[vals_i == low].max()  # ties: the higher index is less preferred
            job_wants[i] = (v[i] > low) | ((v[i] == low) & (np.arange(K) < worst))
    # worker side: idle, or prefers job i to its own
    cur = wj[None, :]
    r_cur = np.where(cur >= 0, rank[np.maximum(wj, 0), np.arange(K)][None, :], -np.inf)
    worker_wants = (cur < 0) | (rank > r_cur) | ((rank == r_cur) & (jobs < cur))
    blocking = mask & job_wants & worker_wants & (cur != jobs)
    return not bool(blocking.any())


# ----------------------------------------------------------------------------
# market_category
# ----------------------------------------------------------------------------


def _market_iv(throughput, work, comm_time, sizes):
    what = "a 2-D array of shape (n_jobs, n_workers) of samples/s (0 = cannot run)"
    rho = _float_matrix(throughput, "throughput", what)
    if rho.ndim != 2 or rho.shape[0] == 0 or rho.shape[1] == 0:
        raise InvalidProblemError(f"throughput must be {what}; got an array of shape {rho.shape}.")
    S, K = rho.shape
    bad = ~np.isfinite(rho) | (rho < 0)
    if bad.any():
        i, k = (int(t) for t in np.argwhere(bad)[0])
        raise InvalidProblemError(
            f"throughput must be finite and >= 0; got {float(rho[i, k])!r} for job {i}, worker {k}. "
            "Use 0 for a worker the job cannot run on."
        )
    lo, hi = MARKET_RATE_RANGE
    check_real_range("throughput", rho, InvalidProblemError, "Rescale the units (e.g. samples per hour instead of per second).", lo, hi)
    dead = np.flatnonzero(~(rho > 0).any(axis=1))
    if dead.size:
        i = int(dead[0])
        raise InvalidProblemError(
            f"job {i} has throughput 0 on every worker, so no category can place it. "
            "Give it a positive throughput somewhere or remove the job."
        )
    w = _float_matrix(work, "work", f"one positive number per job, shape ({S},)")
    if w.shape != (S,):
        raise InvalidProblemError(f"work must have shape ({S},) (one value per job); got shape {w.shape}.")
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidProblemError(
            f"work must be finite and > 0 (samples still to process); got {float(w[i])!r} for job {i}."
        )
    check_real_range("work", w, InvalidProblemError, "Rescale the units (e.g. thousands of samples).", lo, hi)
    c = _float_matrix(comm_time, "comm_time", f"an array of shape ({S}, {K + 1})")
    if c.shape != (S, K + 1):
        raise InvalidProblemError(
            f"comm_time must have shape ({S}, {K + 1}) (job, number of workers 0..K); got shape {c.shape}. "
            "Problem.comm_time has the right layout."
        )
    bad = np.isnan(c) | (c < 0) | (np.isfinite(c) & (c > MARKET_COMM_MAX))
    if bad.any():
        i, n = (int(t) for t in np.argwhere(bad)[0])
        raise InvalidProblemError(
            f"comm_time must be >= 0 and at most {MARKET_COMM_MAX:g}, or +inf for a size the job "
            f"cannot use (Problem.size_cost); got {float(c[i, n])!r} for job {i} on {n} workers."
        )
    fix = f"Pass one integer >= 1 per job with sum(sizes) <= n_workers = {K}."
    n = _int_vector(sizes, "sizes", S, fix)
    low = [i for i, x in enumerate(n) if x < 1]
    if low:
        raise InvalidProblemError(f"sizes must be >= 1 (every job needs a worker); got {n[low[0]]} for job {low[0]}. {fix}")
    # exact sum before any int64 arithmetic (every size is then <= K)
    total = exact_int_sum(n)
    if total > K:
        raise InvalidProblemError(
            f"sum(sizes) = {total} exceeds the number of workers K = {K}. {fix}"
        )
    return np.ascontiguousarray(rho), np.ascontiguousarray(w), np.ascontiguousarray(c), np.array(n, dtype=np.int64)


def market_category(
    throughput: "np.typing.ArrayLike", work: "np.typing.ArrayLike", comm_time: "np.typing.ArrayLike",
    sizes: "np.typing.ArrayLike", form: str = "price", max_rounds: int = DEFAULT_MAX_ROUNDS,
    backend: str = "auto",
) -> "MarketResult":
    """Solve one SMP category with the iterated, linearised market (docs/model.md §3.3).

    Parameters
    ----------
    throughput : array_like of float, shape (S, K)
        ``rho[i, k]``, samples/s of job i on worker k (0 = cannot run), e.g.
        ``Problem.worker_throughput``.  Non-zero entries of magnitude in
        :data:`MARKET_RATE_RANGE` (1e-60..1e60).
    work : array_like of float, shape (S,)
        ``w_i = iterations * batch`` (``Problem.work``), > 0, in
        :data:`MARKET_RATE_RANGE`.
    comm_time : array_like of float, shape (S, K + 1)
        Total communication time of job i on n workers (``Problem.comm_time``),
        >= 0; ``+inf`` marks a size the job cannot use (``Problem.size_cost``):
        a category giving a job such a size scores ``total_jct = inf``.
    sizes : array_like of int, shape (S,)
        The category: workers per job, each >= 1, ``sum(sizes) <= K`` (the
        sum is taken exactly, so huge sizes are rejected, never wrapped).
    form : {"price", "ordinal"}, default "price"
    max_rounds : int, default :data:`DEFAULT_MAX_ROUNDS` (8)
        Market solves at most.
    backend : {"auto", "cython", "numba", "python"}, default "auto"

    Returns
    -------
    MarketResult

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        A bad throughput, work, comm_time or sizes (wrong shape, bool/complex/
        string entries, NaN, negative, outside the supported range, sizes not
        summing to at most K); the message names the entry and the fix.
    InvalidOptionError
        Unknown ``form`` or ``backend``, ``max_rounds`` outside [1, 10000].

    Notes
    -----
    ``X_i`` starts at ``sizes[i] * mean_k rho[i, k]`` (mean over all K
    workers).  Each round values worker k for job i at the marginal JCT
    reduction ``a_i * rho[i, k]``, ``a_i = w_i / X_i**2`` (computed as
    ``work[i] / (X_i * X_i)``), with ``rho[i, k] == 0`` forbidden, solves the
    market (see :func:`deferred_acceptance`) with capacities ``sizes``, and
    sets ``X_i`` to the true throughput of the assignment.  The assignment
    with the smallest true total JCT is kept (ties keep the earlier); the
    loop stops when an assignment repeats the previous one, after
    ``max_rounds`` solves, or when the category cannot be filled.  The
    ordinal form's preferences (jobs: by ``rho[i, k]``; workers: by relative
    speed ``rho[i, k] / mean_k rho[i, k]``) do not depend on ``X``, so it
    solves once.  The default of 8 rounds: the price form repeats after 2-4
    rounds on most Gavel instances and rarely improves after that.
    """
    rho, w, c, n = _market_iv(throughput, work, comm_time, sizes)
    form = check_choice("form", form, FORMS)
    max_rounds = _check_max_rounds(max_rounds)
    name, mod = _kernels(backend)
    S, K = rho.shape
    form_id = mod.FORM_PRICE if form == "price" else mod.FORM_ORDINAL
    if form == "price":
        job_order = np.zeros((1, 1), dtype=np.int64)
        order_len = np.zeros(1, dtype=np.int64)
        worker_rank = np.zeros((1, 1))
    else:
        job_order, order_len, worker_rank = mod.ordinal_preferences(rho)
    nf, ni = mod.market_workspace_size(S, K)
    worker_job = np.empty(K, dtype=np.int64)
    stats = np.zeros(2, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # IEEE, as compiled (docs of _core._jit)
        total = mod.market_category_kernel(rho, w, c, n, form_id, max_rounds, job_order, order_len,
                                           worker_rank, worker_job, stats, np.empty(nf),
                                           np.empty(ni, dtype=np.int64))
    busy = worker_job >= 0
    counts = np.bincount(worker_job[busy], minlength=S)
    filled = bool((counts == n).all())
    return MarketResult(
        status="filled" if filled else "unfilled",
        message="every job got its size" if filled else "some job did not get its size (see filled, worker_job)",
        worker_job=worker_job,
        total_jct=float(total),
        mean_jct=float(total) / S,
        filled=filled,
        rounds=int(stats[0]),
        bids=int(stats[1]),
        form=form,
        backend=name,
    )
