"""Job traces of the online simulator (docs/online.md §1): Gavel's generator recipe and its .trace files."""

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_positive_int, check_seed, is_real_scalar
from ..errors import InvalidOptionError, InvalidProblemError

__all__ = ["Job", "gavel_trace", "read_trace", "write_trace", "SCALE_FACTORS", "SCALE_FACTOR_P", "REFERENCE_TYPE"]

#: Requested GPU counts of a multi-GPU trace and their probabilities (Gavel's recipe).
SCALE_FACTORS = (1, 2, 4, 8)
SCALE_FACTOR_P = (0.7, 0.1, 0.15, 0.05)
#: The GPU type a job's ``total_steps`` is measured on (``duration`` x its throughput there).
REFERENCE_TYPE = "v100"
#: Short jobs: 10**U(1.5, 3) minutes with this probability, else long ones: 10**U(3, 4) minutes.
SHORT_P = 0.8
SHORT_LOG10_MIN = (1.5, 3.0)
LONG_LOG10_MIN = (3.0, 4.0)


@dataclass(frozen=True)
class Job:
    """One training job of a trace.

    Attributes
    ----------
    job_id : int
        Position in the trace (0, 1, ...).
    model : str
        A model string of the throughput table, e.g. ``"ResNet-50 (batch size 64)"``.
    arrival : float
        Arrival time (seconds from the start of the trace).
    total_steps : float
        Steps (iterations) the job runs before it is done.
    scale_factor : int
        GPUs the job requests (1, 2, 4 or 8).
    duration : float
        Seconds the job takes alone on ``scale_factor`` V100s (``total_steps``
        over that throughput), for reference; NaN when unknown.
    """

    job_id: int
    model: str
    arrival: float
    total_steps: float
    scale_factor: int
    duration: float


def _table(table):
    if table is None:
        from ..data import load_gavel

        return load_gavel()
    from ..data import GavelTable

    if not isinstance(table, GavelTable):
        raise InvalidOptionError(
            f"table must be a hetplace.data.GavelTable (hetplace.data.load_gavel(path)) or None for the shipped "
            f"table; got {type(table).__name__}."
        )
    return table


def _reference_rate(table, model, n):
    """Steps/s of ``model`` alone on ``n`` V100s (0 when the table has no figure)."""
    if REFERENCE_TYPE not in table.types or n not in table.gpu_counts:
        return 0.0
    return table.steps_per_second(model, REFERENCE_TYPE, n)


def gavel_trace(n_jobs, rate, seed, multi_gpu=False, table=None):
    """A synthetic trace drawn with Gavel's published generator recipe.

    Parameters
    ----------
    n_jobs : int
        Jobs in the trace (>= 1).
    rate : float
        Mean arrival rate in jobs per hour (> 0): inter-arrival times are
        exponential with mean ``3600 / rate`` seconds; the first job arrives at 0.
    seed : int
        Seed of the trace (numpy ``default_rng``); the same seed gives the same trace.
    multi_gpu : bool
        False: every job requests 1 GPU.  True: 1, 2, 4 or 8 GPUs with
        probabilities 0.7 / 0.1 / 0.15 / 0.05.
    table : hetplace.data.GavelTable, optional
        Throughput table (default: the one shipped with hetplace).

    Returns
    -------
    tuple of Job
        By ``job_id`` (= arrival order).

    Notes
    -----
    Durations are ``10**U(1.5, 3)`` minutes with probability 0.8, else
    ``10**U(3, 4)`` minutes.  The model is uniform over the table's models
    that have a V100 figure at the job's scale factor (Gavel draws the scale
    factor first and redraws the model until it supports it), and
    ``total_steps = duration * steps_per_second(model, "v100", scale_factor)``.
    Gavel's simulator draws with Python's ``random``; this one with numpy, so
    the traces have the same distribution, not the same jobs.
    """
    n_jobs = check_positive_int("n_jobs", n_jobs, allow_none=False, maximum=10**7)
    if not is_real_scalar(rate) or not (0 < float(rate) < math.inf):
        raise InvalidOptionError(f"rate must be a positive, finite number of jobs per hour; got {rate!r}.")
    rate = float(rate)
    seed = check_seed(seed)
    if not isinstance(multi_gpu, (bool, np.bool_)):
        raise InvalidOptionError(f"multi_gpu must be True or False; got {multi_gpu!r}.")
    table = _table(table)
    eligible = {}
    for n in SCALE_FACTORS if multi_gpu else (1,):
        eligible[n] = [m for m in table.models if _reference_rate(table, m, n) > 0]
        if not eligible[n]:
            raise InvalidOptionError(
                f"the throughput table {table.path} has no model with a {REFERENCE_TYPE} figure on {n} GPU(s); "
                "pass a Gavel-format table with those measurements."
            )
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0 / rate, size=n_jobs)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    short = rng.random(n_jobs) < SHORT_P
    u = rng.random(n_jobs)
    lo = np.where(short, SHORT_LOG10_MIN[0], LONG_LOG10_MIN[0])
    hi = np.where(short, SHORT_LOG10_MIN[1], LONG_LOG10_MIN[1])
    minutes = 10.0 ** (lo + (hi - lo) * u)
    if multi_gpu:
        scale = rng.choice(np.array(SCALE_FACTORS), size=n_jobs, p=np.array(SCALE_FACTOR_P))
    else:
        scale = np.ones(n_jobs, dtype=np.int64)
    pick = rng.random(n_jobs)
    jobs = []
    for j in range(n_jobs):
        n = int(scale[j])
        models = eligible[n]
        model = models[min(int(pick[j] * len(models)), len(models) - 1)]
        duration = float(minutes[j] * 60.0)
        jobs.append(Job(j, model, float(arrivals[j]), duration * _reference_rate(table, model, n), n, duration))
    return tuple(jobs)


_TRACE_FIELDS = 10


def read_trace(path, table=None):
    """Read a Gavel ``.trace`` file (tab-separated, one job per line).

    Parameters
    ----------
    path : str or path-like
        Lines of ``job_type, command, working_directory, num_steps_arg,
        needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
        arrival_time`` separated by tabs (Gavel's format).  Blank lines are skipped.
    table : hetplace.data.GavelTable, optional
        For ``duration`` (``total_steps`` over the V100 figure at the scale
        factor; NaN without one) and to check the model names.  Default: the
        shipped table.

    Returns
    -------
    tuple of Job
        In file order; ``job_id`` is the position.

    Raises
    ------
    InvalidProblemError
        A line with another number of fields, a non-numeric field, a scale
        factor < 1, negative steps or arrival, or a model the table does not know.
    """
    table = _table(table)
    p = Path(os.fspath(path))
    jobs = []
    with open(p, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            where = f"{p}:{lineno}"
            if len(parts) != _TRACE_FIELDS:
                raise InvalidProblemError(
                    f"{where} has {len(parts)} tab-separated fields; a Gavel trace line has {_TRACE_FIELDS} "
                    "(job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps, "
                    "scale_factor, priority_weight, SLO, arrival_time)."
                )
            model = parts[0]
            if model not in table.models:
                raise InvalidProblemError(f"{where}: model {model!r} is not in the throughput table {table.path}.")
            try:
                steps, scale, arrival = float(parts[5]), int(parts[6]), float(parts[9])
            except ValueError:
                raise InvalidProblemError(
                    f"{where}: total_steps ({parts[5]!r}), scale_factor ({parts[6]!r}) and arrival_time "
                    f"({parts[9]!r}) must be numbers (scale_factor a whole one)."
                ) from None
            if not (math.isfinite(steps) and steps > 0) or scale < 1 or not (math.isfinite(arrival) and arrival >= 0):
                raise InvalidProblemError(
                    f"{where}: needs total_steps > 0, scale_factor >= 1 and arrival_time >= 0; got "
                    f"{steps!r}, {scale!r}, {arrival!r}."
                )
            ref = _reference_rate(table, model, scale)
            jobs.append(Job(len(jobs), model, arrival, steps, scale, steps / ref if ref > 0 else math.nan))
    if not jobs:
        raise InvalidProblemError(f"{p} holds no job; a Gavel trace has one tab-separated line per job.")
    return tuple(jobs)


def write_trace(trace, path):
    """Write ``trace`` (a sequence of :class:`Job`) as a Gavel ``.trace`` file that :func:`read_trace` reads back.

    The fields Gavel needs to launch real jobs (command, working directory,
    ...) are written as placeholders; priority weight 1, SLO -1.
    """
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        for job in trace:
            f.write("\t".join([job.model, "-", "-", "-", "0", repr(float(job.total_steps)), str(int(job.scale_factor)),
                               "1", "-1.000000", repr(float(job.arrival))]) + "\n")
