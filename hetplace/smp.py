"""SMP: sampling-based multi-job placement (docs/model.md §3).

Pipeline of one decision:

1. **Sampling.**  ``samples`` distinct categories (job-size vectors with
   ``sum n_i <= K``, so idle workers are allowed) drawn by
   :func:`hetplace.sample_categories`, uniformly over all categories (default)
   or weighted around a centre (:func:`centre_sizes`, the fractional
   relaxation over GPU types solved by Frank-Wolfe **(ours)**; docs/model.md §2.4's
   ``X_i ~ sqrt(w_i)`` is its one-type special case).
2. **Market.**  Every category goes through the deferred-acceptance market
   with linearised, iterated valuations ``v[i,k] = w_i rho[i,k] / X_i^2``
   (price form by default, or ordinal) and is scored by its TRUE mean JCT.
3. **Polish (ours, switchable).**  The ``polish_top`` best distinct market
   results are improved by a best-improvement local search over single-worker
   moves and swaps.
4. **Choice with fairness.**  Among the results whose mean JCT is within
   ``fairness_tol`` (relative) of the best, the one with the highest Jain
   index of slowdowns wins; remaining ties go to the lowest sample index.

**Worker classes (ours).**  Workers with identical throughput columns (same
type and speed) are interchangeable, so steps 2-3 can work on the count matrix
``cnt[i, c]`` instead of single workers (:mod:`hetplace._core._market`):
the market searches over the C classes instead of the S jobs, and a polish
step costs O(S C^2) instead of O((S C)^2).  :func:`class_modes` picks the
level from (S, K, C); this is what makes thousands of GPUs fast (docs/results.md
§3, ``pytest benchmarks/bench_smp.py -k scale -s``).  When per-worker speeds give
more than ``speed_buckets`` classes per type and ``K * S > BUCKET_MIN_SIZE``,
the search runs on ``speed_buckets`` equal-size speed buckets per type
(approximate values), every result is then scored with the true speeds and the polished
ones get their workers reordered inside each bucket (:func:`_sort_buckets`).

**Tenant quotas (ours).**  When a quota binds (``problem.has_quota``), sampled
sizes are capped by what each job's tenant may hold, and after the market and
the polish the best distinct rows are repaired and improved by a local search
that never breaks a quota (:mod:`hetplace._smp_quota`; docs/model.md §3.14).
Without a binding quota none of it runs.

Steps 2-3 run in parallel over samples (Numba ``prange`` or Cython ``prange``);
each sample writes only its own output row and the choice is serial, so the
result is identical for any thread count and on every backend.
"""

import math
import time

import numpy as np

from . import _fork
from ._cost import aggregate, price, restarted
from ._rows import best_distinct_rows
from ._core._registry import BACKEND_CHOICES as BACKENDS  # re-exported: the backend= choices
from . import _interrupt
from ._validation import check_choice, check_positive_int, check_time_limit
from .errors import InvalidOptionError

__all__ = [
    "smp_place", "SMP_DEFAULTS", "BACKENDS", "centre_sizes", "fit_sizes", "worker_classes", "class_modes",
    "PARALLEL_MIN_WORK", "STOPPABLE_MIN_WORK", "available_threads", "thread_count",
]


#: Defaults of ``place(..., method="smp")``; docs/results.md §1 has the measurement behind them.
SMP_DEFAULTS = dict(
    samples=64,
    sampling="uniform",
    matching="price",
    polish=True,
    fairness_tol=0.0,
    max_rounds=8,
    polish_top=16,
    spread=None,
    speed_buckets=3,
    backend="auto",
    threads=None,
    restart_candidates=8,
    time_limit=None,
)

_MAX_POLISH_STEPS = 1_000_000

#: Above this K * S, a cluster with more distinct (type, speed) classes than
#: ``speed_buckets`` per type is searched on approximate speed buckets; see :func:`_run`.
BUCKET_MIN_SIZE = 16_384


#: Up to this many cells S (K + 1), SMP reads the dense ``Problem.size_cost`` (8 MiB at
#: most); above, ``Problem.size_cost_spec``, on which the polish is faster (docs/results.md §4).
DENSE_COST_CELLS = 2**20


def centre_sizes(problem, iterations=60):
    """Continuous target sizes (S,) for the weighted sampler (see the module docstring).

    Frank-Wolfe on the fractional relaxation over worker types:
    minimise ``sum_i w_i / X_i`` with ``X_i = sum_g y[i,g] rho[i,g] sbar_g``,
    ``y >= 0``, ``sum_i y[i,g] <= m_g`` (``sbar_g`` = mean available speed of
    type g).  Its linear oracle gives every type to the job of largest
    ``w_i rho[i,g] / X_i^2`` -- the market's linearised valuation -- so the
    centre already reflects comparative advantage between GPU types, which
    ``n_i ~ sqrt(w_i)`` ignores.  Returns ``n_i = sum_g y[i,g]`` (at least 1).
    """
    G = problem.n_types
    m = problem.type_counts.astype(float)
    sbar = np.array([problem.class_speed[problem.worker_type == g].mean() if m[g] > 0 else 0.0  # 0 when down
                     for g in range(G)])
    r = problem.throughput * sbar[None, :]
    allowed = (r > 0) & (m[None, :] > 0)
    # start: every type split evenly over the jobs that can use it
    y = np.where(allowed, m[None, :] / np.maximum(allowed.sum(axis=0), 1)[None, :], 0.0)
    w = problem.work
    for t in range(iterations):
        X = (y * r).sum(axis=1)
        grad = w[:, None] * r / (X * X)[:, None]
        grad[~allowed] = -1.0
        target = np.zeros_like(y)
        target[np.argmax(grad, axis=0), np.arange(G)] = m
        y += (2.0 / (t + 3.0)) * (target - y)  # never a full step: every job keeps X_i > 0
    return np.maximum(y.sum(axis=1), 1.0)


def fit_sizes(cats, max_workers, min_workers=None, n_workers=None, backend="auto"):
    """Categories made feasible for per-job size bounds.

    A job never takes more workers than ``max_workers`` (its batch's samples
    and the user's bound, :attr:`Problem.max_workers`) nor fewer than
    ``min_workers``.  Rows of ``cats`` (``(N, S)`` job sizes) are fixed in two
    deterministic steps **(ours)**:

    1. sizes above ``max_workers`` are clipped to it, and the clipped workers
       go to the jobs that still have room, in proportion to their sampled
       sizes (largest remainder, ties to the lower job index), so the sample
       still uses as many workers as it drew instead of leaving them idle;
    2. sizes below ``min_workers`` are raised to it, with the row's idle
       workers (``n_workers`` minus its total) first, then with workers taken
       from the jobs above their own minimum, largest excess first (their
       excesses are levelled down; ties leave the lower job index the larger
       one).  No size leaves ``[min_workers, max_workers]`` in this step.

    Rows within the bounds are returned unchanged.  Vectorised over rows.

    Parameters
    ----------
    cats : ndarray of int64, shape (N, S)
    max_workers : ndarray of int64, shape (S,)
    min_workers : ndarray of int64, shape (S,), optional
        Default: no lower bound beyond the sampled sizes.
    n_workers : int, optional
        Workers of the cluster (K); a row may use ``n_workers - row.sum()``
        idle workers in step 2.  Default: no idle workers.
    backend : str, optional
        The kernels of step 1 (``_core._market.fit_max``; every backend the same rows).

    Returns
    -------
    ndarray of int64, shape (N, S)
    """
    from ._core._registry import resolve

    out = resolve(check_choice("backend", backend, BACKENDS))[1].fit_max(
        np.asarray(cats, dtype=np.int64), np.ascontiguousarray(max_workers, dtype=np.int64))
    if min_workers is None:
        return out
    under = (out < min_workers).any(axis=1)
    if not under.any():
        return out
    out = out.copy()  # never the caller's array
    old = out[under]
    n = np.maximum(old, min_workers)
    deficit = n.sum(axis=1) - old.sum(axis=1)
    idle = np.maximum(n_workers - old.sum(axis=1), 0) if n_workers is not None else 0
    excess = n - min_workers  # what each job holds above its own minimum
    take = np.minimum(np.maximum(deficit - idle, 0), excess.sum(axis=1))
    # level L of each row: the largest with sum(max(excess - L, 0)) >= take (bisection, all rows at once)
    lo = np.zeros(n.shape[0], dtype=np.int64)
    hi = excess.max(axis=1) + 1
    while (hi - lo > 1).any():
        mid = (lo + hi) // 2
        ok = np.maximum(excess - mid[:, None], 0).sum(axis=1) >= take
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    cut = np.maximum(excess - lo[:, None], 0)
    cut[take == 0] = 0
    # the level overshoots by fewer than the jobs above it: give one back to each, lower job index first
    back = cut.sum(axis=1) - take
    above = cut > 0
    cut -= above & (np.cumsum(above, axis=1) <= back[:, None])
    out[under] = n - cut
    return out


def _bounded_centre(problem):
    """:func:`centre_sizes` moved inside the size bounds when the problem has some."""
    centre = centre_sizes(problem)
    if problem.bounded:
        centre = np.clip(centre, problem.min_workers, problem.max_workers)
    return centre


def _cython_available(warn=True):
    from ._core import _registry

    missing = _registry.unavailable("cython")
    if missing is not None and warn:
        from ._core import warn_missing_compiled

        warn_missing_compiled(*missing)
    return missing is None


def resolve_backend(backend):
    """``"auto"`` -> ``"cython"`` when its extensions are built, else ``"numba"`` (the registry's rule).

    Raises :class:`~hetplace.errors.BackendUnavailableError` for ``"cython"``
    when they are not.
    """
    from ._core import _registry

    return _registry.resolve(check_choice("backend", backend, BACKENDS))[0]


def _iv(problem, options):
    opts = dict(SMP_DEFAULTS)
    opts.update(options)
    opts["samples"] = check_positive_int("samples", opts["samples"], allow_none=False, maximum=10_000_000)
    opts["sampling"] = check_choice("sampling", opts["sampling"], ("weighted", "uniform"))
    opts["matching"] = check_choice("matching", opts["matching"], ("price", "ordinal"))
    if not isinstance(opts["polish"], (bool, np.bool_)):
        raise InvalidOptionError(f"polish must be True or False; got {opts['polish']!r}.")
    from ._validation import is_real_scalar

    tol = opts["fairness_tol"]  # any real (numpy floats too; not bool or complex), used as a float
    if not is_real_scalar(tol) or not (0 <= float(tol) < 1):
        raise InvalidOptionError(
            f"fairness_tol must be a number in [0, 1) (relative slack on mean JCT); got {tol!r}."
        )
    opts["fairness_tol"] = float(tol)
    opts["max_rounds"] = check_positive_int("max_rounds", opts["max_rounds"], allow_none=False, maximum=10_000)
    opts["polish_top"] = check_positive_int("polish_top", opts["polish_top"], maximum=10_000_000)
    opts["threads"] = check_positive_int("threads", opts["threads"], maximum=1024)
    opts["speed_buckets"] = check_positive_int("speed_buckets", opts["speed_buckets"], maximum=1_000_000)
    rc = opts["restart_candidates"]
    if isinstance(rc, (bool, np.bool_)) or not isinstance(rc, (int, np.integer)) or not 0 <= rc <= 1_000_000:
        raise InvalidOptionError(
            f"restart_candidates must be an integer in [0, 1000000] (running jobs tried as the only restart "
            f"of a re-placement; 0 tries none); got {rc!r}."
        )
    opts["restart_candidates"] = int(rc)
    opts["time_limit"] = check_time_limit(opts["time_limit"])
    opts["backend"] = resolve_backend(opts["backend"])
    return opts


def worker_classes(problem, buckets=None):
    """Group the workers into classes for the class-level market and polish.

    Parameters
    ----------
    problem : Problem
    buckets : int, optional
        None (default): exact classes, workers with identical throughput
        columns (same type and speed).  An int B: approximate classes, the
        workers of each type split into B buckets of (nearly) equal size by
        speed, each bucket valued at its members' mean throughput.

    Returns
    -------
    rhoC : float64 (S, C)    throughput of a worker of each class per job
    mc : int64 (C,)          workers per class
    class_of : int64 (K,)    class of every worker
    members : int64 (K,)     workers sorted by class; within a class ascending
                             index (exact) or fastest first, ties by index (buckets)
    cls_start : int64 (C+1,) class c is ``members[cls_start[c]:cls_start[c+1]]``

    Classes are ordered by type, then by speed (ascending for exact classes,
    descending for buckets).
    """
    t, sp = problem.worker_type, problem.class_speed  # 0 for a down worker: a class of its own
    K = t.size
    if buckets is None:
        members, cls_start, class_of = problem.worker_classes
        rhoC, mc = problem._class_table
        return rhoC, mc, class_of, members, cls_start
    bucket = np.empty(K, dtype=np.int64)
    for g in range(problem.n_types):
        ws = np.flatnonzero(t == g)
        fastest = ws[np.lexsort((ws, -sp[ws]))]
        bucket[fastest] = (np.arange(ws.size) * buckets) // max(ws.size, 1)
    members = np.lexsort((np.arange(K), -sp, bucket, t)).astype(np.int64)  # stable: ascending index
    key = t[members] * buckets + bucket[members]
    new = np.ones(K, dtype=bool)
    new[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(new)
    cls_start = np.append(starts, K).astype(np.int64)
    class_of = np.empty(K, dtype=np.int64)
    class_of[members] = np.cumsum(new) - 1
    # a bucket's value: the mean of rho[i, k] = throughput[i, g] * speed[k] over its members,
    # a few rows at a time (each row's mean is its own: no (S, members) temporary)
    S = problem.n_jobs
    rhoC = np.empty((S, cls_start.size - 1))
    for c, (a, b) in enumerate(zip(cls_start[:-1], cls_start[1:])):
        w = members[a:b]
        step = max(1, 2**22 // w.size)
        for i in range(0, S, step):
            rhoC[i:i + step, c] = problem._class_rates(w, slice(i, i + step)).mean(axis=1)
    return rhoC, np.diff(cls_start), class_of, members, cls_start


def class_modes(S, K, C, matching):
    """(market on classes, polish on classes) for S jobs, K workers in C classes.

    The class market's shortest-path searches run over the C classes instead
    of the S jobs, so it is used for the price form when ``C <= S``.  A class
    polish step costs O(S C^2) against O(R^2) for worker representatives
    (R <= min(K, (S+1) C) of them), so it is used when that is not larger.
    """
    market = matching == "price" and C <= S
    polish = (S + 1) * C * C <= min(K, (S + 1) * C) ** 2
    return market, polish


def _class_counts(problem, class_of, n_classes):
    """(S, C) int64: workers of each class the running placement gives each job."""
    cur = problem.current
    busy = cur >= 0
    out = np.zeros((problem.n_jobs, n_classes), dtype=np.int64)
    np.add.at(out, (cur[busy], class_of[busy]), 1)
    return out


def _run(problem, cats, opts, extra=None, cost=None, starts=None, deadline=math.inf):
    """Evaluate all categories on the chosen backend; returns (worker_job, total, stats, modes).

    Pass 1 (parallel): every category through the market.  Pass 2 (parallel):
    the ``polish_top`` best distinct market results (all when None) through the
    local search.  Rows not polished keep their market result.  Each pass runs
    on worker classes or on single workers as :func:`class_modes` decides.

    In a re-placement (``problem.replacing``, docs/model.md §3.11) every market
    row is re-expanded so that each job takes its own current workers of a
    class first (same JCT, every job whose counts equal its current ones
    kept), totals include the restart losses, the rows ``extra`` (keep
    candidates, (E, K)) join the market rows before the polish, and the polish
    prices restarts.

    ``cost`` replaces the communication table the kernels price sizes with
    (a (S, K + 1) table: a size-priced proxy of a topology, docs/model.md §3.13);
    None keeps the problem's own.  ``starts``, a list, receives a copy of the
    rows and totals before the polish (the quota search's extra starts,
    docs/model.md §3.14).
    """
    from ._core._registry import kernels

    S, K = problem.n_jobs, problem.n_workers
    N = cats.shape[0]
    rhoC, mc, class_of, members, cls_start = worker_classes(problem)
    C = mc.size
    G = int(np.count_nonzero(problem.type_counts))  # types present (np.unique would import numpy.ma: docs/results.md §2)
    approx = opts["speed_buckets"] is not None and K * S > BUCKET_MIN_SIZE and C > G * opts["speed_buckets"]
    replacing = problem.replacing
    if replacing:
        exact_classes = (class_of, members, cls_start)
    if approx:
        rhoC, mc, class_of, members, cls_start = worker_classes(problem, opts["speed_buckets"])
        C = mc.size
    market_cls, polish_cls = class_modes(S, K, C, opts["matching"])
    backend = opts["backend"]
    table = kernels(backend)
    form = table.FORM_PRICE if opts["matching"] == "price" else table.FORM_ORDINAL
    # the worker-level kernels take the dense (S, K) rates; on classes none is built
    rho = problem.worker_throughput if not (market_cls and polish_cls) else None
    # the kernels price sizes from size_cost_spec, (S, 3), or from the dense size_cost when it
    # is small: the same bits (_core._polish.job_cost), and a lookup is cheaper than a division
    if cost is None:
        cost = problem.size_cost if S * (K + 1) <= DENSE_COST_CELLS else problem.size_cost_spec
    if form == table.FORM_ORDINAL:
        job_order, order_len, worker_rank = table.ordinal_preferences(rho)
    else:
        job_order = np.zeros((1, 1), dtype=np.int64)
        order_len = np.zeros(1, dtype=np.int64)
        worker_rank = np.zeros((1, 1), dtype=np.float64)
    out_wj = np.full((N, K), -1, dtype=np.int64)
    out_total = np.full(N, math.inf)  # a sample the deadline skips stays inf
    out_stats = np.zeros((N, 3), dtype=np.int64)
    common = (rho, problem.work, cost, problem.worker_type, problem.class_speed,
              problem.uniform_speed)  # uniform_speed is False when a worker is down
    ccommon = (rhoC, problem.work, cost, mc)
    threads = thread_count(backend, opts["threads"], N * K * S)
    # long decisions run in a worker thread that Ctrl-C stops between batches of samples and
    # between polish steps (hetplace._interrupt); short ones inline
    work = N * K * S
    stop = _interrupt.new_stop() if work >= STOPPABLE_MIN_WORK or (
        math.isfinite(deadline) and work >= DEADLINE_MIN_WORK) else None

    def search(out_wj, out_total, out_stats):
        rows = None
        with _threads(backend, threads):
            if market_cls:
                table.run_samples_classes(*ccommon, members, cls_start, cats, opts["max_rounds"], out_wj, out_total,
                                          out_stats, threads, stop)
            else:
                table.run_samples(rho, problem.work, cost, cats, form, opts["max_rounds"], job_order,
                                  order_len, worker_rank, out_wj, out_total, out_stats, threads, stop)
            if replacing:
                pen, current = problem.restart_cost, problem.current
                eco, emem, est = exact_classes
                finite = np.flatnonzero(np.isfinite(out_total))  # an infeasible category's row stays inf
                sub = np.ascontiguousarray(out_wj[finite])
                out_total[finite] += table.keep_rows(eco, emem, est, current, pen,
                                                     _class_counts(problem, eco, est.size - 1), sub, threads)
                out_wj[finite] = sub
                if extra is not None and len(extra):
                    out_wj = np.concatenate([out_wj, extra])
                    out_total = np.concatenate([out_total, _true_totals(problem, extra)])
                    out_stats = np.concatenate([out_stats, np.zeros((len(extra), 3), dtype=np.int64)])
            if starts is not None:
                starts.append((out_wj.copy(), out_total.copy()))
            if opts["polish"]:
                rows = best_distinct_rows(out_wj, out_total, opts["polish_top"])
                if extra is not None and len(extra):  # the keep candidates are always polished
                    rows = np.concatenate([rows[rows < N], np.arange(N, N + len(extra))])
                    rows = rows[np.isfinite(out_total[rows])]
                if polish_cls:
                    polish_args = ccommon + (class_of, members, cls_start, rows, _MAX_POLISH_STEPS,
                                             out_wj, out_total, out_stats, threads)
                    if replacing:
                        polish_args += ((problem.restart_cost, problem.current, _class_counts(problem, class_of, C)),)
                else:
                    polish_args = common + (rows, _MAX_POLISH_STEPS, out_wj, out_total, out_stats, threads)
                    if replacing:
                        polish_args += ((problem.restart_cost, problem.current, None),)
                (table.polish_rows_classes if polish_cls else table.polish_rows)(*polish_args, stop=stop)
        return out_wj, out_total, out_stats, rows

    if stop is not None:
        out_wj, out_total, out_stats, rows = _interrupt.call(lambda: search(out_wj, out_total, out_stats), stop,
                                                             deadline=deadline)
    else:
        out_wj, out_total, out_stats, rows = search(out_wj, out_total, out_stats)
    if approx:
        # bucket values were approximate: score every row truly, and reorder the
        # workers inside each bucket of the polished rows (fastest to the job that
        # values a worker of that bucket most) while that lowers the true total
        out_total[:] = _true_totals(problem, out_wj)
        for s in (rows if opts["polish"] else ()):
            out_total[s] = _sort_buckets(problem, out_wj[s], members, cls_start, out_total[s])
    modes = dict(classes=int(C), market_on="classes" if market_cls else "workers",
                 polish_on="classes" if polish_cls else "workers", speed_buckets=opts["speed_buckets"] if approx else None,
                 threads=threads, time_limit_hit=bool(stop is not None and stop[0] == _interrupt.DEADLINE))
    return out_wj, out_total, out_stats, modes


def _true_totals(problem, out_wj):
    """True total JCT of every row of ``out_wj``, restart losses included (inf where a job has no worker)."""
    return price(problem, out_wj).total


def _sort_buckets(problem, wj, members, cls_start, total, rounds=3):
    """Reassign workers inside each speed bucket, in place; return the new true total.

    Keeps every job's count per bucket.  With ``a_i = work_i / X_i^2`` (the
    market's linearised value), the fastest workers of a bucket go to the jobs
    of largest ``a_i * rho[i, k]`` (rearrangement inequality: best for the
    linearised objective), idle slots to the slowest.  Repeated while the true
    total drops, at most ``rounds`` times.
    """
    for _ in range(rounds):
        X = aggregate(problem, wj)[0]
        a = problem.work / (X * X)
        new = wj.copy()
        if problem.replacing:  # a kept job keeps its very workers: they stay out of the reordering
            kept = problem.running & ~restarted(problem, wj)
        for lo, hi in zip(cls_start[:-1], cls_start[1:]):
            ws = members[lo:hi]  # fastest first
            if problem.replacing:
                ws = ws[~kept[np.maximum(wj[ws], 0)] | (wj[ws] < 0)]
                if ws.size == 0:  # every worker of the bucket is held by a kept job
                    continue
            held = wj[ws]
            j = np.maximum(held, 0)
            value = np.where(held >= 0, a[j] * problem._rate(j, ws[0]), -np.inf)
            new[ws] = held[np.lexsort((held, -value))]
        t = float(_true_totals(problem, new[None, :])[0])
        if not t < total:
            break
        wj[:] = new
        total = t
    return total


#: From this many ``samples * K * S`` a decision's kernels run in a worker thread that
#: Ctrl-C stops within one batch of samples or one polish step (:mod:`hetplace._interrupt`;
#: the kernels poll a stop flag): K = 1,024, S = 64 with 64 samples, tens of milliseconds.  Smaller
#: decisions (K = 64, S = 8 every round of a scheduler) run inline: a thread costs ~0.1 ms.
STOPPABLE_MIN_WORK = 2**22
#: With a ``time_limit``, from this many ``samples * K * S`` a search runs stoppable too; a smaller one
#: (a millisecond or two: the keep candidates' sub-searches of a scheduler's round) runs inline, its
#: thread costing more than it could overshoot the limit by.
DEADLINE_MIN_WORK = 2**20


#: Below this many ``samples * K * S``, a decision runs on one thread unless ``threads``
#: says otherwise: its parallel regions are too short to pay for waking threads, and
#: on a machine whose cores are busy they cost many times the serial decision.  At
#: K = 4096, S = 256 (2**26) and above, the cores pay off on an idle machine (measured in
#: docs/results.md §2; ``pytest benchmarks/bench_latency.py -s``).
PARALLEL_MIN_WORK = 2**26


def available_threads(backend):
    """Threads a decision may use by default on ``backend``.

    The CPUs this process may run on (its affinity mask), capped by the
    backend's own limit: OpenMP's current maximum for ``"cython"`` (so
    ``OMP_NUM_THREADS`` and threadpoolctl-style ``omp_set_num_threads`` limits
    are respected), Numba's thread count for ``"numba"`` (``NUMBA_NUM_THREADS``,
    ``numba.set_num_threads``) and ``OMP_NUM_THREADS``; 1 for ``"python"``,
    and 1 in a process forked after an OpenMP thread pool started (GNU
    OpenMP's pool does not survive ``fork``: docs/model.md §3.12).

    Raises
    ------
    InvalidOptionError
        ``backend`` is ``"cython"`` and its extensions are not built (the
        message of :func:`resolve_backend`, with the fix).
    """
    import os

    if backend == "python" or _fork.serial_only():
        return 1
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    if backend == "cython":
        from ._core import _registry

        _registry.kernels("cython")  # raises the registry's error when an extension is missing
        from ._core import _openmp

        return max(1, min(n, _openmp.max_threads()))
    import numba

    n = min(n, numba.get_num_threads())
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        n = min(n, int(first))
    return max(1, n)


def thread_count(backend, threads, work):
    """Threads of one decision: ``threads`` when given, else 1 below :data:`PARALLEL_MIN_WORK`
    units of ``work`` (``samples * K * S``) and :func:`available_threads` above.

    Always 1 in a process forked after an OpenMP thread pool started, whatever
    ``threads`` says: a parallel region there would never return (Cython) or
    be killed by Numba; the serial run decides the same placement
    (docs/model.md §3.12).
    """
    if _fork.serial_only():
        return 1
    if threads is not None:
        return threads
    if backend == "python" or work < PARALLEL_MIN_WORK:
        return 1
    return available_threads(backend)


class _threads:
    """Run Numba kernels with ``threads`` threads, restoring the caller's setting after.

    A region on more than one thread is recorded first (:func:`hetplace._fork.note_parallel`):
    a child forked from this process then runs its decisions serially.
    """

    def __init__(self, backend, threads):
        self.active = backend == "numba"
        self.threads = threads
        self.parallel = backend != "python" and threads > 1

    def __enter__(self):
        if self.parallel:
            _fork.note_parallel()
        if self.active:
            import numba

            self.before = numba.get_num_threads()
            numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))

    def __exit__(self, *exc):
        if self.active:
            import numba

            numba.set_num_threads(self.before)
        return False


def _choose(problem, out_wj, out_total, fairness_tol):
    """Index of the chosen sample (see module docstring, step 5)."""
    best = int(np.argmin(out_total))  # first minimum
    if fairness_tol <= 0:
        return best
    limit = out_total[best] * (1.0 + fairness_tol)
    cand = np.flatnonzero(out_total <= limit)
    alone = problem.jct_alone
    S = problem.n_jobs
    best_j, best_f = best, -1.0
    jct = price(problem, out_wj[cand]).jct
    for s, sl in zip(cand, jct):
        sl = sl / alone
        f = sl.sum() ** 2 / (S * np.square(sl).sum())
        if f > best_f:
            best_j, best_f = int(s), f
    return best_j


def _keep_sets(problem, limit):
    """Restart sets of the keep candidates: none, then each of ``limit`` running jobs alone.

    The jobs tried alone are the ones that can keep, cheapest restart first
    (ties to the lower index).
    """
    keepable = np.flatnonzero(problem.can_keep)
    order = keepable[np.argsort(problem.restart_cost[keepable], kind="stable")]
    return [()] + [(int(j),) for j in order[:limit]]


def _keep_candidate(problem, restart, opts, seed):
    """A placement keeping every running job outside ``restart`` on its current workers, or None.

    The jobs that keep take exactly their current workers; the other jobs (new
    ones, the jobs in ``restart`` and running ones that cannot keep) are placed
    by SMP on the workers left (a sub-problem without running jobs).  None
    when those workers cannot hold them.
    """
    from .errors import InvalidProblemError

    cur = problem.current
    keep = problem.can_keep.copy()
    keep[list(restart)] = False
    wj = np.where((cur >= 0) & keep[np.maximum(cur, 0)], cur, -1)
    jobs = np.flatnonzero(~keep)
    if jobs.size == 0:
        return wj
    free = np.flatnonzero((wj < 0) & problem.available)
    if free.size < jobs.size:
        return None
    try:
        if problem.has_quota:  # the sub-problem's quota: the room the kept jobs leave
            from ._quota import quota_room

            sub = problem._restrict(jobs, free, quota=quota_room(problem, wj).astype(np.float64))
        else:
            sub = problem._restrict(jobs, free)
    except InvalidProblemError:  # the left workers cannot give every job its minimum (or a usable type)
        return None
    sub_opts = {k: v for k, v in opts.items() if k != "restart_candidates"}
    sub_opts["samples"] = max(8, opts["samples"] // 4)
    sub_wj, _ = smp_place(sub, seed=seed, **sub_opts)
    busy = sub_wj >= 0
    wj[free[busy]] = jobs[sub_wj[busy]]
    return wj


def _keep_candidates(problem, opts, seed, deadline=math.inf):
    """(E, K) int64: the keep candidates of a re-placement (docs/model.md §3.11), and whether the
    deadline cut them short (their sub-searches share it: ``time_limit`` bounds the whole call)."""
    from .baselines import keep_greedy_placement

    rows = [keep_greedy_placement(problem)]  # so SMP never does worse than that baseline
    cut = False
    for t, restart in enumerate(_keep_sets(problem, opts["restart_candidates"])):
        sub = opts
        if math.isfinite(deadline):
            left = deadline - time.perf_counter()
            if left <= 0:
                cut = True
                break
            sub = dict(opts, time_limit=left)
        wj = _keep_candidate(problem, restart, sub, (seed * 0x9E3779B97F4A7C15 + t + 1) % (1 << 64))
        if wj is not None:
            rows.append(wj)
    return np.array(rows, dtype=np.int64).reshape(len(rows), problem.n_workers), cut


def _sampled_categories(problem, opts, seed):
    """Step 1 of the module docstring: ``opts["samples"]`` categories ((N, S) int64, C-contiguous),
    fitted to the size bounds (:func:`fit_sizes`, skipped when no job's bounds exclude a size)."""
    from .categories import sample_categories

    weighted = opts["sampling"] == "weighted"
    cats = sample_categories(
        problem.n_available, problem.n_jobs, opts["samples"], seed=seed, exact=False, method=opts["sampling"],
        centre=_bounded_centre(problem) if weighted else None,
        **({"spread": opts["spread"]} if opts["spread"] is not None and weighted else {}),
        backend=opts["backend"],
    )
    if problem.has_quota:  # a job's usable size within its tenant's quota (docs/model.md §3.14)
        cats = fit_sizes(cats, _quota_sizes(problem), problem.min_workers, problem.n_available, opts["backend"])
    elif problem._capped.size:
        cats = fit_sizes(cats, problem.max_workers, problem.min_workers, problem.n_available, opts["backend"])
    return np.ascontiguousarray(cats, dtype=np.int64)

def _quota_sizes(problem):
    """Each job's most workers within its tenant's quota (:func:`hetplace._smp_quota.quota_sizes`)."""
    from ._smp_quota import quota_sizes

    return quota_sizes(problem)


def _quota_finish(problem, out_wj, out_total, starts=(), limit=None):
    """The best rows repaired and descended within the quotas (:func:`hetplace._smp_quota.quota_finish`)."""
    from ._smp_quota import quota_finish

    return quota_finish(problem, out_wj, out_total, starts, limit)


def smp_place(problem, seed=None, **options):
    """Run SMP on a validated problem; returns ``(worker_job, info)``.

    Called by :func:`hetplace.place` with ``method="smp"``; options are
    documented there and in :data:`SMP_DEFAULTS`.
    """
    opts = _iv(problem, options)
    S = problem.n_jobs
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 64))
    if problem.topology is not None:
        import sys

        from ._smp_topology import topology_place

        return topology_place(problem, seed, opts, sys.modules[__name__])
    t0 = time.perf_counter()
    deadline = math.inf if opts["time_limit"] is None else t0 + opts["time_limit"]
    cats = _sampled_categories(problem, opts, seed)
    extra, keep_cut = _keep_candidates(problem, opts, seed, deadline) if problem.replacing else (None, False)
    t1 = time.perf_counter()
    with np.errstate(divide="ignore", invalid="ignore"):  # the python backend's numpy scalars, as IEEE (docs of _core._jit)
        starts = [] if problem.has_quota else None
        out_wj, out_total, out_stats, modes = _run(problem, cats, opts, extra, starts=starts, deadline=deadline)
    modes["time_limit_hit"] = modes["time_limit_hit"] or keep_cut
    quota_steps = None
    if problem.has_quota:
        out_wj, out_total, quota_steps = _quota_finish(problem, out_wj, out_total, starts)
    t2 = time.perf_counter()
    if not np.isfinite(out_total).any():
        # every sampled category was infeasible for the allowed pairs: fall back to greedy
        from .baselines import greedy_placement

        return greedy_placement(problem), dict(seed=seed, samples=int(cats.shape[0]), fallback="greedy",
                                               time_limit_hit=modes["time_limit_hit"])
    chosen = _choose(problem, out_wj, out_total, opts["fairness_tol"])
    info = dict(
        seed=seed,
        samples=int(cats.shape[0]),
        feasible_samples=int(np.isfinite(out_total).sum()),
        chosen_sample=chosen,
        category=np.bincount(out_wj[chosen][out_wj[chosen] >= 0], minlength=S).tolist()
        if chosen >= cats.shape[0] or problem.has_quota else cats[chosen].tolist(),
        keep_candidates=0 if extra is None else int(len(extra)),
        market_rounds=int(out_stats[:, 0].sum()),
        bids=int(out_stats[:, 1].sum()),
        polish_steps=int(out_stats[:, 2].sum()),
        backend=opts["backend"],
        sampling=opts["sampling"],
        matching=opts["matching"],
        polish=bool(opts["polish"]),
        **modes,
        sample_time=t1 - t0,
        market_time=t2 - t1,
    )
    if quota_steps is not None:
        info["quota_steps"] = int(quota_steps)
    return out_wj[chosen].copy(), info
