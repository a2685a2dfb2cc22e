"""Job traces of the online simulator (docs/online.md §1): Gavel's generator recipe and its .trace files."""

import math
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_positive_int, check_seed, is_real_scalar
from ..errors import InvalidOptionError, InvalidProblemError

__all__ = ["Job", "gavel_trace", "read_trace", "write_trace", "SCALE_FACTORS", "SCALE_FACTOR_P", "REFERENCE_TYPE",
           "GENERATORS", "JOB_TABLES"]

#: Requested GPU counts of a multi-GPU trace and their probabilities (Gavel's recipe).
SCALE_FACTORS = (1, 2, 4, 8)
SCALE_FACTOR_P = (0.7, 0.1, 0.15, 0.05)
#: The GPU type a job's ``total_steps`` is measured on (``duration`` x its throughput there).
REFERENCE_TYPE = "v100"
#: Short jobs: 10**U(1.5, 3) minutes with this probability, else long ones: 10**U(3, 4) minutes.
SHORT_P = 0.8
SHORT_LOG10_MIN = (1.5, 3.0)
LONG_LOG10_MIN = (3.0, 4.0)
#: Generators of :func:`gavel_trace`: Gavel's own draws (default) or numpy's.
GENERATORS = ("gavel", "numpy")


#: Orders of Gavel's job table for ``gavel_trace(job_table=...)``: ``"current"``, the order of
#: Gavel's repository since its commit 19a0dd2 (2020-08-29); ``"figures"``, the order before it,
#: with which the logs behind Gavel's published continuous-trace figures were generated (its
#: notebooks' outputs date from 2020-05-19).
JOB_TABLES = ("current", "figures")


def _gavel_job_table(order="current"):
    """Gavel's job templates in the order its generator picks from: (model string, runs on several GPUs).

    The two orders hold the same 26 templates; ``"figures"`` has A3C between the
    Transformer and LM templates, ``"current"`` after the Recommendation ones.
    """
    head = [(f"ResNet-18 (batch size {b})", True) for b in (16, 32, 64, 128, 256)]
    head += [(f"ResNet-50 (batch size {b})", True) for b in (16, 32, 64, 128)]
    head += [(f"Transformer (batch size {b})", True) for b in (16, 32, 64, 128, 256)]
    lm = [(f"LM (batch size {b})", True) for b in (5, 10, 20, 40, 80)]
    rec = [(f"Recommendation (batch size {b})", False) for b in (512, 1024, 2048, 4096, 8192)]
    if order == "figures":
        return head + [("A3C", False)] + lm + rec + [("CycleGAN", False)]
    return head + lm + rec + [("A3C", False), ("CycleGAN", False)]


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


def gavel_trace(n_jobs, rate, seed, multi_gpu=False, table=None, generator="gavel", job_table="current"):
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
    generator : {"gavel", "numpy"}
        ``"gavel"`` (default): the draws of Gavel's simulator itself, in its
        order and with its seeds (Python's ``random``: jobs from
        ``Random(seed + 2)``, arrivals from ``Random(seed + 3)``), so that seed
        ``s`` holds the jobs Gavel's continuous-trace simulation generates with
        ``--seeds s`` (its published figures use seeds 0-2).  Needs the 26
        models of Gavel's job table in ``table``.  ``"numpy"``: the same
        distribution drawn with numpy's ``default_rng(seed)`` over the table's
        models.
    job_table : {"current", "figures"}
        With ``generator="gavel"``, the order of Gavel's job table the model
        draws index into.  ``"current"`` (default): the order in Gavel's
        repository today.  ``"figures"``: the order Gavel's published
        continuous-trace figures were generated with (before its commit
        19a0dd2, A3C sat between the Transformer and LM templates).  A
        single-GPU trace keeps its arrivals and durations and only relabels
        models; a multi-GPU trace differs from the first redraw of a template
        on, since the redraws land on other templates (seed 0, 2.6 jobs/hour:
        jobs 4000-4999 average 18.42 h alone on V100s with ``"figures"``,
        17.68 h with ``"current"``; Gavel's published light-load average JCT
        of its heterogeneity-aware policies, 18.55 h, matches the former).
        Ignored by ``generator="numpy"``.

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
    With ``generator="gavel"`` every job draws, from the job stream, a
    uniform number that sets its scale factor (1 below 0.7, 2 up to 0.8, 4 up
    to 0.95, else 8; drawn even for a single-GPU trace, which then uses 1), a
    uniform number that picks short or long, the log-uniform duration, then
    templates uniformly from Gavel's job table until one can run on that many
    GPUs; the gap to the next arrival is ``-log(1 - u) * 3600 / rate`` with
    ``u`` from the arrival stream.  docs/online.md §1.
    """
    n_jobs = check_positive_int("n_jobs", n_jobs, allow_none=False, maximum=10**7)
    if not is_real_scalar(rate) or not (0 < float(rate) < math.inf):
        raise InvalidOptionError(f"rate must be a positive, finite number of jobs per hour; got {rate!r}.")
    rate = float(rate)
    seed = check_seed(seed)
    if not isinstance(multi_gpu, (bool, np.bool_)):
        raise InvalidOptionError(f"multi_gpu must be True or False; got {multi_gpu!r}.")
    generator = check_choice("generator", generator, GENERATORS)
    job_table = check_choice("job_table", job_table, JOB_TABLES)
    table = _table(table)
    if generator == "gavel":
        return _gavel_draws(n_jobs, rate, seed, bool(multi_gpu), table, job_table)
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


def _gavel_draws(n_jobs, rate, seed, multi_gpu, table, job_table="current"):
    """Gavel's own generator (see :func:`gavel_trace`), re-implemented from its description."""
    templates = _gavel_job_table(job_table)
    missing = [m for m, _ in templates if m not in table.models]
    if missing:
        raise InvalidOptionError(
            f"generator='gavel' needs Gavel's 26 job-table models in the throughput table; {table.path} lacks "
            f"{missing[:3]}{'...' if len(missing) > 3 else ''}. Pass generator='numpy' to draw over the table's models."
        )
    if seed is None:
        raise InvalidOptionError("generator='gavel' needs an integer seed (Gavel seeds its streams with seed + 2, "
                                 "seed + 3); got None.")
    jobs_rng = random.Random(seed + 2)
    gaps_rng = random.Random(seed + 3)
    mean_gap = 3600.0 / rate
    arrival = 0.0
    jobs = []
    for j in range(n_jobs):
        u = jobs_rng.uniform(0.0, 1.0)
        n = 1 if u < 0.7 else 2 if u <= 0.8 else 4 if u <= 0.95 else 8
        if jobs_rng.random() >= SHORT_P:
            minutes = 10.0 ** jobs_rng.uniform(*LONG_LOG10_MIN)
        else:
            minutes = 10.0 ** jobs_rng.uniform(*SHORT_LOG10_MIN)
        if not multi_gpu:
            n = 1
        while True:
            model, distributed = templates[jobs_rng.randrange(len(templates))]
            if n == 1 or distributed:
                break
        ref = _reference_rate(table, model, n)
        if ref <= 0:
            raise InvalidOptionError(
                f"the throughput table {table.path} has no {REFERENCE_TYPE} figure for {model!r} on {n} GPU(s), which "
                "Gavel's generator can draw; pass a table with it or generator='numpy'."
            )
        duration = minutes * 60.0
        jobs.append(Job(j, model, arrival, duration * ref, n, duration))
        arrival += -math.log(1.0 - gaps_rng.random()) * mean_gap
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
