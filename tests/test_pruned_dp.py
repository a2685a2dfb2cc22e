"""solve_exact(method="pruned-dp"): the type DP pruned by the configuration LP's bound (docs/model.md §4.9).

It must be exact: the same optimum (relative 1e-9) as the plain type DP, brute force and the
MILP wherever they run, with restarts, size bounds and down workers; and when it stops early
(time limit, state cap) it returns a feasible placement with a valid bound.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetplace.exact as exact
from hetplace import InvalidOptionError, Problem, solve_exact

from instances import arrival, bounded_instances, down_instances, gavel_arrival, gavel_problem, seeds, tiny_random

REL = 1e-9


def _agrees(p, ref):
    res = solve_exact(p, method="pruned-dp")
    assert res.status == "optimal" and res.method == "pruned-dp" and res.gap == 0.0
    assert res.objective == pytest.approx(ref.objective, rel=REL)
    assert res.bound <= ref.objective * (1 + REL)
    return res


@pytest.mark.parametrize("seed", seeds(40, 12))
def test_matches_brute_force_on_tiny_instances(seed):
    p = tiny_random(seed, speeds=False)
    _agrees(p, solve_exact(p, method="brute"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(K=st.integers(1, 6), S=st.integers(1, 4), G=st.integers(1, 3), comm=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_matches_brute_force_property(K, S, G, comm, seed):
    if S > K or G > K:
        return
    p = tiny_random(seed, n_workers=K, n_jobs=S, n_types=G, comm=comm, speeds=False)
    _agrees(p, solve_exact(p, method="brute"))


@pytest.mark.parametrize("seed", seeds(12, 4))
@pytest.mark.parametrize("K, S", [(16, 4), (24, 6), (32, 8)])
def test_matches_the_type_dp_on_gavel_instances(seed, K, S):
    p = gavel_problem(seed, K, S)
    res = _agrees(p, solve_exact(p, method="dp"))
    assert res.info["candidates"] >= S and res.info["incumbent"] in ("smp", "greedy", "pruned-dp")


@pytest.mark.parametrize("seed", seeds(8, 3))
def test_matches_the_type_dp_with_restarts(seed):
    p = gavel_arrival(seed, 16, 4)
    _agrees(p, solve_exact(p, method="dp"))


@pytest.mark.parametrize("seed", seeds(8, 3))
def test_matches_brute_force_on_uniform_arrivals(seed):
    p = arrival(seed, speeds=False)
    _agrees(p, solve_exact(p, method="brute"))


def test_matches_the_type_dp_with_size_bounds_and_down_workers():
    bounded = bounded_instances(20, 500, K_max=12, S_max=4)
    down = [p for _, p in down_instances(lambda s: gavel_problem(s, 16, 4), range(6))]
    checked = 0
    for p in bounded + down:
        if np.any(p.available & (p.worker_speed != 1.0)):
            continue  # per-worker speeds: the type DPs refuse them
        _agrees(p, solve_exact(p, method="dp"))
        checked += 1
    assert checked >= 12


@pytest.mark.parametrize("seed", range(3))
def test_matches_the_milp(seed):
    p = gavel_problem(seed, 12, 3)
    _agrees(p, solve_exact(p, method="milp"))


def test_state_cap_returns_the_incumbent_with_a_valid_bound(monkeypatch):
    p = gavel_problem(1, 32, 8)
    opt = solve_exact(p, method="dp").objective
    monkeypatch.setattr(exact, "PRUNED_DP_MAX_STATES", 0)
    res = solve_exact(p, method="pruned-dp")
    if res.status == "feasible":  # the incumbent may also be proven optimal before any state is kept
        assert "PRUNED_DP_MAX_STATES" in res.message
        assert res.bound <= opt * (1 + REL) <= res.objective * (1 + REL)
        assert 0 <= res.gap < 1


def test_time_limit_returns_a_feasible_placement_and_a_valid_bound():
    p = gavel_problem(2, 32, 8)
    opt = solve_exact(p, method="dp").objective
    res = solve_exact(p, method="pruned-dp", time_limit=1e-6)
    assert res.status in ("feasible", "optimal") and res.placement is not None
    assert res.bound <= opt * (1 + REL) <= res.objective * (1 + REL)


def test_auto_runs_it_where_the_plain_dp_is_too_large(monkeypatch):
    p = gavel_problem(3, 24, 6)
    monkeypatch.setattr(exact, "AUTO_DP_MAX_WORK", 10)
    res = solve_exact(p)
    assert res.method == "pruned-dp" and res.status == "optimal"
    assert res.objective == pytest.approx(solve_exact(p, method="dp").objective, rel=REL)


def test_refuses_per_worker_speeds_and_too_many_vectors(monkeypatch):
    p = Problem([[1.0, 2.0]], [1, 2], [8], [10], worker_speed=[1.0, 0.5, 1.0])
    with pytest.raises(InvalidOptionError, match=r"method='pruned-dp' needs every worker_speed to be 1 .*"
                       r"worker 1 has speed 0\.5\)\. Use method='milp'"):
        solve_exact(p, method="pruned-dp")
    q = Problem([[1.0, 2.0]], [3, 4], [8], [10])
    monkeypatch.setattr(exact, "PRUNED_DP_MAX_VECTORS", 10)
    with pytest.raises(InvalidOptionError, match=r"method='pruned-dp' prices every job's prod\(type_counts \+ 1\) "
                       r"= 20 count vectors .*PRUNED_DP_MAX_VECTORS = 10 .*Use method='milp'"):
        solve_exact(q, method="pruned-dp")


@pytest.mark.parametrize("seed", range(6))
def test_rounds_targets_rise_and_bracket_the_optimum(seed):
    p = gavel_problem(seed, 32, 8)
    opt = solve_exact(p, method="dp").objective
    res = solve_exact(p, method="pruned-dp")
    rounds = res.info["rounds"]
    targets = [r["target"] for r in rounds]  # none when the incumbent meets the Lagrangian bound
    assert targets == sorted(targets) and all(t >= res.info["lagrangian_bound"] for t in targets)
    assert res.info["lagrangian_bound"] <= opt * (1 + REL)
    for r in rounds[:-1]:  # found nothing: the optimum is above their targets
        assert opt >= r["target"] * (1 - REL)
    assert res.objective == pytest.approx(opt, rel=REL)
    assert res.info["states"] == sum(sum(r["stage_states"]) for r in rounds)
