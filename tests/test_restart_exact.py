"""Exact methods with re-placement: ``Problem(current=, restart_time=)`` (issue 10).

The objective is the mean over jobs of ``JCT_i + restart_cost_i * restarted_i``
(docs/model.md §1.4).  Seeded tiny instances where one job arrives while the
others run (``current`` = an optimal or a random feasible placement of the
others; ``restart_time`` 1-30 % of each running job's JCT there), or where one
running job has left (its workers idle in ``current``), with uniform and
per-worker speeds, some with workers down and size bounds.  Brute force is the
oracle; a plain-Python brute force and a plain-Python type DP with the keep
option, both written here from the definition, check it and the DP kernel.
Results without ``current`` are compared with the ones recorded before the
restart cost existed (bit for bit for hetplace's own methods, to a tolerance where a
third-party solver decides the digits) (``data/restart_exact_baseline.json``).

Run as a script with the pre-restart code on PYTHONPATH to write that file again:
``PYTHONPATH=<checkout of ef0bc5d> python tests/test_restart_exact.py --write-baseline``.
"""
import functools
import itertools
import json
import math
import os
import sys
import time

import numpy as np
import pytest

import hetplace.exact as exact
from hetplace import Problem, evaluate, solve_exact
from hetplace.baselines import greedy_placement, keep_greedy_placement

from instances import arrival, departure, gavel_arrival, plain
from methods import EXACT, MILP_SOLVERS, run
from reference import brute_force_reference, objective_reference, restarted_reference

REL = 1e-9  # SCIP / HiGHS / DP vs brute force (relative, on the mean JCT)
CPSAT_REL = 1e-5  # CP-SAT's continuous variables live on a 1e-6 grid (hetplace.exact)
N_INSTANCES = 120  # per family (arrivals; departures: half as many)
BASELINE = os.path.join(os.path.dirname(__file__), "data", "restart_exact_baseline.json")
SOLVERS = MILP_SOLVERS  # one per solver of hetplace.exact.SOLVERS (tests/methods.py)


def _close(a, b, rel=REL):
    return abs(a - b) <= rel * abs(b)


# ---------------------------------------------------------------- instances
# ---------------------------------------------------------------- references
def brute_reference(problem):
    """Best ``(objective, worker_job)`` over all ``(S+1)**K`` maps (itertools.product)."""
    return brute_force_reference(problem, objective_reference)


def slow_dp_reference(problem):
    """Optimal objective over type-count matrices of the available workers, with the keep option.

    For uniform speeds: available workers of one type are interchangeable, so a
    placement is a matrix ``y[i, g]``.  A running job pays its restart time
    unless its vector equals the type counts of its current workers, all of
    them up and their number within its bounds (then it keeps them: the
    current sets are disjoint, so every such job can).  Plain recursion over
    jobs, memoised on the free vector.  Returns the mean.
    """
    S, G = problem.n_jobs, problem.n_types
    up = np.asarray(problem.available, dtype=bool)
    free0 = tuple(int(np.sum(up & (problem.worker_type == g))) for g in range(G))
    keep_vec = []
    for i in range(S):
        mine = np.flatnonzero(problem.current == i)
        n = mine.size
        ok = n > 0 and bool(up[mine].all()) and problem.min_workers[i] <= n <= problem.max_workers[i]
        vec = tuple(int(np.sum(problem.worker_type[mine] == g)) for g in range(G))
        keep_vec.append(vec if ok else None)

    def cost(i, y):
        n = sum(y)
        if n == 0 or not problem.min_workers[i] <= n <= problem.max_workers[i]:
            return math.inf
        X = 0.0
        for g in range(G):
            if y[g]:
                if problem.throughput[i, g] <= 0:
                    return math.inf
                X += y[g] * problem.throughput[i, g]
        value = problem.work[i] / X + problem.comm_time[i, n]
        if np.any(problem.current == i) and tuple(y) != keep_vec[i]:
            value += problem.restart_time[i]
        return value

    @functools.lru_cache(maxsize=None)
    def best(i, free):
        if i == S:
            return 0.0
        out = math.inf
        for y in itertools.product(*(range(f + 1) for f in free)):
            c = cost(i, y)
            if c < math.inf:
                out = min(out, c + best(i + 1, tuple(f - v for f, v in zip(free, y))))
        return out

    return best(0, free0) / S


def _solvers():
    from ortools.linear_solver import pywraplp

    return [s for s in SOLVERS if pywraplp.Solver.CreateSolver(exact.SOLVERS[s][0]) is not None]


def _check_placement(problem, res):
    """The result's objective is its placement's, restarts as the definition says."""
    pl = res.placement
    assert np.array_equal(pl.restarted, restarted_reference(problem, pl.worker_job))
    assert _close(res.objective, objective_reference(problem, pl.worker_job), 1e-12)


# ---------------------------------------------------------------- the instances are what they claim
def test_instances_cover_the_cases():
    fam = [arrival(s, True) for s in range(N_INSTANCES)] + [arrival(s, False) for s in range(N_INSTANCES)]
    assert all(p.replacing for p in fam)
    assert sum(not p.available.all() for p in fam) >= 15  # workers down
    assert sum(bool(np.any(p.running & ~p.can_keep)) for p in fam) >= 5  # a running job cannot keep
    assert sum(p.bounded for p in fam) >= 10
    assert sum(bool(np.any((p.current < 0) & p.available)) for p in fam) >= 10  # idle workers now
    dep = [departure(s, sp) for s in range(N_INSTANCES // 2) for sp in (True, False)]
    assert all(np.any(p.current < 0) for p in dep)


def test_brute_force_equals_python_reference():
    checked = 0
    for seed in range(N_INSTANCES):
        for p in (arrival(seed, seed % 2 == 0), departure(seed, seed % 2 == 1)):
            if (p.n_jobs + 1) ** p.n_workers > 1300:
                continue  # the itertools reference is slow
            value, ref = brute_reference(p)
            res = solve_exact(p, method="brute")
            _check_placement(p, res)
            assert _close(res.objective, value, 1e-12), (p, res, value, ref)
            checked += 1
    assert checked >= 25


# ---------------------------------------------------------------- MILP == brute force
#: the arrival seeds of a campaign: the first 40 (and 20 departures) in the default run, the rest under -m slow
SPANS = [pytest.param((0, 40), id="seeds-0-39"),
         pytest.param((40, N_INSTANCES), id=f"seeds-40-{N_INSTANCES - 1}", marks=pytest.mark.slow)]


@pytest.mark.parametrize("span", SPANS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_milp_equals_brute_force_per_worker_speeds(solver, span):
    if solver not in _solvers():
        pytest.skip(f"this OR-Tools build has no {solver}")
    rel = CPSAT_REL if solver == "cp-sat" else REL
    kept = restarts = 0  # measured: 55 and 65 on the first span, 101 and 120 on the second
    lo, hi = span
    for make in (arrival, departure):
        for seed in (range(lo, hi) if make is arrival else range(lo // 2, hi // 2)):
            p = make(seed, True)
            brute = solve_exact(p, method="brute")
            milp = solve_exact(p, method="milp", solver=solver)
            assert milp.status == "optimal", (seed, make.__name__, milp.message)
            assert _close(milp.objective, brute.objective, rel), (seed, make.__name__, p, milp, brute)
            assert milp.bound <= milp.objective * (1 + max(rel, 1e-6))  # CP-SAT: its bound is on the grid
            _check_placement(p, milp)
            kept += int(np.sum(p.running & ~milp.placement.restarted))
            restarts += milp.placement.n_restarts
    assert kept >= 20 and restarts >= 10  # both sides of the choice are exercised


def test_milp_equals_brute_force_uniform_speeds():
    for make in (arrival, departure):
        for seed in range(N_INSTANCES if make is arrival else N_INSTANCES // 2):
            p = make(seed, False)
            brute = solve_exact(p, method="brute")
            milp = solve_exact(p, method="milp")
            assert milp.status == "optimal", (seed, make.__name__, milp.message)
            assert _close(milp.objective, brute.objective), (seed, make.__name__, p, milp, brute)


def test_milp_worker_formulation_equals_class_formulation():
    # every worker its own class: cur_ic is 0 or 1, the same keep rows
    for seed in range(0, N_INSTANCES, 3):
        p = arrival(seed, seed % 2 == 0)
        a = exact._solve_milp(p, "scip", None, None, False, time.perf_counter(), grouping="workers")
        b = exact._solve_milp(p, "scip", None, None, False, time.perf_counter(), grouping="classes")
        assert a.status == b.status == "optimal"
        assert _close(a.objective, b.objective)


# ---------------------------------------------------------------- type DP
def test_dp_equals_slow_dp_and_brute_force():
    for make in (arrival, departure):
        for seed in range(N_INSTANCES if make is arrival else N_INSTANCES // 2):
            p = make(seed, False)
            dp = solve_exact(p, method="dp")
            assert dp.status == "optimal" and dp.bound == dp.objective
            assert _close(dp.objective, slow_dp_reference(p), 1e-12), (seed, make.__name__, p)
            assert _close(dp.objective, solve_exact(p, method="brute").objective), (seed, make.__name__)
            assert _close(dp.info["dp_total_jct"] / p.n_jobs, dp.objective, 1e-12)
            _check_placement(p, dp)


def test_auto_still_runs_the_dp():
    p = arrival(2, False)
    assert solve_exact(p).method == "dp"
    assert solve_exact(arrival(2, True)).method == "milp"



def test_zero_restart_time_changes_no_optimum():
    # current given but free restarts: the same optimum as a fresh placement
    for seed in range(0, N_INSTANCES, 2):
        p = arrival(seed, seed % 4 == 0)
        free = Problem.from_dict({**p.to_dict(), "restart_time": 0.0})
        fresh = Problem.from_dict({k: v for k, v in p.to_dict().items() if k not in ("current", "restart_time")})
        for method in ("brute", "milp") + (("dp",) if exact._dp_refusal(p) is None else ()):
            a, b = solve_exact(free, method=method), solve_exact(fresh, method=method)
            assert _close(a.objective, b.objective), (seed, method)


@pytest.mark.parametrize("row", [m for m in EXACT if m.restart_aware], ids=str)
def test_costly_restarts_keep_every_job_after_a_departure(row):
    # after a departure every running job can keep its workers at once; at 1000x
    # its JCT a restart never pays, so the optimum restarts no job (every exact row of tests/methods.py)
    if "solver" in row.options and row.options["solver"] not in _solvers():
        pytest.skip(f"this OR-Tools build has no {row.options['solver']}")
    for seed in range(N_INSTANCES // 2):
        base = departure(seed, not row.uniform_speeds_only)
        assert base.can_keep[base.running].all()
        kept = evaluate(base, base.current)
        p = Problem.from_dict({**base.to_dict(), "restart_time": (1e3 * kept.jct).tolist()})
        assert row.applies(p), (seed, row)
        pl = run(row, p)
        assert pl.info["status"] == "optimal" and pl.n_restarts == 0, (seed, pl.info)
        assert np.array_equal(pl.worker_job[p.current >= 0], p.current[p.current >= 0])


def test_jct_caps_hold_at_the_optimum():
    # the MILP's per-job caps (restart loss excluded) must admit every optimum:
    # check them at the tightest valid upper bound, the optimum itself
    tight = 0
    for make, speeds in ((arrival, True), (arrival, False), (departure, True)):
        for seed in range(N_INSTANCES if make is arrival else N_INSTANCES // 2):
            p = make(seed, speeds)
            best = solve_exact(p, method="brute").placement
            caps = exact._jct_caps(p, best)
            jct = best.jct - best.restart_loss
            assert np.all(jct <= caps), (seed, make.__name__, jct, caps)
            tight += bool(np.any(p.running & ~p.can_keep))
    assert tight >= 5  # some instances subtract a forced restart


def test_incumbent_is_feasible_and_keeps_when_it_pays():
    better = 0
    for seed in range(N_INSTANCES):
        p = arrival(seed, seed % 2 == 0)
        inc = exact._incumbent(p)
        assert inc.mean_jct >= solve_exact(p, method="brute").objective * (1 - 1e-12)
        kept = exact._trimmed(p, keep_greedy_placement(p))
        assert inc.mean_jct <= kept.mean_jct and inc.mean_jct <= exact._trimmed(p, greedy_placement(p)).mean_jct
        better += inc.mean_jct < exact._trimmed(p, greedy_placement(p)).mean_jct
    assert better >= 10  # keeping beats the restart-blind greedy baseline on many


def _index_order(counts, members, K):
    """The counts realised in plain index order (the rule before restarts)."""
    worker_job = np.full(K, -1, dtype=np.int64)
    nxt = [0] * len(members)
    for i in range(counts.shape[0]):
        for c in range(counts.shape[1]):
            n = int(counts[i, c])
            worker_job[members[c][nxt[c]:nxt[c] + n]] = i
            nxt[c] += n
    return worker_job


def test_realise_counts_keeps_matching_jobs_on_their_workers():
    from hetplace.placement import current_counts, realise_counts

    matched = moved_less = 0
    for seed in range(N_INSTANCES):
        for p in (arrival(seed, seed % 2 == 0), departure(seed, seed % 2 == 1), plain(seed)):
            rng = np.random.default_rng([seed, 9191])
            members = exact._worker_classes(p, "classes")[0]
            have = current_counts(p, members)
            for _ in range(10):
                # random counts within the capacities; some rows copied from the current ones
                counts = np.zeros_like(have)
                left = np.array([m.size for m in members])
                for i in rng.permutation(p.n_jobs):
                    row = have[i] if rng.random() < 0.5 else rng.integers(0, 3, len(members))
                    row = np.minimum(row, left)
                    counts[i] = row
                    left -= row
                wj = realise_counts(p, counts, members)
                cls = np.full(p.n_workers, -1)
                for c, m in enumerate(members):
                    cls[m] = c
                for i in range(p.n_jobs):
                    mine = np.flatnonzero(wj == i)
                    assert np.array_equal(np.bincount(cls[mine], minlength=len(members)), counts[i])
                    now = np.flatnonzero(p.current == i)
                    if now.size and np.array_equal(counts[i], have[i]) and have[i].sum() == now.size:
                        assert np.array_equal(mine, now)  # exactly its current workers
                        matched += 1
                    for c, m in enumerate(members):  # as many of its own as it can
                        own = np.intersect1d(m, now).size
                        assert np.intersect1d(mine, now[cls[now] == c]).size == min(counts[i, c], own)
                        moved_less += min(counts[i, c], own) > 0
                if not p.replacing:
                    assert np.array_equal(wj, _index_order(counts, members, p.n_workers))
    assert matched >= 100 and moved_less >= 100



# ---------------------------------------------------------------- larger instances
GAVEL_CASES = [(seed, K, S) for seed in range(2) for K, S in
               [(8, 3), (10, 4), (12, 3), (14, 5), (16, 4), (20, 3), (24, 4)]]


@pytest.mark.parametrize("seed,K,S", GAVEL_CASES)
def test_milp_equals_dp_gavel(seed, K, S):
    p = gavel_arrival(seed, K, S)
    dp = solve_exact(p, method="dp")
    milp = solve_exact(p, method="milp")
    assert dp.status == milp.status == "optimal", milp.message
    assert _close(milp.objective, dp.objective), (p, dp, milp)
    _check_placement(p, dp)
    _check_placement(p, milp)


@pytest.mark.parametrize("seeds", [pytest.param(range(6), id="seeds-0-5"),
                                   pytest.param(range(6, 20), id="seeds-6-19", marks=pytest.mark.slow)])
def test_milp_equals_brute_force_seven_and_eight_workers(seeds):
    n = 0
    for seed in seeds:
        p = arrival(seed, seed % 2 == 0, large=True)
        brute = solve_exact(p, method="brute")
        if exact._dp_refusal(p) is None:
            assert _close(solve_exact(p, method="dp").objective, brute.objective)
        for solver in _solvers():
            milp = solve_exact(p, method="milp", solver=solver)
            assert milp.status == "optimal"
            assert _close(milp.objective, brute.objective, CPSAT_REL if solver == "cp-sat" else REL)
        n += 1
    assert n == len(seeds)


@pytest.mark.slow
def test_milp_equals_brute_force_many_seeds():
    # the differential campaign behind the figures in docs/model.md §4.3 (SCIP, 1,000
    # arrivals and 500 departures with per-worker speeds beyond the seeds above)
    for seed in range(N_INSTANCES, N_INSTANCES + 1000):
        for p in (arrival(seed, True),) + ((departure(seed, True),) if seed % 2 else ()):
            brute = solve_exact(p, method="brute")
            milp = solve_exact(p, method="milp")
            assert milp.status == "optimal" and _close(milp.objective, brute.objective), (seed, p)


# ---------------------------------------------------------------- without current: bit for bit as before
N_BASELINE = 40


def _baseline_runs(seed):
    """(name, ExactResult) of every exact method on ``plain(seed)``."""
    p = plain(seed)
    runs = [("brute", solve_exact(p, method="brute"))]
    if exact._dp_refusal(p) is None:
        runs.append(("dp", solve_exact(p, method="dp")))
    for solver in ("scip", "highs"):
        runs.append((f"milp-{solver}", solve_exact(p, method="milp", solver=solver, threads=1)))
    return runs


def _record(res):
    return {"status": res.status, "worker_job": res.placement.worker_job.tolist(),
            "objective": float(res.objective).hex(), "bound": float(res.bound).hex()}


def _write_baseline():
    rows = {str(seed): {name: _record(res) for name, res in _baseline_runs(seed)} for seed in range(N_BASELINE)}
    with open(BASELINE, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=0, sort_keys=True)
        f.write("\n")


@pytest.mark.parametrize("seed", range(N_BASELINE))
def test_without_current_results_are_as_before(seed):
    """Without ``current``, results are the ones recorded before restart costs existed.

    hetplace's own methods (brute force, the type DP) must give the same bits.  A MILP
    solver decides the last digits of its bound and, among tied optima, which placement it
    returns; a solver release or its timing may change either, so the MILP runs are held
    to the same status, the same optimum (relative ``REL``) and a bound that is still valid
    and within the check every MILP result passes (``exact._CHECK_REL``) of the optimum.
    """
    with open(BASELINE, encoding="utf-8") as f:
        before = json.load(f)[str(seed)]
    p = plain(seed)
    now = dict(_baseline_runs(seed))
    assert sorted(now) == sorted(before)
    for name, res in now.items():
        was = before[name]
        if not name.startswith("milp-"):
            assert _record(res) == was, name
            continue
        optimum = float.fromhex(was["objective"])
        assert res.status == was["status"] == "optimal", (name, res.message)
        assert _close(res.objective, optimum), (name, res.objective, optimum)
        assert _close(evaluate(p, res.placement.worker_job).mean_jct, optimum), name
        tol = exact._CHECK_REL[res.solver]
        assert res.bound <= res.objective * (1 + REL) and _close(res.bound, optimum, tol), (name, res.bound)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-baseline"]:
        _write_baseline()
        print(f"wrote {BASELINE}")


# ---------------------------------------------------------------- restart_time across the supported range
RESTART_RANGE = (1e-30, 1e-6, 1.0, 1e6, 1e13, 1e20, 1e25, 1e30)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("restart", RESTART_RANGE)
def test_milp_is_optimal_for_restart_times_across_the_supported_range(restart, solver):
    # from 1e13 SCIP and CP-SAT no longer proved an obvious optimum; from 1e25 both ended in
    # status "error" ("objective value is infinite"), HiGHS valued its placement at -inf
    if solver not in _solvers():
        pytest.skip(f"this OR-Tools build has no {solver}")
    forced = 0
    for seed in range(8):
        for make in (arrival, departure):
            base = make(seed, seed % 2 == 0)
            data = base.to_dict()
            rt = [restart if r > 0 else 0.0 for r in data["restart_time"]]
            p = Problem.from_dict({**data, "restart_time": rt})
            brute = solve_exact(p, method="brute")
            res = solve_exact(p, method="milp", solver=solver)
            assert res.status == "optimal", (seed, make.__name__, res.message)
            _check_placement(p, res)
            assert _close(res.objective, brute.objective, CPSAT_REL if solver == "cp-sat" else REL), (seed, res)
            assert res.bound <= res.objective * (1 + exact._CHECK_REL[res.solver])  # a valid bound
            forced += res.info["n_forced_keep"]
    if restart >= 1e13:  # a restart that never pays is a kept job, not a 1e30 s coefficient
        assert forced > 0


def test_forced_restart_losses_stay_out_of_the_solver():
    # a job that cannot keep (a current worker is down) pays its 1e30 s restart in every
    # placement: the solver optimises the rest and the constant is added to value and bound
    p = next(q for q in (arrival(s, False) for s in range(0, N_INSTANCES, 3)) if (q.running & ~q.can_keep).any())
    data = p.to_dict()
    big = Problem.from_dict({**data, "restart_time": [1e30 if r > 0 else 0.0 for r in data["restart_time"]]})
    res = solve_exact(big, method="milp")
    brute = solve_exact(big, method="brute")
    assert res.status == "optimal" and _close(res.objective, brute.objective)
    free = solve_exact(Problem.from_dict({**data, "restart_time": 0.0}), method="brute")
    assert res.objective >= 1e30 / big.n_jobs and free.objective < 1e29
