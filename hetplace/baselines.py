"""Baseline placements users compare against (MODEL.md section 4).

Each function takes a validated :class:`~hetplace.Problem` and returns a
``worker_job`` array; :func:`hetplace.place` wraps them.
"""

import numpy as np

__all__ = ["equal_sizes", "equal_placement", "random_placement", "greedy_placement"]


def _seed_jobs(problem, order):
    """One distinct allowed worker per job, jobs served in ``order``.

    Each job takes its fastest free worker; when that would strand a later job
    (Hall's condition), the type-level matching of the problem decides instead.
    """
    K = problem.n_workers
    rho = problem.worker_throughput
    worker_job = np.full(K, -1, dtype=np.int64)
    for i in order:
        cand = np.flatnonzero((worker_job < 0) & (rho[i] > 0))
        k = cand[np.argmax(rho[i, cand])] if cand.size else -1
        if k < 0:
            return _seed_by_matching(problem)
        worker_job[k] = i
    return worker_job


def _seed_by_matching(problem):
    """One worker per job from a bipartite matching of jobs to workers (always exists)."""
    S, K = problem.n_jobs, problem.n_workers
    rho = problem.worker_throughput
    owner = np.full(K, -1, dtype=np.int64)

    def augment(i, seen):
        for k in np.argsort(-rho[i], kind="stable"):
            if rho[i, k] <= 0 or seen[k]:
                continue
            seen[k] = True
            if owner[k] < 0 or augment(owner[k], seen):
                owner[k] = i
                return True
        return False

    for i in range(S):
        augment(i, np.zeros(K, dtype=bool))
    return owner


def equal_sizes(n_workers, n_jobs):
    """Job sizes as equal as possible: ``K // S`` each, the first ``K % S`` jobs one more."""
    sizes = np.full(n_jobs, n_workers // n_jobs, dtype=np.int64)
    sizes[: n_workers % n_jobs] += 1
    return sizes


def _fill(problem, worker_job, targets, order):
    """Round-robin: each job in ``order`` takes its fastest free worker until it reaches its target."""
    rho = problem.worker_throughput
    have = np.bincount(worker_job[worker_job >= 0], minlength=problem.n_jobs)
    progress = True
    while progress:
        progress = False
        for i in order:
            if have[i] >= targets[i]:
                continue
            cand = np.flatnonzero((worker_job < 0) & (rho[i] > 0))
            if cand.size == 0:
                continue
            k = cand[np.argmax(rho[i, cand])]
            worker_job[k] = i
            have[i] += 1
            progress = True
    return worker_job


def equal_placement(problem):
    """Equal sizing: n_i ~ K/S, biggest jobs pick their fastest free workers first, round-robin."""
    order = np.argsort(-problem.work, kind="stable")
    worker_job = _seed_jobs(problem, order)
    targets = equal_sizes(problem.n_workers, problem.n_jobs)[np.argsort(order, kind="stable")]
    return _fill(problem, worker_job, targets, order)


def random_placement(problem, rng):
    """Random placement: a random feasible seed, then every other worker to a random allowed job."""
    S = problem.n_jobs
    rho = problem.worker_throughput
    worker_job = _seed_jobs(problem, rng.permutation(S))
    for k in rng.permutation(np.flatnonzero(worker_job < 0)):
        jobs = np.flatnonzero(rho[:, k] > 0)
        if jobs.size:
            worker_job[k] = jobs[rng.integers(jobs.size)]
    return worker_job


def greedy_placement(problem):
    """Greedy marginal gain: give the next worker to the job whose JCT drops most.

    Starts from one fastest worker per job (biggest jobs first) and stops when
    no worker lowers any job's JCT, so workers may stay idle when communication
    makes them useless.
    """
    S = problem.n_jobs
    rho = problem.worker_throughput
    work, comm = problem.work, problem.comm_time
    worker_job = _seed_jobs(problem, np.argsort(-problem.work, kind="stable"))
    busy = np.flatnonzero(worker_job >= 0)
    X = np.bincount(worker_job[busy], weights=rho[worker_job[busy], busy], minlength=S)
    n = np.bincount(worker_job[busy], minlength=S)
    # each job's candidate workers, fastest first
    prefs = [np.argsort(-rho[i], kind="stable") for i in range(S)]
    ptr = np.zeros(S, dtype=np.int64)
    while True:
        best_gain, best_i, best_k = 0.0, -1, -1
        for i in range(S):
            p = prefs[i]
            while ptr[i] < p.size and (worker_job[p[ptr[i]]] >= 0):
                ptr[i] += 1
            if ptr[i] >= p.size:
                continue
            k = p[ptr[i]]
            if rho[i, k] <= 0:
                continue
            before = work[i] / X[i] + comm[i, n[i]]
            after = work[i] / (X[i] + rho[i, k]) + comm[i, n[i] + 1]
            gain = before - after
            if gain > best_gain:
                best_gain, best_i, best_k = gain, i, k
        if best_i < 0:
            return worker_job
        worker_job[best_k] = best_i
        X[best_i] += rho[best_i, best_k]
        n[best_i] += 1
