"""``place``: one entry point for every placement method."""

import time

import numpy as np

from . import baselines
from ._validation import check_choice, check_options, check_seed
from .errors import SolverError
from .placement import Placement, _check_problem

__all__ = ["place", "METHODS"]

#: Methods of :func:`place` and the options each takes.
METHODS = {
    "equal": (),
    "random": (),
    "greedy": (),
    "exact": ("exact_method", "solver", "time_limit", "threads"),
}


def place(problem, method="greedy", seed=None, **options):
    """Place every job of ``problem`` on the cluster.

    Parameters
    ----------
    problem : Problem
    method : str
        ``"equal"`` (equal sizes, biggest jobs pick fastest workers first),
        ``"random"`` (seeded random feasible placement), ``"greedy"``
        (marginal-gain), ``"exact"`` (proven optimum, see
        :func:`hetplace.solve_exact`).
    seed : int, optional
        Seed of randomised methods; the same seed gives the same placement.
    **options
        Method-specific options; ``"exact"`` takes ``exact_method``
        (``"auto"``, ``"dp"``, ``"milp"``, ``"brute"``), ``solver``,
        ``time_limit`` and ``threads``.  Unknown options are rejected.

    Returns
    -------
    Placement
        With ``method`` set and ``info["wall_time"]`` the decision time in seconds.

    Raises
    ------
    InvalidOptionError
        Unknown method or option.
    SolverError
        ``"exact"`` found no placement within its time limit.
    """
    _check_problem(problem)
    method = check_choice("method", method, tuple(METHODS))
    check_options(method, options, METHODS[method])
    seed = check_seed(seed)
    t0 = time.perf_counter()
    info = {}
    if method == "equal":
        worker_job = baselines.equal_placement(problem)
    elif method == "random":
        worker_job = baselines.random_placement(problem, np.random.default_rng(seed))
    elif method == "greedy":
        worker_job = baselines.greedy_placement(problem)
    else:  # exact
        from .exact import solve_exact

        kwargs = dict(options)
        kwargs["method"] = kwargs.pop("exact_method", "auto")
        res = solve_exact(problem, **kwargs)
        if res.placement is None:
            raise SolverError(f"method='exact' found no placement: {res.status} ({res.message}).")
        info.update(
            status=res.status, bound=res.bound, gap=res.gap, exact_method=res.method, solver=res.solver
        )
        worker_job = np.array(res.placement.worker_job)
    info["wall_time"] = time.perf_counter() - t0
    return Placement(problem, np.ascontiguousarray(worker_job, dtype=np.int64), method=method, info=info)
