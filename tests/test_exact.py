"""Tests of hetplace.exact: MILP vs brute force vs type DP, solvers, limits, errors."""
import math
import subprocess
import sys
import time

import numpy as np
import pytest

import hetplace.exact as exact
from hetplace import Problem
from hetplace.errors import InvalidOptionError, InvalidProblemTypeError
from hetplace.exact import ExactResult, solve_exact

from instances import gavel_problem, idle_optimal, tiny_random
from reference import brute_force_reference, mean_jct_reference, type_dp_reference

REL = 1e-9  # MILP optimum vs brute force / DP (relative, on the mean JCT)
# CP-SAT solves a model whose continuous variables are rounded to a 1e-6 grid
# (hetplace.exact._CPSAT_VAR_SCALING): its optimum may differ by ~1e-6 relative.
CPSAT_REL = 1e-5


def _close(a, b, rel=REL):
    return abs(a - b) <= rel * abs(b)


def _tiny(seed):
    """Seeds cycle through the four (communication, per-worker speeds) combinations."""
    return tiny_random(seed, comm=seed % 2 == 0, speeds=(seed // 2) % 2 == 0)


@pytest.fixture(scope="module")
def gavel():
    return gavel_problem


# ---------------------------------------------------------------- (1) MILP == brute force
@pytest.mark.parametrize("seed", range(200))
def test_milp_equals_brute_force_tiny(seed):
    p = _tiny(seed)
    brute = solve_exact(p, method="brute")
    milp = solve_exact(p, method="milp")
    assert milp.status == "optimal" and milp.success
    assert _close(milp.objective, brute.objective), (p, milp, brute)
    assert milp.bound <= milp.objective
    assert milp.gap < 1e-6


@pytest.mark.parametrize("seed", range(60))
def test_milp_equals_brute_force_idle_optimal(seed):
    p = idle_optimal(seed)
    brute = solve_exact(p, method="brute")
    milp = solve_exact(p, method="milp")
    assert milp.status == "optimal"
    assert _close(milp.objective, brute.objective), (p, milp, brute)


def test_some_optima_leave_workers_idle():
    idle_brute = idle_milp = 0
    for seed in range(60):
        p = idle_optimal(seed)
        idle_brute += bool(np.any(solve_exact(p, method="brute").placement.worker_job < 0))
        idle_milp += bool(np.any(solve_exact(p, method="milp").placement.worker_job < 0))
    # measured: 59 of these 60 optima leave a worker idle
    assert idle_brute >= 30
    assert idle_milp >= 30


def test_without_communication_no_worker_is_idle():
    # adding a usable worker always lowers a job's compute time, so with no
    # communication an optimum idles only workers no job can use
    for seed in range(20):
        p = tiny_random(seed, comm=False, zeros=False)
        assert np.all(solve_exact(p, method="milp").placement.worker_job >= 0)


@pytest.mark.parametrize("seed", range(40))
def test_cython_brute_force_equals_python_reference(seed):
    K = 2 + seed % 5
    p = tiny_random(seed, n_workers=K, n_jobs=1 + seed % min(3, K))
    ref_value, ref_assignment = brute_force_reference(p)
    res = solve_exact(p, method="brute")
    assert _close(res.objective, ref_value, 1e-12)
    assert _close(mean_jct_reference(p, res.placement.worker_job), ref_value, 1e-12)
    assert _close(mean_jct_reference(p, ref_assignment), res.objective, 1e-12)


def test_milp_worker_formulation_equals_class_formulation():
    # the per-worker binary model x[i,k] (every worker its own class) is the same MILP
    for seed in range(30):
        p = _tiny(seed)
        a = exact._solve_milp(p, "scip", None, None, False, time.perf_counter(), grouping="workers")
        b = exact._solve_milp(p, "scip", None, None, False, time.perf_counter(), grouping="classes")
        assert _close(a.objective, b.objective)


# ---------------------------------------------------------------- (2) MILP == type DP (Gavel)
GAVEL_CASES = [(K, S, seed) for seed in range(3) for K, S in
               [(4, 2), (6, 3), (8, 2), (8, 4), (10, 5), (12, 3), (12, 6), (14, 4), (16, 2),
                (16, 5), (18, 4), (20, 3), (20, 6), (22, 4), (24, 2), (24, 4), (24, 6)]]


@pytest.mark.parametrize("K,S,seed", GAVEL_CASES)
def test_milp_equals_type_dp_gavel(gavel, K, S, seed):
    p = gavel(seed, K, S, comm=seed != 2)
    dp = solve_exact(p, method="dp")
    milp = solve_exact(p, method="milp")
    assert dp.status == milp.status == "optimal"
    assert _close(milp.objective, dp.objective), (p, milp, dp)
    assert dp.bound == dp.objective and dp.gap == 0.0


def test_gavel_cases_count():
    assert len(GAVEL_CASES) >= 50


@pytest.mark.parametrize("seed", range(25))
def test_type_dp_equals_python_reference(seed):
    p = tiny_random(seed, n_workers=3 + seed % 6, speeds=False)
    value, y = type_dp_reference(p)
    res = solve_exact(p, method="dp")
    assert _close(res.objective, value, 1e-12)
    assert _close(res.info["dp_total_jct"] / p.n_jobs, value, 1e-12)
    assert np.all(y.sum(axis=0) <= p.type_counts)


@pytest.mark.parametrize("seed", range(25))
def test_type_dp_equals_brute_force(seed):
    p = tiny_random(seed, speeds=False)
    assert _close(solve_exact(p, method="dp").objective, solve_exact(p, method="brute").objective)


def test_dp_places_type_counts_in_worker_order():
    # job 0 runs only on type 1, job 1 on both: check the worker_job built from y[i, g]
    p = Problem([[0.0, 5.0], [4.0, 1.0]], [2, 3], [64, 64], [100, 100])
    res = solve_exact(p, method="dp")
    wj = res.placement.worker_job
    assert wj.tolist() == [1, 1, 0, 0, 0]
    assert _close(res.objective, brute_force_reference(p)[0])


# ---------------------------------------------------------------- (3) solvers agree
@pytest.mark.parametrize("solver", ["highs", "cp-sat"])
@pytest.mark.parametrize("seed", range(30))
def test_other_solvers_agree_with_scip_tiny(solver, seed):
    p = _tiny(seed) if seed % 3 else idle_optimal(seed)
    ref = solve_exact(p, method="milp", solver="scip")
    res = solve_exact(p, method="milp", solver=solver)
    assert res.status == "optimal"
    assert _close(res.objective, ref.objective, REL if solver == "highs" else CPSAT_REL)
    assert res.bound <= res.objective
    assert res.solver == {"highs": "HiGHS", "cp-sat": "CP-SAT"}[solver]


@pytest.mark.parametrize("solver", ["highs", "cp-sat"])
@pytest.mark.parametrize("K,S", [(8, 3), (12, 4), (16, 3)])
def test_other_solvers_agree_with_dp_gavel(gavel, solver, K, S):
    p = gavel(5, K, S)
    ref = solve_exact(p, method="dp")
    res = solve_exact(p, method="milp", solver=solver)
    assert res.status == "optimal"
    assert _close(res.objective, ref.objective, REL if solver == "highs" else CPSAT_REL)


# ---------------------------------------------------------------- (4) time limit
@pytest.fixture(scope="module")
def big_problem():
    # per-worker speeds (no DP), 80 workers, 10 jobs with communication: no solver
    # proves optimality within 1 s (measured: SCIP returns an incumbent, HiGHS and
    # CP-SAT none)
    rng = np.random.default_rng(4)
    K, S, G = 80, 10, 4
    rho = rng.uniform(1.0, 10.0, (S, G))
    batch = rng.integers(32, 512, S)
    iters = rng.uniform(1e3, 1e4, S)
    grad = rng.uniform(0.1, 1.0, S) * batch / rho.mean(axis=1) * 1e9
    return Problem(rho, [K // G] * G, batch, iters, grad, 1e9, rng.uniform(0.2, 1.0, K))


@pytest.mark.parametrize("solver", ["scip", "highs", "cp-sat"])
def test_time_limit_is_honoured(big_problem, solver):
    res = solve_exact(big_problem, method="milp", solver=solver, time_limit=1, threads=1)
    assert res.status in ("feasible", "no_solution"), res
    assert not res.success
    assert res.info["solve_time"] < 6.0  # limit 1 s; generous for a loaded machine
    assert res.bound is not None and res.bound > 0
    if res.status == "feasible":
        assert res.placement is not None
        assert res.bound <= res.objective
        assert 0.0 <= res.gap <= 1.0
        assert res.objective == res.placement.mean_jct
    else:
        assert res.placement is None and res.objective is None and res.gap is None


def test_auto_respects_per_worker_speeds():
    small = tiny_random(3, speeds=True)
    assert solve_exact(small).method == "milp"
    uniform = tiny_random(3, speeds=False)
    assert solve_exact(uniform).method == "dp"


# ---------------------------------------------------------------- results
def test_result_fields_and_repr():
    p = tiny_random(11)
    res = solve_exact(p, method="milp", solver="SCIP")
    assert isinstance(res, ExactResult)
    assert res.method == "milp" and res.solver == "SCIP"
    assert res.success and res.status == "optimal"
    assert res.objective == res.placement.mean_jct
    assert res.wall_time > 0
    assert res.placement.method == "exact"
    text = repr(res)
    assert text.startswith("ExactResult(status='optimal', method='milp', solver='SCIP'")
    assert "objective=" in text and "gap=" in text


def test_solver_aliases():
    p = tiny_random(12)
    assert solve_exact(p, method="milp", solver="cpsat").solver == "CP-SAT"
    assert solve_exact(p, method="milp", solver="CP-SAT").solver == "CP-SAT"
    assert solve_exact(p, method="milp", solver="HiGHS").solver == "HiGHS"
    assert solve_exact(p, method="MILP").method == "milp"


def test_objective_is_reevaluated_not_solver_value():
    p = tiny_random(13)
    res = solve_exact(p, method="milp", solver="cp-sat")
    assert res.objective == res.placement.mean_jct
    assert _close(res.objective, mean_jct_reference(p, res.placement.worker_job), 1e-12)


def test_importing_exact_compiles_nothing():
    code = (
        "import sys, hetplace, hetplace.exact; "
        "print('hetplace._core._dp_nb' in sys.modules, 'ortools.linear_solver.pywraplp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------- (5) errors
def test_error_method():
    with pytest.raises(
        InvalidOptionError, match=r"method must be one of 'auto', 'dp', 'milp', 'brute'; got 'exact'\."
    ):
        solve_exact(tiny_random(0), method="exact")
    with pytest.raises(InvalidOptionError, match=r"method must be one of .*; got None\."):
        solve_exact(tiny_random(0), method=None)


def test_error_solver():
    with pytest.raises(
        InvalidOptionError,
        match=r"solver must be one of 'scip', 'cp-sat' \(or 'cpsat'\), 'highs' \(case-insensitive\); "
        r"got 'gurobi'\.",
    ):
        solve_exact(tiny_random(0), solver="gurobi")


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, 0.0])
def test_error_time_limit_value(value):
    with pytest.raises(
        InvalidOptionError,
        match=r"time_limit must be a positive finite number of seconds or None \(no limit\); got ",
    ):
        solve_exact(tiny_random(0), time_limit=value)


@pytest.mark.parametrize("value", ["10", True, [1]])
def test_error_time_limit_type(value):
    with pytest.raises(
        InvalidOptionError,
        match=r"time_limit must be a positive number of seconds or None \(no limit\); got ",
    ):
        solve_exact(tiny_random(0), time_limit=value)


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2"])
def test_error_threads(value):
    with pytest.raises(
        InvalidOptionError, match=r"threads must be a positive integer or None \(solver default\); got "
    ) as info:
        solve_exact(tiny_random(0), threads=value)
    assert repr(value) in str(info.value)


def test_error_verbose():
    with pytest.raises(InvalidOptionError, match=r"verbose must be True or False; got 'yes'\."):
        solve_exact(tiny_random(0), verbose="yes")


def test_error_problem_type():
    with pytest.raises(InvalidProblemTypeError, match=r"problem must be a hetplace.Problem; got dict\."):
        solve_exact({"throughput": [[1.0]]})


def test_error_dp_with_per_worker_speeds():
    p = Problem([[1.0, 2.0]], [1, 2], [8], [10], worker_speed=[1.0, 0.5, 1.0])
    with pytest.raises(
        InvalidOptionError,
        match=r"method='dp' needs every worker_speed to be 1 .*worker 1 has speed 0\.5\)\. "
        r"Use method='milp' \(exact for per-worker speeds\) or method='auto'\.",
    ):
        solve_exact(p, method="dp")


def test_error_dp_state_space(monkeypatch):
    p = Problem([[1.0, 2.0]], [3, 4], [8], [10])
    monkeypatch.setattr(exact, "DP_MAX_STATES", 10)
    with pytest.raises(
        InvalidOptionError,
        match=r"method='dp' needs prod\(type_counts \+ 1\) = 20 states and n_jobs \* states = 20 "
        r"back-pointers; the caps are DP_MAX_STATES = 10 and DP_MAX_TABLE = .*\. "
        r"Use method='milp' \(or method='auto'\)\.",
    ):
        solve_exact(p, method="dp")
    assert solve_exact(p, method="auto").method == "milp"


def test_error_brute_too_large():
    p = Problem(np.ones((4, 1)), [12], [8] * 4, [10] * 4)
    with pytest.raises(
        InvalidOptionError,
        match=r"method='brute' would enumerate \(n_jobs \+ 1\) \*\* n_workers = 5\*\*12 = 244,140,625 "
        r"assignments, above BRUTE_MAX_ASSIGNMENTS = 50,000,000\. Use method='dp', 'milp' or 'auto'\.",
    ):
        solve_exact(p, method="brute")


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        solve_exact(tiny_random(0), method="nope")
