"""hetplace on Ray: a :class:`hetplace.Session` whose decisions run as placement groups (docs/ray.md).

Optional extra: ``pip install "hetplace[ray]"``.

Public API
----------
RayScheduler(policy="smp", *, round_s=60.0, time_scale=1.0, type_label="gpu_type", quotas=None, seed=0, ...)
    ``submit(job_id, fn, *, throughput, batch, iterations, ..., arrival=0.0)`` then ``run()``: reads the
    cluster from Ray (each node's GPU type from a label), decides with the session on arrivals,
    finishes, node changes and every ``round_s`` model seconds, and carries the changes out: one
    placement group per running job, one bundle per worker pinned to its decided node.
emulated_job
    A built-in ``fn`` that sleeps what the cost model says (tests, demos, checking the model).
WorkerContext
    What ``fn(ctx)`` gets: rank, world size, GPU type, local batch, start iteration,
    ``report``, ``should_stop``, ``rendezvous``.
RunResult, JobResult, Segment, DecisionRecord
    The result: per job (realised and predicted JCT, restarts, status, reason, error),
    per run segment and per decision (time to placement groups ready, driver CPU).

Importing this module without Ray raises :class:`hetplace.errors.MissingDependencyError`
with the install command; ``import hetplace`` never imports Ray.
"""

from ..errors import MissingDependencyError

try:
    import ray  # noqa: F401  (Ray itself)
    import ray.util.placement_group  # noqa: F401
except ImportError:
    raise MissingDependencyError(
        'hetplace.ray needs Ray, which is not installed. Install it with: pip install "hetplace[ray]" '
        '(or pip install "ray>=2.60").'
    ) from None

from ._results import JOB_STATUSES, DecisionRecord, JobResult, RunResult, Segment, predicted_jct
from ._scheduler import RayScheduler
from ._worker import WorkerContext, emulated_job

__all__ = [
    "RayScheduler",
    "emulated_job",
    "WorkerContext",
    "RunResult",
    "JobResult",
    "Segment",
    "DecisionRecord",
    "predicted_jct",
    "JOB_STATUSES",
]
