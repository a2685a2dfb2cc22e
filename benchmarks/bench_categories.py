"""Benchmarks of the category kernels: python vs numba vs cython.

Run (from the repository root)::

    pytest benchmarks/bench_categories.py --benchmark-only
    pytest benchmarks/bench_categories.py --benchmark-only --benchmark-group-by=group,param:size

Inputs are built outside the timed call, the Numba JIT is warmed up (one call)
before timing, and every result is checked after timing.  The pure-Python
backend only runs on the small sizes.
"""

import math

import numpy as np
import pytest

from hetplace import categories as cat
from hetplace._core._registry import unavailable
from hetplace._core._source import load

_categories_py = load("_categories", "python")  # the one source hetplace/_core/_categories.py, per backend
_categories_nb = load("_categories", "numba")
if unavailable("cython") is None:
    from hetplace._core import _categories as _categories_cy
else:  # pragma: no cover - extension not built
    _categories_cy = None

BACKENDS = ["python", "numba", "cython"]
PY_MAX_WORK = 2_000_000  # skip the python backend above this many elementary steps


def _skip_unavailable(backend):
    if backend == "cython" and _categories_cy is None:
        pytest.skip("Cython extension not built (python setup.py build_ext --inplace)")


def _module(backend):
    _skip_unavailable(backend)
    return {"python": _categories_py, "numba": _categories_nb, "cython": _categories_cy}[backend]


def _run(benchmark, fn):
    fn()  # warm-up (JIT compilation, caches)
    return benchmark(fn)


# ----------------------------------------------------------------------------
# RNG: 10**5 draws of rand_u01
# ----------------------------------------------------------------------------


@pytest.mark.benchmark(group="rng_u01_1e5")
@pytest.mark.parametrize("backend", BACKENDS)
def test_rng(benchmark, backend):
    _skip_unavailable(backend)
    out = np.empty(100_000)
    mod = _module(backend)
    _run(benchmark, lambda: mod.rand_u01_fill(np.uint64(7), np.uint64(3), out))
    assert out[5] == _categories_py.rand_u01(7, 3, 5)


# ----------------------------------------------------------------------------
# Unrank 10**4 random ranks
# ----------------------------------------------------------------------------

UNRANK_SIZES = [(64, 8), (1000, 6), (128, 12)]


@pytest.mark.benchmark(group="unrank_1e4")
@pytest.mark.parametrize("size", UNRANK_SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}")
@pytest.mark.parametrize("backend", BACKENDS)
def test_unrank(benchmark, backend, size):
    mod = _module(backend)
    K, S = size
    C = cat.count_categories(K, S, exact=False)
    table = cat._binomial_table(K, S, False)
    ranks = np.random.default_rng(0).integers(0, C, 10_000, dtype=np.int64)
    out = np.empty((ranks.shape[0], S), dtype=np.int64)
    _run(benchmark, lambda: mod.unrank_categories(ranks, K, S, False, table, out))
    assert out[7].tolist() == cat.unrank_category(int(ranks[7]), K, S, exact=False).tolist()


# ----------------------------------------------------------------------------
# Enumeration
# ----------------------------------------------------------------------------

ENUM_SIZES = [(16, 5), (30, 6), (64, 4)]


@pytest.mark.benchmark(group="enumerate")
@pytest.mark.parametrize("size", ENUM_SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}")
@pytest.mark.parametrize("backend", BACKENDS)
def test_enumerate(benchmark, backend, size):
    _skip_unavailable(backend)
    K, S = size
    C = cat.count_categories(K, S, exact=False)
    if backend == "python" and C * S > PY_MAX_WORK:
        pytest.skip("python backend too slow at this size")
    res = _run(benchmark, lambda: cat.enumerate_categories(K, S, exact=False, backend=backend))
    assert res.shape == (C, S)
    assert res[-1].tolist() == [K - S + 1] + [1] * (S - 1)


# ----------------------------------------------------------------------------
# Sampling through the public API (validation included)
# ----------------------------------------------------------------------------

SAMPLE_SIZES = [(64, 8, 512), (4096, 256, 512), (16384, 1024, 512)]


@pytest.mark.benchmark(group="sample_uniform")
@pytest.mark.parametrize("size", SAMPLE_SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}_N{s[2]}")
@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_uniform(benchmark, backend, size):
    _skip_unavailable(backend)
    K, S, N = size
    if backend == "python" and S > 8:
        pytest.skip("python backend too slow at this size")
    res = _run(benchmark, lambda: cat.sample_categories(K, S, N, seed=1, backend=backend))
    assert res.shape == (N, S) and res.min() >= 1 and res.sum(axis=1).max() <= K


@pytest.mark.benchmark(group="sample_weighted")
@pytest.mark.parametrize("size", SAMPLE_SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}_N{s[2]}")
@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_weighted(benchmark, backend, size):
    _skip_unavailable(backend)
    K, S, N = size
    if backend == "python" and S > 8:
        pytest.skip("python backend too slow at this size")
    w = np.random.default_rng(0).uniform(1, 100, S)
    centre = np.sqrt(w) * K / np.sqrt(w).sum()
    res = _run(benchmark, lambda: cat.sample_categories(
        K, S, N, seed=1, method="weighted", centre=centre, backend=backend))
    assert res.shape == (N, S) and res.min() >= 1 and res.sum(axis=1).max() <= K


@pytest.mark.benchmark(group="sample_uniform_reservoir_kernel")
@pytest.mark.parametrize("backend", BACKENDS)
def test_reservoir_kernel(benchmark, backend):
    """Algorithm L alone (no validation, no sort): K=64, S=8, N=512."""
    mod = _module(backend)
    K, S, N = 64, 8, 512
    C = math.comb(K, S)
    table = cat._binomial_table(K, S, False)
    seed = np.uint64(1)
    out = np.empty((N, S), dtype=np.int64)
    ranks = np.empty(N, dtype=np.int64)
    _run(benchmark, lambda: mod.sample_uniform_reservoir(seed, C, N, K, S, False, table, out,
                                                         ranks))
    assert len(set(ranks.tolist())) == N
