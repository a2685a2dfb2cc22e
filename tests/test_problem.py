"""The placement model: validation messages pinned, derived quantities checked by hand."""

import math
import re

import numpy as np
import pytest

import hetplace as hp
from hetplace import InvalidPlacementError, InvalidProblemError, InvalidProblemTypeError


def make(**kw):
    args = dict(
        throughput=[[10.0, 20.0], [5.0, 0.0]],
        type_counts=[2, 1],
        batch=[64, 32],
        iterations=[100, 50],
    )
    args.update(kw)
    return hp.Problem(**args)


@pytest.mark.parametrize(
    "kw, exc, pattern",
    [
        (dict(throughput=[1.0, 2.0]), InvalidProblemError, r"throughput must be a 2-D array of shape \(n_jobs, n_types\); got an array of shape \(2,\)"),
        (dict(throughput="fast"), InvalidProblemTypeError, r"throughput must be numbers; got the string 'fast'"),
        (dict(throughput=[[np.nan, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be finite; got nan at index \(0, 0\)"),
        (dict(throughput=[[np.inf, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be finite; got inf"),
        (dict(throughput=[[-1.0, 1.0], [1.0, 1.0]]), InvalidProblemError, r"throughput must be >= 0; got -1.0 for job 0 on type 0"),
        (dict(type_counts=[2, 1, 1]), InvalidProblemError, r"type_counts must have one entry per type \(throughput has 2 columns\); got shape \(3,\)"),
        (dict(type_counts=[2.5, 1]), InvalidProblemError, r"type_counts must be non-negative integers; got 2.5 for type 0"),
        (dict(type_counts=[-1, 3]), InvalidProblemError, r"type_counts must be non-negative integers; got -1.0 for type 0"),
        (dict(type_counts=[0, 0]), InvalidProblemError, r"at least one worker; got \[0, 0\] \(zero workers\)"),
        (dict(throughput=[[1.0, 1.0]] * 4, batch=[1] * 4, iterations=[1] * 4), InvalidProblemError, r"n_jobs <= n_workers; got 4 jobs .* for 3 workers"),
        (dict(throughput=[[10.0, 20.0], [0.0, 0.0]]), InvalidProblemError, r"job 1 can run on no type present in the cluster"),
        (dict(throughput=[[10.0, 20.0], [0.0, 5.0]], type_counts=[2, 0]), InvalidProblemError, r"job 1 can run on no type present"),
        (dict(throughput=[[0.0, 20.0], [0.0, 5.0]]), InvalidProblemError, r"no placement gives every job a worker"),
        (dict(batch=[64]), InvalidProblemError, r"batch must have one value per job, shape \(2,\); got shape \(1,\)"),
        (dict(batch=[64, 0]), InvalidProblemError, r"batch must be > 0 for every job; got 0.0 for job 1"),
        (dict(batch=[64, 2.5]), InvalidProblemError, r"batch must be whole numbers of samples; got 2.5 for job 1"),
        (dict(iterations=[100, np.nan]), InvalidProblemError, r"iterations must be finite; got nan at index 1"),
        (dict(iterations=[100, -3]), InvalidProblemError, r"iterations must be > 0 for every job; got -3.0 for job 1"),
        (dict(grad_bytes=[1.0, -1.0]), InvalidProblemError, r"grad_bytes must be >= 0 for every job; got -1.0 for job 1"),
        (dict(bandwidth=0.0), InvalidProblemError, r"bandwidth must be > 0 bytes/s .*; got 0.0"),
        (dict(bandwidth=float("nan")), InvalidProblemError, r"bandwidth must be > 0 bytes/s"),
        (dict(bandwidth="10G"), InvalidProblemTypeError, r"bandwidth must be a number of bytes/s .*; got the string '10G'"),
        (dict(worker_speed=[1.0, 0.5]), InvalidProblemError, r"worker_speed must have one value per worker \(sum of type_counts = 3\); got shape \(2,\)"),
        (dict(worker_speed=[1.0, 0.0, 1.0]), InvalidProblemError, r"worker_speed must lie in \(0, 1\]; got 0.0 for worker 1"),
        (dict(worker_speed=[1.0, 1.5, 1.0]), InvalidProblemError, r"worker_speed must lie in \(0, 1\]; got 1.5 for worker 1"),
        (dict(worker_speed=[1.0, np.nan, 1.0]), InvalidProblemError, r"worker_speed must be finite; got nan at index 1"),
        (dict(job_names=["a"]), InvalidProblemError, r"job_names must hold 2 names; got 1"),
        (dict(job_names="ab"), InvalidProblemTypeError, r"job_names must be a sequence of 2 names"),
        (dict(type_names=["x", "x"]), InvalidProblemError, r"type_names must be distinct"),
    ],
)
def test_bad_problem_messages(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        make(**kw)


def test_errors_are_value_and_type_errors():
    with pytest.raises(ValueError):
        make(batch=[0, 1])
    with pytest.raises(TypeError):
        make(throughput="x")


def test_derived_quantities():
    p = make(grad_bytes=[1e6, 2e6], bandwidth=1e8, worker_speed=[1.0, 0.5, 1.0])
    assert p.n_jobs == 2 and p.n_types == 2 and p.n_workers == 3
    np.testing.assert_array_equal(p.worker_type, [0, 0, 1])
    np.testing.assert_allclose(p.worker_throughput, [[10, 5, 20], [5, 2.5, 0]])
    np.testing.assert_allclose(p.work, [6400, 1600])
    # ring all-reduce: T * 2 (n-1)/n * D / r
    assert p.comm_time[0, 1] == 0.0
    assert math.isclose(p.comm_time[0, 2], 100 * 2 * 0.5 * 1e6 / 1e8)
    assert math.isclose(p.comm_time[1, 3], 50 * 2 * (2 / 3) * 2e6 / 1e8)
    assert not p.uniform_speed
    # alone: job 0 best of {20}, {20,10}, {20,10,5}: 6400/20=320, 6400/30+1=214.3, 6400/35+100*2*(2/3)*0.01=184.19
    assert math.isclose(p.jct_alone[0], 6400 / 35 + 100 * 2 * (2 / 3) * 1e6 / 1e8)
    assert math.isclose(p.jct_alone[1], min(1600 / 5, 1600 / 7.5 + 50 * 1e6 * 2 / 1e8 * 2 * 0.5 / 2 * 2))


def test_arrays_are_read_only_and_roundtrip():
    p = make()
    with pytest.raises(ValueError):
        p.throughput[0, 0] = 3
    q = hp.Problem.from_dict(p.to_dict())
    np.testing.assert_array_equal(q.worker_throughput, p.worker_throughput)
    assert q.bandwidth == math.inf


def test_scalar_per_job_values_broadcast():
    p = make(iterations=10)
    np.testing.assert_array_equal(p.iterations, [10, 10])
