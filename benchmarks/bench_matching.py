"""Benchmarks of the matching kernels (docs/model.md §3.3-3.5): python vs numba vs cython.

Run (from the repository root)::

    pytest benchmarks/bench_matching.py --benchmark-only --benchmark-group-by=group,param:size
    pytest benchmarks/bench_matching.py --benchmark-only -k "K64_S8"      # the SMP hot path

Two families of markets, K workers x S jobs, seeded:

- ``types``: 3 worker types at uniform speed (identical workers within a
  type; the price form moves them in bulk);
- ``speeds``: the same with per-worker speed factors in [0.5, 1] (every worker
  distinct: the price form's worst case).

Each has ~10 % of (job, type) pairs at throughput 0 and a category whose sizes
follow sqrt(work) and leave ~10 % of the workers idle.  Timed: one market solve
(``solve``) and one SMP category, i.e. up to 8 iterated solves (``category``).
Inputs and work buffers are built outside the timed call, the Numba JIT is
warmed up first, and every timed result is checked after timing against
another backend (they must agree bit for bit).  The pure-Python backend only
runs on the two small sizes.  With ``--benchmark-disable`` (the CI smoke run)
each case runs once, plus its check.
"""

import numpy as np
import pytest

from hetplace._core import _matching_nb, _matching_py

try:
    from hetplace._core import _matching as _matching_cy
except ImportError:  # pragma: no cover - extension not built
    _matching_cy = None

BACKENDS = ["python", "numba", "cython"]
SIZES = [(64, 8), (256, 32), (4096, 256)]
PY_MAX_WORKERS = 256  # the python backend is skipped above this K
FAMILIES = ["types", "speeds"]


def _module(backend):
    if backend == "cython" and _matching_cy is None:
        pytest.skip("Cython extension not built (python setup.py build_ext --inplace)")
    return {"python": _matching_py, "numba": _matching_nb, "cython": _matching_cy}[backend]


def make_category(K, S, family, seed=0, G=3):
    """(rho (S, K), work (S,), comm_time (S, K+1), sizes (S,)) of a seeded market."""
    rng = np.random.default_rng([seed, K, S, FAMILIES.index(family)])
    thr = rng.uniform(50.0, 500.0, (S, G))
    thr[rng.random((S, G)) < 0.1] = 0.0
    thr[:, 0] = np.maximum(thr[:, 0], 20.0)  # every job can run somewhere
    wtype = np.sort(rng.integers(0, G, K))
    speed = rng.uniform(0.5, 1.0, K) if family == "speeds" else np.ones(K)
    rho = np.ascontiguousarray(thr[:, wtype] * speed[None, :])
    work = rng.uniform(1e5, 1e7, S)
    n = np.arange(K + 1, dtype=float)
    frac = np.zeros(K + 1)
    frac[2:] = 2.0 * (n[2:] - 1.0) / n[2:]
    comm = rng.uniform(0.0, 1e3, S)[:, None] * frac[None, :]
    w = np.sqrt(work)
    sizes = np.maximum(1, np.floor(0.9 * K * w / w.sum())).astype(np.int64)
    while sizes.sum() > K:
        sizes[np.argmax(sizes)] -= 1
    return rho, work, comm, sizes


def _prefs(mod, rho):
    S, K = rho.shape
    jo = np.empty((S, K), dtype=np.int64)
    ol = np.empty(S, dtype=np.int64)
    wr = np.empty((S, K))
    mod.job_order_kernel(rho, 0.0, jo, ol, np.empty(K, dtype=np.int64))
    mod.relative_rank_kernel(rho, wr)
    return jo, ol, wr


def _rounds(K):
    return 3 if K >= 4096 else 20


def _reference_module(backend, K):
    """Another backend to check the timed result against (None: the pair is checked elsewhere).

    Small sizes: numba and cython against python, python against numba.
    Large sizes: numba against cython only (keeps the CI smoke run short).
    """
    if K <= PY_MAX_WORKERS:
        return _matching_nb if backend == "python" else _matching_py
    return _matching_cy if backend == "numba" else None


def _time(benchmark, fn, K):
    if not getattr(benchmark, "disabled", False):
        fn()  # warm-up (JIT compilation, caches)
    return benchmark.pedantic(fn, rounds=_rounds(K), iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_solve(benchmark, form, backend, size, family):
    """One market solve with the category's first-round valuations."""
    K, S = size
    if backend == "python" and K > PY_MAX_WORKERS:
        pytest.skip("pure-Python backend: minutes per call at this size")
    mod = _module(backend)
    benchmark.group = f"solve-{form}"
    rho, work, comm, sizes = make_category(K, S, family)
    wj = np.empty(K, dtype=np.int64)
    stats = np.zeros(2, dtype=np.int64)
    if form == "price":
        vals_t = np.ascontiguousarray(rho.T)
        a = work / (sizes * rho.mean(axis=1)) ** 2
        nf, ni = mod.auction_workspace_size(S, K)
        fws, iws, jp = np.empty(nf), np.empty(ni, dtype=np.int64), np.empty(S + 1)

        def fn():
            return mod.auction_kernel(vals_t, a, 0.0, sizes, wj, jp, stats, fws, iws)
    else:
        jo, ol, wr = _prefs(mod, rho)
        iws = np.empty(max(mod.gale_shapley_workspace_size(S, K)[1], 1), dtype=np.int64)

        def fn():
            return mod.gale_shapley_kernel(jo, ol, wr, sizes, wj, stats, iws)

    _time(benchmark, fn, K)
    # check: another backend returns the same assignment
    other = _reference_module(backend, K)
    if other is not None:
        ref = np.empty(K, dtype=np.int64)
        if form == "price":
            other.auction_kernel(vals_t, a, 0.0, sizes, ref, np.empty(S + 1), np.zeros(2, dtype=np.int64),
                                 np.empty(nf), np.empty(ni, dtype=np.int64))
        else:
            other.gale_shapley_kernel(jo, ol, wr, sizes, ref, np.zeros(2, dtype=np.int64), iws.copy())
        assert wj.tolist() == ref.tolist()
    benchmark.extra_info.update(searches_or_rounds=int(stats[0]), proposals=int(stats[1]))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"K{s[0]}_S{s[1]}")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["price", "ordinal"])
def test_category(benchmark, form, backend, size, family):
    """One SMP category: iterated linearised market, up to 8 solves."""
    K, S = size
    if backend == "python" and K > PY_MAX_WORKERS:
        pytest.skip("pure-Python backend: minutes per call at this size")
    mod = _module(backend)
    benchmark.group = f"category-{form}"
    rho, work, comm, sizes = make_category(K, S, family)
    form_id = mod.FORM_PRICE if form == "price" else mod.FORM_ORDINAL
    if form == "price":
        jo, ol, wr = np.zeros((1, 1), dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((1, 1))
    else:
        jo, ol, wr = _prefs(mod, rho)
    nf, ni = mod.market_workspace_size(S, K)
    fws, iws = np.empty(nf), np.empty(ni, dtype=np.int64)
    wj = np.empty(K, dtype=np.int64)
    stats = np.zeros(2, dtype=np.int64)

    def fn():
        return mod.market_category_kernel(rho, work, comm, sizes, form_id, 8, jo, ol, wr, wj, stats, fws, iws)

    total = _time(benchmark, fn, K)
    other = _reference_module(backend, K)
    if other is not None:
        ref = np.empty(K, dtype=np.int64)
        ref_total = other.market_category_kernel(rho, work, comm, sizes, form_id, 8, jo, ol, wr, ref,
                                                 np.zeros(2, dtype=np.int64), np.empty(nf),
                                                 np.empty(ni, dtype=np.int64))
        assert total == ref_total and wj.tolist() == ref.tolist()
    benchmark.extra_info.update(rounds=int(stats[0]), proposals=int(stats[1]), total_jct=float(total))
