"""Command line: ``hetplace`` / ``python -m hetplace``.

Commands
--------
``hetplace`` / ``hetplace run``
    Place the embedded default instance (method ``smp`` unless ``--method``)
    and print the table, the gap to the exact optimum and the certified gap to
    the proven lower bound (:func:`hetplace.lower_bound`, at most
    :data:`BOUND_TIME_LIMIT` seconds).
``hetplace place --cluster cluster.toml --jobs jobs.csv``
    Place the jobs of a CSV file on the cluster of a TOML file (formats:
    :mod:`hetplace.io`) and print or write the placement with per-worker shares
    and its certified gap (``--no-bound`` skips it).  With tenants (a
    ``tenant`` column, ``[[quotas]]`` tables) it also shows the GPUs each
    tenant holds against its quotas (JSON: each job's ``tenant``, a
    ``quotas`` block).
``hetplace bench``
    Sweep instance families x sizes x methods x seeds (:mod:`hetplace.bench`)
    and write CSV, JSON, a Markdown summary and PNG plots.
``hetplace simulate --policy smp las-aware --rate 4.8 --jobs 6000 --cluster v100=36,p100=36,k80=36``
    Online simulation (:mod:`hetplace.online`) of policies x rates x seeds on
    a Gavel-recipe trace (or ``--trace FILE``); writes per-job CSVs, JSON
    summaries and plots to ``--out``.

Exit codes: 0 success; 2 bad input, file, option or connection (one line
``hetplace: error: ...`` on stderr, never a traceback); 1 without a message
when the output pipe is closed early (``hetplace place ... | head``); 130 interrupted.
"""

import argparse
import json
import math
import os
import shlex
import sys
from pathlib import Path

__all__ = ["main", "BOUND_TIME_LIMIT"]

#: Seconds the commands give :func:`hetplace.lower_bound` for the certified gap of their
#: placement; the bound is valid whenever it stops (docs/model.md §4.8), only looser.
BOUND_TIME_LIMIT = 2.0



def _say(text):
    """Write ``text`` to stderr, if the process has one (a daemon, ``2>&-``: it has not)."""
    if sys.stderr is not None:
        sys.stderr.write(text)

def _number(text, cast, ok, expected, out_of_range):
    """``cast(text)`` when it parses and passes ``ok``, else argparse's error naming what was expected.

    The message is "expected <expected>; got <text>" when ``text`` does not
    parse, "expected <out_of_range>; got <text>" when its value fails ``ok``.
    """
    try:
        v = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}; got {text!r}") from None
    if not ok(v):
        raise argparse.ArgumentTypeError(f"expected {out_of_range}; got {text!r}")
    return v


def _time_limit(text):
    if text.strip().lower() in ("none", "0", "inf"):
        return None
    return _number(text, float, lambda v: v > 0, "seconds (a positive number) or 'none'",
                   "a positive number of seconds or 'none'")


def _positive_int(text):
    return _number(text, int, lambda v: v >= 1, "a positive integer", "a positive integer")


def _positive_float(text):
    return _number(text, float, lambda v: 0 < v < math.inf, "a positive number", "a positive, finite number")


def _build_parser():
    from ._core._registry import BACKEND_CHOICES
    from .api import METHODS
    from .bench import ALL_METHODS, DEFAULT_GAVEL, EXECUTORS
    from .data import example_path
    from .exact import SOLVER_NAMES
    from .instances import ALL_FAMILIES
    from .online.trace import JOB_TABLES

    methods = sorted(METHODS)
    parser = argparse.ArgumentParser(
        prog="hetplace",
        description="Place data-parallel training jobs on a heterogeneous GPU cluster. "
        "With no command, places the embedded default instance and compares with the exact optimum.",
    )

    def bound_option(p):
        p.add_argument("--no-bound", action="store_true",
                       help=f"skip the certified gap (to hetplace.lower_bound, at most {BOUND_TIME_LIMIT:g} s)")

    def executor_options(p, default, executor_help):
        """--workers, --executor, --dask-address, --no-progress, --no-plots of a command that runs many things."""
        p.add_argument("--workers", type=_positive_int, help="parallel worker processes (default: CPU count)")
        p.add_argument("--executor", default=default, choices=EXECUTORS, help=executor_help)
        p.add_argument("--dask-address", metavar="ADDR", help="Dask scheduler, e.g. tcp://10.0.0.5:8786")
        p.add_argument("--no-progress", action="store_true", help="no progress output")
        p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    def run_options(p):
        p.add_argument("--method", default=None, choices=methods, help="placement method (default: smp)")
        p.add_argument("--seed", type=int, default=0, help="seed of randomised methods (default 0)")
        p.add_argument("--json", action="store_true", help="print the placement as JSON")
        p.add_argument("--no-exact", action="store_true", help="skip the exact optimum (and the gap)")
        bound_option(p)

    run_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="{run,place,bench,simulate,sia-table,serve}")
    run_options(sub.add_parser("run", help="place the embedded default instance (the default command)"))

    pl = sub.add_parser(
        "place", help="place the jobs of a CSV file on the cluster of a TOML file",
        description="Place the jobs of JOBS (CSV) on the cluster of CLUSTER (TOML) and print or write the "
        "placement with per-worker shares. File formats: see the examples shipped with hetplace, "
        f"{example_path('cluster.toml')} and {example_path('jobs.csv')} "
        "(in Python: hetplace.data.example_path('cluster.toml'), example_path('jobs.csv')).",
    )
    pl.add_argument("--cluster", required=True, metavar="TOML",
                    help="cluster description (types, counts, speeds, bandwidth; or [[nodes]] with racks; "
                    "[[quotas]]: GPUs per tenant)")
    pl.add_argument("--jobs", required=True, metavar="CSV", help="job list (model or throughput_<type>, batch, iterations, grad_bytes, tenant)")
    pl.add_argument("--gavel", metavar="PATH", help="Gavel-format throughputs.json for the model column (overrides the cluster file's gavel)")
    pl.add_argument("--method", default="auto", choices=methods, help="placement method (default: auto)")
    pl.add_argument("--seed", type=int, default=0, help="seed of randomised methods (default 0)")
    pl.add_argument("--json", action="store_true", help="JSON output (also chosen by --out FILE.json)")
    pl.add_argument("--out", metavar="FILE", help="write the placement to FILE instead of stdout "
                    "(.json: JSON, .csv: one line per worker, else text)")
    bound_option(pl)

    b = sub.add_parser(
        "bench", help="sweep families x sizes x methods x seeds; write CSV/JSON/PNG",
        description="Benchmark every method against the exact optimum: wall time, mean JCT, gap (to the "
        "optimum, or to the best proven bound when the exact solver hits its time limit), fairness and "
        "worst slowdown, for every instance of the grid. Writes results.csv, results.json, summary.md and "
        "PNG plots to --out.",
    )
    b.add_argument("--quick", action="store_true",
                   help="small preset (K 8 16 32 64, S 2 4 8, seed 0, exact time limit 5 s): under 2 minutes on 2 cores")
    b.add_argument("--out", default="bench-out", metavar="DIR", help="output folder (default: bench-out)")
    b.add_argument("--families", nargs="+", choices=ALL_FAMILIES,
                   help="instance families (default: gavel speeds synthetic; synthetic only without a Gavel table; "
                   "topology: nodes and racks, on request)")
    b.add_argument("--K", nargs="+", type=_positive_int, metavar="K", help="worker counts (default 8 16 32 64)")
    b.add_argument("--S", nargs="+", type=_positive_int, metavar="S", help="job counts (default 2 4 8 16); S > K skipped")
    b.add_argument("--methods", nargs="+", choices=methods, help=f"methods (default: {' '.join(ALL_METHODS)})")
    b.add_argument("--seeds", nargs="+", type=int, metavar="SEED", help="instance seeds (default 0 1 2)")
    b.add_argument("--gavel", metavar="PATH",
                   help=f"Gavel-format throughputs.json (default: the table shipped with hetplace, {DEFAULT_GAVEL})")
    b.add_argument("--exact-time-limit", type=_time_limit, default=argparse.SUPPRESS, metavar="SECONDS",
                   help="time limit of the exact reference per instance (default 60, quick 5; 'none': no limit)")
    b.add_argument("--exact-solver", default="scip", choices=SOLVER_NAMES, help="MILP solver (default scip)")
    b.add_argument("--samples", type=_positive_int, help="samples of method smp (default: its own)")
    b.add_argument("--backend", choices=BACKEND_CHOICES, help="backend of method smp")
    executor_options(b, "process", "process: local process pool (default); serial: in this process; "
                     "dask: Dask distributed (--dask-address, else a LocalCluster of --workers processes)")

    sim = sub.add_parser(
        "simulate", help="online simulation of scheduling policies on a job trace; write CSV/JSON/PNG",
        description="Simulate online scheduling policies round by round on a trace drawn with Gavel's generator "
        "recipe (or read from --trace) and report average and p99 JCT, finish-time fairness, restarts, GPU-hours, "
        "utilisation and decision times (docs/online.md). Every policy x rate x seed is one simulation, run on "
        "the chosen executor.",
    )
    sim.add_argument("--policy", nargs="+", default=["smp"], metavar="POLICY",
                     help="policies (default smp); names: see hetplace.online.policy_names()")
    sim.add_argument("--rate", nargs="+", type=_positive_float, default=[4.8], metavar="JOBS_PER_HOUR",
                     help="arrival rates in jobs/hour (default 4.8)")
    sim.add_argument("--jobs", type=_positive_int, default=6000, metavar="N", help="jobs in the trace (default 6000)")
    sim.add_argument("--cluster", default="v100=36,p100=36,k80=36", metavar="TYPE=N,...",
                     help="GPU counts per type (default v100=36,p100=36,k80=36)")
    sim.add_argument("--multi-gpu", action="store_true", help="scale factors 1/2/4/8 (0.7/0.1/0.15/0.05)")
    sim.add_argument("--job-table", default="current", choices=JOB_TABLES,
                     help="order of Gavel's job table the trace draws from: its repository's today (default) or the "
                          "one its published figures were made with")
    sim.add_argument("--restart", default="none", metavar="none|flat30|sia|SECONDS|FILE.json",
                     help="restart cost: none (default), flat30 or sia (first start charged too, docs/online.md §2), "
                          "seconds for every job, or a JSON {model or family: s}")
    sim.add_argument("--seed", nargs="+", type=int, default=[0], metavar="SEED", help="trace seeds (default 0)")
    sim.add_argument("--measure", type=_window, default=None, metavar="FIRST:LAST",
                     help="report jobs FIRST..LAST-1 only and stop when they are done (e.g. 4000:5000)")
    sim.add_argument("--round", type=_positive_float, default=360.0, metavar="SECONDS", help="round length (default 360)")
    sim.add_argument("--trace", metavar="FILE", help="a Gavel .trace file instead of a generated trace (--rate ignored)")
    sim.add_argument("--out", default="simulate-out", metavar="DIR", help="output folder (default: simulate-out)")
    executor_options(sim, None, "serial (default for one simulation), process (default for several) or dask")
    st = sub.add_parser(
        "sia-table", help="Sia's Table 3 on its own ground: policies on a trace set of Sia's artifact; CSV/JSON/PNG",
        description="Run goodput-world policies on every workload of one of Sia's trace sets, read from a checkout "
        "of Sia's artifact (github.com/siasosp23/artifacts; hetplace ships none of its files), and print the "
        "pooled average / p99 JCT, makespan, GPU-hours per job, restarts and decision times beside Sia's "
        "published Table 3 (docs/online.md §10).",
    )
    st.add_argument("artifacts", metavar="ARTIFACTS", help="the checkout of Sia's artifact (or its sia-simulator/ folder)")
    st.add_argument("--trace-set", default="helios", choices=("philly", "helios", "newtrace", "pollux"),
                    help="trace set (default helios, Sia's 'saturn' folder; pollux: Pollux's own artifact, "
                         "simulator/workloads on its 16 x 4 T4)")
    st.add_argument("--policy", nargs="+", default=["smp", "sia", "gavel-mst"], metavar="POLICY",
                    help="goodput-world policies (default smp sia gavel-mst; names: hetplace.online.goodput_policies)")
    st.add_argument("--workloads", nargs="+", type=_positive_int, metavar="N", help="workload numbers (default all)")
    st.add_argument("--out", default="sia-table-out", metavar="DIR", help="output folder (default: sia-table-out)")
    executor_options(st, "process", "process (default), serial or dask")

    sv = sub.add_parser(
        "serve", help="run the HTTP/JSON service (stateless placements, sessions; docs/service.md)",
        description="Serve placements and sessions over HTTP/JSON (OpenAPI at /openapi.json). Every request but "
        "/healthz and /openapi.json needs 'Authorization: Bearer <token>'. Needs: pip install \"hetplace[service]\".",
    )
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    sv.add_argument("--port", type=int, default=8787, help="TCP port (default 8787)")
    sv.add_argument("--state-dir", metavar="DIR", help="journal directory: sessions survive a restart, kill -9 "
                    "included (default: memory only)")
    sv.add_argument("--token-file", metavar="FILE", help="file holding the bearer token (default: $HETPLACE_TOKEN; "
                    "on 127.0.0.1 without either, a new token, written to DIR/token or printed)")
    sv.add_argument("--sync", default="normal", choices=("normal", "full"),
                    help="journal durability: through a process crash (normal, default) or a machine crash (full)")
    sv.add_argument("--decide-cap", type=float, default=30.0, metavar="SECONDS",
                    help="longest decision (default 30; 0: none)")
    sv.add_argument("--max-body", type=_positive_int, default=16 * 2**20, metavar="BYTES",
                    help="largest request body (default 16 MiB)")
    sv.add_argument("--max-sessions", type=_positive_int, default=10_000, metavar="N",
                    help="most sessions held at once (default 10,000; one more gets 429)")
    sv.add_argument("--openapi", action="store_true", help="print the OpenAPI schema (JSON) and exit")
    return parser


def _window(text):
    first, sep, last = text.partition(":")
    try:
        a, b = int(first), int(last)
    except ValueError:
        a = b = None
    if not sep or a is None or not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"expected FIRST:LAST job ids with FIRST < LAST, e.g. 4000:5000; got {text!r}")
    return a, b


# ------------------------------------------------------------------ run
def _certify(placement, skip):
    """The lower bound of ``placement``'s problem within :data:`BOUND_TIME_LIMIT` s, or None when skipped."""
    if skip:
        return None
    from .bound import lower_bound

    return lower_bound(placement.problem, time_limit=BOUND_TIME_LIMIT)


def _bound_doc(placement, bound):
    return {"bound": bound.bound, "status": bound.status, "method": bound.method, "wall_time": bound.wall_time,
            "time_limit": BOUND_TIME_LIMIT, "certified_gap": placement.gap_to_bound(bound)}


def _bound_line(placement, bound):
    return (f"certified gap {placement.gap_to_bound(bound) * 100:.3f} % (the true gap is at most this): to the "
            f"proven lower bound {bound.bound:.1f} s of hetplace.lower_bound ({bound.status}, "
            f"{bound.wall_time * 1e3:.1f} ms, time limit {BOUND_TIME_LIMIT:g} s)\n")


def _run(args, out):
    from .api import place
    from .data import default_problem

    problem = default_problem()
    method = args.method or "smp"
    placement = place(problem, method=method, seed=args.seed)
    exact = None
    if not args.no_exact:
        from .exact import solve_exact

        exact = solve_exact(problem)
    bound = _certify(placement, args.no_bound)
    if args.json:
        doc = placement.to_dict()
        if bound is not None:
            doc["bound"] = _bound_doc(placement, bound)
        if exact is not None:
            doc["exact"] = {
                "status": exact.status, "objective": exact.objective, "bound": exact.bound,
                "method": exact.method, "solver": exact.solver, "wall_time": exact.wall_time,
                "gap": placement.mean_jct / exact.objective - 1.0,
            }
        json.dump(doc, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{problem!r}\n\n{placement.format_table()}\n")
    out.write(f"decision time {placement.info['wall_time'] * 1e3:.2f} ms\n")
    if exact is not None:
        gap = placement.mean_jct / exact.objective - 1.0
        out.write(
            f"exact optimum ({exact.method}, {exact.status}) mean JCT {exact.objective:.1f} s in "
            f"{exact.wall_time * 1e3:.1f} ms -> gap of {method}: {gap * 100:.3f} %\n"
        )
    if bound is not None:
        out.write(_bound_line(placement, bound))
    return 0


# ------------------------------------------------------------------ place
def _format_workers(placement):
    p = placement.problem
    names = [p.job_names[j] if j >= 0 else "(idle)" for j in placement.worker_job]
    tw = max(4, *(len(t) for t in p.type_names))
    jw = max(3, *(len(n) for n in names))
    topo = p.topology
    node_head = "" if topo is None else f"  {'node':>5}" + ("" if topo.rack is None else f"  {'rack':>5}")
    lines = [f"{'worker':>6}  {'type':<{tw}}{node_head}  {'speed':>5}  {'job':<{jw}}  {'share':>7}"]
    for k in range(p.n_workers):
        where = "" if topo is None else f"  {int(topo.node[k]):>5}" + (
            "" if topo.rack is None else f"  {int(topo.rack[topo.node[k]]):>5}")
        lines.append(
            f"{k:>6}  {p.type_names[p.worker_type[k]]:<{tw}}{where}  {p.worker_speed[k]:>5.3g}  {names[k]:<{jw}}  "
            f"{int(placement.shares[k]):>7}"
        )
    return "\n".join(lines)


def _with_tenant_names(exc, tenants):
    """``exc``, its message followed by the tenant names when it speaks of tenants (the library numbers them)."""
    if not tenants or "tenant" not in str(exc):
        return exc
    names = ", ".join(f"{t} = {n!r}" for t, n in enumerate(tenants))
    try:
        return type(exc)(f"{exc} (tenants by number: {names})")
    except TypeError:  # an error class whose constructor takes more than a message
        return exc


def _place(args, out):
    from .api import place
    from .data import load_gavel
    from .errors import HetplaceError, InvalidOptionError, InvalidProblemError
    from .io import _format_quota_usage, _placement_doc, load_problem, write_placement

    gavel = None
    if args.gavel is not None:
        try:
            gavel = load_gavel(args.gavel)
        except InvalidProblemError as exc:
            raise InvalidOptionError(f"--gavel: {exc}") from None
    problem, tenants = load_problem(args.cluster, args.jobs, gavel=gavel, return_tenant_names=True)
    try:
        placement = place(problem, method=args.method, seed=args.seed)
    except HetplaceError as exc:
        raise _with_tenant_names(exc, tenants) from None
    if args.out is not None:
        fmt = "json" if args.json else None
        try:
            write_placement(placement, args.out, fmt=fmt, tenant_names=tenants)
        except OSError as exc:
            raise InvalidOptionError(f"--out {args.out!r} cannot be written ({exc.strerror}); pass a writable path.") from None
        out.write(f"wrote the placement of {problem.n_jobs} jobs on {problem.n_workers} workers to {args.out}\n")
        return 0
    if args.json:
        doc = _placement_doc(placement, tenants)  # with each job's tenant and a quotas block, given tenants
        doc["inputs"] = {"cluster": str(args.cluster), "jobs": str(args.jobs), "seed": args.seed}
        bound = _certify(placement, args.no_bound)
        if bound is not None:
            doc["bound"] = _bound_doc(placement, bound)
        json.dump(doc, out, indent=2)
        out.write("\n")
        return 0
    choice = f" (auto -> {placement.info['auto_choice']})" if "auto_choice" in placement.info else ""
    quotas = "" if problem.tenant is None else f"{_format_quota_usage(placement, tenants)}\n\n"
    out.write(f"{problem!r}\n\n{placement.format_table(workers=False)}\n\n{quotas}{_format_workers(placement)}\n")
    out.write(f"method {args.method}{choice}, decision time {placement.info['wall_time'] * 1e3:.2f} ms\n")
    bound = _certify(placement, args.no_bound)
    if bound is not None:
        out.write(_bound_line(placement, bound))
    return 0


# ------------------------------------------------------------------ bench
def _bench(args, out, argv):
    from . import bench
    from .errors import InvalidOptionError

    notes = []
    gavel = args.gavel
    if gavel is not None:
        if not Path(gavel).is_file():
            raise InvalidOptionError(
                f"--gavel {gavel!r} is not a file; pass the path of a Gavel-format throughputs.json, or omit "
                "--gavel to use the synthetic family only."
            )
    else:
        gavel = bench.default_gavel_path()
        if gavel is None:
            if args.families and any(f in ("gavel", "speeds", "topology") for f in args.families):
                raise InvalidOptionError(
                    f"families gavel, speeds and topology need a Gavel table, and there is none at {bench.DEFAULT_GAVEL} "
                    f"(relative to {os.getcwd()}); pass --gavel PATH or --families synthetic."
                )
            notes.append(
                f"no Gavel table at {bench.DEFAULT_GAVEL} (relative to {os.getcwd()}): running the synthetic "
                "family only; pass --gavel PATH for the gavel and speeds families."
            )
    kw = {}
    for name in ("families", "K", "S", "methods", "seeds"):
        if getattr(args, name) is not None:
            kw[name] = tuple(getattr(args, name))
    if hasattr(args, "exact_time_limit"):
        kw["exact_time_limit"] = args.exact_time_limit
    kw["exact_solver"] = args.exact_solver
    smp = {k: getattr(args, k) for k in ("samples", "backend") if getattr(args, k) is not None}
    if smp:
        kw["smp_options"] = smp
    gavel = None if gavel is None else str(gavel)
    if args.quick:
        spec = bench.quick_spec(gavel, **kw)
    else:
        kw.setdefault("families", ("gavel", "speeds", "synthetic") if gavel else ("synthetic",))
        spec = bench.SweepSpec(gavel=gavel, **kw)
    for note in notes:
        _say(f"hetplace: note: {note}\n")
    command = "hetplace " + shlex.join(argv)
    try:
        managed = bench.make_executor(args.executor, args.workers, args.dask_address)
    except InvalidOptionError as exc:
        if args.dask_address is None:
            raise
        raise InvalidOptionError(f"--dask-address: {exc}") from None
    with managed as ex:
        result = bench.run_sweep(spec, executor=ex, progress=not args.no_progress, command=command)
        n = args.workers or os.cpu_count()
        result.meta["executor"] = f"{args.executor} executor" + (
            f" ({n} worker{'s' if n != 1 else ''})" if args.executor == "process" or
            (args.executor == "dask" and args.dask_address is None) else
            f" ({args.dask_address})" if args.executor == "dask" else "")
    result.meta["notes"] = notes
    try:
        paths = result.write(args.out, plots=not args.no_plots)
    except OSError as exc:
        raise InvalidOptionError(f"--out {args.out!r} cannot be written ({exc.strerror}); pass a writable folder.") from None
    out.write(Path(paths["summary"]).read_text(encoding="utf-8"))
    out.write("\nwrote " + ", ".join(str(p) for k, p in paths.items() if k != "plots_skipped") + "\n")
    if "plots_skipped" in paths:
        _say(f"hetplace: note: no plots: {paths['plots_skipped']}\n")
    if result.errors:
        e = result.errors[0]
        _say(
            f"hetplace: warning: {len(result.errors)} row(s) failed (column 'error'), e.g. {e['method']} on "
            f"{e['family']} K={e['K']} S={e['S']} seed={e['seed']}: {e['error']}\n"
        )
    return 0


# ------------------------------------------------------------------ simulate
def _restart_arg(text):
    from .errors import InvalidOptionError

    if text.strip().lower() in ("none", "flat30", "sia"):
        return text.strip().lower()
    try:
        return float(text)
    except ValueError:
        pass
    path = Path(text)
    if not path.is_file():
        raise InvalidOptionError(
            f"--restart {text!r} is neither 'none', 'flat30', 'sia', a number of seconds nor a JSON file; pass one "
            "of those."
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeError) as exc:
        raise InvalidOptionError(f"--restart {text!r}: not a JSON object {{model or family: seconds}} ({exc}).") from None
    return doc


def _simulate(args, out, argv):
    from . import bench
    from .data import load_gavel
    from .errors import InvalidOptionError
    from .online import ProgressModel, make_policy, parse_cluster
    from .online.sweep import run_simulations, simulation_payloads, summary_table, write_simulations

    table = load_gavel()
    cluster = parse_cluster(args.cluster, table)
    restart = _restart_arg(args.restart)
    ProgressModel(table, restart)  # checked here, not in every worker
    for name in args.policy:
        make_policy(name)
    if args.trace is not None and not Path(args.trace).is_file():
        raise InvalidOptionError(f"--trace {args.trace!r} is not a file; pass a Gavel .trace file.")
    if args.measure is not None and args.trace is None and args.measure[0] >= args.jobs:
        raise InvalidOptionError(
            f"--measure {args.measure[0]}:{args.measure[1]} starts past the {args.jobs} jobs of the trace; "
            "lower it or raise --jobs."
        )
    payloads = simulation_payloads(
        args.policy, args.rate, args.seed, n_jobs=args.jobs, cluster=cluster, multi_gpu=args.multi_gpu,
        restart=restart, measure=args.measure, round_s=args.round, trace_path=args.trace, progress=False,
        job_table=args.job_table,
    )
    kind = args.executor or ("serial" if len(payloads) == 1 else "process")
    if kind == "serial" and len(payloads) == 1:
        payloads[0]["progress"] = not args.no_progress  # a per-job bar of the one simulation
    try:
        managed = bench.make_executor(kind, args.workers, args.dask_address)
    except InvalidOptionError as exc:
        if args.dask_address is None:
            raise
        raise InvalidOptionError(f"--dask-address: {exc}") from None
    with managed as ex:
        results = run_simulations(payloads, ex, progress=not args.no_progress)
    meta = {"command": "hetplace " + shlex.join(argv), "executor": kind}
    try:
        paths = write_simulations(results, args.out, plots=not args.no_plots, meta=meta)
    except OSError as exc:
        raise InvalidOptionError(f"--out {args.out!r} cannot be written ({exc.strerror}); pass a writable folder.") from None
    out.write(summary_table(results))
    out.write(f"\nwrote {len(results)} simulation(s) and " + ", ".join(
        str(p) for k, p in paths.items() if k != "plots_skipped") + "\n")
    for r in results:
        if r["summary"]["status"] != "complete":
            p = r["payload"]
            rate = "" if p["rate"] is None else f", rate {p['rate']:g}"
            _say(f"hetplace: note: {p['policy']}{rate}, seed {p['seed']}: {r['summary']['message']}\n")
    if "plots_skipped" in paths:
        _say(f"hetplace: note: no plots: {paths['plots_skipped']}\n")
    return 0


def _sia_table(args, out, argv):
    from . import bench
    from ._results_dir import add_plots, write_csv, write_json
    from .errors import InvalidOptionError
    from .online.sia_table import SiaTableRow, plot_sia_table, sia_table

    with bench.make_executor(args.executor, args.workers, args.dask_address) as ex:
        table = sia_table(args.artifacts, args.trace_set, args.policy, workloads=args.workloads, executor=ex,
                          progress=not args.no_progress)
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        rows = table.to_dicts()
        paths = {"csv": write_csv(folder / "sia_table.csv", list(SiaTableRow.__dataclass_fields__), rows),
                 "json": write_json(folder / "sia_table.json", {"command": "hetplace " + shlex.join(argv),
                                                                "trace_set": args.trace_set, "rows": rows,
                                                                "workloads": list(table.workloads)}),
                 "markdown": folder / "sia_table.md"}
        paths["markdown"].write_text(table.to_markdown(), encoding="utf-8")
        if not args.no_plots:
            add_plots(paths, lambda: plot_sia_table(table, folder))
    except OSError as exc:
        raise InvalidOptionError(f"--out {args.out!r} cannot be written ({exc.strerror}); pass a writable folder.") from None
    out.write(table.to_markdown())
    out.write("\nwrote " + ", ".join(str(p) for k, p in paths.items() if k != "plots_skipped") + "\n")
    if "plots_skipped" in paths:
        _say(f"hetplace: note: no plots: {paths['plots_skipped']}\n")
    return 0


def _input_errors():
    """Exception types that mean a bad input, file, option or connection (never a bug of hetplace)."""
    import csv

    from .errors import HetplaceError

    kinds = [HetplaceError, OSError, UnicodeError, json.JSONDecodeError, csv.Error]
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the readers report tomli's errors as HetplaceError
        pass
    else:
        kinds.append(tomllib.TOMLDecodeError)
    return tuple(kinds)


def _error_message(exc):
    """The message of ``exc`` on one line; an operating-system error as ``<file>: <reason>. Fix: ...``."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror}. Fix: check the path, its permissions and the free space."
    text = str(exc) or type(exc).__name__
    return " ".join(text.splitlines())


def _quiet_broken_pipe(out):
    """The reader of the output went away (``hetplace place ... | head``).

    As the Python documentation advises (signal module, "Note on SIGPIPE"):
    point the output's descriptor at devnull, so the final flush at exit
    does not fail a second time, and exit quietly.
    """
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (e.g. io.StringIO)
        return 1
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    return 1


def _serve(args, out):
    from .errors import InvalidOptionError

    if args.openapi:
        from .service import create_app

        json.dump(create_app("schema-only").openapi(), out, indent=1)
        out.write("\n")
        return 0
    if args.decide_cap < 0 or args.decide_cap != args.decide_cap:
        raise InvalidOptionError(f"--decide-cap must be >= 0 seconds (0: no cap); got {args.decide_cap}.")
    if not 0 <= args.port <= 65535:
        raise InvalidOptionError(f"--port must be in 0..65535; got {args.port}.")
    from .service import serve

    serve(args.host, args.port, state_dir=args.state_dir, token_file=args.token_file, sync=args.sync,
          decide_cap_s=args.decide_cap or None, max_body=args.max_body, max_sessions=args.max_sessions)
    return 0


def main(argv=None, out=None):
    """Entry point of ``hetplace``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    out : file-like, optional
        Where results go (default ``sys.stdout``); errors go to ``sys.stderr``.

    Returns
    -------
    int
        0 on success; 2 on a bad input file, option, argument or connection
        (one line ``hetplace: error: <message>`` on stderr, never a
        traceback); 1, silently, when the reader of the output closed the pipe
        (``hetplace place ... | head``); 130 when interrupted.
    """
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, message already on stderr)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.command == "place":
            code = _place(args, out)
        elif args.command == "bench":
            code = _bench(args, out, argv)
        elif args.command == "simulate":
            code = _simulate(args, out, argv)
        elif args.command == "sia-table":
            code = _sia_table(args, out, argv)
        elif args.command == "serve":
            code = _serve(args, out)
        else:
            code = _run(args, out)
        out.flush()  # inside the guard: a closed pipe surfaces here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _quiet_broken_pipe(out)
    except KeyboardInterrupt:
        _say("hetplace: interrupted\n")
        return 130
    except _input_errors() as exc:
        _say(f"hetplace: error: {_error_message(exc)}\n")
        return 2
