"""LB-BSP: semi-dynamic batch sizing for heterogeneous, fluctuating workers (docs/model.md §6).

Public API
----------
LoadBalancer(global_batch, n_workers, policy=..., memory_caps=None, min_batch=1, ...)
    Per-worker batch sizes that sum to the global batch; ``observe(compute_times,
    **signals)`` at every barrier returns the next iteration's sizes.
    Policies: "bsp", "static", "naive", "cpu", "gpu", "fl".
simulate(policy, scenario=None, ...), make_scenario(kind, ...), Scenario, BalanceResult
    A seeded simulator of non-dedicated clusters scored against the oracle (``SimulationResult``,
    the result's old name, is a deprecated alias).
EpochPlan(n_samples, global_batch, seed=0)
    One shared seeded permutation per epoch sliced by the current sizes.
largest_remainder(x, total, lower=1, upper=inf)
    Integer shares proportional to ``x`` summing to ``total`` within bounds.
equal_finish, optimal_integer_allocation, step_time
    The piecewise-linear time model and its continuous / exact integer optimum.

The PyTorch integration lives in :mod:`hetplace.torch` (optional extra).
"""

from .._deprecated import renamed
from ._balancer import POLICIES, PREDICTORS, LoadBalancer
from ._model import equal_finish, largest_remainder, optimal_integer_allocation, step_time
from ._sampling import EpochPlan
from ._simulate import EVENTS, KINDS, BalanceResult, Scenario, make_scenario, simulate

__all__ = [
    "LoadBalancer",
    "POLICIES",
    "PREDICTORS",
    "simulate",
    "make_scenario",
    "Scenario",
    "BalanceResult",
    "KINDS",
    "EVENTS",
    "EpochPlan",
    "largest_remainder",
    "equal_finish",
    "optimal_integer_allocation",
    "step_time",
]

__getattr__ = renamed(__name__, {"SimulationResult": "BalanceResult"})  # the old name, deprecated
