"""Slow, obviously-correct pure-Python references for the kernels (used by the tests).

Each reference follows docs/model.md literally and favours clarity over speed.
Other sections of this file may be added by other modules' authors.
"""
import itertools
import math

import numpy as np
import pytest

# =============================================================================
# Exact methods (hetplace.exact): brute force and type DP
# =============================================================================


def mean_jct_reference(problem, worker_job):
    """Mean JCT of ``worker_job`` straight from docs/model.md §1.2 (inf if infeasible)."""
    S = problem.n_jobs
    total = 0.0
    for i in range(S):
        workers = [k for k, j in enumerate(worker_job) if j == i]
        if not workers:
            return math.inf
        X = 0.0
        for k in workers:
            if not getattr(problem, "available", np.ones(problem.n_workers, dtype=bool))[k]:
                return math.inf  # a down worker runs no job (Problem(available=))
            r = problem.throughput[i, problem.worker_type[k]] * problem.worker_speed[k]
            if r <= 0:
                return math.inf
            X += r
        n = len(workers)
        if n > problem.batch[i]:
            return math.inf  # a worker beyond the batch's samples gets none (docs/model.md §1)
        if not problem.min_workers[i] <= n <= problem.max_workers[i]:
            return math.inf  # outside the job's size bounds (Problem(min_workers=, max_workers=))
        t_c = problem.batch[i] / X
        t_m = 0.0
        b = link_bandwidth_reference(problem, workers)
        if n > 1 and math.isfinite(b):
            t_m = 2.0 * (n - 1) / n * problem.grad_bytes[i] / b
        total += problem.iterations[i] * (t_c + t_m)
    return total / S


def link_bandwidth_reference(problem, workers):
    """The bandwidth a ring over ``workers`` runs at (docs/model.md §1.6), from the definition.

    Without a topology: ``problem.bandwidth``.  With one: the node's bandwidth
    when every worker is in one node, else the rack's when every node is in one
    rack, else ``problem.bandwidth``.
    """
    topo = getattr(problem, "topology", None)
    if topo is None:
        return problem.bandwidth
    nodes = {int(topo.node[k]) for k in workers}
    if len(nodes) == 1:
        return float(topo.node_bandwidth[nodes.pop()])
    if topo.rack is not None:
        racks = {int(topo.rack[v]) for v in nodes}
        if len(racks) == 1:
            return float(topo.rack_bandwidth[racks.pop()])
    return problem.bandwidth


def restarted_reference(problem, worker_job):
    """(S,) bool from the definition: a running job whose set of workers differs from its current set."""
    worker_job = np.asarray(worker_job)
    out = np.zeros(problem.n_jobs, dtype=bool)
    for i in range(problem.n_jobs):
        now = set(np.flatnonzero(problem.current == i).tolist())
        out[i] = bool(now) and now != set(np.flatnonzero(worker_job == i).tolist())
    return out


def objective_reference(problem, worker_job):
    """Mean of ``JCT_i + restart_time_i * restarted_i`` (inf if infeasible), from the definitions."""
    value = mean_jct_reference(problem, worker_job)
    lost = np.where(restarted_reference(problem, worker_job), problem.restart_time, 0.0)
    return value + float(lost.sum()) / problem.n_jobs


def weighted_objective_reference(problem, worker_job):
    """``sum_i w_i (JCT_i + restart loss_i) / sum_i w_i`` (inf if infeasible), job by job from the definitions.

    ``w`` is ``problem.weight`` (all 1 when None): docs/model.md §1.5.
    """
    S = problem.n_jobs
    w = np.ones(S) if problem.weight is None else problem.weight
    lost = np.where(restarted_reference(problem, worker_job), problem.restart_time, 0.0)
    total = 0.0
    for i in range(S):
        # job i alone: a one-job view of the same definitions (mean_jct_reference over one job)
        jct = _job_jct_reference(problem, worker_job, i)
        if not math.isfinite(jct):
            return math.inf
        total += w[i] * (jct + lost[i])
    return total / float(np.sum(w))


def _job_jct_reference(problem, worker_job, i):
    """Job ``i``'s JCT without restart loss from docs/model.md §1.2 (inf if infeasible)."""
    workers = [k for k, j in enumerate(worker_job) if j == i]
    if not workers or not problem.min_workers[i] <= len(workers) <= problem.max_workers[i]:
        return math.inf
    X = 0.0
    for k in workers:
        r = problem.throughput[i, problem.worker_type[k]] * problem.worker_speed[k]
        if not problem.available[k] or r <= 0:
            return math.inf
        X += r
    n = len(workers)
    t_m = 0.0
    b = link_bandwidth_reference(problem, workers)
    if n > 1 and math.isfinite(b):
        t_m = 2.0 * (n - 1) / n * problem.grad_bytes[i] / b
    return problem.iterations[i] * (problem.batch[i] / X + t_m)


def brute_force_reference(problem, objective=None):
    """Best ``(value, worker_job)`` over all ``(S+1)**K`` assignments (itertools.product).

    ``objective(problem, assignment)`` defaults to :func:`objective_reference`
    (the mean JCT, plus restart losses when the problem has a running placement).
    """
    objective = objective or objective_reference
    best, arg = math.inf, None
    for assignment in itertools.product(range(-1, problem.n_jobs), repeat=problem.n_workers):
        value = objective(problem, assignment)
        if value < best:
            best, arg = value, np.array(assignment, dtype=np.int64)
    return best, arg


def _count_vectors(type_counts):
    return itertools.product(*(range(m + 1) for m in type_counts))


def type_dp_reference(problem):
    """Optimal mean JCT over type-count matrices ``y[i, g]`` (all worker speeds 1).

    Plain recursion over jobs with memoisation on the vector of workers still
    free per type: ``best(i, free) = min_y cost_i(y) + best(i+1, free - y)``.
    Returns ``(mean_jct, y)`` with ``y`` of shape (S, G).
    """
    S, G = problem.n_jobs, problem.n_types

    def cost(i, y):
        n = sum(y)
        if n == 0 or not problem.min_workers[i] <= n <= problem.max_workers[i]:
            return math.inf
        X = 0.0
        for g in range(G):
            if y[g]:
                if problem.throughput[i, g] <= 0:
                    return math.inf
                X += y[g] * problem.throughput[i, g]
        return problem.work[i] / X + problem.comm_time[i, n]

    memo = {}

    def best(i, free):
        if i == S:
            return 0.0, ()
        key = (i, free)
        if key not in memo:
            value, plan = math.inf, None
            for y in _count_vectors(free):
                c = cost(i, y)
                if c == math.inf:
                    continue
                rest, rest_plan = best(i + 1, tuple(f - v for f, v in zip(free, y)))
                if c + rest < value:
                    value, plan = c + rest, (y,) + rest_plan
            memo[key] = (value, plan)
        return memo[key]

    total, plan = best(0, tuple(int(m) for m in problem.type_counts))
    return total / S, np.array(plan, dtype=np.int64)


# =============================================================================
# (end of the exact-methods section)
# =============================================================================


# =============================================================================
# Categories and counter-based RNG (hetplace.categories): written from the
# definitions in docs/model.md §3.2 / §3.10, independently of the kernels.
# =============================================================================

_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def categories_reference(n_workers, n_jobs, exact=True):
    """All categories as a sorted list of tuples (via cut-point subsets).

    ``exact=True``: the (S-1)-subsets of cut points in {1..K-1};
    ``exact=False``: the S-subsets of {1..K} (the last cut is the number of
    workers used).  Sorted lexicographically, i.e. in rank order.
    """
    K, S = n_workers, n_jobs
    cats = []
    if exact:
        for cuts in itertools.combinations(range(1, K), S - 1):
            bounds = (0,) + cuts + (K,)
            cats.append(tuple(bounds[i + 1] - bounds[i] for i in range(S)))
    else:
        for cuts in itertools.combinations(range(1, K + 1), S):
            bounds = (0,) + cuts
            cats.append(tuple(bounds[i + 1] - bounds[i] for i in range(S)))
    return sorted(cats)


def splitmix64_reference(x):
    """SplitMix64 output function, step by step as published."""
    x = (x + _GAMMA) & _MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def rand_u64_reference(seed, stream, counter):
    """The ``counter``-th output of a stateful SplitMix64 generator seeded with
    ``splitmix64(seed ^ (stream * 0xD1B54A32D192ED03))`` (counter small)."""
    state = splitmix64_reference(seed ^ ((stream * 0xD1B54A32D192ED03) & _MASK64))
    out = None
    for _ in range(counter + 1):
        out = splitmix64_reference(state)  # output mixes state + gamma ...
        state = (state + _GAMMA) & _MASK64  # ... then the state advances by gamma
    return out


def algorithm_l_reference(items, n_samples, uniform_open, below):
    """Algorithm L (Li 1994) over an explicit list, as in the paper's pseudocode.

    ``uniform_open()`` returns the next uniform draw in (0, 1) and
    ``below(n)`` the next integer in [0, n) from the same counter sequence.
    Returns the reservoir (slot order).
    """
    k = n_samples
    reservoir = list(items[:k])
    W = math.exp(math.log(uniform_open()) / k)
    i = k - 1
    while True:
        q = math.log(uniform_open()) / math.log1p(-W)
        if q >= len(items) - i - 1:
            break
        i += math.floor(q) + 1
        reservoir[below(k)] = items[i]
        W = W * math.exp(math.log(uniform_open()) / k)
    return reservoir


def floyd_category_reference(below, n_workers, n_jobs, exact):
    """A uniform category by Floyd's subset algorithm with a Python set (Bentley & Floyd 1987).

    Cut points: an (S-1)-subset of {1..K-1} (``exact``) or an S-subset of
    {1..K}: for j = n-m+1..n, t = 1 + ``below(j)``; j is taken if t already
    is, else t.  The sorted cut points give the sizes.
    """
    K, S = n_workers, n_jobs
    n, m = (K - 1, S - 1) if exact else (K, S)
    chosen = set()
    for j in range(n - m + 1, n + 1):
        t = 1 + below(j)
        chosen.add(j if t in chosen else t)
    cuts = [0] + sorted(chosen) + ([K] if exact else [])
    return tuple(b - a for a, b in zip(cuts, cuts[1:]))


def weighted_enum_reference(categories, base, centre, spread, n_samples, uniform_open):
    """Efraimidis-Spirakis A-Res over an explicit list of categories, as a sort.

    Candidate r gets the key ``log(-log u_r) + d_r**2 / (2 spread**2)``
    (``u_r = uniform_open(r)``, ``d_r`` the RMS log-ratio distance to
    ``centre``, ``base`` the key ``-inf``); the ``n_samples`` smallest keys win,
    ties to the earlier candidate.  Returns them in that order.
    """
    keys = []
    for r, cat in enumerate(categories):
        u = uniform_open(r)
        if tuple(cat) == tuple(base):
            keys.append((-math.inf, r))
            continue
        acc = 0.0
        for v, c in zip(cat, centre):
            e = math.log(float(v)) - math.log(c)
            acc += e * e
        d = math.sqrt(acc / len(centre))
        keys.append((math.log(-math.log(u)) + d * d * (1.0 / (2.0 * spread * spread)), r))
    return [tuple(categories[r]) for _, r in sorted(keys)[:n_samples]]


# =============================================================================
# (end of the categories section)
# =============================================================================


# =============================================================================
# Polish (local search): slow, obvious neighbourhood scan by full re-evaluation
# =============================================================================


def neighbours_reference(problem, worker_job):
    """Every placement one move or one swap away from ``worker_job`` (feasible ones only)."""
    import numpy as np

    wj = np.asarray(worker_job)
    K, S = problem.n_workers, problem.n_jobs
    rho = problem.worker_throughput
    out = []
    for k in range(K):
        for b in range(-1, S):
            if b != wj[k]:
                cand = wj.copy()
                cand[k] = b
                out.append(cand)
        for l in range(k + 1, K):
            if wj[k] != wj[l]:
                cand = wj.copy()
                cand[k], cand[l] = wj[l], wj[k]
                out.append(cand)
    good = []
    for cand in out:
        busy = cand >= 0
        if np.bincount(cand[busy], minlength=S).min() == 0:
            continue
        if (rho[cand[busy], np.flatnonzero(busy)] <= 0).any():
            continue
        good.append(cand)
    return good


def is_local_optimum_reference(problem, worker_job, rel=1e-9):
    """No single move or swap lowers the mean JCT by more than ``rel`` (relative)."""
    here = mean_jct_reference(problem, worker_job)
    return all(mean_jct_reference(problem, c) >= here * (1 - rel) for c in neighbours_reference(problem, worker_job))


# =============================================================================
# Matching markets (hetplace.matching): exact assignment via SciPy, textbook
# Gale-Shapley, blocking pairs and stable matchings by brute force, and the
# iterated linearised market of docs/model.md §3.3 on top of them.
# =============================================================================


def _acceptable(values, allowed=None):
    values = np.asarray(values, dtype=float)
    return np.isfinite(values) if allowed is None else np.asarray(allowed, dtype=bool)


def assignment_optimum_reference(values, capacities, allowed=None):
    """Best total value with job i taking exactly capacities[i] workers (None if impossible).

    Slot-expanded matrix (one row per slot) solved by SciPy's exact
    ``linear_sum_assignment``; forbidden pairs are -inf; surplus workers idle.
    """
    linear_sum_assignment = pytest.importorskip("scipy.optimize").linear_sum_assignment  # a test extra

    ok = _acceptable(values, allowed)
    v = np.where(ok, np.asarray(values, dtype=float), -np.inf)
    rows = np.repeat(np.arange(v.shape[0]), np.asarray(capacities, dtype=int))
    if rows.size == 0:
        return 0.0
    try:
        r, c = linear_sum_assignment(v[rows], maximize=True)
    except ValueError:  # "cost matrix is infeasible"
        return None
    total = v[rows][r, c].sum()
    return None if not np.isfinite(total) else float(total)


def default_worker_rank_reference(values, allowed=None):
    """values[i, k] / (mean of job i's acceptable values), raw values when that mean <= 0."""
    ok = _acceptable(values, allowed)
    v = np.asarray(values, dtype=float)
    out = np.zeros(v.shape)
    for i in range(v.shape[0]):
        acc = [v[i, k] for k in range(v.shape[1]) if ok[i, k]]
        mean = sum(acc) / len(acc) if acc else 0.0
        for k in range(v.shape[1]):
            if ok[i, k]:
                out[i, k] = v[i, k] / mean if mean > 0 else v[i, k]
    return out


def _job_prefers(values, i, k, other):
    """Job i strictly prefers worker k to worker other (value, then lower index)."""
    return (values[i][k], -k) > (values[i][other], -other)


def _worker_prefers(rank, k, i, other):
    """Worker k strictly prefers job i to job other (rank, then lower index)."""
    return (rank[i][k], -i) > (rank[other][k], -other)


def blocking_pairs_reference(values, capacities, worker_job, worker_rank, allowed=None):
    """Every blocking pair (i, k), straight from the definition in ``is_stable``.

    Returns ``None`` when a worker holds an unacceptable job (not individually
    rational), else the list of blocking pairs.
    """
    ok = _acceptable(values, allowed)
    v = np.asarray(values, dtype=float).tolist()
    rank = np.asarray(worker_rank, dtype=float).tolist()
    S, K = len(v), len(v[0])
    members = [[k for k in range(K) if worker_job[k] == i] for i in range(S)]
    if any(worker_job[k] >= 0 and not ok[worker_job[k], k] for k in range(K)):
        return None
    pairs = []
    for i in range(S):
        for k in range(K):
            if not ok[i, k] or worker_job[k] == i:
                continue
            job_side = len(members[i]) < capacities[i] or any(
                _job_prefers(v, i, k, other) for other in members[i]
            )
            cur = worker_job[k]
            worker_side = cur < 0 or _worker_prefers(rank, k, i, cur)
            if job_side and worker_side:
                pairs.append((i, k))
    return pairs


def stable_matchings_reference(values, capacities, worker_rank, allowed=None):
    """All stable matchings (tuples of job per worker) by enumerating (S+1)**K maps."""
    S, K = np.asarray(values).shape
    out = []
    for wj in itertools.product(range(-1, S), repeat=K):
        counts = [wj.count(i) for i in range(S)]
        if any(counts[i] > capacities[i] for i in range(S)):
            continue
        if blocking_pairs_reference(values, capacities, wj, worker_rank, allowed) == []:
            out.append(wj)
    return out


def gale_shapley_reference(values, capacities, worker_rank, allowed=None):
    """Textbook job-proposing deferred acceptance; returns the job of every worker."""
    ok = _acceptable(values, allowed)
    v = np.asarray(values, dtype=float).tolist()
    rank = np.asarray(worker_rank, dtype=float).tolist()
    S, K = len(v), len(v[0])
    prefs = [sorted((k for k in range(K) if ok[i, k]), key=lambda k: (-v[i][k], k)) for i in range(S)]
    nxt = [0] * S
    held = [[] for _ in range(S)]
    holder = [-1] * K
    free = [i for i in range(S) if capacities[i] > 0]
    while free:
        i = free.pop(0)
        while len(held[i]) < capacities[i] and nxt[i] < len(prefs[i]):
            k = prefs[i][nxt[i]]
            nxt[i] += 1
            cur = holder[k]
            if cur < 0 or _worker_prefers(rank, k, i, cur):
                if cur >= 0:
                    held[cur].remove(k)
                    if cur not in free:
                        free.append(cur)
                holder[k] = i
                held[i].append(k)
    return holder


def market_category_reference(rho, work, comm_time, sizes, form="price", max_rounds=8):
    """docs/model.md §3.3 literally: iterate linearised valuations, solve each market exactly.

    Price form: SciPy's exact assignment on the slot-expanded matrix of
    ``a_i * rho[i, k]`` with ``a_i = work[i] / (X_i * X_i)``.  Ordinal form:
    :func:`gale_shapley_reference` with jobs ranking by ``rho`` and workers by
    ``rho[i, k] / mean_k rho[i, k]``.  Returns ``(total_jct, worker_job, rounds)``.
    """
    linear_sum_assignment = pytest.importorskip("scipy.optimize").linear_sum_assignment  # a test extra

    rho = np.asarray(rho, dtype=float)
    S, K = rho.shape
    sizes = [int(n) for n in sizes]

    def true_total(wj):
        total = 0.0
        for i in range(S):
            ws = [k for k in range(K) if wj[k] == i]
            if not ws:
                return math.inf
            X = sum(rho[i, k] for k in ws)
            total += work[i] / X + comm_time[i][len(ws)]
        return total

    X = [sizes[i] * (sum(rho[i].tolist()) / K) for i in range(S)]
    best, best_wj, prev = math.inf, None, None
    rounds = 0
    for r in range(max_rounds):
        rounds += 1
        if form == "price":
            a = [work[i] / (X[i] * X[i]) for i in range(S)]
            v = np.where(rho > 0, np.array(a)[:, None] * rho, -np.inf)
            rows = np.repeat(np.arange(S), sizes)
            rr, cc = linear_sum_assignment(v[rows], maximize=True)
            wj = [-1] * K
            for slot, k in zip(rr, cc):
                wj[k] = int(rows[slot])
        else:
            mean = rho.sum(axis=1) / K
            rank = rho / mean[:, None]
            wj = gale_shapley_reference(np.where(rho > 0, rho, -np.inf), sizes, rank)
        total = true_total(wj)
        if r == 0 or total < best:
            best, best_wj = total, list(wj)
        if form != "price" or prev == wj:
            break
        prev = list(wj)
        X = [sum(rho[i, k] for k in range(K) if wj[k] == i) for i in range(S)]
    return best, np.array(best_wj, dtype=np.int64), rounds


# =============================================================================
# (end of the matching section)
# =============================================================================


# =============================================================================
# Baselines (hetplace.baselines): the worker-level rules, one worker at a time
# =============================================================================


def _fastest_free_reference(problem, worker_job, i):
    """Job i's fastest free worker it can run on (ties to the lower index), or -1."""
    rho = problem.worker_throughput
    cand = np.flatnonzero((worker_job < 0) & (rho[i] > 0))
    return int(cand[np.argmax(rho[i, cand])]) if cand.size else -1


def _seed_reference(problem, order):
    """Rounds over the jobs in ``order``, each taking one fastest free worker until it has its
    ``min_workers``; the baselines' matching (or flow) seed when one is stranded."""
    from hetplace.baselines import _seed_by_flow, _seed_by_matching

    worker_job = np.full(problem.n_workers, -1, dtype=np.int64)
    have = np.zeros(problem.n_jobs, dtype=np.int64)
    for _ in range(int(problem.min_workers.max())):
        for i in order:
            if have[i] >= problem.min_workers[i]:
                continue
            k = _fastest_free_reference(problem, worker_job, i)
            if k < 0:
                return _seed_by_matching(problem) if (problem.min_workers == 1).all() else _seed_by_flow(problem)
            worker_job[k] = i
            have[i] += 1
    return worker_job


def equal_placement_reference(problem):
    """Equal sizing, worker by worker: rounds over the jobs (biggest first), each taking its fastest free worker.

    Targets ``K // S`` (+1 for the first ``K % S`` jobs in that order), capped at ``max_workers``.
    """
    S, K = problem.n_jobs, problem.n_workers
    order = np.argsort(-problem.work, kind="stable")
    worker_job = _seed_reference(problem, order)
    sizes = np.full(S, K // S)
    sizes[: K % S] += 1
    targets = np.minimum(sizes[np.argsort(order, kind="stable")], problem.max_workers)
    targets = np.maximum(targets, problem.min_workers)
    have = np.bincount(worker_job[worker_job >= 0], minlength=S)
    progress = True
    while progress:
        progress = False
        for i in order:
            if have[i] >= targets[i]:
                continue
            k = _fastest_free_reference(problem, worker_job, i)
            if k >= 0:
                worker_job[k] = i
                have[i] += 1
                progress = True
    return worker_job


def random_placement_reference(problem, rng):
    """Random placement, worker by worker: each free worker (random order) to a random allowed job below max_workers."""
    S = problem.n_jobs
    rho = problem.worker_throughput
    worker_job = _seed_reference(problem, rng.permutation(S))
    n = np.bincount(worker_job[worker_job >= 0], minlength=S)
    for k in rng.permutation(np.flatnonzero(worker_job < 0)):
        jobs = np.flatnonzero((rho[:, k] > 0) & (n < problem.max_workers))
        if jobs.size:
            i = jobs[rng.integers(jobs.size)]
            worker_job[k] = i
            n[i] += 1
    return worker_job


def greedy_placement_reference(problem):
    """Greedy marginal gain, every job's candidate re-scanned every step (cost of n workers: size_cost)."""
    S = problem.n_jobs
    rho = problem.worker_throughput
    worker_job = _seed_reference(problem, np.argsort(-problem.work, kind="stable"))
    busy = np.flatnonzero(worker_job >= 0)
    X = np.bincount(worker_job[busy], weights=rho[worker_job[busy], busy], minlength=S)
    n = np.bincount(worker_job[busy], minlength=S)
    while True:
        best_gain, best_i, best_k = 0.0, -1, -1
        for i in range(S):
            k = _fastest_free_reference(problem, worker_job, i)
            if k < 0:
                continue
            before = problem.work[i] / X[i] + problem.size_cost[i, n[i]]
            after = problem.work[i] / (X[i] + rho[i, k]) + problem.size_cost[i, n[i] + 1]
            if before - after > best_gain:
                best_gain, best_i, best_k = before - after, i, k
        if best_i < 0:
            return worker_job
        worker_job[best_k] = best_i
        X[best_i] += rho[best_i, best_k]
        n[best_i] += 1


# =============================================================================
# SMP: sampled sizes fitted to the per-job limits (hetplace.smp.fit_sizes)
# =============================================================================


def fit_sizes_reference(cats, max_workers, min_workers=None, n_workers=None):
    """Row by row, one worker at a time: clip, then hand each clipped worker to the job with
    room whose share ``surplus * n_j / sum(n with room)`` has the largest remainder -- the same
    rule as ``fit_sizes``, written as a loop over rows and rounds."""
    out = np.array(cats, dtype=np.int64)
    mw = np.asarray(max_workers, dtype=np.int64)
    for r in range(out.shape[0]):
        if not (out[r] > mw).any():
            continue
        n = np.minimum(out[r], mw)
        surplus = int(out[r].sum() - n.sum())
        while surplus > 0 and (mw - n).any():
            room = mw - n
            weight = [float(n[j]) if room[j] > 0 else 0.0 for j in range(n.size)]
            if not any(weight):
                weight = [1.0 if room[j] > 0 else 0.0 for j in range(n.size)]
            ideal = [surplus * w / sum(weight) for w in weight]
            add = [min(int(math.floor(x)), int(room[j])) for j, x in enumerate(ideal)]
            rest = surplus - sum(add)
            for j in sorted(range(n.size), key=lambda j: (-(ideal[j] - math.floor(ideal[j])), j)):
                if rest > 0 and room[j] - add[j] > 0:
                    add[j] += 1
                    rest -= 1
            n = n + np.array(add, dtype=np.int64)
            surplus -= sum(add)
        out[r] = n
    if min_workers is None:
        return out
    lo = np.asarray(min_workers, dtype=np.int64)
    for r in range(out.shape[0]):
        n = [int(v) for v in out[r]]
        idle = (n_workers - sum(n)) if n_workers is not None else 0
        for j in range(len(n)):
            while n[j] < lo[j]:  # one worker at a time: an idle one, else one from the largest excess
                n[j] += 1
                if idle > 0:
                    idle -= 1
                    continue
                excess = [n[t] - lo[t] for t in range(len(n))]
                if max(excess) <= 0:
                    continue  # nobody can give (only without n_workers)
                donor = max(range(len(n)), key=lambda t: (excess[t], t))  # ties: the higher index gives
                n[donor] -= 1
        out[r] = n
    return out


# =============================================================================
# Lower bound (hetplace.bound): the configuration LP with every column, and its pricing
# =============================================================================


def pricing_reference(r, a, coef, lo, hi, m, pi):
    """``min_n a / (r . n) + comm(sum n) + pi . n`` over every integer count vector, by enumeration.

    ``r``, ``m``, ``pi`` are one job's rates, the class capacities and prices (classes
    with ``r == 0`` take no worker); ``comm(N) = coef * 2 (N-1)/N`` for ``N >= 2``.
    Returns (minimum, argmin as a tuple), ``(inf, None)`` when no vector fits ``[lo, hi]``.
    """
    best, arg = math.inf, None
    for n in _count_vectors([int(c) if r[k] > 0 else 0 for k, c in enumerate(m)]):
        N = sum(n)
        if not lo <= N <= hi:
            continue
        X = sum(nc * rc for nc, rc in zip(n, r))
        v = a / X + (coef * 2 * (N - 1) / N if N >= 2 else 0.0) + sum(nc * pc for nc, pc in zip(n, pi))
        if v < best:
            best, arg = v, tuple(n)
    return best, arg


def config_lp_reference(problem):
    """Value (mean JCT) of the configuration LP with EVERY column, solved by GLOP in one go.

    Classes: available workers of one type and one speed.  Column (i, n): every
    count vector within job i's size bounds using only classes it can run on,
    priced at its exact JCT plus its restart loss unless ``n`` equals its current
    counts and it can keep them (docs/model.md §4.9).  For tiny problems only.
    """
    from ortools.linear_solver import pywraplp

    order, starts, _ = problem.worker_classes
    groups = [order[a:b] for a, b in zip(starts[:-1], starts[1:]) if problem.class_speed[order[a]] > 0]
    rates = [[problem.throughput[i, problem.worker_type[g[0]]] * problem.class_speed[g[0]] for g in groups]
             for i in range(problem.n_jobs)]
    cur = [[sum(1 for k in g if problem.current[k] == i) for g in groups] for i in range(problem.n_jobs)]
    solver = pywraplp.Solver.CreateSolver("GLOP")
    conv = [solver.Constraint(1, 1) for _ in range(problem.n_jobs)]
    cap = [solver.Constraint(-solver.infinity(), len(g)) for g in groups]
    obj = solver.Objective()
    for i in range(problem.n_jobs):
        for n in _count_vectors([len(g) for g in groups]):
            N = sum(n)
            if not problem.min_workers[i] <= N <= problem.max_workers[i]:
                continue
            if any(nc > 0 and rates[i][c] == 0 for c, nc in enumerate(n)):
                continue
            X = sum(nc * rc for nc, rc in zip(n, rates[i]))
            cost = problem.work[i] / X + problem.comm_coef[i] * (2 * (N - 1) / N if N >= 2 else 0.0)
            if not (problem.can_keep[i] and list(n) == cur[i]):
                cost += problem.restart_cost[i]
            x = solver.NumVar(0, solver.infinity(), "")
            conv[i].SetCoefficient(x, 1)
            for c, nc in enumerate(n):
                if nc:
                    cap[c].SetCoefficient(x, nc)
            obj.SetCoefficient(x, cost / problem.n_jobs)
    obj.SetMinimization()
    assert solver.Solve() == pywraplp.Solver.OPTIMAL
    return obj.Value()
