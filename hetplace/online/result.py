"""Result of a simulation (docs/online.md §4): the per-job table and the figures of the contract."""

import csv
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._deprecated import renamed
from .._results_dir import write_csv, write_json
from ..errors import MissingDependencyError

__all__ = ["OnlineResult", "JOB_COLUMNS", "SUMMARY_KEYS"]

__getattr__ = renamed(__name__, {"SimulationResult": "OnlineResult"})  # the old name, deprecated

#: Columns of :meth:`OnlineResult.job_rows` / the per-job CSV.
JOB_COLUMNS = ("job_id", "model", "scale_factor", "arrival", "start", "finish", "jct", "gpu_seconds", "restarts",
               "types", "max_gpus", "total_steps", "done_steps", "ftf", "measured", "restart_gpu_seconds")
#: Keys of :meth:`OnlineResult.summary` (times in seconds).
SUMMARY_KEYS = ("policy", "status", "n_jobs", "n_measured", "n_finished", "avg_jct", "p99_jct", "avg_jct_hours",
                "makespan", "utilization", "ftf_mean", "ftf_worst", "restarts_per_job", "gpu_hours",
                "decision_time_median", "decision_time_p95", "rounds", "round_s", "restart", "window", "seed",
                "cluster", "message", "restart_gpu_hours", "decision_time_max", "decision_limit", "slow_decisions")


def _stall_message(stalled, rounds, round_s, show=5):
    """One line: when the simulation stopped and why its first ``show`` active jobs made no progress."""
    end = float(rounds["time"][-1] + round_s) if rounds["time"].size else 0.0
    items = sorted(stalled.items())
    text = "; ".join(f"job {jid}: {why}" for jid, why in items[:show])
    more = f"; and {len(items) - show} more" if len(items) > show else ""
    return (f"stalled at t = {end:g} s with {len(items)} active job(s) and no progress: {text}{more}" if items else
            f"stalled at t = {end:g} s with no progress")


class OnlineResult:
    """What :func:`hetplace.online.simulate` returns.

    Attributes
    ----------
    policy : str
    status : {"complete", "stalled"}
        ``"stalled"``: no job advanced for :data:`~hetplace.online.simulator.STALL_ROUNDS`
        rounds (plus the rounds the longest restart spans) while jobs were active and none
        was about to arrive; job figures cover the finished jobs.
    stalled : dict
        ``{job_id: reason}`` for the jobs active when a stalled simulation stopped
        (``{}`` when complete).
    message : str
        One line saying which jobs stalled and why (``""`` when complete).
    cluster : dict
    window : (int, int) or None
        The measured job ids ``first .. last - 1`` (None: all).
    jobs : dict of ndarray
        Per-job columns (:data:`JOB_COLUMNS`), every job of the trace in arrival order.
    rounds : dict of ndarray
        Per round: ``time`` (its start), ``busy`` (share of GPU-time in use),
        ``active`` and ``running`` job counts, ``decision_time`` (seconds).
    avg_jct, p99_jct : float
        Mean and 99th percentile JCT (seconds) of the measured finished jobs.
    makespan : float
        Time the last measured job finished (seconds).
    utilization : float
        Busy GPU-seconds over ``n_gpus * end`` (``end``: the end of the last round simulated).
    ftf_mean, ftf_worst : float
        Finish-time fairness of the measured jobs: mean and maximum of
        ``rho = JCT / JCT_isolated`` (docs/online.md §4); NaN in the goodput world
        (:func:`~hetplace.online.goodput_sim.simulate_goodput`), which defines no isolated share.
    restarts_per_job, gpu_hours : float
        Restarts (first starts not counted) per measured job; GPU-hours the
        measured jobs held.
    restart_gpu_hours : float
        GPU-hours the measured jobs held while paying restart delays (first
        starts included under the ``"flat30"`` and ``"sia"`` models): the
        GPU time lost to restarts, part of ``gpu_hours``.
    decision_time_median, decision_time_p95, decision_time_max : float
        Seconds per call of ``policy.decide``.
    decision_limit : float
        The simulation's ``decision_limit`` (seconds).
    slow_decisions : int
        Rounds whose decision took longer than ``decision_limit``.
    """

    def __init__(self, runs, cluster, policy, round_s, restart, window, rounds, status, progress, seed, stalled=None,
                 decision_limit=math.inf, slow_decisions=0):
        self.policy, self.cluster, self.round_s, self.window, self.status = policy, dict(cluster), round_s, window, status
        self.stalled = dict(stalled or {})
        self.message = _stall_message(self.stalled, rounds, round_s) if status == "stalled" else ""
        # as given, except numpy scalars (a number) and mappings (a plain dict), for JSON
        self.restart = (restart if isinstance(restart, (str, int, float)) else
                        dict(restart) if isinstance(restart, Mapping) else float(restart))
        self.seed = seed
        self.rounds = rounds
        n = len(runs)
        jct = np.array([r.finish - r.job.arrival for r in runs])
        measured = np.array([window is None or window[0] <= r.job.job_id < window[1] for r in runs])
        ftf = np.full(n, math.nan)
        for i, r in enumerate(runs):
            if progress is None or not math.isfinite(r.finish) or r.active_time <= 0:
                continue  # the goodput world defines no isolated share: no FTF there
            iso = progress.isolated_rate(r.job.model, r.job.scale_factor, cluster,
                                         max(r.active_n_time / r.active_time, 1.0))
            if iso > 0:
                ftf[i] = jct[i] / (r.job.total_steps / iso)
        self.jobs = {
            "job_id": np.array([r.job.job_id for r in runs], dtype=np.int64),
            "model": np.array([r.job.model for r in runs], dtype=object),
            "scale_factor": np.array([r.job.scale_factor for r in runs], dtype=np.int64),
            "arrival": np.array([r.job.arrival for r in runs]),
            "start": np.array([r.start for r in runs]),
            "finish": np.array([r.finish for r in runs]),
            "jct": jct,
            "gpu_seconds": np.array([r.gpu_seconds for r in runs]),
            "restarts": np.array([r.restarts for r in runs], dtype=np.int64),
            "types": np.array(["+".join(sorted(r.types)) for r in runs], dtype=object),
            "max_gpus": np.array([r.max_gpus for r in runs], dtype=np.int64),
            "total_steps": np.array([r.job.total_steps for r in runs]),
            "done_steps": np.array([r.done for r in runs]),
            "ftf": ftf,
            "measured": measured,
            "restart_gpu_seconds": np.array([r.restart_seconds for r in runs]),
        }
        fin = measured & np.isfinite(jct)
        j = jct[fin]
        self.n_jobs, self.n_measured, self.n_finished = n, int(measured.sum()), int(fin.sum())
        self.avg_jct = float(j.mean()) if j.size else math.nan
        self.p99_jct = float(np.percentile(j, 99)) if j.size else math.nan
        self.makespan = float(np.nanmax(self.jobs["finish"][fin])) if j.size else math.nan
        end = float(rounds["time"][-1] + round_s) if rounds["time"].size else 0.0
        self.utilization = float(rounds["busy"].sum() * round_s / end) if end > 0 else math.nan
        f = ftf[fin & np.isfinite(ftf)]
        self.ftf_mean = float(f.mean()) if f.size else math.nan
        self.ftf_worst = float(f.max()) if f.size else math.nan
        self.restarts_per_job = float(self.jobs["restarts"][measured].mean())
        self.gpu_hours = float(self.jobs["gpu_seconds"][measured].sum() / 3600.0)
        self.restart_gpu_hours = float(self.jobs["restart_gpu_seconds"][measured].sum() / 3600.0)
        d = rounds["decision_time"]
        self.decision_time_median = float(np.median(d)) if d.size else math.nan
        self.decision_time_p95 = float(np.percentile(d, 95)) if d.size else math.nan
        self.decision_time_max = float(d.max()) if d.size else math.nan
        self.decision_limit = float(decision_limit)
        self.slow_decisions = int(slow_decisions)

    def summary(self):
        """The figures as a JSON-ready dict (:data:`SUMMARY_KEYS`; NaN as None)."""
        out = {
            "policy": self.policy, "status": self.status, "n_jobs": self.n_jobs, "n_measured": self.n_measured,
            "n_finished": self.n_finished, "avg_jct": self.avg_jct, "p99_jct": self.p99_jct,
            "avg_jct_hours": self.avg_jct / 3600.0, "makespan": self.makespan, "utilization": self.utilization,
            "ftf_mean": self.ftf_mean, "ftf_worst": self.ftf_worst, "restarts_per_job": self.restarts_per_job,
            "gpu_hours": self.gpu_hours, "decision_time_median": self.decision_time_median,
            "decision_time_p95": self.decision_time_p95, "rounds": int(self.rounds["time"].size),
            "round_s": self.round_s, "restart": self.restart, "window": list(self.window) if self.window else None,
            "seed": self.seed, "cluster": self.cluster, "message": self.message,
            "restart_gpu_hours": self.restart_gpu_hours, "decision_time_max": self.decision_time_max,
            "decision_limit": self.decision_limit, "slow_decisions": self.slow_decisions,
        }
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}

    def job_rows(self):
        """The per-job table as a list of dicts (:data:`JOB_COLUMNS`)."""
        cols = [self.jobs[c].tolist() for c in JOB_COLUMNS]
        return [dict(zip(JOB_COLUMNS, vals)) for vals in zip(*cols)]

    def to_frame(self):
        """The per-job table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError("to_frame() needs pandas: pip install pandas") from None
        return pd.DataFrame({c: self.jobs[c] for c in JOB_COLUMNS})

    def write_csv(self, path):
        """Write the per-job table to ``path`` (CSV, :data:`JOB_COLUMNS`; empty cells for NaN)."""
        return Path(write_csv(path, JOB_COLUMNS, self.job_rows()))

    def write(self, out_dir, stem=None):
        """Write ``<stem>_jobs.csv``, ``<stem>_rounds.csv`` and ``<stem>_summary.json`` to ``out_dir``.

        ``stem`` defaults to the policy name.  Returns ``{kind: path}``.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = stem or self.policy
        paths = {"jobs": self.write_csv(out / f"{stem}_jobs.csv")}
        p = out / f"{stem}_rounds.csv"
        with open(p, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            keys = list(self.rounds)
            w.writerow(keys)
            for vals in zip(*(self.rounds[k].tolist() for k in keys)):
                w.writerow(vals)
        paths["rounds"] = p
        paths["summary"] = write_json(out / f"{stem}_summary.json", self.summary())
        return paths

    def __repr__(self):
        return (f"OnlineResult(policy={self.policy!r}, status={self.status!r}, jobs={self.n_finished}/"
                f"{self.n_measured}, avg_jct={self.avg_jct / 3600:.2f} h, p99_jct={self.p99_jct / 3600:.2f} h, "
                f"utilization={self.utilization:.3f}, restarts/job={self.restarts_per_job:.2f})")
