"""A batch sampler for LB-BSP: one shared permutation per epoch, sliced by the current sizes."""

import numbers

import numpy as np
import torch
import torch.distributed as dist

from ..balance import EpochPlan, largest_remainder
from ..errors import InvalidOptionError, InvalidProblemTypeError

__all__ = ["LBBSPBatchSampler"]


class LBBSPBatchSampler(torch.utils.data.Sampler):
    """Per-rank index batches of sizes that may change at every iteration.

    Parameters
    ----------
    data_source : Sized or int
        The dataset (only ``len`` is used) or its length N.
    global_batch : int
        B, samples per iteration over all ranks.
    rank, world_size : int, optional
        Default: from the initialised default process group (else 0 and 1).
    seed : int, default 0
        Must be the same on every rank.
    drop_last : bool, default False
        Drop the final partial block of each epoch.

    Attributes
    ----------
    sizes : ndarray of int64, shape (world_size,)
        Sizes in force (equal at first); :meth:`set_sizes` (or a
        :class:`~hetplace.torch.Coordinator`) changes them between iterations.
    last_sizes : ndarray of int64, shape (world_size,) or None
        Sizes of the batch yielded last (the tail of an epoch is scaled down).
    last_total : int
        Samples in that iteration over all ranks (B, or the epoch's tail).

    Notes
    -----
    Every rank builds the permutation of epoch ``e`` from ``(seed, e)`` and
    cuts block ``j`` into consecutive pieces of the current sizes
    (:class:`hetplace.balance.EpochPlan`), so every sample is used exactly
    once per epoch and every rank runs ``len(sampler)`` iterations: no rank
    runs out early and nothing hangs, without ``Join``.

    Sizes are read when a batch is requested, so wrap the sampler in a
    ``DataLoader(..., batch_sampler=sampler, num_workers=0)`` or index the
    dataset yourself: a prefetching loader would request the next batch
    before the barrier has decided its sizes.

    Examples
    --------
    >>> s = LBBSPBatchSampler(10, 4, rank=0, world_size=2, seed=0)
    >>> len(s), s.sizes.tolist()
    (3, [2, 2])
    """

    def __init__(self, data_source, global_batch, rank=None, world_size=None, seed=0, drop_last=False):
        if isinstance(data_source, numbers.Integral) and not isinstance(data_source, bool):
            n = int(data_source)
        elif hasattr(data_source, "__len__"):
            n = len(data_source)
        else:
            raise InvalidProblemTypeError(
                f"data_source must be a sized dataset or its length; got {type(data_source).__name__}."
            )
        if world_size is None:
            world_size = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        if rank is None:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        for name, val in (("rank", rank), ("world_size", world_size)):
            if isinstance(val, bool) or not isinstance(val, numbers.Integral):
                raise InvalidProblemTypeError(f"{name} must be an integer; got {val!r}.")
        if world_size < 1 or not 0 <= rank < world_size:
            raise InvalidOptionError(
                f"rank must lie in [0, world_size) with world_size >= 1; got rank={rank}, world_size={world_size}."
            )
        self.plan = EpochPlan(n, global_batch, seed=seed, drop_last=drop_last)
        if self.plan.global_batch < world_size:
            raise InvalidOptionError(
                f"global_batch = {global_batch} gives some of the {world_size} ranks no sample; "
                "use a global batch of at least world_size."
            )
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.global_batch = self.plan.global_batch
        self.epoch = 0
        self.sizes = largest_remainder(np.ones(self.world_size), self.global_batch)
        self.last_sizes = None
        self.last_total = 0
        self.iteration = 0

    def set_epoch(self, epoch):
        """Use the permutation of ``epoch`` (an integer in [0, 2**64)) for the next pass."""
        from ..balance._sampling import _count_iv

        self.epoch = _count_iv(epoch, "epoch", 0, maximum=2**64 - 1)  # int(nan) raised ValueError

    def set_sizes(self, sizes):
        """Set the per-rank sizes (sum ``global_batch``) used from the next batch on."""
        self.sizes = self.plan._sizes_iv(sizes)
        if self.sizes.size != self.world_size:
            raise InvalidOptionError(
                f"sizes must have one entry per rank ({self.world_size}); got {self.sizes.size}."
            )

    @property
    def local_weight(self):
        """float: ``b_rank / B`` of the batch yielded last (its aggregation weight)."""
        if self.last_sizes is None or self.last_total == 0:
            return 0.0
        return float(self.last_sizes[self.rank]) / float(self.last_total)

    def __len__(self):
        return self.plan.iterations

    def __iter__(self):
        for j in range(self.plan.iterations):
            use = self.plan.sizes_for(j, self.sizes)
            parts = self.plan.batches(self.epoch, j, self.sizes)
            self.last_sizes = use
            self.last_total = int(use.sum())
            self.iteration = j
            yield parts[self.rank].tolist()
