"""Tests of hetplace.lower_bound: validity against the exact optimum, the LP reference, errors.

Validity: on every seeded family of the suite where the optimum is known (brute
force, DP, MILP) the bound is never above it (relative 1e-9), for every feature
the Problem accepts (per-worker speeds, size bounds, down workers, restarts), in
each of the three pricing modes: exact enumeration, the Numba relaxation
(``ENUM_MAX_VECTORS = 0``) and speed buckets rounded up (``MAX_CLASSES = 2``).
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetplace
import hetplace.bound as hb
from hetplace import Problem, lower_bound, solve_exact
from hetplace._core._bound_nb import price_jobs
from hetplace.errors import InvalidOptionError, InvalidProblemTypeError

from instances import (arrival, bounded_instances, departure, gavel_problem, idle_optimal, plain, seeds,
                       tiny_random, with_down)
from reference import config_lp_reference, pricing_reference

REL = 1e-9  # the bound may exceed the optimum by this much (float rounding), never more

MODES = ("enumeration", "relaxation", "buckets", "warm")


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    """The pricing mode: exact enumeration, the Numba relaxation, 2 speed buckets (rounded up),
    or the relaxation warm-started from the one-bucket-per-type LP (whenever a type has 2+ classes)."""
    if request.param != "enumeration":
        monkeypatch.setattr(hb, "ENUM_MAX_VECTORS", 0)
    if request.param == "buckets":
        monkeypatch.setattr(hb, "MAX_CLASSES", 2)
    if request.param == "warm":
        monkeypatch.setattr(hb, "_WARM_CLASSES_PER_TYPE", 1)
    return request.param


def _optimum(p):
    if (p.n_jobs + 1) ** p.n_workers <= hetplace.exact.BRUTE_MAX_ASSIGNMENTS // 10:
        return solve_exact(p, method="brute").objective
    return solve_exact(p, method="milp").objective


def _check_valid(p, opt=None):
    opt = _optimum(p) if opt is None else opt
    res = lower_bound(p)
    assert res.bound <= opt * (1 + REL), (res.bound, opt, res.status)
    assert res.bound > 0
    assert res.status in ("optimal", "feasible")
    if "warm_start" in res.info:
        assert res.info["warm_start"]["bound"] <= opt * (1 + REL)
    if res.placement is not None:
        assert res.placement.mean_jct >= res.bound * (1 - REL)
    return res, opt


# ---------------------------------------------------------------- validity, feature by feature
@pytest.mark.parametrize("seed", seeds(60, fast=12))
def test_valid_tiny(seed, mode):
    _check_valid(tiny_random(seed))


@pytest.mark.parametrize("seed", seeds(30, fast=6))
def test_valid_idle_optimal(seed, mode):
    _check_valid(idle_optimal(seed))


@pytest.mark.parametrize("seed", seeds(30, fast=6))
def test_valid_size_bounds(seed, mode):
    for p in bounded_instances(2, 500 + 7 * seed, K_max=7):
        _check_valid(p)


@pytest.mark.parametrize("seed", seeds(30, fast=6))
def test_valid_down_workers(seed, mode):
    made = (with_down(tiny_random(base, speeds=seed % 2 == 0), seed) for base in range(300 + seed, 400 + seed))
    p = next(q for q in made if q is not None)  # tiny problems on 2 workers have no valid down set
    assert p.n_available < p.n_workers
    _check_valid(p)


@pytest.mark.parametrize("seed", seeds(30, fast=6))
def test_valid_restarts(seed, mode):
    for p in (arrival(seed, seed % 2 == 0), departure(seed, seed % 2 == 1), plain(seed)):
        _check_valid(p)


@pytest.mark.parametrize("seed", seeds(8, fast=2))
def test_valid_gavel_against_dp(seed, mode):
    p = gavel_problem(seed, 16, 4)
    res, opt = _check_valid(p, solve_exact(p, method="dp").objective)
    assert res.bound >= opt * (1 - 0.05)  # and useful


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_valid_and_tight_gavel_64(seed):
    """K = 64, S = 8 (the DP's range): the bound is valid and within 0.5 % of the optimum."""
    p = hetplace.instances.gavel_instance(seed, 64, 8, hetplace.data.gavel_path())
    res, opt = _check_valid(p, solve_exact(p, method="dp").objective)
    assert res.bound >= opt * (1 - 0.005)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(K=st.integers(1, 6), S=st.integers(1, 4), G=st.integers(1, 3), comm=st.booleans(),
       speeds=st.booleans(), seed=st.integers(0, 2**32 - 1), relax=st.booleans())
def test_valid_property(K, S, G, comm, speeds, seed, relax):
    if S > K or G > K:
        return
    p = tiny_random(seed, n_workers=K, n_jobs=S, n_types=G, comm=comm, speeds=speeds)
    saved = hb.ENUM_MAX_VECTORS
    hb.ENUM_MAX_VECTORS = 0 if relax else saved
    try:
        _check_valid(p)
    finally:
        hb.ENUM_MAX_VECTORS = saved


# ---------------------------------------------------------------- against the slow references
@pytest.mark.parametrize("seed", seeds(24, fast=8))
def test_equals_full_lp_reference(seed):
    """Enumeration pricing solves the configuration LP: the bound is the LP with every column."""
    p = [tiny_random, plain, lambda s: arrival(s, s % 2 == 0)][seed % 3](seed)
    ref = config_lp_reference(p)
    res = lower_bound(p)
    assert res.info["pricing"] == "enumeration"
    assert res.status == "optimal"
    assert res.bound == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize("seed", seeds(24, fast=8))
def test_relaxation_below_full_lp_reference(seed, monkeypatch):
    monkeypatch.setattr(hb, "ENUM_MAX_VECTORS", 0)
    p = [tiny_random, plain, lambda s: arrival(s, s % 2 == 0)][seed % 3](seed)
    ref = config_lp_reference(p)
    res = lower_bound(p)
    assert res.info["pricing"] == "relaxation"
    assert res.bound <= ref * (1 + REL)
    # the continuous pricing mixes classes fractionally, weakest on jobs of one or two workers
    # (seen: 67 % of the LP value); production prices such clusters by enumeration
    assert res.bound >= ref * 0.5


@pytest.mark.parametrize("seed", range(40))
def test_pricing_kernel_against_reference(seed):
    """The kernel's bound is <= the enumerated minimum <= the exact value of its integer vector."""
    rng = np.random.default_rng([seed, 2222])
    S, C = 3, int(rng.integers(1, 5))
    m = rng.integers(1, 5, C).astype(np.int64)
    r = rng.uniform(0.5, 10.0, (S, C)) * (rng.random((S, C)) > 0.2)
    r[:, 0] = np.maximum(r[:, 0], 0.5)
    a = rng.uniform(10, 1000, S)
    coef = rng.uniform(0, 30, S) * (rng.random(S) < 0.7)
    lo = rng.integers(1, 3, S).astype(np.int64)
    hi = lo + rng.integers(0, int(m.sum()), S)
    pi = rng.uniform(0, 20, C) * (rng.random(C) < 0.8)
    lb, n, val, size = np.empty(S), np.zeros((S, C), np.int64), np.empty(S), np.empty(S, np.int64)
    price_jobs(r, a, coef, lo, hi, m, pi, lo.copy(), lb, n, val, size)
    for i in range(S):
        ref, _ = pricing_reference(r[i], a[i], coef[i], lo[i], hi[i], m, pi)
        if not math.isfinite(ref):
            assert lb[i] == math.inf
            continue
        assert lb[i] <= ref * (1 + REL)
        assert val[i] >= ref * (1 - REL)
        X, N = float(r[i] @ n[i]), int(n[i].sum())
        assert lo[i] <= N <= hi[i] and (n[i] <= m).all() and not (n[i] * (r[i] == 0)).any()
        exact = a[i] / X + (coef[i] * 2 * (N - 1) / N if N >= 2 else 0.0) + float(pi @ n[i])
        assert val[i] == pytest.approx(exact, rel=1e-12)


# ---------------------------------------------------------------- result, limits, gap
def test_result_fields_and_gap():
    p = gavel_problem(1, 16, 4)
    res = lower_bound(p)
    assert isinstance(res, hetplace.BoundResult) and res.method == "colgen" and res.success
    assert {"iterations", "columns", "lp_value", "classes", "rounded", "pricing", "trace"} <= set(res.info)
    assert res.info["trace"] == sorted(res.info["trace"])  # the bound never falls
    pl = hetplace.place(p, method="greedy")
    assert pl.gap_to_bound(res) == pl.gap_to_bound(res.bound) == pl.mean_jct / res.bound - 1
    assert pl.gap_to_bound(res) >= pl.gap_to(solve_exact(p, method="dp")) - 1e-12
    alone = lower_bound(p, method="alone")
    assert alone.bound <= res.bound * (1 + REL) and alone.method == "alone"


def test_time_limit_returns_a_valid_bound(monkeypatch):
    monkeypatch.setattr(hb, "ENUM_MAX_VECTORS", 0)
    p = hetplace.instances.gavel_instance(0, 256, 32, hetplace.data.gavel_path())
    res = lower_bound(p, time_limit=1e-6)
    assert res.status == "time_limit" and res.info["iterations"] == 1
    assert 0 < res.bound <= lower_bound(p).bound * (1 + REL)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("method", ["exact", "", None, 3, "col gen"])
def test_bad_method(method):
    with pytest.raises(InvalidOptionError, match=r"method=.*choose one of 'auto', 'colgen', 'alone'"):
        lower_bound(tiny_random(0), method=method)


@pytest.mark.parametrize("limit", [0, -1, math.nan, math.inf, "1", True])
def test_bad_time_limit(limit):
    with pytest.raises(InvalidOptionError, match="time_limit"):
        lower_bound(tiny_random(0), time_limit=limit)


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, 10**6])
def test_bad_threads(threads):
    with pytest.raises(InvalidOptionError, match="threads"):
        lower_bound(tiny_random(0), threads=threads)


def test_bad_problem():
    with pytest.raises(InvalidProblemTypeError):
        lower_bound({"throughput": [[1.0]]})


@pytest.mark.parametrize("bound", [0, -1.0, math.nan, math.inf, "1", None, True])
def test_gap_to_bound_bad(bound):
    pl = hetplace.place(tiny_random(0), method="greedy")
    with pytest.raises(InvalidOptionError, match="bound must be a BoundResult"):
        pl.gap_to_bound(bound)


def test_single_worker_single_job():
    p = Problem([[2.0]], [1], [4], [10.0])
    res = lower_bound(p)
    assert res.bound == pytest.approx(20.0, rel=1e-9) and res.bound <= 20.0
