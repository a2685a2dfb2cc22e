"""Unbiased aggregation of unequal shards: gradients weighted by ``b_i / B``."""

import numbers

import torch
import torch.distributed as dist

from ..errors import InvalidOptionError, InvalidProblemError

__all__ = ["allreduce_gradients_", "WeightedHookState", "weighted_allreduce_hook"]


def _weight(local_count, total_count, reduction):
    for name, val in (("local_count", local_count), ("total_count", total_count)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral):
            raise InvalidProblemError(f"{name} must be an integer number of samples; got {val!r}.")
    if total_count < 1 or not 0 <= local_count <= total_count:
        raise InvalidProblemError(
            f"need 0 <= local_count <= total_count and total_count >= 1; got local_count={local_count}, "
            f"total_count={total_count}."
        )
    if reduction == "mean":
        return float(local_count) / float(total_count)
    if reduction == "sum":
        return 1.0 / float(total_count)
    raise InvalidOptionError(f"reduction must be 'mean' or 'sum' (of the local loss); got {reduction!r}.")


def allreduce_gradients_(parameters, local_count, total_count, group=None, reduction="mean"):
    """Replace every gradient by the full-batch gradient, in place.

    Parameters
    ----------
    parameters : iterable of torch.nn.Parameter or torch.nn.Module
        This rank's parameters (same order on every rank).  A missing
        ``.grad`` counts as zeros.
    local_count : int
        Samples this rank processed in the iteration (``b_i``, may be 0).
    total_count : int
        Samples over all ranks (``B``, or the epoch's tail).
    group : ProcessGroup, optional
    reduction : {"mean", "sum"}, default "mean"
        How the local loss was reduced over the local batch.

    Notes
    -----
    With local losses averaged over ``b_i`` samples, the full-batch mean
    gradient is ``sum_i (b_i / B) g_i`` (docs/model.md §6.4); plain averaging
    ``(1/n) sum_i g_i`` is biased towards small shards.  All gradients go in
    one flat buffer and one ``all_reduce(SUM)``.  A rank with no sample sends
    zeros (and still joins the collective).
    """
    w = _weight(local_count, total_count, reduction)
    if isinstance(parameters, torch.nn.Module):
        parameters = parameters.parameters()
    elif isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    if isinstance(parameters, (str, bytes)) or not hasattr(parameters, "__iter__"):
        raise InvalidOptionError(
            f"parameters must be a torch.nn.Module or an iterable of parameters (tensors); got {parameters!r}."
        )
    parameters = list(parameters)
    bad = [p for p in parameters if not isinstance(p, torch.Tensor)]
    if bad:
        raise InvalidOptionError(f"parameters must hold tensors (torch.nn.Parameter); got {bad[0]!r}.")
    params = [p for p in parameters if p.requires_grad]
    if not params:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    if local_count == 0:
        flat.zero_()  # an empty shard's loss may be NaN: send exact zeros
    else:
        flat.mul_(w)
    dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
    offset = 0
    for p in params:
        k = p.numel()
        piece = flat[offset:offset + k].view_as(p)
        if p.grad is None:
            p.grad = piece.clone()
        else:
            p.grad.copy_(piece)
        offset += k


class WeightedHookState:
    """State of :func:`weighted_allreduce_hook`: the current weight ``b_i / B``.

    Parameters
    ----------
    process_group : ProcessGroup, optional
    """

    def __init__(self, process_group=None):
        self.process_group = process_group
        self.weight = None

    def set_counts(self, local_count, total_count, reduction="mean"):
        """Set the weight from this iteration's sample counts."""
        self.weight = _weight(local_count, total_count, reduction)


def weighted_allreduce_hook(state, bucket):
    """DistributedDataParallel communication hook: ``sum_i (b_i / B) g_i``.

    Register with ``ddp.register_comm_hook(state, weighted_allreduce_hook)``
    and call ``state.set_counts(len(batch), sampler.last_total)`` before
    every backward pass.

    Notes
    -----
    DDP's default hook divides the summed gradients by the world size; this
    one scales the local bucket by ``b_i / B`` first, then sums, so the
    result is the full-batch gradient for unequal shards.
    """
    if state.weight is None:
        raise InvalidOptionError(
            "weighted_allreduce_hook has no weight: call state.set_counts(local_count, total_count) "
            "before every backward pass."
        )
    buf = bucket.buffer()
    if state.weight == 0.0:
        buf.zero_()
    else:
        buf.mul_(state.weight)
    fut = dist.all_reduce(buf, op=dist.ReduceOp.SUM, group=state.process_group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])
