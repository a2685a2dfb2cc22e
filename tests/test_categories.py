"""Tests of hetplace.categories and its kernels (RNG, ranking, enumeration, sampling)."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetplace import categories as cat
from hetplace._core import _registry
from hetplace._core._source import load

nb = rng_nb = load("_categories", "numba")  # the single source hetplace/_core/_categories.py, per backend
py = load("_categories", "python")
from hetplace.categories import (
    count_categories,
    enumerate_categories,
    rank_category,
    sample_categories,
    unrank_category,
)
from hetplace.errors import (
    HetplaceWarning,
    InvalidOptionError,
    InvalidProblemError,
    InvalidProblemTypeError,
    MissingDependencyError,
)

from reference import (  # tests/ is on sys.path (pytest rootdir)
    algorithm_l_reference,
    categories_reference,
    rand_u64_reference,
    splitmix64_reference,
)

if _registry.unavailable("cython") is None:
    from hetplace._core import _categories as cy
else:  # pragma: no cover - extension not built
    cy = None

needs_cython = pytest.mark.skipif(cy is None, reason="Cython extension not built "
                                  "(python setup.py build_ext --inplace)")
BACKENDS = ["python", "numba"] + (["cython"] if cy is not None else [])
COMPILED = [nb] + ([cy] if cy is not None else [])
SMALL = [(K, S) for K in range(1, 9) for S in range(1, K + 1)]


# -----------------------------------------------------------------------------
# Counter-based RNG
# -----------------------------------------------------------------------------

RNG_CASES = [(seed, stream, counter)
             for seed in (0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF)
             for stream in (0, 1, 7, 2**63 + 1, 2**64 - 1)
             for counter in (0, 1, 2, 1000, 2**40 + 3)]


def test_splitmix64_known_value():
    # First output of the published SplitMix64 generator seeded with 0.
    assert py.splitmix64(0) == 0xE220A8397B1DCDAF
    assert int(rng_nb.splitmix64(np.uint64(0))) == 0xE220A8397B1DCDAF
    for x in (1, 2**63, 2**64 - 1, 0xDEADBEEF):
        assert py.splitmix64(x) == splitmix64_reference(x)


def test_rng_without_jit_wraps_around_without_overflow_warnings():
    # NUMBA_DISABLE_JIT=1 ran the uint64 arithmetic as NumPy scalars: ~1000 RuntimeWarnings per test file
    code = textwrap.dedent("""
        import warnings
        import numpy as np
        warnings.simplefilter("error", RuntimeWarning)
        from hetplace._core._source import load
        r = load("_categories", "numba")
        print(int(r.splitmix64(np.uint64(0))), int(r.rand_below(np.uint64(2**64 - 1), np.uint64(7), np.uint64(3), 5)))
    """)
    here = str(__import__("pathlib").Path(cat.__file__).resolve().parents[1])  # the hetplace under test
    env = dict(__import__("os").environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=here, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    expect = f"{0xE220A8397B1DCDAF} {rng_nb.rand_below(np.uint64(2**64 - 1), np.uint64(7), np.uint64(3), 5)}"
    assert out.stdout.strip() == expect


def test_rand_u64_is_a_splitmix64_stream():
    for seed in (0, 5, 2**64 - 1):
        for stream in (0, 3, 2**63 + 2):
            for counter in range(5):
                expected = rand_u64_reference(seed, stream, counter)
                assert py.rand_u64(seed, stream, counter) == expected


@pytest.mark.parametrize("seed,stream,counter", RNG_CASES)
def test_rng_identical_across_backends(seed, stream, counter):
    u = np.uint64
    expected = py.rand_u64(seed, stream, counter)
    assert int(rng_nb.rand_u64(u(seed), u(stream), u(counter))) == expected
    f = py.rand_u01(seed, stream, counter)
    assert 0.0 <= f < 1.0
    assert f == (expected >> 11) * 2.0**-53
    assert rng_nb.rand_u01(u(seed), u(stream), u(counter)) == f
    for n in (1, 2, 7, 10**9 + 7, 2**62 + 1):
        b = py.rand_below(seed, stream, counter, n)
        assert 0 <= b < n
        assert rng_nb.rand_below(u(seed), u(stream), u(counter), n) == b
    if cy is not None:
        assert cy.rand_u64(seed, stream, counter) == expected
        assert cy.rand_u01(seed, stream, counter) == f
        assert cy.rand_below(seed, stream, counter, 7) == py.rand_below(seed, stream, counter, 7)


def test_rand_below_rejection_path():
    # n = 2**62 + 1: about a quarter of all 64-bit draws fall in the incomplete
    # last block and are re-hashed; results must be in range and equal everywhere.
    n = 2**62 + 1
    rejected = 0
    for counter in range(64):
        x = py.rand_u64(9, 1, counter)
        if x - x % n > 2**64 - n:
            rejected += 1
        b = py.rand_below(9, 1, counter, n)
        assert 0 <= b < n
        assert rng_nb.rand_below(np.uint64(9), np.uint64(1), np.uint64(counter), n) == b
        if cy is not None:
            assert cy.rand_below(9, 1, counter, n) == b
    assert rejected > 0


def test_rand_below_uniform():
    chisquare = pytest.importorskip("scipy.stats").chisquare

    key = py.stream_key(3, 11)
    draws = [py.rand_below_k(key, c, 7) for c in range(7000)]
    counts = np.bincount(draws, minlength=7)
    assert chisquare(counts).pvalue > 1e-4


def test_rng_callable_from_njit_prange():
    from numba import njit, prange

    @njit(parallel=True)
    def draws(seed, n):
        out = np.empty(n)
        for i in prange(n):
            out[i] = rng_nb.rand_u01(seed, i, 3)
        return out

    got = draws(np.uint64(42), 64)
    want = [py.rand_u01(42, i, 3) for i in range(64)]
    assert got.tolist() == want


# -----------------------------------------------------------------------------
# Counting, ranking, unranking
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("exact", [True, False])
def test_counts(exact):
    for K, S in SMALL:
        ref = len(categories_reference(K, S, exact))
        assert count_categories(K, S, exact=exact) == ref
        assert ref == (math.comb(K - 1, S - 1) if exact else math.comb(K, S))
    assert count_categories(16384, 1024, exact=False) == math.comb(16384, 1024)


@pytest.mark.parametrize("exact", [True, False])
def test_rank_unrank_match_reference_order(exact):
    for K, S in SMALL:
        for r, c in enumerate(categories_reference(K, S, exact)):
            assert rank_category(c, K, exact=exact) == r
            assert tuple(unrank_category(r, K, S, exact=exact)) == c


def test_rank_order_endpoints():
    assert unrank_category(0, 10, 3).tolist() == [1, 1, 8]
    assert unrank_category(count_categories(10, 3) - 1, 10, 3).tolist() == [8, 1, 1]
    assert unrank_category(0, 10, 3, exact=False).tolist() == [1, 1, 1]
    assert unrank_category(count_categories(10, 3, False) - 1, 10, 3, False).tolist() == [8, 1, 1]


@pytest.mark.parametrize("exact", [True, False])
def test_rank_unrank_round_trip_big_ints(exact):
    K, S = 4096, 256
    C = count_categories(K, S, exact)
    assert C > 2**1000
    rng = np.random.default_rng(1)
    for _ in range(5):
        r = int(rng.integers(0, 2**62)) * int(rng.integers(0, 2**62)) % C
        sizes = unrank_category(r, K, S, exact)
        assert sizes.min() >= 1
        assert (sizes.sum() == K) if exact else (sizes.sum() <= K)
        assert rank_category(sizes, K, exact) == r
    assert rank_category(unrank_category(C - 1, K, S, exact), K, exact) == C - 1


def test_binomial_table_exact_and_saturated():
    for K, S, exact in [(10, 4, True), (10, 4, False), (200, 40, True), (130, 65, False)]:
        t = cat._binomial_table(K, S, exact)
        parts = S if exact else S + 1
        assert t.shape == (parts, K - S + 1)
        for j in range(parts):
            for d in range(K - S + 1):
                assert t[j, d] == min(math.comb(j + d, j), 2**63 - 1)


@pytest.mark.parametrize("mod", COMPILED, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("K,S,exact", [(7, 3, True), (7, 3, False), (200, 9, True),
                                       (200, 9, False), (66, 33, True), (3000, 4, False)])
def test_compiled_rank_unrank(mod, K, S, exact):
    C = count_categories(K, S, exact)
    assert C < 2**63
    table = cat._binomial_table(K, S, exact)
    rng = np.random.default_rng(K * S)
    ranks = [0, C - 1] + [int(r) for r in rng.integers(0, C, 50)]
    out = np.empty(S, dtype=np.int64)
    for r in ranks:
        mod.unrank_category(r, K, S, exact, table, out)
        assert out.tolist() == unrank_category(r, K, S, exact).tolist()
        assert mod.rank_category(out, K, S, exact, table) == r


def test_unrank_kernel_callable_from_njit_prange():
    from numba import njit, prange

    @njit(parallel=True)
    def unrank_all(ranks, K, S, exact, table):
        out = np.empty((ranks.shape[0], S), dtype=np.int64)
        for j in prange(ranks.shape[0]):
            nb.unrank_category(ranks[j], K, S, exact, table, out[j])
        return out

    K, S = 40, 6
    table = cat._binomial_table(K, S, False)
    ranks = np.arange(0, count_categories(K, S, False), 9973, dtype=np.int64)
    got = unrank_all(ranks, K, S, False, table)
    assert [rank_category(row, K, False) for row in got] == ranks.tolist()


@needs_cython
@pytest.mark.slow  # builds a C extension (about 10 s)
def test_cython_kernels_can_be_cimported(tmp_path):
    """Cython kernels may cimport these (_categories.pxd); compile a tiny module that does the same."""
    pytest.importorskip("Cython")
    import hetplace

    root = str(__import__("pathlib").Path(hetplace.__file__).resolve().parents[1])
    (tmp_path / "use_cats.pyx").write_text(textwrap.dedent("""
        # cython: language_level=3
        from libc.stdint cimport int64_t
        from hetplace._core._categories cimport rand_u01, rand_below, unrank_category
        from cython.parallel import prange
        import numpy as np

        def run(const int64_t[:, ::1] table, int64_t K, int64_t S, int64_t n):
            cdef int64_t[:, ::1] out = np.zeros((n, S), dtype=np.int64)
            cdef double[::1] u = np.zeros(n)
            cdef Py_ssize_t j
            for j in prange(n, nogil=True):
                unrank_category(rand_below(7, j, 0, 35), K, S, True, table, out[j])
                u[j] = rand_u01(7, j, 1)
            return np.asarray(out), np.asarray(u)
    """))
    (tmp_path / "setup_use.py").write_text(textwrap.dedent("""
        from setuptools import setup, Extension
        from Cython.Build import cythonize
        setup(ext_modules=cythonize([Extension("use_cats", ["use_cats.pyx"],
              extra_compile_args=["-fopenmp"], extra_link_args=["-fopenmp"])],
              include_path=[%r]), script_args=["build_ext", "--inplace"])
    """ % root))
    res = subprocess.run([sys.executable, "setup_use.py"], cwd=tmp_path, capture_output=True,
                         text=True)
    if res.returncode != 0:
        pytest.fail("cimport build failed:\n" + res.stderr[-3000:])
    code = ("import sys; sys.path[:0] = [%r, %r]; import numpy as np, use_cats;"
            "from hetplace.categories import _binomial_table;"
            "o, u = use_cats.run(_binomial_table(8, 4, True), 8, 4, 16);"
            "print(o.tolist()); print(u.tolist())") % (str(tmp_path), root)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows, us = (eval(line) for line in res.stdout.strip().splitlines())
    for j in range(16):
        assert rows[j] == unrank_category(py.rand_below(7, j, 0, 35), 8, 4).tolist()
        assert us[j] == py.rand_u01(7, j, 1)


# -----------------------------------------------------------------------------
# Enumeration
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("exact", [True, False])
def test_enumeration_matches_reference(backend, exact):
    for K, S in SMALL + [(12, 5)]:
        got = enumerate_categories(K, S, exact=exact, backend=backend)
        assert got.dtype == np.int64 and got.shape == (count_categories(K, S, exact), S)
        assert [tuple(r) for r in got.tolist()] == categories_reference(K, S, exact)


def test_enumeration_backends_identical_larger():
    ref = enumerate_categories(30, 6, exact=False, backend="numba")
    assert ref.shape == (math.comb(30, 6), 6)
    for backend in BACKENDS[1:]:
        assert np.array_equal(enumerate_categories(30, 6, exact=False, backend=backend), ref)
    # every row a distinct valid category
    assert len({r.tobytes() for r in ref}) == ref.shape[0]
    assert ref.min() >= 1 and ref.sum(axis=1).max() <= 30


def test_enumerate_limit_refuses_with_count_and_suggestion():
    with pytest.raises(InvalidOptionError, match=r"553270671 categories.*limit=1000000.*"
                                                 r"sample_categories"):
        enumerate_categories(64, 8)
    assert enumerate_categories(6, 3, limit=10).shape == (10, 3)
    with pytest.raises(InvalidOptionError, match=r"10 categories, more than limit=9"):
        enumerate_categories(6, 3, limit=9)


# -----------------------------------------------------------------------------
# Uniform sampling
# -----------------------------------------------------------------------------


def _check_valid(rows, K, S, exact):
    assert rows.dtype == np.int64 and rows.ndim == 2 and rows.shape[1] == S
    assert rows.min() >= 1
    if exact:
        assert np.all(rows.sum(axis=1) == K)
    else:
        assert np.all(rows.sum(axis=1) <= K)
    assert len({r.tobytes() for r in rows}) == rows.shape[0], "categories must be distinct"


# (K, S, N, exact): reservoir path, enumerate-all path, direct path (C >= 2**63)
UNIFORM_CASES = [(64, 8, 40, False), (64, 8, 40, True), (9, 3, 200, False),
                 (300, 40, 12, True), (300, 40, 12, False), (20, 4, 30, True)]


@pytest.mark.parametrize("K,S,N,exact", UNIFORM_CASES)
def test_uniform_backends_identical(K, S, N, exact):
    for seed in range(8):
        ref = sample_categories(K, S, N, seed=seed, exact=exact, backend="python")
        _check_valid(ref, K, S, exact)
        assert ref.shape[0] == min(N, count_categories(K, S, exact))
        for backend in BACKENDS[1:]:
            got = sample_categories(K, S, N, seed=seed, exact=exact, backend=backend)
            assert np.array_equal(got, ref), (backend, seed)


def test_uniform_compiled_backends_identical_many_seeds():
    for seed in range(200):
        a = sample_categories(64, 8, 64, seed=seed, backend="numba")
        if cy is not None:
            assert np.array_equal(a, sample_categories(64, 8, 64, seed=seed, backend="cython"))
        b = sample_categories(2000, 300, 8, seed=seed, exact=True, backend="numba")
        if cy is not None:
            assert np.array_equal(b, sample_categories(2000, 300, 8, seed=seed, exact=True,
                                                       backend="cython"))


def test_uniform_output_in_rank_order_and_reproducible():
    a = sample_categories(64, 8, 100, seed=3)
    ranks = [rank_category(r, 64, exact=False) for r in a]
    assert ranks == sorted(ranks)
    assert np.array_equal(a, sample_categories(64, 8, 100, seed=3))
    assert not np.array_equal(a, sample_categories(64, 8, 100, seed=4))


def test_uniform_returns_all_when_fewer_categories():
    got = sample_categories(6, 3, 50, seed=1, exact=True)
    assert got.tolist() == [list(c) for c in categories_reference(6, 3, True)]


def test_algorithm_l_matches_list_reference():
    K, S, N, exact = 12, 4, 7, False
    C = count_categories(K, S, exact)
    table = cat._binomial_table(K, S, exact)
    for seed in range(20):
        out = np.empty((N, S), dtype=np.int64)
        ranks = np.empty(N, dtype=np.int64)
        used = py.sample_uniform_reservoir(seed, C, N, K, S, exact, table, out, ranks)
        key = py.stream_key(seed, py.STREAM_UNIFORM)
        counter = iter(range(10**9))
        ref = algorithm_l_reference(
            list(range(C)), N,
            lambda: py.rand_open01_k(key, next(counter)),
            lambda n: py.rand_below_k(key, next(counter), n))
        assert ranks.tolist() == ref
        assert next(counter) == used
        # O(N (1 + log(C/N))) draws, not O(C)
        assert used < 3 * N * (2 + math.log(C / N)) + 3


@pytest.mark.parametrize("exact", [True, False])
def test_uniform_sampling_is_uniform(exact):
    """Chi-square: each category is included with probability N / C."""
    chisquare = pytest.importorskip("scipy.stats").chisquare

    K, S, N = 9, 3, 6
    C = count_categories(K, S, exact)
    cats = {tuple(c): i for i, c in enumerate(categories_reference(K, S, exact))}
    counts = np.zeros(C)
    for seed in range(3000):
        for row in sample_categories(K, S, N, seed=seed, exact=exact, backend="numba"):
            counts[cats[tuple(row)]] += 1
    assert chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize("exact", [True, False])
def test_direct_method_is_uniform(exact):
    chisquare = pytest.importorskip("scipy.stats").chisquare

    K, S, N = 8, 3, 4
    C = count_categories(K, S, exact)
    cats = {tuple(c): i for i, c in enumerate(categories_reference(K, S, exact))}
    counts = np.zeros(C)
    out = np.empty((N, S), dtype=np.int64)
    for seed in range(3000):
        nb.sample_uniform_direct(np.uint64(seed), N, K, S, exact, out)
        for row in out:
            counts[cats[tuple(row)]] += 1
    assert chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize("K,S", [(4096, 256), (16384, 1024)])
def test_huge_clusters_use_direct_method(K, S):
    for method in ("uniform", "weighted"):
        got = sample_categories(K, S, 64, seed=1, method=method)
        _check_valid(got, K, S, False)
        assert got.shape == (64, S)
    if cy is not None:
        assert np.array_equal(sample_categories(K, S, 16, seed=2, backend="numba"),
                              sample_categories(K, S, 16, seed=2, backend="cython"))


def _floyd_reference(key, ctr, K, S, exact):
    """Floyd's subset algorithm with a Python set (the obvious form): ``(sizes, new counter)``."""
    n, m = (K - 1, S - 1) if exact else (K, S)
    chosen = set()
    for j in range(n - m + 1, n + 1):
        t = 1 + py.rand_below_k(key, ctr, j)
        ctr += 1
        chosen.add(j if t in chosen else t)
    cuts = [0] + sorted(chosen) + ([K] if exact else [])
    return [b - a for a, b in zip(cuts, cuts[1:])], ctr


def test_floyd_byte_map_and_hash_set_agree():
    """The two set representations of Floyd's algorithm choose the same subset as a Python set."""
    for K, S, exact in [(64, 8, True), (3000, 5, False), (50, 50, True), (40, 1, False), (3000, 40, False)]:
        m = S - 1 if exact else S
        chosen = np.zeros(m + 1, dtype=np.int64)
        mark = np.zeros(K + 1, dtype=np.uint8)
        small = np.zeros(max(4, 1 << (2 * m + 2).bit_length()), dtype=np.uint64)
        empty = np.zeros(0, dtype=np.uint8)
        for seed in range(30):
            key = np.uint64(rng_nb.stream_key(np.uint64(seed), np.uint64(5)))
            ref, cref = _floyd_reference(int(key), 0, K, S, exact)
            for mod in (nb, py):
                a = np.zeros((1, S), dtype=np.int64)
                b = np.zeros((1, S), dtype=np.int64)
                ca = mod._floyd_category(key, 0, K, S, exact, mark, small, chosen, a, 0)
                cb = mod._floyd_category(key, 0, K, S, exact, empty, small, chosen, b, 0)
                assert a[0].tolist() == b[0].tolist() == ref and ca == cb == cref
                assert not mark.any()  # the byte map is left cleared


def test_direct_method_hash_set_path_backends_identical():
    # 3 x 10**7 table entries: too big for the reservoir, so the direct method
    # with the hash-set variant of Floyd (n > 64 (m + 16)) runs.
    K = 10**7
    ref = sample_categories(K, 2, 20, seed=4, backend="python")
    _check_valid(ref, K, 2, False)
    for backend in BACKENDS[1:]:
        assert np.array_equal(sample_categories(K, 2, 20, seed=4, backend=backend), ref)


def test_direct_method_backends_identical_python():
    for seed in range(5):
        ref = sample_categories(200, 60, 10, seed=seed, backend="python")
        assert count_categories(200, 60, False) > 2**63
        for backend in BACKENDS[1:]:
            assert np.array_equal(sample_categories(200, 60, 10, seed=seed, backend=backend), ref)


# -----------------------------------------------------------------------------
# Weighted sampling
# -----------------------------------------------------------------------------


def _rms_log(rows, centre):
    return np.sqrt(np.mean(np.log(rows / centre) ** 2, axis=1))


# (K, S, N, exact, centre, spread): perturbation path and enumerate-all path
WEIGHTED_CASES = [
    (64, 8, 30, True, [1, 2, 3, 4, 5, 6, 7, 8], 0.25),
    (64, 8, 30, False, [1, 2, 3, 4, 5, 6, 7, 8], 0.5),
    (64, 8, 30, False, None, 0.05),  # widening rounds
    (12, 3, 10, True, [1.0, 3.0, 8.0], 0.3),  # C = 55 <= 8 N: enumerate path
    (12, 3, 100, False, [0.2, 3.0, 5.0], 0.3),  # C = 220 < N: all
    (300, 40, 6, True, None, 1.0),
    (10, 4, 12, True, [1e-6, 1e-6, 1e-6, 1.0], 0.001),  # uniform top-up
]


@pytest.mark.parametrize("K,S,N,exact,centre,spread", WEIGHTED_CASES)
def test_weighted_backends_identical(K, S, N, exact, centre, spread):
    for seed in range(6):
        ref = sample_categories(K, S, N, seed=seed, exact=exact, method="weighted",
                                centre=centre, spread=spread, backend="python")
        _check_valid(ref, K, S, exact)
        assert ref.shape[0] == min(N, count_categories(K, S, exact))
        for backend in BACKENDS[1:]:
            got = sample_categories(K, S, N, seed=seed, exact=exact, method="weighted",
                                    centre=centre, spread=spread, backend=backend)
            assert np.array_equal(got, ref), (backend, seed)


def test_weighted_compiled_backends_identical_many_seeds():
    if cy is None:
        pytest.skip("Cython extension not built")
    rng = np.random.default_rng(0)
    for seed in range(200):
        centre = rng.uniform(0.5, 20, 8)
        kw = dict(seed=seed, method="weighted", centre=centre, spread=float(rng.uniform(0.05, 2)))
        for K, exact in [(64, True), (64, False), (40, False)]:
            assert np.array_equal(sample_categories(K, 8, 64, exact=exact, backend="numba", **kw),
                                  sample_categories(K, 8, 64, exact=exact, backend="cython", **kw))


def test_weighted_starts_with_rounded_centre():
    got = sample_categories(64, 4, 20, seed=0, exact=True, method="weighted",
                            centre=[1.0, 2.0, 3.0, 4.0])
    # 6.4, 12.8, 19.2, 25.6 -> floors 6, 12, 19, 25 (sum 62); the two missing
    # workers go to the largest remainders (.8 and .6)
    assert got[0].tolist() == [6, 13, 19, 26]
    # centre parts below one are raised to one, the surplus leaves the largest part
    got = sample_categories(10, 3, 5, seed=0, exact=True, method="weighted",
                            centre=[0.1, 0.1, 9.8])
    assert got[0].tolist() == [1, 1, 8]
    # exact=False keeps a centre that sums below K (idle workers)
    got = sample_categories(64, 2, 5, seed=0, method="weighted", centre=[10.2, 19.7])
    assert got[0].tolist() == [10, 20]


def test_weighted_concentrates_near_centre():
    K, S, N = 64, 8, 256
    centre = np.array([2.0, 3.0, 5.0, 6.0, 8.0, 10.0, 12.0, 18.0])
    uni = sample_categories(K, S, N, seed=1, exact=True)
    d_uni = _rms_log(uni, centre)
    previous = 0.0
    for spread in (0.1, 0.25, 0.5, 1.0):
        w = sample_categories(K, S, N, seed=1, exact=True, method="weighted", centre=centre,
                              spread=spread)
        d = _rms_log(w, centre)
        assert np.median(d) < 0.5 * np.median(d_uni)
        assert np.median(d) > previous  # larger spread, wider neighbourhood
        previous = np.median(d)
        assert len({tuple(r) for r in w.tolist()}) == N  # still N distinct


def test_weighted_inclusion_decreases_with_distance():
    """Over the whole (enumerated) space, closer categories are drawn more often."""
    spearmanr = pytest.importorskip("scipy.stats").spearmanr

    K, S, N = 12, 3, 8
    centre = np.array([2.0, 4.0, 6.0])
    cats = enumerate_categories(K, S, exact=True)
    index = {tuple(c): i for i, c in enumerate(cats.tolist())}
    counts = np.zeros(len(cats))
    for seed in range(400):
        for row in sample_categories(K, S, N, seed=seed, exact=True, method="weighted",
                                     centre=centre, spread=0.3, backend="numba"):
            counts[index[tuple(row)]] += 1
    d = _rms_log(cats, centre)
    assert counts[index[(2, 4, 6)]] == 400
    assert spearmanr(d, counts).statistic < -0.8


@settings(max_examples=40, deadline=None)
@given(K=st.integers(1, 40), data=st.data())
def test_samples_valid_and_distinct(K, data):
    S = data.draw(st.integers(1, K))
    N = data.draw(st.integers(1, 50))
    exact = data.draw(st.booleans())
    method = data.draw(st.sampled_from(["uniform", "weighted"]))
    seed = data.draw(st.integers(0, 2**64 - 1))
    kw = {}
    if method == "weighted":
        kw["centre"] = data.draw(st.lists(st.floats(0.01, 100), min_size=S, max_size=S))
        kw["spread"] = data.draw(st.floats(0.01, 3))
    got = sample_categories(K, S, N, seed=seed, exact=exact, method=method, backend="numba", **kw)
    _check_valid(got, K, S, exact)
    assert got.shape[0] == min(N, count_categories(K, S, exact))


def test_seed_none_draws_fresh_seed():
    got = sample_categories(64, 8, 5, seed=None)
    _check_valid(got, 64, 8, False)


def test_auto_backend_prefers_cython():
    name, _ = cat._backend("auto")
    assert name == ("cython" if cy is not None else "numba")


# -----------------------------------------------------------------------------
# Errors (messages pinned)
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("call,exc,match", [
    (lambda: count_categories(0, 1), InvalidProblemError, r"n_workers must be >= 1; got 0"),
    (lambda: count_categories(4.0, 1), InvalidProblemTypeError,
     r"n_workers must be an integer .* got 4\.0 of type float"),
    (lambda: count_categories(True, 1), InvalidProblemTypeError, r"n_workers must be an integer"),
    (lambda: count_categories(4, 5), InvalidProblemError,
     r"1 <= n_jobs <= n_workers=4 .* got n_jobs=5"),
    (lambda: count_categories(4, "2"), InvalidProblemTypeError, r"n_jobs must be an integer"),
    (lambda: count_categories(4, 2, exact=1), InvalidOptionError,
     r"exact must be True .* or False .*; got 1"),
    (lambda: unrank_category(2**63, 2**63, 2), InvalidProblemError, r"at most 2\*\*62"),
    (lambda: rank_category([2, 1], 4), InvalidProblemError,
     r"sizes must sum to n_workers=4 when exact=True; got sum 3"),
    (lambda: rank_category([4, 1], 4, exact=False), InvalidProblemError,
     r"sizes must sum to at most n_workers=4; got sum 5"),
    (lambda: rank_category([3, 0, 1], 4), InvalidProblemError,
     r"sizes must be >= 1 .* got 0 for job 1"),
    (lambda: rank_category([2.0, 2.0], 4), InvalidProblemTypeError,
     r"sizes must be integers; got 2\.0 for job 0"),
    (lambda: rank_category([[1, 3]], 4), InvalidProblemError, r"1-D sequence .* shape \(1, 2\)"),
    (lambda: rank_category("13", 4), InvalidProblemTypeError, r"got the string '13'"),
    (lambda: rank_category([1] * 5, 4, exact=False), InvalidProblemError,
     r"sizes has 5 jobs but n_workers=4"),
    (lambda: unrank_category(3, 4, 2), InvalidOptionError,
     r"rank must be an integer in \[0, 3\) .*; got 3"),
    (lambda: unrank_category(-1, 4, 2), InvalidOptionError, r"got -1"),
    (lambda: enumerate_categories(4, 2, backend="fortran"), InvalidOptionError,
     r"backend='fortran' is not valid; choose one of 'auto', 'cython', 'numba', 'python'"),
    (lambda: enumerate_categories(4, 2, limit=0), InvalidOptionError,
     r"limit must be a positive integer; got 0\. Pass the largest number"),
    (lambda: sample_categories(4, 2, 0), InvalidOptionError,
     r"n_samples must be a positive integer; got 0\. Pass how many"),
    (lambda: sample_categories(4, 2, 3, seed=-1), InvalidOptionError,
     r"seed must lie in \[0, 2\*\*64\); got -1"),
    (lambda: sample_categories(4, 2, 3, seed=2**64), InvalidOptionError, r"seed must lie in"),
    (lambda: sample_categories(4, 2, 3, seed=1.5), InvalidOptionError, r"got 1\.5"),
    (lambda: sample_categories(4, 2, 3, method="best"), InvalidOptionError,
     r"method='best' is not valid; choose one of 'uniform', 'weighted'"),
    (lambda: sample_categories(4, 2, 3, centre=[1, 2]), InvalidOptionError,
     r"centre is only used with method='weighted'"),
    (lambda: sample_categories(4, 2, 3, spread=0.3), InvalidOptionError,
     r"spread is only used with method='weighted'"),
    (lambda: sample_categories(4, 2, 3, method="weighted", spread=0.0), InvalidOptionError,
     r"spread must be a number in \[0\.001, 1000\.0\]; got 0\.0"),
    (lambda: sample_categories(4, 2, 3, method="weighted", spread="wide"), InvalidOptionError,
     r"spread must be a number"),
    (lambda: sample_categories(4, 2, 3, method="weighted", centre=[1, 2, 3]),
     InvalidProblemError, r"centre must have one target size per job, shape \(2,\); got "
                          r"shape \(3,\)"),
    (lambda: sample_categories(4, 2, 3, method="weighted", centre=[1, -2]),
     InvalidProblemError, r"centre must be finite and > 0 .* got -2\.0 for job 1"),
    (lambda: sample_categories(4, 2, 3, method="weighted", centre=[1, np.nan]),
     InvalidProblemError, r"got nan for job 1"),
    (lambda: sample_categories(4, 2, 3, method="weighted", centre="ab"),
     InvalidProblemTypeError, r"centre must be numbers"),
    (lambda: sample_categories(4, 2, 3, method="weighted", centre=[1e308, 1e308]),
     InvalidProblemError, r"centre could not be scaled"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_missing_cython_backend_message(monkeypatch):
    from hetplace import _core

    monkeypatch.delattr(_core, "_categories", raising=False)
    monkeypatch.setitem(sys.modules, "hetplace._core._categories", None)  # the import fails as if not built
    monkeypatch.setattr(_core, "_warned", False)  # the warning is once per process
    with pytest.raises(MissingDependencyError, match=r"build_ext --inplace.*backend='numba'"):
        cat._backend("cython")
    with pytest.warns(HetplaceWarning, match=r"build_ext --inplace.*Numba backend runs"):
        assert cat._backend("auto")[0] == "numba"


# -----------------------------------------------------------------------------
# Hostile sizes: no hang, no giant allocation, no wrap-around
# -----------------------------------------------------------------------------


def test_capped_count_is_the_count_or_cap_plus_one():
    for K in (1, 2, 7, 40, 200, 3000):
        for S in sorted({min(s, K) for s in (1, 2, 3, K // 2, K - 1, K)} - {0}):
            for exact in (True, False):
                C = count_categories(K, S, exact)
                for cap in (0, 1, 5, 1000, 2**63 - 1):
                    assert cat._count_capped(K, S, exact, cap) == (C if C <= cap else cap + 1)
                assert abs(cat._log2_count(K, S, exact) - math.log2(C)) < 1e-6 * max(1.0, math.log2(C))


@pytest.mark.timeout(30)
def test_count_categories_huge_is_refused_at_once():
    # math.comb(10**30 - 1, 10**15 - 1) would run for ever
    with pytest.raises(InvalidProblemError, match=r"about 2\*\*5\.127e\+16 categories; exact counts.*"
                                                  r"up to 2\*\*524288 categories \(COUNT_BITS_MAX\)"):
        count_categories(10**30, 10**15)
    with pytest.raises(InvalidProblemError, match=r"COUNT_BITS_MAX"):
        count_categories(2**62, 2**40, exact=False)


@pytest.mark.timeout(60)
def test_count_categories_bit_limit_boundary():
    K = 2**62
    S = 10468  # the largest n_jobs whose count has at most 2**COUNT_BITS_MAX categories
    assert cat._log2_count(K, S, True) <= cat.COUNT_BITS_MAX < cat._log2_count(K, S + 1, True)
    C = count_categories(K, S)
    assert cat.COUNT_BITS_MAX - 32 <= C.bit_length() <= cat.COUNT_BITS_MAX + 1
    with pytest.raises(InvalidProblemError, match="COUNT_BITS_MAX"):
        count_categories(K, S + 1)


@pytest.mark.timeout(60)
def test_rank_and_unrank_work_limit():
    K, S = 2**20, 4096  # 4096 binomials of ~38,700 bits: unrank took 66 s
    with pytest.raises(InvalidProblemError, match=r"unrank_category .* exceeds the supported 8388608 \(RANK_WORK_MAX\)"):
        unrank_category(0, K, S, exact=False)
    with pytest.raises(InvalidProblemError, match=r"rank_category .*RANK_WORK_MAX"):
        rank_category([1] * (S - 1) + [K - S + 1], K)
    with pytest.raises(InvalidProblemError, match="COUNT_BITS_MAX"):
        rank_category([10**30] * 20000, 2 * 10**34, exact=False)
    # below the limits: still exact
    assert rank_category(unrank_category(12345, 2**62, 64), 2**62) == 12345
    # one category of 6.4e9 parts: the unrank loop (and its list) used to run out of memory
    with pytest.raises(InvalidProblemError, match="RANK_WORK_MAX"):
        unrank_category(0, 6_394_955_096, 6_394_955_096)
    assert unrank_category(0, 500_000, 500_000).tolist() == [1] * 500_000


@pytest.mark.timeout(30)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_categories_huge_workers_and_jobs_does_not_hang(backend):
    # math.comb(2**62, 2**40) hung before the sampler could refuse the 8 TiB result
    with pytest.raises(InvalidOptionError, match=r"sample_categories\(4611686018427387904, 1099511627776, "
                                                 r"n_samples=1, .* GiB .*MEMORY_MAX"):
        sample_categories(2**62, 2**40, 1, seed=0, backend=backend)
    # huge K with a few jobs is fine (direct method), whatever the count
    got = sample_categories(2**62, 3, 4, seed=1, backend=backend)
    _check_valid(got, 2**62, 3, False)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("method", ["uniform", "weighted"])
def test_sample_categories_giant_output_is_refused_before_allocating(method):
    # 10**9 x 10 int64 = 74.5 GiB used to be allocated (and then written)
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InvalidOptionError, match=r"needs about \d+(\.\d+)? GiB .* at most 4294967296 bytes "
                                                     r"\(4 GiB, MEMORY_MAX\).*Draw fewer samples"):
            sample_categories(10**6, 10, 10**9, seed=0, method=method)
        assert tracemalloc.get_traced_memory()[1] < 2**26
    finally:
        tracemalloc.stop()


@pytest.mark.timeout(30)
def test_enumerate_categories_memory_and_huge_counts_are_refused():
    # 999,999 rows of 999,999 sizes is within the default limit but needs 7.3 TiB
    with pytest.raises(InvalidOptionError, match=r"enumerate_categories\(1000000, 999999\) .*MEMORY_MAX"):
        enumerate_categories(10**6, 10**6 - 1)
    with pytest.raises(InvalidOptionError, match=r"has about 2\*\*.* categories, more than limit=1000000"):
        enumerate_categories(2**62, 2**40)
    with pytest.raises(InvalidOptionError, match=r"has 4851 categories, more than limit=10\."):
        enumerate_categories(100, 3, limit=10)


@pytest.mark.parametrize("call", [
    lambda: sample_categories(1, None, 1, seed=0),
    lambda: count_categories(3, None),
    lambda: unrank_category(0, 3, None),
    lambda: enumerate_categories(3, None),
])
def test_n_jobs_none_is_rejected(call):
    # n_jobs=None slipped through the validation (TypeError from math.comb / arithmetic)
    with pytest.raises(InvalidProblemTypeError, match=r"n_jobs must be an integer .*got None of type NoneType"):
        call()


def _round_centre_loop(c, K, S, exact):
    """The largest-remainder rounding one worker at a time (the obvious, O(S**2) form)."""
    T = K if exact else int(min(max(math.floor(float(c.sum()) + 0.5), S), K))
    fl = np.floor(c)
    n = np.maximum(fl, 1.0).astype(np.int64)
    diff = T - int(n.sum())
    order = np.argsort(-(c - fl), kind="stable")
    for k in range(max(diff, 0)):
        n[order[k % S]] += 1
    while diff < 0:
        n[int(np.argmax(np.where(n >= 2, n - c, -np.inf)))] -= 1
        diff += 1
    return n


def test_round_centre_matches_the_one_at_a_time_rounding():
    rng = np.random.default_rng(5)
    for t in range(300):
        S = int(rng.integers(1, 40))
        K = int(rng.integers(S, 400)) if t % 3 else int(rng.choice([2**40, 2**62]))
        exact = bool(t % 2)
        kind = t % 5
        c = rng.random(S) * 4 if kind == 0 else rng.lognormal(0, 2, S) if kind < 3 else np.round(rng.random(S) * 6) + 0.5
        c, _ = cat._check_centre(c, K, S, exact)
        assert np.array_equal(cat._round_centre(c, K, S, exact), _round_centre_loop(c, K, S, exact))


@pytest.mark.timeout(60)
def test_round_centre_many_small_parts_is_fast():
    # 10**6 jobs, all but one centred far below one worker: 10**6 - 1 surplus workers
    # were taken back one argmax over 10**6 parts at a time (10**12 steps)
    S, K = 10**6, 2 * 10**6
    centre = np.full(S, 1e-3)
    centre[-1] = 1e6
    c, base = cat._check_centre(centre, K, S, True)
    assert base.sum() == K and base.min() >= 1
    assert base[:-1].max() <= 2
