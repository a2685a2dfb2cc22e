"""Shared validators for options of the public entry points (private)."""

import numbers

import numpy as np

from .errors import InvalidOptionError

__all__ = ["check_choice", "check_seed", "check_options", "check_positive_int", "check_time_limit"]


def check_choice(name, value, choices):
    """Return ``value`` (lower-cased when a string) if it is one of ``choices``, else raise."""
    key = value.lower() if isinstance(value, str) else value
    if key not in choices:
        raise InvalidOptionError(
            f"{name}={value!r} is not valid; choose one of {', '.join(repr(c) for c in choices)}."
        )
    return key


def check_seed(seed):
    """``None`` or an integer in [0, 2**64); returns it as a Python int or None."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise InvalidOptionError(f"seed must be None or a non-negative integer; got {seed!r}.")
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise InvalidOptionError(f"seed must lie in [0, 2**64); got {seed}.")
    return seed


def check_positive_int(name, value, allow_none=True, maximum=None):
    """``value`` as a positive int (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidOptionError(f"{name} must be a positive integer{' or None' if allow_none else ''}; got {value!r}.")
    if maximum is not None and value > maximum:
        raise InvalidOptionError(f"{name} must be at most {maximum}; got {value!r}.")
    return int(value)


def check_time_limit(value):
    """``None`` or a positive finite number of seconds."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise InvalidOptionError(
            f"time_limit must be None or a positive, finite number of seconds; got {value!r}."
        )
    return float(value)


def check_options(method, options, allowed):
    """Reject keyword options that ``method`` does not take, listing the ones it does."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        valid = ", ".join(sorted(allowed)) or "none"
        raise InvalidOptionError(
            f"method={method!r} does not take option(s) {', '.join(unknown)}; its options are: {valid}."
        )
