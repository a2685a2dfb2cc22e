"""SMP (method="smp"): agreement across backends and threads, feasibility, quality vs exact."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetplace as hp
from hetplace import InvalidOptionError
from hetplace.data import gavel_path
from hetplace.instances import gavel_instance, speeds_instance, synthetic_instance
from hetplace.smp import _cython_available

from instances import random_problem
from methods import needs_cython

GAVEL = gavel_path()  # the Gavel table shipped with hetplace


def _smp(problem, **kw):
    kw.setdefault("seed", 7)
    return hp.place(problem, method="smp", **kw)


@needs_cython
@pytest.mark.parametrize("matching", ["price", "ordinal"])
def test_numba_and_cython_identical(matching):
    for seed in range(120):
        p = random_problem(seed)
        a = _smp(p, backend="numba", matching=matching, samples=16)
        b = _smp(p, backend="cython", matching=matching, samples=16)
        np.testing.assert_array_equal(a.worker_job, b.worker_job, err_msg=f"seed {seed}")
        assert a.mean_jct == b.mean_jct


def test_all_backends_identical_on_200_instances():
    """python == numba == cython on 200 seeded instances per matching form (worker and class modes)."""
    backends = ["python", "numba"] + (["cython"] if _cython_available() else [])
    modes = set()
    for seed in range(200):
        p = random_problem(1000 + seed, K_max=12, S_max=5)
        for matching in ("price", "ordinal"):
            runs = [_smp(p, backend=b, matching=matching, samples=6) for b in backends]
            for b, r in zip(backends[1:], runs[1:]):
                np.testing.assert_array_equal(r.worker_job, runs[0].worker_job, err_msg=f"seed {seed} {matching} {b}")
                assert r.mean_jct == runs[0].mean_jct
            modes.add((runs[0].info.get("market_on"), runs[0].info.get("polish_on")))
    assert modes >= {("classes", "classes"), ("workers", "classes"), ("workers", "workers")}


@pytest.mark.parametrize("backend", ["numba", pytest.param("cython", marks=needs_cython)])
def test_threads_do_not_change_the_result(backend):
    for seed in range(20):
        p = random_problem(2000 + seed, K_max=40, S_max=8)
        one = _smp(p, backend=backend, threads=1, samples=32)
        two = _smp(p, backend=backend, threads=2, samples=32)
        np.testing.assert_array_equal(one.worker_job, two.worker_job)


def test_same_seed_same_placement_and_seed_matters():
    p = random_problem(3, K_max=40, S_max=8)
    a, b = _smp(p, seed=11), _smp(p, seed=11)
    np.testing.assert_array_equal(a.worker_job, b.worker_job)
    assert a.info["seed"] == 11


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from(["price", "ordinal"]), st.booleans(), st.sampled_from(["weighted", "uniform"]))
def test_placement_is_feasible_and_shares_sum(seed, matching, polish, sampling):
    p = random_problem(seed, K_max=24, S_max=6)
    pl = _smp(p, matching=matching, polish=polish, sampling=sampling, samples=8)
    assert hp.is_feasible(p, pl.worker_job)
    for i in range(p.n_jobs):
        assert pl.shares[pl.worker_job == i].sum() == p.batch[i]
    assert (pl.shares[pl.worker_job < 0] == 0).all()


def test_polish_never_hurts():
    for seed in range(20):
        p = random_problem(4000 + seed, K_max=32, S_max=6)
        raw = _smp(p, polish=False, samples=16)
        pol = _smp(p, polish=True, samples=16)
        assert pol.mean_jct <= raw.mean_jct * (1 + 1e-12)


def test_fairness_tolerance_trades_a_bounded_amount_of_jct():
    for seed in range(15):
        p = random_problem(5000 + seed, K_max=32, S_max=6)
        strict = _smp(p, samples=32)
        fair = _smp(p, samples=32, fairness_tol=0.02)
        assert fair.mean_jct <= strict.mean_jct * 1.02 * (1 + 1e-12)
        assert fair.fairness >= strict.fairness - 1e-12


def test_exact_on_tiny_instances_with_enumeration():
    # with as many samples as categories every size vector is tried: SMP + polish is then exact here
    from hetplace.exact import solve_exact

    worst = 0.0
    for seed in range(30):
        p = random_problem(6000 + seed, K_max=7, S_max=3)
        opt = solve_exact(p, method="brute").objective
        pl = _smp(p, samples=hp.count_categories(p.n_workers, p.n_jobs, exact=False))
        worst = max(worst, pl.mean_jct / opt - 1)
    assert worst < 1e-9


def test_quality_against_exact_optimum():
    """Mean gap <= 0.5 % and worst <= 2.04 % on seeded Gavel instances (the full table is a benchmark)."""
    from hetplace.exact import solve_exact

    gaps = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        K = int(rng.choice([8, 16, 24, 32]))
        S = int(rng.integers(2, min(12, K) + 1))
        p = gavel_instance(seed, K, S, GAVEL)
        opt = solve_exact(p, method="dp").objective
        gaps.append(_smp(p, seed=seed).mean_jct / opt - 1)
    gaps = np.array(gaps)
    assert gaps.min() > -1e-9
    assert gaps.mean() <= 0.005, gaps
    assert gaps.max() <= 0.0204, gaps


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(samples=0), r"samples must be a positive integer; got 0"),
        (dict(samples=2.5), r"samples must be a positive integer; got 2.5"),
        (dict(sampling="gauss"), r"sampling='gauss' is not valid; choose one of 'weighted', 'uniform'"),
        (dict(matching="hungarian"), r"matching='hungarian' is not valid; choose one of 'price', 'ordinal'"),
        (dict(backend="gpu"), r"backend='gpu' is not valid; choose one of 'auto', 'cython', 'numba', 'python'"),
        (dict(polish="yes"), r"polish must be True or False; got 'yes'"),
        (dict(fairness_tol=-0.1), r"fairness_tol must be a number in \[0, 1\)"),
        (dict(threads=0), r"threads must be a positive integer or None; got 0"),
        (dict(max_rounds=0), r"max_rounds must be a positive integer; got 0"),
        (dict(bogus=1), r"method='smp' does not take option\(s\) bogus; its options are: backend, fairness_tol"),
        (dict(seed=-1), r"seed must lie in \[0, 2\*\*64\); got -1"),
    ],
)
def test_bad_options(kw, pattern):
    p = random_problem(1)
    with pytest.raises(InvalidOptionError, match=pattern):
        hp.place(p, method="smp", **kw)


def test_unknown_method_lists_valid_ones():
    with pytest.raises(InvalidOptionError, match=r"method='fast' is not valid; choose one of 'equal', 'random', 'greedy', 'keep-greedy', 'exact', 'auto', 'smp'"):
        hp.place(random_problem(1), method="fast")


def test_cancelling_throughputs_give_the_same_placement_on_every_backend():
    # X - rho cancels to 0 in float64 (1e29 + 1 - 1e29): Numba raised ZeroDivisionError (SystemError
    # from the prange driver) where Cython and Python take the IEEE inf; one error model now (_core._jit)
    p = hp.Problem(throughput=[[1.0, 1e29], [1.0, 2.0**31]], type_counts=[2, 2], batch=[64, 32],
                   iterations=[100.0, 50.0], grad_bytes=[1e6, 2e6], bandwidth=1e8)
    got = {b: hp.place(p, method="smp", backend=b, samples=8, seed=3).worker_job.tolist()
           for b in ("python", "numba", "cython")}
    assert got["python"] == got["numba"] == got["cython"]


@pytest.mark.parametrize("backend", ["python", "numba", "cython"])
def test_job_with_a_batch_smaller_than_the_cluster_gets_only_workers_with_samples(backend):
    # batch 2 on 8 workers: all 8 used to be placed (6 with zero samples, counted as throughput: 1.67 s)
    p = hp.Problem(throughput=[[1, 2]], type_counts=[4, 4], batch=[2], iterations=[10])
    pl = hp.place(p, method="smp", seed=0, backend=backend)
    assert pl.worker_job.tolist() == [-1, -1, -1, -1, 0, 0, -1, -1]
    assert pl.mean_jct == pytest.approx(5.0)
    assert np.all(pl.shares[pl.worker_job >= 0] >= 1)


def test_default_threads_are_serial_for_small_decisions_and_the_cores_for_large():
    from hetplace.smp import PARALLEL_MIN_WORK, available_threads, thread_count

    for backend in ("cython", "numba"):
        assert thread_count(backend, None, PARALLEL_MIN_WORK - 1) == 1
        assert thread_count(backend, None, PARALLEL_MIN_WORK) == available_threads(backend)
        assert thread_count(backend, 3, 10) == 3  # an explicit threads= is honoured
    assert thread_count("python", None, 10**12) == 1
    p = hp.data.default_problem()
    assert hp.place(p, method="smp", seed=0).info["threads"] == 1


@pytest.mark.parametrize("backend", ["cython", "numba"])
def test_omp_num_threads_caps_the_default_threads(backend):
    import subprocess
    import sys

    code = f"from hetplace.smp import available_threads; print(available_threads({backend!r}))"
    env = dict(__import__("os").environ, OMP_NUM_THREADS="1")
    # from the folder holding the hetplace this test imported: `python -c` puts its working
    # folder first on sys.path, and an unpacked sdist's source tree has no compiled kernels
    here = str(__import__("pathlib").Path(hp.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=here, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


def test_available_threads_without_compiled_kernels_raises_the_fix(monkeypatch):
    # used to raise a bare ImportError ("No module named hetplace._core._smp", now _openmp) from a fresh clone
    import sys

    from hetplace import _core
    from hetplace.smp import available_threads

    monkeypatch.delattr(_core, "_openmp", raising=False)
    monkeypatch.setitem(sys.modules, "hetplace._core._openmp", None)  # the import fails as if not built
    with pytest.raises(InvalidOptionError, match=r"backend='cython' needs .*_core\._openmp.*build_ext --inplace"):
        available_threads("cython")
    assert available_threads("numba") >= 1


def test_threadpoolctl_limits_cap_the_default_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from hetplace.smp import available_threads

    with threadpoolctl.threadpool_limits(1):
        assert available_threads("cython") == 1


def test_fit_sizes_matches_the_row_by_row_reference_and_keeps_totals():
    from hetplace.smp import fit_sizes
    from reference import fit_sizes_reference

    rng = np.random.default_rng(5)
    for t in range(400):
        S = int(rng.integers(1, 9))
        K = int(rng.integers(S, 60))
        cats = hp.sample_categories(K, S, int(rng.integers(1, 30)), seed=t)
        mw = rng.integers(1, K + 1, size=S)
        got = fit_sizes(cats, mw)
        assert np.array_equal(got, fit_sizes_reference(cats, mw))
        assert np.all((got >= 1) & (got <= mw))
        keep = ~(cats > mw).any(axis=1)
        assert np.array_equal(got[keep], cats[keep])  # rows within the limits are untouched
        # a fitted row uses as many workers as it drew, or every job is at its limit
        assert np.all((got.sum(axis=1) == cats.sum(axis=1)) | np.all(got == mw, axis=1))
