"""Baseline placements users compare against (docs/model.md §5).

Each function takes a validated :class:`~hetplace.Problem` and returns a
``worker_job`` array; :func:`hetplace.place` wraps them.  Every baseline starts
each job at ``problem.min_workers`` workers and keeps it within
``problem.max_workers`` (a job cannot use more workers than samples in its
batch, nor more than its bound).

Workers of one type and one speed are interchangeable for every job, so the
baselines work on these *classes* (:class:`_Pool`): a job's "fastest free
worker" is the lowest-index free worker of its best class with free workers.
Classes are ranked per job by throughput, ties to the lower type, then to the
faster worker speed (two speeds of one type can give the same throughput
after rounding; workers of one class are taken lowest index first).  This is
the worker-level rule "fastest free worker, ties to the lower index" on every
instance without such rounding ties, and costs O(K log K + S C) instead of
O(K^2) (benchmarks/bench_baselines.py).
"""

import numpy as np

from ._cost import job_time
from ._problem_iv import augmenting_assignment

__all__ = ["equal_sizes", "equal_placement", "random_placement", "greedy_placement", "keep_greedy_placement"]


class _Pool:
    """The free workers of a problem grouped by class (type, speed), and each job's class ranking.

    ``value[i, c]`` is job i's throughput on one worker of class c (the same
    float as ``problem.worker_throughput`` for every member); ``prefs[i]``
    lists the classes job i can use, best first; ``top[i]`` is its best class
    that still has a free worker (-1: none).
    """

    def __init__(self, problem, worker_job):
        # Problem.worker_classes, ordered by type and then speed descending (a down worker,
        # speed 0, is a class of its own), each class lowest index first
        order, bounds, _ = problem.worker_classes
        C = bounds.size - 1
        wt, speed = problem.worker_type, problem.class_speed
        first = order[bounds[:-1]]
        rank = np.lexsort((-speed[first], wt[first]))  # the classes in this order
        perm = np.concatenate([order[bounds[c]:bounds[c + 1]] for c in rank])
        size = np.diff(bounds)[rank]
        starts = np.cumsum(size) - size
        cls = np.repeat(np.arange(C), size)
        self.n_classes = C
        self.value = problem._class_rates(perm[starts])
        free = worker_job[perm] < 0
        self.members = perm[free]
        self.end = np.cumsum(np.bincount(cls[free], minlength=C))
        self.next = self.end - np.bincount(cls[free], minlength=C)
        self.prefs = np.argsort(-self.value, axis=1, kind="stable")  # ties: lower class index
        self.n_allowed = (self.value > 0).sum(axis=1)
        S = problem.n_jobs
        self.ptr = np.zeros(S, dtype=np.int64)  # position of top[i] in prefs[i]
        self.top = np.where(self.n_allowed > 0, self.prefs[:, 0], -1)
        self.refresh()

    def free(self):
        """Free workers per class, shape (C,)."""
        return self.end - self.next

    def refresh(self):
        """Move every job whose best class ran out to its next class with free workers; return the jobs moved."""
        top, empty = self.top, self.next == self.end
        moved = stale = np.flatnonzero((top >= 0) & empty[np.maximum(top, 0)])
        while stale.size:
            j = self.ptr[stale] + 1
            self.ptr[stale] = j
            ok = j < self.n_allowed[stale]
            top[stale[~ok]] = -1
            stale, c = stale[ok], self.prefs[stale[ok], j[ok]]
            top[stale] = c
            stale = stale[empty[c]]
        return moved

    def assign(self, worker_job, jobs, classes, offset):
        """Give job ``jobs[j]`` the free worker ``offset[j]`` places into class ``classes[j]``."""
        worker_job[self.members[self.next[classes] + offset]] = jobs


def _ranks(classes, n_classes):
    """Rank of every entry among the earlier entries of the same class (0, 1, ...), and class counts."""
    o = np.argsort(classes, kind="stable")
    cs = classes[o]
    rank = np.empty(classes.size, dtype=np.int64)
    rank[o] = np.arange(classes.size) - np.searchsorted(cs, cs, side="left")
    return rank, np.bincount(classes, minlength=n_classes)


def _fill(problem, worker_job, targets, order):
    """Round-robin: each job in ``order`` takes its fastest free worker until it reaches its target.

    A round gives every job below its target (and with a usable free worker)
    one worker, in ``order``.  Rounds in which no class runs out are done
    together (in a class, the jobs wanting it take its free workers in
    ``order``, round after round); a round in which a class runs out is
    split where it does.  Modifies and returns ``worker_job``.
    """
    pool = _Pool(problem, worker_job)
    C = pool.n_classes
    have = np.bincount(worker_job[worker_job >= 0], minlength=problem.n_jobs)
    order = np.asarray(order, dtype=np.int64)
    pending = None  # jobs still to pick in the current round, in order
    while True:
        if pending is None:
            act = order[(have[order] < targets[order]) & (pool.top[order] >= 0)]
            if act.size == 0:
                return worker_job
            t = pool.top[act]
            rank, d = _ranks(t, C)
            used = d > 0
            R = int(min((pool.free()[used] // d[used]).min(), (targets[act] - have[act]).min()))
            if R >= 1:  # R whole rounds, no class runs out before the last pick
                rounds = np.arange(R, dtype=np.int64)[:, None] * d[t][None, :] + rank[None, :]
                pool.assign(worker_job, np.tile(act, R), np.tile(t, R), rounds.ravel())
                pool.next += R * d
                have[act] += R
                pool.refresh()
                continue
            pending = act
        t = pool.top[pending]
        pending, t = pending[t >= 0], t[t >= 0]  # a job whose last usable class ran out this round
        if pending.size == 0:
            pending = None
            continue
        rank, _ = _ranks(t, C)
        short = np.flatnonzero(rank >= pool.free()[t])
        P = int(short[0]) if short.size else pending.size  # the first pick whose class is empty by then
        pool.assign(worker_job, pending[:P], t[:P], rank[:P])
        pool.next += np.bincount(t[:P], minlength=C)
        have[pending[:P]] += 1
        pool.refresh()
        pending = pending[P:] if P < pending.size else None


def _seed_jobs(problem, order):
    """``min_workers[i]`` distinct allowed workers per job (one by default), jobs served in ``order``.

    Round-robin: each job takes its fastest free worker until it has its
    minimum; when that would strand a job (Hall's condition), the type-level
    matching (one worker per job) or flow (larger minima) of the problem
    decides instead.
    """
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    lo = problem.min_workers
    worker_job = _fill(problem, worker_job, lo, order)
    if (np.bincount(worker_job[worker_job >= 0], minlength=problem.n_jobs) < lo).any():
        return _seed_by_matching(problem) if (lo == 1).all() else _seed_by_flow(problem)
    return worker_job


def _seed_by_flow(problem):
    """``min_workers[i]`` workers per job from a flow of jobs to types (exists: the Problem checked it).

    Each type gives its workers, fastest first and then lowest index, to its
    jobs in index order, as many as the flow says.
    """
    from .problem import min_worker_flow

    counts = problem.available_counts
    allowed = (problem.throughput > 0) & (counts > 0)[None, :]
    flow, _ = min_worker_flow(allowed, counts, problem.min_workers)
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    for g in range(problem.n_types):
        members = np.flatnonzero(problem.worker_type == g)
        members = members[np.argsort(-problem.class_speed[members], kind="stable")]  # down workers last
        worker_job[members[: flow[:, g].sum()]] = np.repeat(np.arange(problem.n_jobs), flow[:, g])
    return worker_job


def _seed_by_matching(problem):
    """One worker per job from a bipartite matching of jobs to worker classes (always exists).

    Kuhn's augmenting paths on classes with capacities (their sizes), jobs in
    index order, each trying its classes best first
    (:func:`hetplace._problem_iv.augmenting_assignment`, the search the
    Problem's own coverability check runs, without recursion); then every
    class gives its workers, lowest index first, to its jobs in index order.
    """
    S, K = problem.n_jobs, problem.n_workers
    pool = _Pool(problem, np.full(K, -1, dtype=np.int64))
    classes = [pool.prefs[i, : pool.n_allowed[i]].tolist() for i in range(S)]
    holders, _ = augmenting_assignment(classes, pool.free().tolist())  # every job placed: Problem checked it
    worker_job = np.full(K, -1, dtype=np.int64)
    for c, jobs in enumerate(holders):
        if jobs:
            pool.assign(worker_job, np.sort(jobs), c, np.arange(len(jobs)))
    return worker_job


def equal_sizes(n_workers, n_jobs, max_workers=None):
    """Job sizes as equal as possible: ``K // S`` each, the first ``K % S`` jobs one more.

    With ``max_workers`` (S,), each size is capped at it (the workers a
    capped job cannot use stay idle).
    """
    sizes = np.full(n_jobs, n_workers // n_jobs, dtype=np.int64)
    sizes[: n_workers % n_jobs] += 1
    if max_workers is not None:
        sizes = np.minimum(sizes, max_workers)
    return sizes


def equal_placement(problem):
    """Equal sizing: n_i ~ K/S (within ``min_workers..max_workers``), biggest jobs pick their fastest free workers first, round-robin."""
    order = np.argsort(-problem.work, kind="stable")
    worker_job = _seed_jobs(problem, order)
    targets = equal_sizes(problem.n_available, problem.n_jobs)[np.argsort(order, kind="stable")]
    targets = np.maximum(np.minimum(targets, problem.max_workers), problem.min_workers)
    return _fill(problem, worker_job, targets, order)


def random_placement(problem, rng):
    """Random placement: a random feasible seed, then every other worker to a random allowed job.

    Workers are visited in a random order; each goes to a job drawn uniformly
    from those that can run on its type and are below ``max_workers``.
    """
    S, G = problem.n_jobs, problem.n_types
    worker_job = _seed_jobs(problem, rng.permutation(S))
    visit = rng.permutation(np.flatnonzero((worker_job < 0) & problem.available))  # down workers stay idle
    allowed = [np.flatnonzero(problem.throughput[:, g] > 0) for g in range(G)]
    n_allowed = np.array([a.size for a in allowed], dtype=np.int64)
    offset = np.concatenate(([0], np.cumsum(n_allowed)[:-1]))
    flat = np.concatenate(allowed)
    g = problem.worker_type[visit]
    visit, g = visit[n_allowed[g] > 0], g[n_allowed[g] > 0]
    state = rng.bit_generator.state
    # one draw per visited worker, as many as sequential rng.integers(n) calls would make
    draws = rng.integers(n_allowed[g]) if visit.size else np.zeros(0, dtype=np.int64)
    cand = worker_job.copy()
    cand[visit] = flat[offset[g] + draws]
    # Those draws hold as long as no job reaches max_workers while workers are left to
    # visit (from then on it is no longer drawn, which changes later draws); a job with
    # max_workers = K reaches it only with the last worker.
    full = np.bincount(cand[cand >= 0], minlength=S) >= problem.max_workers
    if not np.any(full & (problem.max_workers < problem.n_workers)):
        return cand
    # some job fills up: draw worker by worker among the jobs still below max_workers
    rng.bit_generator.state = state
    n = np.bincount(worker_job[worker_job >= 0], minlength=S)
    room = n < problem.max_workers
    for k, gk in zip(visit.tolist(), g.tolist()):
        jobs = allowed[gk][room[allowed[gk]]]
        if jobs.size:
            i = jobs[rng.integers(jobs.size)]
            worker_job[k] = i
            n[i] += 1
            room[i] = n[i] < problem.max_workers[i]
    return worker_job


def greedy_placement(problem):
    """Greedy marginal gain: give the next worker to the job whose JCT drops most.

    Starts from ``min_workers`` fastest workers per job (biggest jobs first) and stops when
    no worker lowers any job's JCT, so workers may stay idle when communication
    makes them useless.  A job's candidate is its fastest free worker; the
    cost of ``n`` workers is ``problem.size_cost`` (``+inf`` above
    ``max_workers``), so no job grows beyond its batch.  Ties go to the lower job index.
    """
    S = problem.n_jobs
    rho = problem.worker_throughput
    cost = problem.size_cost
    worker_job = _seed_jobs(problem, np.argsort(-problem.work, kind="stable"))
    busy = np.flatnonzero(worker_job >= 0)
    X = np.bincount(worker_job[busy], weights=rho[worker_job[busy], busy], minlength=S)
    n = np.bincount(worker_job[busy], minlength=S)
    pool = _Pool(problem, worker_job)

    def gain_of(jobs):
        """JCT drop of each of ``jobs`` from its fastest free worker (-inf: none left)."""
        c = pool.top[jobs]
        has = c >= 0
        i, c = jobs[has], c[has]
        before = job_time(problem, i, X[i], n[i], cost)
        after = job_time(problem, i, X[i] + pool.value[i, c], n[i] + 1, cost)
        out = np.full(jobs.size, -np.inf)
        out[has] = before - after
        return out

    gain = gain_of(np.arange(S))
    while True:
        i = int(np.argmax(gain))
        if not gain[i] > 0:
            return worker_job
        c = pool.top[i]
        pool.assign(worker_job, i, c, 0)
        pool.next[c] += 1
        X[i] += pool.value[i, c]
        n[i] += 1
        moved = pool.refresh()
        if moved.size:
            gain[moved] = gain_of(moved)
        c = pool.top[i]  # the same formula as gain_of, on scalars (this is the hot loop)
        gain[i] = -np.inf if c < 0 else (
            job_time(problem, i, X[i], n[i], cost) - job_time(problem, i, X[i] + pool.value[i, c], n[i] + 1, cost)
        )


def keep_greedy_placement(problem):
    """Re-placement baseline: keep every running job, place the others greedily (docs/model.md §5).

    Every running job that can keep its current workers (``problem.can_keep``)
    keeps exactly them; the other jobs (new ones, and running ones that lost a
    worker or whose size left its bounds) are placed by
    :func:`greedy_placement` on the available workers left.  When those
    cannot hold them, the kept job holding the most workers (ties: the lower
    index) is restarted and joins them, until they fit.  Without running jobs
    this is :func:`greedy_placement`.
    """
    from .errors import InvalidProblemError

    if not problem.replacing:
        return greedy_placement(problem)
    cur = problem.current
    keep = problem.can_keep.copy()
    held = np.bincount(cur[cur >= 0], minlength=problem.n_jobs)
    while True:
        worker_job = np.where((cur >= 0) & keep[np.maximum(cur, 0)], cur, -1)
        jobs = np.flatnonzero(~keep)
        if jobs.size == 0:
            return worker_job
        free = np.flatnonzero((worker_job < 0) & problem.available)
        try:
            sub = problem._restrict(jobs, free) if free.size >= jobs.size else None
        except InvalidProblemError:
            sub = None
        if sub is not None:
            sub_wj = greedy_placement(sub)
            busy = sub_wj >= 0
            worker_job[free[busy]] = jobs[sub_wj[busy]]
            return worker_job
        kept = np.flatnonzero(keep)  # never empty: with no job kept, sub is the whole problem
        keep[kept[np.argmax(held[kept])]] = False
