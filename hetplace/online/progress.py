"""The simulator's progress model (docs/online.md §2): how fast a job runs on an allocation."""

import math
import numbers
from collections.abc import Mapping

import numpy as np

from .._cost import ring_fraction
from .._validation import is_real_scalar
from ..errors import InvalidOptionError

__all__ = ["ProgressModel", "RESTART_MODELS", "SIA_RESTART_S", "FLAT_RESTART_S", "spread_rate"]

#: Named restart models; a number of seconds or a per-model dict works too.  ``"none"``: free
#: restarts (Gavel's simulation).  ``"flat30"``: :data:`FLAT_RESTART_S` for every model (Pollux's
#: simulator).  ``"sia"``: :data:`SIA_RESTART_S` by model family.  The two named costly models
#: charge a job's first start too, as Sia's simulator does; a number or a dict charges restarts only.
RESTART_MODELS = ("none", "flat30", "sia")
#: Seconds of the ``"flat30"`` restart model (Pollux's simulator charges 30 s per re-allocation).
FLAT_RESTART_S = 30.0
#: Seconds of the ``"sia"`` restart model by family of Gavel's table.  The figures are the
#: checkpoint-restore delays Sia's simulator charges at every allocation change, first start
#: included (measured by Sia's authors on their cluster, ``sia-simulator/applications.py`` of
#: github.com/siasosp23/artifacts: cifar10 50 s, deepspeech2 25 s, bert 120 s, yolov3 80 s,
#: imagenet 250 s, ncf 15 s, others 30 s).  Which Sia model stands for which family is
#: hetplace's judgement (docs/online.md §2.1): ResNet-50 (ImageNet) = imagenet, ResNet-18
#: (CIFAR-10) = cifar10, Recommendation (MovieLens) = ncf, Transformer = bert, LM (an LSTM) =
#: deepspeech2 (an RNN), CycleGAN (a convolutional image model) = yolov3, A3C = Sia's default.
SIA_RESTART_S = {"ResNet-50": 250.0, "ResNet-18": 50.0, "Recommendation": 15.0, "Transformer": 120.0, "LM": 25.0,
                 "CycleGAN": 80.0, "A3C": 30.0}


class _Restart:
    """Restart seconds by model: one figure for every model, or a ``{model: seconds}`` dict.

    A small class rather than a closure, so that a :class:`ProgressModel` (and every
    ``ClusterState`` that carries one) pickles: a policy can ship its state to a worker
    process or checkpoint it.
    """

    __slots__ = ("seconds", "per_model")

    def __init__(self, seconds=0.0, per_model=None):
        self.seconds, self.per_model = float(seconds), per_model

    def __call__(self, model):
        return self.seconds if self.per_model is None else self.per_model[model]

    def __getstate__(self):
        return self.seconds, self.per_model

    def __setstate__(self, state):
        self.seconds, self.per_model = state


class ProgressModel:
    """Steps per second of a job on an allocation ``{gpu_type: n_gpus}``, and its restart cost.

    Parameters
    ----------
    table : hetplace.data.GavelTable
        Measured throughputs (consolidated figures on 1, 2, 4, 8 GPUs).
    restart : "none", "flat30", "sia", float or dict, optional
        Seconds a job that restarts holds its GPUs without progress:
        ``"none"`` (0, Gavel's simulation), ``"flat30"`` (30 s, Pollux's
        simulator, first start included), ``"sia"`` (:data:`SIA_RESTART_S`,
        Sia's per-model delays, first start included), one number for every
        job, or a dict keyed by model string or model family (``"ResNet-50"``)
        with a ``"default"`` entry for the others (numbers and dicts charge
        restarts only, not the first start).

    Attributes
    ----------
    first_start : bool
        Whether a job's first start pays its restart delay too (the named
        models ``"flat30"`` and ``"sia"``).

    Notes
    -----
    The rate on one type ``g`` and ``n`` GPUs, ``r_g(n)``, is the table's
    figure when ``n`` is a measured count with a figure > 0.  Otherwise, with
    ``lo`` the largest measured count below ``n`` and ``hi`` the smallest
    above it (counts whose figure is > 0)::

        r_g(n) = max(T(lo), min(T(lo) * n / lo, T(hi)))    (T(lo) when there is no hi)

    (per-GPU efficiency of ``lo`` carried to ``n``, never above the figure of
    ``hi`` GPUs; past the largest measured count the extra GPUs are idle).  A
    job on several types, ``N = sum_g n_g`` GPUs, splits its batch in
    proportion to its GPUs' speeds, each type at its measured per-GPU rate at
    the job's size::

        rate = max( sum_g n_g * r_g(N) / N ,  max_g r_g(n_g) )

    (the second term: a job never runs slower than its fastest single-type
    part alone).  So no allocation of N GPUs runs faster than the best figure
    the table has for a job of one type on at most ``up(N)`` GPUs, ``up(N)``
    the smallest measured count >= N (the largest count past the table).
    docs/online.md §2.
    """

    def __init__(self, table, restart="none"):
        from ..data import GavelTable

        if not isinstance(table, GavelTable):
            raise InvalidOptionError(
                f"table must be a hetplace.data.GavelTable (hetplace.data.load_gavel()); got {type(table).__name__}."
            )
        self.table = table
        self.types = tuple(table.types)
        self.counts = tuple(n for n in table.gpu_counts)
        self._restart = self._restart_iv(restart, table)
        self.restart = restart
        self.first_start = isinstance(restart, str) and restart.lower() in ("flat30", "sia")
        self._single = {}  # (model, type) -> ndarray r_g(n), n = 0..len-1
        self._cache = {}  # (model, sorted allocation items) -> steps/s

    @staticmethod
    def _restart_iv(restart, table):
        if isinstance(restart, str):
            name = restart.lower()
            if name == "flat30":
                return _Restart(FLAT_RESTART_S)
            if name == "sia":
                return _Restart(per_model={m: SIA_RESTART_S.get(table.family(m), 30.0) for m in table.models})
            if name != "none":
                raise InvalidOptionError(
                    f"restart={restart!r} is not valid; pass 'none', 'flat30', 'sia', a number of seconds (e.g. 30) "
                    "or a dict {model or family: seconds, 'default': seconds}."
                )
            return _Restart(0.0)
        if is_real_scalar(restart):
            seconds = float(restart)
            if not (math.isfinite(seconds) and seconds >= 0):
                raise InvalidOptionError(f"restart must be a finite number of seconds >= 0; got {restart!r}.")
            return _Restart(seconds)
        if isinstance(restart, Mapping):
            per = {}
            for key, value in restart.items():
                if not isinstance(key, str) or not is_real_scalar(value) or not (
                        math.isfinite(float(value)) and float(value) >= 0):
                    raise InvalidOptionError(
                        f"restart dict entries must map a model string, a model family or 'default' to seconds "
                        f">= 0; got {key!r}: {value!r}."
                    )
                per[key] = float(value)
            families = {table.family(m) for m in table.models}
            unknown = sorted(k for k in per if k != "default" and k not in table.models and k not in families)
            if unknown:
                raise InvalidOptionError(
                    f"restart dict names {unknown}, which are neither models nor families of the table "
                    f"(families: {sorted(families)}); fix the keys."
                )
            missing = [m for m in table.models if m not in per and table.family(m) not in per]
            if missing and "default" not in per:
                raise InvalidOptionError(
                    f"restart dict has no entry for {missing[:3]}{'...' if len(missing) > 3 else ''}; add them or a "
                    "'default' entry."
                )
            cost = {m: per.get(m, per.get(table.family(m), per.get("default", 0.0))) for m in table.models}
            return _Restart(per_model=cost)
        raise InvalidOptionError(
            f"restart must be 'none', a number of seconds or a dict {{model or family: seconds}}; got {restart!r}."
        )

    def restart_time(self, model):
        """Seconds a restarting job of ``model`` holds its GPUs without progress."""
        return self._restart(model)

    def isolated_rate(self, model, scale_factor, cluster, n_jobs):
        """Steps/s of ``model`` on an isolated ``1 / n_jobs`` share of ``cluster`` (Gavel's FTF baseline).

        Each type's share is ``cluster[g] / (n_jobs * scale_factor)`` of the job's
        ``scale_factor``-GPU rate there, the shares scaled down together if they
        sum above 1 (docs/online.md §4).
        """
        share = np.array([cluster[g] for g in cluster], dtype=float) / (n_jobs * scale_factor)
        if share.sum() > 1:
            share /= share.sum()
        rates = np.array([self._rate_at(model, g, scale_factor) for g in cluster])
        return float(share @ rates)

    def _rate_at(self, model, gpu_type, n):
        """``r_g(n)`` alone: ``single_rates(model, gpu_type, n)[n]`` without filling ``0 .. n`` (n may be ~10**6)."""
        r = self._single.get((model, gpu_type))
        if r is not None and r.size > n:
            return r[n]
        if n <= 64:
            return self.single_rates(model, gpu_type, n)[n]
        measured = [(c, self.table.steps_per_second(model, gpu_type, c)) for c in self.counts]
        return self._fill([(c, v) for c, v in measured if v > 0], n)

    def single_rates(self, model, gpu_type, n_max=64):
        """``r_g(n)`` for ``n = 0 .. n_max`` on one type (ndarray of float; see Notes of the class)."""
        key = (model, gpu_type)
        r = self._single.get(key)
        if r is None or r.size <= n_max:
            measured = [(c, self.table.steps_per_second(model, gpu_type, c)) for c in self.counts]
            measured = [(c, v) for c, v in measured if v > 0]
            r = np.zeros(max(n_max, 8) + 1)
            for n in range(1, r.size):
                r[n] = self._fill(measured, n)
            self._single[key] = r
        return r

    @staticmethod
    def _fill(measured, n):
        exact = [v for c, v in measured if c == n]
        if exact:
            return exact[0]
        below = [(c, v) for c, v in measured if c < n]
        if not below:
            return 0.0
        lo, t_lo = below[-1]
        above = [v for c, v in measured if c > n]
        if not above:
            return t_lo
        return max(t_lo, min(t_lo * n / lo, above[0]))

    def steps_per_second(self, model, allocation):
        """Steps/s of ``model`` on ``allocation`` ({gpu_type: n_gpus}); 0.0 for an empty allocation.

        Raises
        ------
        InvalidOptionError
            An unknown GPU type or a count that is not a non-negative integer.
        """
        items = []
        for g, n in allocation.items():
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 0:
                raise InvalidOptionError(f"allocation[{g!r}] must be a non-negative integer of GPUs; got {n!r}.")
            if g not in self.types:
                raise InvalidOptionError(f"allocation names GPU type {g!r}; the table has {', '.join(self.types)}.")
            if n:
                items.append((g, int(n)))
        key = (model, tuple(sorted(items)))
        v = self._cache.get(key)
        if v is None:
            v = self._rate(model, key[1])
            self._cache[key] = v
        return v

    def _rate(self, model, items):
        if not items:
            return 0.0
        N = sum(n for _, n in items)
        if len(items) == 1:
            g, n = items[0]
            return float(self.single_rates(model, g, N)[n])
        split = sum(n * self.single_rates(model, g, N)[N] / N for g, n in items)
        best = max(self.single_rates(model, g, n)[n] for g, n in items)
        return float(max(split, best))

    def bound(self, model, n_gpus, types=None):
        """An upper bound (steps/s) on ``model`` on any allocation of at most ``n_gpus`` GPUs under this model.

        The best table figure of one type on at most ``up(n_gpus)`` GPUs (class Notes),
        over ``types`` (default: every type of the table; a mixed allocation of those
        types never runs faster).
        """
        up = min([c for c in self.counts if c >= n_gpus] or [max(self.counts)])
        return float(max(self.single_rates(model, g, up)[: up + 1].max() for g in (types or self.types)))


def spread_rate(rate, n_gpus, grad_bytes, bandwidth):
    """Steps/s of a job spread over several nodes: ``rate`` slowed by a ring all-reduce between them.

    ``1 / (1 / rate + 2 (n - 1) / n * grad_bytes / bandwidth)`` for ``n = n_gpus``
    (docs/online.md §2.2): Gavel's multi-GPU rates were measured inside one
    server, so their intra-node communication is in ``rate``; a job across
    servers pays, per step, its whole gradient's ring all-reduce at the
    inter-node ``bandwidth`` (bytes/s) on top.  0 stays 0.
    """
    if rate <= 0:
        return rate
    return 1.0 / (1.0 / rate + float(ring_fraction(n_gpus)) * grad_bytes / bandwidth)
