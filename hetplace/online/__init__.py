"""hetplace.online: a trace-driven, round-based cluster simulator and online scheduling policies.

Public API
----------
gavel_trace, read_trace, write_trace, Job
    Job traces (Gavel's generator recipe, Gavel's .trace files).
ProgressModel
    How fast a job runs on an allocation, and what a restart costs.
simulate, ClusterState, JobState, OnlineResult, Network
    The simulator, what a policy sees, what it returns (``SimulationResult``, its old name, is a
    deprecated alias).
lower_bound, LowerBound
    Each job alone on its fastest allocation: a bound below every policy's JCT.
make_policy, policy_names, POLICIES
    Policies by name: ours ("smp", "smp-fair", "smp-rigid") and the peers' re-implementations;
    POLICIES is the read-only mapping name -> policy class.
GoodputModel, read_sia_workload, simulate_goodput, sia_table
    The goodput world of Pollux and Sia (docs/online.md §10): per-model profiles read from a
    checkout of Sia's artifact, its workloads, the simulator in nodes, and Sia's Table 3.

docs/online.md describes the model and the policy interface.
"""

from .._deprecated import renamed
from .bounds import LowerBound, lower_bound
from .policies import POLICIES, make_policy, policy_names
from .nodes import Network
from .progress import ProgressModel
from .result import OnlineResult
from .simulator import ClusterState, JobState, parse_cluster, simulate
from .trace import Job, gavel_trace, read_trace, write_trace
from .goodput import GoodputModel, read_sia_workload
from .goodput_sim import simulate_goodput
from .sia_table import sia_table

__all__ = [
    "Job", "gavel_trace", "read_trace", "write_trace", "ProgressModel", "simulate", "ClusterState", "JobState",
    "OnlineResult", "make_policy", "policy_names", "POLICIES", "parse_cluster", "lower_bound", "LowerBound",
    "Network", "GoodputModel", "read_sia_workload", "simulate_goodput", "sia_table",
]

__getattr__ = renamed(__name__, {"SimulationResult": "OnlineResult"})  # the old name, deprecated
