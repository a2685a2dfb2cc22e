"""Hostile numbers over every public function of hetplace.matching and hetplace.categories.

Property of every entry point: on any input -- values near 0, 1e+-300,
subnormals, 2**62..2**64 and beyond, NaN, +-inf, bools, complex numbers,
strings, None, object arrays, wrong shapes, negative sizes -- the call either
returns a result that passes the project's own certificate checks (capacities,
sizes, allowed pairs, ``is_stable``, the true total JCT, categories valid and
distinct, rank round trips) or raises a :class:`~hetplace.errors.HetplaceError`;
and every backend (python, numba, cython) gives the same answer or the same
error.  Never another exception, a crash, a hang or a giant allocation.

Budget: :func:`hostile.fuzz_given` -- ``HETPLACE_FUZZ_FAST`` examples per entry point in the
default run (default 10), ``HETPLACE_FUZZ_EXAMPLES`` under ``-m fuzz`` (default 100); each
test also has a timeout.  Run with
``--hypothesis-show-statistics`` to see the outcomes per entry point.
"""

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import event
from hypothesis import strategies as st

from hetplace import categories as cat
from hetplace.categories import (
    count_categories,
    enumerate_categories,
    rank_category,
    sample_categories,
    unrank_category,
)
from hetplace.errors import HetplaceError
from hetplace.matching import deferred_acceptance, is_stable, market_category

from hostile import fuzz_given

try:
    from hetplace._core import _market as _cy_match  # noqa: F401
    from hetplace._core._registry import unavailable

    HAVE_CYTHON = unavailable("cython") is None  # compiled, not the single sources' .py imported in their place
except ImportError:  # pragma: no cover - extensions not built
    HAVE_CYTHON = False

BACKENDS = ["python", "numba"] + (["cython"] if HAVE_CYTHON else [])
#: the samplers' memory budget during the fuzz run: accepted cases stay small and
#: fast (the property holds for any budget; the default 4 GiB is tested elsewhere)
FUZZ_MEMORY_MAX = 1 << 24

# ----------------------------------------------------------------------------
# Hostile elements and containers
# ----------------------------------------------------------------------------

EDGE_REALS = [0.0, -0.0, 5e-324, 1e-310, 1e-300, 1e-150, 1e-61, 1e-60, 1e-31, 1e-30, 0.5, 1.0, 3.0,
              1e30, 1e31, 1e60, 1e61, 1e90, 1e100, 1e101, 1e150, 1e151, 1e300, 1.7976931348623157e308,
              -1.0, -1e-300, -1e300, math.inf, -math.inf, math.nan]
EDGE_INTS = [0, 1, 2, 3, -1, -2, 2**31, 2**53, 2**53 + 1, 2**62, 2**62 + 1, 2**63 - 1, 2**63, 2**64 - 1,
             2**64, 2**65, -2**63, -2**64, 10**30]
ODD = [True, False, 1j, 1 + 0j, None, "1", b"2", 2.5, math.nan, math.inf, np.int64(3), np.uint64(2**63),
       np.float32(1.5), np.bool_(True)]

benign_real = st.one_of(st.floats(0.0, 10.0), st.sampled_from([0.0, 1.0, 2.0]))
hostile_real = st.one_of(st.sampled_from(EDGE_REALS), st.floats(allow_nan=True, allow_infinity=True),
                         st.sampled_from(EDGE_INTS), st.sampled_from(ODD))
real_elem = st.one_of(benign_real, benign_real, benign_real, hostile_real)

benign_count = st.integers(0, 4)
hostile_count = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-2**66, 2**66), st.sampled_from(ODD))
count_elem = st.one_of(benign_count, benign_count, benign_count, hostile_count)

#: scalars for n_workers / n_jobs / n_samples / rank / limit
small_int = st.integers(-2, 24)
hostile_scalar = st.one_of(small_int, small_int, small_int, st.sampled_from(EDGE_INTS + ODD),
                           st.integers(-2**70, 2**70))


@st.composite
def container(draw, shape, elem, benign=None):
    """An array-like of ``shape`` (sometimes a wrong one) in a drawn container.

    With ``benign`` given, half of the containers are well formed (right shape,
    a list or float/int array of benign elements) so valid results are common.
    """
    if benign is not None and draw(st.booleans()):
        n = int(np.prod(shape))
        flat = draw(st.lists(benign, min_size=n, max_size=n))
        form = draw(st.sampled_from(["list", "float", "int" if all(isinstance(x, int) for x in flat) else "float"]))
        arr = np.array(flat, dtype=object).reshape(shape)
        return arr.tolist() if form == "list" else np.array(arr.tolist(), dtype=np.float64 if form == "float" else np.int64)
    if draw(st.integers(0, 11)) == 0:
        shape = draw(st.sampled_from([shape[::-1], shape + (1,), shape[:-1], (), (0,) + shape[1:],
                                      tuple(max(d - 1, 0) for d in shape)]))
    n = int(np.prod(shape)) if shape else 1
    flat = draw(st.lists(elem, min_size=n, max_size=n))
    form = draw(st.sampled_from(["list", "list", "object", "float", "int", "uint64", "bool", "complex"]))
    obj = np.empty(n, dtype=object)
    obj[:] = flat
    obj = obj.reshape(shape)
    if form == "list":
        return obj.tolist()
    if form == "object":
        return obj
    dtype = {"float": np.float64, "int": np.int64, "uint64": np.uint64, "bool": np.bool_,
             "complex": np.complex128}[form]
    try:
        with np.errstate(all="ignore"):
            return np.array(obj.tolist(), dtype=dtype).reshape(shape)
    except (TypeError, ValueError, OverflowError):
        return obj.tolist()


def same_everywhere(call):
    """Run ``call(backend)`` on every backend; all results or all errors must agree."""
    outs = []
    for b in BACKENDS:
        try:
            outs.append(("ok", call(b)))
        except HetplaceError as exc:
            outs.append(("error", f"{type(exc).__name__}: {exc}"))
    kinds = {o[0] for o in outs}
    assert len(kinds) == 1, outs
    if outs[0][0] == "error":
        assert len({o[1] for o in outs}) == 1, outs
        event(f"error: {outs[0][1].split(':')[0]}")
        return None
    event("valid result")
    return [o[1] for o in outs]


# ----------------------------------------------------------------------------
# hetplace.matching
# ----------------------------------------------------------------------------


@st.composite
def da_inputs(draw):
    S = draw(st.integers(1, 4))
    K = draw(st.integers(1, 7))
    values = draw(container((S, K), st.one_of(real_elem, st.just(-math.inf)),
                            benign=st.one_of(benign_real, st.just(-math.inf), st.sampled_from(EDGE_REALS[:24]))))
    caps = draw(container((S,), count_elem, benign=st.integers(0, max(K // S, 1))))
    form = draw(st.sampled_from(["price", "ordinal", "price", "ordinal", "cardinal", None]))
    rank = None
    if draw(st.integers(0, 3)) == 0:
        rank = draw(container((S, K), real_elem, benign=st.one_of(benign_real, st.sampled_from(EDGE_REALS))))
    allowed = None
    if draw(st.integers(0, 3)) == 0:
        allowed = draw(st.one_of(container((S, K), st.booleans()),
                                 st.builds(lambda a: np.array(a, dtype=bool).reshape(S, K),
                                           st.lists(st.booleans(), min_size=S * K, max_size=S * K))))
    return values, caps, form, allowed, rank


def _matching_certificate(values, caps, allowed, rank, r):
    v = np.asarray(values, dtype=np.float64)
    S, K = v.shape
    mask = np.isfinite(v) if allowed is None else np.asarray(allowed, dtype=bool)
    caps = np.asarray(caps).astype(np.int64)
    wj = r.worker_job
    assert wj.shape == (K,) and wj.dtype == np.int64
    assert ((wj >= -1) & (wj < S)).all()
    busy = np.flatnonzero(wj >= 0)
    assert mask[wj[busy], busy].all(), "a disallowed pair was matched"
    counts = np.bincount(wj[busy], minlength=S)
    assert (counts <= caps).all()
    assert r.status in ("optimal", "infeasible") and r.success == (r.status == "optimal")
    if r.success:
        assert (counts == caps).all()
    assert math.isfinite(r.welfare)
    if r.form == "price" and r.success:
        scale = float(np.abs(np.where(mask, v, 0.0)).sum()) + 1e-300
        assert r.bound >= r.welfare - 1e-9 * scale
        assert r.bound - r.welfare <= 1e-9 * scale
    if r.form == "ordinal" and r.success:
        assert is_stable(values, caps, wj, worker_rank=rank, allowed=allowed)


@fuzz_given(da_inputs())
def test_deferred_acceptance_hostile(inputs):
    values, caps, form, allowed, rank = inputs
    outs = same_everywhere(lambda b: deferred_acceptance(values, caps, form=form, allowed=allowed,
                                                         worker_rank=rank, backend=b))
    if outs is None:
        return
    first = outs[0]
    for r in outs:
        assert r.worker_job.tolist() == first.worker_job.tolist()
        assert (r.status, r.welfare, r.rounds, r.bids) == (first.status, first.welfare, first.rounds, first.bids)
    _matching_certificate(values, caps, allowed, rank, first)


@fuzz_given(da_inputs(), st.data())
def test_is_stable_hostile(inputs, data):
    values, caps, _, allowed, rank = inputs
    S = int(np.shape(values)[0]) if np.ndim(values) >= 1 else 1
    K = int(np.shape(values)[1]) if np.ndim(values) >= 2 else 1
    wj = data.draw(container((K,), st.one_of(st.integers(-1, S - 1), st.integers(-1, S - 1),
                                              st.sampled_from(EDGE_INTS + ODD)),
                             benign=st.integers(-1, max(S - 1, -1))))
    if data.draw(st.booleans()):  # a matching that fits the capacities, when they are valid
        try:
            wj = deferred_acceptance(values, caps, form="ordinal", allowed=allowed, worker_rank=rank).worker_job
            if data.draw(st.booleans()):
                wj = wj.copy()
                wj[data.draw(st.integers(0, K - 1))] = -1  # may open a blocking pair
                if data.draw(st.booleans()):
                    wj = wj.astype(np.uint64)  # -1 is 2**64 - 1 now: not a job, and not idle either
        except HetplaceError:
            pass
    try:
        got = is_stable(values, caps, wj, worker_rank=rank, allowed=allowed)
    except HetplaceError as exc:
        event(f"error: {type(exc).__name__}")
        return
    event("valid result")
    assert isinstance(got, bool)
    # a True verdict must be a real matching of the instance
    arr = np.asarray(wj)
    assert arr.shape == (K,) and np.issubdtype(arr.dtype, np.integer)
    assert ((arr >= -1) & (arr < S)).all()


@st.composite
def market_inputs(draw):
    S = draw(st.integers(1, 3))
    K = draw(st.integers(1, 6))
    rate = st.one_of(st.floats(0.0, 1e3), st.sampled_from([0.0, 1e-60, 1e-30, 1.0, 1e30, 1e60]))
    rho = draw(container((S, K), real_elem, benign=rate))
    work = draw(container((S,), st.one_of(st.floats(0.1, 1e3), hostile_real),
                          benign=st.one_of(st.floats(1e-3, 1e6), st.sampled_from([1e-60, 1e60]))))
    comm = draw(container((S, K + 1), st.one_of(benign_real, benign_real, st.just(math.inf), hostile_real),
                          benign=st.one_of(st.floats(0.0, 1e3), st.just(math.inf), st.sampled_from([0.0, 1e-300, 1e90]))))
    sizes = draw(container((S,), st.one_of(st.integers(1, 3), st.integers(1, 3), hostile_count),
                           benign=st.integers(1, max(K // S, 1))))
    form = draw(st.sampled_from(["price", "ordinal"]))
    rounds = draw(st.one_of(st.integers(1, 4), st.sampled_from([0, -1, 10**6, True, 2.0, None])))
    if draw(st.booleans()):  # a well-formed category at the edges of the supported range
        scale = draw(st.sampled_from([1e-300, 1e-61, 1e-60, 1e-30, 1.0, 1e30, 1e60, 1e61, 1e300]))
        R = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 0.5]), min_size=S * K, max_size=S * K))).reshape(S, K)
        R[:, 0] = 1.0
        rho = np.minimum(R * scale, 1e60)
        work = np.array(draw(st.lists(st.sampled_from([1e-60, 1.0, 1e60]), min_size=S, max_size=S)))
        comm = np.array(draw(st.lists(st.sampled_from([0.0, 1e-300, 1.0, 1e90, 1e100]),
                                      min_size=S * (K + 1), max_size=S * (K + 1)))).reshape(S, K + 1)
        if draw(st.booleans()):  # sizes from some n on unusable (Problem.size_cost)
            i, n = draw(st.integers(0, S - 1)), draw(st.integers(0, K))
            comm[i, n:] = math.inf
        sizes = 1 + np.array(draw(st.lists(st.integers(0, max((K - S) // S, 0)), min_size=S, max_size=S)))
        if draw(st.integers(0, 5)) == 0:  # sizes whose int64 sum wraps around to <= K
            sizes = [2**63 - 1] * (S - 1) + [2 + (S - 1) * 1] if S > 1 else [2**64 + 1]
        rounds = draw(st.integers(1, 4))
    return rho, work, comm, sizes, form, rounds


@fuzz_given(market_inputs())
def test_market_category_hostile(inputs):
    rho, work, comm, sizes, form, rounds = inputs
    outs = same_everywhere(lambda b: market_category(rho, work, comm, sizes, form=form, max_rounds=rounds, backend=b))
    if outs is None:
        return
    first = outs[0]
    for r in outs:
        assert r.worker_job.tolist() == first.worker_job.tolist()
        assert (r.total_jct, r.filled, r.rounds, r.bids) == (first.total_jct, first.filled, first.rounds, first.bids)
    R = np.asarray(rho, dtype=np.float64)
    W = np.asarray(work, dtype=np.float64)
    CT = np.asarray(comm, dtype=np.float64)
    n = np.asarray(sizes).astype(np.int64)
    S, K = R.shape
    wj = first.worker_job
    busy = np.flatnonzero(wj >= 0)
    assert ((wj >= -1) & (wj < S)).all()
    assert (R[wj[busy], busy] > 0).all(), "a worker was given to a job it cannot run"
    counts = np.bincount(wj[busy], minlength=S)
    assert (counts <= n).all()
    assert first.filled == bool((counts == n).all())
    assert not math.isnan(first.total_jct)
    if (counts == 0).any():
        assert first.total_jct == math.inf
    else:
        X = np.bincount(wj[busy], weights=R[wj[busy], busy], minlength=S)
        total = 0.0
        for i in range(S):
            total += W[i] / X[i] + CT[i, counts[i]]
        assert first.total_jct == pytest.approx(total, rel=1e-12)
        # +inf only from a size marked unusable
        assert math.isfinite(first.total_jct) == bool(np.isfinite(CT[np.arange(S), counts]).all())


# ----------------------------------------------------------------------------
# hetplace.categories
# ----------------------------------------------------------------------------

exact_flag = st.sampled_from([True, False, True, False, 1, 0, None, np.bool_(True), "yes"])


def _valid_rows(rows, K, S, exact):
    assert rows.dtype == np.int64 and rows.ndim == 2 and rows.shape[1] == S
    assert (rows >= 1).all()
    sums = [sum(int(x) for x in row) for row in rows.tolist()]  # exact: no int64 wrap
    assert all(t == K for t in sums) if exact else all(t <= K for t in sums)
    assert len({tuple(r) for r in rows.tolist()}) == rows.shape[0], "duplicate categories"


@fuzz_given(hostile_scalar, hostile_scalar, exact_flag)
def test_count_categories_hostile(K, S, exact):
    try:
        C = count_categories(K, S, exact=exact)
    except HetplaceError as exc:
        event(f"error: {type(exc).__name__}")
        return
    event("valid result")
    assert isinstance(C, int) and C >= 1
    assert C.bit_length() <= cat.COUNT_BITS_MAX + 1
    if int(K) <= 200:
        assert C == (math.comb(int(K) - 1, int(S) - 1) if exact else math.comb(int(K), int(S)))


@fuzz_given(container((3,), count_elem, benign=st.integers(1, 6)), hostile_scalar, exact_flag, st.data())
def test_rank_category_hostile(sizes, K, exact, data):
    if data.draw(st.booleans()):  # a valid category of huge or small K, to exercise the arithmetic
        S = data.draw(st.integers(1, 6))
        parts = data.draw(st.lists(st.one_of(st.integers(1, 5), st.sampled_from([2**62, 2**63, 10**30])),
                                   min_size=S, max_size=S))
        sizes, K = parts, sum(parts) + data.draw(st.sampled_from([0, 0, 1, 2**64]))
    try:
        r = rank_category(sizes, K, exact=exact)
    except HetplaceError as exc:
        event(f"error: {type(exc).__name__}")
        return
    event("valid result")
    vals = [int(x) for x in np.asarray(sizes, dtype=object).ravel().tolist()]
    C = count_categories(int(K), len(vals), exact=bool(exact))
    assert isinstance(r, int) and 0 <= r < C
    if int(K) <= 2**62:
        assert unrank_category(r, int(K), len(vals), exact=bool(exact)).tolist() == vals


@fuzz_given(hostile_scalar, hostile_scalar, hostile_scalar, exact_flag, st.data())
def test_unrank_category_hostile(rank, K, S, exact, data):
    if data.draw(st.booleans()):  # a valid rank of a small or huge K, to exercise the arithmetic
        K = data.draw(st.one_of(st.integers(1, 40), st.sampled_from([2**53, 2**62, 10**6])))
        S = data.draw(st.integers(1, min(K, 12)))
        exact = data.draw(st.booleans())
        C = count_categories(K, S, exact)
        rank = data.draw(st.one_of(st.integers(0, C - 1), st.sampled_from([0, C - 1, C, -1])))
    try:
        got = unrank_category(rank, K, S, exact=exact)
    except HetplaceError as exc:
        event(f"error: {type(exc).__name__}")
        return
    event("valid result")
    _valid_rows(got[None, :], int(K), int(S), bool(exact))
    assert rank_category(got, int(K), exact=bool(exact)) == int(rank)


@fuzz_given(st.one_of(st.integers(-1, 14), st.sampled_from(EDGE_INTS + ODD)), st.one_of(st.integers(-1, 14), st.sampled_from(EDGE_INTS + ODD)),
            exact_flag, st.one_of(st.sampled_from([1, 10, 1000, cat.ENUMERATE_LIMIT, 2**62, 2**64]), st.sampled_from([0, -1, True, 2.5, None])))
def test_enumerate_categories_hostile(K, S, exact, limit):
    if isinstance(K, int) and not isinstance(K, bool) and 1 <= K <= 14 and isinstance(S, bool):
        S = int(S)  # a bool n_jobs is an error; keep some of these draws for valid ones instead
    with mock.patch.object(cat, "MEMORY_MAX", FUZZ_MEMORY_MAX):
        outs = same_everywhere(lambda b: enumerate_categories(K, S, exact=exact, backend=b, limit=limit))
    if outs is None:
        return
    for rows in outs:
        assert np.array_equal(rows, outs[0])
    rows = outs[0]
    _valid_rows(rows, int(K), int(S), bool(exact))
    assert rows.shape[0] == count_categories(int(K), int(S), exact=bool(exact)) <= int(limit)
    assert rows.tolist() == sorted(rows.tolist())


@fuzz_given(hostile_scalar | st.sampled_from([2**40, 2**62, 10**6]), hostile_scalar,
            st.one_of(st.integers(-1, 40), st.sampled_from([0, 2**31, 2**40, 2**63, 2**64, 10**9, True, 3.0, None])),
            st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([-1, 2**64, None, 1.5, True])),
            exact_flag, st.sampled_from(["uniform", "weighted", "uniform", "weighted", "best"]), st.data())
def test_sample_categories_hostile(K, S, N, seed, exact, method, data):
    if data.draw(st.booleans()):  # mostly valid arguments, small or huge K
        K = data.draw(st.one_of(st.integers(1, 30), st.sampled_from([2**40, 2**62, 10**6, 10**7])))
        S = data.draw(st.integers(1, min(K, 8)))
        N = data.draw(st.one_of(st.integers(1, 40), st.sampled_from([2**20, 2**40])))
        exact = data.draw(st.booleans())
        method = data.draw(st.sampled_from(["uniform", "weighted"]))
    if seed is None:
        seed = 0  # None draws fresh entropy: backends would differ by design
    kwargs = {}
    if method == "weighted" and data.draw(st.booleans()):
        kwargs["spread"] = data.draw(st.one_of(st.sampled_from([1e-3, 0.25, 1e3]), hostile_real))
    if method == "weighted" and data.draw(st.booleans()):
        n_jobs = int(S) if isinstance(S, (int, np.integer)) and 1 <= int(S) <= 8 else 2
        kwargs["centre"] = data.draw(container((n_jobs,), st.one_of(st.floats(0.5, 8.0), hostile_real),
                                               benign=st.one_of(st.floats(1e-3, 1e3), st.sampled_from([1e-30, 1e30]))))
    with mock.patch.object(cat, "MEMORY_MAX", FUZZ_MEMORY_MAX):
        outs = same_everywhere(lambda b: sample_categories(K, S, N, seed=seed, exact=exact, method=method,
                                                           backend=b, **kwargs))
    if outs is None:
        return
    for rows in outs:
        assert np.array_equal(rows, outs[0])
    rows = outs[0]
    _valid_rows(rows, int(K), int(S), bool(exact))
    C = cat._count_capped(int(K), int(S), bool(exact), 2**63)
    assert rows.shape[0] == min(int(N), C)
