"""Feasible placements that the exact methods and the lower bound start from (private).

One source for both :mod:`hetplace.exact` and :mod:`hetplace.bound`, below them in the
import graph: the greedy incumbent trimmed to ``max_workers`` and SMP's placement (seed 0).
"""
import numpy as np

from .placement import Placement, evaluate, is_feasible

__all__ = ["_incumbent", "_trimmed", "_smp_seed0"]


def _incumbent(problem):
    """A feasible placement to start from: the greedy baseline, trimmed to ``max_workers``.

    Every valid Problem has one (it validates coverability), so this is the
    witness against any "infeasible" claim, the upper bound that prunes the MILP
    and the cross-check of every "optimal" one.  With running jobs the
    keep-greedy baseline (every job that can keeps its workers, the others
    are placed greedily on the rest) is tried too and the better one returned.
    """
    from .baselines import greedy_placement, keep_greedy_placement

    best = _trimmed(problem, greedy_placement(problem))
    if problem.replacing:
        kept = _trimmed(problem, keep_greedy_placement(problem))
        if kept.mean_jct < best.mean_jct:
            best = kept
    return best


def _trimmed(problem, worker_job):
    """``worker_job`` with every job cut to its ``max_workers`` fastest workers, evaluated."""
    worker_job = np.array(worker_job, dtype=np.int64)
    rho = problem.worker_throughput
    for i in np.flatnonzero(np.bincount(worker_job[worker_job >= 0], minlength=problem.n_jobs)
                            > problem.max_workers):
        mine = np.flatnonzero(worker_job == i)
        slow = mine[np.argsort(-rho[i, mine], kind="stable")][int(problem.max_workers[i]):]
        worker_job[slow] = -1  # keep the job's max_workers fastest workers
    return evaluate(problem, worker_job, method="exact")


def _smp_seed0(problem):
    """SMP's placement of ``problem`` with its defaults and seed 0 (``place(problem, "smp", seed=0)``'s).

    With a binding tenant quota (docs/model.md §1.7) it is checked: None when
    SMP refuses the problem or its placement exceeds a quota, so no caller
    starts from (or returns) a placement outside the quotas.
    """
    from .errors import HetplaceError
    from .smp import smp_place

    if not problem.has_quota:
        worker_job, info = smp_place(problem, seed=0)
        return Placement(problem, np.ascontiguousarray(worker_job, dtype=np.int64), method="smp", info=info)
    try:
        worker_job, info = smp_place(problem, seed=0)
    except HetplaceError:
        return None
    worker_job = np.ascontiguousarray(worker_job, dtype=np.int64)
    if not is_feasible(problem, worker_job):
        return None
    return Placement(problem, worker_job, method="smp", info=info)
