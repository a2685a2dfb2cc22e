"""Benchmark sweeps: running time against optimality gap, on any executor.

A sweep runs every placement method on every instance of a grid
(families x K x S x seeds, built by :mod:`hetplace.instances`) and records,
for each (instance, method), the wall time, the mean JCT, the gap to the exact
optimum, Jain's fairness index and the worst slowdown.

The exact reference of an instance (:func:`hetplace.solve_exact`) is computed
once, in the same task as the methods, and shared by all of them; the
``"exact"`` method's row IS that reference.  When the reference is not proven
optimal (a time limit was hit) the gap is a *certified* gap: to the larger of
the solver's proven lower bound and :func:`hetplace.lower_bound`'s (column
``lb_bound``; ``mean_jct / bound - 1``, an upper bound on the true gap), and the
row says ``gap_to="bound"``.

Scale-out: one task per instance goes to any ``concurrent.futures``-style
executor (``submit`` or ``map``): a local process pool by default,
:class:`SerialExecutor`, or Dask distributed (:func:`make_executor`).  Instances
are built on the client and shipped as plain data, so workers need hetplace
installed but no data files.  Every column except the wall times
(:data:`TIMING_COLUMNS`) is a deterministic function of the instance, so any
executor gives the same table as a serial run -- provided each reference is
proven optimal: a time-limited MILP stops wherever the clock finds it, so its
incumbent and bound (and the ``gap_to="bound"`` rows) can differ between runs.
"""

import datetime
import json
import math
import os
import platform
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from ._executors import (  # re-exported: hetplace.bench is their documented home
    DASK_CONNECT_TIMEOUT,
    EXECUTORS,
    MAX_EXECUTOR_WORKERS,
    ExecutorError,
    SerialExecutor,
    _execute,
    _Progress,
    make_executor,
)
from .api import METHODS
from .data import gavel_path as _gavel_path
from .errors import InvalidOptionError, MissingDependencyError
from .instances import ALL_FAMILIES as _ALL_FAMILIES, FAMILIES as _FAMILIES
from .problem import MAX_WORKERS
from ._results_dir import add_plots, write_csv, write_json

__all__ = [
    "ExecutorError",
    "SweepSpec",
    "SweepResult",
    "SerialExecutor",
    "run_sweep",
    "make_executor",
    "quick_spec",
    "default_gavel_path",
    "summary_markdown",
    "COLUMNS",
    "TIMING_COLUMNS",
    "ALL_METHODS",
    "DEFAULT_GAVEL",
    "EXECUTORS",
]

#: Methods a sweep runs by default: every method of :func:`hetplace.place` (:data:`hetplace.api.METHODS`)
#: but the re-placement baseline ``"keep-greedy"`` (the sweep's instances run no jobs, so it is
#: ``"greedy"``), in table order: the baselines, then ``"smp"``, ``"auto"`` and the exact reference last.
ALL_METHODS = tuple(sorted((m for m in METHODS if m != "keep-greedy"), key=lambda m: (m == "exact", m == "auto", m == "smp")))
#: Gavel table used when none is given: the one shipped with hetplace (:func:`hetplace.data.gavel_path`).
DEFAULT_GAVEL = _gavel_path()

#: Columns of a result row, in output order.
COLUMNS = (
    "family", "K", "S", "G", "seed", "method",
    "wall_time", "mean_jct", "gap", "gap_to", "fairness", "worst_slowdown", "idle_workers", "detail",
    "ref_method", "ref_solver", "ref_status", "ref_objective", "ref_bound", "ref_wall_time",
    "lb_status", "lb_bound", "lb_wall_time", "error",
)
#: Columns that depend on the machine's load (all others are deterministic).
TIMING_COLUMNS = ("wall_time", "ref_wall_time", "lb_wall_time")

_NEEDS_GAVEL = ("gavel", "speeds", "topology")


def default_gavel_path():
    """The Gavel table shipped with hetplace (:data:`DEFAULT_GAVEL`); None only if it was removed."""
    return DEFAULT_GAVEL if DEFAULT_GAVEL.is_file() else None


def _int_tuple(name, values, minimum, maximum=None):
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = (values,)
    try:
        out = tuple(values)
    except TypeError:
        raise InvalidOptionError(f"{name} must be a list of integers; got {values!r}.") from None
    if not out:
        raise InvalidOptionError(f"{name} must hold at least one value; got an empty list.")
    for v in out:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
            raise InvalidOptionError(f"{name} must hold integers >= {minimum}; got {v!r} in {list(out)!r}.")
        if maximum is not None and v > maximum:
            raise InvalidOptionError(f"{name} must hold integers <= {maximum}; got {v!r} in {list(out)!r}.")
    return tuple(int(v) for v in out)


def _str_tuple(name, values, choices):
    if isinstance(values, str):
        values = (values,)
    try:
        out = tuple(values)
    except TypeError:  # None, a number
        raise InvalidOptionError(
            f"{name} must be a list of {', '.join(map(repr, choices))}; got {values!r}."
        ) from None
    if not out:
        raise InvalidOptionError(f"{name} must hold at least one of {', '.join(map(repr, choices))}; got an empty list.")
    for v in out:
        if v not in choices:
            raise InvalidOptionError(f"{name}: {v!r} is not valid; choose from {', '.join(map(repr, choices))}.")
    if len(set(out)) != len(out):
        raise InvalidOptionError(f"{name} lists a value twice: {list(out)!r}.")
    return out


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs.

    Parameters
    ----------
    families : sequence of {"gavel", "speeds", "synthetic"}
        Instance families (:mod:`hetplace.instances`); ``gavel`` and ``speeds``
        need ``gavel``.
    K, S : sequence of int
        Worker and job counts; the grid is their product, pairs with S > K skipped.
    methods : sequence of str
        Methods of :func:`hetplace.place`; ``"exact"`` reuses the reference.
    seeds : sequence of int
        Instance seeds; a method's seed is the instance's seed.
    gavel : str or path-like, optional
        Gavel-format ``throughputs.json`` for the ``gavel``/``speeds`` families.
    exact_method, exact_solver, exact_time_limit
        Passed to :func:`hetplace.solve_exact` as ``method``, ``solver`` and
        ``time_limit`` (seconds, None = no limit).
    smp_options : dict
        Extra options of ``method="smp"`` (e.g. ``samples``, ``backend``).
    """

    families: tuple = _FAMILIES
    K: tuple = (8, 16, 32, 64)
    S: tuple = (2, 4, 8, 16)
    methods: tuple = ALL_METHODS
    seeds: tuple = (0, 1, 2)
    gavel: object = None
    exact_method: str = "auto"
    exact_solver: str = "scip"
    exact_time_limit: object = 60.0
    smp_options: dict = field(default_factory=dict)

    def __post_init__(self):
        from .exact import METHODS as EXACT_METHODS, SOLVERS

        set_ = object.__setattr__
        set_(self, "families", _str_tuple("families", self.families, _ALL_FAMILIES))
        set_(self, "methods", _str_tuple("methods", self.methods, tuple(METHODS)))
        set_(self, "K", _int_tuple("K", self.K, 1, MAX_WORKERS))  # the generators' limits, checked up front
        set_(self, "S", _int_tuple("S", self.S, 1, MAX_WORKERS))
        set_(self, "seeds", _int_tuple("seeds", self.seeds, 0, 2**64 - 1))
        if self.gavel is not None:
            set_(self, "gavel", str(self.gavel))
        need = [f for f in self.families if f in _NEEDS_GAVEL]
        if need and self.gavel is None:
            raise InvalidOptionError(
                f"families {need} need a Gavel throughput table; pass gavel=PATH (--gavel PATH) or use "
                "families=('synthetic',)."
            )
        if self.exact_method not in EXACT_METHODS:
            raise InvalidOptionError(f"exact_method={self.exact_method!r} is not valid; choose one of {EXACT_METHODS}.")
        if not isinstance(self.exact_solver, str) or self.exact_solver.lower() not in SOLVERS:
            raise InvalidOptionError(f"exact_solver={self.exact_solver!r} is not valid; choose one of {tuple(SOLVERS)}.")
        tl = self.exact_time_limit
        if tl is not None:
            if isinstance(tl, bool) or not isinstance(tl, (int, float)) or not (math.isfinite(tl) and tl > 0):
                raise InvalidOptionError(
                    f"exact_time_limit must be a positive number of seconds or None (no limit); got {tl!r}."
                )
            set_(self, "exact_time_limit", float(tl))
        if not isinstance(self.smp_options, dict):
            raise InvalidOptionError(f"smp_options must be a dict of place(method='smp') options; got {self.smp_options!r}.")
        if not self.instances():
            raise InvalidOptionError(
                f"the grid K={list(self.K)} x S={list(self.S)} has no pair with S <= K (every job needs a worker)."
            )

    def instances(self):
        """Instance keys ``(family, K, S, seed)`` of the grid, in output order."""
        return [
            (f, k, s, seed)
            for f in self.families for k in self.K for s in self.S if s <= k for seed in self.seeds
        ]

    def to_dict(self):
        d = asdict(self)
        for key in ("families", "K", "S", "methods", "seeds"):
            d[key] = list(d[key])
        return d


def quick_spec(gavel=None, **overrides):
    """The ``--quick`` preset: K in (8, 16, 32, 64) x S in (2, 4, 8), seed 0, 5 s exact time limit.

    Families: gavel, speeds and synthetic with a Gavel table, else synthetic only.
    Its run time on the project's 2-core machine is in docs/bench.md.
    """
    kw = dict(
        families=_FAMILIES if gavel is not None else ("synthetic",),
        K=(8, 16, 32, 64), S=(2, 4, 8), seeds=(0,), gavel=gavel, exact_time_limit=5.0,
    )
    unknown = sorted(set(overrides) - {f.name for f in fields(SweepSpec)})
    if unknown:
        raise InvalidOptionError(
            f"quick_spec does not take {', '.join(unknown)}; overrides are SweepSpec fields: "
            f"{', '.join(f.name for f in fields(SweepSpec))}."
        )
    kw.update(overrides)
    return SweepSpec(**kw)


# ------------------------------------------------------------------ the task
_WARM = set()


def _warm_up(methods, smp_options):
    """Run every method once on a tiny instance so JIT/first-call costs stay out of the timings."""
    key = (tuple(methods), tuple(sorted(smp_options.items())))
    if key in _WARM:
        return
    from .api import place
    from .exact import solve_exact
    from .instances import synthetic_instance

    tiny = synthetic_instance(0, 6, 3, n_types=2)
    for m in methods:
        if m == "exact":
            continue
        try:
            place(tiny, method=m, seed=0, **(smp_options if m == "smp" else {}))
        except Exception:  # the real call reports the error
            pass
    for em in ("dp", "milp"):  # the reference runs on every instance
        try:
            solve_exact(tiny, method=em, time_limit=10)
        except Exception:
            pass
    _WARM.add(key)


def _nan(x):
    return math.nan if x is None else float(x)


def _run_instance(payload):
    """Worker task: reference + every method on one instance; returns its rows (plain data)."""
    from .api import place
    from .bound import lower_bound
    from .exact import solve_exact
    from .problem import Problem

    key = payload["key"]
    methods = payload["methods"]
    smp_options = payload["smp_options"]
    _warm_up(methods, smp_options)
    problem = Problem.from_dict(payload["problem"])
    base = dict(family=key[0], K=key[1], S=key[2], G=problem.n_types, seed=key[3])

    t0 = time.perf_counter()
    try:
        ref = solve_exact(problem, method=payload["exact_method"], solver=payload["exact_solver"],
                          time_limit=payload["exact_time_limit"])
        ref_err = ""
        ref_cols = dict(
            ref_method=ref.method, ref_solver=ref.solver, ref_status=ref.status,
            ref_objective=_nan(ref.objective), ref_bound=_nan(ref.bound), ref_wall_time=ref.wall_time,
        )
    except Exception as exc:  # recorded, the sweep goes on
        ref = None
        ref_err = f"exact reference failed: {type(exc).__name__}: {exc}"
        ref_cols = dict(ref_method="", ref_solver="", ref_status="error", ref_objective=math.nan,
                        ref_bound=math.nan, ref_wall_time=time.perf_counter() - t0)
    # no proven optimum: the configuration LP's bound certifies the gaps (docs/model.md §4.8)
    best_bound = math.nan if ref is None or ref.bound is None else float(ref.bound)
    if ref is not None and ref.objective is not None and best_bound > ref.objective:
        best_bound = math.nan  # above a feasible placement's objective: not a bound (its message says why)
    lb_cols = dict(lb_status="", lb_bound=math.nan, lb_wall_time=math.nan)
    if ref is None or ref.status != "optimal":
        t = time.perf_counter()
        try:
            lb = lower_bound(problem, time_limit=payload["exact_time_limit"])
            lb_cols = dict(lb_status=lb.status, lb_bound=lb.bound, lb_wall_time=lb.wall_time)
            best_bound = lb.bound if not best_bound > lb.bound else best_bound
        except Exception as exc:  # recorded, the sweep goes on
            lb_cols = dict(lb_status="error", lb_bound=math.nan, lb_wall_time=time.perf_counter() - t)
            ref_err = ref_err or f"lower bound failed: {type(exc).__name__}: {exc}"

    def gap_of(mean_jct):
        if ref is not None and ref.status == "optimal":
            return mean_jct / ref.objective - 1.0, "optimum"
        if best_bound > 0:
            return mean_jct / best_bound - 1.0, "bound"
        return math.nan, ""

    rows = []
    for m in methods:
        row = dict(base, method=m, error="", detail="")
        pl = None
        if m == "exact":
            wall = ref_cols["ref_wall_time"]
            if ref is None or ref.placement is None:
                row["error"] = ref_err or f"exact: {ref.status} ({ref.message})"
            else:
                pl = ref.placement
                row["detail"] = f"{ref.method}/{ref.solver} {ref.status}"
        else:
            opts = dict(smp_options) if m == "smp" else {}
            t = time.perf_counter()
            try:
                pl = place(problem, method=m, seed=key[3], **opts)
            except Exception as exc:  # recorded, the sweep goes on
                row["error"] = f"{type(exc).__name__}: {exc}"
            wall = time.perf_counter() - t
            if pl is not None and "auto_choice" in pl.info:
                row["detail"] = f"auto -> {pl.info['auto_choice']}"
        row["wall_time"] = wall
        if pl is None:
            row.update(mean_jct=math.nan, gap=math.nan, gap_to="", fairness=math.nan,
                       worst_slowdown=math.nan, idle_workers=-1)
        else:
            gap, gap_to = gap_of(pl.mean_jct)
            row.update(mean_jct=pl.mean_jct, gap=gap, gap_to=gap_to, fairness=pl.fairness,
                       worst_slowdown=pl.worst_slowdown, idle_workers=int(np.sum(pl.worker_job < 0)))
        row.update(ref_cols)
        row.update(lb_cols)
        if ref_err and not row["error"]:
            row["error"] = ref_err
        rows.append({c: row[c] for c in COLUMNS})
    return rows


# ------------------------------------------------------------------ results
class SweepResult:
    """Rows of a sweep plus what produced them.

    Attributes
    ----------
    rows : list of dict
        One per (instance, method), keys :data:`COLUMNS`, in spec order.
    spec : SweepSpec
    meta : dict
        Executor, wall time, machine, versions, notes.
    """

    def __init__(self, rows, spec, meta):
        self.rows, self.spec, self.meta = rows, spec, meta

    def comparable(self):
        """Rows without :data:`TIMING_COLUMNS` (NaN -> None), for comparing two runs."""
        return [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items() if k not in TIMING_COLUMNS}
            for r in self.rows
        ]

    @property
    def errors(self):
        """Rows whose method or reference failed."""
        return [r for r in self.rows if r["error"]]

    def write(self, out_dir, plots=True):
        """Write ``results.csv``, ``results.json``, ``summary.md`` and (with matplotlib) the PNG plots.

        Returns
        -------
        dict
            ``{kind: path}`` of every file written; ``"plots_skipped"`` holds the
            reason when plots were requested but matplotlib is missing.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"meta": self.meta, "spec": self.spec.to_dict(), "columns": list(COLUMNS),
               "rows": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                        for r in self.rows]}
        paths = {"csv": write_csv(out / "results.csv", COLUMNS, self.rows),
                 "json": write_json(out / "results.json", doc),
                 "summary": out / "summary.md"}
        paths["summary"].write_text(summary_markdown(self), encoding="utf-8")
        if plots:
            add_plots(paths, lambda: _plot(self, out))
        return paths


def _fmt_time(t):
    if not math.isfinite(t):
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    if t < 1:
        return f"{t * 1e3:.3g} ms"
    return f"{t:.3g} s"


def _cell(rows):
    ok = [r for r in rows if not r["error"] or math.isfinite(r["gap"])]
    if not ok:
        return "error"
    gaps = [r["gap"] for r in ok if math.isfinite(r["gap"])]
    t = float(np.median([r["wall_time"] for r in ok]))
    certified = "≤ " if any(r["gap_to"] == "bound" for r in ok) else ""
    g = f"{certified}{100 * float(np.mean(gaps)):.2f} %" if gaps else "-"
    return f"{g} / {_fmt_time(t)}"


def summary_markdown(result):
    """Markdown summary of a sweep: mean gap / median wall time per method, by size and by family."""
    if not isinstance(result, SweepResult):
        raise InvalidOptionError(f"result must be a SweepResult from run_sweep; got {type(result).__name__}.")
    rows, spec, meta = result.rows, result.spec, result.meta
    methods = list(spec.methods)
    lines = [
        "# hetplace bench",
        "",
        f"Command: `{meta.get('command', 'run_sweep(...)')}`  ",
        f"{meta['n_instances']} instances x {len(methods)} methods on {meta['executor']}, "
        f"{meta['wall_time']:.1f} s in all; {meta['machine']}; {meta['date']}.  ",
        f"Exact reference: solve_exact(method={spec.exact_method!r}, solver={spec.exact_solver!r}, "
        f"time_limit={spec.exact_time_limit}).",
        "",
        "Cells: mean gap to the exact optimum / median decision time. "
        "`≤`: a certified gap: some instances of the cell were not solved to optimality within the time "
        "limit, so their gap is to the best proven lower bound (the solver's or hetplace.lower_bound's), "
        "an upper estimate of the true gap; the `exact` column then shows the solver's remaining gap.",
        "",
    ]
    for note in meta.get("notes", []):
        lines += [f"Note: {note}", ""]

    for title, keyf, label in (
        ("By size (all families and seeds)", lambda r: (r["K"], r["S"]), "K x S"),
        ("By family and K (all S and seeds)", lambda r: (r["family"], r["K"]), "family, K"),
        ("By family (all sizes and seeds)", lambda r: (r["family"],), "family"),
    ):
        groups = {}
        for r in rows:
            groups.setdefault(keyf(r), {}).setdefault(r["method"], []).append(r)
        lines += [f"## {title}", "", f"| {label} | " + " | ".join(methods) + " |",
                  "|---" * (len(methods) + 1) + "|"]
        for gk in sorted(groups, key=lambda g: tuple((0, x) if isinstance(x, int) else (1, _ALL_FAMILIES.index(x)) for x in g)):
            name = (", " if isinstance(gk[0], str) else " x ").join(str(x) for x in gk)
            lines.append(f"| {name} | " + " | ".join(_cell(groups[gk].get(m, [])) for m in methods) + " |")
        lines.append("")
    errs = result.errors
    if errs:
        lines += [f"{len(errs)} row(s) failed, e.g. {errs[0]['method']} on {errs[0]['family']} "
                  f"K={errs[0]['K']} S={errs[0]['S']}: {errs[0]['error']}", ""]
    return "\n".join(lines)


_COLORS = {"equal": "#8c8c8c", "random": "#bcbd22", "greedy": "#ff7f0e", "smp": "#1f77b4",
           "auto": "#2ca02c", "exact": "#d62728"}


_STYLES = {"gavel": "-", "speeds": "--", "synthetic": ":"}
_MARKERS = {"gavel": "o", "speeds": "s", "synthetic": "^"}


def _plot(result, out):
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        raise MissingDependencyError("PNG plots need matplotlib: pip install matplotlib") from None
    rows = [r for r in result.rows if math.isfinite(r["wall_time"])]
    methods = list(result.spec.methods)
    families = [f for f in result.spec.families if any(r["family"] == f for r in rows)]
    paths = {}

    def legends(ax, with_styles):
        handles = [Line2D([], [], color=_COLORS.get(m), marker="o", ls="", ms=4, label=m) for m in methods]
        first = ax.legend(handles=handles, fontsize=6, loc="upper left", title="method", title_fontsize=6)
        if len(families) > 1:
            ax.add_artist(first)
            fam = [Line2D([], [], color="k", ls=_STYLES[f] if with_styles else "", marker=None if with_styles
                          else _MARKERS[f], ms=4, mfc="none", label=f) for f in families]
            ax.legend(handles=fam, fontsize=6, loc="lower right", title="family", title_fontsize=6)

    def gap_panel(ax):
        top = 0.0
        for m in methods:
            for f in families:
                for kind, hollow in (("optimum", False), ("bound", True)):
                    pts = [(r["wall_time"], max(0.0, 100 * r["gap"])) for r in rows
                           if r["method"] == m and r["family"] == f and r["gap_to"] == kind and math.isfinite(r["gap"])]
                    if pts:
                        x, y = zip(*pts)
                        top = max(top, max(y))
                        c = _COLORS.get(m)
                        ax.scatter(x, y, s=16, alpha=0.75, marker=_MARKERS[f], edgecolors=c,
                                   facecolors="none" if hollow else c, linewidths=0.8)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_ylim(0, max(1.0, top) * 2)
        ax.set_xlabel("decision time (s)")
        ax.set_ylabel("gap (%)")
        ax.set_title("gap vs decision time (hollow: gap to proven bound)", fontsize=8)
        legends(ax, with_styles=False)
        ax.grid(alpha=0.3)

    def time_panel(ax, dim):
        for m in methods:
            for f in families:
                sel = [r for r in rows if r["method"] == m and r["family"] == f]
                xs = sorted({r[dim] for r in sel})
                ys = [float(np.median([r["wall_time"] for r in sel if r[dim] == x])) for x in xs]
                if xs:
                    ax.plot(xs, ys, ls=_STYLES[f], marker="o", ms=2.5, lw=1, color=_COLORS.get(m))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("workers K" if dim == "K" else "jobs S")
        ax.set_ylabel("median decision time (s)")
        other = "S" if dim == "K" else "K"
        ax.set_title(f"decision time vs {dim} (median over {other} and seeds)", fontsize=8)
        legends(ax, with_styles=True)
        ax.grid(alpha=0.3)

    for name, draw in (("gap_vs_time", gap_panel), ("time_vs_K", lambda ax: time_panel(ax, "K")),
                       ("time_vs_S", lambda ax: time_panel(ax, "S"))):
        fig = Figure(figsize=(5.5, 4), dpi=90, layout="constrained")
        draw(fig.add_subplot())
        p = out / f"{name}.png"
        fig.savefig(p)
        paths[name] = p
    fig = Figure(figsize=(14, 4.2), dpi=72, layout="constrained")
    axes = fig.subplots(1, 3)
    gap_panel(axes[0])
    time_panel(axes[1], "K")
    time_panel(axes[2], "S")
    p = out / "summary.png"
    fig.savefig(p)
    paths["summary_png"] = p
    return paths


# ------------------------------------------------------------------ driver
def _build_payloads(spec):
    from .data import load_gavel
    from .instances import make_instance

    table = load_gavel(spec.gavel) if any(f in _NEEDS_GAVEL for f in spec.families) else None
    payloads = []
    for key in spec.instances():
        family, K, S, seed = key
        problem = make_instance(family, seed, K, S, table)
        payloads.append(dict(
            key=key, problem=problem.to_dict(), methods=list(spec.methods), smp_options=dict(spec.smp_options),
            exact_method=spec.exact_method, exact_solver=spec.exact_solver, exact_time_limit=spec.exact_time_limit,
        ))
    return payloads


def _cost(payload):
    family, K, S, _ = payload["key"]
    return (payload["problem"]["worker_speed"] is not None, K * S)


def run_sweep(spec, executor=None, *, workers=None, progress=False, command=None):
    """Run a sweep.

    Parameters
    ----------
    spec : SweepSpec
    executor : concurrent.futures.Executor-like, optional
        Anything with ``submit(fn, arg)`` (returning futures with ``result()``)
        or ``map(fn, iterable)``: a ``ProcessPoolExecutor``,
        :class:`SerialExecutor`, ``distributed.Client(...).get_executor()``, a
        ``distributed.Client``, ...  Default: a local process pool of
        ``workers`` processes, closed on return.
    workers : int, optional
        Size of the default pool (default: CPU count).
    progress : bool
        Progress bar on stderr (tqdm when installed, else a counter).
    command : str, optional
        Recorded in ``meta["command"]``.

    Returns
    -------
    SweepResult
        Rows in spec order whatever the completion order.

    Notes
    -----
    Instances are built here and shipped as ``Problem.to_dict()``; each task
    warms the methods up once per process (so JIT compilation and imports are
    not timed), solves the exact reference, then times each method with
    ``time.perf_counter`` around :func:`hetplace.place`.  Tasks are submitted
    most expensive first (per-worker speeds, then large K x S) to shorten the
    makespan.

    The default pool starts workers with ``forkserver`` (``spawn`` where that
    is unavailable), never ``fork``: a forked child of a process that already
    ran OpenMP or Numba threads can hang.  A script calling ``run_sweep``
    with the default pool therefore needs an ``if __name__ == "__main__":``
    guard.
    """
    if not isinstance(spec, SweepSpec):
        raise InvalidOptionError(f"spec must be a hetplace.bench.SweepSpec; got {type(spec).__name__}.")
    payloads = _build_payloads(spec)
    order = sorted(range(len(payloads)), key=lambda j: _cost(payloads[j]), reverse=True)
    managed = make_executor("process", workers) if executor is None else None
    bar = _Progress(len(payloads), progress)
    t0 = time.perf_counter()
    try:
        ex = managed.executor if managed is not None else executor
        results = _execute(ex, [payloads[j] for j in order], bar, _run_instance)
    finally:
        bar.close()
        if managed is not None:
            managed.__exit__(None, None, None)
    wall = time.perf_counter() - t0
    by_index = dict(zip(order, results))
    rows = [row for j in range(len(payloads)) for row in by_index[j]]
    name = getattr(managed, "name", None) or type(executor).__name__
    meta = dict(
        command=command or "run_sweep(...)", executor=name, wall_time=wall, n_instances=len(payloads),
        machine=f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        date=datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), notes=[],
    )
    try:
        from . import __version__
        meta["hetplace"] = __version__
    except ImportError:  # pragma: no cover
        pass
    return SweepResult(rows, spec, meta)
