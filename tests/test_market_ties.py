"""The single-source market kernels (hetplace/_core/_market.py) agree bit for bit on every backend
on inputs full of exact ties (small integer throughputs and works), and the drivers do not depend
on the number of threads or on dirty work arrays.

Ties are where the tie-breaking rules (lower index first, strictly better totals only) decide the
result, so a ``<`` turned ``<=`` in one compilation shows up here.
"""

import numpy as np
import pytest

from hetplace._core._registry import BACKENDS, kernels, unavailable

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]


def _tied_category(seed, S, K):
    rng = np.random.default_rng(seed)
    rho = rng.integers(0, 3, (S, K)).astype(float)  # many equal values, some forbidden (0)
    rho[:, 0] = 1.0
    work = rng.integers(1, 3, S).astype(float)
    comm = np.zeros((S, K + 1))
    comm[:, 1:] = np.cumsum(rng.integers(0, 2, (S, K)), axis=1)
    return rho, work, comm


def _categories(seed, N, S, K):
    rng = np.random.default_rng(seed + 1000)
    total = rng.integers(S, K + 1, N)
    return np.array([1 + rng.multinomial(t - S, np.ones(S) / S) for t in total], dtype=np.int64)


def _worker_classes(rho):
    """Classes of identical columns (first occurrence order), as hetplace.smp.worker_classes lays them out."""
    cols, class_of = np.unique(rho.T, axis=0, return_inverse=True)
    class_of = class_of.reshape(-1).astype(np.int64)
    members = np.argsort(class_of, kind="stable").astype(np.int64)
    mc = np.bincount(class_of, minlength=cols.shape[0]).astype(np.int64)
    cls_start = np.concatenate([[0], np.cumsum(mc)]).astype(np.int64)
    return np.ascontiguousarray(cols.T), mc, members, cls_start


@pytest.mark.parametrize("seed", range(12))
def test_auction_and_market_agree_on_ties(seed):
    S, K = 2 + seed % 4, 6 + 3 * seed
    rho, work, comm = _tied_category(seed, S, K)
    sizes = _categories(seed, 1, S, K)[0]
    out = {}
    for b in AVAILABLE:
        t = kernels(b)
        vals_t = np.ascontiguousarray(np.where(rho > 0, rho, np.nan).T)
        af, ai = t.auction_workspace_size(S, K)
        wj, jp, st = np.empty(K, dtype=np.int64), np.empty(S + 1), np.zeros(2, dtype=np.int64)
        status = t.auction_kernel(vals_t, np.ones(S), -np.inf, sizes, wj, jp, st, np.full(af, np.nan),
                                  np.full(ai, -3, dtype=np.int64))
        row = [status, wj.tobytes(), jp.tobytes(), st.tobytes()]
        jo, ol, wr = t.ordinal_preferences(rho)
        row += [jo.tobytes(), ol.tobytes(), wr.tobytes()]
        nf, ni = t.market_workspace_size(S, K)
        for form in (t.FORM_PRICE, t.FORM_ORDINAL):
            wj, st = np.empty(K, dtype=np.int64), np.zeros(2, dtype=np.int64)
            total = t.market_category_kernel(rho, work, comm, sizes, form, 8, jo, ol, wr, wj, st,
                                             np.full(nf, np.nan), np.full(ni, -3, dtype=np.int64))
            row += [np.float64(total).tobytes(), wj.tobytes(), st.tobytes()]
        out[b] = row
    first = out[AVAILABLE[0]]
    for b, row in out.items():
        assert row == first, b


@pytest.mark.parametrize("seed", range(12))
def test_drivers_agree_on_ties_for_any_thread_count(seed):
    S, K, N = 2 + seed % 3, 8 + 2 * seed, 9
    rho, work, comm = _tied_category(seed, S, K)
    cats = _categories(seed, N, S, K)
    rhoC, mc, members, cls_start = _worker_classes(rho)
    ref = None
    for b in AVAILABLE:
        t = kernels(b)
        for threads in ((1, 2) if b != "python" else (1, 4)):
            row = []
            for form in (t.FORM_PRICE, t.FORM_ORDINAL):
                jo, ol, wr = t.ordinal_preferences(rho)
                wj, tot, st = np.full((N, K), -9, dtype=np.int64), np.empty(N), np.zeros((N, 3), dtype=np.int64)
                t.run_samples(rho, work, comm, cats, form, 8, jo, ol, wr, wj, tot, st, threads)
                row += [wj.tobytes(), tot.tobytes(), st.tobytes()]
            wj, tot, st = np.full((N, K), -9, dtype=np.int64), np.empty(N), np.zeros((N, 3), dtype=np.int64)
            t.run_samples_classes(rhoC, work, comm, mc, members, cls_start, cats, 8, wj, tot, st, threads)
            row += [wj.tobytes(), tot.tobytes(), st.tobytes()]
            assert np.all((wj >= -1) & (wj < S))
            if ref is None:
                ref = row
            assert row == ref, (b, threads)


@pytest.mark.skipif("cython" not in AVAILABLE, reason="Cython extensions not built")
def test_cython_placement_imports_no_numba():
    """The single source must not drag Numba into the compiled backend (the loader compiles it only on demand)."""
    import subprocess
    import sys

    code = ("import sys, hetplace as hp; from hetplace.data import example_path; from hetplace.io import load_problem; "
            "p = load_problem(example_path('cluster.toml'), example_path('jobs.csv')); "
            "hp.place(p, method='smp', backend='cython', matching='ordinal'); hp.place(p, method='smp', backend='cython'); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
