"""Every online policy on Gavel's two continuous traces at a light and a near-saturation rate, as one table.

    PYTHONPATH=. nice -n 10 python benchmarks/online_table.py --out online-table --workers 2
    PYTHONPATH=. nice -n 10 python benchmarks/online_table.py --out online-table --restart sia \
        --policies smp sia las-aware gavel-mst --setups multi:2.6 --extra-seeds

(``--restart flat30|sia`` charges restarts, first start included; ``--setups`` picks cells.)

runs every policy on trace seed 0, and Gavel's four policies, the Sia-like programme, ``smp`` and
``smp-fair`` on seed 1 too (72 simulations: about an hour with 2 workers on the project's busy
2-core machine, a third of it the Sia-like programme, which solves a CP-SAT model every round).
The traces are drawn with ``job_table="figures"``, the order of Gavel's published runs.  Each
(trace, rate, policy, seed) is one ``hetplace.online.simulate`` run of 6,000 jobs on
36:36:36 with jobs 4000-4999 measured (Gavel's setup, docs/online.md §8), run on the
executors of ``hetplace simulate``.  Finished runs are cached as
``OUT/<trace>_<policy>_rate<r>_seed<s>.json`` and not run again, so the table can be
extended (more seeds, more policies) by running the command again.  The markdown table
(average JCT in hours of trace seed 0, the jobs of Gavel's published runs, with p99 JCT and
restarts per job, then the mean over every seed cached in OUT), and a second one of worst
finish-time fairness and GPU-hours, are written to ``OUT/table.md`` and printed, with the lower
bound of :func:`hetplace.online.lower_bound` and Gavel's published figures beside them.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

#: (trace, rate): Gavel's published average JCT (hours) per policy, where Gavel reports one.
GAVEL = {
    ("single", 2.0): {"las-aware": 16.95},
    ("single", 4.8): {"las": 35.79, "las-aware": 18.97},
    ("multi", 1.0): {"las-aware": 18.54},
    ("multi", 2.6): {"las": 70.54, "las-aware": 36.44, "ftf": 64.38, "ftf-aware": 33.90},
}
SETUPS = (("single", 2.0), ("single", 4.8), ("multi", 1.0), ("multi", 2.6))
POLICIES = ("las", "las-aware", "ftf", "ftf-aware", "fifo", "fifo-aware", "allox", "gavel-mst", "sia", "smp-rigid",
            "smp", "smp-oracle", "smp-fair")
#: Policies also run on ``--extra-seeds``: those Gavel publishes figures for, and ours.
EXTRA_POLICIES = ("las", "las-aware", "ftf", "ftf-aware", "gavel-mst", "sia", "smp", "smp-oracle", "smp-fair")
CLUSTER = {"v100": 36, "p100": 36, "k80": 36}


def _key(trace, policy, rate, seed, restart="none"):
    tag = "" if restart == "none" else f"_restart-{restart}"
    return f"{trace}_{policy}{tag}_rate{rate:g}_seed{seed}"


def run(out, policies, seeds, setups, n_jobs, measure, workers, restart="none"):
    import concurrent.futures as cf

    from hetplace.bench import make_executor
    from hetplace.online.sweep import _simulate_task, simulation_payloads

    todo = []
    for pol in policies:  # policy by policy, so a partial run has whole rows
        for trace, rate in setups:
            for p in simulation_payloads([pol], [rate], seeds, n_jobs=n_jobs, cluster=CLUSTER,
                                         multi_gpu=trace == "multi", measure=measure, job_table="figures",
                                         restart=restart):
                if not (out / (_key(trace, p["policy"], rate, p["seed"], restart) + ".json")).exists():
                    todo.append(p)
    if todo:
        print(f"running {len(todo)} simulation(s) on {workers} worker(s)", file=sys.stderr)
        with make_executor("process", workers=workers) as ex:
            # each run is written as soon as it finishes, so an interrupted sweep keeps what it did
            for fut in cf.as_completed([ex.submit(_simulate_task, p) for p in todo]):
                r = fut.result()
                p = r["payload"]
                print(f"done {p['policy']} rate {p['rate']:g} seed {p['seed']}: avg JCT "
                      f"{(r['summary']['avg_jct'] or float('nan')) / 3600:.2f} h", file=sys.stderr, flush=True)
                trace = "multi" if p["multi_gpu"] else "single"
                (out / (_key(trace, p["policy"], p["rate"], p["seed"], restart) + ".json")).write_text(
                    json.dumps(r["summary"], indent=1) + "\n", encoding="utf-8")


def bounds(setups, seeds, n_jobs, measure):
    from hetplace.online import gavel_trace, lower_bound

    out = {}
    for trace, rate in setups:
        free, rigid = [], []
        for s in seeds:
            tr = gavel_trace(n_jobs, rate, s, multi_gpu=trace == "multi", job_table="figures")
            free.append(lower_bound(tr, CLUSTER, measure=measure).avg_jct / 3600)
            rigid.append(lower_bound(tr, CLUSTER, measure=measure, rigid=True).avg_jct / 3600)
        out[trace, rate] = (float(np.mean(free)), float(np.mean(rigid)))
    return out


def _runs(out, trace, pol, rate, restart="none"):
    """{seed: summary} of the complete cached runs of one (trace, policy, rate, restart model)."""
    runs = {}
    for f in out.glob(_key(trace, pol, rate, 0, restart)[:-1] + "*.json"):
        r = json.loads(f.read_text())
        if r["avg_jct"] is not None and r["status"] == "complete":
            runs[int(f.stem.rsplit("seed", 1)[1])] = r
    return runs


def table(out, policies, seeds, setups, n_jobs, measure, restart="none"):
    """Markdown: per cell the seed-0 run (Gavel's jobs, so beside Gavel's figure), then the mean over every seed run;
    then a second table of worst finish-time fairness and GPU-hours."""
    head = ["policy"] + [f"{t}-GPU {r:g}/h" for t, r in setups]
    rule = "|" + "---|" * len(head)
    lines = ["| " + " | ".join(head) + " |", rule]
    cost = ["| " + " | ".join(head) + " |", rule]
    found = set()
    for pol in policies:
        cells, costs = [f"`{pol}`"], [f"`{pol}`"]
        for trace, rate in setups:
            runs = _runs(out, trace, pol, rate, restart)
            found.update(runs)
            if 0 not in runs:
                cells.append("-")
                costs.append("-")
                continue
            r0 = runs[0]
            cell = (f"**{r0['avg_jct'] / 3600:.2f}** (p99 {r0['p99_jct'] / 3600:.0f}, "
                    f"{r0['restarts_per_job']:.1f} r/j)")
            g = GAVEL.get((trace, rate), {}).get(pol)
            if g is not None:
                cell += f"; Gavel {g:.2f}"
            c = f"FTF {r0['ftf_worst']:.2f}, {r0['gpu_hours']:,.0f} GPU-h"
            if r0.get("restart_gpu_hours"):
                c += f" ({r0['restart_gpu_hours']:,.0f} lost to restarts)"
            if len(runs) > 1:
                mean = lambda k: np.mean([r[k] for r in runs.values()])  # noqa: E731
                cell += f"; seeds {min(runs)}-{max(runs)}: {mean('avg_jct') / 3600:.2f}"
                c += f"; seeds {min(runs)}-{max(runs)}: FTF {mean('ftf_worst'):.2f}, {mean('gpu_hours'):,.0f} GPU-h"
            cells.append(cell)
            costs.append(c)
        lines.append("| " + " | ".join(cells) + " |")
        cost.append("| " + " | ".join(costs) + " |")
    all_seeds = sorted(found) or [0]
    lb = {s: bounds(setups, [s], n_jobs, measure) for s in all_seeds}
    for k, label in ((0, "free sizes"), (1, "trace sizes")):
        cells = []
        for st in setups:
            cell = f"{lb[0][st][k]:.2f}" if 0 in lb else "-"
            if len(all_seeds) > 1:
                cell += f"; seeds {all_seeds[0]}-{all_seeds[-1]}: {np.mean([lb[s][st][k] for s in all_seeds]):.2f}"
            cells.append(cell)
        lines.append(f"| lower bound, {label} | " + " | ".join(cells) + " |")
    lines += ["", "Worst finish-time fairness and GPU-hours of the measured jobs (trace seed 0, then the mean over "
              "the seeds run):", ""] + cost
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="online-table", help="folder of cached runs and table.md")
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0], help="trace seeds of every policy (default 0)")
    ap.add_argument("--extra-seeds", nargs="*", type=int, default=[1],
                    help=f"more seeds for {', '.join(EXTRA_POLICIES)} (default 1)")
    ap.add_argument("--jobs", type=int, default=6000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--table-only", action="store_true", help="write the table from the cached runs, run nothing")
    ap.add_argument("--restart", default="none", choices=("none", "flat30", "sia"),
                    help="restart model of the runs (none: Gavel's free restarts; flat30, sia: first start charged)")
    ap.add_argument("--setups", nargs="+", default=[f"{t}:{r:g}" for t, r in SETUPS],
                    help="TRACE:RATE cells to run, e.g. multi:2.6 single:4.8 (default: all four)")
    a = ap.parse_args(argv)
    setups = tuple((t, float(r)) for t, r in (x.split(":") for x in a.setups))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    measure = (4000, 5000) if a.jobs == 6000 else (a.jobs * 2 // 3, a.jobs * 5 // 6)
    if not a.table_only:
        extra = [p for p in a.policies if p in EXTRA_POLICIES]
        run(out, a.policies, a.seeds, setups, a.jobs, measure, a.workers, a.restart)
        if a.extra_seeds and extra:
            run(out, extra, a.extra_seeds, setups, a.jobs, measure, a.workers, a.restart)
    md = table(out, a.policies, a.seeds, setups, a.jobs, measure, a.restart)
    (out / ("table.md" if a.restart == "none" else f"table-restart-{a.restart}.md")).write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
