"""hetplace.online: a trace-driven, round-based cluster simulator and online scheduling policies.

Public API
----------
gavel_trace, read_trace, write_trace, Job
    Job traces (Gavel's generator recipe, Gavel's .trace files).
ProgressModel
    How fast a job runs on an allocation, and what a restart costs.
simulate, ClusterState, JobState, SimulationResult
    The simulator, what a policy sees, what it returns.
lower_bound, LowerBound
    Each job alone on its fastest allocation: a bound below every policy's JCT.
make_policy, POLICIES
    Policies by name: ours ("smp", "smp-fair", "smp-rigid") and the peers' re-implementations.

docs/online.md describes the model and the policy interface.
"""

from .._validation import check_choice
from ..errors import InvalidOptionError
from .bounds import LowerBound, lower_bound
from .progress import ProgressModel
from .result import SimulationResult
from .simulator import ClusterState, JobState, parse_cluster, simulate
from .trace import Job, gavel_trace, read_trace, write_trace

__all__ = [
    "Job", "gavel_trace", "read_trace", "write_trace", "ProgressModel", "simulate", "ClusterState", "JobState",
    "SimulationResult", "make_policy", "policy_names", "parse_cluster", "lower_bound", "LowerBound",
]


def _registry():
    from .policies_ours import OUR_POLICIES

    reg = dict(OUR_POLICIES)
    try:
        from .policies_peers import PEER_POLICIES
    except ImportError:  # the peers' module is optional in a partial checkout
        PEER_POLICIES = {}
    reg.update(PEER_POLICIES)
    return reg


def policy_names():
    """Names :func:`make_policy` accepts (ours first, then the peers')."""
    return tuple(_registry())


def make_policy(name, **options):
    """A policy object by name.

    Parameters
    ----------
    name : str
        ``"smp"``, ``"smp-rigid"`` (ours, :mod:`hetplace.online.policies_ours`)
        or a peer policy (``"fifo"``, ``"las"``, ``"las-aware"``, ``"ftf"``, ...
        in :mod:`hetplace.online.policies_peers`); :func:`policy_names` lists them.
    **options
        Passed to the policy's constructor.

    Raises
    ------
    InvalidOptionError
        Unknown name, or options the policy does not take.
    """
    reg = _registry()
    key = check_choice("policy", name, tuple(reg))
    try:
        return reg[key](**options)
    except TypeError as exc:
        raise InvalidOptionError(f"policy {key!r} does not take these options ({exc}); options: {options!r}.") from None
