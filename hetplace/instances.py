"""Seeded instance families for benchmarks, sweeps and tests.

Every generator is a pure function of its arguments and ``seed``: the same call
gives the same :class:`~hetplace.Problem`.

Families
--------
``gavel``
    Three GPU types (k80, p100, v100) with throughputs from a Gavel table;
    global batches of 1-8x the model's per-GPU batch; iterations log-uniform
    over two orders of magnitude; ring all-reduce at 10 Gbit/s; with
    probability ``p_exclude`` a job cannot use one type (out of memory).
``speeds``
    ``gavel`` plus per-worker available speed in [0.4, 1] (non-dedicated).
``synthetic``
    ``n_types`` (default 6) synthetic GPU generations, each job with its own
    affinity to each generation (log-normal), some zero.
"""

import numpy as np

from .data import DEFAULT_GRAD_BYTES, GavelTable, load_gavel
from .errors import InvalidOptionError
from .problem import Problem

__all__ = ["FAMILIES", "make_instance", "gavel_instance", "speeds_instance", "synthetic_instance"]

FAMILIES = ("gavel", "speeds", "synthetic")


def _split(rng, K, G, min_each=1):
    """Random type counts summing to K with at least ``min_each`` of each type (when possible)."""
    base = min(min_each, K // G)
    rest = K - base * G
    return base + rng.multinomial(rest, rng.dirichlet(np.full(G, 3.0)))


def gavel_instance(seed, n_workers, n_jobs, table, *, p_exclude=0.15, bandwidth=1.25e9, types=("k80", "p100", "v100")):
    """Gavel-based instance (see module docstring)."""
    if not isinstance(table, GavelTable):
        table = load_gavel(table)
    rng = np.random.default_rng([seed, n_workers, n_jobs, 11])
    counts = _split(rng, n_workers, len(types))
    models = [m for m in table.models if all(table.samples_per_second(m, t) > 0 for t in types)]
    S = n_jobs
    chosen = [models[j] for j in rng.integers(len(models), size=S)]
    rho = np.array([[table.samples_per_second(m, t) for t in types] for m in chosen])
    for i in range(S):
        if rng.random() < p_exclude:
            rho[i, rng.integers(len(types))] = 0.0
    batch = [table.per_gpu_batch(m) * int(rng.integers(1, 9)) for m in chosen]
    iters = np.round(10 ** rng.uniform(3, 5, size=S))
    grad = [DEFAULT_GRAD_BYTES.get(table.family(m).split(" ")[0], 50e6) for m in chosen]
    return _feasible(
        rho, counts, batch, iters, grad, bandwidth, None,
        [f"{i}:{table.family(m)}" for i, m in enumerate(chosen)], list(types), rng,
    )


def speeds_instance(seed, n_workers, n_jobs, table, *, low=0.4, **kw):
    """``gavel_instance`` with per-worker available speeds uniform in [low, 1]."""
    base = gavel_instance(seed, n_workers, n_jobs, table, **kw)
    rng = np.random.default_rng([seed, n_workers, n_jobs, 13])
    speed = np.round(rng.uniform(low, 1.0, size=n_workers), 3)
    return base.with_worker_speed(speed)


def synthetic_instance(seed, n_workers, n_jobs, *, n_types=6, p_zero=0.1, bandwidth=1.25e9):
    """Synthetic many-type instance (see module docstring)."""
    rng = np.random.default_rng([seed, n_workers, n_jobs, n_types, 17])
    counts = _split(rng, n_workers, n_types)
    gen_speed = 1.6 ** np.arange(n_types)  # each generation ~1.6x the previous
    base = rng.uniform(20, 400, size=n_jobs)
    affinity = rng.lognormal(0.0, 0.35, size=(n_jobs, n_types))
    rho = base[:, None] * gen_speed[None, :] * affinity
    rho[rng.random(rho.shape) < p_zero] = 0.0
    batch = rng.choice([32, 64, 128, 256, 512], size=n_jobs) * rng.integers(1, 9, size=n_jobs)
    iters = np.round(10 ** rng.uniform(3, 5, size=n_jobs))
    grad = rng.uniform(5e6, 300e6, size=n_jobs)
    return _feasible(
        rho, counts, batch, iters, grad, bandwidth, None,
        [f"job{i}" for i in range(n_jobs)], [f"gen{g}" for g in range(n_types)], rng,
    )


def _feasible(rho, counts, batch, iters, grad, bandwidth, speed, names, types, rng):
    """Build the problem, restoring zeroed throughputs until every job can be placed."""
    from .errors import InvalidProblemError

    rho = np.array(rho, dtype=float)
    full = rho.copy()
    for _ in range(rho.size + 1):
        try:
            return Problem(rho, counts, batch, iters, grad_bytes=grad, bandwidth=bandwidth,
                           worker_speed=speed, job_names=names, type_names=types)
        except InvalidProblemError:
            zero = np.argwhere(rho == 0)
            if zero.size == 0:
                raise
            i, g = zero[rng.integers(len(zero))]
            rho[i, g] = full[i, g] if full[i, g] > 0 else rho[i].max()
    raise AssertionError("unreachable")  # pragma: no cover


def make_instance(family, seed, n_workers, n_jobs, table=None, **kw):
    """Dispatch to a family's generator by name (``"gavel"``, ``"speeds"``, ``"synthetic"``)."""
    if family == "gavel":
        return gavel_instance(seed, n_workers, n_jobs, table, **kw)
    if family == "speeds":
        return speeds_instance(seed, n_workers, n_jobs, table, **kw)
    if family == "synthetic":
        return synthetic_instance(seed, n_workers, n_jobs, **kw)
    raise InvalidOptionError(f"family={family!r} is not valid; choose one of {', '.join(map(repr, FAMILIES))}.")
