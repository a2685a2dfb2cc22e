"""Sia's Table 3 on its own ground (docs/online.md §10): every policy on every workload of a trace set, pooled.

:func:`sia_table` runs each policy on each workload of one of Sia's trace sets (a user's checkout
of Sia's artifact), spread over an executor, and pools the figures the way Sia's
``utils/print_run_stats.py`` does: the average JCT over every job of every workload, its standard
deviation over the per-workload means, the p99 of the pooled JCTs (the element at
``floor(0.99 N)`` of the sorted list), the makespan averaged over workloads, the GPU-hours per
job over every job.
"""

import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidOptionError, InvalidProblemError
from .goodput import (
    POLLUX_CLUSTER,
    POLLUX_MODEL,
    SIA_TRACE_SETS,
    GoodputModel,
    _sim_root,
    read_sia_workload,
    sia_workloads,
)

__all__ = ["sia_table", "SiaTable", "SiaTableRow", "SIA_TABLE3", "SIA_DECISION_MS", "plot_sia_table"]

#: Sia's published Table 3 (heterogeneous 64 GPUs): ``{trace set: {policy: (average JCT h, p99 JCT h,
#: makespan h, GPU-hours per job)}}``, from the pre-publication draft in Sia's artifact.
SIA_TABLE3 = {
    "philly": {"sia": (0.6, 9.5, 14.2, 4.0), "pollux": (1.0, 14.9, 24.5, 5.6), "gavel-mst": (1.9, 30.0, 33.8, 9.0)},
    "helios": {"sia": (0.7, 10.9, 14.9, 4.8), "pollux": (1.0, 15.0, 25.5, 5.9),
               "gavel-mst": (2.5, 38.7, 43.0, 12.1)},
    "newtrace": {"sia": (0.7, 4.6, 52.2, 3.0), "pollux": (1.5, 10.3, 62.3, 3.4),
                 "gavel-mst": (11.3, 98.1, 110.0, 6.4)},
}
#: Pollux's own published simulation (its artifact's ``results-jobload/pollux-1.0/summary.json``, 16 x 4
#: T4, its eight workloads): the average JCT in hours, pooled.
SIA_TABLE3["pollux"] = {"pollux": (2751.13359375 / 3600.0,)}
#: Sia's published policy time at 64 GPUs, ``{policy: (median ms, p95 ms)}`` (same draft).
SIA_DECISION_MS = {"sia": (96.0, 426.0), "pollux": (2200.0, 4800.0), "gavel-mst": (13.0, 28.0)}


@dataclass(frozen=True)
class SiaTableRow:
    """One policy on one trace set, pooled over its workloads (times in hours, decisions in ms)."""

    policy: str
    trace_set: str
    n_workloads: int
    n_jobs: int
    n_unfinished: int
    avg_jct_h: float
    avg_jct_std_h: float
    p99_h: float
    makespan_h: float
    gpu_h_per_job: float
    restarts_per_job: float
    decision_ms_median: float
    decision_ms_p95: float
    round_s: float
    #: Seconds one workload's simulation took (wall clock, in its worker): median and largest.
    sim_s_median: float = math.nan
    sim_s_max: float = math.nan
    #: CPU seconds of all its workloads' simulations (their workers' process time): what the set costs
    #: the machine, whatever else runs beside it.
    sim_cpu_s: float = math.nan


class SiaTable:
    """What :func:`sia_table` returns: ``rows`` (one :class:`SiaTableRow` per policy) and the published figures."""

    def __init__(self, trace_set, rows, workloads):
        self.trace_set, self.rows, self.workloads = trace_set, tuple(rows), tuple(workloads)

    def to_dicts(self):
        """The rows as plain dicts."""
        return [asdict(r) for r in self.rows]

    def to_markdown(self):
        """A markdown table of the rows, with Sia's published figures beside them where it has one."""
        pub = SIA_TABLE3.get(self.trace_set, {})
        lines = [f"Trace set {self.trace_set} ({len(self.workloads)} workloads); published: Sia's Table 3", "",
                 "| policy | avg JCT (h) | std | p99 (h) | makespan (h) | GPU-h/job | restarts/job | decision "
                 "median / p95 (ms) | simulation median / max (s), CPU total (s) | published avg / p99 / makespan / "
                 "GPU-h |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            p = pub.get(r.policy)
            ps = " / ".join(f"{v:g}" for v in p) if p else "-"
            unf = f" ({r.n_unfinished} unfinished)" if r.n_unfinished else ""
            lines.append(f"| {r.policy}{unf} | {r.avg_jct_h:.2f} | {r.avg_jct_std_h:.2f} | {r.p99_h:.1f} | "
                         f"{r.makespan_h:.1f} | {r.gpu_h_per_job:.2f} | {r.restarts_per_job:.2f} | "
                         f"{r.decision_ms_median:.1f} / {r.decision_ms_p95:.1f} | "
                         f"{r.sim_s_median:.0f} / {r.sim_s_max:.0f}, {r.sim_cpu_s:.0f} | {ps} |")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return f"SiaTable({self.trace_set!r}, {len(self.rows)} policies, {len(self.workloads)} workloads)"


def _round_of(name, round_s):
    from .goodput_policies import GOODPUT_POLICIES
    from .goodput_sim import ROUND_S

    if round_s is not None:
        return float(round_s)
    return float(getattr(GOODPUT_POLICIES[name], "round_s", ROUND_S))


#: Profiles read in this process, by (checkout, model options).
_MODELS = {}


def _run_workload(artifacts, path, name, options, round_s, max_hours, model_options=None, cluster=None):
    """One policy on one workload, in a worker: the per-job figures and decision times."""
    from .goodput_policies import make_goodput_policy
    from .goodput_sim import simulate_goodput

    key = (artifacts, repr(sorted((model_options or {}).items())))
    model = _MODELS.get(key)
    if model is None:  # once per worker process: the workloads of a set share its profiles (and their caches)
        model = _MODELS[key] = GoodputModel.from_sia(artifacts, **(model_options or {}))
    jobs = read_sia_workload(path)
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate_goodput(jobs, model, make_goodput_policy(name, **options), cluster=cluster, round_s=round_s,
                         max_hours=max_hours)
    sim_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return {"workload": str(path), "policy": name, "jct": r.jobs["jct"].tolist(),
            "arrival": r.jobs["arrival"].tolist(), "gpu_seconds": r.jobs["gpu_seconds"].tolist(),
            "restarts": r.jobs["restarts"].tolist(), "decision": r.rounds["decision_time"].tolist(),
            "status": r.status, "sim_s": sim_s, "cpu_s": cpu_s}


def _pool(name, trace_set, runs, round_s):
    jct = np.concatenate([np.asarray(r["jct"], dtype=np.float64) for r in runs])
    fin = np.isfinite(jct)
    done = np.sort(jct[fin]) / 3600.0
    per = [np.nanmean(np.asarray(r["jct"], dtype=np.float64)) / 3600.0 for r in runs]
    mk = []
    for r in runs:
        j = np.asarray(r["jct"], dtype=np.float64)
        a = np.asarray(r["arrival"], dtype=np.float64)
        mk.append(float(np.nanmax(a + j) - a.min()) / 3600.0 if np.isfinite(j).any() else math.nan)
    dec = np.concatenate([np.asarray(r["decision"], dtype=np.float64) for r in runs]) * 1e3
    n = jct.size
    return SiaTableRow(
        policy=name, trace_set=trace_set, n_workloads=len(runs), n_jobs=int(n), n_unfinished=int((~fin).sum()),
        avg_jct_h=float(done.mean()) if done.size else math.nan, avg_jct_std_h=float(np.std(per)),
        p99_h=float(done[int(math.floor(0.99 * done.size))]) if done.size else math.nan,
        makespan_h=float(np.mean(mk)),
        gpu_h_per_job=float(sum(np.sum(r["gpu_seconds"]) for r in runs) / 3600.0 / n),
        restarts_per_job=float(np.mean(np.concatenate([np.asarray(r["restarts"], dtype=np.float64) for r in runs]))),
        decision_ms_median=float(np.median(dec)) if dec.size else math.nan,
        decision_ms_p95=float(np.percentile(dec, 95)) if dec.size else math.nan, round_s=round_s,
        sim_s_median=float(np.median([r.get("sim_s", math.nan) for r in runs])),
        sim_s_max=float(np.max([r.get("sim_s", math.nan) for r in runs])),
        sim_cpu_s=float(np.sum([r.get("cpu_s", math.nan) for r in runs])),
    )


def sia_table(artifacts, trace_set, policies=("smp", "sia", "gavel-mst"), workloads=None, executor=None, options=None,
              round_s=None, max_hours=None, progress=False):
    """Sia's Table 3 for one trace set: each policy on each workload, pooled as Sia's own statistics script pools them.

    Parameters
    ----------
    artifacts : str or path-like
        A checkout of github.com/siasosp23/artifacts (or its ``sia-simulator/`` folder).
    trace_set : {"philly", "helios", "newtrace", "pollux"}
        ``"pollux"``: the workloads of Pollux's own artifact (``artifacts`` a checkout of it), on
        its 16 x 4 T4 with its simulator's settings (:data:`~hetplace.online.goodput.POLLUX_MODEL`).
    policies : sequence of str
        Goodput-world policy names (:data:`~hetplace.online.goodput_policies.GOODPUT_POLICIES`).
    workloads : sequence of int or path, optional
        Workload numbers of the set (``1`` is ``workload-1.csv``) or paths; default all.
    executor : executor, str or None
        An object with ``submit`` (a :func:`hetplace.bench.make_executor` executor), or a
        kind for it (``"process"``, ``"serial"``, ``"dask"``); default a local process pool.
    options : dict, optional
        ``{policy: {option: value}}`` passed to the policies.
    round_s : float, optional
        Round length for every policy; default each policy's own (Sia and Pollux 60 s,
        Gavel 360 s, as Sia ran them).
    max_hours : float, optional
        Give up on a workload after this many simulated hours (its unfinished jobs are counted).
    progress : bool
        Print one line per finished simulation on stderr.

    Returns
    -------
    SiaTable
    """
    from concurrent.futures import as_completed

    from .._executors import make_executor
    from .goodput_policies import GOODPUT_POLICIES

    if trace_set not in SIA_TRACE_SETS:
        raise InvalidOptionError(f"trace_set must be one of {', '.join(SIA_TRACE_SETS)}; got {trace_set!r}.")
    policies = [policies] if isinstance(policies, str) else list(policies)
    if not policies:
        raise InvalidOptionError("policies must name at least one goodput policy.")
    for p in policies:
        if p not in GOODPUT_POLICIES:
            raise InvalidOptionError(f"unknown goodput policy {p!r}; choose from {', '.join(GOODPUT_POLICIES)}.")
    options = dict(options or {})
    for p, o in options.items():
        if p not in policies or not isinstance(o, dict):
            raise InvalidOptionError(f"options must be {{policy: {{option: value}}}} for listed policies; got {p!r}.")
    root = _sim_root(artifacts)
    model_options, cluster = (POLLUX_MODEL, POLLUX_CLUSTER) if trace_set == "pollux" else ({}, None)
    model = GoodputModel.from_sia(root, **model_options)  # a missing or malformed profile fails here, once
    every = sia_workloads(root, trace_set)
    if workloads is None:
        paths = list(every)
    else:
        paths = []
        for w in workloads:
            if isinstance(w, (int, np.integer)) and not isinstance(w, bool):
                match = [p for p in every if p.stem == f"workload-{int(w)}"]
                if not match:
                    raise InvalidOptionError(f"workload {w} is not in the {trace_set} set ({len(every)} workloads).")
                paths.append(match[0])
            else:
                paths.append(Path(os.fspath(w)))
    for p in paths:
        for j in read_sia_workload(p):  # errors name the file
            if j.app not in model.profiles:
                raise InvalidProblemError(
                    f"{p}: job {j.name!r} runs application {j.app!r}, which {root / 'traces'} does not profile "
                    f"({', '.join(sorted(model.profiles))}).")
    tasks = [(str(root), str(p), name, options.get(name, {}), _round_of(name, round_s), max_hours, model_options,
              cluster) for name in policies for p in paths]
    results = {}

    def collect(r):
        results[(r["policy"], r["workload"])] = r
        if progress:
            import sys

            print(f"done {r['policy']} {Path(r['workload']).name}: {np.nanmean(r['jct']) / 3600:.2f} h "
                  f"({r['status']})", file=sys.stderr, flush=True)

    if executor is None or isinstance(executor, str):
        with make_executor(executor or "process", workers=min(len(tasks), os.cpu_count() or 1)) as ex:
            for fut in as_completed([ex.submit(_run_workload, *t) for t in tasks]):
                collect(fut.result())
    else:
        for fut in as_completed([executor.submit(_run_workload, *t) for t in tasks]):
            collect(fut.result())
    rows = [_pool(name, trace_set, [results[(name, str(p))] for p in paths], _round_of(name, round_s))
            for name in policies]
    return SiaTable(trace_set, rows, [str(p) for p in paths])


def plot_sia_table(table, folder):
    """``sia_table.png`` in ``folder``: average and p99 JCT per policy, Sia's published figures beside them.

    Returns ``{"plot": path}``; :class:`~hetplace.errors.MissingDependencyError` without matplotlib.
    """
    from ..errors import MissingDependencyError

    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("PNG plots need matplotlib: pip install matplotlib") from None
    pub = SIA_TABLE3.get(table.trace_set, {})
    fig = Figure(figsize=(8, 3.5))
    for col, (key, k, title) in enumerate((("avg_jct_h", 0, "average JCT (h)"), ("p99_h", 1, "p99 JCT (h)"))):
        ax = fig.add_subplot(1, 2, col + 1)
        names = [r.policy for r in table.rows]
        x = np.arange(len(names))
        ax.bar(x - 0.2, [getattr(r, key) for r in table.rows], 0.4, label="hetplace")
        ax.bar(x + 0.2, [pub[n][k] if n in pub and k < len(pub[n]) else np.nan for n in names], 0.4,
               label="Pollux's shipped results" if table.trace_set == "pollux" else "Sia's Table 3")
        ax.set_xticks(x, names)
        ax.set_title(f"{table.trace_set}: {title}")
        if col == 0:
            ax.legend()
    fig.tight_layout()
    path = Path(folder) / "sia_table.png"
    fig.savefig(path, dpi=110)
    return {"plot": path}
