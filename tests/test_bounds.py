"""Per-job size bounds: ``Problem(..., min_workers=, max_workers=)`` honoured by every method."""

import numpy as np
import pytest

import hetplace as hp
from hetplace import InvalidPlacementError, InvalidProblemError
from hetplace.data import gavel_path
from hetplace.exact import solve_exact
from hetplace.instances import gavel_instance
from hetplace.smp import _cython_available, fit_sizes

from methods import rows_for
from reference import brute_force_reference, fit_sizes_reference, mean_jct_reference, type_dp_reference
from instances import bounded_instances, random_problem, with_bounds

GAVEL = gavel_path()
BACKENDS = ["python", "numba"] + (["cython"] if _cython_available() else [])


def in_bounds(problem, placement):
    n = np.bincount(placement.worker_job[placement.worker_job >= 0], minlength=problem.n_jobs)
    return bool(np.all((problem.min_workers <= n) & (n <= problem.max_workers)))


def small():
    """Two types of 3 workers; job 1 runs on type 0 only."""
    return dict(throughput=[[1.0, 2.0], [3.0, 0.0], [1.0, 1.0]], type_counts=[3, 3],
                batch=[8, 8, 8], iterations=[10.0, 10.0, 10.0])


# ----------------------------------------------------------------- the Problem
def test_default_bounds_are_one_and_the_batch_cap():
    p = hp.Problem(**small())
    assert p.min_workers.tolist() == [1, 1, 1] and p.max_workers.tolist() == [6, 6, 6]
    assert p.size_cost is p.comm_time and not p.bounded
    assert "min_workers" not in p.to_dict() and "max_workers" not in p.to_dict()


def test_bounds_put_inf_in_size_cost_below_the_minimum_and_above_the_maximum():
    p = hp.Problem(**small(), min_workers=[1, 2, 1], max_workers=[3, 3, 2])
    assert p.min_workers.tolist() == [1, 2, 1] and p.max_workers.tolist() == [3, 3, 2]
    finite = np.isfinite(p.size_cost)
    assert finite.tolist() == [[True, True, True, True, False, False, False],
                               [True, False, True, True, False, False, False],
                               [True, True, True, False, False, False, False]]
    with pytest.raises(ValueError):
        p.min_workers[0] = 5  # read-only
    with pytest.raises(ValueError):
        p.max_workers[0] = 5


def test_scalar_bounds_broadcast_and_the_batch_caps_max_workers():
    p = hp.Problem(**{**small(), "batch": [8, 2, 8]}, min_workers=2, max_workers=5)
    assert p.min_workers.tolist() == [2, 2, 2] and p.max_workers.tolist() == [5, 2, 5]


def test_bounds_round_trip_through_to_dict_and_with_worker_speed():
    p = hp.Problem(**small(), min_workers=[1, 2, 1], max_workers=[3, 3, 2])
    q = hp.Problem.from_dict(p.to_dict())
    assert q.min_workers.tolist() == [1, 2, 1] and q.max_workers.tolist() == [3, 3, 2]
    r = p.with_worker_speed(np.linspace(0.5, 1.0, 6))
    assert r.min_workers.tolist() == [1, 2, 1] and r.max_workers.tolist() == [3, 3, 2]
    np.testing.assert_array_equal(q.size_cost, p.size_cost)


def test_job_jct_takes_only_sizes_within_the_bounds():
    p = hp.Problem(**small(), min_workers=[1, 2, 1], max_workers=[3, 3, 2])
    assert p.job_jct(1, 6.0, 2) == pytest.approx(80 / 6.0)
    with pytest.raises(InvalidProblemError, match=r"n_workers must be a number of workers job 1 can use "
                                                  r"\(its min_workers..max_workers\), an integer in \[2, 3\]; got 1"):
        p.job_jct(1, 3.0, 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_workers=0),
     "min_workers must be >= 1 for every job (a job runs on at least one worker); got 0 for job 0."),
    (dict(max_workers=[1, 0, 1]),
     "max_workers must be >= 1 for every job (a job runs on at least one worker); got 0 for job 1."),
    (dict(min_workers=[1.5, 1, 1]), "min_workers must be whole numbers of workers; got 1.5 for job 0."),
    (dict(min_workers=[1, 1]), "min_workers must have one value per job, shape (3,); got shape (2,)."),
    (dict(min_workers=[1, 4, 1], max_workers=[3, 3, 3]),
     "min_workers must be <= max_workers for every job; got min_workers = 4 > max_workers = 3 for job 1. "
     "Lower min_workers or raise max_workers (equal values make a rigid job)."),
    (dict(min_workers=[1, 1, 9]),
     "min_workers = 9 for job 2 exceeds the most workers it can use, 6 = min(max_workers, batch, n_workers): "
     "the cluster has 6 workers. Lower its min_workers to at most 6."),
    (dict(batch=[8, 2, 8], min_workers=[1, 3, 1]),
     "min_workers = 3 for job 1 exceeds the most workers it can use, 2 = min(max_workers, batch, n_workers): "
     "its batch of 2 samples gives at most 2 workers a sample. Lower its min_workers to at most 2."),
    (dict(min_workers=[2, 2, 3]),
     "min_workers sums to 7, more than the 6 workers of the cluster (sum of type_counts); "
     "min_workers = [2, 2, 3]. Lower the minima or add workers."),
    (dict(min_workers=[1, 4, 1]),
     "min_workers = 4 for job 1, but the types it can run on (type0) have only 3 workers. Lower its "
     "min_workers to at most 3, or give it a positive throughput on more types."),
])
def test_infeasible_bounds_are_rejected_with_the_parameter_value_and_fix(kwargs, message):
    args = small()
    args.update({k: kwargs.pop(k) for k in list(kwargs) if k in args})
    with pytest.raises(InvalidProblemError) as err:
        hp.Problem(**args, **kwargs)
    assert str(err.value) == message


def test_a_set_of_jobs_whose_types_lack_workers_for_their_minima_is_rejected():
    """Hall's condition for demands: each job alone fits, jobs 0 and 1 together do not."""
    rho = [[1.0, 0, 0], [1.0, 0, 0], [1.0, 1.0, 1.0]]
    with pytest.raises(InvalidProblemError) as err:
        hp.Problem(rho, [2, 2, 2], 8, 1.0, min_workers=[1, 2, 1])
    assert str(err.value) == (
        "no placement gives every job its min_workers: jobs [0, 1] need 3 workers together (their "
        "min_workers), but the types they can run on (type0) have only 2. Lower their min_workers or add "
        "workers of those types.")
    # job 2 can move off type 0: the flow finds it (a greedy fill by type index would not)
    p = hp.Problem([[1.0, 0, 0], [1.0, 1.0, 0], [1.0, 1.0, 1.0]], [2, 2, 2], 8, 1.0, min_workers=[2, 2, 2])
    assert in_bounds(p, hp.place(p, method="greedy"))


def test_placement_outside_the_bounds_is_rejected():
    p = hp.Problem(**small(), min_workers=[1, 2, 1], max_workers=[3, 3, 2])
    with pytest.raises(InvalidPlacementError, match=r"^job 1 gets 1 workers in worker_job, fewer than its "
                                                    r"min_workers = 2. Give it at least 2 workers"):
        hp.evaluate(p, [0, 1, 2, 0, 0, 2])
    with pytest.raises(InvalidPlacementError, match=r"^job 2 gets 3 workers in worker_job, more than its "
                                                    r"max_workers = 2. Set the surplus workers to -1"):
        hp.evaluate(p, [1, 1, 0, 2, 2, 2])
    assert not hp.is_feasible(p, [0, 1, 2, 0, 0, 2])
    assert hp.is_feasible(p, [1, 1, 2, 0, 0, 2])


# ------------------------------------------------------------------ fit_sizes
def test_fit_sizes_with_minima_matches_the_reference_and_stays_in_bounds():
    rng = np.random.default_rng(5)
    for _ in range(200):
        S = int(rng.integers(1, 7))
        K = int(rng.integers(S, 30))
        lo = 1 + rng.multinomial(int(rng.integers(0, K - S + 1)), np.ones(S) / S)
        hi = np.minimum(lo + rng.integers(0, 6, S), K)
        cats = np.array([1 + rng.multinomial(int(rng.integers(0, K - S + 1)), rng.dirichlet(np.ones(S)))
                         for _ in range(8)])
        got = fit_sizes(cats, hi, lo, K)
        np.testing.assert_array_equal(got, fit_sizes_reference(cats, hi, lo, K))
        assert np.all((got >= lo) & (got <= hi)) and np.all(got.sum(axis=1) <= K)


def test_fit_sizes_raises_minima_from_idle_workers_first_then_from_the_largest_jobs():
    lo, hi = np.array([3, 1, 1]), np.array([10, 10, 10])
    # 2 idle workers: nothing taken from the others
    assert fit_sizes(np.array([[1, 4, 3]]), hi, lo, 10).tolist() == [[3, 4, 3]]
    # no idle worker: both come from the largest excesses (4 -> 3, then 3 and 3: the higher index gives)
    assert fit_sizes(np.array([[1, 5, 4]]), hi, lo, 10).tolist() == [[3, 4, 3]]
    cats = np.array([[2, 2, 2]])
    assert fit_sizes(cats, hi, np.ones(3, dtype=np.int64), 10) is cats  # within the bounds: unchanged


# ------------------------------------------------------------ every method
#: beyond the table: SMP's other sampler
EXTRA = [("smp", dict(seed=3, sampling="weighted"))]


def test_every_method_honours_the_bounds_including_rigid_and_tight_jobs():
    """Every row of tests/methods.py that applies, on 45 bounded instances."""
    rigid = tight = 0
    for k, p in enumerate(bounded_instances(45, 100)):
        rigid += int(np.any(p.min_workers == p.max_workers))
        tight += int(p.min_workers.sum() == p.n_workers)
        runs = [(m.method, dict(m.options, seed=3)) for m in rows_for(p)] + EXTRA
        for method, kw in runs:
            pl = hp.place(p, method=method, **kw)
            assert in_bounds(p, pl), (k, method, kw, pl.sizes, p.min_workers, p.max_workers)
    assert rigid >= 10 and tight >= 10


def test_exact_methods_equal_an_independent_brute_force_with_bounds():
    """dp, milp (scip and highs) and the compiled brute force vs itertools over every assignment."""
    rng = np.random.default_rng(11)
    checked = 0
    seed = 500
    while checked < 30:
        p = with_bounds(random_problem(seed, K_max=6, S_max=3), rng, tight=checked % 3 == 0)
        seed += 1
        if p is None:
            continue
        checked += 1
        want, _ = brute_force_reference(p)
        if p.uniform_speed:
            assert type_dp_reference(p)[0] == pytest.approx(want, rel=1e-12)
        runs = [("milp", "scip"), ("milp", "highs"), ("brute", None)] + ([("dp", None)] if p.uniform_speed else [])
        for method, solver in runs:
            res = solve_exact(p, method=method, **({"solver": solver} if solver else {}))
            assert res.status == "optimal"
            assert in_bounds(p, res.placement)
            assert res.objective == pytest.approx(want, rel=1e-6), (seed, method, solver)
            assert mean_jct_reference(p, res.placement.worker_job) == pytest.approx(res.objective, rel=1e-9)


def test_bounds_bind_the_exact_optimum():
    """A rigid job of 1 worker forces the optimum away from the unbounded one (the test can fail)."""
    free = hp.Problem([[10.0], [1.0]], [6], [64, 64], [100.0, 100.0])
    assert np.bincount(hp.place(free, method="exact").worker_job, minlength=2)[0] > 1
    rigid = hp.Problem([[10.0], [1.0]], [6], [64, 64], [100.0, 100.0], min_workers=[1, 1], max_workers=[1, 6])
    pl = hp.place(rigid, method="exact")
    assert pl.sizes.tolist() == [1, 5]
    assert pl.mean_jct == pytest.approx(brute_force_reference(rigid)[0], rel=1e-12)


@pytest.mark.parametrize("matching", ["price", "ordinal"])
def test_backends_give_identical_placements_with_bounds(matching):
    modes = set()
    for k, p in enumerate(bounded_instances(60, 900, K_max=12, S_max=5)):
        runs = [hp.place(p, method="smp", seed=7, backend=b, matching=matching, samples=8) for b in BACKENDS]
        for b, r in zip(BACKENDS[1:], runs[1:]):
            np.testing.assert_array_equal(r.worker_job, runs[0].worker_job, err_msg=f"instance {k} {b}")
            assert r.mean_jct == runs[0].mean_jct
        assert all(in_bounds(p, r) for r in runs)
        modes.add((runs[0].info.get("market_on"), runs[0].info.get("polish_on")))
    # the class-level (price form only) and the worker-level market and polish all ran on bounded instances
    assert {q for _, q in modes} >= {"classes", "workers"}
    assert {m for m, _ in modes} >= ({"classes", "workers"} if matching == "price" else {"workers"})


def test_smp_gap_to_exact_with_bounds_on_gavel_instances():
    """Mean gap <= 0.5 % and worst <= 2.04 % on 60 seeded Gavel instances with random bounds."""
    rng = np.random.default_rng(2024)
    gaps = []
    seed = 0
    while len(gaps) < 60:
        r = np.random.default_rng(seed)
        K = int(r.choice([8, 12, 16, 24]))
        S = int(r.integers(2, min(8, K) + 1))
        p = with_bounds(gavel_instance(seed, K, S, GAVEL), rng, tight=len(gaps) % 4 == 0)
        seed += 1
        if p is None:
            continue
        opt = solve_exact(p, method="dp").objective
        pl = hp.place(p, method="smp", seed=seed)
        assert in_bounds(p, pl)
        gaps.append(pl.mean_jct / opt - 1)
    gaps = np.array(gaps)
    assert gaps.min() > -1e-9
    assert gaps.mean() <= 0.005, gaps
    assert gaps.max() <= 0.0204, gaps
