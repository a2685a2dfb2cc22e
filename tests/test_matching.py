"""Tests of hetplace.matching: deferred acceptance (price and ordinal), is_stable,
market_category, and the agreement of the python / numba / cython kernels."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference as ref
from hetplace import Problem
from hetplace.errors import (
    InvalidOptionError,
    InvalidPlacementError,
    InvalidProblemError,
    InvalidProblemTypeError,
    MissingDependencyError,
)
from hetplace.matching import deferred_acceptance, is_stable, market_category
from hetplace.placement import evaluate

from hetplace._core._registry import kernels, unavailable

HAVE_CYTHON = unavailable("cython") is None

BACKENDS = ["python", "numba"] + (["cython"] if HAVE_CYTHON else [])
#: relative tolerance of the welfare comparison: the price form is exact, so
#: only floating-point rounding separates it from SciPy's optimum.
WELFARE_RTOL = 1e-9


# ----------------------------------------------------------------------------
# Instance generators (seeded)
# ----------------------------------------------------------------------------


def random_market(seed, max_jobs=6, max_workers=12):
    """A random value matrix (ties, negative values, forbidden pairs) and capacities."""
    rng = np.random.default_rng([seed, 42])
    S = int(rng.integers(1, max_jobs + 1))
    K = int(rng.integers(S, max_workers + 1))
    kind = seed % 4
    values = rng.random((S, K)) * rng.choice([1e-3, 1.0, 100.0])
    if kind == 1:
        values = np.round(values * 4 / values.max())  # many ties
    elif kind == 2:
        values = values - 0.5 * values.max()  # negative values too
    elif kind == 3:  # runs of identical workers (types), bulk moves
        G = int(rng.integers(1, min(K, 3) + 1))
        cols = np.sort(rng.integers(0, G, K))
        values = values[:, cols]
    if seed % 3 == 0:
        values[rng.random((S, K)) < 0.3] = -np.inf
    total = int(rng.integers(0, K + 1)) if seed % 5 else K
    caps = rng.multinomial(total, np.ones(S) / S).astype(np.int64)
    return values, caps


def random_category(seed, S=None, K=None, distinct=True, zeros=True):
    """(rho, work, comm_time, sizes) of a feasible random category."""
    rng = np.random.default_rng([seed, 7])
    S = S or int(rng.integers(1, 7))
    K = K or int(rng.integers(S, 4 * S + 4))
    G = int(rng.integers(1, 4))
    types = np.sort(rng.integers(0, G, K))
    base = rng.uniform(50, 500, (S, G))
    speed = rng.uniform(0.5, 1.0, K) if distinct else np.ones(K)
    rho = base[:, types] * speed[None, :]
    if zeros:
        rho[rng.random((S, K)) < 0.15] = 0.0
    work = rng.uniform(1e4, 1e6, S)
    n = np.arange(K + 1, dtype=float)
    frac = np.zeros(K + 1)
    frac[2:] = 2.0 * (n[2:] - 1) / n[2:]
    comm = rng.uniform(0, 200, S)[:, None] * frac[None, :]
    for _ in range(100):
        sizes = 1 + rng.multinomial(int(rng.integers(0, K - S + 1)), np.ones(S) / S)
        if ref.assignment_optimum_reference(np.where(rho > 0, rho, -np.inf), sizes) is not None:
            return np.ascontiguousarray(rho), work, comm, sizes.astype(np.int64)
        rho = np.maximum(rho, rng.uniform(50, 500, (S, K)) * (rng.random((S, K)) < 0.5))
    raise AssertionError("no feasible category drawn")


# ----------------------------------------------------------------------------
# (1) price form = exact assignment optimum
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_price_welfare_equals_exact_assignment(backend):
    """240 seeded matrices (ties, negatives, -inf pairs, idle workers, types)."""
    for seed in range(240):
        values, caps = random_market(seed)
        res = deferred_acceptance(values, caps, backend=backend)
        opt = ref.assignment_optimum_reference(values, caps)
        if opt is None:
            assert res.status == "infeasible" and not res.success, seed
            continue
        assert res.status == "optimal" and res.success, (seed, res.message)
        assert np.bincount(res.worker_job[res.worker_job >= 0], minlength=len(caps)).tolist() == caps.tolist()
        scale = max(1.0, np.abs(values[np.isfinite(values)]).max() * values.shape[1])
        assert abs(res.welfare - opt) <= WELFARE_RTOL * scale, (seed, res.welfare, opt)
        # the prices certify optimality (LP duality) ...
        assert abs(res.bound - res.welfare) <= WELFARE_RTOL * scale, seed
        # ... and are dual feasible: pi[k] + q[i] >= v[i, k] on allowed pairs with capacity
        active = np.isfinite(values) & (caps > 0)[:, None]
        slack = res.prices[None, :] + res.job_prices[:, None] - np.where(active, values, -np.inf)
        assert (slack[active] >= -1e-9 * scale).all(), seed


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "python"])
def test_price_welfare_larger_instances(backend):
    """Larger matrices against SciPy (ties from worker types, forbidden pairs)."""
    for seed in range(10):
        rng = np.random.default_rng([seed, 11])
        S, K = 12, 90
        values = rng.random((S, K))
        if seed % 2:
            values = values[:, np.sort(rng.integers(0, 4, K))]
        values[rng.random((S, K)) < 0.1] = -np.inf
        caps = rng.multinomial(80, np.ones(S) / S)
        opt = ref.assignment_optimum_reference(values, caps)
        res = deferred_acceptance(values, caps, backend=backend)
        if opt is None:
            assert res.status == "infeasible"
        else:
            assert res.welfare == pytest.approx(opt, rel=WELFARE_RTOL)


def test_price_form_infeasible_reports_short_jobs():
    values = np.array([[1.0, -np.inf, -np.inf], [1.0, 2.0, 3.0]])
    res = deferred_acceptance(values, [2, 1])
    assert res.status == "infeasible" and not res.success
    assert "job(s) 0" in res.message
    assert all(values[res.worker_job[k], k] > -np.inf for k in range(3) if res.worker_job[k] >= 0)


def test_price_form_allowed_mask_ignores_disallowed_values():
    values = np.array([[np.nan, 5.0], [1.0, np.inf]])
    allowed = np.array([[False, True], [True, False]])
    res = deferred_acceptance(values, [1, 1], allowed=allowed)
    assert res.worker_job.tolist() == [1, 0]
    assert res.welfare == 6.0


def test_price_form_zero_capacity_and_all_idle():
    res = deferred_acceptance([[1.0, 2.0], [3.0, 4.0]], [0, 0])
    assert res.worker_job.tolist() == [-1, -1] and res.welfare == 0.0 and res.success


# ----------------------------------------------------------------------------
# (2) ordinal form: stable and job-optimal
# ----------------------------------------------------------------------------


def test_ordinal_is_stable_and_matches_textbook():
    for seed in range(200):
        values, caps = random_market(seed)
        res = deferred_acceptance(values, caps, form="ordinal")
        rank = ref.default_worker_rank_reference(values)
        assert res.prices is None and res.form == "ordinal"
        assert is_stable(values, caps, res.worker_job), seed
        assert ref.blocking_pairs_reference(values, caps, res.worker_job, rank) == [], seed
        assert res.worker_job.tolist() == ref.gale_shapley_reference(values, caps, rank), seed


def test_ordinal_is_job_optimal_among_all_stable_matchings():
    """Brute force over all (S+1)**K maps on tiny instances."""
    checked = 0
    for seed in range(120):
        rng = np.random.default_rng([seed, 5])
        S = int(rng.integers(1, 4))
        K = int(rng.integers(S, 6))
        values = rng.integers(0, 4, (S, K)).astype(float)  # ties on purpose
        values[rng.random((S, K)) < 0.2] = -np.inf
        rank = rng.integers(0, 3, (S, K)).astype(float)
        caps = rng.multinomial(int(rng.integers(1, K + 1)), np.ones(S) / S)
        res = deferred_acceptance(values, caps, form="ordinal", worker_rank=rank)
        stable = ref.stable_matchings_reference(values, caps, rank)
        gs = tuple(res.worker_job.tolist())
        assert gs in stable, seed
        for other in stable:
            for i in range(S):
                mine = sorted((k for k in range(K) if gs[k] == i), key=lambda k: (-values[i, k], k))
                theirs = sorted((k for k in range(K) if other[k] == i), key=lambda k: (-values[i, k], k))
                assert len(mine) == len(theirs), seed  # rural hospitals theorem
                for a, b in zip(mine, theirs):  # job i weakly prefers its GS workers, rank by rank
                    assert (values[i, a], -a) >= (values[i, b], -b), (seed, gs, other)
        checked += len(stable)
    assert checked > 120


def test_ordinal_unfilled_job_is_reported():
    # worker 0 prefers job 0 (rank), job 1 can only use worker 0
    values = np.array([[2.0, 1.0], [1.0, -np.inf]])
    rank = np.array([[1.0, 1.0], [0.0, 0.0]])
    res = deferred_acceptance(values, [1, 1], form="ordinal", worker_rank=rank)
    assert res.status == "infeasible" and "job(s) 1" in res.message
    price = deferred_acceptance(values, [1, 1])
    assert price.success and price.worker_job.tolist() == [1, 0]


# ----------------------------------------------------------------------------
# (3) backends agree bit for bit
# ----------------------------------------------------------------------------


def _da_fingerprint(res):
    prices = None if res.prices is None else (res.prices.tobytes(), res.job_prices.tobytes())
    return (res.worker_job.tolist(), prices, res.rounds, res.bids, res.status, res.welfare)


@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_backends_identical_deferred_acceptance(form):
    for seed in range(200):
        values, caps = random_market(seed, max_jobs=8, max_workers=30)
        prints = {b: _da_fingerprint(deferred_acceptance(values, caps, form=form, backend=b)) for b in BACKENDS}
        first = prints[BACKENDS[0]]
        assert all(p == first for p in prints.values()), (seed, prints)


@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_backends_identical_market_category(form):
    for seed in range(200):
        rho, work, comm, sizes = random_category(seed, distinct=seed % 2 == 0)
        outs = {}
        for b in BACKENDS:
            r = market_category(rho, work, comm, sizes, form=form, backend=b)
            outs[b] = (r.worker_job.tolist(), np.float64(r.total_jct).tobytes(), r.rounds, r.bids, r.filled)
        first = outs[BACKENDS[0]]
        assert all(o == first for o in outs.values()), (seed, outs)


def test_backends_identical_kernels_direct():
    """The kernels themselves, including the preference lists and the work buffers reused."""
    mods = [kernels(b) for b in BACKENDS]
    for seed in range(20):
        rho, work, comm, sizes = random_category(seed, S=6, K=40)
        S, K = rho.shape
        nf, ni = mods[0].market_workspace_size(S, K)
        results = []
        for mod in mods:
            jo, ol, wr = mod.ordinal_preferences(rho)
            fws = np.full(nf, np.nan)
            iws = np.full(ni, -7, dtype=np.int64)
            row = [jo.tobytes(), ol.tobytes(), wr.tobytes()]
            for form in (0, 1):
                for _ in range(2):  # dirty buffers on the second call
                    wj = np.empty(K, dtype=np.int64)
                    stats = np.empty(2, dtype=np.int64)
                    t = mod.market_category_kernel(rho, work, comm, sizes, form, 8, jo, ol, wr, wj, stats, fws, iws)
                    row += [np.float64(t).tobytes(), wj.tobytes(), stats.tobytes()]
            results.append(row)
        assert all(r == results[0] for r in results), seed


# ----------------------------------------------------------------------------
# (4) properties (hypothesis)
# ----------------------------------------------------------------------------


@st.composite
def markets(draw):
    S = draw(st.integers(1, 5))
    K = draw(st.integers(S, 10))
    cells = st.one_of(
        st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, 1.0, 2.0]),
        st.just(-np.inf),
    )
    values = np.array(draw(st.lists(st.lists(cells, min_size=K, max_size=K), min_size=S, max_size=S)))
    caps = draw(st.lists(st.integers(0, K), min_size=S, max_size=S))
    while sum(caps) > K:
        j = int(np.argmax(caps))
        caps[j] -= 1
    return values, np.array(caps, dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(markets(), st.sampled_from(["price", "ordinal"]))
def test_matching_properties(market, form):
    values, caps = market
    res = deferred_acceptance(values, caps, form=form)
    wj = res.worker_job
    S, K = values.shape
    assert wj.shape == (K,) and wj.dtype == np.int64
    assert ((wj >= -1) & (wj < S)).all()
    counts = np.bincount(wj[wj >= 0], minlength=S)
    assert (counts <= caps).all()  # no job over capacity (each worker is in one place)
    busy = np.flatnonzero(wj >= 0)
    assert np.isfinite(values[wj[busy], busy]).all()  # only allowed pairs
    if res.success:
        assert (counts == caps).all()
    if form == "price":
        opt = ref.assignment_optimum_reference(values, caps)
        assert res.success == (opt is not None)
        if opt is not None:
            assert res.welfare == pytest.approx(opt, rel=WELFARE_RTOL, abs=1e-9 * K * 1e3)
    else:
        assert is_stable(values, caps, wj)


# ----------------------------------------------------------------------------
# (5) is_stable detects blocking pairs
# ----------------------------------------------------------------------------


def test_is_stable_agrees_with_reference_on_perturbed_matchings():
    found = 0
    for seed in range(150):
        values, caps = random_market(seed, max_jobs=4, max_workers=8)
        rng = np.random.default_rng([seed, 9])
        rank = rng.random(values.shape)
        wj = deferred_acceptance(values, caps, form="ordinal", worker_rank=rank).worker_job.copy()
        for _ in range(4):
            # perturb: swap two workers, or idle one, or move one to a free slot
            k1, k2 = rng.integers(0, len(wj), 2)
            move = rng.integers(0, 3)
            if move == 0:
                wj[k1], wj[k2] = wj[k2], wj[k1]
            elif move == 1:
                wj[k1] = -1
            else:
                counts = np.bincount(wj[wj >= 0], minlength=len(caps))
                free = np.flatnonzero(counts < caps)
                if free.size:
                    wj[k1] = free[0]
            counts = np.bincount(wj[wj >= 0], minlength=len(caps))
            if (counts > caps).any():
                continue
            expect = ref.blocking_pairs_reference(values, caps, wj, rank)
            got = is_stable(values, caps, wj, worker_rank=rank)
            assert got == (expect == []), (seed, wj, expect)
            found += expect is not None and expect != []
    assert found > 50  # the perturbations did plant blocking pairs


def test_is_stable_planted_pairs():
    values = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    rank = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])  # every worker prefers job 0
    caps = [1, 1]
    assert is_stable(values, caps, [0, -1, 1], worker_rank=rank)
    # job 0 prefers worker 0 to its worker 1, and the idle worker 0 accepts
    assert not is_stable(values, caps, [-1, 0, 1], worker_rank=rank)
    # job 1 prefers the idle worker 2 to its worker 1
    assert not is_stable(values, caps, [0, 1, -1], worker_rank=rank)
    # job 1 has an empty slot and worker 2 is idle and acceptable
    assert not is_stable(values, caps, [0, -1, -1], worker_rank=rank)
    # a worker on an unacceptable job is never stable
    values2 = values.copy()
    values2[1, 2] = -np.inf
    assert not is_stable(values2, caps, [0, -1, 1], worker_rank=rank)
    # equal values: ties go to the lower worker index
    tied = np.array([[1.0, 1.0], [0.0, 0.0]])
    rank2 = np.array([[1.0, 1.0], [0.0, 0.0]])
    assert is_stable(tied, [1, 1], [0, 1], worker_rank=rank2)
    assert not is_stable(tied, [1, 1], [1, 0], worker_rank=rank2)


# ----------------------------------------------------------------------------
# (6) market_category against the pure-Python reference
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_market_category_matches_reference(form):
    for seed in range(60):
        rho, work, comm, sizes = random_category(seed, distinct=True)
        res = market_category(rho, work, comm, sizes, form=form)
        total, wj, rounds = ref.market_category_reference(rho, work, comm, sizes, form=form)
        assert res.worker_job.tolist() == wj.tolist(), seed
        assert res.total_jct == pytest.approx(total, rel=1e-12), seed
        assert res.rounds == rounds, seed
        assert res.mean_jct == pytest.approx(total / len(sizes), rel=1e-12)
        counts = np.bincount(wj[wj >= 0], minlength=len(sizes))
        assert res.filled == bool((counts == sizes).all())
        if form == "price":
            assert res.filled


def test_market_category_total_is_the_model_objective():
    """On typed instances (ties) only the model-level facts are pinned."""
    for seed in range(30):
        rng = np.random.default_rng([seed, 3])
        S, G = 4, 3
        counts = rng.integers(2, 6, G)
        K = int(counts.sum())
        thr = rng.uniform(50, 500, (S, G))
        thr[rng.random((S, G)) < 0.2] = 0.0
        thr[:, 0] = np.maximum(thr[:, 0], 10.0)
        p = Problem(thr, counts, batch=rng.integers(16, 256, S), iterations=rng.uniform(1e3, 1e5, S),
                    grad_bytes=rng.uniform(1e6, 1e8, S), bandwidth=1.25e9)
        sizes = 1 + rng.multinomial(K - S - int(rng.integers(0, 2)), np.ones(S) / S)
        res = market_category(p.worker_throughput, p.work, p.comm_time, sizes)
        if not res.filled:
            continue
        placed = evaluate(p, res.worker_job)
        assert res.total_jct == pytest.approx(placed.mean_jct * S, rel=1e-12)
        assert placed.sizes.tolist() == sizes.tolist()


def test_market_category_gavel_instances():
    instances = pytest.importorskip("instances")
    for seed in range(5):
        p = instances.gavel_problem(seed, 24, 5)
        # a job takes at most max_workers workers (its batch), so clip the sizes to it
        sizes = np.minimum(np.full(5, 4, dtype=np.int64), p.max_workers)
        outs = {b: market_category(p.worker_throughput, p.work, p.size_cost, sizes, backend=b) for b in BACKENDS}
        first = outs[BACKENDS[0]]
        for r in outs.values():
            assert r.worker_job.tolist() == first.worker_job.tolist() and r.total_jct == first.total_jct
        if first.filled:
            assert first.total_jct == pytest.approx(evaluate(p, first.worker_job).mean_jct * 5, rel=1e-12)


def test_market_category_keeps_best_round_and_stops_on_repeat():
    rho, work, comm, sizes = random_category(3, S=4, K=20)
    one = market_category(rho, work, comm, sizes, max_rounds=1)
    many = market_category(rho, work, comm, sizes, max_rounds=50)
    assert one.rounds == 1 and many.rounds <= 50
    assert many.total_jct <= one.total_jct
    ordinal = market_category(rho, work, comm, sizes, form="ordinal", max_rounds=50)
    assert ordinal.rounds == 1


def test_market_category_infeasible_category():
    rho = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    res = market_category(rho, [1.0, 1.0], np.zeros((2, 4)), [2, 1])
    assert not res.filled
    busy = np.flatnonzero(res.worker_job >= 0)
    assert (rho[res.worker_job[busy], busy] > 0).all()


# ----------------------------------------------------------------------------
# (7) error messages
# ----------------------------------------------------------------------------

V = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(values=[1.0, 2.0]), InvalidProblemError, r"values must be a 2-D array .* got an array of shape \(2,\)"),
        (dict(values="abc"), InvalidProblemTypeError, r"values must be numbers; got the string 'abc'"),
        (dict(values=np.zeros((0, 3)), capacities=[]), InvalidProblemError, r"at least one job .* shape \(0, 3\)"),
        (dict(values=[[1.0, np.nan]], capacities=[1]), InvalidProblemError, r"must not contain NaN; got NaN for job 0, worker 1.*-inf"),
        (dict(values=[[1.0, np.inf]], capacities=[1]), InvalidProblemError, r"finite or -inf .* \+inf for job 0, worker 1"),
        (dict(values=[[1e200, 1.0]], capacities=[1]), InvalidProblemError, r"at most 1e\+150 in magnitude; got 1e\+200 .*Rescale"),
        (dict(capacities=[1, -1]), InvalidProblemError, r"capacities must be >= 0; got -1 for job 1"),
        (dict(capacities=[2, 2]), InvalidProblemError, r"sum\(capacities\) = 4 exceeds the number of workers K = 3"),
        (dict(capacities=[1]), InvalidProblemError, r"capacities must have shape \(2,\) .* got shape \(1,\)"),
        (dict(capacities=[1.5, 1]), InvalidProblemError, r"capacities must be whole numbers; got 1.5 for job 0"),
        (dict(capacities=["a", "b"]), InvalidProblemTypeError, r"capacities must be integers, shape \(2,\); got dtype <U1"),
        (dict(form="cardinal"), InvalidOptionError, r"form='cardinal' is not valid; choose one of 'price', 'ordinal'"),
        (dict(backend="fortran"), InvalidOptionError, r"backend='fortran' is not valid; choose one of 'auto', 'cython', 'numba', 'python'"),
        (dict(worker_rank=np.ones((2, 3))), InvalidOptionError, r"worker_rank applies to form='ordinal' only"),
        (dict(form="ordinal", worker_rank=np.ones((3, 2))), InvalidProblemError, r"worker_rank must be a float array of shape \(2, 3\).*got shape \(3, 2\)"),
        (dict(allowed=np.ones((2, 3))), InvalidProblemTypeError, r"allowed must be a boolean array of shape \(2, 3\).*got dtype float64"),
        (dict(allowed=np.ones((2, 2), bool)), InvalidProblemError, r"allowed must have the shape of values \(2, 3\); got shape \(2, 2\)"),
        (dict(values=[[np.nan, 1.0]], capacities=[1], allowed=np.ones((1, 2), bool)), InvalidProblemError, r"finite on allowed pairs; got nan for job 0, worker 0"),
    ],
)
def test_deferred_acceptance_errors(kwargs, error, match):
    args = dict(values=V, capacities=[1, 1])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        deferred_acceptance(**args)


def test_errors_are_value_or_type_errors():
    with pytest.raises(ValueError):
        deferred_acceptance(V, [5, 5])
    with pytest.raises(TypeError):
        deferred_acceptance("V", [1, 1])


@pytest.mark.parametrize(
    "worker_job, match",
    [
        ([0, 1], r"worker_job must be an integer array of shape \(3,\)"),
        ([0, 1, 2], r"worker_job\[2\] = 2 is not a job index; use 0..1 or -1 for idle"),
        ([0, 0, -1], r"worker_job gives job 0 2 workers but its capacity is 1"),
        ([0.0, 1.0, -1.0], r"worker_job must be an integer array"),
    ],
)
def test_is_stable_errors(worker_job, match):
    with pytest.raises(InvalidPlacementError, match=match):
        is_stable(V, [1, 1], worker_job)


RHO = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 0.0]])
W = np.array([10.0, 20.0])
C = np.zeros((2, 4))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(throughput=[[1.0, -1.0, 1.0], [1.0, 1.0, 1.0]]), InvalidProblemError, r"throughput must be finite and >= 0; got -1.0 for job 0, worker 1"),
        (dict(throughput=[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]), InvalidProblemError, r"job 0 has throughput 0 on every worker"),
        (dict(throughput=[1.0, 2.0]), InvalidProblemError, r"throughput must be a 2-D array"),
        (dict(work=[10.0, 0.0]), InvalidProblemError, r"work must be finite and > 0 .*got 0.0 for job 1"),
        (dict(work=[10.0]), InvalidProblemError, r"work must have shape \(2,\)"),
        (dict(comm_time=np.zeros((2, 3))), InvalidProblemError, r"comm_time must have shape \(2, 4\) .*got shape \(2, 3\)"),
        (dict(comm_time=np.full((2, 4), np.nan)), InvalidProblemError, r"comm_time must be >= 0 and at most 1e\+100, or \+inf .*; got nan for job 0 on 0 workers"),
        (dict(sizes=[0, 1]), InvalidProblemError, r"sizes must be >= 1 \(every job needs a worker\); got 0 for job 0"),
        (dict(sizes=[2, 2]), InvalidProblemError, r"sum\(sizes\) = 4 exceeds the number of workers K = 3"),
        (dict(form="x"), InvalidOptionError, r"form='x' is not valid"),
        (dict(max_rounds=0), InvalidOptionError, r"max_rounds must be an integer in \[1, 10000\]; got 0"),
        (dict(max_rounds=2.0), InvalidOptionError, r"max_rounds must be an integer in \[1, 10000\]; got 2.0"),
        (dict(backend="gpu"), InvalidOptionError, r"backend='gpu' is not valid"),
    ],
)
def test_market_category_errors(kwargs, error, match):
    args = dict(throughput=RHO, work=W, comm_time=C, sizes=[1, 1])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        market_category(**args)


def test_cython_backend_missing_is_explained(monkeypatch):
    import sys

    from hetplace import _core

    monkeypatch.delattr(_core, "_market", raising=False)
    monkeypatch.setitem(sys.modules, "hetplace._core._market", None)  # the import fails as if not built
    with pytest.raises(MissingDependencyError, match=r"backend='cython' needs the compiled extension .*build_ext --inplace"):
        deferred_acceptance(V, [1, 1], backend="cython")
    # "auto" falls back to numba
    assert deferred_acceptance(V, [1, 1], backend="auto").backend == "numba"


def test_result_repr_and_fields():
    r = deferred_acceptance(V, [1, 1])
    assert "MatchingResult(form='price', status='optimal'" in repr(r)
    assert r.backend in ("cython", "numba")
    m = market_category(RHO, W, C, [1, 1])
    assert "MarketResult(form='price'" in repr(m) and math.isfinite(m.total_jct)


# ----------------------------------------------------------------------------
# (8) hostile numbers: no overflow, no wrap-around, every backend agrees
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values, caps", [
    (np.tile([[1.0], [5.0], [1.0], [1.0], [1.0]], (1, 6)), [2**40, 2**62, 2**62, 2**62, 2**62 - 2**40 + 1]),
    (np.ones((3, 6)), [2**63 - 1, 2**63 - 1, 3]),
    (np.ones((2, 6)), np.array([2**63, 2**63], dtype=np.uint64)),
    (np.ones((2, 6)), np.array([2**64, 1], dtype=object)),
])
def test_capacities_summing_past_int64_are_rejected(backend, values, caps):
    # the int64 sum used to wrap to <= K: a segfault (numba, cython) or "optimal" after
    # writing outside the workspace
    with pytest.raises(InvalidProblemError, match=r"sum\(capacities\) = \d{19,} exceeds the number of workers K = 6"):
        deferred_acceptance(values, caps, backend=backend)
    with pytest.raises(InvalidProblemError, match=r"sum\(capacities\) = \d{19,} exceeds"):
        is_stable(values, caps, -np.ones(6, dtype=np.int64))


def test_capacities_sum_is_exact():
    # one huge capacity and a negative one do not cancel out
    with pytest.raises(InvalidProblemError, match=r"capacities must be >= 0; got -9223372036854775808 for job 1"):
        deferred_acceptance(np.ones((2, 3)), np.array([2**63 - 1, -2**63], dtype=object))
    r = deferred_acceptance(np.ones((2, 3)), np.array([2, 1], dtype=np.uint64))
    assert r.status == "optimal" and np.bincount(r.worker_job, minlength=2).tolist() == [2, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_summing_past_int64_are_rejected(backend):
    # numba raised ZeroDivisionError, cython returned a garbage category
    rho, work, comm = np.ones((3, 6)), np.ones(3), np.zeros((3, 7))
    for sizes in ([2**63 - 1, 2**63 - 1, 3], np.array([2**63, 2**63, 1], dtype=np.uint64)):
        with pytest.raises(InvalidProblemError, match=r"sum\(sizes\) = \d{19,} exceeds the number of workers K = 6"):
            market_category(rho, work, comm, sizes, backend=backend)


@pytest.mark.parametrize("caps, error, match", [
    ([True, 1], InvalidProblemTypeError, r"capacities must be integers.*got a bool, True at index 0"),
    (np.array([1, 0], dtype=bool), InvalidProblemTypeError, r"capacities must be integers, shape \(2,\); got dtype bool"),
    ([1 + 0j, 1], InvalidProblemTypeError, r"capacities must be integers, shape \(2,\); got dtype complex128"),
    (np.array([1, None], dtype=object), InvalidProblemTypeError, r"capacities must be integers.*got None at index 1"),
    ([[1, 1]], InvalidProblemError, r"capacities must have shape \(2,\)"),
    (np.array([1.0, 2.0**60], dtype=object), InvalidProblemError, r"capacities must be at most 2\*\*53"),
])
def test_capacities_bad_types_are_rejected(caps, error, match):
    with pytest.raises(error, match=match):
        deferred_acceptance(np.ones((2, 3)), caps)


@pytest.mark.parametrize("values, error, match", [
    ([[1.0, 1j]], InvalidProblemTypeError, r"values must be numbers .*complex number, 1j at index \(0, 1\)"),
    (np.array([[1.0, 2.0 + 1j]]), InvalidProblemTypeError, r"values must be numbers .*complex"),
    ([[1.0, True]], InvalidProblemTypeError, r"values must be numbers .*a bool, True at index \(0, 1\)"),
    ([["1.5", "2"]], InvalidProblemTypeError, r"values must be numbers .*a string"),
    (np.array([[1.0, None]], dtype=object), InvalidProblemTypeError, r"values must be numbers .*got None"),
    (np.array([[10**400, 1]], dtype=object), InvalidProblemError, r"values holds an integer too large for a float64"),
])
def test_values_bad_elements_are_rejected(values, error, match):
    # complex values used to lose their imaginary part silently; True became 1.0
    with pytest.raises(error, match=match):
        deferred_acceptance(values, [1])


def test_is_stable_uint64_worker_job_does_not_wrap_to_idle():
    V = np.array([[1.0, 2.0, 3.0]])
    with pytest.raises(InvalidPlacementError, match=r"worker_job\[0\] = 18446744073709551615 is not a job index"):
        is_stable(V, [1], np.array([2**64 - 1, 0, 2**64 - 1], dtype=np.uint64))
    assert is_stable(V, [1], np.array([2**64 - 1, 0, 2**64 - 1], dtype=np.uint64).view(np.int64)) is False  # int64 -1, 0, -1


def _all_backends(call):
    outs = {b: call(b) for b in BACKENDS}
    first = outs[BACKENDS[0]]
    return first, outs


@pytest.mark.parametrize("scale", [5e-324, 1e-310, 1e-300, 1e-150, 1.0, 1e150])
def test_deferred_acceptance_extreme_values_agree_across_backends(scale):
    rng = np.random.default_rng(int(-math.log10(scale) + 400))
    for t in range(20):
        S, K = int(rng.integers(1, 5)), int(rng.integers(4, 10))
        V = np.round(rng.random((S, K)) * 8) / 8 * scale if t % 2 else rng.random((S, K)) * scale
        if t % 3 == 0:
            V = np.where(rng.random((S, K)) < 0.4, V * (1e-150 if scale > 1 else 1e150), V)
        caps = rng.multinomial(int(rng.integers(0, K + 1)), np.ones(S) / S)
        for form in ("price", "ordinal"):
            first, outs = _all_backends(lambda b: deferred_acceptance(V, caps, form=form, backend=b))
            for r in outs.values():
                assert r.worker_job.tolist() == first.worker_job.tolist()
                assert (r.status, r.welfare, r.rounds, r.bids) == (first.status, first.welfare, first.rounds, first.bids)
                assert np.array_equal(r.job_prices, first.job_prices, equal_nan=True) if form == "price" else True
            assert first.status == "optimal"
            assert math.isfinite(first.welfare)
            if form == "ordinal":
                assert is_stable(V, caps, first.worker_job)


@pytest.mark.parametrize("rho_scale, work_scale, comm_scale", [
    (1e-60, 1e60, 1e90), (1e60, 1e-60, 0.0), (1e-60, 1e-60, 1e-300), (1e60, 1e60, 1e90), (1.0, 1.0, 1.0),
])
def test_market_category_edge_reals_agree_across_backends(rho_scale, work_scale, comm_scale):
    # numba raised ZeroDivisionError (X_i**2 underflowed to 0) where cython returned inf
    rng = np.random.default_rng(3)
    for t in range(10):
        S, K = int(rng.integers(1, 4)), int(rng.integers(4, 9))
        rho = np.clip(rng.random((S, K)) * rho_scale, rho_scale, None) if t % 2 else np.full((S, K), rho_scale)
        rho[:, 1:] *= rng.random((S, K - 1)) < 0.7
        work = np.full(S, work_scale)
        comm = np.minimum(np.cumsum(rng.random((S, K + 1)), axis=1) * comm_scale, 1e90)
        sizes = 1 + rng.multinomial(K - S - int(rng.integers(0, K - S + 1)), np.ones(S) / S)
        for form in ("price", "ordinal"):
            first, outs = _all_backends(lambda b: market_category(rho, work, comm, sizes, form=form, backend=b))
            for r in outs.values():
                assert r.worker_job.tolist() == first.worker_job.tolist()
                assert (r.total_jct, r.filled, r.rounds, r.bids) == (first.total_jct, first.filled, first.rounds, first.bids)
            assert not math.isnan(first.total_jct)
            assert math.isfinite(first.total_jct) or not first.filled


@pytest.mark.parametrize("kwargs, match", [
    (dict(throughput=[[1e-300, 1.0, 1.0], [1.0, 1.0, 1.0]]), r"throughput must have a magnitude in \[1e-60, 1e\+60\] .*got 1e-300 at index \(0, 0\)"),
    (dict(throughput=[[1.0, 1e61, 1.0], [1.0, 1.0, 1.0]]), r"throughput must have a magnitude .*got 1e\+61 at index \(0, 1\)"),
    (dict(work=[1e-61, 1.0]), r"work must have a magnitude in \[1e-60, 1e\+60\] .*got 1e-61 at index 0"),
    (dict(work=[1.0, 1e300]), r"work must have a magnitude .*got 1e\+300 at index 1"),
    (dict(comm_time=np.full((2, 4), 1e101)), r"comm_time must be >= 0 and at most 1e\+100.*got 1e\+101"),
    (dict(comm_time=np.full((2, 4), -np.inf)), r"comm_time must be >= 0.*got -inf"),
])
def test_market_category_out_of_range_reals_are_rejected(kwargs, match):
    args = dict(throughput=np.ones((2, 3)), work=np.ones(2), comm_time=np.zeros((2, 4)), sizes=[1, 1])
    args.update(kwargs)
    for b in BACKENDS:
        with pytest.raises(InvalidProblemError, match=match):
            market_category(**args, backend=b)


def test_market_category_inf_comm_time_scores_inf():
    # Problem.size_cost: +inf for sizes above max_workers (a job's batch)
    p = Problem(throughput=[[100.0, 50.0], [80.0, 40.0]], type_counts=[3, 3], batch=[2, 64],
                iterations=[100, 100], grad_bytes=[1e8, 1e8], bandwidth=1e9)
    assert p.max_workers.tolist() == [2, 6]
    args = (p.worker_throughput, p.work, p.size_cost)
    for form in ("price", "ordinal"):
        over, outs = _all_backends(lambda b: market_category(*args, [3, 2], form=form, backend=b))
        assert all(r.total_jct == math.inf and r.worker_job.tolist() == over.worker_job.tolist() for r in outs.values())
        ok, outs = _all_backends(lambda b: market_category(*args, [2, 3], form=form, backend=b))
        assert all(r.total_jct == ok.total_jct for r in outs.values())
        assert math.isfinite(ok.total_jct) and ok.filled
        same = market_category(p.worker_throughput, p.work, p.comm_time, [2, 3], form=form)
        assert same.total_jct == ok.total_jct and same.worker_job.tolist() == ok.worker_job.tolist()
        assert ok.total_jct == pytest.approx(evaluate(p, ok.worker_job).mean_jct * 2, rel=1e-12)


@pytest.mark.timeout(120)
def test_zero_capacity_jobs_do_not_size_the_auction_workspace():
    # the price kernel took an O((S + 1)**2) workspace: 30,000 jobs on 3 workers asked for 7.2 GB
    import tracemalloc

    V = np.random.default_rng(0).random((30_000, 3))
    caps = np.zeros(30_000, dtype=np.int64)
    caps[[7, 29_999]] = [1, 2]
    for b in BACKENDS:
        tracemalloc.start()
        try:
            r = deferred_acceptance(V, caps, backend=b)
            assert tracemalloc.get_traced_memory()[1] < 2**26
        finally:
            tracemalloc.stop()
        assert r.status == "optimal" and sorted(r.worker_job.tolist()) == [7, 29_999, 29_999]
        assert r.job_prices.shape == (30_000,) and not r.job_prices[caps == 0].any()


def test_zero_capacity_jobs_change_nothing():
    # the kernel sees only the jobs with capacity: inserting empty jobs must not move anything
    for seed in range(60):
        V, caps = random_market(seed)
        S, K = V.shape
        rng = np.random.default_rng(seed)
        extra = int(rng.integers(1, 4))
        pos = np.sort(rng.choice(S + extra, extra, replace=False))
        keep = np.setdiff1d(np.arange(S + extra), pos)
        V2 = np.zeros((S + extra, K))
        V2[keep] = V
        V2[pos] = rng.random((extra, K))
        caps2 = np.zeros(S + extra, dtype=np.int64)
        caps2[keep] = caps
        for b in BACKENDS:
            r1 = deferred_acceptance(V, caps, backend=b)
            r2 = deferred_acceptance(V2, caps2, backend=b)
            assert np.array_equal(np.where(r1.worker_job >= 0, keep[np.maximum(r1.worker_job, 0)], -1), r2.worker_job)
            assert (r1.status, r1.welfare, r1.bound, r1.rounds, r1.bids) == (r2.status, r2.welfare, r2.bound, r2.rounds, r2.bids)
            assert np.array_equal(r1.job_prices, r2.job_prices[keep]) and not r2.job_prices[pos].any()
            assert np.array_equal(r1.prices, r2.prices) and r1.idle_price == r2.idle_price


def test_market_category_takes_the_arrays_of_an_extreme_problem():
    # a Problem at the edges of the supported input range derives throughputs of 1e-60
    # and communication times of 1.5e90: market_category's ranges must take them
    p = Problem(throughput=[[1e-30, 1e-30], [1e-30, 1e-30]], type_counts=[2, 2], batch=[2**53, 2**53],
                iterations=[1e30, 1e30], grad_bytes=[1e30, 1e30], bandwidth=1e-30,
                worker_speed=[1e-30, 1e-30, 1.0, 1.0])
    assert p.worker_throughput.min() < 1.1e-60 and p.size_cost[:, 2].max() > 1e90
    first, outs = _all_backends(lambda b: market_category(p.worker_throughput, p.work, p.size_cost, [2, 2], backend=b))
    assert all(r.total_jct == first.total_jct and r.worker_job.tolist() == first.worker_job.tolist() for r in outs.values())
    assert math.isfinite(first.total_jct) and first.filled
    assert first.total_jct == pytest.approx(evaluate(p, first.worker_job).mean_jct * 2, rel=1e-12)


@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_float16_capacities_are_checked_without_an_overflow_warning(form):
    # the 2**53 limit was compared in float16: "overflow encountered in cast" (fuzz/campaign.py)
    values = np.array([[3.0, 1.0, 2.0, 0.5], [1.0, 4.0, 0.5, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = deferred_acceptance(values, np.array([2, 1], dtype=np.float16), form=form)
    assert np.bincount(res.worker_job[res.worker_job >= 0], minlength=2).tolist() == [2, 1]
