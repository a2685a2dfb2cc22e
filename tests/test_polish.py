"""Local-search polish kernel: Numba, Cython and plain Python agree bit for bit, and the
result is a local optimum checked by a slow full-re-evaluation scan (tests/reference.py)."""

import numpy as np
import pytest

import hetplace as hp
from hetplace.baselines import random_placement
from hetplace._core._polish_nb import polish, polish_impl

from reference import is_local_optimum_reference, mean_jct_reference
from test_smp import random_problem

try:
    from hetplace._core._polish import polish as polish_cy
except ImportError:  # pragma: no cover - extension not built
    polish_cy = None


def _run(fn, p, wj):
    wj = wj.copy()
    steps = fn(p.worker_throughput, p.work, p.comm_time, p.worker_type, p.worker_speed, p.uniform_speed, wj, 100_000)
    return wj, steps


@pytest.mark.parametrize("seed", range(60))
def test_backends_identical_and_local_optimum(seed):
    p = random_problem(seed, K_max=9, S_max=4)
    start = random_placement(p, np.random.default_rng(seed))
    ref_wj, ref_steps = _run(polish_impl, p, start)
    fns = [polish] + ([polish_cy] if polish_cy is not None else [])
    for fn in fns:
        wj, steps = _run(fn, p, start)
        np.testing.assert_array_equal(wj, ref_wj)
        assert steps == ref_steps
    assert hp.is_feasible(p, ref_wj)
    assert mean_jct_reference(p, ref_wj) <= mean_jct_reference(p, start) * (1 + 1e-12)
    assert is_local_optimum_reference(p, ref_wj)


def test_max_steps_is_honoured():
    p = random_problem(5, K_max=30, S_max=6)
    start = random_placement(p, np.random.default_rng(0))
    wj, steps = _run(lambda *a: polish(*a[:-1], 1), p, start)
    assert steps <= 1
