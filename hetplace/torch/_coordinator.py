"""The barrier-side coordinator: gather timings, decide sizes on one rank, broadcast them."""

import numbers
import time
from contextlib import contextmanager

import numpy as np
import torch
import torch.distributed as dist

from .._validation import is_real_scalar
from ..balance import LoadBalancer
from ..errors import InvalidOptionError, InvalidProblemError

__all__ = ["Coordinator"]


class Coordinator:
    """Runs a :class:`~hetplace.balance.LoadBalancer` for a process group.

    Parameters
    ----------
    global_batch : int
    policy : str, default "cpu"
        Any :class:`~hetplace.balance.LoadBalancer` policy.
    memory_caps, min_batch, **options
        Passed to :class:`~hetplace.balance.LoadBalancer`.
    group : ProcessGroup, optional
        Default: the default group.
    src : int, default 0
        Global rank that runs the balancer and broadcasts the sizes.
    sampler : LBBSPBatchSampler, optional
        Receives every new set of sizes.  Take the aggregation weight of each
        batch from the sampler (``len(batch)``, ``sampler.last_total``): the
        last batch of an epoch is smaller than the sizes in force.

    Attributes
    ----------
    sizes : ndarray of int64, shape (world_size,)
        Sizes in force, identical on every rank.
    history : list of ndarray
        Gathered compute times of every step (float64, shape (world_size,)).

    Notes
    -----
    :meth:`step` is a collective: every rank calls it once per iteration, at
    the barrier (after the gradient all-reduce).  The times travel with one
    ``all_gather`` and the sizes with one ``broadcast`` from ``src``, so
    every rank applies exactly the same sizes even if floating-point results
    differed between machines.  The balancer is built on every rank (so bad
    arguments fail everywhere alike) but only ``src`` observes.
    """

    def __init__(self, global_batch, policy="cpu", memory_caps=None, min_batch=1, *, group=None, src=0,
                 sampler=None, **options):
        if not dist.is_available() or not dist.is_initialized():
            raise InvalidOptionError(
                "Coordinator needs an initialised torch.distributed process group: call "
                "torch.distributed.init_process_group(...) first."
            )
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        n_global = dist.get_world_size()
        if isinstance(src, (bool, np.bool_)) or not isinstance(src, numbers.Integral) or not 0 <= src < n_global:
            raise InvalidOptionError(  # a bad root rank failed inside the collective (RuntimeError) or hung
                f"src must be the global rank that runs the balancer, an integer in [0, {n_global}); got {src!r}."
            )
        self.src = int(src)
        self.balancer = LoadBalancer(global_batch, self.world_size, policy=policy, memory_caps=memory_caps,
                                     min_batch=min_batch, **options)
        self.sizes = self.balancer.batch_sizes
        self.sampler = sampler
        self.history = []
        self.last_time = None
        self._signal_names = None
        self._push()

    @property
    def local_size(self):
        """int: this rank's batch size in force."""
        return int(self.sizes[self.rank])

    @contextmanager
    def timer(self):
        """Context manager timing this rank's compute into :attr:`last_time` (seconds)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.last_time = time.perf_counter() - t0

    def _push(self):
        if self.sampler is not None:
            self.sampler.set_sizes(self.sizes)

    def step(self, compute_time=None, **signals):
        """Exchange this iteration's compute times; return the next sizes.

        Parameters
        ----------
        compute_time : float, optional
            This rank's pure compute time (seconds; ``inf`` for no progress);
            default :attr:`last_time` from :meth:`timer`.
        **signals : float
            This rank's exogenous readings (same names on every rank), e.g.
            ``cpu_avail=``; gathered into per-worker arrays for the balancer.

        Returns
        -------
        ndarray of int64, shape (world_size,)
        """
        if compute_time is None:
            compute_time = self.last_time
        if compute_time is None:
            raise InvalidProblemError(
                "compute_time is required: pass this rank's compute seconds or time the step with "
                "`with coordinator.timer():`."
            )
        if not is_real_scalar(compute_time):
            raise InvalidProblemError(
                f"compute_time must be a number of seconds (inf for no progress); got {compute_time!r}."
            )
        bad = next((k for k, v in signals.items() if not is_real_scalar(v)), None)
        if bad is not None:
            raise InvalidProblemError(f"signal {bad} must be one real number per rank; got {signals[bad]!r}.")
        names = tuple(sorted(signals))
        if self._signal_names is None:
            self._signal_names = names
        elif names != self._signal_names:
            raise InvalidOptionError(
                f"signals must be the same at every step: first {list(self._signal_names)}, now {list(names)}."
            )
        row = torch.tensor([float(compute_time)] + [float(signals[k]) for k in names], dtype=torch.float64)
        table = [torch.zeros_like(row) for _ in range(self.world_size)]
        dist.all_gather(table, row, group=self.group)
        data = torch.stack(table).numpy()
        times = data[:, 0].copy()
        self.history.append(times)
        out = torch.zeros(self.world_size, dtype=torch.int64)
        if dist.get_rank() == self.src:
            sig = {k: data[:, 1 + j].copy() for j, k in enumerate(names)}
            out = torch.from_numpy(self.balancer.observe(times, **sig).astype(np.int64))
        dist.broadcast(out, src=self.src, group=self.group)
        self.sizes = out.numpy().astype(np.int64)
        self._push()
        return self.sizes.copy()
