"""Job weights, ``Problem(weight=)`` (docs/model.md §1.5): every method of tests/methods.py honours them.

The objective is ``sum_i w_i JCT_i / sum_i w_i`` (restart losses weighted alike);
``Placement.jct`` stays each job's own JCT.  The exact methods are compared with
brute force, brute force with the slow reference of tests/reference.py.
"""

import copy
import math
import pickle

import numpy as np
import pytest

from hetplace import Problem, evaluate, lower_bound, place, solve_exact
from hetplace.errors import HetplaceError

from instances import arrival, departure, plain, tiny_random, with_bounds, with_down, with_weights
from methods import EXACT, HEURISTIC, METHODS, SMP, rows_for, run
from reference import brute_force_reference, weighted_objective_reference


def _instances():
    """Tiny weighted instances: plain, per-worker speeds, size bounds, down workers, restarts."""
    out = []
    for seed in range(4):
        out.append((f"tiny{seed}", with_weights(tiny_random(seed, n_workers=5, n_jobs=3, comm=True), seed)))
        out.append((f"speeds{seed}", with_weights(tiny_random(seed + 10, n_workers=5, n_jobs=3, speeds=True), seed)))
        b = with_bounds(tiny_random(seed + 20, n_workers=6, n_jobs=3, comm=True), np.random.default_rng(seed))
        if b is not None:
            out.append((f"bounds{seed}", with_weights(b, seed)))
        d = with_down(tiny_random(seed + 30, n_workers=6, n_jobs=3), seed)
        if d is not None:
            out.append((f"down{seed}", with_weights(d, seed)))
    for seed in range(3):
        for make in (arrival, departure):
            p = make(seed, seed % 2 == 1)
            if (p.n_jobs + 1) ** p.n_workers <= 200_000:
                out.append((f"{make.__name__}{seed}", with_weights(p, seed, spread=30.0)))
        out.append((f"plain{seed}", with_weights(plain(seed), seed)))
    return out


INSTANCES = _instances()
IDS = [name for name, _ in INSTANCES]


def _brute(problem):
    return solve_exact(problem, method="brute")


def test_instances_cover_the_features():
    problems = [p for _, p in INSTANCES]
    assert any(p.replacing for p in problems)
    assert any(p.bounded for p in problems)
    assert any(not p.available.all() for p in problems)
    assert any(not p.uniform_speed for p in problems)
    assert any(p.uniform_speed for p in problems)


@pytest.mark.parametrize("name,problem", INSTANCES, ids=IDS)
def test_evaluate_is_the_weighted_reference(name, problem):
    rng = np.random.default_rng(7)
    plain_problem = Problem.from_dict({k: v for k, v in problem.to_dict().items() if k != "weight"})
    best = _brute(problem).placement
    for wj in [best.worker_job] + [np.array(brute_row) for brute_row in _random_feasible(problem, rng, 5)]:
        pl = evaluate(problem, wj)
        assert pl.mean_jct == pytest.approx(weighted_objective_reference(problem, wj), rel=1e-12)
        # each job's own JCT and slowdown: the weights change the mean only
        own = evaluate(plain_problem, wj)
        np.testing.assert_array_equal(pl.jct, own.jct)
        np.testing.assert_array_equal(pl.slowdown, own.slowdown)
    np.testing.assert_array_equal(problem.jct_alone, plain_problem.jct_alone)
    np.testing.assert_array_equal(problem.work, plain_problem.work)
    np.testing.assert_array_equal(problem.restart_cost, plain_problem.restart_cost)


def _random_feasible(problem, rng, count):
    from hetplace.baselines import random_placement

    return [random_placement(problem, rng) for _ in range(count)]


@pytest.mark.parametrize("name,problem", [x for x in INSTANCES if (x[1].n_jobs + 1) ** x[1].n_workers <= 1500],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_brute_is_the_reference_optimum(name, problem):
    ref, _ = brute_force_reference(problem, weighted_objective_reference)
    assert _brute(problem).objective == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("row", EXACT, ids=str)
def test_exact_methods_equal_brute_force(row):
    checked = 0
    for name, problem in INSTANCES:
        if not row.applies(problem):
            continue
        opt = _brute(problem).objective
        pl = run(row, problem)
        # a solver's value that fails verification is downgraded honestly (HiGHS on down0's scaled
        # problem, an unweighted Problem: a solver fault the check catches); the placement is optimal
        assert pl.info["status"] == "optimal" or row.name == "exact-milp-highs", name
        assert pl.mean_jct == pytest.approx(opt, rel=row.rel), name
        assert pl.mean_jct == pytest.approx(weighted_objective_reference(problem, pl.worker_job), rel=1e-12)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("row", SMP + tuple(m for m in METHODS if m.name == "auto"), ids=str)
def test_smp_near_the_weighted_optimum(row):
    gaps = []
    for name, problem in INSTANCES:
        if not row.applies(problem):
            continue
        opt = _brute(problem).objective
        got = run(row, problem).mean_jct
        assert got >= opt * (1 - 1e-12), name
        gaps.append(got / opt - 1)
    assert gaps and max(gaps) <= 0.05 and float(np.mean(gaps)) <= 0.01, gaps


@pytest.mark.parametrize("row", HEURISTIC, ids=str)
def test_heuristics_place_the_weighted_problem(row):
    """Every heuristic optimises the weighted objective: it places ``objective_problem`` (greedy's gains weighted)."""
    for name, problem in INSTANCES:
        if not row.applies(problem):
            continue
        pl = run(row, problem)
        twin = run(row, problem.objective_problem)
        np.testing.assert_array_equal(pl.worker_job, twin.worker_job, err_msg=name)
        assert pl.mean_jct == pytest.approx(twin.mean_jct * problem.objective_scale, rel=1e-12)


def test_weights_change_the_greedy_choice():
    """A heavy job gets what greedy gives the heavy job: weights reach the marginal gains."""
    changed = 0
    for seed in range(20):
        p = tiny_random(seed, n_workers=6, n_jobs=3)
        w = np.ones(p.n_jobs)
        w[0] = 50.0
        q = Problem.from_dict({**p.to_dict(), "weight": w.tolist()})
        a, b = place(p, "greedy"), place(q, "greedy")
        assert b.sizes[0] >= a.sizes[0] or not np.array_equal(a.worker_job, b.worker_job)
        changed += not np.array_equal(a.worker_job, b.worker_job)
    assert changed > 0


@pytest.mark.parametrize("row", METHODS, ids=str)
def test_unit_weights_give_todays_optimum(row):
    for name, weighted in INSTANCES[:5]:
        data = {k: v for k, v in weighted.to_dict().items() if k != "weight"}
        p = Problem.from_dict(data)
        if not row.applies(p):
            continue
        ones = Problem.from_dict({**data, "weight": [1.0] * p.n_jobs})
        none = Problem.from_dict({**data, "weight": None})
        a, b, c = run(row, p), run(row, ones), run(row, none)
        np.testing.assert_array_equal(a.worker_job, c.worker_job)  # weight=None: today's path, same bits
        assert a.mean_jct == c.mean_jct
        assert ones.objective_scale == 1.0
        if row.exact:
            assert b.mean_jct == pytest.approx(a.mean_jct, rel=row.rel), name
        else:
            assert b.mean_jct == pytest.approx(a.mean_jct, rel=1e-12), name


@pytest.mark.parametrize("name,problem", INSTANCES, ids=IDS)
def test_lower_bound_bounds_the_weighted_optimum(name, problem):
    opt = _brute(problem).objective
    assert lower_bound(problem, method="alone").bound <= opt * (1 + 1e-12)
    res = lower_bound(problem)
    assert 0.5 * opt <= res.bound <= opt * (1 + 1e-12), (res.bound, opt)  # valid, and not a trivial 0
    if res.placement is not None:
        assert res.placement.problem is problem and res.placement.mean_jct >= opt * (1 - 1e-12)


@pytest.mark.parametrize("row", EXACT, ids=str)
def test_scaling_the_weights_changes_no_exact_placement(row):
    for name, problem in INSTANCES[:6]:
        if not row.applies(problem):
            continue
        base = run(row, problem)
        for c in (3.0, 1e-3):
            scaled = Problem.from_dict({**problem.to_dict(), "weight": (problem.weight * c).tolist()})
            pl = run(row, scaled)
            np.testing.assert_array_equal(pl.worker_job, base.worker_job, err_msg=f"{name} c={c}")
            assert pl.mean_jct == pytest.approx(base.mean_jct, rel=1e-12)


def test_exact_result_and_bound_in_weighted_units():
    _, problem = INSTANCES[0]
    res = solve_exact(problem, method="milp")
    assert res.placement.problem is problem
    assert res.objective == res.placement.mean_jct
    assert res.bound == pytest.approx(res.objective, rel=1e-6)
    assert res.placement.gap_to(res.objective) == 0.0
    assert res.placement.gap_to_bound(lower_bound(problem).bound) >= -1e-12


def test_weights_survive_pickle_copy_and_dicts():
    _, problem = INSTANCES[0]
    for q in (pickle.loads(pickle.dumps(problem)), copy.deepcopy(problem), copy.copy(problem),
              Problem.from_dict(problem.to_dict()), problem.with_worker_speed(problem.worker_speed)):
        np.testing.assert_array_equal(q.weight, problem.weight)
        assert not q.weight.flags.writeable
        assert q.objective_scale == problem.objective_scale
        np.testing.assert_array_equal(q.objective_problem.work, problem.objective_problem.work)
        assert evaluate(q, place(problem, "greedy").worker_job).mean_jct == place(problem, "greedy").mean_jct
    assert "weighted" in repr(problem)


def test_unweighted_problem_has_no_weight():
    p = tiny_random(1)
    assert p.weight is None and p.objective_problem is p and p.objective_scale == 1.0
    assert "weight" not in p.to_dict()


@pytest.mark.parametrize("bad,fragment", [
    ([1.0, 2.0], "shape (3,)"),
    ([1.0, 0.0, 1.0], "> 0"),
    ([1.0, -2.0, 1.0], "> 0"),
    ([1.0, math.nan, 1.0], "finite"),
    ([1.0, math.inf, 1.0], "finite"),
    ([True, True, False], "weight"),
    (["a", "b", "c"], "weight"),
    ("heavy", "weight"),
    ([[1.0, 2.0, 3.0]], "shape"),
])
def test_bad_weights_are_named(bad, fragment):
    p = tiny_random(2, n_workers=4, n_jobs=3)
    with pytest.raises(HetplaceError) as err:
        Problem.from_dict({**p.to_dict(), "weight": bad})
    assert "weight" in str(err.value) and fragment in str(err.value)


def test_weight_out_of_range_is_named():
    """Weights live in the supported range (1e-30..1e30), so ``weight * work`` cannot overflow."""
    p = tiny_random(2, n_workers=4, n_jobs=3)
    with pytest.raises(HetplaceError, match=r"weight must have a magnitude .* got 1e\+300"):
        Problem.from_dict({**p.to_dict(), "weight": [1.0, 1e300, 1.0]})


def test_weight_range_too_wide_is_named():
    """Weights 1e60 apart scale some job's iterations below the supported range: the error names weight."""
    p = tiny_random(2, n_workers=4, n_jobs=3)
    with pytest.raises(HetplaceError, match=r"weight = .* spans too wide a range.*Give weights within"):
        Problem.from_dict({**p.to_dict(), "weight": [1e-30, 1.0, 1e30]})


def test_file_writers_refuse_weights(tmp_path):
    """The cluster TOML / job CSV formats have no weight field: writing refuses rather than drop it."""
    from hetplace.errors import InvalidOptionError
    from hetplace.io import write_jobs

    _, problem = INSTANCES[0]
    with pytest.raises(InvalidOptionError, match=r"job weights \(weight\)"):
        write_jobs(tmp_path / "jobs.csv", problem)
