"""Seeded instance generators for tests and benchmarks (never global RNG).

- :func:`tiny_random`: small random problems (K <= 7) for brute-force checks,
  with/without communication and per-worker speeds.
- :func:`idle_optimal`: small problems where communication makes leaving a slow
  worker idle optimal.
- :func:`gavel_problem`: type-homogeneous problems (speeds 1) from the Gavel
  throughput table shipped with hetplace (:func:`hetplace.data.gavel_path`, docs/model.md §7.1).
"""
import functools
import math

import numpy as np

from hetplace.data import DEFAULT_GRAD_BYTES, gavel_path
from hetplace.data import load_gavel as load_gavel_table

from hetplace import Problem
from hetplace.errors import InvalidProblemError

__all__ = [
    "tiny_random",
    "idle_optimal",
    "gavel_path",
    "load_gavel",
    "gavel_problem",
    "GAVEL_TYPES",
    "GRAD_BYTES",
    "BANDWIDTH",
]

GAVEL_TYPES = ("k80", "p100", "v100")
#: plausible gradient sizes per model family (bytes; from parameter counts)
GRAD_BYTES = DEFAULT_GRAD_BYTES
#: ~10 Gbit/s per worker link
BANDWIDTH = 1.25e9


def _split(rng, total, parts, minimum=1):
    """Random composition of ``total`` into ``parts`` integers >= ``minimum``."""
    cuts = np.sort(rng.choice(np.arange(1, total - parts * (minimum - 1)), parts - 1, replace=False))
    sizes = np.diff(np.concatenate(([0], cuts, [total - parts * (minimum - 1)])))
    return sizes + (minimum - 1)


def tiny_random(seed, n_workers=None, n_jobs=None, n_types=None, comm=None, speeds=None, zeros=True):
    """A small random problem (K <= 7 by default).

    Parameters
    ----------
    seed : int
    n_workers, n_jobs, n_types : int, optional
        Default: K in 2..7, S in 1..min(K, 5), G in 1..min(K, 3), drawn from ``seed``.
    comm : bool, optional
        Communication on (finite bandwidth, comparable to compute) or off.
        Default: drawn from ``seed``.
    speeds : bool, optional
        Per-worker speeds in (0, 1] (half the time from a small discrete set,
        so some workers share a speed).  Default: drawn from ``seed``.
    zeros : bool, default True
        Sometimes give a job throughput 0 on a type (kept only when the problem
        stays feasible).

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng([seed, 101])
    K = int(n_workers if n_workers is not None else rng.integers(2, 8))
    S = int(n_jobs if n_jobs is not None else rng.integers(1, min(K, 5) + 1))
    G = int(n_types if n_types is not None else rng.integers(1, min(K, 3) + 1))
    comm = bool(rng.random() < 0.5) if comm is None else bool(comm)
    speeds = bool(rng.random() < 0.5) if speeds is None else bool(speeds)
    counts = _split(rng, K, G)
    rho = rng.uniform(1.0, 10.0, (S, G))
    batch = rng.integers(8, 257, S)
    iters = rng.integers(100, 2001, S).astype(float)
    speed = None
    if speeds:
        if rng.random() < 0.5:
            speed = rng.choice([0.25, 0.5, 0.75, 1.0], K)
        else:
            speed = rng.uniform(0.1, 1.0, K)
    grad, bw = None, math.inf
    if comm:
        bw = 1e9
        # per-iteration all-reduce time comparable to one worker's compute time
        grad = rng.uniform(0.05, 1.5, S) * batch / rho.mean(axis=1) * bw
    base = Problem(rho, counts, batch, iters, grad, bw, speed)
    if zeros and G > 1 and rng.random() < 0.5:
        rho2 = rho.copy()
        for i in range(S):
            if rng.random() < 0.4:
                rho2[i, rng.integers(G)] = 0.0
        try:
            return Problem(rho2, counts, batch, iters, grad, bw, speed)
        except InvalidProblemError:
            pass
    return base


def idle_optimal(seed, n_workers=None):
    """A small problem where communication makes idle workers worthwhile.

    A few fast workers and several slow ones; every job's per-iteration
    all-reduce time is 20-100 % of its compute time on one fast worker, so a
    slow worker (3-12 % of a fast one) saves less than it costs.

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng([seed, 202])
    K = int(n_workers if n_workers is not None else rng.integers(4, 8))
    S = int(rng.integers(1, 3))
    n_fast = int(rng.integers(S, min(K - 1, S + 2) + 1))
    counts = np.array([n_fast, K - n_fast])
    fast = rng.uniform(5.0, 10.0, S)
    rho = np.column_stack([fast, fast * rng.uniform(0.03, 0.12, S)])
    batch = rng.integers(16, 257, S)
    iters = rng.integers(100, 2001, S).astype(float)
    bw = 1e9
    grad = rng.uniform(0.2, 1.0, S) * batch / fast * bw
    speed = None
    if rng.random() < 0.5:
        speed = rng.uniform(0.5, 1.0, K)
    return Problem(rho, counts, batch, iters, grad, bw, speed)


# ------------------------------------------------------------------ Gavel
@functools.lru_cache(maxsize=4)
def load_gavel(path=None):
    """Single-GPU throughputs from the Gavel table (default: the one shipped with hetplace).

    Returns
    -------
    models : tuple of str
        The 26 model/batch configurations, sorted.
    samples_per_s : ndarray of float64, shape (26, 3)
        Samples/s on one k80, p100, v100 GPU (steps/s alone x per-GPU batch).
    per_gpu_batch : ndarray of int64, shape (26,)
        Batch size in the model string (A3C and CycleGAN: 1).
    """
    table = load_gavel_table(path)
    models = tuple(table.models)
    per_gpu = np.array([table.per_gpu_batch(m) for m in models], dtype=np.int64)
    rates = np.array([[table.samples_per_second(m, t) for t in GAVEL_TYPES] for m in models])
    return models, rates, per_gpu


def _family(model):
    return model.split(" (")[0]


def gavel_problem(seed, n_workers, n_jobs, comm=True, zero_prob=0.15, type_counts=None, path=None):
    """A type-homogeneous problem (speeds 1) built from the Gavel table.

    Parameters
    ----------
    seed : int
    n_workers, n_jobs : int
        K (split over k80/p100/v100, each type at least one worker when K >= 3)
        and S.
    comm : bool, default True
        Ring all-reduce over 10 Gbit/s links (1.25e9 B/s); gradient sizes from
        :data:`GRAD_BYTES`.  False: bandwidth ``inf``.
    zero_prob : float, default 0.15
        Probability that a job cannot run on one (random) GPU type -- a model
        that does not fit it -- kept only when the problem stays feasible.
    type_counts : sequence of 3 int, optional
        Fix the cluster instead of drawing it.

    Returns
    -------
    Problem
        Global batch = per-GPU batch x a multiplier in 1..8; iterations
        log-uniform in [1e3, 1e5].
    """
    models, rates, per_gpu = load_gavel(path)
    rng = np.random.default_rng([seed, 303, n_workers, n_jobs])
    K, S = int(n_workers), int(n_jobs)
    if type_counts is None:
        counts = _split(rng, K, 3) if K >= 3 else np.array([0] * (3 - K) + [1] * K)
    else:
        counts = np.asarray(type_counts, dtype=np.int64)
    pick = rng.integers(len(models), size=S)
    rho = rates[pick].copy()
    batch = per_gpu[pick] * rng.integers(1, 9, S)
    iters = np.round(10.0 ** rng.uniform(3.0, 5.0, S))
    grad = np.array([GRAD_BYTES[_family(models[j])] for j in pick])
    bw = BANDWIDTH if comm else math.inf
    names = [f"{models[j]}#{i}" for i, j in enumerate(pick)]
    drop = rng.random(S) < zero_prob
    drop_type = rng.integers(3, size=S)
    args = dict(grad_bytes=grad, bandwidth=bw, job_names=names, type_names=GAVEL_TYPES)
    if drop.any():
        rho2 = rho.copy()
        rho2[drop, drop_type[drop]] = 0.0
        try:
            return Problem(rho2, counts, batch, iters, **args)
        except InvalidProblemError:
            pass
    return Problem(rho, counts, batch, iters, **args)
