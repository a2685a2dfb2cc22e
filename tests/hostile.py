"""Hypothesis strategies for hostile numbers, shared by the fuzzing tests.

Every public entry point is fed values a typo, an overflow or an attacker
produces: numbers near 0 and near float64's limits, integers around 2**62-2**64
(where int64 sums wrap), NaN and infinities, bools, complex numbers, numeric
strings and ``None``.  The property checked by the tests that use these is
always the same: *a valid result that passes the project's own certificate
checks, or a* :class:`hetplace.HetplaceError` -- never another exception, a
signal, a hang (pytest-timeout guards each test) or a silently wrong answer.

The number of examples per test is ``HETPLACE_FUZZ_EXAMPLES`` (default 25, so
the CI run stays short); set it to thousands for a long run on demand.
"""

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Examples per fuzzing test (env ``HETPLACE_FUZZ_EXAMPLES``).
FUZZ_EXAMPLES = int(os.environ.get("HETPLACE_FUZZ_EXAMPLES", "25"))

#: Settings for every fuzzing test: bounded budget, no deadline (first calls compile).
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("CI") == "true",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

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
