"""Time models, equal-finish allocation and largest-remainder rounding (docs/model.md §6.2).

Every worker follows the piecewise-linear time model

    t_i(b) = (max(b, knee_i) + offset_i) / speed_i

with ``speed`` in samples/s above the knee, ``knee`` (samples) below which the
time is flat (a GPU that is not saturated), and ``offset`` a fixed cost in
sample-equivalents (an upload time ``u_i`` is ``offset_i = u_i * speed_i``).
A CPU worker is the special case ``knee = offset = 0`` (time linear in b).

These helpers assume clean float64/int64 arrays of one length; the public
layer (:class:`~hetplace.balance.LoadBalancer`, :func:`~hetplace.balance.simulate`)
validates.  :func:`largest_remainder` is public and validates its own input.
"""

import heapq

import numpy as np

from .._validation import COUNT_MAX, check_real_range, exact_int_sum, nested_holds
from ..errors import InvalidOptionError, InvalidProblemError, InvalidProblemTypeError, SolverError

__all__ = [
    "largest_remainder",
    "step_time",
    "equal_finish",
    "optimal_integer_allocation",
]


def _step_time(b, speed, knee=0.0, offset=0.0):
    """Time of batch ``b`` under the piecewise-linear model.

    Parameters
    ----------
    b : ndarray, shape (n,)
        Batch sizes (samples).
    speed : ndarray of float64, shape (n,)
        Samples/s above the knee; a speed of 0 gives ``inf``.
    knee, offset : float or ndarray of float64, shape (n,)
        See the module docstring.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    num = np.maximum(np.asarray(b, dtype=np.float64), knee) + offset
    safe = np.where(speed > 0, speed, 1.0)
    return np.where(speed > 0, num / safe, np.inf)


def _fill_to(speed, offset, lo, hi, total):
    """``b_i = clip(speed_i T - offset_i, lo_i, hi_i)`` at the level ``T`` where ``sum(b) = total``.

    Returns ``(b, T)``.  Requires ``sum(lo) <= total <= sum(hi)``.

    The sum is piecewise linear and non-decreasing in ``T``, with breakpoints
    ``(lo_i + offset_i) / speed_i`` (worker ``i`` leaves its floor) and
    ``(hi_i + offset_i) / speed_i`` (it reaches its cap).  The breakpoints are
    sorted in log space (speeds may span 1e-300..1e300: their quotients
    overflow, their logs do not) and the bracketing piece is found by
    bisection, each probe one O(n) pass, so the whole is O(n log n) in time
    and O(n) in memory.  On that piece the workers split into fixed ones
    (floor or cap) and free ones, and the free ones take the rest exactly:
    ``b_i = (R + sum_F offset) * speed_i / sum_F speed - offset_i`` with
    ``R = total - sum(fixed)``; the ratio of speeds never overflows.
    Workers with ``speed_i == 0`` stay at ``lo_i`` unless every worker with a
    speed is capped, then the rest is split equally among them (water
    filling with equal weights: the limit of vanishing equal speeds).
    """
    n = speed.size
    live = speed > 0
    b = lo.astype(np.float64).copy()
    if not live.any():
        if n == 0 or total <= b.sum():
            return b, 0.0
        return _fill_to(np.ones(n), np.zeros(n), lo, hi, total)[0], np.inf
    li = np.flatnonzero(live)
    v, o, l, h = speed[li], offset[li], lo[li], hi[li]
    lv = np.log(v)
    with np.errstate(divide="ignore"):
        enter = np.log(l + o) - lv  # -inf when the floor and the offset are 0: free from the start
        leave = np.log(h + o) - lv  # +inf for an uncapped worker
    bp = np.concatenate((enter, leave))
    bp = np.unique(bp[np.isfinite(bp)])
    rest = float(total) - float(b[~live].sum())
    goal = rest - 1e-9 * max(1.0, float(total))

    def filled(beta):  # sum over live workers at log-level beta
        with np.errstate(over="ignore"):
            return float(np.clip(np.exp(beta + lv) - o, l, h).sum())

    k_lo, k_hi = 0, bp.size
    while k_lo < k_hi:  # smallest k with filled(bp[k]) >= goal
        mid = (k_lo + k_hi) // 2
        if filled(bp[mid]) >= goal:
            k_hi = mid
        else:
            k_lo = mid + 1
    k = k_lo
    left = bp[k - 1] if k > 0 else -np.inf
    right = bp[k] if k < bp.size else np.inf
    free = (enter <= left) & (leave >= right)
    at_hi = leave <= left  # the rest (not free, not capped) sit at their floor
    bl = np.where(at_hi, h, l)
    R = rest - float(bl[~free].sum())
    if free.any():
        w = v[free]
        w = w / w.max()
        share = R + float(o[free].sum())
        bl[free] = np.clip(share * (w / w.sum()) - o[free], l[free], h[free])
        with np.errstate(over="ignore", divide="ignore"):
            T = float(share / w.sum() / v[free].max())
    else:  # every live worker at a breakpoint; a level above 1.8e308 (3 samples at speed 1e-308) is inf
        with np.errstate(over="ignore"):
            T = float(np.exp(right if np.isfinite(right) else left))
    b[li] = bl
    if not free.any() and k == bp.size and R > 1e-9 * max(1.0, float(total)) and (~live).any():
        dead = np.flatnonzero(~live)  # every live worker is capped: the dead take the rest
        b[dead] = _fill_to(np.ones(dead.size), np.zeros(dead.size), lo[dead], hi[dead],
                           R + float(lo[dead].sum()))[0]
    return b, T


def _equal_finish(speed, total, lo, hi, knee=0.0, offset=0.0):
    """Continuous batch sizes that minimise the slowest worker's time.

    Parameters
    ----------
    speed : ndarray of float64, shape (n,)
        Samples/s above the knee (> 0).
    total : int
        Global batch B.
    lo, hi : ndarray of float64, shape (n,)
        Per-worker bounds with ``sum(lo) <= total <= sum(hi)``; ``hi`` may be inf.
    knee, offset : float or ndarray of float64, shape (n,)

    Returns
    -------
    b, T
        As :func:`equal_finish`, the checked entry point of this kernel.

    Notes
    -----
    With ``b_i(T) = clip(speed_i T - offset_i, lo_i, hi_i)`` the capacity
    ``sum_i b_i(T)`` is piecewise linear and non-decreasing in ``T``; the
    equal-finish point of docs/model.md §6.2 is where it reaches ``total``,
    found exactly from the sorted breakpoints.  A knee does not change this
    allocation: below the knee time is flat, so the optimum is
    ``max(T, max_i t_i(lo_i))`` and every worker meets it.
    """
    speed = np.asarray(speed, dtype=np.float64)
    knee = np.broadcast_to(np.asarray(knee, dtype=np.float64), speed.shape)
    offset = np.broadcast_to(np.asarray(offset, dtype=np.float64), speed.shape)
    b, _ = _fill_to(speed, offset, lo, hi, total)
    T = float(np.max(_step_time(b, speed, knee, offset)))
    return b, T


def _remainder_order(frac, descending, tol):
    """Indices by remainder (largest first if ``descending``), near-equal ones by index.

    Remainders closer than ``tol`` (1e-9, or the float resolution of the
    quotas when that is coarser) are equal: exact ties such as 0.5 / 0.5
    computed from different quotas differ in the last bits, and the lower
    index must win them whatever the rounding.
    """
    key = -frac if descending else frac
    order = np.argsort(key, kind="stable")
    ks = key[order]
    group = np.concatenate(([0], np.cumsum(np.diff(ks) > tol)))
    return order[np.lexsort((order, group))]


def _round_feasible(x, total, lo, hi):
    """Largest-remainder rounding of a feasible continuous ``x`` (int64 bounds <= total, no checks)."""
    base = np.clip(np.floor(x + 1e-9), lo, hi).astype(np.int64)
    frac = x - base
    tol = max(1e-9, 64.0 * np.finfo(np.float64).eps * float(np.max(np.abs(x), initial=0.0)))
    left = int(total) - int(base.sum())
    if left > 0:
        order = _remainder_order(frac, True, tol)  # largest remainder first, ties to the lower index
        order = order[base[order] < hi[order]]
        base[order[:left]] += 1
        left = int(total) - int(base.sum())
        while left > 0:  # only after extreme float error: fill any room left
            room = np.flatnonzero(base < hi)
            if room.size == 0:
                raise SolverError(f"internal: no room for {left} samples under the caps (please report).")
            take = min(left, room.size)
            base[room[:take]] += 1
            left -= take
    elif left < 0:
        order = _remainder_order(frac, False, tol)  # smallest remainder gives back first
        order = order[base[order] > lo[order]]
        base[order[:-left]] -= 1
        left = int(total) - int(base.sum())
        while left < 0:
            room = np.flatnonzero(base > lo)
            if room.size == 0:
                raise SolverError(f"internal: {-left} samples above the floors (please report).")
            take = min(-left, room.size)
            base[room[:take]] -= 1
            left += take
    return base


def _project_proportional(x, total, lo, hi):
    """Scale ``x`` by one factor and clip to [lo, hi] so that it sums to ``total``.

    ``x`` may span 1e-300..1e300: :func:`_fill_to` works with log breakpoints
    and ratios of weights, never with their products.
    """
    x = np.maximum(x, 0.0)
    if not np.any(x > 0):
        x = np.ones_like(x)
    b, _ = _fill_to(x, np.zeros_like(x), lo, hi, total)
    return b


def _int_bounds(lo, hi, total):
    """int64 versions of float bounds; caps above ``total`` (or inf) become ``total``.

    A share never exceeds the total, so this changes no result and keeps every
    value (and every sum of two) far inside int64.
    """
    hi = np.where(np.isfinite(hi), np.minimum(hi, float(total)), float(total))
    return lo.astype(np.int64), hi.astype(np.int64)


def round_to_batch(x, total, lo, hi):
    """Project a continuous target onto the bounds and round it (no validation).

    Parameters
    ----------
    x : ndarray of float64, shape (n,)
        Non-negative target (proportional weights or a continuous batch).
    total : int
        At most ``COUNT_MAX`` (validated by the caller).
    lo, hi : ndarray of float64, shape (n,)
        Feasible bounds (``hi`` may hold inf).

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    y = _project_proportional(x, total, lo, hi)
    ilo, ihi = _int_bounds(lo, hi, total)
    return _round_feasible(y, total, ilo, ihi)


def _bounds_iv(n, total, lower, upper):
    """Validate the bounds of :func:`largest_remainder`; return float64 arrays (caps clipped to total)."""
    lo = _float_array_iv(lower, "lower", "a whole number of samples", scalar_ok=True)
    hi = _float_array_iv(upper, "upper", "a whole number of samples or inf", scalar_ok=True)
    for name, arr in (("lower", lo), ("upper", hi)):
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape != (n,)):
            raise InvalidProblemError(
                f"{name} must be one number for all workers or one per worker, shape ({n},); got shape {arr.shape}."
            )
    lo = np.array(np.broadcast_to(lo, (n,)))
    hi = np.array(np.broadcast_to(hi, (n,)))
    bad = ~np.isfinite(lo) | (lo != np.round(lo)) | (lo < 0) | (lo > total)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidProblemError(
            f"lower must hold whole numbers in [0, total = {total}]; got {float(lo[i])!r} at index {i}. "
            "Pass the minimum batch as an integer."
        )
    bad = np.isnan(hi) | ((hi != np.round(hi)) & np.isfinite(hi))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidProblemError(
            f"upper must hold whole numbers or inf; got {float(hi[i])!r} at index {i}. Pass memory caps in samples."
        )
    if np.any(hi < lo):
        i = int(np.flatnonzero(hi < lo)[0])
        raise InvalidProblemError(
            f"upper[{i}] = {hi[i]:g} is below lower[{i}] = {lo[i]:g}: every cap must allow the "
            "minimum batch. Raise the cap or lower the minimum."
        )
    hi = np.minimum(hi, float(total))  # a share never exceeds the total: exact integers from here on
    lo_sum = exact_int_sum(lo.astype(np.int64))
    if lo_sum > total:
        raise InvalidProblemError(
            f"total = {total} cannot give every worker its minimum: sum(lower) = {lo_sum}. "
            "Lower the minimum batch or raise the total."
        )
    hi_sum = exact_int_sum(hi.astype(np.int64))
    if hi_sum < total:
        raise InvalidProblemError(
            f"total = {total} does not fit under the caps: sum(upper) = {hi_sum}. "
            "Raise the caps, add workers or lower the total."
        )
    return lo, hi


def _float_array_iv(value, name, what, scalar_ok=False):
    """``value`` as a float64 array, or a clear error naming ``name`` (one ``what`` per worker).

    Rejects strings, bools, complex numbers and anything numpy cannot turn
    into real numbers (numpy would silently read ``True`` as 1 and drop an
    imaginary part).  NaN, inf and ranges are the caller's to check.
    """
    per = "" if scalar_ok else ", one per worker"
    if isinstance(value, (str, bytes)):
        raise InvalidProblemTypeError(f"{name} must be {what}{per}; got the string {value!r}.")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raw = None
    kind = None if raw is None else raw.dtype.kind
    # a bool in a nested list numpy accepted is read as 0 or 1 without a word (nested_holds walks
    # the nesting without recursion); a list numpy refused fails the conversion below instead
    if kind in ("b", "c", "U", "S", "M", "m", "V") or (kind == "O" and _has_bad_item(raw)) \
            or (raw is not None and isinstance(value, (list, tuple)) and nested_holds(value, (bool, np.bool_))):
        got = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "strings"}.get(kind, f"dtype {raw.dtype}")
        raise InvalidProblemTypeError(f"{name} must be {what}{per} (real numbers); got {got}: {value!r:.80}.")
    try:
        return np.asarray(raw if raw is not None else value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise InvalidProblemTypeError(
            f"{name} must be {what}{per}; got {type(value).__name__} that numpy cannot convert to real numbers."
        ) from None


def _has_bad_item(arr):
    """True if an object array holds a bool, complex or string (numpy converts those silently or late)."""
    return any(isinstance(v, (bool, np.bool_, complex, np.complexfloating, str, bytes)) for v in arr.ravel().tolist())


def largest_remainder(
    x: "np.typing.ArrayLike", total: int, lower: "np.typing.ArrayLike" = 1,
    upper: "np.typing.ArrayLike" = np.inf,
) -> np.ndarray:
    """Integer shares proportional to ``x`` that sum to ``total`` within bounds.

    Parameters
    ----------
    x : array_like of float, shape (n,)
        Non-negative weights (predicted speeds, or a continuous target batch);
        only their ratios matter.  All zeros means equal shares.
    total : int
        The exact sum of the shares (the global batch B), in [0, 2**53].
    lower : int or array_like of int, shape (n,), default 1
        Minimum share of every worker (``min_batch``).
    upper : int, inf or array_like, shape (n,), default inf
        Maximum share of every worker (its memory cap in samples); caps
        above ``total`` bind nothing and may be as large as you like.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``sum == total`` and ``lower <= share <= upper`` element-wise.

    Raises
    ------
    InvalidProblemError
        When the bounds cannot hold ``total`` (``sum(lower) > total`` or
        ``sum(upper) < total``), a bound is not a whole number, or ``x`` has
        negative or non-finite entries.
    InvalidProblemTypeError, InvalidOptionError
        For non-numeric ``x`` or bounds (strings, bools, complex numbers), or
        a ``total`` that is not an integer in [0, 2**53].

    Notes
    -----
    The continuous quota ``clip(s * x, lower, upper)`` (water filling: a
    capped worker's excess goes to the others in proportion) is found
    exactly from the sorted breakpoints ``lower_i / x_i`` and ``upper_i / x_i``,
    taken in log space so that weights may span 1e-300..1e300; then
    Hamilton's largest-remainder method: floors, and one extra sample to the
    largest fractional parts among workers still below their cap.
    Remainders within 1e-9 of each other count as equal and go to the lower
    index (an exact tie must not be decided by rounding).  Zero weights get
    their ``lower`` bound, unless every positive weight is capped: then
    the rest is split equally among the zero weights.  O(n log n) time,
    O(n) memory.

    Examples
    --------
    >>> largest_remainder([1.0, 2.0, 3.0], 10).tolist()
    [2, 3, 5]
    >>> largest_remainder([1.0, 1.0, 8.0], 12, lower=2, upper=[12, 12, 6]).tolist()
    [3, 3, 6]
    """
    w = _float_array_iv(x, "x", "numbers")
    if w.ndim != 1 or w.size == 0:
        raise InvalidProblemError(
            f"x must be a non-empty 1-D array, one weight per worker; got shape {w.shape}."
        )
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        i = int(np.flatnonzero(~np.isfinite(w) | (w < 0))[0])
        raise InvalidProblemError(f"x must be finite and >= 0; got {float(w[i])!r} at index {i}.")
    if isinstance(total, (bool, np.bool_)) or not isinstance(total, (int, np.integer)) or not 0 <= total <= COUNT_MAX:
        raise InvalidOptionError(
            f"total must be an integer in [0, {COUNT_MAX}] (2**53, the supported range); got {total!r}."
        )
    lo, hi = _bounds_iv(w.size, int(total), lower, upper)
    return round_to_batch(w, int(total), lo, hi)


def _optimal_integer_allocation(speed, total, lo, hi, knee=0.0, offset=0.0):
    """Exact min-max integer allocation under known time models (the oracle).

    Parameters
    ----------
    speed, total, knee, offset
        As :func:`_equal_finish` (``speed`` the true samples/s).
    lo, hi : ndarray of int64, shape (n,)
        Whole-number bounds with ``sum(lo) <= total <= sum(hi)``.

    Returns
    -------
    b, T
        As :func:`optimal_integer_allocation`, the checked entry point of this kernel.

    Notes
    -----
    Start from the continuous optimum ``T_c`` (a lower bound), give every
    worker the most whole samples it finishes by ``T_c``, then hand the
    missing samples (fewer than n) one at a time to the worker whose next
    sample finishes earliest, or take a surplus back from the latest finisher
    above ``lo`` (which never raises the maximum).  Times are non-decreasing
    in ``b``, so the greedy reaches the least integer maximum.  A heap keeps
    every worker's next finish time: O(n log n) in all.
    """
    speed = np.asarray(speed, dtype=np.float64)
    n = speed.size
    knee = np.broadcast_to(np.asarray(knee, dtype=np.float64), (n,))
    offset = np.broadcast_to(np.asarray(offset, dtype=np.float64), (n,))
    hi = np.minimum(hi, total)  # a share never exceeds the total
    lo_f, hi_f = lo.astype(np.float64), hi.astype(np.float64)
    _, Tc = _fill_to(speed, offset, lo_f, hi_f, total)
    with np.errstate(over="ignore", invalid="ignore"):
        cap = np.floor(speed * Tc * (1.0 + 1e-12) - offset + 1e-9)
    b = np.clip(np.nan_to_num(cap, nan=0.0), lo_f, hi_f).astype(np.int64)
    left = int(total) - int(b.sum())

    def time_of(i, size):  # the same element-wise arithmetic as the vectorised step_time
        return float(_step_time(np.array([size]), speed[i:i + 1], knee[i:i + 1], offset[i:i + 1])[0])

    if left > 0:  # one sample at a time to the earliest next finish (ties: lowest index)
        nxt = _step_time(b + 1, speed, knee, offset)
        heap = [(float(nxt[i]), int(i)) for i in np.flatnonzero(b < hi)]
        heapq.heapify(heap)
        while left > 0:
            _, i = heapq.heappop(heap)
            b[i] += 1
            left -= 1
            if b[i] < hi[i]:
                heapq.heappush(heap, (time_of(i, b[i] + 1), i))
    elif left < 0:  # surplus (flat regime): drop from the latest finisher above lo
        cur = _step_time(b, speed, knee, offset)
        heap = [(-float(cur[i]), int(i)) for i in np.flatnonzero(b > lo)]
        heapq.heapify(heap)
        while left < 0:
            _, i = heapq.heappop(heap)
            b[i] -= 1
            left += 1
            if b[i] > lo[i]:
                heapq.heappush(heap, (-time_of(i, b[i]), i))
    T = float(np.max(_step_time(b, speed, knee, offset)))
    return b, T


# ------------------------------------------------------------------ public, validating wrappers
def _total_iv(total):
    if isinstance(total, (bool, np.bool_)) or not isinstance(total, (int, np.integer)) or not 0 <= total <= COUNT_MAX:
        raise InvalidOptionError(
            f"total must be an integer in [0, {COUNT_MAX}] (2**53, the supported range); got {total!r}."
        )
    return int(total)


def _curve_iv(speed, knee, offset, positive=True):
    """Validate a time model: speeds (n,) finite and > 0 (>= 0 unless ``positive``), knee/offset >= 0."""
    v = _float_array_iv(speed, "speed", "samples/s")
    if v.ndim != 1 or v.size == 0:
        raise InvalidProblemError(f"speed must be a non-empty 1-D array, one per worker; got shape {v.shape}.")
    bad = ~np.isfinite(v) | ((v <= 0) if positive else (v < 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidProblemError(
            f"speed must be finite and {'> 0' if positive else '>= 0'} samples/s; got {float(v[i])!r} at index {i}."
        )
    check_real_range("speed", v, error=InvalidProblemError, fix="Rescale the unit of time.")
    out = [v]
    for name, value in (("knee", knee), ("offset", offset)):
        a = _float_array_iv(value, name, "samples", scalar_ok=True)
        if a.ndim > 1 or (a.ndim == 1 and a.shape != v.shape):
            raise InvalidProblemError(
                f"{name} must be one number or one per worker, shape {v.shape}; got shape {a.shape}."
            )
        if (~np.isfinite(a) | (a < 0)).any():
            raise InvalidProblemError(f"{name} must be finite and >= 0 samples; got {value!r:.80}.")
        check_real_range(name, a, error=InvalidProblemError, fix="Give it in samples.")
        out.append(np.broadcast_to(a, v.shape))
    return out


def step_time(b, speed, knee=0.0, offset=0.0):
    """Time of batch ``b`` under the piecewise-linear model.

    Parameters
    ----------
    b : array_like of float, shape (n,)
        Batch sizes (samples), finite and >= 0.
    speed : array_like of float, shape (n,)
        Samples/s above the knee, finite and >= 0; a speed of 0 gives ``inf``.
    knee, offset : float or array_like of float, shape (n,)
        See the module docstring; finite and >= 0.

    Returns
    -------
    ndarray of float64, shape (n,)

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        Wrong shapes, non-real, negative, non-finite or out-of-range entries.
    """
    v, k, o = _curve_iv(speed, knee, offset, positive=False)
    bb = _float_array_iv(b, "b", "a batch size")
    if bb.shape != v.shape:
        raise InvalidProblemError(f"b must have one batch size per worker, shape {v.shape}; got shape {bb.shape}.")
    if (~np.isfinite(bb) | (bb < 0)).any():
        raise InvalidProblemError(f"b must hold finite batch sizes >= 0; got {b!r:.80}.")
    check_real_range("b", bb, error=InvalidProblemError, fix="Give batch sizes in samples.")
    return _step_time(bb, v, k, o)


def equal_finish(speed, total, lo, hi, knee=0.0, offset=0.0):
    """Continuous batch sizes that minimise the slowest worker's time.

    Parameters
    ----------
    speed : array_like of float, shape (n,)
        Samples/s above the knee (> 0, finite).
    total : int
        Global batch B, in [0, 2**53].
    lo, hi : int or array_like, shape (n,)
        Per-worker whole-number bounds with ``sum(lo) <= total <= sum(hi)``; ``hi`` may be inf.
    knee, offset : float or array_like of float, shape (n,)

    Returns
    -------
    b : ndarray of float64, shape (n,)
        ``sum(b) == total`` up to rounding, ``lo <= b <= hi``.
    T : float
        The model's least iteration time ``max_i t_i(b_i)``.

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError, InvalidOptionError
        As :func:`largest_remainder` for ``total`` and the bounds; speeds
        must be finite and > 0, knee and offset finite and >= 0.

    Notes
    -----
    See :func:`_equal_finish` (the unchecked kernel the balancer calls).
    """
    v, k, o = _curve_iv(speed, knee, offset)
    total = _total_iv(total)
    _bounds_iv(v.size, total, lo, hi)
    lo_f = np.array(np.broadcast_to(np.asarray(lo, dtype=np.float64), v.shape))
    hi_f = np.array(np.broadcast_to(np.asarray(hi, dtype=np.float64), v.shape))
    return _equal_finish(v, total, lo_f, hi_f, k, o)


def optimal_integer_allocation(speed, total, lo, hi, knee=0.0, offset=0.0):
    """Exact min-max integer allocation under known time models (the oracle).

    Parameters
    ----------
    speed : array_like of float, shape (n,)
        True samples/s above the knee, > 0 and finite.
    total : int
        In [0, 2**53].
    lo, hi : int or array_like of int, shape (n,)
        Whole-number bounds, ``sum(lo) <= total <= sum(hi)``; ``hi`` may be inf.
    knee, offset : float or array_like of float, shape (n,)

    Returns
    -------
    b : ndarray of int64, shape (n,)
    T : float
        ``max_i t_i(b_i)``, the least possible over integer allocations.

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError, InvalidOptionError
        As :func:`equal_finish`.

    Notes
    -----
    See :func:`_optimal_integer_allocation` (the unchecked kernel).
    """
    v, k, o = _curve_iv(speed, knee, offset)
    total = _total_iv(total)
    lo_f, hi_f = _bounds_iv(v.size, total, lo, hi)
    return _optimal_integer_allocation(v, total, lo_f.astype(np.int64), hi_f.astype(np.int64), k, o)
