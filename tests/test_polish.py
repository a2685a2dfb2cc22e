"""Local-search polish kernel (the single source hetplace/_core/_polish.py): Numba, Cython
and plain Python agree bit for bit, and the result is a local optimum checked by a slow
full-re-evaluation scan (tests/reference.py)."""

import numpy as np
import pytest

import hetplace as hp
from hetplace.baselines import random_placement
from hetplace._core._registry import BACKENDS, kernels, unavailable

from reference import is_local_optimum_reference, mean_jct_reference
from instances import random_problem, seeds

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]
polish_impl = kernels("python").polish


def _run(fn, p, wj):
    wj = wj.copy()
    steps = fn(p.worker_throughput, p.work, p.comm_time, p.worker_type, p.worker_speed, p.uniform_speed, wj, 100_000)
    return wj, steps


@pytest.mark.parametrize("seed", seeds(60, fast=20))
def test_backends_identical_and_local_optimum(seed):
    p = random_problem(seed, K_max=9, S_max=4)
    start = random_placement(p, np.random.default_rng(seed))
    ref_wj, ref_steps = _run(polish_impl, p, start)
    for fn in (kernels(b).polish for b in AVAILABLE):
        wj, steps = _run(fn, p, start)
        np.testing.assert_array_equal(wj, ref_wj)
        assert steps == ref_steps
    assert hp.is_feasible(p, ref_wj)
    assert mean_jct_reference(p, ref_wj) <= mean_jct_reference(p, start) * (1 + 1e-12)
    assert is_local_optimum_reference(p, ref_wj)


@pytest.mark.parametrize("backend", AVAILABLE)
def test_max_steps_is_honoured(backend):
    p = random_problem(5, K_max=30, S_max=6)
    start = random_placement(p, np.random.default_rng(0))
    wj, steps = _run(lambda *a: kernels(backend).polish(*a[:-1], 1), p, start)
    assert steps <= 1
