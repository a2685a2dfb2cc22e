"""``place``: one entry point for every placement method."""

import time

import numpy as np

from . import baselines
from ._validation import check_choice, check_options, check_seed
from .errors import InvalidOptionError, SolverError
from .placement import Placement, _check_problem

__all__ = ["place", "METHODS"]

#: Methods of :func:`place` and the options each takes.
METHODS = {
    "equal": (),
    "random": (),
    "greedy": (),
    "keep-greedy": (),
    "exact": ("exact_method", "solver", "time_limit", "threads"),
    "auto": ("latency_budget",),
    "smp": ("samples", "sampling", "matching", "polish", "polish_top", "fairness_tol", "max_rounds", "spread",
            "speed_buckets", "backend", "threads", "restart_candidates", "time_limit"),
}


#: Default latency budget (seconds) of ``method="auto"``.
AUTO_LATENCY_BUDGET = 0.05
#: Seconds per type-DP transition, measured on the project's 2-core machine (docs/results.md
#: §5; ``pytest benchmarks/bench_exact.py -k auto_threshold``).
DP_SECONDS_PER_TRANSITION = 2.5e-9


def _auto_choice(problem, budget):
    """``"exact"`` when the type DP applies and its predicted time fits ``budget``, else ``"smp"``.

    "Applies" is what ``solve_exact(method="dp")`` accepts (every speed 1, state
    space and back-pointer table within its caps, no binding tenant quota), so
    a large ``budget`` never sends an oversized DP there: it falls back to SMP.
    With a binding quota (docs/model.md §1.7) :func:`place` checks SMP's
    placement and falls back to ``"greedy"`` (which honours quotas) when it
    exceeds a quota or SMP refuses the problem.
    """
    from .exact import _dp_refusal, dp_size

    if _dp_refusal(problem) is None:
        _, work = dp_size(problem)
        if work * DP_SECONDS_PER_TRANSITION <= budget:
            return "exact"
    return "smp"


def _auto_smp_within_quota(target, seed, info):
    """``method="auto"``'s SMP on a problem with a binding quota: its placement when within the quotas,
    else the greedy baseline's (``info["auto_choice"]`` then says ``"greedy"``)."""
    from ._quota import quota_violation
    from .errors import HetplaceError
    from .smp import smp_place

    try:
        worker_job, smp_info = smp_place(target, seed=seed)
    except HetplaceError:  # SMP refuses quotas it cannot honour
        worker_job = None
    if worker_job is not None and quota_violation(target, worker_job) is None:
        info.update(smp_info)
        return worker_job
    info["auto_choice"] = "greedy"
    return baselines.greedy_placement(target)


def place(problem, method: str = "auto", seed: "int | None" = None, **options) -> Placement:
    """Place every job of ``problem`` on the cluster.

    Parameters
    ----------
    problem : Problem
    method : str
        ``"auto"`` (default: the exact type DP when it applies and its
        predicted time fits ``latency_budget`` seconds, default 0.05, else
        ``"smp"``; with a binding tenant quota, ``"greedy"`` when SMP's
        placement exceeds a quota; ``info["auto_choice"]`` says which ran), ``"smp"``
        (sampling-based multi-job placement, see :mod:`hetplace.smp`),
        ``"equal"`` (equal sizes, biggest jobs pick fastest workers first),
        ``"random"`` (seeded random feasible placement), ``"greedy"``
        (marginal-gain), ``"keep-greedy"`` (re-placement baseline: running
        jobs keep their workers, the others are placed greedily), ``"exact"`` (proven optimum, see
        :func:`hetplace.solve_exact`).  Every method keeps each tenant within
        its quotas (``Problem(tenant=, quota=)``, docs/model.md §1.7, §3.14,
        §4.10); ``"exact"`` with ``exact_method="dp"`` or ``"pruned-dp"``
        refuses a binding quota.
    seed : int, optional
        Seed of randomised methods; the same seed gives the same placement.
    **options
        Method-specific options; ``"smp"`` takes ``samples``, ``sampling``,
        ``matching``, ``polish``, ``polish_top``, ``fairness_tol``,
        ``max_rounds``, ``spread``, ``speed_buckets``, ``backend``, ``threads``, ``restart_candidates``
        and ``time_limit`` (seconds: the market and the polish stop there and the best
        finished sample wins, ``info["time_limit_hit"]`` says so; the flat search only, not
        the topology or quota steps; see :data:`hetplace.smp.SMP_DEFAULTS`);
        ``"auto"`` takes ``latency_budget``; ``"exact"`` takes ``exact_method``
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
    method = check_choice("method", method, tuple(METHODS))  # auto: the DP's size is the same with weights
    check_options(method, options, METHODS[method])
    seed = check_seed(seed)
    t0 = time.perf_counter()
    info = {}
    if method == "auto":
        budget = options.pop("latency_budget", AUTO_LATENCY_BUDGET)
        from ._validation import is_real_scalar

        if not is_real_scalar(budget) or not float(budget) > 0:  # numpy floats too; not bool or complex
            raise InvalidOptionError(f"latency_budget must be a positive number of seconds; got {budget!r}.")
        method = _auto_choice(problem, float(budget))
        info["auto_choice"] = method
        if method == "exact":
            options = {"exact_method": "dp"}
    # with weights the methods place the unweighted problem whose mean JCT is the weighted
    # objective (up to a constant factor); solve_exact does the same itself (docs/model.md §1.5)
    target = problem.objective_problem
    if method == "equal":
        worker_job = baselines.equal_placement(target)
    elif method == "random":
        worker_job = baselines.random_placement(target, np.random.default_rng(seed))
    elif method == "greedy":
        worker_job = baselines.greedy_placement(target)
    elif method == "keep-greedy":
        worker_job = baselines.keep_greedy_placement(target)
    elif method == "smp" and info.get("auto_choice") == "smp" and problem.has_quota:
        worker_job = _auto_smp_within_quota(target, seed, info)
        method = info["auto_choice"]
    elif method == "smp":
        from .smp import smp_place

        worker_job, smp_info = smp_place(target, seed=seed, **options)
        info.update(smp_info)
    else:  # exact
        from .exact import solve_exact

        from .exact import METHODS as EXACT_METHODS

        kwargs = dict(options)
        exact_method = kwargs.pop("exact_method", "auto")
        if not isinstance(exact_method, str) or exact_method.strip().lower() not in EXACT_METHODS:
            raise InvalidOptionError(  # named as the caller passed it (solve_exact calls it method)
                f"exact_method must be one of {', '.join(repr(m) for m in EXACT_METHODS)}; got {exact_method!r}."
            )
        kwargs["method"] = exact_method
        res = solve_exact(problem, **kwargs)
        if res.placement is None:
            raise SolverError(f"method='exact' found no placement: {res.status} ({res.message}).")
        info.update(
            status=res.status, bound=res.bound, gap=res.gap, exact_method=res.method, solver=res.solver
        )
        worker_job = np.array(res.placement.worker_job)
    info["wall_time"] = time.perf_counter() - t0
    return Placement(problem, np.ascontiguousarray(worker_job, dtype=np.int64), method=method, info=info)
