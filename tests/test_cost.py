"""hetplace._cost, the one Python-side home of the job cost, against the definitions (tests/reference.py)."""

import math

import numpy as np
import pytest

from hetplace import Problem, place
from hetplace._cost import RingAllReduce, job_time, price

from instances import bounded_instances, random_problem, tiny_random
from reference import mean_jct_reference, objective_reference, restarted_reference


def _random_rows(problem, rng, R):
    """(R, K) int64: random assignments, some leaving a job without a worker."""
    return rng.integers(-1, problem.n_jobs, size=(R, problem.n_workers)).astype(np.int64)


def _with_restarts(problem, rng):
    cur = rng.integers(-1, problem.n_jobs, size=problem.n_workers)
    cur[problem.worker_throughput[np.maximum(cur, 0), np.arange(problem.n_workers)] <= 0] = -1  # runnable only
    d = problem.to_dict()
    d["bandwidth"] = problem.bandwidth  # to_dict writes inf as "inf" (JSON)
    d.update(current=cur.tolist(), restart_time=rng.uniform(0, 50, problem.n_jobs).tolist())
    return Problem(**d)


@pytest.mark.parametrize("seed", range(20))
def test_price_matches_the_definitions(seed):
    rng = np.random.default_rng(seed)
    problem = random_problem(seed)
    if seed % 2:
        problem = _with_restarts(problem, rng)
    rows = _random_rows(problem, rng, 12)
    priced = price(problem, rows)
    S = problem.n_jobs
    assert priced.jct.shape == (12, S) and priced.total.shape == (12,)
    for r, wj in enumerate(rows):
        ref = mean_jct_reference(problem, wj)
        assert np.array_equal(priced.restarted[r], restarted_reference(problem, wj))
        if not np.isfinite(priced.total[r]):
            assert (priced.n[r] == 0).any() or not np.isfinite(priced.time[r]).all()
            assert not math.isfinite(ref)
            continue
        if math.isfinite(ref):
            assert math.isclose(priced.total[r] / S, objective_reference(problem, wj), rel_tol=1e-12)
            assert math.isclose(float(priced.jct[r].mean()), objective_reference(problem, wj), rel_tol=1e-12)
        # one row alone: the same bits as in the batch
        one = price(problem, wj)
        assert one.total == priced.total[r]
        assert np.array_equal(one.jct, priced.jct[r])


@pytest.mark.parametrize("seed", range(6))
def test_price_is_what_placement_reports(seed):
    """Placement reads its per-job fields from price(): the same bits (bounded problems, random placements)."""
    problem = bounded_instances(1, 700 + seed)[0]
    for t in range(10):
        pl = place(problem, method="random", seed=t)
        priced = price(problem, pl.worker_job)
        assert np.array_equal(pl.jct, priced.jct) and np.array_equal(pl.sizes, priced.n)
        assert np.array_equal(pl.aggregate_throughput, priced.X)
        assert math.isclose(pl.mean_jct, objective_reference(problem, pl.worker_job), rel_tol=1e-12)


def test_job_time_table_and_model_agree():
    p = tiny_random(3, comm=True)
    S, K = p.n_jobs, p.n_workers
    jobs = np.repeat(np.arange(S), K + 1)
    n = np.tile(np.arange(K + 1), S)
    X = np.linspace(1.0, 5.0, jobs.size)
    assert np.array_equal(job_time(p, jobs, X, n), job_time(p, jobs, X, n, table=p.size_cost))
    assert isinstance(p.comm_model, RingAllReduce) and p.comm_model.by_size
    assert np.array_equal(p.comm_model.table(K), p.comm_time)
