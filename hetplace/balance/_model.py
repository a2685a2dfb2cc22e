"""Time models, equal-finish allocation and largest-remainder rounding (MODEL.md section 5).

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

import numpy as np

from ..errors import InvalidOptionError, InvalidProblemError, InvalidProblemTypeError

__all__ = [
    "largest_remainder",
    "step_time",
    "equal_finish",
    "optimal_integer_allocation",
]


def step_time(b, speed, knee=0.0, offset=0.0):
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


def _level(speed, offset, lo, hi, total):
    """Smallest ``T`` with ``sum_i clip(speed_i T - offset_i, lo_i, hi_i) >= total``.

    The sum is piecewise linear and non-decreasing in ``T`` with breakpoints
    ``(lo_i + offset_i) / speed_i`` and ``(hi_i + offset_i) / speed_i``;
    evaluate it at every breakpoint, pick the bracketing pair and solve the
    linear piece exactly.  Workers with ``speed_i == 0`` stay at ``lo_i``.
    """
    live = speed > 0
    sp = np.where(live, speed, 1.0)
    with np.errstate(over="ignore"):
        b1 = ((lo + offset) / sp)[live]
        b2 = ((hi + offset) / sp)[live]
    bp = np.concatenate((b1, b2))
    bp = np.unique(bp[np.isfinite(bp)])
    if bp.size == 0:
        return 0.0
    vals = np.clip(np.where(live, speed, 0.0)[None, :] * bp[:, None] - offset[None, :],
                   lo[None, :], hi[None, :]).sum(axis=1)
    k = int(np.searchsorted(vals, total - 1e-9 * max(1.0, total), side="left"))
    if k == 0:
        return float(bp[0])
    if k < bp.size:
        t0, t1, f0, f1 = bp[k - 1], bp[k], vals[k - 1], vals[k]
        return float(t0 + (t1 - t0) * (total - f0) / (f1 - f0)) if f1 > f0 else float(t1)
    # beyond the last breakpoint only uncapped workers still grow
    slope = np.where(live & ~np.isfinite(hi), speed, 0.0).sum()
    t0, f0 = bp[-1], vals[-1]
    return float(t0 + (total - f0) / slope) if slope > 0 else float(t0)


def _fill_to(speed, offset, lo, hi, total):
    """``clip(speed T - offset, lo, hi)`` at the level ``T`` that sums to ``total``."""
    T = _level(speed, offset, lo, hi, total)
    b = np.clip(speed * T - offset, lo, hi)
    return b, T


def equal_finish(speed, total, lo, hi, knee=0.0, offset=0.0):
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
    b : ndarray of float64, shape (n,)
        ``sum(b) == total`` up to rounding, ``lo <= b <= hi``.
    T : float
        The model's least iteration time ``max_i t_i(b_i)``.

    Notes
    -----
    With ``b_i(T) = clip(speed_i T - offset_i, lo_i, hi_i)`` the capacity
    ``sum_i b_i(T)`` is piecewise linear and non-decreasing in ``T``; the
    equal-finish point of MODEL.md section 5 is where it reaches ``total``,
    found exactly from the sorted breakpoints.  A knee does not change this
    allocation: below the knee time is flat, so the optimum is
    ``max(T, max_i t_i(lo_i))`` and every worker meets it.
    """
    speed = np.asarray(speed, dtype=np.float64)
    knee = np.broadcast_to(np.asarray(knee, dtype=np.float64), speed.shape)
    offset = np.broadcast_to(np.asarray(offset, dtype=np.float64), speed.shape)
    b, _ = _fill_to(speed, offset, lo, hi, total)
    T = float(np.max(step_time(b, speed, knee, offset)))
    return b, T


def _round_feasible(x, total, lo, hi):
    """Largest-remainder rounding of a feasible continuous ``x`` (int64 bounds, no checks)."""
    base = np.clip(np.floor(x + 1e-9).astype(np.int64), lo, hi)
    frac = x - base
    left = int(total - base.sum())
    idx = np.arange(x.size)
    if left > 0:
        order = np.lexsort((idx, -frac))  # largest remainder first, ties to the lower index
        order = order[base[order] < hi[order]]
        base[order[:left]] += 1
        left = int(total - base.sum())
        while left > 0:  # only after extreme float error: fill any room left
            room = np.flatnonzero(base < hi)
            take = min(left, room.size)
            base[room[:take]] += 1
            left -= take
    elif left < 0:
        order = np.lexsort((idx, frac))  # smallest remainder gives back first
        order = order[base[order] > lo[order]]
        base[order[:-left]] -= 1
        left = int(total - base.sum())
        while left < 0:
            room = np.flatnonzero(base > lo)
            take = min(-left, room.size)
            base[room[:take]] -= 1
            left += take
    return base


def _project_proportional(x, total, lo, hi):
    """Scale ``x`` by one factor and clip to [lo, hi] so that it sums to ``total``."""
    x = np.maximum(x, 0.0)
    if not np.any(x > 0):
        x = np.ones_like(x)
    x = x / x.max()  # scale-free: keeps the breakpoints finite
    b, _ = _fill_to(x, np.zeros_like(x), lo, hi, total)
    return b


def _int_bounds(lo, hi):
    """int64 versions of float bounds (inf caps become a huge integer)."""
    return lo.astype(np.int64), np.where(np.isfinite(hi), hi, 2.0**62).astype(np.int64)


def round_to_batch(x, total, lo, hi):
    """Project a continuous target onto the bounds and round it (no validation).

    Parameters
    ----------
    x : ndarray of float64, shape (n,)
        Non-negative target (proportional weights or a continuous batch).
    total : int
    lo, hi : ndarray of float64, shape (n,)
        Feasible bounds (``hi`` may hold inf).

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    y = _project_proportional(x, total, lo, hi)
    ilo, ihi = _int_bounds(lo, hi)
    return _round_feasible(y, total, ilo, ihi)


def _bounds_iv(n, total, lower, upper):
    """Validate the bounds of :func:`largest_remainder`; return float64 arrays."""
    try:
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,))
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,))
    except (TypeError, ValueError):
        raise InvalidProblemTypeError(
            f"lower and upper must be numbers, one for all or one per worker ({n}); "
            f"got lower={lower!r}, upper={upper!r}."
        ) from None
    if np.any(~np.isfinite(lo)) or np.any(lo != np.round(lo)) or np.any(lo < 0):
        raise InvalidProblemError(
            f"lower must hold non-negative whole numbers; got {lo.tolist()}. Pass the minimum batch as an integer."
        )
    if np.any(np.isnan(hi)) or np.any((hi != np.round(hi)) & np.isfinite(hi)):
        raise InvalidProblemError(
            f"upper must hold whole numbers or inf; got {hi.tolist()}. Pass memory caps in samples."
        )
    if np.any(hi < lo):
        i = int(np.flatnonzero(hi < lo)[0])
        raise InvalidProblemError(
            f"upper[{i}] = {hi[i]:g} is below lower[{i}] = {lo[i]:g}: every cap must allow the "
            "minimum batch. Raise the cap or lower the minimum."
        )
    if lo.sum() > total:
        raise InvalidProblemError(
            f"total = {total} cannot give every worker its minimum: sum(lower) = {lo.sum():g}. "
            "Lower the minimum batch or raise the total."
        )
    if hi.sum() < total:
        raise InvalidProblemError(
            f"total = {total} does not fit under the caps: sum(upper) = {hi.sum():g}. "
            "Raise the caps, add workers or lower the total."
        )
    return np.array(lo), np.array(hi)


def _float_array_iv(value, name, what):
    """``value`` as a float64 array, or a clear error naming ``name`` (one ``what`` per worker)."""
    if isinstance(value, (str, bytes)):
        raise InvalidProblemTypeError(f"{name} must be {what}, one per worker; got the string {value!r}.")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidProblemTypeError(
            f"{name} must be {what}, one per worker; got {type(value).__name__} that numpy cannot convert."
        ) from None


def largest_remainder(x, total, lower=1, upper=np.inf):
    """Integer shares proportional to ``x`` that sum to ``total`` within bounds.

    Parameters
    ----------
    x : array_like of float, shape (n,)
        Non-negative weights (predicted speeds, or a continuous target batch);
        only their ratios matter.  All zeros means equal shares.
    total : int
        The exact sum of the shares (the global batch B).
    lower : int or array_like of int, shape (n,), default 1
        Minimum share of every worker (``min_batch``).
    upper : int, inf or array_like, shape (n,), default inf
        Maximum share of every worker (its memory cap in samples).

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
        For non-numeric ``x`` or bounds, or a ``total`` that is not a
        non-negative integer.

    Notes
    -----
    The continuous quota ``clip(s * x, lower, upper)`` is found by bisection
    on the common factor ``s`` (water filling: a capped worker's excess goes
    to the others in proportion), then Hamilton's largest-remainder method:
    floors, and one extra sample to the largest fractional parts (ties to the
    lower index) among workers still below their cap.

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
    if isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 0:
        raise InvalidOptionError(f"total must be a non-negative integer; got {total!r}.")
    lo, hi = _bounds_iv(w.size, int(total), lower, upper)
    return round_to_batch(w, int(total), lo, hi)


def optimal_integer_allocation(speed, total, lo, hi, knee=0.0, offset=0.0):
    """Exact min-max integer allocation under known time models (the oracle).

    Parameters
    ----------
    speed : ndarray of float64, shape (n,)
        True samples/s above the knee, > 0.
    total : int
    lo, hi : ndarray of int64, shape (n,)
        ``sum(lo) <= total <= sum(hi)``.
    knee, offset : float or ndarray of float64, shape (n,)

    Returns
    -------
    b : ndarray of int64, shape (n,)
    T : float
        ``max_i t_i(b_i)``, the least possible over integer allocations.

    Notes
    -----
    Start from the continuous optimum ``T_c`` (a lower bound), give every
    worker the most whole samples it finishes by ``T_c``, then hand the
    missing samples (fewer than n) one at a time to the worker whose next
    sample finishes earliest, or take a surplus back from the latest finisher
    above ``lo`` (which never raises the maximum).  Times are non-decreasing
    in ``b``, so the greedy reaches the least integer maximum.
    """
    speed = np.asarray(speed, dtype=np.float64)
    n = speed.size
    knee = np.broadcast_to(np.asarray(knee, dtype=np.float64), (n,))
    offset = np.broadcast_to(np.asarray(offset, dtype=np.float64), (n,))
    lo_f, hi_f = lo.astype(np.float64), hi.astype(np.float64)
    hi_f = np.where(hi >= 2**62, np.inf, hi_f)
    _, Tc = _fill_to(speed, offset, lo_f, hi_f, total)
    cap = np.floor(speed * Tc * (1.0 + 1e-12) - offset + 1e-9)
    b = np.clip(cap, lo_f, hi_f).astype(np.int64)
    left = int(total - b.sum())
    while left > 0:  # one sample at a time to the earliest next finish
        nxt = np.where(b < hi, step_time(b + 1, speed, knee, offset), np.inf)
        b[int(np.argmin(nxt))] += 1
        left -= 1
    while left < 0:  # surplus (flat regime): drop from the latest finisher above lo
        cur = np.where(b > lo, step_time(b, speed, knee, offset), -np.inf)
        b[int(np.argmax(cur))] -= 1
        left += 1
    T = float(np.max(step_time(b, speed, knee, offset)))
    return b, T
