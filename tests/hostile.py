"""Hypothesis strategies for hostile numbers, shared by the fuzzing tests.

Every public entry point is fed values a typo, an overflow or an attacker
produces: numbers near 0 and near float64's limits, integers around 2**62-2**64
(where int64 sums wrap), NaN and infinities, bools, complex numbers, numeric
strings and ``None``.  The property checked by the tests that use these is
always the same: *a valid result that passes the project's own certificate
checks, or a* :class:`hetplace.HetplaceError` -- never another exception, a
signal, a hang (pytest-timeout guards each test) or a silently wrong answer.

Each fuzzing test (decorated with :func:`fuzz_given` instead of ``@given``) runs
twice: with ``FAST_EXAMPLES`` examples in the default run (env
``HETPLACE_FUZZ_FAST``, default 10) and with ``FUZZ_EXAMPLES`` under the
``fuzz`` mark (``python -m pytest -m fuzz``; env ``HETPLACE_FUZZ_EXAMPLES``,
default 100, 2-4 times the budget the whole suite ran before; set it to thousands for a long campaign).
"""

import functools
import inspect
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = [
    "FAST_EXAMPLES", "FUZZ_EXAMPLES", "FUZZ_BUDGETS", "FUZZ_SETTINGS", "fuzz_given", "EDGE_FLOATS", "EDGE_INTS",
    "WRONG_KINDS", "hostile_scalar", "mostly_ordinary", "hostile_vector", "hostile_matrix",
]

#: Examples per fuzzing test in the default (fast) run (env ``HETPLACE_FUZZ_FAST``).
FAST_EXAMPLES = int(os.environ.get("HETPLACE_FUZZ_FAST", "10"))
#: Examples per fuzzing test under ``-m fuzz`` (env ``HETPLACE_FUZZ_EXAMPLES``).
FUZZ_EXAMPLES = int(os.environ.get("HETPLACE_FUZZ_EXAMPLES", "100"))
#: The two budgets as pytest parameters: ``fast`` in the default run, ``fuzz`` marked
#: (with a timeout that grows with the budget: 6 s per example, at least 10 minutes).
FUZZ_BUDGETS = [
    pytest.param(FAST_EXAMPLES, id="fast"),
    pytest.param(FUZZ_EXAMPLES, id="fuzz", marks=[pytest.mark.fuzz, pytest.mark.timeout(max(600, 6 * FUZZ_EXAMPLES))]),
]

#: Settings for every fuzzing test: no deadline (first calls compile); derandomized on CI.
FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def fuzz_given(*strategies, **kw_strategies):
    """``@given(...)`` under :data:`FUZZ_SETTINGS`, run once per budget of :data:`FUZZ_BUDGETS`.

    The test gets a ``fuzz_budget`` parameter (ids ``fast`` and ``fuzz``); its other
    parameters (pytest's ``parametrize`` arguments and fixtures) pass through.
    """

    def decorate(test):
        variants = {}

        def variant(budget):
            if budget not in variants:
                variants[budget] = settings(FUZZ_SETTINGS, max_examples=budget)(
                    given(*strategies, **kw_strategies)(test))
            return variants[budget]

        outer = inspect.signature(variant(FAST_EXAMPLES))  # what @given leaves for pytest to fill

        @functools.wraps(test)
        def run(fuzz_budget, **kwargs):
            variant(fuzz_budget)(**kwargs)

        run.__dict__.pop("hypothesis_explicit_examples", None)  # @example belongs to the variants' @given
        budget = inspect.Parameter("fuzz_budget", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        run.__signature__ = outer.replace(parameters=[budget, *outer.parameters.values()])
        return pytest.mark.parametrize("fuzz_budget", FUZZ_BUDGETS)(run)

    return decorate


#: Real numbers at the edges of float64 and of the supported range.
EDGE_FLOATS = [
    0.0, -0.0, 5e-324, 1e-310, 1e-300, 1e-200, 1e-31, 1e-30, 1e-29, 1e-6, 0.5, 1.0, 2.0, 3.0, 64.0,
    1e6, 1e29, 1e30, 1e31, 1e200, 1e300, 1.7976931348623157e308,
    -1.0, -1e-300, -1e300, float("nan"), float("inf"), -float("inf"),
]
#: Integers where int64 / float64 arithmetic breaks.
EDGE_INTS = [
    0, 1, 2, 3, 7, -1, -(2**63), 2**31, 2**32, 2**53, 2**53 + 1, 2**62, 2**62 + 1, 2**63 - 1, 2**63,
    2**64 - 1, 2**64, 10**30,
]
#: Values of the wrong kind that numpy would convert silently.
WRONG_KINDS = [True, False, 1 + 2j, 3j, "40", "1e3", b"1", None, np.float32(2.0), np.int8(3), np.uint64(2**64 - 1)]

hostile_scalar = st.one_of(
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(EDGE_INTS),
    st.sampled_from(WRONG_KINDS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**65), max_value=2**65),
)

#: Mostly ordinary positive numbers, sometimes hostile.
mostly_ordinary = st.one_of(
    st.floats(min_value=0.5, max_value=500.0, allow_nan=False),
    st.integers(min_value=1, max_value=64),
    hostile_scalar,
)


def hostile_vector(n, elements=mostly_ordinary):
    """Lists of ``n`` values (sometimes of another length) from ``elements``."""
    return st.one_of(
        st.lists(elements, min_size=n, max_size=n),
        st.lists(elements, min_size=0, max_size=n + 2),
        hostile_scalar,
    )


def hostile_matrix(rows, cols, elements=mostly_ordinary):
    """``rows`` x ``cols`` nested lists (sometimes ragged or of another shape)."""
    return st.one_of(
        st.lists(st.lists(elements, min_size=cols, max_size=cols), min_size=rows, max_size=rows),
        st.lists(st.lists(elements, min_size=0, max_size=cols + 1), min_size=0, max_size=rows + 1),
        hostile_scalar,
    )


def deeply_nested(depth, leaf=1.0):
    """``[[...[leaf]...]]``: ``leaf`` in a list nested ``depth`` levels deep (built without recursion)."""
    value = [leaf]
    for _ in range(depth - 1):
        value = [value]
    return value


def self_containing():
    """A list that holds itself (``a = [1.0]; a.append(a)``): no walk over it may recurse or loop."""
    value = [1.0]
    value.append(value)
    return value


#: Structures nested beyond Python's recursion limit (default 1000) and numpy's 64 dimensions:
#: an entry point must reject them with a HetplaceError, never a RecursionError.
DEEP_STRUCTURES = [deeply_nested(5_000), deeply_nested(100_000), deeply_nested(5_000, True), self_containing(),
                   [1.0, deeply_nested(3_000)], (deeply_nested(70),)]
