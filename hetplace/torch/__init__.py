"""PyTorch integration of LB-BSP (optional extra: ``pip install torch==2.13.0``).

Public API
----------
LBBSPBatchSampler(data_source, global_batch, rank=None, world_size=None, seed=0)
    Slices ONE shared seeded per-epoch permutation by the current per-rank
    sizes: every sample exactly once per epoch, the same number of iterations
    on every rank.
Coordinator(global_batch, policy="cpu", ...)
    At every barrier: gathers each rank's compute time (and signals), runs a
    :class:`hetplace.balance.LoadBalancer` on one rank and broadcasts the
    next sizes (to the sampler and the aggregation weights too).
allreduce_gradients_(parameters, local_count, total_count)
    Unbiased aggregation: gradients summed with weights ``b_i / B``.
WeightedHookState, weighted_allreduce_hook
    The same aggregation as a DistributedDataParallel communication hook.

Importing this module without PyTorch raises
:class:`hetplace.errors.MissingDependencyError` with the install command.
"""

from ..errors import MissingDependencyError

try:
    import torch  # noqa: F401  (absolute import: PyTorch itself)
    import torch.distributed  # noqa: F401
except ImportError:
    raise MissingDependencyError(
        "hetplace.torch needs PyTorch, which is not installed. Install the CPU build with: "
        "pip install torch==2.13.0"
    ) from None

from ._aggregate import WeightedHookState, allreduce_gradients_, weighted_allreduce_hook
from ._coordinator import Coordinator
from ._sampler import LBBSPBatchSampler

__all__ = [
    "LBBSPBatchSampler",
    "Coordinator",
    "allreduce_gradients_",
    "WeightedHookState",
    "weighted_allreduce_hook",
]
