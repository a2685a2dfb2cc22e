"""Epoch plans: one shared, seeded permutation per epoch, sliced by the current sizes.

Framework-free core of :class:`hetplace.torch.LBBSPBatchSampler` (docs/model.md
§6.4, "unbiased aggregation"): every rank builds the same permutation
from ``(seed, epoch)``; iteration ``j`` takes the ``j``-th block of
``global_batch`` indices and cuts it into consecutive pieces of the sizes in
force, so every sample is used exactly once per epoch and every rank runs the
same number of iterations.
"""

import numbers

import numpy as np

from .._validation import COUNT_MAX, exact_int_sum
from ..errors import InvalidOptionError, InvalidProblemError, InvalidProblemTypeError
from ._model import largest_remainder

__all__ = ["EpochPlan", "MAX_PERMUTATION"]

#: Largest dataset whose per-epoch permutation is built in memory (int64: 16 GiB).
MAX_PERMUTATION = 2**31


def _count_iv(value, name, minimum, maximum=COUNT_MAX):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidProblemTypeError(f"{name} must be an integer; got {value!r}.")
    if value < minimum:
        raise InvalidProblemError(f"{name} must be >= {minimum}; got {value}.")
    if maximum is not None and value > maximum:
        raise InvalidProblemError(f"{name} must be at most {maximum} (supported range [{minimum}, {maximum}]); got {value}.")
    return int(value)


class EpochPlan:
    """Per-epoch permutation of ``n_samples`` indices cut into per-rank batches.

    Parameters
    ----------
    n_samples : int
        Dataset length N (>= 1).
    global_batch : int
        B, samples per iteration over all ranks.
    seed : int, default 0
        Seed shared by all ranks; the permutation of epoch ``e`` comes from
        ``numpy.random.default_rng([seed, e])``.
    drop_last : bool, default False
        Drop the final partial block (then not every sample is used).

    Attributes
    ----------
    iterations : int
        Iterations per epoch: ``ceil(N / B)`` (``floor`` with ``drop_last``).

    Examples
    --------
    >>> plan = EpochPlan(10, 4, seed=1)
    >>> plan.iterations
    3
    >>> [len(s) for s in plan.batches(0, 2, [3, 1])]
    [1, 1]
    """

    def __init__(self, n_samples, global_batch, seed=0, drop_last=False):
        self.n_samples = _count_iv(n_samples, "n_samples", 1)
        self.global_batch = _count_iv(global_batch, "global_batch", 1)
        self.seed = _count_iv(seed, "seed", 0, maximum=2**128 - 1)
        if not isinstance(drop_last, (bool, np.bool_)):
            raise InvalidOptionError(f"drop_last must be True or False; got {drop_last!r}.")
        self.drop_last = bool(drop_last)
        if self.drop_last and self.n_samples < self.global_batch:
            raise InvalidProblemError(
                f"drop_last=True with n_samples = {self.n_samples} < global_batch = {self.global_batch} "
                "leaves no iteration. Use drop_last=False or a smaller global batch."
            )
        full = self.n_samples // self.global_batch
        tail = self.n_samples - full * self.global_batch
        self.iterations = full if (self.drop_last or tail == 0) else full + 1
        self._cache = (None, None)

    def permutation(self, epoch):
        """ndarray of int64, shape (N,): the shared permutation of ``epoch``."""
        epoch = _count_iv(epoch, "epoch", 0, maximum=2**64 - 1)
        if self.n_samples > MAX_PERMUTATION:
            raise InvalidProblemError(
                f"n_samples = {self.n_samples} is above {MAX_PERMUTATION}, the largest dataset whose "
                "permutation is built in memory; shard the dataset and plan each shard."
            )
        if self._cache[0] != epoch:
            perm = np.random.default_rng([self.seed, epoch]).permutation(self.n_samples)
            self._cache = (epoch, perm.astype(np.int64))
        return self._cache[1]

    def total(self, iteration):
        """Samples in iteration ``iteration`` (B, or the tail of the epoch)."""
        return min(self.global_batch, self.n_samples - iteration * self.global_batch)

    def sizes_for(self, iteration, sizes):
        """Per-rank sizes actually used in ``iteration`` (the tail is scaled down).

        Parameters
        ----------
        iteration : int
        sizes : array_like of int, shape (ranks,)
            Sizes in force (sum ``global_batch``).

        Returns
        -------
        ndarray of int64, shape (ranks,)
            ``sizes`` itself for a full block; for the tail, integer shares of
            the remaining samples proportional to ``sizes`` (largest
            remainder, never above ``sizes``, at least 1 each when there are
            enough samples, else one each to the first ranks).
        """
        s = self._sizes_iv(sizes)
        iteration = _count_iv(iteration, "iteration", 0, maximum=None)
        if not 0 <= iteration < self.iterations:
            raise InvalidProblemError(
                f"iteration must lie in [0, {self.iterations}); got {iteration}."
            )
        R = self.total(iteration)
        if R == self.global_batch:
            return s
        active = s >= 1
        if R >= int(active.sum()):
            return largest_remainder(s.astype(np.float64), R, lower=active.astype(np.int64), upper=s)
        out = np.zeros(s.size, dtype=np.int64)
        out[np.flatnonzero(active)[:R]] = 1
        return out

    def batches(self, epoch, iteration, sizes):
        """Index arrays of every rank for one iteration.

        Returns
        -------
        list of ndarray of int64
            ``ranks`` consecutive slices of the epoch's permutation; their
            concatenation is the iteration's block.
        """
        use = self.sizes_for(iteration, sizes)
        perm = self.permutation(epoch)
        start = iteration * self.global_batch
        edges = start + np.concatenate(([0], np.cumsum(use)))
        return [perm[edges[r]:edges[r + 1]] for r in range(use.size)]

    def _sizes_iv(self, sizes):
        if isinstance(sizes, (str, bytes)):
            raise InvalidProblemTypeError(f"sizes must be integers, one per rank; got the string {sizes!r}.")
        try:
            arr = np.asarray(sizes)
        except (TypeError, ValueError):
            raise InvalidProblemTypeError(f"sizes must be integers, one per rank; got {type(sizes).__name__}.") from None
        if arr.ndim != 1 or arr.size == 0:
            raise InvalidProblemError(f"sizes must be a 1-D array, one size per rank; got shape {arr.shape}.")
        B = self.global_batch
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise InvalidProblemError(f"sizes must be whole numbers; got {arr.tolist()!r:.200}.")
        elif arr.dtype.kind == "O" and all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
                                           for v in arr.tolist()):
            pass  # Python ints too large for int64: checked against the batch below
        elif arr.dtype.kind not in "iu":
            raise InvalidProblemTypeError(f"sizes must be integers; got dtype {arr.dtype}.")
        vals = arr.tolist()
        if any(v < 0 or v > B for v in vals) or exact_int_sum([int(v) for v in vals]) != B:
            total = exact_int_sum([int(v) for v in vals])
            raise InvalidProblemError(
                f"sizes must be >= 0 and sum to global_batch = {B}; got {vals!r:.200} "
                f"(sum {total}). Pass LoadBalancer.batch_sizes."
            )
        return np.asarray(vals, dtype=np.int64)

    def __repr__(self):
        return (
            f"EpochPlan(n_samples={self.n_samples}, global_batch={self.global_batch}, seed={self.seed}, "
            f"drop_last={self.drop_last}, iterations={self.iterations})"
        )
