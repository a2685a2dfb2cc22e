"""A lower bound on the average JCT any policy reaches on a trace (docs/online.md §9)."""

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidOptionError

__all__ = ["LowerBound", "lower_bound"]


@dataclass(frozen=True)
class LowerBound:
    """Per-job lower bounds on the JCT (seconds) and their average over the measured jobs.

    Attributes
    ----------
    job_ids : ndarray of int
        The measured jobs, by id.
    jct : ndarray of float
        Each job's bound: the wait to the first round boundary at or after its
        arrival plus its steps at the fastest rate any allocation allows it.
    avg_jct : float
        Mean of ``jct`` (seconds).
    rigid : bool
        Whether allocations were limited to the job's scale factor of GPUs.
    """

    job_ids: np.ndarray
    jct: np.ndarray
    avg_jct: float
    rigid: bool


def lower_bound(trace, cluster, table=None, measure=None, round_s=360.0, rigid=False):
    """Each job alone on the cluster, on its fastest allocation: a lower bound on every policy's JCT.

    Parameters
    ----------
    trace : sequence of Job
        :func:`gavel_trace` or :func:`read_trace`.
    cluster : dict or str
        As for :func:`simulate`.
    table : hetplace.data.GavelTable, optional
        Default: the shipped table.
    measure : (int, int), optional
        Job ids ``first .. last - 1`` to average over (as for :func:`simulate`).
    round_s : float
        The simulator's round length: a job starts at the first round boundary
        at or after its arrival.
    rigid : bool
        False (default): any allocation of at most all the cluster's GPUs (the
        bound for ``"smp"``).  True: at most the job's scale factor of GPUs
        (the bound for policies that keep the trace's counts).

    Returns
    -------
    LowerBound

    Notes
    -----
    Under the progress model (docs/online.md §2) no allocation of N GPUs runs
    faster than the best one-type figure of the table on at most ``up(N)``
    GPUs (:meth:`ProgressModel.bound`, over the cluster's types), so
    ``JCT_j >= (ceil(a_j / round_s) round_s - a_j) + steps_j / bound_j``
    whatever the policy.  It ignores that jobs compete for the GPUs, so near
    saturation the gap to any policy is mostly queueing.
    """
    from .progress import ProgressModel
    from .simulator import _measure_iv, _setup_iv, _trace_iv

    table, cluster, round_s, _ = _setup_iv(table, cluster, round_s)
    if not isinstance(rigid, (bool, np.bool_)):
        raise InvalidOptionError(f"rigid must be True or False; got {rigid!r}.")
    jobs = _trace_iv(trace, table)
    window = _measure_iv(measure, jobs)
    model = ProgressModel(table)
    types = tuple(g for g, n in cluster.items() if n > 0)
    K = sum(cluster.values())
    ids, out = [], []
    for j in jobs:
        if window is not None and not window[0] <= j.job_id < window[1]:
            continue
        rate = model.bound(j.model, j.scale_factor if rigid else K, types)
        if rate <= 0:
            raise InvalidOptionError(
                f"job {j.job_id} ({j.model!r}) cannot run on the cluster's types {types}; no bound exists."
            )
        start = math.ceil(j.arrival / round_s) * round_s
        if start < j.arrival:
            start += round_s
        ids.append(j.job_id)
        out.append(start - j.arrival + j.total_steps / rate)
    jct = np.asarray(out)
    return LowerBound(np.asarray(ids, dtype=np.int64), jct, float(jct.mean()), bool(rigid))
