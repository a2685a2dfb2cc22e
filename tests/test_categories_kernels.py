"""The single-source categories kernels (hetplace/_core/_categories.py) on every backend.

* slow, obvious references: Floyd's sampler and the uniform direct method
  against a Python set, the weighted sampler over an enumerated space against
  A-Res written as a sort;
* exact ties: the A-Res reservoir heap and the heapsort fed keys with many
  equal values agree with a sort by (key, position) on the Numba and the
  plain-Python compilations, and the public samplers agree bit for bit on
  every available backend where candidates repeat (ties in the hash set).
"""

import math

import numpy as np
import pytest

from hetplace import categories as cat
from hetplace._core._registry import BACKENDS, unavailable
from hetplace._core._source import load
from hetplace.categories import count_categories, enumerate_categories, sample_categories

from reference import floyd_category_reference, weighted_enum_reference

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]
COMPILATIONS = {"numba": load("_categories", "numba"), "python": load("_categories", "python")}
py = COMPILATIONS["python"]


@pytest.mark.parametrize("K,S,N,exact", [(9, 3, 20, False), (30, 4, 25, True), (3000, 5, 12, False),
                                         (10**7, 2, 9, False), (200, 60, 10, False)])
def test_uniform_direct_is_floyd_with_a_python_set(K, S, N, exact):
    for name, mod in COMPILATIONS.items():
        for seed in range(4):
            key = py.stream_key(seed, py.STREAM_DIRECT)
            counter = iter(range(10**9))
            want, seen = [], set()
            while len(want) < N:  # the reference dedupes by value, the kernel by a 64-bit hash
                row = floyd_category_reference(lambda n: py.rand_below_k(key, next(counter), n), K, S, exact)
                if row not in seen:
                    seen.add(row)
                    want.append(row)
            out = np.zeros((N, S), dtype=np.int64)
            used = mod.sample_uniform_direct(np.uint64(seed), N, K, S, exact, out)
            assert [tuple(r) for r in out.tolist()] == want, (name, seed)
            assert used == next(counter)


@pytest.mark.parametrize("backend", AVAILABLE)
@pytest.mark.parametrize("K,S,N,exact,centre,spread", [
    (12, 3, 10, True, [1.0, 3.0, 8.0], 0.3),
    (9, 3, 11, False, [2.0, 2.0, 2.0], 0.25),  # a symmetric centre: many candidates at equal distance
    (8, 4, 40, False, None, 1000.0),  # every key dominated by log(-log u): N >= C takes them all
    (20, 2, 3, True, [1e-6, 1.0], 0.001),
])
def test_weighted_over_an_enumerated_space_is_ares_as_a_sort(backend, K, S, N, exact, centre, spread):
    C = count_categories(K, S, exact)
    assert C <= cat.WEIGHTED_OVERSAMPLE * N  # the enumerated path
    cats = [tuple(r) for r in enumerate_categories(K, S, exact).tolist()]
    c, base = cat._check_centre(centre, K, S, exact)
    for seed in (0, 1, 2**64 - 1):
        key = py.stream_key(seed, py.STREAM_WEIGHTED_KEYS)
        want = weighted_enum_reference(cats, base.tolist(), c.tolist(), spread, min(N, C),
                                       lambda r: py.rand_open01_k(key, r))
        got = sample_categories(K, S, N, seed=seed, exact=exact, method="weighted", centre=centre, spread=spread,
                                backend=backend)
        assert [tuple(r) for r in got.tolist()] == want


def _tied_keys(rng, n):
    """Keys drawn from a few values (-inf, 0, 0.5, 1), so most comparisons are exact ties."""
    return rng.choice(np.array([-math.inf, 0.0, 0.5, 0.5, 1.0, 1.0, 1.0]), n)


@pytest.mark.parametrize("name", list(COMPILATIONS))
def test_reservoir_heap_with_exact_ties_keeps_the_smallest_key_position_pairs(name):
    mod = COMPILATIONS[name]
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        N = int(rng.integers(1, 12))
        keys = _tied_keys(rng, n)
        heap, hk, hp = np.zeros(N, dtype=np.int64), np.zeros(N), np.zeros(N, dtype=np.int64)
        slot_of, count = [], 0
        for pos in range(n):
            slot = mod._offer(heap, hk, hp, count, N, float(keys[pos]), pos)
            if count < N:
                count += 1
            slot_of.append(int(slot))
        want = sorted((float(keys[p]), p) for p in range(n))[:min(n, N)]
        assert sorted(zip(hk[:count].tolist(), hp[:count].tolist())) == want
        # the root holds the worst kept pair (larger key, then later position)
        assert (hk[heap[0]], hp[heap[0]]) == want[-1]
        # the same slots on the other compilation (same comparisons, same order)
        other = COMPILATIONS["python" if name == "numba" else "numba"]
        heap2, hk2, hp2 = np.zeros(N, dtype=np.int64), np.zeros(N), np.zeros(N, dtype=np.int64)
        count = 0
        for pos in range(n):
            assert other._offer(heap2, hk2, hp2, count, N, float(keys[pos]), pos) == slot_of[pos]
            if count < N:
                count += 1
        assert np.array_equal(heap, heap2) and np.array_equal(hp, hp2)


@pytest.mark.parametrize("name", list(COMPILATIONS))
def test_heapsort_with_ties(name):
    rng = np.random.default_rng(4)
    for n in list(range(0, 9)) + [31, 64, 257]:
        a = rng.integers(0, 4, n + 3).astype(np.int64)  # many equal values; the tail is left alone
        want = np.concatenate([np.sort(a[:n]), a[n:]])
        COMPILATIONS[name]._sort(a, n)
        assert np.array_equal(a, want)


@pytest.mark.parametrize("K,S,N,exact,method", [
    (6, 3, 9, False, "uniform"),  # N < C = 20, the reservoir
    (7, 3, 14, True, "weighted"),  # C = 15 <= 8 N: enumerated, every key compared
    (40, 3, 60, False, "weighted"),  # 480 candidates of 9880: repeats skipped by the hash set
    (64, 8, 30, False, "weighted"),
    (10, 4, 12, True, "weighted"),  # 84 categories: repeats, widening rounds, the uniform top-up
])
def test_backends_agree_where_candidates_repeat(K, S, N, exact, method):
    kw = {"method": method}
    if method == "weighted":
        kw.update(centre=[1e-6] * (S - 1) + [1.0], spread=0.001)
    for seed in range(5):
        ref = sample_categories(K, S, N, seed=seed, exact=exact, backend="python", **kw)
        assert len({tuple(r) for r in ref.tolist()}) == ref.shape[0] == min(N, count_categories(K, S, exact))
        for backend in AVAILABLE:
            assert np.array_equal(sample_categories(K, S, N, seed=seed, exact=exact, backend=backend, **kw), ref)
