"""Benchmarks of the baselines (equal, random, greedy) up to K = 100,000 workers.

Run (from the repository root)::

    pytest benchmarks/bench_baselines.py --benchmark-columns=median,min,max
    pytest benchmarks/bench_baselines.py -k "equal and 100000"     # a subset
    pytest benchmarks/bench_baselines.py --benchmark-disable        # smoke test

Instances come from :func:`hetplace.instances.make_instance` (``gavel``: three
GPU types, speeds 1; ``speeds``: per-worker speeds, ~1,800 worker classes at
K = 100,000) and are built outside the timed call, as is each job's
``jct_alone`` (cached on the problem).  The baselines are timed on their own
(``hetplace.baselines``, no :class:`~hetplace.Placement` construction);
every result is checked after timing: a feasible placement within
``max_workers``, and, on the small sizes, the same placement as the
one-worker-at-a-time reference in ``tests/reference.py``.

The equal baseline used to rescan all K workers for every worker it gave away
(O(K^2): 10-18 s at K = 100,000); it now works on worker classes.
S = 1000 at K = 100,000 builds (S, K) float64 tables of 0.8 GB each: run that
size on a machine with ~4 GB free.
"""
import numpy as np
import pytest

import hetplace as hp
from hetplace import baselines
from hetplace.instances import make_instance

import reference as ref

SIZES = [(1_000, 100), (10_000, 100), (100_000, 100), (100_000, 1_000)]
FAMILIES = ("gavel", "speeds")
METHODS = {
    "equal": baselines.equal_placement,
    "random": lambda p: baselines.random_placement(p, np.random.default_rng(1)),
    "greedy": baselines.greedy_placement,
}
REFERENCES = {
    "equal": ref.equal_placement_reference,
    "random": lambda p: ref.random_placement_reference(p, np.random.default_rng(1)),
    "greedy": ref.greedy_placement_reference,
}

_CACHE = {}


def _instance(family, K, S):
    key = (family, K, S)
    if key not in _CACHE:
        _CACHE.clear()  # keep one large instance in memory at a time
        p = make_instance(family, 0, K, S)
        p.jct_alone  # noqa: B018 - computed (and cached) outside the timed call
        _CACHE[key] = p
    return _CACHE[key]


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("K, S", SIZES, ids=[f"K{K}-S{S}" for K, S in SIZES])
def test_baseline(benchmark, method, family, K, S):
    p = _instance(family, K, S)
    wj = benchmark.pedantic(METHODS[method], args=(p,), rounds=1, iterations=1, warmup_rounds=0)
    pl = hp.evaluate(p, wj, method=method)
    assert np.all(pl.sizes <= p.max_workers)
    benchmark.extra_info.update(mean_jct=pl.mean_jct, idle=int(np.sum(wj < 0)))
    if K <= 1_000:
        np.testing.assert_array_equal(wj, REFERENCES[method](p))
