"""SMP on a cluster with a network topology (docs/model.md §3.13).

With ``problem.topology`` set, a job's communication depends on which
workers it has, not only on how many (docs/model.md §1.6), so the market and
the polish of :mod:`hetplace.smp`, which price sizes, cannot see it.  One
decision here:

1. **Size-priced proxies.**  The sampled categories are split in two halves,
   each run through the flat machinery (:func:`hetplace.smp._run`: market,
   then polish) with its own size table: the flat model at the top-level
   bandwidth (every job priced as if it spanned racks: pessimistic), and the
   optimistic table ``volume_i * floor_scale[n]`` (a job of ``n`` workers
   priced at the best bandwidth of a domain that can hold ``n`` workers: a
   size that fits in a node at node bandwidth).  Each gives placements whose
   type counts are good for one end of the spread.
2. **Packing.**  Each job's type counts become concrete workers
   (:func:`pack`): largest jobs first, a job that fits in one node of its
   type goes to the best-fitting node (fewest free workers left), a larger
   one takes whole nodes in one rack when a rack can hold it (the fullest
   nodes first, the last one best-fitting).  Kept jobs of a re-placement keep
   their very workers.
3. **Exact local search.**  The best packed candidates are improved by the
   descent of :mod:`hetplace._core._topo` (moves, swaps, and consolidations
   that take a spread job into one node or rack), priced by the topology
   exactly.
4. **Choice.**  The candidate of lowest true total (restart losses included;
   the fairness rule of :func:`hetplace.smp._choose` when asked) wins.

Above :data:`SEARCH_MAX_CELLS` the exact search is skipped: the packed
proxies are priced and the best is taken (K = 100,000 GPUs, 5,000 jobs in
seconds).  Every step is deterministic in the seed and independent of the
thread count.  Private: called by :func:`hetplace.smp.smp_place`.
"""

import time

import numpy as np

from ._cost import price, restarted
from . import _interrupt

__all__ = ["topology_place", "pack", "optimistic_table", "SEARCH_MAX_CELLS", "SEARCH_ROWS"]

#: The exact local search runs when ``K * (K + S)`` (one pass over moves and swaps) is at most this.
SEARCH_MAX_CELLS = 2**22

#: Packed candidates the exact local search improves (the best by true total, distinct).
SEARCH_ROWS = 6

#: Steps of one exact descent at most (each lowers the total; a safety cap).
_MAX_STEPS = 100_000


def optimistic_table(problem):
    """(S, K + 1): ``volume_i * floor_scale[n]``, +inf outside each job's size bounds.

    A lower bound of each job's communication on any ``n`` workers
    (:meth:`hetplace._cost.HierarchicalRing.floor`): the size-priced proxy of
    a cluster where every job lands in the best domain that can hold it.
    """
    model = problem.comm_model
    K = problem.n_workers
    table = np.ascontiguousarray(model.volume[:, None] * model.floor_scale[None, :])
    n = np.arange(K + 1)[None, :]
    lo, hi = problem.min_workers[:, None], problem.max_workers[:, None]
    table[((n > 0) & (n < lo)) | (n > hi)] = np.inf
    return table


def _workers_by_slot(problem, free):
    """Free workers ordered by (node, type, speed descending, index); slot (node, type) starts."""
    topo = problem.topology
    G = problem.n_types
    ks = np.flatnonzero(free)
    order = ks[np.lexsort((ks, -problem.class_speed[ks], problem.worker_type[ks], topo.node[ks]))]
    slot = topo.node[order] * G + problem.worker_type[order]
    start = np.searchsorted(slot, np.arange(topo.n_nodes * G + 1))
    return order, start


def pack(problem, worker_job):
    """Concrete workers for the type counts of ``worker_job`` ((K,) int64), topology-aware.

    Kept jobs of a re-placement (running, not restarted in ``worker_job``)
    keep their workers.  Every other job gets, for each type, as many workers
    of that type as it has in ``worker_job``: largest jobs first (ties to the
    lower index); one node when a node of that type has enough free workers
    (the one with fewest, ties to the higher bandwidth, then the lower index),
    else whole nodes inside the rack of fewest sufficient free workers when
    one can hold them (else over the cluster): the fullest free nodes first,
    the last one best-fitting.  Within a node the fastest free workers go
    first.  Returns the new (K,) assignment (same type counts per job).
    """
    topo = problem.topology
    S, K, G = problem.n_jobs, problem.n_workers, problem.n_types
    N = topo.n_nodes
    out = np.full(K, -1, dtype=np.int64)
    todo = np.ones(S, dtype=bool)
    if problem.replacing:
        kept = problem.running & ~restarted(problem, worker_job)
        held = (worker_job >= 0) & kept[np.maximum(worker_job, 0)]
        out[held] = worker_job[held]
        todo &= ~kept
    busy = (worker_job >= 0) & todo[np.maximum(worker_job, 0)]
    need = np.zeros((S, G), dtype=np.int64)
    np.add.at(need, (worker_job[busy], problem.worker_type[busy]), 1)
    free = problem.available & (out < 0)
    order, start = _workers_by_slot(problem, free)
    left = np.diff(start).reshape(N, G)  # free workers per (node, type)
    taken = np.zeros((N, G), dtype=np.int64)
    rack = topo.node_rack
    has_rack = topo.rack is not None
    R = int(rack.max()) + 1 if N else 0
    bw = topo.node_bandwidth
    sizes = need.sum(axis=1)
    for i in np.lexsort((np.arange(S), -sizes)):
        if not todo[i] or sizes[i] == 0:
            continue
        for g in np.flatnonzero(need[i]):
            c = int(need[i, g])
            f = left[:, g]
            fits = np.flatnonzero(f >= c)
            if fits.size:
                nodes = [int(fits[np.lexsort((fits, -bw[fits], f[fits]))[0]])]
                counts = [c]
            else:
                pool = np.flatnonzero(f > 0)
                if has_rack:
                    fr = np.bincount(rack[pool], weights=f[pool], minlength=R)
                    ok = np.flatnonzero(fr >= c)
                    if ok.size:
                        q = ok[np.lexsort((ok, fr[ok]))[0]]
                        pool = pool[rack[pool] == q]
                nodes, counts = _fill(pool, f, c)
            for v, m in zip(nodes, counts):
                a = start[v * G + g] + taken[v, g]
                out[order[a:a + m]] = i
                taken[v, g] += m
                left[v, g] -= m
    return out


def _fill(pool, f, c):
    """Nodes of ``pool`` (free counts ``f``) that give ``c`` workers: fullest first, the last best-fitting."""
    nodes, counts = [], []
    pool = pool[np.lexsort((pool, -f[pool]))]  # fullest first, ties to the lower index
    used = np.zeros(pool.size, dtype=bool)
    rest = c
    for t in range(pool.size):
        if rest <= 0:
            break
        if used[t]:
            continue
        fit = np.flatnonzero(~used & (f[pool] >= rest))
        if fit.size:  # the smallest node that finishes the job
            u = fit[np.lexsort((pool[fit], f[pool[fit]]))[0]]
            nodes.append(int(pool[u]))
            counts.append(rest)
            rest = 0
            break
        used[t] = True
        m = int(min(f[pool[t]], rest))
        nodes.append(int(pool[t]))
        counts.append(m)
        rest -= m
    return nodes, counts


def _distinct(rows):
    """Indices of the distinct rows of ``rows`` (first occurrence, in order)."""
    seen, keep = set(), []
    for r, row in enumerate(rows):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(r)
    return np.array(keep, dtype=np.int64)


def _search(problem, rows, opts, threads, stop):
    """Improve ``rows`` ((R, K) int64, feasible) in place by the exact descent; return their totals."""
    from ._core._registry import kernels
    from .smp import _threads

    topo = problem.topology
    model = problem.comm_model
    jp = np.stack([problem.work, model.volume, problem.restart_cost], axis=1)
    ji = np.stack([problem.min_workers, problem.max_workers, problem.running.astype(np.int64)], axis=1)
    table = kernels(opts["backend"])
    with _threads(opts["backend"], threads):
        total, steps = table.topo_polish_rows(
            problem.worker_throughput, jp, ji, topo.node, topo.node_rack, topo.node_bandwidth,
            topo.rack_bandwidth, topo.bandwidth, topo.rack is not None, problem.current,
            problem.available.astype(np.uint8), problem.worker_classes[2], problem.replacing, rows, _MAX_STEPS,
            compound=True, threads=threads, stop=stop,
        )
    return total, steps


def topology_place(problem, seed, opts):
    """SMP with a topology: ``(worker_job, info)`` (see the module docstring); ``opts`` validated by ``smp._iv``."""
    from .categories import sample_categories
    from .smp import (DENSE_COST_CELLS, STOPPABLE_MIN_WORK, _bounded_centre, _choose, _keep_candidates, _run,
                      fit_sizes, thread_count)

    S, K = problem.n_jobs, problem.n_workers
    t0 = time.perf_counter()
    weighted = opts["sampling"] == "weighted"
    cats = sample_categories(
        problem.n_available, S, opts["samples"], seed=seed, exact=False, method=opts["sampling"],
        centre=_bounded_centre(problem) if weighted else None,
        **({"spread": opts["spread"]} if opts["spread"] is not None and weighted else {}),
        backend=opts["backend"],
    )
    cats = np.ascontiguousarray(
        fit_sizes(cats, problem.max_workers, problem.min_workers, problem.n_available), dtype=np.int64
    )
    extra = _keep_candidates(problem, opts, seed) if problem.replacing else None
    t1 = time.perf_counter()
    # 1. the flat machinery on two size-priced proxies (the second only when its dense table is small)
    dense = S * (K + 1) <= DENSE_COST_CELLS
    halves = [(cats, None)]
    if dense and len(cats) > 1:
        halves = [(np.ascontiguousarray(cats[0::2]), None),
                  (np.ascontiguousarray(cats[1::2]), optimistic_table(problem))]
    rows = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for part, cost in halves:
            out_wj, out_total, _, modes = _run(problem, part, opts, extra, cost=cost)
            finite = np.isfinite(out_total)
            rows.append(out_wj[finite][np.argsort(out_total[finite], kind="stable")])
    t2 = time.perf_counter()
    cand = np.concatenate(rows) if rows else np.zeros((0, K), dtype=np.int64)
    if not len(cand):
        from .baselines import greedy_placement

        return greedy_placement(problem), dict(seed=seed, samples=int(cats.shape[0]), fallback="greedy")
    # 2. pack the best distinct proxy results of each half (interleaved: the best of each first)
    per = max(1, opts["polish_top"] or len(cand))
    picks = []
    for r in rows:
        r = r[_distinct(r)][:per]
        picks.append(r)
    width = max(len(r) for r in picks)
    ordered = [r[t] for t in range(width) for r in picks if t < len(r)]
    packed = np.array([pack(problem, wj) for wj in ordered], dtype=np.int64).reshape(-1, K)
    packed = np.concatenate([packed, np.array(ordered, dtype=np.int64).reshape(-1, K)])
    packed = packed[_distinct(packed)]
    total = price(problem, packed).total
    t3 = time.perf_counter()
    steps = 0
    searched = 0
    if K * (K + S) <= SEARCH_MAX_CELLS:
        # 3. the exact descent on the best packed candidates
        best = np.argsort(total, kind="stable")[:SEARCH_ROWS]
        best = best[np.isfinite(total[best])]
        sub = np.ascontiguousarray(packed[best])
        threads = thread_count(opts["backend"], opts["threads"], len(best) * K * K)
        stop = _interrupt.new_stop() if len(best) * K * K >= STOPPABLE_MIN_WORK else None
        if stop is not None:
            _interrupt.call(lambda: _search(problem, sub, opts, threads, stop), stop)
        else:
            _search(problem, sub, opts, threads, stop)
        searched = len(best)
        packed[best] = sub
        total[best] = price(problem, sub).total
    t4 = time.perf_counter()
    chosen = _choose(problem, packed, total, opts["fairness_tol"])
    wj = packed[chosen].copy()
    info = dict(
        seed=seed, samples=int(cats.shape[0]), feasible_samples=int(len(cand)), chosen_sample=int(chosen),
        category=np.bincount(wj[wj >= 0], minlength=S).tolist(),
        keep_candidates=0 if extra is None else int(len(extra)), candidates=int(len(packed)),
        searched=int(searched), backend=opts["backend"], sampling=opts["sampling"], matching=opts["matching"],
        polish=bool(opts["polish"]), topology=True, **modes,
        sample_time=t1 - t0, market_time=t2 - t1, pack_time=t3 - t2, search_time=t4 - t3,
    )
    return wj, info
