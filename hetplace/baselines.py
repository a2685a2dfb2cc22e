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

With a network topology the greedy baselines price every step exactly in the
topology model (:func:`_greedy_topology`, on :class:`_NodePool`: the free
workers by class and node); the other baselines ignore the topology.

With a binding tenant quota (``problem.has_quota``, docs/model.md §1.7, §4.10)
every baseline gives a job a worker only while its tenant has room for the
worker's type (:class:`_Room`); without one they run exactly as without
tenants.
"""

import numpy as np

from ._cost import comm_cost_at, job_time
from ._problem_iv import augmenting_assignment
from ._quota import quota_flow, quota_room, quota_usage, quota_violation

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
        self.ctype = wt[perm[starts]]  # the type of every class (tenant quotas count workers by type)
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
    if problem.has_quota:
        return _seed_quota(problem, np.asarray(order, dtype=np.int64))
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
    return assign_counts(problem, flow)


def assign_counts(problem, counts):
    """(K,) int64: ``counts[i, g]`` workers of type g for every job i, each type's fastest first.

    Each type gives its available workers, fastest first and then lowest index, to its jobs in
    index order; the other workers stay idle.  ``counts`` (S, G) must fit the available workers.
    """
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    for g in range(problem.n_types):
        members = np.flatnonzero(problem.worker_type == g)
        members = members[np.argsort(-problem.class_speed[members], kind="stable")]  # down workers last
        worker_job[members[: counts[:, g].sum()]] = np.repeat(np.arange(problem.n_jobs), counts[:, g])
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
    if problem.has_quota:
        return _fill_quota(problem, worker_job, targets, order)
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
    if problem.has_quota:  # worker by worker, among the jobs whose tenant has room for its type
        return _random_quota(problem, worker_job, visit, allowed, rng)
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

    With a network topology (``problem.topology``) every step is priced
    exactly instead (:func:`_greedy_topology`): a job's candidates are its
    fastest free worker in each domain it could grow into (its own node, the
    rest of its rack, the rest of the cluster), each priced at the bandwidth
    of the worker set it would make, and jobs start in the node with the most
    free workers of their best class.

    With a binding tenant quota (``problem.has_quota``, docs/model.md §1.7)
    every step stays within the tenant's room (:func:`_greedy_quota`; with a
    topology too, its steps then priced by ``problem.size_cost``, the top
    level's communication).
    """
    if problem.has_quota:
        return _greedy_quota(problem)
    if problem.topology is not None:
        return _greedy_topology(problem)
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


class _NodePool:
    """The free workers of a problem with a topology, by class and node: the topology-aware greedy's state.

    Classes and each job's ranking of them come from :class:`_Pool`.  The free
    workers of class ``c`` on node ``v`` form a *segment* (lowest index
    first); ``count(c, domain)`` says how many free workers of class ``c`` a
    domain holds.  A domain is ``(incl, excl)``: the workers of ``incl``
    (``("node", v)``, ``("rack", r)`` or ``("all",)``) outside ``excl``
    (None, ``("node", v)`` or ``("rack", r)``).  Every domain is a union of
    nodes, so a domain's count of class ``c`` drops to 0 only when a segment
    of class ``c`` empties.
    """

    def __init__(self, problem, worker_job):
        topo = problem.topology
        pool = _Pool(problem, worker_job)
        self.value, self.prefs, self.n_allowed = pool.value, pool.prefs, pool.n_allowed
        C, N = pool.n_classes, max(topo.n_nodes, 1)
        self.node_rack = topo.node_rack
        cls = np.repeat(np.arange(C), pool.end - pool.next)  # pool.members: class by class, lowest index first
        nd = topo.node[pool.members]
        order = np.lexsort((nd, cls))  # stable: each segment keeps the lowest index first
        self.workers = pool.members[order]
        key = cls[order] * N + nd[order]
        cut = np.flatnonzero(np.diff(key)) + 1
        start = np.concatenate(([0], cut)).astype(np.int64)
        if key.size == 0:  # no free worker in any class (key[start] would index an empty array)
            self.seg_class = self.seg_node = self.seg_next = self.seg_end = np.zeros(0, dtype=np.int64)
        else:
            self.seg_class, self.seg_node = key[start] // N, key[start] % N
            self.seg_next = start.copy()
            self.seg_end = np.concatenate((cut, [key.size])).astype(np.int64)
        self.class_segs = np.searchsorted(self.seg_class, np.arange(C + 1))
        self.first_seg = self.class_segs[:-1].copy()  # segments of class c before it are empty
        pairs = zip(self.seg_class.tolist(), self.seg_node.tolist())
        self.seg_of = {(v, c): s for s, (c, v) in enumerate(pairs)}
        size = self.seg_end - self.seg_next
        self.in_class = np.bincount(self.seg_class, weights=size, minlength=C).astype(np.int64)
        self.node_free = np.bincount(self.seg_node, weights=size, minlength=N).astype(np.int64)
        rk = self.node_rack[self.seg_node]
        self.in_rack = {}
        for r, c, m in zip(rk.tolist(), self.seg_class.tolist(), size.tolist()):
            self.in_rack[r, c] = self.in_rack.get((r, c), 0) + m
        self.rack_nodes = None
        if topo.rack is not None:
            self.rack_nodes = [np.flatnonzero(topo.rack == r).tolist() for r in range(topo.n_racks)]
        self.ptr = np.zeros(problem.n_jobs, dtype=np.int64)  # prefs[i][:ptr[i]]: classes with no free worker

    def _count(self, c, part):
        if part is None:
            return 0
        if part[0] == "node":
            s = self.seg_of.get((part[1], c))
            return 0 if s is None else int(self.seg_end[s] - self.seg_next[s])
        if part[0] == "rack":
            return self.in_rack.get((part[1], c), 0)
        return int(self.in_class[c])

    def count(self, c, domain):
        """Free workers of class ``c`` in ``domain``."""
        return self._count(c, domain[0]) - self._count(c, domain[1])

    def best_class(self, i, domain):
        """Job ``i``'s best class with a free worker in ``domain`` (ties: the lower class), or -1."""
        prefs, j, end = self.prefs[i], int(self.ptr[i]), int(self.n_allowed[i])
        while j < end and self.in_class[prefs[j]] == 0:
            j += 1
        self.ptr[i] = j
        for c in prefs[j:end].tolist():
            if self.count(c, domain) > 0:
                return c
        return -1

    def _contains(self, v, domain):
        def inside(part):
            kind = part[0]
            return kind == "all" or (kind == "node" and part[1] == v) or (
                kind == "rack" and self.node_rack[v] == part[1])
        return inside(domain[0]) and (domain[1] is None or not inside(domain[1]))

    def node_for(self, c, domain, last, own):
        """The node to take a free worker of class ``c`` in ``domain`` from.

        The node ``last`` (the job's latest, or -1) when it has one, else the
        first of the job's nodes ``own`` (a dict, in the order the job entered
        them) that has one, else the lowest node of the domain that has one.
        Nodes of ``own`` without any free worker are dropped from it for good.
        """
        incl = domain[0]
        if incl[0] == "node":
            return incl[1]
        if last >= 0 and self._contains(last, domain) and self._count(c, ("node", last)) > 0:
            return last
        for v in list(own):
            if self.node_free[v] == 0:
                del own[v]
            elif self._contains(v, domain) and self._count(c, ("node", v)) > 0:
                return v
        if incl[0] == "rack":
            for v in self.rack_nodes[incl[1]]:
                if self._contains(v, domain) and self._count(c, ("node", v)) > 0:
                    return v
        s, end = int(self.first_seg[c]), int(self.class_segs[c + 1])
        while s < end and self.seg_next[s] == self.seg_end[s]:  # skip the class's emptied segments for good
            s += 1
        self.first_seg[c] = s
        for s in range(s, end):
            v = int(self.seg_node[s])
            if self.seg_next[s] < self.seg_end[s] and self._contains(v, domain):
                return v
        raise AssertionError("no free worker of this class in the domain")  # callers checked count() > 0

    def roomiest_node(self, c):
        """The node with the most free workers of class ``c`` (ties: the lower node)."""
        lo, hi = int(self.class_segs[c]), int(self.class_segs[c + 1])
        return int(self.seg_node[lo + int(np.argmax(self.seg_end[lo:hi] - self.seg_next[lo:hi]))])

    def take(self, c, v):
        """Take the lowest-index free worker of class ``c`` on node ``v``; return it."""
        s = self.seg_of[v, c]
        k = int(self.workers[self.seg_next[s]])
        self.seg_next[s] += 1
        self.node_free[v] -= 1
        self.in_class[c] -= 1
        self.in_rack[self.node_rack[v], c] -= 1
        return k


def _greedy_topology(problem):
    """:func:`greedy_placement` on a problem with a network topology, every step priced exactly.

    Job ``i``'s worker set lies in one node, one rack, or spans racks; the
    worker it takes next lies in one of at most three disjoint domains (its
    node, the rest of its rack, the rest of the cluster), each of which gives
    the resulting set one bottleneck bandwidth (:func:`hetplace._cost.spans`).
    In a domain its best worker is its fastest free one, so its candidates
    are the fastest free worker of each domain, priced at that bandwidth
    (:func:`hetplace._cost.comm_cost_at`); it takes the cheapest (ties: the
    innermost domain), from a node it already uses when it can (the one it
    took its latest worker from first), else from the domain's lowest node,
    lowest index first.  The step gives the worker
    to the job whose JCT drops most (ties: the lower job index) and stops
    when none drops.

    Seeding: round-robin over the jobs (biggest first), a job without worker
    takes one of its best class from the node with the most free workers of
    that class, the others their cheapest candidate, until every job has
    ``min_workers``; when that strands a job, the topology-blind seed's
    matching or flow decides (as :func:`_seed_jobs`).
    """
    S = problem.n_jobs
    topo = problem.topology
    racks = topo.rack is not None
    work = problem.work

    def domains(nodes, rack_of):
        """Job's candidate domains, innermost first, each with the bandwidth of the set it would make."""
        if len(nodes) == 1:
            v = next(iter(nodes))
            r = int(topo.node_rack[v])
            out = [((("node", v), None), topo.node_bandwidth[v])]
            if racks:
                out.append(((("rack", r), ("node", v)), topo.rack_bandwidth[r]))
                out.append(((("all",), ("rack", r)), topo.bandwidth))
            else:
                out.append(((("all",), ("node", v)), topo.bandwidth))
            return out
        if racks and len(rack_of) == 1:
            r = next(iter(rack_of))
            return [((("rack", r), None), topo.rack_bandwidth[r]), ((("all",), ("rack", r)), topo.bandwidth)]
        return [((("all",), None), topo.bandwidth)]

    def current_bandwidth(nodes, rack_of):
        if len(nodes) == 1:
            return topo.node_bandwidth[next(iter(nodes))]
        if racks and len(rack_of) == 1:
            return topo.rack_bandwidth[next(iter(rack_of))]
        return topo.bandwidth

    def seed_candidate(i):
        """Job ``i``'s cheapest next worker below ``min_workers``: ``(class, domain)``, or None.

        Sizes below ``min_workers`` are priced as the ring runs (not as
        ``+inf``): the seed must reach them, and ranks its candidates so.
        """
        found = [(c, domain, b) for domain, b in domains(nodes[i], rack_of[i])
                 for c in [pool.best_class(i, domain)] if c >= 0]
        if not found:
            return None
        m = len(found)
        jobs, size = np.full(m, i), np.full(m, n[i] + 1)
        comm = problem.comm_model.at_bandwidth(jobs, size, np.array([b for _, _, b in found]))
        after = job_time(problem, jobs, X[i] + pool.value[i, [c for c, _, _ in found]], size, comm=comm)
        t = int(np.argmin(after))  # ties: the innermost domain
        return found[t][0], found[t][1]

    def priced(i, size, Xs, b):
        """Job ``i``'s time on ``size[t]`` workers of summed throughput ``Xs[t]`` whose ring runs at ``b``."""
        jobs = np.full(len(size), i)
        return job_time(problem, jobs, Xs, size, comm=comm_cost_at(problem, jobs, size, np.full(len(size), b)))

    def grow_candidate(i):
        """Job ``i``'s best next worker: ``(gain, class, domain, crosses)``, or None.

        In a domain of the job's own bandwidth the gain is the drop of its
        time.  In a slower domain (the job would leave its node or rack) it
        is the best drop per worker of taking its ``m`` fastest free workers
        there, ``m = 1, 2, ...`` (all priced at that domain's bandwidth): the
        first worker across a slow link may raise the time that later ones
        lower, and a one-worker look-ahead would never cross.
        """
        b_now = current_bandwidth(nodes[i], rack_of[i])
        before = float(priced(i, np.array([n[i]]), np.array([X[i]]), b_now)[0])
        out = None
        room = int(problem.max_workers[i] - n[i])
        for domain, b in domains(nodes[i], rack_of[i]):
            c = pool.best_class(i, domain)
            if c < 0 or room <= 0:
                continue
            if b < b_now:
                ranked = pool.prefs[i, pool.ptr[i]:pool.n_allowed[i]]
                vals = np.repeat(pool.value[i, ranked], [pool.count(int(g), domain) for g in ranked])[:room]
                m = np.arange(1, vals.size + 1)
                g = float(np.max((before - priced(i, n[i] + m, X[i] + np.cumsum(vals), b)) / m))
            else:
                g = before - float(priced(i, np.array([n[i] + 1]), np.array([X[i] + pool.value[i, c]]), b)[0])
            if out is None or g > out[0]:  # ties: the innermost domain
                out = (g, c, domain, b < b_now)
        return out

    def give(i, c, domain):
        v = latest[i] = pool.node_for(c, domain, latest[i], open_nodes[i])
        k = pool.take(c, v)
        open_nodes[i][v] = True
        worker_job[k] = i
        X[i] += pool.value[i, c]
        n[i] += 1
        nodes[i][v] = nodes[i].get(v, 0) + 1
        r = int(topo.node_rack[v])
        rack_of[i][r] = rack_of[i].get(r, 0) + 1

    def state(worker_job):
        busy = np.flatnonzero(worker_job >= 0)
        js = worker_job[busy]
        X = np.bincount(js, weights=problem._rate(js, busy), minlength=S).astype(np.float64)  # int when empty
        n = np.bincount(js, minlength=S)
        nodes, rack_of = [{} for _ in range(S)], [{} for _ in range(S)]
        latest[:] = [-1] * S
        open_nodes[:] = [{} for _ in range(S)]
        for i, k in zip(js.tolist(), busy.tolist()):
            v = int(topo.node[k])
            open_nodes[i][v] = True
            r = int(topo.node_rack[v])
            nodes[i][v] = nodes[i].get(v, 0) + 1
            rack_of[i][r] = rack_of[i].get(r, 0) + 1
        return X, n, nodes, rack_of

    # seed: min_workers per job, round-robin, biggest jobs first
    latest = [-1] * S  # the node each job took its latest worker from
    open_nodes = [{} for _ in range(S)]  # each job's nodes that may have free workers, in the order it entered them
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    pool = _NodePool(problem, worker_job)
    X, n, nodes, rack_of = state(worker_job)
    order = np.argsort(-work, kind="stable").tolist()
    lo = problem.min_workers
    stranded = False
    while not stranded:
        act = [i for i in order if n[i] < lo[i]]
        if not act:
            break
        for i in act:
            if n[i] == 0:
                c = pool.best_class(i, (("all",), None))
                if c < 0:
                    stranded = True
                    break
                domain = (("node", pool.roomiest_node(c)), None)
            else:
                cand = seed_candidate(i)
                if cand is None:
                    stranded = True
                    break
                c, domain = cand
            give(i, c, domain)
    if stranded:
        worker_job = _seed_by_matching(problem) if (lo == 1).all() else _seed_by_flow(problem)
        pool = _NodePool(problem, worker_job)
        X, n, nodes, rack_of = state(worker_job)

    # grow: the largest exactly priced drop of one job's time, until none drops
    # A job's gain changes only when it grows, or falls when others take the workers its candidate
    # counted on; so gains are refreshed lazily: the job on top is priced again when its candidate
    # may be stale, and another job is taken when it falls (the same choice as pricing every job
    # after every step).
    gain = np.full(S, -np.inf)
    best = [None] * S

    def update(i):
        cand = best[i] = grow_candidate(i)
        gain[i] = -np.inf if cand is None else cand[0]

    for i in range(S):
        update(i)
    while True:
        i = int(np.argmax(gain))
        if not gain[i] > 0:
            return worker_job
        g, c, domain, crosses = best[i]
        if crosses or pool.count(c, domain) == 0:
            update(i)
            if gain[i] < g:
                continue
            g, c, domain, crosses = best[i]
        give(i, c, domain)
        update(i)


def keep_greedy_placement(problem):
    """Re-placement baseline: keep every running job, place the others greedily (docs/model.md §5).

    Every running job that can keep its current workers (``problem.can_keep``)
    keeps exactly them; the other jobs (new ones, and running ones that lost a
    worker or whose size left its bounds) are placed by
    :func:`greedy_placement` on the available workers left.  When those
    cannot hold them, the kept job holding the most workers (ties: the lower
    index) is restarted and joins them, until they fit.  Without running jobs
    this is :func:`greedy_placement`.  With a binding tenant quota (docs/model.md
    §1.7), while the kept jobs exceed a tenant's quota of a type, the tenant's
    job holding the most workers of that type (ties: the lower index) is
    restarted; the others are placed within what the kept jobs leave of the
    quotas.
    """
    from .errors import InvalidProblemError

    if not problem.replacing:
        return greedy_placement(problem)
    cur = problem.current
    keep = problem.can_keep.copy()
    held = np.bincount(cur[cur >= 0], minlength=problem.n_jobs)
    while True:
        worker_job = np.where((cur >= 0) & keep[np.maximum(cur, 0)], cur, -1)
        if problem.has_quota:
            over = quota_violation(problem, worker_job)
            if over is not None:  # the kept jobs exceed a quota: the tenant's largest holder of the type restarts
                t, g = over[:2]
                mine = (worker_job >= 0) & (problem.worker_type == g)
                mine &= problem.tenant[np.maximum(worker_job, 0)] == t
                keep[int(np.argmax(np.bincount(worker_job[mine], minlength=problem.n_jobs)))] = False
                continue
        jobs = np.flatnonzero(~keep)
        if jobs.size == 0:
            return worker_job
        free = np.flatnonzero((worker_job < 0) & problem.available)
        # with a binding quota the others get what the kept jobs leave of their tenants' quotas
        room = quota_room(problem, worker_job) if problem.has_quota else None
        try:
            sub = problem._restrict(jobs, free, quota=room) if free.size >= jobs.size else None
        except InvalidProblemError:
            sub = None
        if sub is not None:
            sub_wj = greedy_placement(sub)
            busy = sub_wj >= 0
            worker_job[free[busy]] = jobs[sub_wj[busy]]
            return worker_job
        kept = np.flatnonzero(keep)  # never empty: with no job kept, sub is the whole problem
        keep[kept[np.argmax(held[kept])]] = False


# ---------------------------------------------------------------- tenant quotas (docs/model.md §1.7)
class _Room:
    """What each job's tenant may still take of every type, beside a :class:`_Pool` of free workers.

    ``left[row[i], g]`` is the room of job ``i``'s tenant for type ``g``; jobs
    of no tenant share a last row without limit.  Only used when a quota binds
    (``problem.has_quota``): then every baseline takes a class for a job only
    while its tenant has room for the class's type.
    """

    def __init__(self, problem, worker_job, pool):
        T, G = problem.n_tenants, problem.n_types
        used = quota_usage(problem.tenant, T, worker_job, problem.worker_type, G)
        no_limit = np.full((1, G), problem.n_workers + 1, dtype=np.int64)
        self.left = np.vstack([np.maximum(problem.quota_cap - used, 0), no_limit])
        self.row = np.where(problem.tenant >= 0, problem.tenant, T)
        self.pool = pool

    def usable(self, jobs):
        """(len(jobs), C) bool: the classes each of ``jobs`` can run on, with a free worker, within its room."""
        pool = self.pool
        return (pool.value[jobs] > 0) & (pool.free() > 0)[None, :] & (self.left[self.row[jobs]][:, pool.ctype] > 0)

    def best(self, jobs):
        """(len(jobs),): each job's fastest usable class (ties: the lower class, as ``_Pool.prefs``), or -1."""
        ok = self.usable(jobs)
        c = np.argmax(np.where(ok, self.pool.value[jobs], -np.inf), axis=1)
        return np.where(ok.any(axis=1), c, -1)

    def take(self, worker_job, i, c):
        """Give job ``i`` the lowest-index free worker of class ``c``."""
        pool = self.pool
        worker_job[pool.members[pool.next[c]]] = i
        pool.next[c] += 1
        self.left[self.row[i], pool.ctype[c]] -= 1


def _seed_quota(problem, order):
    """:func:`_seed_jobs` within the quotas: round-robin on the fastest usable class, else guided by a flow.

    Round-robin over ``order``: each job below ``min_workers`` takes its
    fastest free worker its tenant has room for.  When that strands a job,
    the seed starts again job by job (in ``order``), each worker the fastest
    whose taking leaves the remaining minima reachable within the capacities
    and quotas (:func:`hetplace._quota.quota_flow`, the check the Problem ran:
    it succeeds at the start, and one of a job's classes always keeps it so).
    """
    lo = problem.min_workers
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    room = _Room(problem, worker_job, _Pool(problem, worker_job))
    have = np.zeros(problem.n_jobs, dtype=np.int64)
    while True:
        act = order[have[order] < lo[order]]
        if act.size == 0:
            return worker_job
        for i in act.tolist():
            c = int(room.best(np.array([i]))[0])
            if c < 0:
                return _seed_quota_flow(problem, order)
            room.take(worker_job, i, c)
            have[i] += 1


def _seed_quota_flow(problem, order):
    """The minima of :func:`_seed_quota` when its round-robin strands a job: each step checked by a flow."""
    S, G, T = problem.n_jobs, problem.n_types, problem.n_tenants
    lo = problem.min_workers.astype(np.int64)
    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    pool = _Pool(problem, worker_job)
    room = _Room(problem, worker_job, pool)
    up = (pool.value > 0).any(axis=0)  # classes some job can use (not the down workers)
    allowed = (problem.throughput > 0) & (problem.available_counts > 0)[None, :]
    have = np.zeros(S, dtype=np.int64)
    for i in order.tolist():
        while have[i] < lo[i]:
            ok = room.usable(np.array([i]))[0]
            for c in np.argsort(-np.where(ok, pool.value[i], -np.inf), kind="stable")[: int(ok.sum())].tolist():
                free = pool.free() * up
                free[c] -= 1
                left = room.left[:T].copy()
                if problem.tenant[i] >= 0:
                    left[problem.tenant[i], pool.ctype[c]] -= 1
                demand = lo - have
                demand[i] -= 1
                capacity = np.bincount(pool.ctype, weights=free, minlength=G).astype(np.int64)
                if quota_flow(allowed, capacity, demand, problem.tenant, left) is None:
                    room.take(worker_job, i, c)
                    have[i] += 1
                    break
            else:  # pragma: no cover - the Problem checked that the minima fit the quotas
                raise AssertionError("no worker keeps the minima within the quotas")
    return worker_job


def _fill_quota(problem, worker_job, targets, order):
    """:func:`_fill` within the quotas: rounds in which each job of ``order`` below its target takes its
    fastest free worker its tenant has room for, until no job can take one.  Modifies and returns ``worker_job``."""
    room = _Room(problem, worker_job, _Pool(problem, worker_job))
    have = np.bincount(worker_job[worker_job >= 0], minlength=problem.n_jobs)
    while True:
        act = order[have[order] < targets[order]]
        moved = False
        for i in act.tolist():
            c = int(room.best(np.array([i]))[0])
            if c >= 0:
                room.take(worker_job, i, c)
                have[i] += 1
                moved = True
        if not moved:
            return worker_job


def _random_quota(problem, worker_job, visit, allowed, rng):
    """:func:`random_placement`'s visit within the quotas: each worker of ``visit`` to a job drawn uniformly
    from those that can run on its type, are below ``max_workers`` and whose tenant has room for the type."""
    S = problem.n_jobs
    room = _Room(problem, worker_job, _Pool(problem, worker_job))
    n = np.bincount(worker_job[worker_job >= 0], minlength=S)
    for k in visit.tolist():
        g = int(problem.worker_type[k])
        jobs = allowed[g]
        jobs = jobs[(n[jobs] < problem.max_workers[jobs]) & (room.left[room.row[jobs], g] > 0)]
        if jobs.size:
            i = int(jobs[rng.integers(jobs.size)])
            worker_job[k] = i
            n[i] += 1
            room.left[room.row[i], g] -= 1
    return worker_job


def _greedy_quota(problem):
    """:func:`greedy_placement` within the quotas (docs/model.md §1.7).

    The seed is :func:`_seed_quota`; then each step gives the job whose JCT
    drops most (ties: the lower index) its fastest free worker its tenant has
    room for, priced by ``problem.size_cost`` (with a topology the top level's
    communication), and stops when no drop is left.  A job's candidate class
    stays its best while it is usable (classes only ever become unusable), so
    after a step only the job that grew and the jobs whose candidate ran out
    -- of free workers, or of their tenant's room for its type -- are priced
    again: the same choices as pricing every job at every step.
    """
    S = problem.n_jobs
    cost = problem.size_cost
    worker_job = _seed_quota(problem, np.argsort(-problem.work, kind="stable"))
    busy = np.flatnonzero(worker_job >= 0)
    X = np.bincount(worker_job[busy], weights=problem._rate(worker_job[busy], busy), minlength=S).astype(np.float64)
    n = np.bincount(worker_job[busy], minlength=S)
    room = _Room(problem, worker_job, _Pool(problem, worker_job))
    value, ctype = room.pool.value, room.pool.ctype
    cand = np.full(S, -1, dtype=np.int64)
    gain = np.full(S, -np.inf)

    def update(jobs):
        c = room.best(jobs)
        cand[jobs] = c
        has = c >= 0
        i = jobs[has]
        g = np.full(jobs.size, -np.inf)
        g[has] = job_time(problem, i, X[i], n[i], cost) - job_time(problem, i, X[i] + value[i, c[has]], n[i] + 1, cost)
        gain[jobs] = g

    update(np.arange(S))
    while True:
        i = int(np.argmax(gain))
        if not gain[i] > 0:
            return worker_job
        c = int(cand[i])
        room.take(worker_job, i, c)
        X[i] += value[i, c]
        n[i] += 1
        stale = cand == c if room.pool.free()[c] == 0 else np.zeros(S, dtype=bool)
        if room.left[room.row[i], ctype[c]] == 0:  # the tenant's room for the type ran out
            stale |= (room.row == room.row[i]) & (cand >= 0) & (ctype[np.maximum(cand, 0)] == ctype[c])
        stale[i] = True
        update(np.flatnonzero(stale))
