"""hetplace: placement of data-parallel training jobs on heterogeneous GPU clusters.

Public API
----------
Problem, evaluate, Placement, is_feasible
    The placement model (docs/model.md §1).
place(problem, method=...)
    Baselines, exact and sampling-based placement.
solve_exact(problem, method="auto", ...)
    Exact optimum (type DP, OR-Tools MILP, brute force) with status, bound, gap.
lower_bound(problem, ...)
    A proven lower bound on the optimal mean JCT (configuration LP), to certify any placement.
Session(cluster, policy="smp", ...)
    The state a scheduler keeps between cycles: events, decisions with changes and reasons.
hetplace.balance
    LB-BSP semi-dynamic load balancing (import it explicitly).

Importing hetplace compiles nothing: Numba kernels compile (and cache) on first
use, Cython kernels are built at install time.  It registers one at-fork hook
(:mod:`hetplace._fork`), which marks a child forked after an OpenMP thread pool
started so that its decisions run serially (docs/model.md §3.12).
"""

from . import _fork  # noqa: F401  (registers the at-fork hook, before any fork)

from .errors import (
    BackendUnavailableError,
    HetplaceError,
    InvalidOptionError,
    InvalidPlacementError,
    InvalidProblemError,
    InvalidProblemTypeError,
    MissingDependencyError,
    SolverError,
)
from .api import place
from .placement import Placement, evaluate, is_feasible
from .problem import Problem

_LAZY = {
    "solve_exact": ("exact", "solve_exact"),
    "ExactResult": ("exact", "ExactResult"),
    "count_categories": ("categories", "count_categories"),
    "rank_category": ("categories", "rank_category"),
    "unrank_category": ("categories", "unrank_category"),
    "enumerate_categories": ("categories", "enumerate_categories"),
    "sample_categories": ("categories", "sample_categories"),
    "deferred_acceptance": ("matching", "deferred_acceptance"),
    "is_stable": ("matching", "is_stable"),
    "MatchingResult": ("matching", "MatchingResult"),
    "market_category": ("matching", "market_category"),
    "MarketResult": ("matching", "MarketResult"),
    "lower_bound": ("bound", "lower_bound"),
    "BoundResult": ("bound", "BoundResult"),
    "Session": ("session", "Session"),
    "Decision": ("session", "Decision"),
    "Change": ("session", "Change"),
    "Reason": ("session", "Reason"),
}


def __getattr__(name):
    # heavy modules (OR-Tools, Numba) load on first use, not at import
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    if name in ("balance", "bound", "data", "categories", "matching", "instances", "bench", "io", "session"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'hetplace' has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = [
    "Problem",
    "place",
    "solve_exact",
    "ExactResult",
    "lower_bound",
    "BoundResult",
    "Session",
    "Decision",
    "Change",
    "Reason",
    "count_categories",
    "rank_category",
    "unrank_category",
    "enumerate_categories",
    "sample_categories",
    "deferred_acceptance",
    "is_stable",
    "MatchingResult",
    "market_category",
    "MarketResult",
    "Placement",
    "evaluate",
    "is_feasible",
    "HetplaceError",
    "InvalidProblemError",
    "InvalidProblemTypeError",
    "InvalidPlacementError",
    "InvalidOptionError",
    "SolverError",
    "MissingDependencyError",
    "BackendUnavailableError",
    "__version__",
]
