"""Shared validators for options of the public entry points (private)."""

import decimal
import math
import numbers

import numpy as np

from .errors import InvalidOptionError, InvalidProblemError

__all__ = [
    "check_choice", "check_seed", "check_options", "check_positive_int", "check_time_limit",
    "REAL_MIN", "REAL_MAX", "COUNT_MAX", "float64_copy", "check_real_range", "exact_int_sum", "check_count_total",
    "is_real_scalar", "as_array", "as_real_array", "as_bool_array", "nested_holds",
]


def check_choice(name, value, choices):
    """``value`` lower-cased, if it is one of the (lower-case string) ``choices``; else raise.

    The one rule for every closed-set option of the package (methods, backends, forms, policies,
    ...): choices are case-insensitive strings (``"Cython"`` is ``"cython"``), and the canonical
    lower-case spelling is returned.  Anything but a string (None, a number, an array) is invalid.

    Raises
    ------
    InvalidOptionError
        ``"<name>=<value> is not valid; choose one of <choices>."``
    """
    key = value.lower() if isinstance(value, str) else None
    if key not in choices:
        raise InvalidOptionError(
            f"{name}={value!r} is not valid; choose one of {', '.join(repr(c) for c in choices)}."
        )
    return key


def check_seed(seed, entropy=False):
    """``None`` or an integer in [0, 2**64); returns it as a Python int, or None.

    The one seed rule of the package: a seed is None (unseeded) or an integer in [0, 2**64)
    (Python or numpy, not a bool).  ``None`` is returned as None, for callers that hand it on to
    numpy or keep it as "unseeded"; with ``entropy=True`` (callers whose kernels need an integer
    seed, e.g. the category samplers) it becomes a fresh 64-bit seed drawn from OS entropy.
    """
    if seed is None:
        return int(np.random.SeedSequence().entropy) & (2**64 - 1) if entropy else None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise InvalidOptionError(f"seed must be None or a non-negative integer; got {seed!r}.")
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise InvalidOptionError(f"seed must lie in [0, 2**64); got {seed}.")
    return seed


def check_positive_int(name, value, allow_none=True, maximum=None, fix=""):
    """``value`` as a positive int (or None when allowed); ``fix``, when given, ends the message."""
    tail = f" {fix}" if fix else ""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidOptionError(
            f"{name} must be a positive integer{' or None' if allow_none else ''}; got {value!r}.{tail}"
        )
    if maximum is not None and value > maximum:
        raise InvalidOptionError(f"{name} must be at most {maximum}; got {value!r}.{tail}")
    return int(value)


def check_time_limit(value, name="time_limit"):
    """``None`` or a positive finite number of seconds, returned as a float.

    Python and numpy integers and floats are accepted; bools, complex numbers,
    strings, NaN, infinities and integers too large for a float are rejected
    (``None`` means no limit).  Callers clamp very large limits to what their
    solver accepts.
    """
    if value is None:
        return None
    seconds = math.nan
    if not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real):
        try:
            seconds = float(value)
        except (OverflowError, TypeError, ValueError):
            seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidOptionError(
            f"{name} must be None or a positive, finite number of seconds; got {value!r}. "
            "Pass None for no limit."
        )
    return seconds


def check_options(method, options, allowed):
    """Reject keyword options that ``method`` does not take, listing the ones it does."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        valid = ", ".join(sorted(allowed)) or "none"
        raise InvalidOptionError(
            f"method={method!r} does not take option(s) {', '.join(unknown)}; its options are: {valid}."
        )



# ------------------------------------------------------------------ numeric range
#: Supported magnitude of every non-zero real input (throughputs, speeds, iterations,
#: batches, gradient sizes, bandwidths).  Inside it every derived quantity of the
#: model (work, JCT, valuations ``w rho / X**2``, sums over jobs) stays far inside
#: float64's range, so no method overflows or underflows; outside it, validators
#: reject the input and say how to rescale (e.g. another unit of time or size).
REAL_MIN = 1e-30
REAL_MAX = 1e30
#: Largest integer count (workers, samples, sizes, and their sums) accepted: sums of
#: such counts are exact in int64 and in float64.
COUNT_MAX = 2**53


def _at_index(idx):
    """`` at index i`` (``i`` a tuple of indices past one dimension) for an error message; "" for a scalar's ``()``."""
    idx = tuple(int(i) for i in idx)
    return "" if not idx else f" at index {idx[0] if len(idx) == 1 else idx}"


def check_real_range(name, arr, error=InvalidOptionError, fix="Rescale the units (e.g. per hour instead of per second).",
                     lo=REAL_MIN, hi=REAL_MAX):
    """Raise ``error`` unless every non-zero entry of ``arr`` has magnitude in [lo, hi].

    ``lo, hi`` default to the supported range [REAL_MIN, REAL_MAX] of user inputs;
    derived arrays (e.g. a Problem's ``work``) may pass a wider one.  NaN and
    infinities are outside every range.  The message names ``name``,
    the first offending value and its index, the range and ``fix``.  Returns
    ``arr`` unchanged.
    """
    values = np.asarray(arr, dtype=np.float64)
    a = np.abs(values)
    bad = (a != 0) & ~((a >= lo) & (a <= hi))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()
        raise error(
            f"{name} must have a magnitude in [{lo:g}, {hi:g}] where it is not 0 (the supported range); "
            f"got {float(values[idx])!r}{_at_index(idx)}. {fix}"
        )
    return arr


def exact_int_sum(values):
    """Sum of integer ``values`` as a Python int: never wraps, whatever the dtype."""
    return sum(int(v) for v in np.asarray(values).ravel().tolist())


def check_count_total(name, values, limit=COUNT_MAX, error=InvalidOptionError, fix=""):
    """Exact sum of non-negative integer ``values``; raise ``error`` when it exceeds ``limit``.

    Use before any int64 arithmetic on the sum (``np.repeat``, workspace sizes,
    offsets): an int64 sum of large counts wraps silently.
    """
    total = exact_int_sum(values)
    if total > limit:
        raise error(f"{name} sums to {total}; at most {limit} is supported. {fix}".rstrip())
    return total


# ------------------------------------------------------------------ nested sequences
def nested_holds(value, types):
    """True when the list or tuple ``value``, nested to any depth, holds an instance of ``types``.

    Only lists and tuples are entered.  The walk keeps its own stack instead
    of recursing, so a list nested 100,000 levels deep is checked like a flat
    one (the recursive form raised ``RecursionError`` at a few thousand), and
    it enters each container once, so a list that holds itself ends too.
    Used where numpy would silently read an element (``True`` as 1) in a
    nested list it has already accepted.
    """
    stack, entered = [value], set()
    while stack:
        seq = stack.pop()
        if id(seq) in entered:
            continue
        entered.add(id(seq))
        for v in seq:
            if isinstance(v, types):
                return True
            if isinstance(v, (list, tuple)):
                stack.append(v)
    return False


# ------------------------------------------------------------------ real numbers
def _is_real_type(t):
    """True for real-number element types; bools, complex, strings and the rest are not."""
    return issubclass(t, (numbers.Real, decimal.Decimal)) and not issubclass(t, (bool, np.bool_))


def is_real_scalar(value):
    """True when ``value`` is one real number: int, float, numpy integer or floating, or a 0-d array of one.

    Bools (``True`` is not 1.0 here), complex numbers, strings, arrays of
    more than zero dimensions and integers too large for a float64 are not.
    """
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "iuf":
            return False
    elif not _is_real_type(type(value)):
        return False
    try:
        float(value)  # an integer beyond float64 is not one
    except (OverflowError, TypeError, ValueError):
        return False
    return True


def as_array(value, name, what, tail="", error=InvalidOptionError):
    """``np.asarray(value)``; a string, or what numpy cannot turn into an array, raises ``error``.

    The first step of every array input: the message says ``name`` must be
    ``what``, names what was received, and ends with ``tail`` (the fix,
    with its leading space).  A string is refused before numpy sees it (numpy
    would make a 0-d string array of it).
    """
    if isinstance(value, (str, bytes)):
        raise error(f"{name} must be {what}; got the string {value!r}.{tail}")
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise error(
            f"{name} must be {what}; got {type(value).__name__} that numpy cannot turn into an array ({exc}).{tail}"
        ) from None


def as_real_array(value, name, what="numbers", shape_text="", error=InvalidOptionError):
    """``value`` as a numpy array whose every element is a real number; raise ``error`` otherwise.

    Rejects, naming the first offending element and its index: strings,
    bytes, bools (also a Python ``True`` hidden in a list of numbers, which
    numpy would silently cast to 1), complex numbers (numpy would drop the
    imaginary part), ``None`` and any other object.  The returned array keeps
    its dtype (integer, unsigned, float or object of real numbers) so callers
    can compare large integers exactly before converting to float.
    ``what`` completes "``name`` must be ..."; ``shape_text`` says what to pass.
    """
    tail = f" Pass {shape_text}." if shape_text else ""
    raw = as_array(value, name, what, tail, error)
    kind = raw.dtype.kind
    nested = isinstance(value, (list, tuple))
    if kind in "iuf" and not nested:
        return raw
    if raw.size == 0:  # nothing to check; an empty complex or string array must not warn when cast
        return np.empty(raw.shape, dtype=np.float64)
    if kind == "O" or nested:
        scan = raw if kind == "O" else np.asarray(value, dtype=object)
        flat = scan.ravel().tolist()
        if all(_is_real_type(t) for t in set(map(type, flat))):
            return raw
        j = next(j for j, v in enumerate(flat) if not _is_real_type(type(v)))
        idx, bad = np.unravel_index(j, scan.shape), flat[j]
    else:
        idx, bad = np.unravel_index(0, raw.shape), raw.ravel()[0].item()
    kind_text = (
        "None" if bad is None
        else "a bool" if isinstance(bad, (bool, np.bool_))
        else "a complex number" if isinstance(bad, (complex, np.complexfloating))
        else "a string" if isinstance(bad, (str, bytes, np.str_, np.bytes_))
        else f"a {type(bad).__name__}"
    )
    got = kind_text if bad is None else f"{kind_text}, {bad!r}"
    raise error(f"{name} must be {what} (real, not bool or complex); got {got}{_at_index(idx)}.{tail}")


# ------------------------------------------------------------------ bools
def as_bool_array(value, name, shape_text="", error=InvalidOptionError):
    """``value`` as a numpy bool array whose every element is a bool; raise ``error`` otherwise.

    The element rule of :func:`as_real_array`, turned round: only Python
    ``bool`` and ``numpy.bool_`` elements are accepted.  Integers (``1`` is not
    ``True`` here), floats, strings (``"False"`` would be truthy), ``None`` and
    any other object are rejected, naming the first offending element and its
    index.  ``shape_text`` says what to pass.
    """
    tail = f" Pass {shape_text}." if shape_text else ""
    raw = as_array(value, name, "bools (True/False)", tail, error)
    nested = isinstance(value, (list, tuple))
    if (raw.dtype.kind == "b" and not nested) or raw.size == 0:
        return raw.astype(bool)
    scan = raw if raw.dtype.kind == "O" else np.asarray(value, dtype=object)
    flat = scan.ravel().tolist()
    ok = [isinstance(v, (bool, np.bool_)) for v in flat]
    if all(ok):
        return np.array(flat, dtype=bool).reshape(scan.shape)
    j = ok.index(False)
    idx, bad = np.unravel_index(j, scan.shape), flat[j]
    got = "None" if bad is None else f"{type(bad).__name__} {bad!r}"
    raise error(f"{name} must be bools (True/False), not numbers or strings; got {got}{_at_index(idx)}.{tail}")


def float64_copy(raw, name, fix):
    """A float64 copy of the real array ``raw``; an integer too large for a float64 is an error.

    Always a copy (``np.asarray`` would return a float64 input itself, and callers freeze or
    modify what they get while the caller's own array must stay as it was).  ``fix`` ends the
    message.
    """
    try:
        return np.array(raw, dtype=np.float64)
    except OverflowError:
        raise InvalidProblemError(
            f"{name} holds an integer too large for a float64 (the supported magnitude is "
            f"{REAL_MIN:g}..{REAL_MAX:g}). {fix}"
        ) from None
