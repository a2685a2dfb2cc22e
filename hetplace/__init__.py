"""hetplace: placement of data-parallel training jobs on heterogeneous GPU clusters.

Public API
----------
Problem, evaluate, Placement, is_feasible
    The placement model (MODEL.md section 1).
place(problem, method=...)
    Baselines, exact and sampling-based placement.
solve_exact(problem, method="auto", ...)
    Exact optimum (type DP, OR-Tools MILP, brute force) with status, bound, gap.
hetplace.balance
    LB-BSP semi-dynamic load balancing (import it explicitly).

Importing hetplace compiles nothing: Numba kernels compile (and cache) on first
use, Cython kernels are built at install time.
"""

from .errors import (
    HetplaceError,
    InvalidOptionError,
    InvalidPlacementError,
    InvalidProblemError,
    InvalidProblemTypeError,
    MissingDependencyError,
    SolverError,
)
from .placement import Placement, evaluate, is_feasible
from .problem import Problem

__version__ = "0.1.0"

__all__ = [
    "Problem",
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
    "__version__",
]
