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
   **Node DP** (:func:`dp_candidates`, up to :data:`SEARCH_FULL_K` workers
   and while :data:`DP_MAX_WORK` allows): the exact optimum of a space where
   every job is on one node (nodes shared) or on a run of consecutive whole
   nodes plus part of the next, in a line order of the nodes, by dynamic
   programming over the nodes and the subsets of jobs.
3. **Exact local search.**  The best packed candidates are improved by the
   descent of :mod:`hetplace._core._topo` (moves, swaps, and consolidations
   that take a spread job into one node or rack), priced by the topology
   exactly; with the node DP's candidates among them, half the candidates
   and half the kicks (:func:`search_budget`).
4. **Choice.**  The candidate of lowest true total (restart losses included;
   the fairness rule of :func:`hetplace.smp._choose` when asked) wins.

Above :data:`SEARCH_MAX_CELLS` (a large cluster) the exact search is
skipped: the pessimistic proxy runs on half of the samples, its
:data:`LARGE_PACKED` best results are packed and priced, and the best is
taken (K = 100,000 GPUs, 5,000 jobs in seconds).  Every step is deterministic in the seed and independent of the
thread count.  Private: called by :func:`hetplace.smp.smp_place`.
"""

import math
import time

import numpy as np

from ._cost import price, restarted
from . import _interrupt

__all__ = ["topology_place", "pack", "node_candidate", "domain_candidate", "dp_candidates", "DP_MAX_WORK", "DP_SEARCH_SHARE", "sweep_kicks", "DOMAIN_MAX", "DOMAIN_TRIES", "optimistic_table", "search_budget", "SEARCH_MAX_CELLS", "SEARCH_FULL_K",
           "SEARCH_ROWS", "KICKS", "MAX_KICKS", "SLACK", "PATIENCE", "GREEDY_MAX_CELLS",
           "LARGE_PACKED"]

#: The exact local search runs when ``K * (K + S)`` (one pass over moves and swaps) is at most this
#: (K up to about 350): its cost grows about as K**3 per candidate (1 ms at K = 64, 0.13 s at
#: K = 256, 12 s at K = 1,024 on one core), so above it the proxies' results are packed only.
SEARCH_MAX_CELLS = 2**17

#: Size up to which :data:`SEARCH_ROWS` candidates get :data:`KICKS` kicks each; above it both
#: shrink (:func:`search_budget`) so that the search costs about what it costs at this size.
SEARCH_FULL_K = 64

#: Packed candidates the exact local search improves (the best by true total, distinct), up to
#: :data:`SEARCH_FULL_K` workers.  16 rather than 4: on 85 seeded instances (K = 16-64, S = 2-12)
#: against the topology MILP's optimum, 4 left two at 4.2 % and 6.9 %, 16 none above 1.3 %.
SEARCH_ROWS = 16

#: Above :data:`SEARCH_MAX_CELLS`: proxy results packed and priced (the best wins).
LARGE_PACKED = 2

#: Without the search (above :data:`SEARCH_MAX_CELLS`), the topology-aware greedy placement
#: (:func:`hetplace.baselines.greedy_placement`) is a candidate too while ``K * S`` is at most this
#: (about 1 s at K = 8,192, S = 512): packing the proxies' type counts alone placed 1.3-2x worse than it
#: at K = 512-2,048.
GREEDY_MAX_CELLS = 2**22

#: Kicks of the iterated local search on each searched candidate (docs/model.md §3.13).
KICKS = 64

#: Most kicks per searched candidate (below :data:`SEARCH_FULL_K` workers, :func:`search_budget`).
#: 256: a held-out instance (K = 24, S = 11 on six nodes) stayed 1.97 % above the optimum with
#: 64 and 128 kicks, and reached it with 256.
MAX_KICKS = 256

#: With the node DP's candidates (:func:`dp_candidates`), the search's rows and kicks are divided by
#: this: on 432 instances with proven optima (K = 16-64, S = 2-12), 8 rows of half the kicks and the DP
#: came to mean 0.007 %, worst 0.715 % (the full search without it: 0.005 %, 0.553 %) at 0.56-0.62x its
#: time at K = 64, S = 8 (docs/model.md §3.13).
DP_SEARCH_SHARE = 2

#: A kick's result within this fraction of the best becomes the walk's next start.
SLACK = 0.01

#: A searched candidate's kicks stop after this many in a row that did not lower its best
#: (None, the default: all :data:`KICKS`).  16 made a K = 64 decision about 1.6x faster at a small cost
#: offline (mean gap to the MILP's optimum 0.015 % against 0.000 % on 103 instances, worst 0.509 %
#: against 0.008 %), but online, where above K = 64 only a few candidates are searched and the kicks
#: are what diversifies, the topology run near saturation (docs/online.md §8.1) took 17.0 h against
#: 12.1 h.
PATIENCE = None

#: Steps of one exact descent at most (each lowers the total; a safety cap).
_MAX_STEPS = 100_000


def search_budget(n_workers, dp=False):
    """``(rows, kicks)`` of the exact search on ``n_workers`` workers.

    :data:`SEARCH_ROWS` rows up to :data:`SEARCH_FULL_K`, with :data:`KICKS`
    kicks at :data:`SEARCH_FULL_K` and more below it, as ``(SEARCH_FULL_K /
    K)**1.5`` (at most :data:`MAX_KICKS`): a kick's descent costs between
    ``K`` and ``K**2``, so a smaller cluster gets about as many of them as
    the search's time at :data:`SEARCH_FULL_K` pays for (measured: K = 16-48
    decisions take 0.4-0.9x the K = 64 one).  Above, rows shrink as
    ``(SEARCH_FULL_K / K)**3`` (at least 1) and kicks as ``SEARCH_FULL_K / K``
    (at least 8), so a decision's search stays within a small multiple of
    its cost at :data:`SEARCH_FULL_K`.  ``dp``: the node DP's candidates are
    among those searched (:func:`dp_candidates`, up to :data:`SEARCH_FULL_K`):
    rows and kicks are divided by :data:`DP_SEARCH_SHARE`.
    """
    if n_workers <= SEARCH_FULL_K:
        f = SEARCH_FULL_K / max(n_workers, 1)
        rows, kicks = SEARCH_ROWS, min(MAX_KICKS, int(KICKS * f ** 1.5))
        return (rows // DP_SEARCH_SHARE, kicks // DP_SEARCH_SHARE) if dp else (rows, kicks)
    f = SEARCH_FULL_K / n_workers
    return max(1, int(SEARCH_ROWS * f ** 3)), max(8, int(KICKS * f))


def sweep_kicks(problem):
    """Every kick of :func:`hetplace._core._topo.topo_ils` once, job by job: ((T, 3) int64).

    For each job: relocate into each node, take each node and release the
    rest, take each node and hand the rest over, exchange with each other
    job (the kernel's encoding: ``(job, kind, domain)``).  The final sweep of
    the search (docs/model.md §3.13): a two-step improvement whose first step
    costs (a job moving to a smaller node so that another can grow into the
    one it left) is found whatever the random kicks drew.
    """
    S, N = problem.n_jobs, len(problem.topology.node_bandwidth)
    out = []
    for i in range(S):
        out += [(i, kind, d) for kind in (0, 1, 2) for d in range(N)]
        out += [(i, 3, d) for d in range(S - 1)]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


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


def pack(problem, rows, backend="auto", threads=1):
    """Concrete workers for the type counts of each row of ``rows`` ((R, K) int64), topology-aware.

    Kept jobs of a re-placement (running, not restarted in the row) keep
    their workers.  Every other job gets, for each type, as many workers of
    that type as it has in the row: largest jobs first (ties to the lower
    index); one node when a node has enough free workers of that type (the
    one with fewest, ties to the higher bandwidth, then the lower index), else
    whole nodes inside the rack of fewest sufficient free workers of that
    type when one can hold them (else over the cluster): the node that
    finishes the job when one can (the smallest), else the fullest.  Within a
    node the fastest free workers go first.  Returns (R, K) int64 with the
    same type counts per job as ``rows``.  The kernel is
    :func:`hetplace._core._topo.pack_kernel`.
    """
    from ._core._registry import resolve

    topo = problem.topology
    rows = np.ascontiguousarray(np.atleast_2d(rows), dtype=np.int64)
    kept = (problem.running & ~restarted(problem, rows)) if problem.replacing else \
        np.zeros((len(rows), problem.n_jobs), dtype=bool)
    return resolve(backend)[1].topo_pack_rows(
        rows, problem.worker_type, problem.n_types, topo.node, topo.node_rack, topo.node_bandwidth,
        topo.rack is not None, problem.available, problem.class_speed, kept.astype(np.uint8), threads)


def _node_costs(problem):
    """Every job on every node alone: ``(cost (S, N), n (S, N), X (S, N), picks)``.

    Job ``i`` on node ``v`` takes the node's fastest workers it can run on, as
    many as its ``max_workers`` allows (``n[i, v]`` of them, summed rate
    ``X[i, v]``), and costs its time there (its ring at the node's bandwidth;
    ``+inf`` where it has no worker or is below its ``min_workers``).
    ``picks[i]`` is ``(workers, their nodes)`` of job ``i`` on every node.
    """
    from ._cost import comm_cost_at, job_time

    topo = problem.topology
    S, K, N = problem.n_jobs, problem.n_workers, len(topo.node_bandwidth)
    rho, ks = problem.worker_throughput, np.arange(K)
    n = np.zeros((S, N), dtype=np.int64)
    X = np.zeros((S, N))
    picks = []
    for i in range(S):
        o = np.lexsort((ks, -rho[i], topo.node))  # node by node, the fastest first
        nd, sp = topo.node[o], rho[i, o]
        ok = sp > 0
        c = np.cumsum(ok)
        first = np.searchsorted(nd, nd)  # the first position of each worker's node
        take = ok & (c - 1 - (c - ok)[first] < problem.max_workers[i])  # its usable rank in the node
        n[i] = np.bincount(nd[take], minlength=N)
        X[i] = np.bincount(nd[take], weights=sp[take], minlength=N)
        picks.append((o[take], nd[take]))
    jobs = np.broadcast_to(np.arange(S)[:, None], (S, N))
    b = np.broadcast_to(topo.node_bandwidth, (S, N))
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(n > 0, job_time(problem, jobs, X, n, comm=comm_cost_at(problem, jobs, n, b)), np.inf)
    return cost, n, X, picks


def _assign(cost, backend):
    """Jobs (rows) to distinct columns minimising the summed ``cost`` (finite entries only), exactly.

    ``(total, column of each row)``, or ``(inf, None)`` when no such assignment
    exists.  The price form of :func:`hetplace.matching.deferred_acceptance`
    (one slot per job) on the values ``-cost``, called on its kernel: the
    callers (:func:`node_candidate`, :func:`domain_candidate`) build valid
    inputs.
    """
    from ._core._registry import resolve

    A, M = cost.shape
    if A == 0:
        return 0.0, np.zeros(0, dtype=np.int64)
    finite = np.isfinite(cost)
    if M < A or not finite.any(axis=1).all():
        return math.inf, None
    mod = resolve(backend)[1]
    nf, ni = mod.auction_workspace_size(A, M)
    wj = np.empty(M, dtype=np.int64)
    status = mod.auction_kernel(np.ascontiguousarray(np.where(finite, -cost, np.nan).T), np.ones(A), -math.inf,
                                np.ones(A, dtype=np.int64), wj, np.empty(A + 1), np.zeros(2, dtype=np.int64),
                                np.empty(max(nf, 1)), np.empty(max(ni, 1), dtype=np.int64))
    col = np.full(A, -1, dtype=np.int64)
    busy = np.flatnonzero(wj >= 0)
    col[wj[busy]] = busy
    if status != 0 or (col < 0).any():
        return math.inf, None
    return float(cost[np.arange(A), col].sum()), col


def node_candidate(problem, backend="auto"):
    """One job per node, the best such placement: an assignment ((K,) int64), or None.

    Job ``i`` on node ``v`` takes the node's fastest workers it can run on,
    as many as its ``max_workers`` allows, and costs its time there (its ring
    at the node's bandwidth); the jobs are matched to distinct nodes to
    minimise the sum of these times, exactly (the price form of
    :func:`hetplace.matching.deferred_acceptance`).  None when there are more
    jobs than nodes or some job fits in no node.  A candidate the proxies
    miss: they size jobs as if any mix of sizes packed into nodes, and a
    cluster of few large nodes beside many small ones makes them spread the
    largest job over many nodes where the optimum gives each job one node
    and leaves workers idle.  ``backend`` runs the matching (SMP's).
    """
    return domain_candidate(problem, backend, multi=False)


#: Most multi-node domains :func:`domain_candidate` prices (pairs of nodes first, then larger sets).
DOMAIN_MAX = 512

#: Multi-node domains :func:`domain_candidate` tries exactly per round (the most promising first).
DOMAIN_TRIES = 16


def _domains(topo):
    """Multi-node domains: tuples of node ids, each inside one rack (or any two nodes without racks).

    Every pair of nodes of a rack, then every run of three or more
    consecutive nodes of a rack (in node id order; the whole rack is one);
    without racks, every pair of nodes.  At most :data:`DOMAIN_MAX`: pairs
    first, those of nearest node ids first.  Runs rather than every subset:
    generators and cluster files number a rack's nodes type by type, so a
    run is mostly nodes of one type (a held-out instance, K = 64, wanted a
    job on six of a rack's seven nodes: 1.4 % above the optimum with pairs
    and whole racks only, 0 % with runs).
    """
    import itertools

    N = len(topo.node_bandwidth)
    if topo.rack is None:
        groups = [list(range(N))]
    else:
        groups = [np.flatnonzero(topo.node_rack == q).tolist() for q in range(len(topo.rack_bandwidth))]
    # pairs of nearest node ids first (generators and cluster files number nodes type by type,
    # often rack by rack): every node is in some pair before the cap, whatever the cluster's size
    out = sorted((pair for g in groups for pair in itertools.combinations(g, 2)),
                 key=lambda uv: (uv[1] - uv[0], uv[0]))
    if topo.rack is not None:  # runs of three or more consecutive nodes of a rack, the whole rack included
        out += [tuple(g[a:b]) for g in groups for a in range(len(g)) for b in range(a + 3, len(g) + 1)]
    return out[:DOMAIN_MAX]


def _at_most(X, n, cap):
    """``(X, n)`` of a job given ``n`` workers of summed rate ``X`` that may use ``cap`` of them at most:
    beyond ``cap`` priced at their mean rate (exact when they are alike)."""
    return np.where(n > cap, X * (cap / np.maximum(n, 1)), X), np.minimum(n, cap)


def _domain_costs(problem, doms, n1, X1):
    """Every job alone on every multi-node domain: ``(cost (S, D), member (D, N) bool)``.

    From :func:`_node_costs`'s per-node sizes ``n1`` and rates ``X1``: job ``i``
    on domain ``d`` takes all of its usable workers there, at most
    ``max_workers[i]`` (then priced at their mean rate: exact when the
    domain's workers are alike), with its ring at the rack's bandwidth (the
    top level's without racks); ``+inf`` where they would not span two nodes
    (a single node does as well) or break its size bounds.
    """
    from ._cost import comm_cost_at, job_time

    topo = problem.topology
    S, N, D = n1.shape[0], n1.shape[1], len(doms)
    member = np.zeros((D, N), dtype=bool)
    for d, nodes in enumerate(doms):
        member[d, list(nodes)] = True
    n = n1 @ member.T.astype(np.int64)
    X = X1 @ member.T.astype(np.float64)
    spread = (n1 > 0).astype(np.int64) @ member.T.astype(np.int64) >= 2  # usable workers on two nodes or more
    bw = np.array([topo.rack_bandwidth[topo.node_rack[nodes[0]]] if topo.rack is not None else topo.bandwidth
                   for nodes in doms])
    cap = problem.max_workers[:, None]
    over = n > cap
    X, n = _at_most(X, n, cap)
    largest = np.where(member[None, :, :], n1[:, None, :], 0).max(axis=2)
    spread &= ~over | (cap > largest)
    jobs = np.broadcast_to(np.arange(S)[:, None], (S, D))
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(spread, job_time(problem, jobs, X, n, comm=comm_cost_at(
            problem, jobs, n, np.broadcast_to(bw, (S, D)))), np.inf)
    return cost, member


def domain_candidate(problem, backend="auto", multi=True):
    """Each job on its own node or its own set of nodes of one rack: an assignment ((K,) int64), or None.

    Starts from :func:`node_candidate`'s exact matching of jobs to single
    nodes, then, round by round, gives one more job a multi-node domain
    (:func:`_domains`: two nodes of a rack, or a run of consecutive nodes of
    a rack; any two nodes without racks), the others matched again exactly to the single nodes
    left: of the :data:`DOMAIN_TRIES` (job, domain) pairs that lower that
    job's own time most, the one that lowers the total most is kept, until
    none does.  A job on a domain takes all of its workers it can run on
    (its fastest, at most ``max_workers``) and pays its ring at the rack's
    bandwidth (at ``bandwidth`` without racks).  The optimum of a cluster
    of racks often gives the largest jobs two nodes of a rack and the
    others a node each: single-worker moves cannot get there from the
    proxies' placements (held-out seed 6140, K = 64: 5.2 % above the
    optimum without it, 0.2 % with).  None when there are more jobs than
    nodes or some job fits in no node.  ``multi=False``: the single-node
    matching only.  Deterministic (ties to the lower index).
    """
    topo = problem.topology
    S, K, N = problem.n_jobs, problem.n_workers, len(topo.node_bandwidth)
    if S > N:
        return None
    cost1, n1, X1, picks = _node_costs(problem)
    total, col = _assign(cost1, backend)
    if col is None:
        return None
    domain = [(int(v),) for v in col]  # each job's nodes
    if multi:
        doms = _domains(topo)
        D = len(doms)
        if D:
            cost, member = _domain_costs(problem, doms, n1, X1)
            own = cost1[np.arange(S), col].copy()  # each job's time where it is
            fixed = np.zeros(S, dtype=bool)
            used = np.zeros(N, dtype=bool)  # nodes of the fixed jobs
            fixed_total = 0.0
            for _ in range(S):
                gain = cost - own[:, None]
                gain[fixed] = np.inf
                gain[:, member[:, used].any(axis=1)] = np.inf
                order = np.argsort(gain, axis=None, kind="stable")[:DOMAIN_TRIES]
                best = (total * (1.0 - 1e-12), None)
                for flat_ix in order:
                    i, d = divmod(int(flat_ix), D)
                    if not gain[i, d] < 0:
                        break
                    rest = np.flatnonzero(~fixed & (np.arange(S) != i))
                    free = np.flatnonzero(~used & ~member[d])
                    t, c = _assign(cost1[np.ix_(rest, free)], backend)
                    t = fixed_total + cost[i, d] + t
                    if t < best[0]:
                        best = (t, (i, d, rest, free[c] if c is not None else None))
                if best[1] is None:
                    break
                total, (i, d, rest, cols) = best
                fixed[i], used[member[d]] = True, True
                fixed_total += cost[i, d]
                domain[i] = doms[d]
                for j, v in zip(rest, cols):
                    domain[j] = (int(v),)
                    own[j] = cost1[j, v]
                own[i] = cost[i, d]
    wj = np.full(K, -1, dtype=np.int64)
    for i, nodes in enumerate(domain):
        w, nd = picks[i]
        w = w[np.isin(nd, nodes)]
        if len(nodes) > 1:  # its fastest max_workers over the domain
            r = problem.worker_throughput[i, w]
            w = w[np.lexsort((w, -r))[: problem.max_workers[i]]]
        wj[w] = i
    return wj


#: The node DP (:func:`dp_candidates`) runs while its cost, about ``P (C + 1) 3**S`` steps plus its
#: runs' (P nodes of at most C workers, S jobs), is at most this (S up to 8-10 at K = 64 in 8-16 nodes):
#: 4-13 ms at K = 64, S = 8-9.  Above it the search of the default budget does without it.
DP_MAX_WORK = 2**23


def _dp_work(P, C, S):
    """The steps of :func:`hetplace._core._topo.dp_kernel` on ``P`` nodes of ``C`` workers and ``S`` jobs.

    Its subsets of jobs per node and part size, its runs, and its knapsacks.
    """
    return P * (C + 1) * 3 ** S + (P * (P + 1) // 2) * S * (C + 1) * 2 ** S + P * (C + 1) ** 2 * 2 ** S // 2


def _node_rates(problem):
    """``(workers, rates)``: the available workers of each node, and each job's rates on them, fastest
    first ((S, N, C), zero-padded)."""
    topo = problem.topology
    N = len(topo.node_bandwidth)
    workers = [np.flatnonzero((topo.node == v) & problem.available) for v in range(N)]
    rates = np.zeros((problem.n_jobs, N, max((len(w) for w in workers), default=0)))
    for v, w in enumerate(workers):
        rates[:, v, :len(w)] = -np.sort(-problem.worker_throughput[:, w], axis=1)
    return workers, rates


def _dp_tables(problem, order, node_workers, node_rates):
    """The node DP's inputs on the nodes in ``order``: ``(f, cap, h, run_a, run_b, workers)``.

    ``f[p, i, c]``: job ``i`` on its ``c`` fastest usable workers of node ``order[p]`` at the
    node's bandwidth; ``h[r, i, c]``: job ``i`` on all of its usable workers of the nodes of run
    ``r`` (positions ``run_a[r]`` to ``run_b[r] - 1``) plus its ``c`` fastest of node
    ``run_b[r]``, at most ``max_workers`` (then priced at their mean rate), its ring at its
    rack's bandwidth when they share one, else at the top level's; both through
    :func:`hetplace._cost.job_time` (+inf outside the size bounds or beyond its usable workers).
    ``workers[p]``: the available workers of node ``order[p]``.  ``node_workers`` and
    ``node_rates`` are :func:`_node_rates`'s, in node id order.
    """
    from ._cost import comm_cost_at, job_time

    topo = problem.topology
    S, P = problem.n_jobs, len(order)
    workers = [node_workers[v] for v in order]
    cap = np.array([len(w) for w in workers], dtype=np.int64)
    rates = node_rates[:, order]  # each job's usable rates on each node, fastest first
    C = rates.shape[2]
    usable = (rates > 0).sum(axis=2)  # (S, P)
    prefix = np.concatenate([np.zeros((S, P, 1)), np.cumsum(rates, axis=2)], axis=2)  # (S, P, C + 1)
    jobs = np.arange(S)[:, None, None]
    c = np.arange(C + 1)[None, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.broadcast_to(topo.node_bandwidth[order][None, :, None], prefix.shape)
        n = np.broadcast_to(c, prefix.shape)
        f = job_time(problem, np.broadcast_to(jobs, prefix.shape), prefix, n, comm=comm_cost_at(
            problem, np.broadcast_to(jobs, prefix.shape), n, b))
    f = np.where((n >= 1) & (n <= usable[:, :, None]) & (n >= problem.min_workers[:, None, None]) & (
        n <= problem.max_workers[:, None, None]), f, math.inf)
    f = np.ascontiguousarray(f.transpose(1, 0, 2))  # (P, S, C + 1)
    # runs [a, b): whole nodes a..b-1 plus c workers of node b
    run_a, run_b = (x.astype(np.int64) for x in np.triu_indices(P + 1, 1))
    run_b_node = np.minimum(run_b, P - 1) if P else run_b
    cum_n = np.concatenate([np.zeros((S, 1)), np.cumsum(usable, axis=1)], axis=1)  # (S, P + 1)
    cum_x = np.concatenate([np.zeros((S, 1)), np.cumsum(prefix[:, :, -1], axis=1)], axis=1)
    whole_n = (cum_n[:, run_b] - cum_n[:, run_a])[:, :, None]  # (S, R, 1)
    whole_x = (cum_x[:, run_b] - cum_x[:, run_a])[:, :, None]
    inside = run_b < P
    part_x = np.where(inside[None, :, None], prefix[:, run_b_node, :], 0.0)  # (S, R, C + 1)
    part_ok = (c <= np.where(inside[None, :, None], np.minimum(usable[:, run_b_node, None],
                                                               cap[run_b_node][None, :, None] - 1), 0))
    X, n = _at_most(whole_x + part_x, whole_n + c, problem.max_workers[:, None, None])
    rack = topo.node_rack[order] if topo.rack is not None else np.zeros(P, dtype=np.int64)
    last = np.where(c[0] > 0, run_b_node[:, None], run_b[:, None] - 1)  # (R, C + 1): the run's last position
    same = rack[run_a][:, None] == rack[last]
    bw = np.where(same, topo.rack_bandwidth[rack[run_a]][:, None] if topo.rack is not None else topo.bandwidth,
                  topo.bandwidth)
    jr = np.broadcast_to(jobs, n.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = job_time(problem, jr, X, n, comm=comm_cost_at(problem, jr, n, np.broadcast_to(bw[None], n.shape)))
    h = np.where(part_ok & (n >= np.maximum(problem.min_workers[:, None, None], 2)), h, math.inf)
    return f, cap, np.ascontiguousarray(h.transpose(1, 0, 2)), run_a, run_b, workers


def _alone(size, A, u):
    """``{job: workers}`` of the jobs of mask ``A`` alone on at most ``u`` workers of a node, from the
    node DP's ``size`` table of that node (:func:`hetplace._core._topo.dp_kernel`)."""
    out = {}
    while A:
        j = A.bit_length() - 1
        out[j] = int(size[A, u])
        A, u = A ^ (1 << j), u - out[j]
    return out


def _give(wj, rho, i, workers, m):
    """Job ``i`` takes its ``m`` fastest free usable workers of ``workers`` (ties to the lower index)."""
    w = workers[(rho[i, workers] > 0) & (wj[workers] < 0)]
    wj[w[np.lexsort((w, -rho[i, w]))[:max(int(m), 0)]]] = i


def dp_candidates(problem, backend="auto"):
    """The node DP's placements (docs/model.md §3.13): a list of assignments ((K,) int64), maybe empty.

    Every job on one node (several may share one) or on a run of consecutive
    whole nodes plus part of the next, in a line order of the nodes (rack by
    rack, node ids within): the exact optimum of that space
    (:func:`hetplace._core._topo.dp_kernel`), once in that order and once
    reversed (a part before the run).  A job takes its fastest usable workers
    of its nodes.  Priced by the kernel as :func:`_dp_tables` says (exact when
    a node's workers are alike for the job), then exactly by the caller.
    Empty when there are no nodes, the cost (:func:`_dp_work`) exceeds
    :data:`DP_MAX_WORK`, or no placement of the space gives every job a worker.
    """
    from ._core._registry import resolve

    topo = problem.topology
    S, K, N = problem.n_jobs, problem.n_workers, len(topo.node_bandwidth)
    C = int(np.bincount(topo.node[problem.available], minlength=N).max()) if N else 0
    if N == 0 or S == 0 or _dp_work(N, C, S) > DP_MAX_WORK:
        return []
    node_workers, node_rates = _node_rates(problem)
    kernels = resolve(backend)[1]
    rack = topo.node_rack if topo.rack is not None else np.zeros(N, dtype=np.int64)
    forward = np.lexsort((np.arange(N), rack))
    rho, hi, M = problem.worker_throughput, problem.max_workers, 1 << S
    out = []
    for order in (forward, forward[::-1].copy()):
        f, cap, h, run_a, run_b, workers = _dp_tables(problem, order, node_workers, node_rates)
        dp, back, how, size, tback, tprev = kernels.topo_dp(f, cap, h, run_a, run_b, True)
        if not dp[N, M - 1] < math.inf:
            continue
        wj = np.full(K, -1, dtype=np.int64)
        q, mask = N, M - 1
        while q > 0:
            prev, step = int(back[q, mask]), int(how[q, mask])
            if step >= 0:  # a job on a run of whole nodes
                r, i = divmod(step, S)
                _give(wj, rho, i, np.concatenate(workers[run_a[r]:run_b[r]]), hi[i])
                q, mask = int(run_a[r]), prev
                continue
            p, taken, start = q - 1, 0, None
            if step <= -2:  # beside part of the node taken by a run
                taken = -step - 2
                state = p * f.shape[2] + taken  # the row of the run's state (part size taken) at node p
                r, i = divmod(int(tback[state, prev]), S)
                _give(wj, rho, i, workers[p], taken)
                _give(wj, rho, i, np.concatenate(workers[run_a[r]:run_b[r]]), hi[i] - taken)
                start = (int(run_a[r]), int(tprev[state, prev]))
            for j, c in _alone(size[p], mask ^ prev, int(cap[p]) - taken).items():
                _give(wj, rho, j, workers[p], c)
            q, mask = start if start is not None else (p, prev)
        out.append(wj)
    return out


def _distinct(rows):
    """Indices of the distinct rows of ``rows`` (first occurrence, in order)."""
    seen, keep = set(), []
    for r, row in enumerate(rows):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(r)
    return np.array(keep, dtype=np.int64)


def _descent(problem, rows, opts, flat, threads=1, stop=None, max_steps=_MAX_STEPS, kicks=None):
    """Improve ``rows`` ((R, K) int64, feasible) in place by the exact descent; return (totals, steps).

    ``max_steps=0`` prices the rows (restart losses included) without changing them.  ``flat`` is
    :mod:`hetplace.smp` (see :func:`topology_place`).
    """
    from ._core._registry import kernels

    topo = problem.topology
    model = problem.comm_model
    jp = np.stack([problem.work, model.volume, problem.restart_cost], axis=1)
    ji = np.stack([problem.min_workers, problem.max_workers, problem.running.astype(np.int64)], axis=1)
    table = kernels(opts["backend"])
    with flat._threads(opts["backend"], threads):
        return table.topo_polish_rows(
            problem.worker_throughput, jp, ji, topo.node, topo.node_rack, topo.node_bandwidth,
            topo.rack_bandwidth, topo.bandwidth, topo.rack is not None, problem.current,
            problem.available.astype(np.uint8), problem.worker_classes[2], problem.replacing, rows, max_steps,
            compound=max_steps > 0, kicks=kicks, slack=SLACK, patience=PATIENCE, threads=threads, stop=stop,
        )


def topology_place(problem, seed, opts, flat):
    """SMP with a topology: ``(worker_job, info)`` (see the module docstring); ``opts`` validated by ``smp._iv``.

    ``flat`` is the module :mod:`hetplace.smp`, whose flat machinery (sampling, market, polish,
    keep candidates, choice) runs the proxies; it is passed in by :func:`hetplace.smp.smp_place`
    so that this module does not import it (no import cycle).
    """
    with np.errstate(divide="ignore", invalid="ignore"):  # the python backend's numpy scalars, as IEEE
        return _place(problem, seed, opts, flat)


def _place(problem, seed, opts, flat):
    """The body of :func:`topology_place`."""
    S, K = problem.n_jobs, problem.n_workers
    t0 = time.perf_counter()
    cats = flat._sampled_categories(problem, opts, seed)
    extra = flat._keep_candidates(problem, opts, seed)[0] if problem.replacing else None
    t1 = time.perf_counter()
    # 1. the flat machinery on two size-priced proxies (the second only when its dense table is small)
    dense = S * (K + 1) <= flat.DENSE_COST_CELLS
    search = K * (K + S) <= SEARCH_MAX_CELLS
    halves = [(cats, None)]
    if not search and not dense:  # a large cluster: the pessimistic proxy on half of the samples, its best rows packed
        halves = [(np.ascontiguousarray(cats[0::2]), None)]
    elif dense and len(cats) > 1:
        halves = [(np.ascontiguousarray(cats[0::2]), None),
                  (np.ascontiguousarray(cats[1::2]), optimistic_table(problem))]
    rows = []
    for part, cost in halves:
        out_wj, out_total, _, modes = flat._run(problem, part, opts, extra, cost=cost)
        finite = np.isfinite(out_total)
        rows.append(out_wj[finite][np.argsort(out_total[finite], kind="stable")])
    t2 = time.perf_counter()
    cand = np.concatenate(rows) if rows else np.zeros((0, K), dtype=np.int64)
    if not len(cand):
        from .baselines import greedy_placement

        if problem.has_quota:  # the max-flow start within the quotas, descended (docs/model.md §3.14)
            wj = flat._quota_finish(problem, np.zeros((0, K), dtype=np.int64), np.zeros(0))[0][-1]
            return wj, dict(seed=seed, samples=int(cats.shape[0]), fallback="quota start")
        return greedy_placement(problem), dict(seed=seed, samples=int(cats.shape[0]), fallback="greedy")
    # 2. pack the best distinct proxy results of each half (interleaved: the best of each first)
    per = max(1, opts["polish_top"] or len(cand)) if search else LARGE_PACKED
    picks = []
    for r in rows:
        r = r[_distinct(r)][:per]
        picks.append(r)
    width = max(len(r) for r in picks)
    ordered = [r[t] for t in range(width) for r in picks if t < len(r)]
    ordered = np.array(ordered, dtype=np.int64).reshape(-1, K)
    packed = np.concatenate([pack(problem, ordered, opts["backend"]), ordered])
    dp = search and K <= SEARCH_FULL_K and not problem.replacing
    dp_rows = dp_candidates(problem, opts["backend"]) if dp else []
    if dp_rows:  # the node DP's exact optima of its space (it holds the domain candidate's)
        packed = np.concatenate([packed, np.array(dp_rows, dtype=np.int64)])
    elif search:  # each job on its own node or nodes of a rack: candidates the proxies miss
        one = domain_candidate(problem, opts["backend"])
        if one is not None:
            packed = np.concatenate([packed, one[None, :]])
    packed = np.ascontiguousarray(packed[_distinct(packed)])
    total = _descent(problem, packed, opts, flat, max_steps=0)[0] if search else price(problem, packed).total
    greedy = not search and K * S <= GREEDY_MAX_CELLS
    if greedy:  # without the search, packing alone loses to the topology-aware greedy: it competes
        from .baselines import greedy_placement, keep_greedy_placement

        rows_g = [greedy_placement(problem)] + ([keep_greedy_placement(problem)] if problem.replacing else [])
        extra_g = np.ascontiguousarray(np.array(rows_g, dtype=np.int64).reshape(-1, K))
        packed = np.concatenate([packed, extra_g])
        total = np.concatenate([total, price(problem, extra_g).total])
    t3 = time.perf_counter()
    # the quota search also starts from the candidates before the quota-blind search (docs/model.md §3.14)
    starts = [(packed.copy(), total.copy())] if problem.has_quota else []
    searched = 0
    if search:
        # 3. the exact descent on the best packed candidates
        n_rows, n_kicks = search_budget(K, bool(dp_rows))
        best = np.argsort(total, kind="stable")[:n_rows]
        best = best[np.isfinite(total[best])]
        sub = np.ascontiguousarray(packed[best])
        threads = flat.thread_count(opts["backend"], opts["threads"], len(best) * K * K)
        stop = _interrupt.new_stop() if len(best) * K * K >= flat.STOPPABLE_MIN_WORK else None
        kicks = np.random.default_rng([seed % (1 << 63), 24]).integers(0, 1 << 62, (len(best), n_kicks, 3))
        if stop is not None:
            total[best] = _interrupt.call(
                lambda: _descent(problem, sub, opts, flat, threads, stop, kicks=kicks), stop)[0]
        else:
            total[best] = _descent(problem, sub, opts, flat, threads, kicks=kicks)[0]
        searched = len(best)
        packed[best] = sub
        if len(best) and K <= SEARCH_FULL_K:
            # 4. every compound kick once, from the best searched candidate (first on ties)
            top = best[int(np.argmin(total[best]))]
            row = np.ascontiguousarray(packed[top:top + 1])
            total[top] = _descent(problem, row, opts, flat, kicks=sweep_kicks(problem)[None])[0][0]
            packed[top] = row[0]
    quota_steps = None
    if problem.has_quota:  # the best candidates repaired and descended within the quotas (docs/model.md §3.14)
        packed, total, quota_steps = flat._quota_finish(problem, packed, total, starts)
    t4 = time.perf_counter()
    chosen = flat._choose(problem, packed, total, opts["fairness_tol"])
    wj = packed[chosen].copy()
    info = dict(
        seed=seed, samples=int(cats.shape[0]), feasible_samples=int(len(cand)), chosen_sample=int(chosen),
        category=np.bincount(wj[wj >= 0], minlength=S).tolist(),
        keep_candidates=0 if extra is None else int(len(extra)), candidates=int(len(packed)),
        searched=int(searched), greedy_candidate=bool(greedy), backend=opts["backend"], sampling=opts["sampling"], matching=opts["matching"],
        polish=bool(opts["polish"]), topology=True, **modes,
        sample_time=t1 - t0, market_time=t2 - t1, pack_time=t3 - t2, search_time=t4 - t3,
    )
    if quota_steps is not None:
        info["quota_steps"] = int(quota_steps)
    return wj, info
