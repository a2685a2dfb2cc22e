"""The backend registry (hetplace/_core/_registry.py) and the single-source loader (_source.py).

* every backend gives the same kernel names, and each is what it says (Numba
  dispatchers, Cython functions, plain Python);
* "cython" never silently means plain Python: a single-source module imported
  as its ``.py`` (a failed build) makes the backend unavailable, with the
  package's one message for a missing extension;
* the Numba and plain-Python compilations need no Cython at run time;
* setup.py builds exactly the registered single-source modules;
* the polish drivers agree bit for bit on inputs with exact ties.
"""

import builtins
import os
import re
import sys

import numpy as np
import pytest

import hetplace as hp
from hetplace import InvalidOptionError
from hetplace._core import _registry, _source
from hetplace._core._registry import BACKENDS, KERNEL_NAMES, kernels, unavailable

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_backend_has_the_same_kernels():
    for b in AVAILABLE:
        table = kernels(b)
        assert table.backend == b
        assert set(vars(table)) == {"backend", *KERNEL_NAMES}


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"), reason="Numba's JIT is off")
def test_numba_backend_is_compiled_and_python_backend_is_not():
    import numba

    nb = _source.load("_polish", "numba")
    py = _source.load("_polish", "python")
    assert isinstance(nb.polish_kernel, numba.core.registry.CPUDispatcher)
    # the prange driver: a parallel compilation, and a serial one for a single thread
    assert isinstance(nb._polish_rows_kernel.parallel, numba.core.registry.CPUDispatcher)
    assert nb._polish_rows_kernel.parallel.targetoptions.get("parallel")
    assert not nb._polish_rows_kernel.serial.targetoptions.get("parallel")
    assert not isinstance(py.polish_kernel, numba.core.registry.CPUDispatcher)
    assert not nb.COMPILED and not py.COMPILED


@pytest.mark.skipif("cython" not in AVAILABLE, reason="Cython extensions not built")
def test_cython_backend_is_the_compiled_extension():
    from hetplace._core import _polish

    assert _polish.COMPILED is True
    assert _polish.__file__.endswith((".so", ".pyd"))
    assert kernels("cython").polish is _polish.polish


def test_cython_backend_rejects_a_single_source_module_imported_as_python(monkeypatch):
    # a failed build leaves hetplace/_core/_polish.py importable in place of the extension
    if "cython" in AVAILABLE:
        kernels("cython")  # a backend resolved before is checked again
    plain = _source.load("_polish", "python")
    monkeypatch.setitem(sys.modules, "hetplace._core._polish", plain)
    name, error = unavailable("cython")
    assert name == "_polish" and "imported as plain Python" in str(error)
    with pytest.raises(InvalidOptionError, match=r"backend='cython' needs the compiled extension hetplace\._core\._polish"):
        kernels("cython")
    p = hp.Problem([[1.0]], [2], [4], [10.0])
    with pytest.raises(InvalidOptionError, match=r"hetplace\._core\._polish.*imported as plain Python"):
        hp.place(p, method="smp", backend="cython", seed=0)


def test_single_source_runs_without_cython(monkeypatch):
    real_import = builtins.__import__

    def no_cython(name, *args, **kwargs):
        if name == "cython" or name.startswith("cython."):
            raise ImportError("No module named 'cython' (hidden by the test)")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cython)
    monkeypatch.setattr(_source, "_loaded", {})
    py = _source.load("_polish", "python")
    assert py.cython is _source._SHIM
    rho = np.array([[2.0, 1.0, 1.0]])
    wj = np.array([0, -1, -1], dtype=np.int64)
    comm = np.zeros((1, 4))
    steps = py.polish(rho, np.array([10.0]), comm, np.zeros(3, dtype=np.int64), np.ones(3), True, wj, 100)
    assert steps == 2 and (wj == 0).all()


def test_setup_builds_exactly_the_registered_single_source_modules():
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        pattern = re.search(r're\.search\(r"(.+?)", f\.read\(\), re\.M\)', f.read()).group(1)
    core = os.path.join(ROOT, "hetplace", "_core")
    built = set()
    for fname in os.listdir(core):
        if fname.startswith("_") and fname.endswith(".py"):
            with open(os.path.join(core, fname), encoding="utf-8") as f:
                if re.search(pattern, f.read(), re.M):
                    built.add(fname[:-3])
    assert built == set(_registry._SINGLE_SOURCE)


def _tied_problem(seed):
    """Jobs that are exact copies of each other and workers of equal throughput: every step has ties."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 3))
    job = rng.uniform(1, 50, G)
    S = int(rng.integers(2, 5))
    rho = np.tile(job, (S, 1))
    counts = rng.multinomial(int(rng.integers(S + 1, 14)), np.ones(G) / G)
    counts[counts.argmin()] += int(counts.sum() < S)
    speeds = None if rng.random() < 0.5 else np.repeat([0.5, 1.0], (counts.sum() + 1) // 2)[:counts.sum()]
    return hp.Problem(rho, counts, np.full(S, 64), np.full(S, 100.0), grad_bytes=np.full(S, 1e7),
                      bandwidth=1e8 if rng.random() < 0.5 else np.inf, worker_speed=speeds)


@pytest.mark.parametrize("seed", range(30))
def test_polish_rows_agree_on_exact_ties(seed):
    p = _tied_problem(seed)
    rng = np.random.default_rng(seed)
    S, K = p.n_jobs, p.n_workers
    N = 4
    out0 = np.full((N, K), -1, dtype=np.int64)
    for r in range(N):  # feasible starts: every job one worker, the rest anywhere (or idle)
        perm = rng.permutation(K)
        out0[r, perm[:S]] = np.arange(S)
        out0[r, perm[S:]] = rng.integers(-1, S, K - S)
    rows = np.array([3, 0, 2], dtype=np.int64)
    results = {}
    for b in AVAILABLE:
        wj, total, stats = out0.copy(), np.full(N, -1.0), np.zeros((N, 3), dtype=np.int64)
        kernels(b).polish_rows(p.worker_throughput, p.work, p.size_cost, p.worker_type, p.worker_speed,
                               p.uniform_speed, rows, 100_000, wj, total, stats, 1)
        results[b] = (wj, total, stats)
    ref = results["python"]
    for b, (wj, total, stats) in results.items():
        np.testing.assert_array_equal(wj, ref[0], err_msg=b)
        np.testing.assert_array_equal(total.view(np.int64), ref[1].view(np.int64), err_msg=b)
        np.testing.assert_array_equal(stats, ref[2], err_msg=b)
    np.testing.assert_array_equal(ref[0][1], out0[1])  # rows not listed are untouched
    assert ref[1][1] == -1.0


@pytest.mark.parametrize("seed", range(30))
def test_polish_rows_classes_agree_on_exact_ties(seed):
    from hetplace.smp import worker_classes

    p = _tied_problem(seed)
    rhoC, mc, class_of, members, cls_start = worker_classes(p)
    rng = np.random.default_rng(seed)
    S, K, N = p.n_jobs, p.n_workers, 3
    out0 = np.full((N, K), -1, dtype=np.int64)
    for r in range(N):
        perm = rng.permutation(K)
        out0[r, perm[:S]] = np.arange(S)
        out0[r, perm[S:]] = rng.integers(-1, S, K - S)
    rows = np.array([2, 0], dtype=np.int64)
    results = {}
    for b in AVAILABLE:
        wj, total, stats = out0.copy(), np.full(N, -1.0), np.zeros((N, 3), dtype=np.int64)
        kernels(b).polish_rows_classes(rhoC, p.work, p.size_cost, mc, class_of, members, cls_start, rows, 100_000,
                                       wj, total, stats, 1)
        results[b] = (wj, total, stats)
    ref = results["python"]
    for b, (wj, total, stats) in results.items():
        np.testing.assert_array_equal(wj, ref[0], err_msg=b)
        np.testing.assert_array_equal(total.view(np.int64), ref[1].view(np.int64), err_msg=b)
        np.testing.assert_array_equal(stats, ref[2], err_msg=b)
    assert np.isfinite(ref[1][rows]).all() and ref[1][1] == -1.0


@pytest.mark.parametrize("seed", range(3))
def test_polish_rows_classes_in_chunks_of_rows_agree(seed):
    # above 128 jobs the class polish keeps trees; when the rows' trees do not fit in
    # tree_cells they are polished a few rows at a time (or, below one row, by the scan):
    # every split gives the same rows, totals and steps
    from hetplace.data import gavel_path
    from hetplace.instances import gavel_instance
    from hetplace.smp import worker_classes

    p = gavel_instance(seed, 600, 150, gavel_path())
    rhoC, mc, class_of, members, cls_start = worker_classes(p)
    S, K, N = p.n_jobs, p.n_workers, 5
    out0 = np.stack([hp.place(p, method="smp", seed=r, polish=False, samples=4).worker_job for r in range(N)])
    rows = np.array([4, 1, 3, 0], dtype=np.int64)
    width = mc.size * (mc.size + 1) * 2 * 256  # P = 256 > S
    results = []
    for b in [b for b in AVAILABLE if b != "python"]:
        for cells in (None, width, 2 * width + 1, width - 1):
            wj, total, stats = out0.copy(), np.full(N, -1.0), np.zeros((N, 3), dtype=np.int64)
            kw = {} if cells is None else {"tree_cells": cells}
            kernels(b).polish_rows_classes(rhoC, p.work, p.size_cost_spec, mc, class_of, members, cls_start, rows,
                                           100_000, wj, total, stats, 2, **kw)
            results.append((b, cells, wj, total, stats))
    for b, cells, wj, total, stats in results:
        np.testing.assert_array_equal(wj, results[0][2], err_msg=f"{b} {cells}")
        np.testing.assert_array_equal(total.view(np.int64), results[0][3].view(np.int64))
        np.testing.assert_array_equal(stats, results[0][4])
    assert (results[0][4][rows, 2] > 0).all() and (results[0][2][2] == out0[2]).all()


@pytest.mark.skipif("cython" not in AVAILABLE, reason="the Cython extensions are not built")
def test_cython_path_imports_no_numba():
    """A fresh process deciding on the compiled backend imports no Numba and compiles nothing (issue 10)."""
    import subprocess
    import sys

    code = (
        "import sys, time, hetplace as hp\n"
        "from hetplace.data import default_problem\n"
        "p = default_problem()\n"
        "t = time.perf_counter(); hp.place(p, method='smp', seed=0, backend='cython'); t = time.perf_counter() - t\n"
        "print('numba' in sys.modules, t)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    loaded, _ = out.stdout.split()
    assert loaded == "False", out.stdout


def test_one_error_for_a_missing_cython_backend_everywhere(monkeypatch):
    """place, deferred_acceptance and sample_categories raise the same error, caught as either parent."""
    import hetplace as hp
    from hetplace._core import _registry
    from hetplace.data import default_problem
    from hetplace.errors import BackendUnavailableError, InvalidOptionError, MissingDependencyError

    monkeypatch.setattr(_registry, "unavailable",
                        lambda b: ("_polish", ImportError("not built")) if b == "cython" else None)
    p = default_problem()
    calls = [
        lambda: hp.place(p, method="smp", backend="cython"),
        lambda: hp.deferred_acceptance(np.ones((2, 3)), [1, 1], backend="cython"),
        lambda: hp.deferred_acceptance(np.ones((2, 3)), [1, 1], form="ordinal", backend="cython"),
        lambda: hp.sample_categories(8, 3, 4, seed=0, backend="cython"),
    ]
    for call in calls:
        with pytest.raises(BackendUnavailableError, match="backend='cython'") as info:
            call()
        assert isinstance(info.value, InvalidOptionError) and isinstance(info.value, MissingDependencyError)


def test_a_numba_kernel_compiles_once_for_read_only_and_writable_inputs():
    """Inputs reach a Numba kernel read-only whatever the caller passed (one compilation, not two).

    A frozen Problem array is read-only, a fresh one writable, and Numba compiled a kernel once
    for each: the fast suite spent minutes on it, an embedding scheduler a stall of seconds.
    """
    import numba

    if numba.config.DISABLE_JIT:
        pytest.skip("the JIT is off")
    from tests.instances import tiny_topology

    nb = _source.load("_topo", "numba")
    p = tiny_topology(3, n_workers=6, n_jobs=2)
    rows = np.array([hp.place(p, "greedy").worker_job], dtype=np.int64)
    topo = p.topology
    args = [rows, p.worker_type, p.n_types, topo.node, topo.node_rack, topo.node_bandwidth, topo.rack is not None,
            p.available.astype(np.uint8), p.class_speed, np.zeros((1, p.n_jobs), dtype=np.uint8), 1]

    def variant(write):
        out = []
        for a in args:
            if isinstance(a, np.ndarray):
                a = a.copy()
                a.flags.writeable = write
            out.append(a)
        return out

    def compiled():  # the driver's serial and parallel compilations (which one runs depends on Numba's threads)
        return len(nb._pack_rows_kernel.serial.signatures) + len(nb._pack_rows_kernel.parallel.signatures)

    first = nb.topo_pack_rows(*variant(True))
    before = compiled()
    assert before >= 1
    second = nb.topo_pack_rows(*variant(False))
    assert compiled() == before
    np.testing.assert_array_equal(first, second)
