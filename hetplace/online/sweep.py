"""Sweeps of simulations (policies x rates x seeds) on hetplace's executors, their files and plots.

Used by ``hetplace simulate``; the tasks go through :func:`hetplace.bench.make_executor`
executors (process pool, serial, Dask) exactly as benchmark sweeps do.
"""

import itertools
import json
import math
from pathlib import Path

import numpy as np

from .._results_dir import add_plots, write_csv, write_json
from ..errors import InvalidOptionError, MissingDependencyError

__all__ = ["simulation_payloads", "run_simulations", "write_simulations"]

#: Columns of the sweep's ``summary.csv`` (one row per policy, rate and seed).
SWEEP_COLUMNS = ("policy", "rate", "seed", "status", "n_measured", "n_finished", "avg_jct_hours", "p99_jct_hours",
                 "makespan_hours", "utilization", "ftf_mean", "ftf_worst", "restarts_per_job", "gpu_hours",
                 "decision_time_median_ms", "decision_time_p95_ms", "wall_time", "restart", "restart_gpu_hours",
                 "slow_decisions", "label")


def simulation_payloads(policies, rates, seeds, *, n_jobs, cluster, multi_gpu=False, restart="none", measure=None,
                        round_s=360.0, trace_path=None, progress=False, policy_options=None, job_table="current"):
    """One plain-data task per (policy, rate, seed); a trace file fixes the trace (``rates`` then ignored).

    Every input is checked here, before any task is dispatched, so a bad one is reported as
    itself (an :class:`~hetplace.errors.InvalidOptionError` naming it), not as a failed task.
    """
    policies, rates, seeds = _sweep_iv(policies, rates, seeds, n_jobs, cluster, restart, measure, round_s,
                                       trace_path, policy_options, job_table)
    rates = [None] if trace_path is not None else list(rates)
    out = []
    for policy, rate, seed in itertools.product(policies, rates, seeds):
        out.append(dict(policy=policy, rate=rate, seed=int(seed), n_jobs=n_jobs, cluster=dict(cluster),
                        multi_gpu=bool(multi_gpu), job_table=job_table, restart=restart, measure=measure,
                        round_s=round_s,
                        trace_path=None if trace_path is None else str(trace_path), progress=progress,
                        policy_options=dict((policy_options or {}).get(policy, {}))))
    return out


def _listed(name, values, example):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidOptionError(f"{name} must be a list, e.g. {example}; got {type(values).__name__} {values!r}.")
    values = list(values)
    if not values:
        raise InvalidOptionError(f"{name} must hold at least one value, e.g. {example}; got none.")
    return values


def _sweep_iv(policies, rates, seeds, n_jobs, cluster, restart, measure, round_s, trace_path, policy_options,
              job_table):
    """Check a sweep's inputs in the calling process; returns ``(policies, rates, seeds)`` as lists."""
    from .._validation import check_choice, check_positive_int, check_seed, is_real_scalar
    from .policies import make_policy
    from .progress import ProgressModel
    from .simulator import _setup_iv
    from .trace import JOB_TABLES

    table, _, _, _ = _setup_iv(None, cluster, round_s)
    ProgressModel(table, restart)
    if policy_options is not None and not isinstance(policy_options, dict):
        raise InvalidOptionError(f"policy_options must be None or a dict {{policy: {{option: value}}}}; got "
                                 f"{policy_options!r}.")
    policies = _listed("policies", policies, "['smp', 'las-aware']")
    for name in policies:
        make_policy(name, **dict((policy_options or {}).get(name, {})))
    seeds = _listed("seeds", seeds, "[0, 1, 2]")
    for seed in seeds:
        if check_seed(seed) is None:
            raise InvalidOptionError("seeds must be non-negative integers (a trace and a policy are seeded); got None.")
    if trace_path is None:
        rates = _listed("rates", rates, "[2.6, 4.8]")
        for rate in rates:
            if not is_real_scalar(rate) or not 0 < float(rate) < math.inf:
                raise InvalidOptionError(f"rates must be positive, finite numbers of jobs per hour; got {rate!r}.")
        check_choice("job_table", job_table, JOB_TABLES)
        check_positive_int("n_jobs", n_jobs, allow_none=False, maximum=10**7)
    if measure is not None and (isinstance(measure, (str, bytes)) or not hasattr(measure, "__len__")
                                or len(measure) != 2):
        raise InvalidOptionError(f"measure must be None or (first, last) job ids, e.g. (4000, 5000); got {measure!r}.")
    return policies, rates, seeds


def _simulate_task(payload):
    """Worker task: one simulation; returns plain data (summary, per-job table, rounds)."""
    import time

    from .policies import make_policy
    from .simulator import simulate
    from .trace import gavel_trace, read_trace

    if payload["trace_path"] is not None:
        trace = read_trace(payload["trace_path"])
    else:
        trace = gavel_trace(payload["n_jobs"], payload["rate"], payload["seed"], multi_gpu=payload["multi_gpu"],
                            job_table=payload.get("job_table", "current"))
    t0 = time.perf_counter()
    policy = make_policy(payload["policy"], **payload["policy_options"])
    res = simulate(trace, payload["cluster"], policy, round_s=payload["round_s"], restart=payload["restart"],
                   measure=payload["measure"], seed=payload["seed"], progress=payload["progress"])
    wall = time.perf_counter() - t0
    return dict(payload=payload, summary=dict(res.summary(), wall_time=wall), jobs=res.job_rows(),
                rounds={k: v.tolist() for k, v in res.rounds.items()})


def run_simulations(payloads, executor, progress=False):
    """Run the payloads on ``executor`` (see :func:`hetplace.bench.make_executor`); results in payload order."""
    from .._executors import _execute, _Progress

    bar = _Progress(len(payloads), progress and len(payloads) > 1, desc="hetplace simulate", unit="simulation")
    try:
        return _execute(executor, payloads, bar, task=_simulate_task)
    finally:
        bar.close()


def _stem(p):
    rate = "trace" if p["rate"] is None else f"rate{p['rate']:g}"
    return f"{p['policy']}_{rate}_seed{p['seed']}"


def _row(r):
    s, p = r["summary"], r["payload"]
    h = lambda v: None if v is None else v / 3600.0
    ms = lambda v: None if v is None else v * 1e3
    return dict(policy=p["policy"], rate=p["rate"], seed=p["seed"], status=s["status"], n_measured=s["n_measured"],
                n_finished=s["n_finished"], avg_jct_hours=h(s["avg_jct"]), p99_jct_hours=h(s["p99_jct"]),
                makespan_hours=h(s["makespan"]), utilization=s["utilization"], ftf_mean=s["ftf_mean"],
                ftf_worst=s["ftf_worst"], restarts_per_job=s["restarts_per_job"], gpu_hours=s["gpu_hours"],
                decision_time_median_ms=ms(s["decision_time_median"]), decision_time_p95_ms=ms(s["decision_time_p95"]),
                wall_time=s["wall_time"], restart=_restart_text(s.get("restart")),
                restart_gpu_hours=s.get("restart_gpu_hours"), slow_decisions=s.get("slow_decisions"),
                label=_label(p["policy"]))


def _restart_text(restart):
    return restart if isinstance(restart, str) or restart is None else json.dumps(restart)


def _label(name):
    """The policy's table label (what the row is: oracle or not, simplified or not)."""
    from .policies import policy_label

    return policy_label(name)


def summary_table(results):
    """Markdown table of the sweep: one row per policy, rate and seed."""
    cols = ("policy", "rate", "seed", "label", "restart", "avg_jct_hours", "p99_jct_hours", "ftf_worst", "restarts_per_job",
            "gpu_hours", "restart_gpu_hours", "utilization", "decision_time_median_ms", "slow_decisions", "wall_time")
    head = ("policy", "rate (jobs/h)", "seed", "what it is", "restart model", "avg JCT (h)", "p99 JCT (h)", "worst FTF",
            "restarts/job", "GPU-hours", "GPU-hours lost to restarts", "utilization", "decision (ms, median)",
            "decisions over limit", "wall (s)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        row = _row(r)
        cells = []
        for c in cols:
            v = row[c]
            cells.append("-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_simulations(results, out_dir, plots=True, meta=None):
    """Write every simulation's files, ``summary.csv``, ``summary.json``, ``summary.md`` and the plots.

    Returns ``{kind: path}``; ``"plots_skipped"`` holds the reason when matplotlib is missing.
    """
    from .result import JOB_COLUMNS

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        stem = _stem(r["payload"])
        write_csv(out / f"{stem}_jobs.csv", JOB_COLUMNS, r["jobs"])
        write_json(out / f"{stem}_summary.json", r["summary"])
    rows = [_row(r) for r in results]
    paths = {"csv": write_csv(out / "summary.csv", SWEEP_COLUMNS, rows, cell=lambda v: "" if v is None else v),
             "json": write_json(out / "summary.json", {"meta": meta or {}, "rows": rows}),
             "summary": out / "summary.md"}
    paths["summary"].write_text(summary_table(results), encoding="utf-8")
    if plots:
        add_plots(paths, lambda: _plot(results, out))
    return paths


def _plot(results, out):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("PNG plots need matplotlib: pip install matplotlib") from None
    policies = list(dict.fromkeys(r["payload"]["policy"] for r in results))
    rates = list(dict.fromkeys(r["payload"]["rate"] for r in results))
    paths = {}
    # JCT CDF per policy, one panel per rate (all seeds pooled)
    fig = Figure(figsize=(4.5 * len(rates), 3.6), dpi=90, layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(rates)))
    for ax, rate in zip(axes, rates):
        for pol in policies:
            jct = [row["jct"] / 3600 for r in results if r["payload"]["policy"] == pol and r["payload"]["rate"] == rate
                   for row in r["jobs"] if row["measured"] and math.isfinite(row["jct"])]
            if jct:
                x = np.sort(jct)
                ax.plot(x, np.arange(1, x.size + 1) / x.size, label=pol, lw=1.2)
        ax.set_xscale("log")
        ax.set_xlabel("JCT (hours)")
        ax.set_ylabel("fraction of jobs")
        ax.set_title("JCT CDF" + ("" if rate is None else f", {rate:g} jobs/h"), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    p = out / "jct_cdf.png"
    fig.savefig(p)
    paths["jct_cdf"] = p
    if len(rates) > 1:
        fig = Figure(figsize=(5, 3.8), dpi=90, layout="constrained")
        ax = fig.add_subplot()
        for pol in policies:
            xs, ys = [], []
            for rate in rates:
                v = [r["summary"]["avg_jct"] for r in results if r["payload"]["policy"] == pol
                     and r["payload"]["rate"] == rate and r["summary"]["avg_jct"] is not None]
                if v:
                    xs.append(rate)
                    ys.append(float(np.mean(v)) / 3600)
            ax.plot(xs, ys, marker="o", ms=3, label=pol)
        ax.set_xlabel("arrival rate (jobs/hour)")
        ax.set_ylabel("average JCT (hours, mean over seeds)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        p = out / "avg_jct_vs_rate.png"
        fig.savefig(p)
        paths["avg_jct_vs_rate"] = p
    fig = Figure(figsize=(6, 3.6), dpi=90, layout="constrained")
    ax = fig.add_subplot()
    first_seed = results[0]["payload"]["seed"]
    for pol in policies:
        for r in results:
            p_ = r["payload"]
            if p_["policy"] == pol and p_["rate"] == rates[-1] and p_["seed"] == first_seed:
                t = np.asarray(r["rounds"]["time"]) / 3600
                busy = np.asarray(r["rounds"]["busy"])
                w = max(1, busy.size // 200)  # smoothed over ~1/200 of the run
                if busy.size:
                    sm = np.convolve(busy, np.ones(w) / w, mode="same")
                    ax.plot(t, sm, lw=1, label=pol)
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("GPU utilisation")
    ax.set_ylim(0, 1.05)
    rate = rates[-1]
    ax.set_title("GPU utilisation over time" + ("" if rate is None else f", {rate:g} jobs/h") + f", seed {first_seed}",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    p = out / "utilization.png"
    fig.savefig(p)
    paths["utilization"] = p
    return paths
