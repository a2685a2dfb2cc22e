"""Benchmarks of the matching kernels (docs/model.md §3.3-3.5): python vs numba vs cython.

Run (from the repository root)::

    pytest benchmarks/bench_matching.py --benchmark-only --benchmark-group-by=group,param:size
    pytest benchmarks/bench_matching.py --benchmark-only -k "K64_S8"      # the SMP hot path
    pytest benchmarks/bench_matching.py -k vs_matching -s                 # against `matching`

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
each case runs once, plus its check.  The ordinal ``solve`` times the kernel of
``deferred_acceptance(form="ordinal")``, whose job lists are sorted inside it.

``test_ordinal_vs_matching_library`` runs ``deferred_acceptance(form="ordinal")``
side by side with the hospital-resident solver of the ``matching`` library
(``pip install matching``; skipped without it) at K = 1,024, S = 64, checks
that both return the same job-optimal stable matching, and asserts the
VS_MATCHING_SPEEDUP (1,000x) target on each compiled backend outside CI (or
with ``HETPLACE_LATENCY_TARGETS=1``), as bench_latency.py does.
"""

import os
import time

import numpy as np
import pytest

from hetplace._core._registry import kernels, unavailable

_HAVE_CYTHON = unavailable("cython") is None

BACKENDS = ["python", "numba", "cython"]
SIZES = [(64, 8), (256, 32), (4096, 256)]
PY_MAX_WORKERS = 256  # the python backend is skipped above this K
FAMILIES = ["types", "speeds"]


def _module(backend):
    if backend == "cython" and not _HAVE_CYTHON:
        pytest.skip("Cython extension not built (python setup.py build_ext --inplace)")
    return kernels(backend)


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
    return mod.ordinal_preferences(rho)


def _rounds(K):
    return 3 if K >= 4096 else 20


def _reference_backend(backend, K):
    """Another backend to check the timed result against (None: the pair is checked elsewhere).

    Small sizes: numba and cython against python, python against numba.
    Large sizes: numba against cython only (keeps the CI smoke run short).
    """
    if K <= PY_MAX_WORKERS:
        return "numba" if backend == "python" else "python"
    return "cython" if backend == "numba" and _HAVE_CYTHON else None


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
        # the ordinal kernel of deferred_acceptance (hetplace/_core/_ordinal.py) on the market's
        # preferences: jobs by rho, workers by rho / (sum_k rho / K)
        ordinal = kernels(backend).ordinal_match
        div = rho.sum(axis=1) / K

        def fn():
            return ordinal(rho, 0.0, rho, div, sizes, wj, stats)

    _time(benchmark, fn, K)
    # check: another backend returns the same assignment
    other_backend = _reference_backend(backend, K)
    if other_backend is not None:
        other = _module(other_backend)
        ref = np.empty(K, dtype=np.int64)
        if form == "price":
            other.auction_kernel(vals_t, a, 0.0, sizes, ref, np.empty(S + 1), np.zeros(2, dtype=np.int64),
                                 np.empty(nf), np.empty(ni, dtype=np.int64))
        else:
            kernels(other_backend).ordinal_match(rho, 0.0, rho, div, sizes, ref, np.zeros(2, dtype=np.int64))
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
    other_backend = _reference_backend(backend, K)
    if other_backend is not None:
        other = _module(other_backend)
        ref = np.empty(K, dtype=np.int64)
        ref_total = other.market_category_kernel(rho, work, comm, sizes, form_id, 8, jo, ol, wr, ref,
                                                 np.zeros(2, dtype=np.int64), np.empty(nf),
                                                 np.empty(ni, dtype=np.int64))
        assert total == ref_total and wj.tolist() == ref.tolist()
    benchmark.extra_info.update(rounds=int(stats[0]), proposals=int(stats[1]), total_jct=float(total))


# ----------------------------------------------------------------------------
# deferred_acceptance(form="ordinal") side by side with the `matching` library
# ----------------------------------------------------------------------------

CI = os.environ.get("CI", "") not in ("", "0", "false")
#: The speed-up target is checked only when asked (``HETPLACE_LATENCY_TARGETS=1``) or outside CI,
#: as in bench_latency.py: timings on a shared CI machine are not figures.
TARGETS = os.environ.get("HETPLACE_LATENCY_TARGETS", "0" if CI else "1") not in ("", "0", "false")
#: deferred_acceptance(form="ordinal") must be this many times faster than `matching`'s
#: job-optimal hospital-resident solve (its ``solve`` alone, the game built beforehand).
VS_MATCHING_SPEEDUP = 1000.0
VS_MATCHING_SIZE = (1024, 64)
#: Interleaved rounds: one library solve, then OUR_CALLS calls of ours, per round.
VS_MATCHING_ROUNDS, OUR_CALLS = 3, 50


def ordinal_instance(K, S):
    """``values`` (S, K), -inf = forbidden, and capacities of the seeded ``speeds`` market."""
    rho, _work, _comm, sizes = make_category(K, S, "speeds")
    return np.where(rho > 0, rho, -np.inf), sizes


def matching_library_game(values, sizes):
    """The same market as `matching`'s dictionaries: preference lists best first, ties by index.

    Jobs (hospitals) rank their acceptable workers by value, workers
    (residents) their acceptable jobs by deferred_acceptance's default worker
    rank (value over the job's mean allowed value).  Returns a function that
    builds the game, and the capacities.
    """
    from hetplace.matching import _default_worker_rank

    S, K = values.shape
    mask = np.isfinite(values)
    rank = _default_worker_rank(values, mask)
    hospital_prefs = {i: sorted(np.flatnonzero(mask[i]).tolist(), key=lambda k: (-values[i, k], k)) for i in range(S)}
    resident_prefs = {k: sorted(np.flatnonzero(mask[:, k]).tolist(), key=lambda i: (-rank[i, k], i)) for k in range(K)}
    capacities = {i: int(sizes[i]) for i in range(S)}
    games = pytest.importorskip("matching.games")
    return lambda: games.HospitalResident.create_from_dictionaries(resident_prefs, hospital_prefs, capacities)


def library_worker_job(solution, K):
    """`matching`'s solution (hospital -> residents) as a job per worker, -1 idle."""
    wj = np.full(K, -1, dtype=np.int64)
    for hospital, residents in solution.items():
        for resident in residents:
            wj[resident.name] = hospital.name
    return wj


@pytest.mark.parametrize("backend", ["cython", "numba"])
def test_ordinal_vs_matching_library(benchmark, backend):
    """deferred_acceptance(form="ordinal") against ``HospitalResident(...).solve(optimal="hospital")``.

    The same job-optimal stable matching is checked, then (timings on) the
    library and hetplace are timed in interleaved rounds: each round one
    library solve (its game built outside the timing, and its build timed
    apart) and OUR_CALLS calls of ours.  The speed-up is the median library
    solve over our median call, against VS_MATCHING_SPEEDUP outside CI.
    """
    from hetplace.matching import deferred_acceptance

    _module(backend)  # skips when the Cython extension is not built
    K, S = VS_MATCHING_SIZE
    benchmark.group = "ordinal-vs-matching"
    values, sizes = ordinal_instance(K, S)
    build = matching_library_game(values, sizes)

    def ours():
        return deferred_acceptance(values, sizes, form="ordinal", backend=backend)

    res = _time(benchmark, ours, K)
    lib_build, lib_solve, our_calls = [], [], []
    for r in range(1 if getattr(benchmark, "disabled", False) else VS_MATCHING_ROUNDS):
        t0 = time.perf_counter()
        game = build()
        t1 = time.perf_counter()
        solution = game.solve(optimal="hospital")
        t2 = time.perf_counter()
        lib_build.append(t1 - t0)
        lib_solve.append(t2 - t1)
        if r == 0:  # the same job-optimal stable matching
            assert res.success and res.backend == backend
            assert res.worker_job.tolist() == library_worker_job(solution, K).tolist()
        for _ in range(OUR_CALLS):
            t = time.perf_counter()
            ours()
            our_calls.append(time.perf_counter() - t)
    ours_s, solve_s, build_s = (float(np.median(x)) for x in (our_calls, lib_solve, lib_build))
    speedup = solve_s / ours_s
    benchmark.extra_info.update(hetplace_s=ours_s, matching_solve_s=solve_s, matching_build_s=build_s,
                                speedup_vs_solve=speedup, speedup_vs_build_and_solve=(build_s + solve_s) / ours_s)
    print(f"\n{backend}: hetplace {ours_s * 1e3:.3f} ms; matching solve {solve_s * 1e3:.0f} ms "
          f"(+ build {build_s * 1e3:.0f} ms); speed-up {speedup:.0f}x ({(build_s + solve_s) / ours_s:.0f}x "
          "with the build)")
    if TARGETS and not getattr(benchmark, "disabled", False):
        assert speedup >= VS_MATCHING_SPEEDUP, (
            f"deferred_acceptance(form='ordinal', backend={backend!r}) is {speedup:.0f}x faster than "
            f"matching's solve at K={K}, S={S}; the target is {VS_MATCHING_SPEEDUP:.0f}x")
