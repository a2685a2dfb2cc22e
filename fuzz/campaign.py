"""Hostile-input campaign over every public entry point of hetplace (docs/fuzzing.md).

Each case calls one entry point with one hostile value and runs in its own
process (forked from a parent that has imported hetplace, or with ``--spawn`` a
fresh ``python`` started for it), killed after ``--timeout`` seconds, so a
segfault, an abort or a hang is an outcome like any other.  Outcomes:

``OK``
    A result that passes the project's certificate checks (feasible placement,
    finite JCT equal to ``evaluate``, shares summing to the batch, an optimal
    claim equal to brute force on tiny instances, identical results across
    backends and thread counts for the same seed, ...).
``HETPLACE_ERROR``
    A :class:`hetplace.HetplaceError` with a non-empty message.  When the case
    names the parameter it varies, a message that does not mention it is
    listed as ``VAGUE`` (a warning, not a failure).
``INTERRUPTED``
    Only for the cases that send SIGINT to their own process (``--only
    interrupt``): ``KeyboardInterrupt`` within ``INTERRUPT_LATENCY_S`` of the
    signal, and the next small call of the same method places as before.
``FAILURE``
    A signal, a timeout, any other exception type (``KeyboardInterrupt`` in
    any other case), a RuntimeWarning of
    overflow / invalid value / division, NaN or inf in a result, or a result
    its own numbers contradict.

Usage (from the repository root)::

    python fuzz/campaign.py                  # every case, 2 at a time, 10 s each
    python fuzz/campaign.py --only place     # one entry point
    python fuzz/campaign.py --list           # case ids per entry point
    python fuzz/campaign.py --case place/samples/07 --debug   # replay one in-process

Exit code 0 when no case failed, 1 otherwise.  Not part of the test suite.
"""

import argparse
import io
import json
import math
import os
import pickle
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/reference.py: brute-force references

import hetplace as hp  # noqa: E402
from hetplace import HetplaceError  # noqa: E402

# ----------------------------------------------------------------------------- values
NAN, INF = float("nan"), float("inf")
#: Reals at the edges of float64 and of the supported range 1e-30..1e30.
FLOATS = [0.0, -0.0, 5e-324, 1e-310, 1e-300, 1e-31, 1e-30, 1e-6, 0.5, 1.0, 3.0, 1e29, 1e30, 1e31,
          1e300, 1.7976931348623157e308, -1.0, -1e-300, -1e300, NAN, INF, -INF]
#: Integers where int64 / float64 arithmetic breaks.
INTS = [0, 1, 2, -1, 2**31, 2**53, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**30, -(2**63)]
#: Values of the wrong kind that numpy converts silently.
KINDS = [True, False, 1 + 2j, 3j, "40", "1e3", "nan", b"1", None, np.float16(2.0), np.float32(2.0),
         np.int8(3), np.uint64(2**64 - 1), np.float64(NAN), np.array(2.0), np.array([2.0]), [], {}, object()]
SCALARS = FLOATS + INTS + KINDS
#: A shorter list for options whose cases are costly.
FEW = [0, -1, 1, 2, 0.5, NAN, INF, 1e300, 2**63, 2**64, True, None, "3", 1 + 0j, np.int64(2), np.float64(2.0)]


def _fmt(v):
    """Short, stable text of a value for case ids and reports."""
    try:
        text = repr(v)
    except Exception:  # pragma: no cover - exotic repr
        text = type(v).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def array_variants(base, dtype=float):
    """Hostile forms of the 1-D or 2-D list ``base``: dtypes, layouts, shapes, pandas."""
    a = np.asarray(base, dtype=dtype)
    out = []
    for dt in ("uint64", "float16", "float32", "int8", "object", "bool", "complex128", "U8", "S8"):
        try:
            out.append((f"dtype-{dt}", np.asarray(a).astype(dt)))
        except (TypeError, ValueError, OverflowError):
            pass
    rec = np.zeros(a.shape, dtype=[("x", "f8"), ("y", "i8")])
    rec["x"] = a
    out.append(("structured", rec))
    out.append(("datetime", np.zeros(a.shape, dtype="datetime64[s]")))
    wide = np.repeat(a, 2, axis=-1)
    out.append(("non-contiguous", wide[..., ::2]))
    ro = a.copy()
    ro.setflags(write=False)
    out.append(("read-only", ro))
    out.append(("fortran", np.asfortranarray(a)))
    out.append(("0-d", np.array(a.ravel()[0])))
    out.append(("empty", np.empty((0,) * a.ndim)))
    out.append(("extra-dim", a[None]))
    out.append(("transposed", a.T.copy() if a.ndim == 2 else a[::-1].copy()))
    out.append(("longer", np.concatenate([a, a[:1]], axis=0)))
    out.append(("shorter", a[:-1]))
    out.append(("huge-len", np.ones((10**7,) if a.ndim == 1 else (1, 10**7))))
    out.append(("ragged", [list(np.atleast_1d(r)) for r in a] + [[1.0]] if a.ndim == 2 else [a.tolist(), [1.0]]))
    out.append(("nested-list-objects", np.array(a.tolist(), dtype=object).tolist()))
    out.append(("memoryview", memoryview(np.ascontiguousarray(a, dtype=np.float64))))
    out.append(("generator", (float(x) for x in a.ravel())))
    try:
        import pandas as pd

        if a.ndim == 1:
            out.append(("pd-series", pd.Series(a)))
            out.append(("pd-series-nan", pd.Series(list(a[:-1]) + [None], dtype="float64")))
            out.append(("pd-series-object", pd.Series(a.tolist(), dtype=object)))
            out.append(("pd-series-nullable", pd.Series(a.astype("int64") if a.dtype.kind in "iu" else a).astype("Float64")))
            out.append(("pd-categorical", pd.Series(a).astype("category")))
        else:
            out.append(("pd-frame", pd.DataFrame(a)))
            nan_frame = pd.DataFrame(a.astype(float))
            nan_frame.iloc[0, 0] = NAN
            out.append(("pd-frame-nan", nan_frame))
            out.append(("pd-frame-object", pd.DataFrame(a.tolist(), dtype=object)))
    except ImportError:  # pragma: no cover
        pass
    return out


def element_variants(base, values=SCALARS):
    """``base`` (a list, maybe nested) with its first element replaced by each of ``values``."""
    out = []
    for v in values:
        b = [list(r) if isinstance(r, (list, tuple)) else r for r in base]
        if isinstance(b[0], list):
            b[0][0] = v
        else:
            b[0] = v
        out.append((f"elem0={_fmt(v)}", b))
    return out


# ----------------------------------------------------------------------------- cases
class Case:
    __slots__ = ("id", "entry", "fn", "check", "param", "interrupted")

    def __init__(self, cid, entry, fn, check=None, param=None, interrupted=None):
        self.id, self.entry, self.fn, self.check, self.param = cid, entry, fn, check, param
        self.interrupted = interrupted


CASES = []
_SEEN = {}


def case(entry, name, fn, check=None, param=None, interrupted=None):
    """Register one case; a repeated id gets a ``#n`` suffix.

    ``interrupted``, for a case that sends SIGINT to its own process: called
    after ``fn`` raised ``KeyboardInterrupt``, it checks the interrupt (raises
    :class:`Lie` when it was late or left the process unusable); the outcome
    is then ``INTERRUPTED``.  In every other case a ``KeyboardInterrupt`` is a
    ``FAILURE``.
    """
    cid = f"{entry}/{name}"
    n = _SEEN.get(cid, 0)
    _SEEN[cid] = n + 1
    if n:
        cid = f"{cid}#{n + 1}"
    CASES.append(Case(cid, entry, fn, check, param, interrupted))


class Lie(AssertionError):
    """A result that contradicts its own numbers or the certificates."""


def need(cond, what):
    if not cond:
        raise Lie(what)


def finite(x, what):
    arr = np.asarray(x, dtype=np.float64)
    need(np.isfinite(arr).all(), f"{what} is not finite: {x!r}")


# -- base problems (built in the child)
BASE = dict(throughput=[[10.0, 20.0], [5.0, 8.0]], type_counts=[2, 2], batch=[64, 32],
            iterations=[100.0, 50.0], grad_bytes=[1e6, 2e6], bandwidth=1e8)


def tiny():
    return hp.Problem(**BASE)


def speeds():
    return hp.Problem(**BASE, worker_speed=[1.0, 0.5, 0.25, 1.0])


def capped():
    return hp.Problem(throughput=[[10.0, 0.0], [5.0, 8.0], [3.0, 3.0]], type_counts=[3, 2], batch=[1, 2, 64],
                      iterations=[10.0, 20.0, 5.0], grad_bytes=[0.0, 1e7, 1e5], bandwidth=1e8)


def default():
    return hp.data.default_problem()


def wide():
    return hp.instances.make_instance("synthetic", 3, 40, 6)


PROBLEMS = {"tiny": tiny, "speeds": speeds, "capped": capped, "default": default}
PROBLEMS_EXTRA = {}  # larger seeded instances, filled while the cases are built


def brute_opt(problem):
    from reference import brute_force_reference

    return brute_force_reference(problem)[0]


def certify(problem, pl):
    """The certificate checks of a placement (as tests/test_hostile.py)."""
    need(isinstance(pl, hp.Placement), f"not a Placement: {type(pl).__name__}")
    wj = np.asarray(pl.worker_job)
    need(hp.is_feasible(problem, wj), "returned placement is not feasible")
    need(math.isfinite(pl.mean_jct) and pl.mean_jct > 0, f"mean_jct {pl.mean_jct!r}")
    again = hp.evaluate(problem, wj).mean_jct
    need(abs(again - pl.mean_jct) <= 1e-12 * abs(again), f"mean_jct {pl.mean_jct!r} != evaluate {again!r}")
    sizes = np.bincount(wj[wj >= 0], minlength=problem.n_jobs)
    need(np.all(sizes >= 1) and np.all(sizes <= problem.max_workers), f"sizes {sizes} vs max_workers")
    shares = np.asarray(pl.shares)
    for i in range(problem.n_jobs):
        need(int(shares[wj == i].sum()) == int(problem.batch[i]), f"shares of job {i} do not sum to its batch")
    need(np.all(shares >= 0), "negative share")
    for attr in ("jct", "compute_per_iteration", "comm_per_iteration", "slowdown", "fairness", "worst_slowdown"):
        finite(getattr(pl, attr), attr)
    return pl


def certify_problem(p):
    """A built Problem: finite derived tables, then every quick method certified on it."""
    need(isinstance(p, hp.Problem), "not a Problem")
    finite(p.work, "work")
    finite(p.worker_throughput, "worker_throughput")
    finite(p.comm_time, "comm_time")
    need(np.all(p.work > 0), "work <= 0")
    cost = np.asarray(p.size_cost)
    need(not np.isnan(cost).any(), "size_cost has NaN")
    alone = np.asarray(p.jct_alone)
    finite(alone, "jct_alone")
    need(np.all(alone > 0), "jct_alone <= 0")
    if p.n_workers * p.n_jobs <= 4096:
        for method, opts in (("greedy", {}), ("equal", {}), ("smp", {"backend": "cython", "samples": 4})):
            certify(p, hp.place(p, method=method, seed=1, **opts))
    return p


def check_exact(problem, res, brute=None):
    """An ExactResult whose status its numbers support; optimal == brute force when given."""
    from hetplace.exact import ExactResult

    need(isinstance(res, ExactResult), "not an ExactResult")
    need(res.status in ("optimal", "feasible", "time_limit", "no_solution", "error"), f"status {res.status!r}")
    need(res.success == (res.status == "optimal"), "success disagrees with status")
    if res.placement is not None:
        certify(problem, res.placement)
        need(res.objective == hp.evaluate(problem, res.placement.worker_job).mean_jct, "objective != evaluate")
    if res.status == "optimal":
        need(res.placement is not None, "optimal without placement")
        finite([res.objective, res.bound, res.gap], "objective/bound/gap")
        need(res.bound <= res.objective * (1 + 1e-9), f"bound {res.bound} above objective {res.objective}")
        if brute is not None:
            need(abs(res.objective - brute) <= 1e-9 * brute, f"optimal {res.objective!r} != brute force {brute!r}")
    return res


# ------------------------------------------------------------------ Problem
def add_problem_cases():
    def build(**over):
        kw = dict(BASE)
        kw.update(over)
        return lambda: hp.Problem(**kw)

    for name in ("throughput", "type_counts", "batch", "iterations", "grad_bytes", "worker_speed"):
        base = {"worker_speed": [1.0, 0.5, 0.25, 1.0]}.get(name, BASE.get(name))
        for label, v in element_variants(base):
            case("Problem", f"{name}/{label}", build(**{name: v}), certify_problem, name)
        for label, v in array_variants(base, dtype=float if name != "type_counts" and name != "batch" else np.int64):
            case("Problem", f"{name}/{label}", build(**{name: v}), certify_problem, name)
        for v in (None, 1, 2.0, NAN, "abc", b"x", [1, 2, 3, 4, 5], [[1, 2], [3, 4]], {"a": 1}):
            case("Problem", f"{name}/whole={_fmt(v)}", build(**{name: v}), certify_problem, name)
    for v in SCALARS + ["10Gbit/s", np.array([1e8])]:
        case("Problem", f"bandwidth={_fmt(v)}", build(bandwidth=v), certify_problem, "bandwidth")
    names = [None, ["a", "b"], ["a", "a"], ["a"], ["a", "b", "c"], [1, 2], ["", "b"], "ab", [None, "b"],
             ["a\nb", "c"], ["x" * 10_000, "y"], [b"a", b"b"], np.array(["a", "b"]), ("p", "q"), [True, False]]
    for which in ("job_names", "type_names"):
        for v in names:
            case("Problem", f"{which}={_fmt(v)}", build(**{which: v}), certify_problem, which)
    # pandas inputs with labels
    def frame(kind):
        import pandas as pd

        df = pd.DataFrame(BASE["throughput"], index=["a", "b"], columns=["k80", "v100"])
        kw = dict(BASE, throughput=df)
        if kind == "series-aligned":
            kw["type_counts"] = pd.Series([2, 2], index=["v100", "k80"])
        elif kind == "series-misaligned":
            kw["type_counts"] = pd.Series([2, 2], index=["p100", "k80"])
        elif kind == "series-batch":
            kw["batch"] = pd.Series([32, 64], index=["b", "a"])
        elif kind == "series-batch-missing":
            kw["batch"] = pd.Series([32, 64], index=["b", "c"])
        elif kind == "dup-index":
            kw["throughput"] = pd.DataFrame(BASE["throughput"], index=["a", "a"], columns=["k80", "v100"])
        elif kind == "multiindex":
            kw["throughput"] = pd.DataFrame(BASE["throughput"], index=pd.MultiIndex.from_tuples([(1, 2), (3, 4)]))
        elif kind == "int-labels":
            kw["throughput"] = pd.DataFrame(BASE["throughput"], index=[5, 6], columns=[0.5, NAN])
        elif kind == "string-cells":
            kw["throughput"] = pd.DataFrame([["10", "20"], ["5", "8"]])
        elif kind == "nullable":
            kw["throughput"] = pd.DataFrame(BASE["throughput"]).astype("Float64")
        elif kind == "nullable-na":
            kw["throughput"] = pd.DataFrame([[10.0, None], [5.0, 8.0]]).astype("Float64")
        elif kind == "bool-frame":
            kw["throughput"] = pd.DataFrame([[True, False], [True, True]])
        elif kind == "empty-frame":
            kw["throughput"] = pd.DataFrame()
        return hp.Problem(**kw)

    for kind in ("plain", "series-aligned", "series-misaligned", "series-batch", "series-batch-missing", "dup-index",
                 "multiindex", "int-labels", "string-cells", "nullable", "nullable-na", "bool-frame", "empty-frame"):
        case("Problem", f"pandas/{kind}", lambda kind=kind: frame(kind), certify_problem)
    # sizes: many workers, many jobs, counts that wrap
    for counts in ([10**6, 0], [10**6, 10**6], [2**62, 2**62], [2**63 - 1, 1], [2**64 - 1, 0], [0, 0], [1, 0]):
        case("Problem", f"type_counts-size={counts}", build(type_counts=counts), certify_problem, "type_counts")
    for S in (1, 1000, 100_000):
        case("Problem", f"n_jobs={S}", lambda S=S: hp.Problem(
            np.ones((S, 1)), [4], np.full(S, 8), np.ones(S)), certify_problem)
    case("Problem", "from_dict-hostile", lambda: hp.Problem.from_dict({"throughput": "x"}))
    case("Problem", "from_dict-none", lambda: hp.Problem.from_dict(None))
    case("Problem", "from_dict-roundtrip", lambda: hp.Problem.from_dict(tiny().to_dict()), certify_problem)
    for v in ([1.0, 0.5, 0.25, 1.0], [0.0, 1, 1, 1], [2.0, 1, 1, 1], [NAN] * 4, [1.0] * 3, "x", None):
        case("Problem", f"with_worker_speed={_fmt(v)}", lambda v=v: tiny().with_worker_speed(v), certify_problem,
             "worker_speed")
    for job, X, n in ((0, 10.0, 1), (5, 10.0, 1), (0, 0.0, 1), (0, NAN, 1), (0, 10.0, 99), (True, 1.0, 1), (0, 1e300, 2)):
        def jj(job=job, X=X, n=n):
            v = tiny().job_jct(job, X, n)
            finite(v, "job_jct")
            return v
        case("Problem", f"job_jct={job},{X},{n}", jj)


# ------------------------------------------------------------------ place
def add_place_cases():
    from hetplace.api import METHODS

    def run(pname, method, **opts):
        def f():
            p = PROBLEMS[pname]()
            return certify(p, hp.place(p, method=method, seed=opts.pop("seed", 5), **opts))
        return f

    for pname in PROBLEMS:
        for method in METHODS:
            case("place", f"{pname}/{method}", run(pname, method))
    smp_opts = ("samples", "sampling", "matching", "polish", "polish_top", "fairness_tol", "max_rounds", "spread",
                "speed_buckets", "backend", "threads")
    extra = {"sampling": ["weighted", "UNIFORM", "w"], "matching": ["ordinal", "Price", ""],
             "backend": ["python", "numba", "cython", "auto", "NUMBA", "c"]}
    for opt in smp_opts:
        for v in SCALARS + extra.get(opt, []):
            kw = {opt: v}
            if opt not in ("samples",):
                kw.setdefault("samples", 8)
            case("place", f"smp/{opt}={_fmt(v)}", run("speeds", "smp", **kw), param=opt)
    for v in SCALARS:
        case("place", f"seed={_fmt(v)}", run("tiny", "random", seed=v), param="seed")
        case("place", f"auto/latency_budget={_fmt(v)}", run("tiny", "auto", latency_budget=v), param="latency_budget")
    for opt, vals in (("exact_method", ["auto", "dp", "milp", "brute", "DP", "x", None, 1]),
                      ("solver", ["scip", "cp-sat", "cpsat", "highs", "HIGHS", "gurobi", None, 3]),
                      ("time_limit", FEW + [1e-9, 1e12]), ("threads", FEW)):
        for v in vals:
            case("place", f"exact/{opt}={_fmt(v)}", run("tiny", "exact", **{opt: v}), param=opt)
    for m in ("SMP", "Greedy", "exact ", "", None, 3, b"smp", "optimal"):
        case("place", f"method={_fmt(m)}", run("tiny", m), param="method")
    case("place", "unknown-option", run("tiny", "greedy", samples=3), param="samples")
    for bad in (None, "problem", BASE, np.ones((2, 2)), 3):
        case("place", f"problem={_fmt(bad)}", lambda bad=bad: hp.place(bad), param="problem")

    # one seed, every backend and thread count: the same placement
    def same(pname, **opts):
        def f():
            p = PROBLEMS[pname]() if pname in PROBLEMS else PROBLEMS_EXTRA[pname]() if pname in PROBLEMS_EXTRA else wide()
            ref = None
            # the pure-Python backend takes ~40 s at K = 200 with per-worker speeds: compiled ones only there
            for backend in (("python",) if p.n_workers * p.n_jobs <= 600 else ()) + ("numba", "cython"):
                for threads in ((None, 1, 2) if backend != "python" else (None,)):
                    pl = certify(p, hp.place(p, "smp", seed=11, backend=backend, threads=threads, **opts))
                    wj = np.asarray(pl.worker_job)
                    if ref is None:
                        ref = (backend, threads, wj, pl.mean_jct)
                    need(np.array_equal(ref[2], wj) and ref[3] == pl.mean_jct,
                         f"backend={backend} threads={threads} differs from backend={ref[0]} threads={ref[1]}")
            return ref
        return f

    for pname in ("tiny", "speeds", "capped", "default", "wide"):
        for opts in ({"samples": 8}, {"samples": 16, "matching": "ordinal"}, {"samples": 8, "sampling": "weighted"},
                     {"samples": 8, "polish": False}, {"samples": 8, "fairness_tol": 0.2},
                     {"samples": 8, "speed_buckets": 1}, {"samples": 8, "spread": 0.5}):
            case("place", f"backends-agree/{pname}/{_fmt(opts)}", same(pname, **opts))
    # larger seeded instances: every backend and thread count gives the same placement
    def family(fam, seed, K, S):
        return lambda: hp.instances.make_instance(fam, seed, K, S, hp.data.load_gavel() if fam != "synthetic" else None)

    for fam in ("synthetic", "speeds", "gavel"):
        for seed, (K, S) in enumerate(((32, 4), (64, 8), (100, 12), (48, 16), (200, 6))):
            PROBLEMS_EXTRA[f"{fam}-{K}x{S}"] = family(fam, seed, K, S)
            case("place", f"backends-agree/{fam}-{K}x{S}", same(f"{fam}-{K}x{S}", samples=12, max_rounds=4))
    # edge problems through every method
    edge = {
        "one-worker": lambda: hp.Problem([[1.0]], [1], [1], [1.0]),
        "big-batch": lambda: hp.Problem([[1.0, 2.0]], [3, 3], [2**53], [1.0]),
        "tiny-rates": lambda: hp.Problem([[1e-30, 1e-30]], [2, 2], [1], [1e-30]),
        "huge-rates": lambda: hp.Problem([[1e30, 1e30], [1e30, 1e-30]], [2, 2], [2**53, 1], [1e30, 1e30],
                                         grad_bytes=[1e30, 1e30], bandwidth=1e-30),
        "mixed-scale": lambda: hp.Problem([[1e-30, 1e30], [1e30, 1e-30]], [2, 2], [1, 2**53], [1e-30, 1e30],
                                          grad_bytes=[1e30, 0.0], bandwidth=1e30),
        "slow-speeds": lambda: hp.Problem([[1.0, 2.0]], [2, 2], [8], [1.0], worker_speed=[1e-30, 1, 1e-30, 1]),
        "zero-cols": lambda: hp.Problem([[0.0, 2.0], [0.0, 3.0]], [5, 2], [8, 8], [1.0, 1.0]),
        "jobs-eq-workers": lambda: hp.Problem(np.ones((4, 1)), [4], [1, 1, 1, 1], [1.0, 2, 3, 4]),
        "one-sample-jobs": lambda: hp.Problem(np.ones((2, 2)), [3, 3], [1, 1], [1.0, 1.0], grad_bytes=[1e9, 0], bandwidth=1.0),
    }
    for ename, mk in edge.items():
        for method, opts in (("greedy", {}), ("equal", {}), ("random", {}), ("auto", {}),
                             ("smp", {"backend": "python", "samples": 8}), ("smp", {"backend": "numba", "samples": 8}),
                             ("smp", {"backend": "cython", "samples": 8}),
                             ("smp", {"backend": "cython", "samples": 8, "matching": "ordinal"}),
                             ("exact", {"exact_method": "auto"}), ("exact", {"exact_method": "milp", "time_limit": 5})):
            def f(mk=mk, method=method, opts=opts):
                p = mk()
                pl = certify(p, hp.place(p, method, seed=2, **opts))
                if p.n_workers <= 6 and p.n_jobs <= 3:
                    opt = brute_opt(p)
                    need(pl.mean_jct >= opt * (1 - 1e-9), f"{method} beats brute force: {pl.mean_jct} < {opt}")
                    if pl.info.get("status") == "optimal":
                        need(abs(pl.mean_jct - opt) <= 1e-9 * opt, f"optimal {pl.mean_jct} != brute {opt}")
                return pl
            case("place", f"edge/{ename}/{method}/{_fmt(opts)}", f)


# ------------------------------------------------------------------ solve_exact
def add_exact_cases():
    def run(pname, **kw):
        def f():
            p = PROBLEMS[pname]()
            brute = brute_opt(p) if p.n_workers <= 6 and p.n_jobs <= 3 else None
            return check_exact(p, hp.solve_exact(p, **kw), brute)
        return f

    for pname in ("tiny", "speeds", "capped"):
        for method in ("auto", "dp", "milp", "brute"):
            for solver in ("scip", "cp-sat", "highs"):
                case("solve_exact", f"{pname}/{method}/{solver}", run(pname, method=method, solver=solver, time_limit=5))
    for opt, vals in (("method", SCALARS[:8] + ["DP", "Milp", "x", None, 3]),
                      ("solver", ["SCIP", "cpsat", "CP-SAT", "glpk", "", None, 1, b"scip"]),
                      ("time_limit", SCALARS + [1e-9, 1e-3, 1e12]),
                      ("threads", SCALARS), ("verbose", [True, False, 1, 0, "yes", None, np.bool_(True), 2])):
        for v in vals:
            kw = {opt: v}
            if opt != "method":
                kw["method"] = "milp"
            if opt != "time_limit":
                kw["time_limit"] = 5
            case("solve_exact", f"{opt}={_fmt(v)}", run("tiny", **kw), param=opt)
    for bad in (None, "x", BASE, 1):
        case("solve_exact", f"problem={_fmt(bad)}", lambda bad=bad: hp.solve_exact(bad), param="problem")
    # seeded random tiny problems: every method equal to brute force
    for seed in range(20):
        def f(seed=seed):
            rng = np.random.default_rng(seed)
            G = int(rng.integers(1, 3))
            S = int(rng.integers(1, 3))
            counts = rng.integers(1, 3, size=G)
            while counts.sum() < S:
                counts[0] += 1
            thr = rng.choice([0.0, 1e-3, 1.0, 7.0, 1e6], size=(S, G))
            thr[:, 0] = np.maximum(thr[:, 0], 1.0)
            p = hp.Problem(thr, counts, rng.integers(1, 5, size=S), rng.choice([1e-3, 1.0, 1e5], size=S),
                           grad_bytes=rng.choice([0.0, 1e6], size=S), bandwidth=float(rng.choice([1e3, 1e9])),
                           worker_speed=rng.choice([1.0, 0.5], size=int(counts.sum())) if seed % 2 else None)
            brute = brute_opt(p)
            for method in ("auto", "milp", "brute") + (("dp",) if p.uniform_speed else ()):
                check_exact(p, hp.solve_exact(p, method=method, time_limit=5), brute)
            return brute
        case("solve_exact", f"random-vs-brute/{seed}", f)


# ------------------------------------------------------------------ evaluate / is_feasible
def add_evaluate_cases():
    base = [0, 1, 0, 1]

    def run(wj):
        def f():
            p = tiny()
            feas = hp.is_feasible(p, wj)
            need(isinstance(feas, bool), "is_feasible not a bool")
            try:
                pl = hp.evaluate(p, wj)
            except HetplaceError:
                need(not feas, "evaluate rejects what is_feasible accepts")
                raise
            need(feas, "evaluate accepts what is_feasible rejects")
            return certify(p, pl)
        return f

    for label, v in element_variants(base, SCALARS + [-2, 2, 4, 1.5, np.int64(1), np.uint8(1)]):
        case("evaluate", f"worker_job/{label}", run(v), param="worker_job")
    for label, v in array_variants(base, dtype=np.int64):
        case("evaluate", f"worker_job/{label}", run(v), param="worker_job")
    for v in SCALARS[:20] + [[-1, -1, -1, -1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, -1, -1], "0101", [[0, 1, 0, 1]]]:
        case("evaluate", f"worker_job/whole={_fmt(v)}", run(v), param="worker_job")
    for bad in (None, "x", BASE):
        case("evaluate", f"problem={_fmt(bad)}", lambda bad=bad: hp.evaluate(bad, [0, 1, 0, 1]), param="problem")
        case("evaluate", f"is_feasible-problem={_fmt(bad)}", lambda bad=bad: hp.is_feasible(bad, [0, 1, 0, 1]),
             param="problem")
    # capped problem: a job over its max_workers
    for wj in ([0, 1, 2, 2, 2], [0, 0, 1, 2, 2], [2, 1, 0, 2, 2], [-1, 1, 0, 2, 2]):
        def f(wj=wj):
            p = capped()
            feas = hp.is_feasible(p, wj)
            try:
                return certify(p, hp.evaluate(p, wj))
            except HetplaceError:
                need(not feas, "evaluate rejects what is_feasible accepts")
                raise
        case("evaluate", f"capped/{wj}", f, param="worker_job")


# ------------------------------------------------------------------ Placement methods
def add_placement_cases():
    def pl():
        p = tiny()
        return p, hp.place(p, "greedy")

    def to_dict():
        p, x = pl()
        d = x.to_dict()
        json.dumps(d, allow_nan=False)
        return d

    def to_frame():
        p, x = pl()
        f = x.to_frame()
        need(len(f) == p.n_jobs, "to_frame: one row per job")
        return f

    case("Placement", "to_dict", to_dict)
    case("Placement", "to_frame", to_frame)
    for v in (True, False, 0, 1, None, "yes", 2, np.bool_(False)):
        case("Placement", f"format_table/workers={_fmt(v)}", lambda v=v: pl()[1].format_table(workers=v), param="workers")
    case("Placement", "str", lambda: str(pl()[1]))
    case("Placement", "repr", lambda: repr(pl()[1]))
    case("Placement", "status", lambda: pl()[1].status)

    def gap(ref):
        def f():
            p, x = pl()
            r = ref() if callable(ref) else ref
            g = x.gap_to(r)
            finite(g, "gap_to")
            return g
        return f

    refs = {"self": lambda: pl()[1], "exact": lambda: hp.solve_exact(tiny()), "other-problem": lambda: hp.place(capped())}
    for name, r in refs.items():
        case("Placement", f"gap_to/{name}", gap(r), param="reference")
    for v in SCALARS:
        case("Placement", f"gap_to/{_fmt(v)}", gap(v), param="reference")
    # constructing a Placement directly with hostile worker_job / info
    for v in ([0, 1, 0, 1], [0, 1, 0, 9], [0.5, 1, 0, 1], None, "x"):
        case("Placement", f"ctor/worker_job={_fmt(v)}", lambda v=v: certify(tiny(), hp.Placement(tiny(), v)),
             param="worker_job")
    for bad in (None, "x"):
        case("Placement", f"ctor/problem={_fmt(bad)}", lambda bad=bad: hp.Placement(bad, [0, 1, 0, 1]), param="problem")


# ------------------------------------------------------------------ matching
def add_matching_cases():
    from hetplace import matching as m

    V = [[3.0, 1.0, 2.0, 0.5], [1.0, 4.0, 0.5, 2.0]]
    C = [2, 1]

    def check_da(values, caps, form, allowed=None, worker_rank=None):
        def chk(res):
            need(isinstance(res, m.MatchingResult), "not a MatchingResult")
            wj = np.asarray(res.worker_job)
            S, K = np.asarray(values, dtype=float).shape
            need(wj.shape == (K,) and wj.min() >= -1 and wj.max() < S, "worker_job out of range")
            counts = np.bincount(wj[wj >= 0], minlength=S)
            caps_a = np.asarray(caps, dtype=np.int64)
            if res.status == "optimal":
                need(np.array_equal(counts, caps_a), f"optimal but counts {counts} != capacities {caps_a}")
            need(np.all(counts <= caps_a), "a job over its capacity")
            if form == "ordinal" and res.status == "optimal":
                need(m.is_stable(values, caps, wj, worker_rank=worker_rank, allowed=allowed), "ordinal result not stable")
            finite(res.welfare, "welfare")
            if res.form == "price" and res.status == "optimal":
                finite(res.bound, "bound")
                # "equal to welfare up to rounding": rounding of the dual sum, whose terms may be ~1e150
                scale = (np.abs(res.prices[np.isfinite(res.prices)]).sum() + np.abs(res.job_prices).sum()
                         + abs(res.idle_price) + abs(res.welfare) + 1.0)
                need(res.bound >= res.welfare - 1e-9 * scale, "bound below welfare beyond rounding")
            return res
        return chk

    def da(values=V, caps=C, form="price", backend="auto", allowed=None, worker_rank=None):
        return lambda: m.deferred_acceptance(values, caps, form=form, allowed=allowed, worker_rank=worker_rank,
                                             backend=backend)

    for form in ("price", "ordinal"):
        for backend in ("auto", "python", "numba", "cython"):
            case("matching", f"da/{form}/{backend}", da(form=form, backend=backend), check_da(V, C, form))
            for label, v in element_variants(V, SCALARS[:30]):
                case("matching", f"da/{form}/{backend}/values/{label}", da(v, form=form, backend=backend),
                     check_da(v, C, form), "values")
        for label, v in element_variants(C, SCALARS[:30] + [3, 4, 5]):
            case("matching", f"da/{form}/capacities/{label}", da(caps=v, form=form), check_da(V, v, form), "capacities")
        for label, v in array_variants(V):
            case("matching", f"da/{form}/values/{label}", da(v, form=form), check_da(v, C, form), "values")
        for label, v in array_variants(C, np.int64):
            case("matching", f"da/{form}/capacities/{label}", da(caps=v, form=form), check_da(V, v, form), "capacities")
        for allowed in ([[True, False, True, True], [True, True, False, True]], [[1, 0, 1, 1], [1, 1, 0, 1]],
                        [[True] * 4], "x", [[NAN] * 4] * 2, np.zeros((2, 4), bool)):
            case("matching", f"da/{form}/allowed={_fmt(allowed)}", da(form=form, allowed=allowed),
                 check_da(V, C, form, allowed=allowed), "allowed")
        for wr in ([[0.0, 1, 2, 3], [3, 2, 1, 0]], [[NAN] * 4] * 2, [[INF] * 4] * 2, [[1] * 4], "x", [[True] * 4] * 2):
            case("matching", f"da/{form}/worker_rank={_fmt(wr)}", da(form=form, worker_rank=wr),
                 check_da(V, C, form, worker_rank=wr), "worker_rank")
    for v in ("PRICE", "x", None, 1):
        case("matching", f"da/form={_fmt(v)}", da(form=v), param="form")
        case("matching", f"da/backend={_fmt(v)}", da(backend=v), param="backend")

    # every backend agrees
    for seed in range(12):
        def agree(seed=seed):
            rng = np.random.default_rng(seed)
            S, K = int(rng.integers(1, 5)), int(rng.integers(1, 9))
            vals = rng.choice([-INF, 0.0, 1.0, 2.0, 1e-300, 1e150, -5.0], size=(S, K))
            caps = rng.integers(0, 3, size=S)
            while caps.sum() > K:
                caps[int(np.argmax(caps))] -= 1
            for form in ("price", "ordinal"):
                ref = None
                for backend in ("python", "numba", "cython"):
                    res = m.deferred_acceptance(vals, caps, form=form, backend=backend)
                    check_da(vals, caps, form)(res)
                    key = (res.status, np.asarray(res.worker_job).tolist(), res.welfare)
                    ref = ref or (backend, key)
                    need(ref[1] == key, f"da {form}: backend {backend} differs from {ref[0]}")
            return True
        case("matching", f"da-backends-agree/{seed}", agree)

    # is_stable
    wj0 = [0, 1, 0, -1]
    for label, v in element_variants(wj0, SCALARS[:30] + [5, -2]):
        case("matching", f"is_stable/worker_job/{label}", lambda v=v: m.is_stable(V, C, v), param="worker_job")
    for label, v in element_variants(V, SCALARS[:25]):
        case("matching", f"is_stable/values/{label}", lambda v=v: m.is_stable(v, C, wj0), param="values")
    for label, v in element_variants(C, SCALARS[:25]):
        case("matching", f"is_stable/capacities/{label}", lambda v=v: m.is_stable(V, v, wj0), param="capacities")

    # market_category
    def market(pname="tiny", **over):
        def f():
            p = PROBLEMS[pname]()
            kw = dict(throughput=p.worker_throughput, work=p.work, comm_time=p.size_cost,
                      sizes=[1] * p.n_jobs)
            kw.update(over)
            res = m.market_category(**kw)
            wj = np.asarray(res.worker_job)
            if res.filled:
                need(np.array_equal(np.bincount(wj[wj >= 0], minlength=p.n_jobs), np.asarray(kw["sizes"])),
                     "filled but sizes differ")
                need(not math.isnan(res.total_jct), "total_jct NaN")
            return res
        return f

    for form in ("price", "ordinal"):
        for backend in ("python", "numba", "cython"):
            for sizes in ([1, 1], [2, 2], [1, 3], [3, 1], [2, 1]):
                case("matching", f"market/{form}/{backend}/{sizes}", market(sizes=sizes, form=form, backend=backend))
    for key, base in (("throughput", [[10.0, 10, 20, 20], [5, 5, 8, 8]]), ("work", [6400.0, 1600.0]),
                      ("comm_time", [[0.0, 0, 1, 2, 3], [0, 0, 1, 2, 3]]), ("sizes", [1, 1])):
        for label, v in element_variants(base, SCALARS[:32]):
            case("matching", f"market/{key}/{label}", market(**{key: v}), param=key)
    for v in FEW:
        case("matching", f"market/max_rounds={_fmt(v)}", market(max_rounds=v), param="max_rounds")


# ------------------------------------------------------------------ categories
def add_categories_cases():
    from hetplace import categories as c

    def chk_sizes(K, S, exact):
        def chk(arr):
            a = np.asarray(arr)
            need(a.ndim == 2 and a.shape[1] == S, f"shape {a.shape}")
            need(np.all(a >= 1), "a size < 1")
            sums = a.sum(axis=1)
            need(np.all(sums == K) if exact else np.all(sums <= K), "sums")
            need(len({tuple(r) for r in a.tolist()}) == a.shape[0], "rows not distinct")
            return arr
        return chk

    dims = [(5, 2), (1, 1), (3, 3), (10, 1), (2**62, 2), (2**62, 3), (2**63, 2), (10**6, 10**6), (4, 5), (0, 0)]
    for v in SCALARS:
        case("categories", f"count/n_workers={_fmt(v)}", lambda v=v: c.count_categories(v, 2), param="n_workers")
        case("categories", f"count/n_jobs={_fmt(v)}", lambda v=v: c.count_categories(6, v), param="n_jobs")
        case("categories", f"count/exact={_fmt(v)}", lambda v=v: c.count_categories(6, 2, exact=v), param="exact")
        case("categories", f"unrank/rank={_fmt(v)}", lambda v=v: c.unrank_category(v, 6, 2), param="rank")
        case("categories", f"sample/n_samples={_fmt(v)}", lambda v=v: c.sample_categories(6, 2, v, seed=1),
             chk_sizes(6, 2, False), "n_samples")
        case("categories", f"sample/seed={_fmt(v)}", lambda v=v: c.sample_categories(6, 2, 4, seed=v),
             chk_sizes(6, 2, False), "seed")
        case("categories", f"enumerate/n_workers={_fmt(v)}", lambda v=v: c.enumerate_categories(v, 2), param="n_workers")
    for K, S in dims:
        for exact in (True, False):
            case("categories", f"count/{K},{S},{exact}", lambda K=K, S=S, e=exact: c.count_categories(K, S, e))
            case("categories", f"sample/{K},{S},{exact}", lambda K=K, S=S, e=exact: c.sample_categories(K, S, 5, 1, e),
                 chk_sizes(K, S, exact))
            case("categories", f"sample-weighted/{K},{S},{exact}",
                 lambda K=K, S=S, e=exact: c.sample_categories(K, S, 5, 1, e, method="weighted"), chk_sizes(K, S, exact))
            case("categories", f"enumerate/{K},{S},{exact}", lambda K=K, S=S, e=exact: c.enumerate_categories(K, S, e),
                 chk_sizes(K, S, exact))

            def rt(K=K, S=S, e=exact):
                n = c.count_categories(K, S, e)
                for r in (0, n - 1, n // 2):
                    sizes = c.unrank_category(r, K, S, e)
                    need(c.rank_category(sizes, K, e) == r, f"rank(unrank({r})) != {r}")
                return n
            case("categories", f"rank-roundtrip/{K},{S},{exact}", rt)
    for label, v in element_variants([2, 3], SCALARS):
        case("categories", f"rank/sizes/{label}", lambda v=v: c.rank_category(v, 5), param="sizes")
    for label, v in array_variants([2, 3], np.int64):
        case("categories", f"rank/sizes/{label}", lambda v=v: c.rank_category(v, 5), param="sizes")
    for backend in ("auto", "python", "numba", "cython", "x", None, 1):
        case("categories", f"enumerate/backend={_fmt(backend)}", lambda b=backend: c.enumerate_categories(6, 3, backend=b),
             chk_sizes(6, 3, True), "backend")
        case("categories", f"sample/backend={_fmt(backend)}", lambda b=backend: c.sample_categories(6, 3, 4, 1, backend=b),
             chk_sizes(6, 3, False), "backend")
    for v in FEW + [10**7, 2**62]:
        case("categories", f"enumerate/limit={_fmt(v)}", lambda v=v: c.enumerate_categories(6, 3, limit=v), param="limit")
    for opt, vals in (("method", ["uniform", "weighted", "W", "x", None, 1]),
                      ("spread", FEW + [1e-4, 1e4, 1e-3, 1e3]),
                      ("centre", [[3.0, 3.0], [1, 1], [NAN, 1], [1e300, 1], [0, 0], [-1, 7], "x", [1, 2, 3], [True, 1]])):
        for v in vals:
            kw = {opt: v}
            if opt != "method":
                kw["method"] = "weighted"
            case("categories", f"sample/{opt}={_fmt(v)}", lambda kw=kw: c.sample_categories(6, 2, 4, seed=1, **kw),
                 chk_sizes(6, 2, False), opt)

    # backends agree on the same seed
    for K, S, exact, method in ((6, 2, True, "uniform"), (40, 5, False, "uniform"), (40, 5, False, "weighted"),
                                (2**40, 3, True, "uniform"), (12, 4, True, "weighted")):
        def agree(K=K, S=S, exact=exact, method=method):
            ref = None
            for backend in ("python", "numba", "cython"):
                a = np.asarray(c.sample_categories(K, S, 16, seed=7, exact=exact, method=method, backend=backend))
                chk_sizes(K, S, exact)(a)
                ref = ref if ref is not None else (backend, a)
                need(np.array_equal(ref[1], a), f"sample_categories: backend {backend} differs from {ref[0]}")
            return True
        case("categories", f"sample-backends-agree/{K},{S},{exact},{method}", agree)


# ------------------------------------------------------------------ data
def add_data_cases(tmp):
    from hetplace import data as d

    files = hostile_files(tmp)
    for name, path in files.items():
        case("data", f"load_gavel/{name}", lambda path=path: d.load_gavel(path), param=None)
    for v in (None, 3, b"/nonexistent", Path("/nonexistent.json"), "/dev/null", "/", "", "~nouser/x.json", str(tmp)):
        case("data", f"load_gavel/path={_fmt(v)}", lambda v=v: d.load_gavel(v))
    case("data", "default_problem", lambda: certify_problem(d.default_problem()))
    case("data", "gavel_path", lambda: d.gavel_path())
    for v in ("cluster.toml", "jobs.csv", "x", "../../etc/passwd", None, 3):
        case("data", f"example_path={_fmt(v)}", lambda v=v: d.example_path(v), param="name")

    def table():
        return d.load_gavel()

    models = [None, 3, "", "ResNet-50 (batch size 64)", "resnet", "x (batch size 0)", "x (batch size -3)",
              "x (batch size 99999999999999999999999)", "x (batch size 1e3)", "(batch size 64)"]
    for mdl in models:
        case("data", f"per_gpu_batch={_fmt(mdl)}", lambda mdl=mdl: d.GavelTable.per_gpu_batch(mdl), param="model")
        case("data", f"family={_fmt(mdl)}", lambda mdl=mdl: d.GavelTable.family(mdl), param="model")
        case("data", f"samples_per_second/model={_fmt(mdl)}", lambda mdl=mdl: table().samples_per_second(mdl, "v100"),
             param="model")
    for gpu in ("v100", "V100", "tpu", None, 1):
        def sps(gpu=gpu):
            t = table()
            v = t.samples_per_second(t.models[0], gpu)
            finite(v, "samples_per_second")
            return v
        case("data", f"samples_per_second/gpu={_fmt(gpu)}", sps, param="gpu_type")
    for n in (1, 2, 4, 3, 0, -1, 2**63, 1.5, True, None, "2"):
        for cons in (True, False):
            def sts(n=n, cons=cons):
                t = table()
                v = t.steps_per_second(t.models[0], "v100", n, cons)
                finite(v, "steps_per_second")
                return v
            case("data", f"steps_per_second/n={_fmt(n)}/{cons}", sts, param="n_gpus")
    for v in ("yes", None, 1):
        case("data", f"steps_per_second/consolidated={_fmt(v)}",
             lambda v=v: table().steps_per_second(table().models[0], "v100", 2, v), param="consolidated")

    def pfg(jobs=None, counts=None, **kw):
        def f():
            t = table()
            j = jobs if jobs is not None else [{"model": t.models[0], "iterations": 100}]
            return certify_problem(d.problem_from_gavel(t, j, counts if counts is not None else {"v100": 2, "k80": 2}, **kw))
        return f

    case("data", "problem_from_gavel/plain", pfg())
    for v in SCALARS[:30]:
        case("data", f"problem_from_gavel/iterations={_fmt(v)}",
             lambda v=v: pfg([{"model": table().models[0], "iterations": v}])(), param="iterations")
        case("data", f"problem_from_gavel/count={_fmt(v)}", pfg(counts={"v100": v}), param="type_counts")
        case("data", f"problem_from_gavel/bandwidth={_fmt(v)}", pfg(bandwidth=v), param="bandwidth")
    for jobs in ([], None, "x", [{}], [{"model": "nope", "iterations": 1}], [1, 2], [{"model": None, "iterations": 1}]):
        case("data", f"problem_from_gavel/jobs={_fmt(jobs)}", pfg(jobs if jobs is not None else "none"), param="jobs")
    for counts in ({}, {"tpu": 2}, {"v100": 0}, [2, 2], None, {"v100": 2**63}, {"v100": 10**6, "k80": 10**6}):
        case("data", f"problem_from_gavel/type_counts={_fmt(counts)}", pfg(counts=counts if counts is not None else "x"),
             param="type_counts")
    for path in list(files.values())[:10]:
        case("data", f"problem_from_gavel/table={Path(path).name}", lambda path=path: d.problem_from_gavel(
            path, [{"model": "resnet", "iterations": 1}], {"v100": 1}))


def hostile_files(tmp):
    """Hostile Gavel JSON, cluster TOML and job CSV files, written once into ``tmp``."""
    tmp = Path(tmp)
    out = {}

    def w(name, data):
        p = tmp / name
        if isinstance(data, str):
            data = data.encode()
        p.write_bytes(data)
        out[name] = str(p)

    good = hp.data.gavel_path().read_text()
    w("gavel-good.json", good)
    w("gavel-empty.json", "")
    w("gavel-list.json", "[]")
    w("gavel-null.json", "null")
    w("gavel-nan.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": NaN}}}')
    w("gavel-inf.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": Infinity}}}')
    w("gavel-neg.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": -1}}}')
    w("gavel-huge.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": 1e308}}}')
    w("gavel-bigint.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": ' + "9" * 400 + "}}}")
    w("gavel-tiny.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": 5e-324}}}')
    w("gavel-bool.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": true}}}')
    w("gavel-str.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 1)": {"null": "12"}}}')
    w("gavel-badkey.json", '{"v100": {"ResNet": {"null": 1.0}}}')
    w("gavel-batch0.json", '{"v100": {"(\'ResNet-18 (batch size 0)\', 1)": {"null": 1.0}}}')
    w("gavel-batchbig.json", '{"v100": {"(\'ResNet-18 (batch size 99999999999999999999)\', 1)": {"null": 1.0}}}')
    w("gavel-gpus0.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 0)": {"null": 1.0}}}')
    w("gavel-gpusbig.json", '{"v100": {"(\'ResNet-18 (batch size 64)\', 99999999999999999999)": {"null": 1.0}}}')
    w("gavel-deep.json", "[" * 100_000 + "]" * 100_000)
    w("gavel-utf16.json", good[:2000].encode("utf-16"))
    w("gavel-bom.json", b"\xef\xbb\xbf" + good.encode())
    w("gavel-nul.json", b"\x00" * 100)
    w("gavel-dupkey.json", '{"v100": {}, "v100": {}}')
    w("gavel-trunc.json", good[: len(good) // 2])
    return out


# ------------------------------------------------------------------ io readers / writers
CLUSTER = """[cluster]
bandwidth = "10Gbit/s"
[[types]]
name = "k80"
count = 2
speeds = [1.0, 0.5]
[[types]]
name = "v100"
count = 2
"""
JOBS = """name,throughput_k80,throughput_v100,batch,iterations,grad_bytes
a,40,250,256,20000,100MB
b,70,430,128,30000,250MB
"""


def add_io_cases(tmp):
    from hetplace import io as hio

    tmp = Path(tmp)
    clusters = {
        "good": CLUSTER,
        "count-neg": CLUSTER.replace("count = 2\n[[", "count = -1\n[["),
        "count-float": CLUSTER.replace("count = 2\n[[", "count = 2.5\n[["),
        "count-huge": CLUSTER.replace("count = 2\n[[", "count = 9223372036854775808\n[["),
        "count-bool": CLUSTER.replace("count = 2\n[[", "count = true\n[["),
        "count-str": CLUSTER.replace("count = 2\n[[", 'count = "2"\n[['),
        "speeds-nan": CLUSTER.replace("[1.0, 0.5]", "[nan, 0.5]"),
        "speeds-inf": CLUSTER.replace("[1.0, 0.5]", "[inf, 0.5]"),
        "speeds-zero": CLUSTER.replace("[1.0, 0.5]", "[0.0, 0.5]"),
        "speeds-tiny": CLUSTER.replace("[1.0, 0.5]", "[1e-300, 0.5]"),
        "speeds-short": CLUSTER.replace("[1.0, 0.5]", "[1.0]"),
        "speeds-str": CLUSTER.replace("[1.0, 0.5]", '["1", 0.5]'),
        "speeds-nested": CLUSTER.replace("[1.0, 0.5]", "[[1.0], 0.5]"),
        "bw-zero": CLUSTER.replace('"10Gbit/s"', "0"),
        "bw-neg": CLUSTER.replace('"10Gbit/s"', "-5"),
        "bw-nan": CLUSTER.replace('"10Gbit/s"', "nan"),
        "bw-inf": CLUSTER.replace('"10Gbit/s"', "inf"),
        "bw-str-inf": CLUSTER.replace('"10Gbit/s"', '"inf"'),
        "bw-tiny": CLUSTER.replace('"10Gbit/s"', "1e-300"),
        "bw-huge": CLUSTER.replace('"10Gbit/s"', "1e300"),
        "bw-unit-huge": CLUSTER.replace('"10Gbit/s"', '"1e300Gbit/s"'),
        "bw-unit-bad": CLUSTER.replace('"10Gbit/s"', '"10 furlongs"'),
        "bw-bool": CLUSTER.replace('"10Gbit/s"', "true"),
        "bw-int-huge": CLUSTER.replace('"10Gbit/s"', "9" * 30),
        "dup-type": CLUSTER.replace('name = "v100"', 'name = "k80"'),
        "no-types": "[cluster]\nbandwidth = 1\n",
        "empty": "",
        "name-int": CLUSTER.replace('name = "v100"', "name = 5"),
        "name-empty": CLUSTER.replace('name = "v100"', 'name = ""'),
        "gavel-missing": 'gavel = "/nonexistent.json"\n' + CLUSTER,
        "gavel-int": "gavel = 3\n" + CLUSTER,
        "unknown-key": CLUSTER + "foo = 1\n",
        "bad-toml": "[[[",
        "million": '[cluster]\nbandwidth = 1e9\n[[types]]\nname = "a"\ncount = 1000000\n',
        "million+1": '[cluster]\nbandwidth = 1e9\n[[types]]\nname = "a"\ncount = 1000001\n',
        "binary": "\x00\xff\xfe",
    }
    jobs = {
        "good": JOBS,
        "thr-nan": JOBS.replace("40,250", "nan,250"),
        "thr-inf": JOBS.replace("40,250", "inf,250"),
        "thr-neg": JOBS.replace("40,250", "-40,250"),
        "thr-tiny": JOBS.replace("40,250", "1e-300,250"),
        "thr-huge": JOBS.replace("40,250", "1e300,250"),
        "thr-zero-row": JOBS.replace("40,250", "0,0"),
        "thr-empty": JOBS.replace("40,250", ",250"),
        "thr-text": JOBS.replace("40,250", "fast,250"),
        "thr-hex": JOBS.replace("40,250", "0x10,250"),
        "thr-underscore": JOBS.replace("40,250", "4_0,250"),
        "thr-complex": JOBS.replace("40,250", "1+2j,250"),
        "batch-zero": JOBS.replace(",256,", ",0,"),
        "batch-float": JOBS.replace(",256,", ",25.5,"),
        "batch-huge": JOBS.replace(",256,", ",9007199254740993,"),
        "batch-2**63": JOBS.replace(",256,", ",9223372036854775808,"),
        "batch-1e19": JOBS.replace(",256,", ",1e19,"),
        "batch-1": JOBS.replace(",256,", ",1,"),
        "iters-zero": JOBS.replace(",20000,", ",0,"),
        "iters-nan": JOBS.replace(",20000,", ",nan,"),
        "iters-huge": JOBS.replace(",20000,", ",1e300,"),
        "grad-neg": JOBS.replace("100MB", "-100MB"),
        "grad-huge": JOBS.replace("100MB", "1e300GB"),
        "grad-bad": JOBS.replace("100MB", "100XB"),
        "grad-nan": JOBS.replace("100MB", "nan"),
        "grad-long": JOBS.replace("100MB", "1" * 5000 + "MB"),
        "dup-name": JOBS.replace("b,70", "a,70"),
        "unknown-type": JOBS.replace("throughput_v100", "throughput_tpu"),
        "missing-col": JOBS.replace(",batch", ""),
        "extra-cell": JOBS.replace("100MB", "100MB,extra"),
        "header-only": JOBS.splitlines()[0] + "\n",
        "empty": "",
        "bom": "\ufeff" + JOBS,
        "crlf": JOBS.replace("\n", "\r\n"),
        "model-col": "name,model,batch,iterations\na,ResNet-18 (batch size 64),64,100\n",
        "model-unknown": "name,model,batch,iterations\na,nope,64,100\n",
        "many-jobs": JOBS.splitlines()[0] + "\n" + "".join(f"j{i},1,2,8,10,0\n" for i in range(5000)),
        "binary": "\x00\xff\xfe",
    }
    cpaths, jpaths = {}, {}
    for n, text in clusters.items():
        p = tmp / f"cluster-{n}.toml"
        p.write_bytes(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
        cpaths[n] = p
    for n, text in jobs.items():
        p = tmp / f"jobs-{n}.csv"
        p.write_text(text)
        jpaths[n] = p

    def rc(p):
        def f():
            spec = hio.read_cluster(p)
            need(spec.n_workers >= 1, "no workers")
            return spec
        return f

    for n, p in cpaths.items():
        case("io", f"read_cluster/{n}", rc(p))
    for v in ("/nonexistent.toml", "/dev/null", "/", None, 3, "", str(tmp)):
        case("io", f"read_cluster/path={_fmt(v)}", rc(v))

    def lp(cp, jp):
        def f():
            return certify_problem(hio.load_problem(cp, jp))
        return f

    for n, p in jpaths.items():
        case("io", f"load_problem/jobs-{n}", lp(cpaths["good"], p))
    for n, p in cpaths.items():
        case("io", f"load_problem/cluster-{n}", lp(p, jpaths["good"]))
    for v in (None, 3, "/nonexistent.csv", "/dev/null"):
        case("io", f"read_jobs/path={_fmt(v)}", lambda v=v: hio.read_jobs(v, hio.read_cluster(cpaths["good"])))
    for v in (None, "x", 3, {}):
        case("io", f"read_jobs/cluster={_fmt(v)}", lambda v=v: hio.read_jobs(jpaths["good"], v), param="cluster")
    for v in ("10Gbit/s", "1GB/s", "inf", "0", "-1", "1e300", "1e-300Gbit/s", "nan", "", "10 Gbit/s", 5, 0, -1, NAN, INF,
              True, None, 1e300, 2**1100, "9" * 5000, "1" * 100 + "Gbit/s", [1]):
        case("io", f"parse_bandwidth={_fmt(v)}", lambda v=v: _finite_or_inf(hio.parse_bandwidth(v)), param="bandwidth")
    for v in ("100MB", "1GiB", "0", "-1MB", "1e300GB", "nan", "", "1.5KB", 5, 0, -1, NAN, INF, True, None, 1e300, 2**1100,
              "9" * 5000, [1]):
        case("io", f"parse_bytes={_fmt(v)}", lambda v=v: _finite(hio.parse_bytes(v)), param="grad_bytes")

    def writer(kind, path, fmt=None):
        def f():
            p = tiny()
            if kind == "cluster":
                return hio.write_cluster(path, p)
            if kind == "jobs":
                return hio.write_jobs(path, p)
            return hio.write_placement(hp.place(p, "greedy"), path, fmt)
        return f

    for kind in ("cluster", "jobs", "placement"):
        for v in (tmp / f"out-{kind}.txt", "/nonexistent/dir/x", str(tmp), "/dev/full", None, 3):
            case("io", f"write_{kind}/path={_fmt(str(v))}", writer(kind, v))
    for fmt in ("json", "csv", "text", "JSON", "xml", None, 3):
        case("io", f"write_placement/fmt={_fmt(fmt)}", writer("placement", tmp / "out.pl", fmt), param="fmt")
    case("io", "write_placement/placement=None", lambda: hio.write_placement(None, tmp / "x.json"), param="placement")

    def roundtrip():
        p = hp.Problem(**BASE, job_names=["a", "b"], type_names=["k80", "v100"])
        c, j = tmp / "rt.toml", tmp / "rt.csv"
        hio.write_cluster(c, p)
        hio.write_jobs(j, p)
        q = certify_problem(hio.load_problem(c, j))
        need(np.array_equal(q.throughput, p.throughput) and np.array_equal(q.batch, p.batch), "round trip differs")
        return q
    case("io", "write-read-roundtrip", roundtrip)
    return cpaths, jpaths


def _finite(x):
    if x is None:  # parse_bytes: None for a malformed value (documented)
        return x
    finite(x, "value")
    return x


def _finite_or_inf(x):
    need(not math.isnan(x) and x > 0, f"bandwidth {x!r}")
    return x


# ------------------------------------------------------------------ instances
def add_instances_cases():
    from hetplace import instances as ins

    def mk(family, seed=0, K=8, S=3, **kw):
        def f():
            table = hp.data.load_gavel() if family in ("gavel", "speeds") else None
            return certify_problem(ins.make_instance(family, seed, K, S, table, **kw))
        return f

    for fam in ("gavel", "speeds", "synthetic"):
        case("instances", f"{fam}/plain", mk(fam))
        for v in FEW + [2**63 - 1, -(2**63)]:
            case("instances", f"{fam}/seed={_fmt(v)}", mk(fam, seed=v), param="seed")
            case("instances", f"{fam}/n_workers={_fmt(v)}", mk(fam, K=v), param="n_workers")
            case("instances", f"{fam}/n_jobs={_fmt(v)}", mk(fam, S=v), param="n_jobs")
        for K, S in ((1, 1), (1, 2), (10**6, 1), (10**7, 2), (1000, 1000), (5, 5)):
            case("instances", f"{fam}/{K}x{S}", mk(fam, K=K, S=S))
    for opt, vals in (("p_exclude", [0.0, 1.0, 0.5, -0.1, 1.1, NAN, True, None]),
                      ("bandwidth", [1.0, 0.0, -1, NAN, INF, 1e300, 1e-300, True, None]),
                      ("types", [("v100",), (), ("tpu",), "v100", None, ("v100", "v100")])):
        for v in vals:
            case("instances", f"gavel/{opt}={_fmt(v)}", mk("gavel", **{opt: v}), param=opt)
    for v in (0.4, 0.0, 1.0, 1.5, -1, NAN, None, True, 1e-300):
        case("instances", f"speeds/low={_fmt(v)}", mk("speeds", low=v), param="low")
    for opt, vals in (("n_types", [1, 6, 0, -1, 10**6, 2.5, True, None]),
                      ("p_zero", [0.0, 0.9, 1.0, -1, NAN, None]),
                      ("bandwidth", [1.0, 0.0, NAN, INF, 1e300, None])):
        for v in vals:
            case("instances", f"synthetic/{opt}={_fmt(v)}", mk("synthetic", **{opt: v}), param=opt)
    for fam in ("x", None, 3, "Gavel"):
        case("instances", f"family={_fmt(fam)}", mk(fam), param="family")
    case("instances", "gavel/table=None", lambda: ins.make_instance("gavel", 0, 8, 3, None), param="table")
    case("instances", "gavel/table=str", lambda: ins.make_instance("gavel", 0, 8, 3, "x"), param="table")


# ------------------------------------------------------------------ bench
def add_bench_cases(tmp):
    from hetplace import bench as b

    def spec(**kw):
        return lambda: b.SweepSpec(**kw)

    for opt, vals in (("families", [("synthetic",), (), ("x",), "synthetic", None, [1]]),
                      ("K", [(8,), (), (0,), (-1,), (2**63,), (1.5,), ("8",), (True,), 8, None]),
                      ("S", [(2,), (), (0,), (10**9,), (NAN,), None]),
                      ("methods", [("greedy",), (), ("x",), "greedy", None]),
                      ("seeds", [(0,), (), (-1,), (2**64,), (1.5,), None]),
                      ("exact_method", ["dp", "x", None, 1]), ("exact_solver", ["highs", "x", None]),
                      ("exact_time_limit", FEW + [np.float64(5.0), np.int64(5)]),
                      ("smp_options", [{}, {"samples": 4}, {"samples": -1}, {"x": 1}, None, []]),
                      ("gavel", [None, "/nonexistent.json", 3])):
        for v in vals:
            kw = {"families": ("synthetic",), "K": (4,), "S": (2,), "methods": ("greedy",), "seeds": (0,)}
            kw[opt] = v
            case("bench", f"SweepSpec/{opt}={_fmt(v)}", spec(**kw), param=opt)

    def sweep(**kw):
        def f():
            base = dict(families=("synthetic",), K=(4, 6), S=(2,), methods=("greedy", "smp", "equal"), seeds=(0,),
                        exact_time_limit=5.0, smp_options={"samples": 4})
            base.update(kw)
            res = b.run_sweep(b.SweepSpec(**base), b.SerialExecutor())
            need(isinstance(res, b.SweepResult), "not a SweepResult")
            need(not res.errors, f"sweep errors: {res.errors}")
            res.write(tmp / "bench", plots=False)
            b.summary_markdown(res)
            return res
        return f

    case("bench", "run_sweep/tiny", sweep())
    case("bench", "run_sweep/exact", sweep(methods=("exact", "greedy")))
    case("bench", "run_sweep/gavel", sweep(families=("gavel", "speeds"), gavel=str(hp.data.gavel_path())))
    for ex in (None, 3, "x", object()):
        case("bench", f"run_sweep/executor={_fmt(ex)}", lambda ex=ex: b.run_sweep(
            b.SweepSpec(families=("synthetic",), K=(4,), S=(2,), methods=("greedy",), seeds=(0,)), ex), param="executor")
    for v in (0, -1, 1.5, True, "2", 2**63):
        case("bench", f"run_sweep/workers={_fmt(v)}", lambda v=v: b.run_sweep(
            b.SweepSpec(families=("synthetic",), K=(4,), S=(2,), methods=("greedy",), seeds=(0,)), workers=v),
            param="workers")
    for kind in ("serial", "process", "thread", "dask", "x", None, 3):
        case("bench", f"make_executor/kind={_fmt(kind)}", lambda k=kind: _shutdown(b.make_executor(k, workers=1)), param="kind")
    for v in (0, -1, 1.5, True, "2", 2**63, 10**9):
        case("bench", f"make_executor/workers={_fmt(v)}", lambda v=v: _shutdown(b.make_executor("process", workers=v)),
             param="workers")
    for v in (None, 3, "x"):
        case("bench", f"summary_markdown={_fmt(v)}", lambda v=v: b.summary_markdown(v), param="result")
    for v in (None, 3, "x", "/nonexistent.json"):
        case("bench", f"quick_spec/gavel={_fmt(v)}", lambda v=v: b.quick_spec(v), param="gavel")
    case("bench", "quick_spec/override", lambda: b.quick_spec(None, K=(4,)))
    case("bench", "quick_spec/override-bad", lambda: b.quick_spec(None, nope=1), param="nope")
    case("bench", "default_gavel_path", lambda: b.default_gavel_path())


def _shutdown(ex):
    try:
        ex.shutdown()
    except AttributeError:
        try:
            ex.__exit__(None, None, None)
        except Exception:
            pass
    return ex


# ------------------------------------------------------------------ balance
def add_balance_cases():
    from hetplace import balance as bl

    def chk_sizes(total, n):
        def chk(sizes):
            s = np.asarray(sizes)
            need(s.shape == (n,), f"shape {s.shape}")
            need(s.dtype.kind in "iu", f"dtype {s.dtype}")
            need(np.all(s >= 0), "negative size")
            need(int(sum(int(v) for v in s.tolist())) == int(total), "sizes do not sum to the total")
            return sizes
        return chk

    def lb(policy="cpu", steps=3, times=None, B=64, n=4, signals=None, **kw):
        def f():
            bal = bl.LoadBalancer(B, n, policy=policy, **kw)
            sizes = chk_sizes(B, n)(bal.batch_sizes)
            for t in range(steps):
                ts = times if times is not None else np.asarray(sizes, dtype=float) / np.array([1.0, 2.0, 3.0, 4.0][:n] + [1.0] * (n - 4))
                sizes = bal.observe(ts, **(signals or {}))
                chk_sizes(B, n)(sizes)
                if bal.predicted_speeds is not None:  # None for policies without a predictor (documented)
                    finite(bal.predicted_speeds, "predicted_speeds")
            return sizes
        return f

    for policy in bl.POLICIES:
        case("balance", f"LoadBalancer/{policy}/plain", lb(policy, steps=6))
        for opt, vals in (("global_batch", SCALARS), ("n_workers", FEW + [10**6, 10**6 + 1])):
            for v in vals:
                def ctor(policy=policy, opt=opt, v=v):
                    kw = {"global_batch": 64, "n_workers": 4, opt: v}
                    bal = bl.LoadBalancer(kw["global_batch"], kw["n_workers"], policy=policy)
                    return chk_sizes(int(kw["global_batch"]), int(kw["n_workers"]))(bal.batch_sizes)
                case("balance", f"LoadBalancer/{policy}/{opt}={_fmt(v)}", ctor, param=opt)
        for label, v in element_variants([1.0, 2.0, 3.0, 4.0], SCALARS[:36]):
            case("balance", f"observe/{policy}/times/{label}", lb(policy, times=v), param="compute_times")
        for label, v in array_variants([1.0, 2.0, 3.0, 4.0]):
            case("balance", f"observe/{policy}/times/{label}", lb(policy, steps=1, times=v), param="compute_times")
        for v in (FEW[:8] if policy != "fl" else FEW):
            case("balance", f"observe/{policy}/signal={_fmt(v)}", lb(policy, signals={"load": [v, 0.1, 0.2, 0.3]}))
        for caps in ([16, 16, 16, 16], [1e30] * 4, [INF] * 4, [2**63] * 4, [1, 1, 1, 1], [0, 64, 64, 64], [NAN] * 4,
                     [-1, 64, 64, 64], [16.5, 16, 16, 16], [True] * 4, [100] * 3):
            case("balance", f"LoadBalancer/{policy}/memory_caps={_fmt(caps)}", lb(policy, memory_caps=caps),
                 param="memory_caps")
        for v in (0, 1, 16, 17, 64, -1, 1.5, True, 2**63):
            case("balance", f"LoadBalancer/{policy}/min_batch={_fmt(v)}", lb(policy, min_batch=v), param="min_batch")
    for opt, vals in (("predictor", ["narx", "ewma", "EWMA", "x", None, 1]),
                      ("hysteresis", FEW), ("ewma_alpha", FEW + [1e-300]), ("z", FEW),
                      ("knees", [[0, 0, 0, 0], [8] * 4, [NAN] * 4, [1e300] * 4, [-1] * 4, [1] * 3]),
                      ("window", FEW), ("max_window", FEW), ("step", FEW), ("tol", FEW)):
        for v in vals:
            policy = "gpu" if opt in ("knees", "window", "max_window", "step", "tol") else "cpu"
            if opt == "predictor":
                policy = "cpu"
            case("balance", f"LoadBalancer/{policy}/{opt}={_fmt(v)}", lb(policy, **{opt: v}), param=opt)
    for v in (FEW + [[1.0, 2, 3, 4]]):
        case("balance", f"observe/fl/upload={_fmt(v)}", lb("fl", signals={"upload": v}), param="upload")
    case("balance", "observe/too-many-signals", lb("cpu", signals={f"s{i}": [1.0] * 4 for i in range(40)}))
    case("balance", "observe/bad-signal-name", lb("cpu", signals={"": [1.0] * 4}))
    for policy in ("x", None, 3, "CPU"):
        case("balance", f"LoadBalancer/policy={_fmt(policy)}", lb(policy), param="policy")
    case("balance", "LoadBalancer/unknown-option", lb("cpu", nope=1), param="nope")

    # largest_remainder
    def lr(x=(1.0, 2.0, 3.0), total=12, lower=1, upper=INF):
        def f():
            out = bl.largest_remainder(x, total, lower, upper)
            chk_sizes(int(total), len(out))(out)
            lo = np.broadcast_to(np.asarray(lower, dtype=float), out.shape)
            hi = np.broadcast_to(np.asarray(upper, dtype=float), out.shape)
            need(np.all(out >= lo) and np.all(out <= hi), "bounds violated")
            return out
        return f

    for label, v in element_variants([1.0, 2.0, 3.0], SCALARS):
        case("balance", f"largest_remainder/x/{label}", lr(x=v), param="x")
    for v in SCALARS:
        case("balance", f"largest_remainder/total={_fmt(v)}", lr(total=v), param="total")
        case("balance", f"largest_remainder/lower={_fmt(v)}", lr(lower=v), param="lower")
        case("balance", f"largest_remainder/upper={_fmt(v)}", lr(upper=v), param="upper")
    for label, v in array_variants([1.0, 2.0, 3.0]):
        case("balance", f"largest_remainder/x/{label}", lr(x=v), param="x")

    # EpochPlan
    def ep(N=10, B=4, seed=0, drop_last=False, epoch=0, it=0, sizes=(3, 1)):
        def f():
            plan = bl.EpochPlan(N, B, seed=seed, drop_last=drop_last)
            bs = plan.batches(epoch, it, list(sizes) if isinstance(sizes, tuple) else sizes)
            idx = np.concatenate([np.asarray(x, dtype=np.int64) for x in bs]) if len(bs) else np.array([], np.int64)
            need(idx.size == len(set(idx.tolist())), "repeated sample in one iteration")
            need(np.all((idx >= 0) & (idx < int(N))), "sample index out of range")
            return bs
        return f

    for opt, vals in (("N", FEW + [2**53, 2**62]), ("B", FEW + [2**53]), ("seed", FEW), ("drop_last", FEW[:12]),
                      ("epoch", FEW), ("it", FEW + [2, 3]), ("sizes", [(3, 1), (4, 0), (5, -1), (2, 2, 0), (NAN, 1),
                                                                      (2**63, 1), (True, 3), "x", None, (3.0, 1.0)])):
        for v in vals:
            case("balance", f"EpochPlan/{opt}={_fmt(v)}", ep(**{opt: v}), param={"N": "n_samples", "B": "global_batch",
                                                                                 "it": "iteration"}.get(opt, opt))

    # simulate / make_scenario
    def sim(policy="cpu", **kw):
        def f():
            kw.setdefault("iterations", 40)
            res = bl.simulate(policy, seed=1, **kw)
            for key, val in res.summary().items() if isinstance(res.summary(), dict) else ():
                if isinstance(val, float):
                    need(not math.isnan(val), f"summary {key} is NaN")
            return res
        return f

    for policy in bl.POLICIES:
        for kind in ("cpu", "gpu", "fl"):
            case("balance", f"simulate/{policy}/{kind}", sim(policy, kind=kind, n_workers=6, global_batch=96))
    for opt, vals in (("n_workers", FEW + [10**6 + 1]), ("global_batch", FEW + [2**53 + 1]),
                      ("iterations", FEW + [10**9]), ("jitter", FEW), ("hiccup_rate", FEW), ("hiccup_factor", FEW),
                      ("comm_fraction", FEW), ("signal_noise", FEW), ("walk_sd", FEW), ("dropout_rate", FEW),
                      ("deadline_factor", FEW), ("step_rate", FEW), ("warmup", FEW), ("events", [(), "x", None, ("nope",)]),
                      ("policy_options", [{}, {"z": 2.0}, {"z": NAN}, {"nope": 1}, None, "x"]),
                      ("signals", [True, False, 1, None]), ("compare", [True, False, "yes"])):
        for v in vals:
            kind = {"dropout_rate": "fl", "deadline_factor": "fl"}.get(opt, "cpu")
            kw = {opt: v, "kind": kind}
            if opt not in ("n_workers",):
                kw["n_workers"] = 6
            if opt == "iterations" and v == 10**9:
                continue
            case("balance", f"simulate/{opt}={_fmt(v)}", sim("fl" if kind == "fl" else "cpu", **kw), param=opt)
    for v in ("x", None, 3):
        case("balance", f"simulate/kind={_fmt(v)}", sim("cpu", kind=v), param="kind")
        case("balance", f"simulate/policy={_fmt(v)}", sim(v), param="policy")
        case("balance", f"simulate/scenario={_fmt(v)}", lambda v=v: bl.simulate("cpu", v), param="scenario")

    # model helpers
    def ef(speed, total=12, lo=1, hi=12):
        b, T = bl.equal_finish(speed, total, lo, hi)
        finite(b, "equal_finish b")
        finite(T, "equal_finish T")
        need(abs(float(np.sum(b)) - total) <= 1e-9 * max(1, total), "equal_finish does not sum to total")
        return b

    def oia(speed, total=12, lo=1, hi=12):
        b, T = bl.optimal_integer_allocation(speed, total, lo, hi)
        finite(T, "optimal_integer_allocation T")
        return chk_sizes(int(total), len(b))(b)

    def st(b, speed, **kw):
        t = np.asarray(bl.step_time(b, speed, **kw))
        sp = np.broadcast_to(np.asarray(speed, dtype=float), t.shape)
        need(not np.isnan(t).any(), "step_time NaN")
        need(np.all(np.isfinite(t[sp > 0])), "step_time inf for a positive speed")  # speed 0 -> inf (documented)
        return t

    for label, v in element_variants([1.0, 2.0, 3.0], SCALARS[:30]):
        case("balance", f"equal_finish/speed/{label}", lambda v=v: ef(v), param="speed")
        case("balance", f"optimal_integer_allocation/speed/{label}", lambda v=v: oia(v), param="speed")
        case("balance", f"step_time/speed/{label}", lambda v=v: st([4, 4, 4], v), param="speed")
    for v in SCALARS[:30]:
        case("balance", f"equal_finish/total={_fmt(v)}", lambda v=v: ef([1.0, 2, 3], v, 1, 64), param="total")
        case("balance", f"optimal_integer_allocation/total={_fmt(v)}", lambda v=v: oia([1.0, 2, 3], v, 1, 64),
             param="total")
        case("balance", f"step_time/knee={_fmt(v)}", lambda v=v: st([4, 4, 4], [1.0, 2, 3], knee=v), param="knee")
        case("balance", f"equal_finish/lo={_fmt(v)}", lambda v=v: ef([1.0, 2, 3], 12, v, 12), param="lower")
        case("balance", f"optimal_integer_allocation/hi={_fmt(v)}", lambda v=v: oia([1.0, 2, 3], 12, 1, v), param="upper")


# ------------------------------------------------------------------ torch
def add_torch_cases(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:  # pragma: no cover
        return

    def sampler(data=20, B=8, rank=0, world=2, seed=0, drop_last=False, sizes=None, epoch=0):
        def f():
            from hetplace.torch import LBBSPBatchSampler

            s = LBBSPBatchSampler(data, B, rank=rank, world_size=world, seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            if sizes is not None:
                s.set_sizes(sizes)
            batches = list(s)
            flat = [i for b in batches for i in b]
            N = data if isinstance(data, int) else len(data)
            need(all(0 <= i < N for i in flat), "index out of range")
            return batches
        return f

    for opt, vals in (("data", [20, 0, 1, -1, 2**63, 1.5, True, None, "abc", list(range(5)), [], NAN]),
                      ("B", FEW + [2**53 + 1]), ("rank", FEW + [5]), ("world", FEW + [10**6 + 1]), ("seed", FEW),
                      ("drop_last", [True, False, 1, None, "yes"]), ("epoch", FEW),
                      ("sizes", [[4, 4], [8, 0], [9, -1], [4, 4, 0], [NAN, 8], [2**63, 1], [True, 7], "x", None, [4.0, 4.0],
                                 np.array([4, 4], dtype=np.uint64), np.array([4, 4], dtype=np.float16)])):
        for v in vals:
            case("torch", f"LBBSPBatchSampler/{opt}={_fmt(v)}", sampler(**{opt: v}),
                 param={"B": "global_batch", "world": "world_size", "data": "data_source"}.get(opt, opt))

    def group_call(fn):
        def f():
            import torch.distributed as dist

            if not dist.is_initialized():
                store = tempfile.mktemp(dir=tmp)
                dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
            return fn()
        return f

    def allreduce(local, total, reduction="mean", params="model"):
        def f():
            import torch

            from hetplace.torch import allreduce_gradients_

            model = torch.nn.Linear(3, 2)
            model(torch.ones(4, 3)).sum().backward()
            before = [p.grad.clone() for p in model.parameters()]
            allreduce_gradients_(model if params == "model" else params, local, total, reduction=reduction)
            for p in model.parameters():
                need(torch.isfinite(p.grad).all().item(), "non-finite gradient")
            return before
        return group_call(f)

    for v in FEW + [4, 4.0]:
        case("torch", f"allreduce/local_count={_fmt(v)}", allreduce(v, 4), param="local_count")
        case("torch", f"allreduce/total_count={_fmt(v)}", allreduce(4, v), param="total_count")
    for r in ("mean", "sum", "MEAN", "x", None):
        case("torch", f"allreduce/reduction={_fmt(r)}", allreduce(4, 4, r), param="reduction")
    for p in (None, 3, "x", []):
        case("torch", f"allreduce/parameters={_fmt(p)}", allreduce(4, 4, params=p), param="parameters")

    def hook_state(local, total, reduction="mean"):
        def f():
            from hetplace.torch import WeightedHookState

            st = WeightedHookState()
            st.set_counts(local, total, reduction)
            return st
        return group_call(f)

    for v in FEW:
        case("torch", f"WeightedHookState/local={_fmt(v)}", hook_state(v, 4), param="local_count")
        case("torch", f"WeightedHookState/total={_fmt(v)}", hook_state(4, v), param="total_count")
    for r in ("x", None):
        case("torch", f"WeightedHookState/reduction={_fmt(r)}", hook_state(4, 4, r), param="reduction")

    def coord(B=8, policy="cpu", steps=3, ct=1.0, **kw):
        def f():
            from hetplace.torch import Coordinator

            c = Coordinator(B, policy=policy, **kw)
            for _ in range(steps):
                c.step(ct)
                need(int(np.asarray(c.sizes).sum()) == int(B), "sizes do not sum to the batch")
            return c.sizes
        return group_call(f)

    case("torch", "Coordinator/plain", coord())
    for v in FEW:
        case("torch", f"Coordinator/global_batch={_fmt(v)}", coord(B=v), param="global_batch")
        case("torch", f"Coordinator/compute_time={_fmt(v)}", coord(ct=v), param="compute_time")
    for v in ("x", None, "gpu", "fl"):
        case("torch", f"Coordinator/policy={_fmt(v)}", coord(policy=v), param="policy")
    for v in (-1, 1, 1.5, None, "0"):
        case("torch", f"Coordinator/src={_fmt(v)}", coord(src=v), param="src")


# ------------------------------------------------------------------ CLI (subprocess `hetplace ...`)
def add_cli_cases(cpaths, jpaths, tmp):
    exe = os.environ.get("HETPLACE_CLI") or "hetplace"

    def cli(*args, stdin=None):
        def f():
            r = subprocess.run([exe, *map(str, args)], capture_output=True, timeout=9, input=stdin)
            err = r.stderr.decode("utf-8", "replace")
            need(r.returncode in (0, 2), f"exit code {r.returncode}: {err[-300:]}")
            need("Traceback" not in err, f"traceback: {err[-300:]}")
            if r.returncode == 2:
                lines = [ln for ln in err.splitlines() if ln.strip()]
                need(len(lines) >= 1, "exit 2 with nothing on stderr")
                need(lines[-1].startswith("hetplace: error:") or lines[-1].startswith("usage:")
                     or "error:" in lines[-1], f"exit 2 without an error line: {err[-300:]}")
            if r.returncode == 0 and "--json" in args:
                json.loads(r.stdout.decode())
            return r.returncode
        return f

    good_c, good_j = cpaths["good"], jpaths["good"]
    case("cli", "no-args", cli())
    case("cli", "run", cli("run", "--no-exact"))
    case("cli", "help", cli("--help"))
    for m in ("auto", "smp", "greedy", "equal", "random", "exact", "x", ""):
        case("cli", f"place/method={m}", cli("place", "--cluster", good_c, "--jobs", good_j, "--method", m))
    for s in ("0", "-1", "18446744073709551615", "18446744073709551616", "1e3", "x", "99999999999999999999999999"):
        case("cli", f"place/seed={s}", cli("place", "--cluster", good_c, "--jobs", good_j, "--method", "random", "--seed", s))
        case("cli", f"run/seed={s}", cli("--seed", s, "--no-exact", "--method", "random"))
    for n, p in cpaths.items():
        case("cli", f"place/cluster-{n}", cli("place", "--cluster", p, "--jobs", good_j, "--method", "greedy"))
    for n, p in jpaths.items():
        case("cli", f"place/jobs-{n}", cli("place", "--cluster", good_c, "--jobs", p, "--method", "greedy", "--json"))
    for v in ("/nonexistent", "/dev/null", "/", str(tmp), "-", ""):
        case("cli", f"place/cluster-path={v}", cli("place", "--cluster", v, "--jobs", good_j))
        case("cli", f"place/jobs-path={v}", cli("place", "--cluster", good_c, "--jobs", v))
    for v in ("/nonexistent.json", "/dev/null", str(tmp), "/dev/full", str(tmp / "o.csv"), str(tmp / "o.json")):
        case("cli", f"place/out={v}", cli("place", "--cluster", good_c, "--jobs", good_j, "--method", "greedy", "--out", v))
    for v in ("/nonexistent.json", str(tmp / "gavel-nan.json"), str(tmp / "gavel-deep.json"), "/dev/null"):
        case("cli", f"place/gavel={Path(v).name}", cli("place", "--cluster", good_c, "--jobs", good_j, "--gavel", v))
    for args in (["--K", "0"], ["--K", "4", "--S", "9"], ["--K", "99999999999999999999"], ["--seeds", "-1"],
                 ["--exact-time-limit", "nan"], ["--exact-time-limit", "-1"], ["--exact-time-limit", "inf"],
                 ["--exact-time-limit", "none"], ["--families", "x"], ["--methods", "x"],
                 ["--gavel", "/nonexistent.json"], ["--executor", "x"], ["--workers", "0"],
                 ["--K", "4", "--S", "2", "--methods", "greedy", "--families", "synthetic", "--seeds", "0",
                  "--executor", "serial", "--no-plots"]):
        small = ["--K", "4"] if "--K" not in args else []
        small += ["--S", "2"] if "--S" not in args else []
        small += ["--methods", "greedy"] if "--methods" not in args else []
        small += ["--families", "synthetic"] if "--families" not in args else []
        small += ["--seeds", "0"] if "--seeds" not in args else []
        case("cli", f"bench/{' '.join(args)}", cli("bench", "--out", tmp / "bench-cli", *small, *args))
    for args in (["--bogus"], ["place"], ["place", "--cluster"], ["nope"], ["--method", "smp", "--json", "--no-exact"]):
        case("cli", f"args/{' '.join(args)}", cli(*args))


# ------------------------------------------------------------------ online simulator
def add_online_cases(tmp):
    """hetplace.online: hostile jobs, clusters, rounds and restarts; termination; pickling; no stderr; the CLI."""
    from hetplace import online as on
    from hetplace.data import load_gavel

    cluster = {"v100": 2, "p100": 2, "k80": 2}
    fields = ("job_id", "model", "arrival", "total_steps", "scale_factor", "duration")

    def check(res):
        need(res.status in ("complete", "stalled"), f"status {res.status!r}")
        need((res.status == "stalled") == bool(res.message), "a message iff stalled")
        need(set(res.stalled) <= set(res.jobs["job_id"].tolist()), "stalled names jobs of the trace")
        jct = res.jobs["jct"][np.isfinite(res.jobs["finish"])]
        need(np.all(jct >= 0), f"negative JCT {jct}")
        need(res.n_finished <= res.n_measured, "more finished than measured")
        need(not math.isfinite(res.utilization) or -1e-9 <= res.utilization <= 1 + 1e-9,
             f"utilization {res.utilization}")

    def stalled(res):
        check(res)
        need(res.status == "stalled" and res.stalled, f"expected a stall, got {res.status}")

    def trace(n=4, multi=False, **over):
        jobs = list(on.gavel_trace(n, 30.0, 0, multi_gpu=multi))
        if over:
            j = jobs[0]
            jobs[0] = on.Job(**{**{f: getattr(j, f) for f in fields}, **over})
        return jobs

    def short(n, multi=False):
        """A trace of jobs of at most 3,000 steps (minutes each), so a case ends within the campaign's timeout."""
        return [on.Job(j.job_id, j.model, j.arrival, min(j.total_steps, 3000.0), j.scale_factor, NAN)
                for j in on.gavel_trace(n, 30.0, 0, multi_gpu=multi)]

    def sim(jobs=None, cl=None, policy="fifo", **kw):
        def f():
            return on.simulate(trace() if jobs is None else jobs(), cluster if cl is None else cl, policy,
                               progress=False, **kw)
        return f

    for field in fields:
        extra = {"job_id": [-5, 2**63 - 1], "scale_factor": [10**6, 10**6 + 1], "arrival": [1e9, 1e12, 1e13],
                 "duration": [1e12]}.get(field, [])
        for v in FEW + extra:
            for pol in ("fifo", "smp"):
                case("online", f"simulate/{pol}/job.{field}={_fmt(v)}",
                     sim(lambda field=field, v=v: trace(**{field: v}), policy=pol), check, param=field)
    for v in SCALARS:
        case("online", f"simulate/round_s={_fmt(v)}", sim(round_s=v), check, param="round_s")
        case("online", f"simulate/restart={_fmt(v)}", sim(restart=v), check, param="restart")
        case("online", f"simulate/cluster.p100={_fmt(v)}", sim(cl={"v100": 2, "p100": v, "k80": 2}), check,
             param="cluster")
        case("online", f"simulate/seed={_fmt(v)}", sim(seed=v), check, param="seed")
    for cl in ("v100=2000000", {"v100": 10**9}, {"v100": 400_000, "p100": 400_000, "k80": 400_000}, {}, "x",
               "v100=" + "9" * 5000, {"nope": 2}, {"v100": 0, "p100": 0, "k80": 0}):
        case("online", f"simulate/cluster={_fmt(cl)[:40]}", sim(cl=cl), check, param="cluster")
    case("online", "simulate/duplicate-ids", sim(lambda: [trace()[0]] * 2), check, param="job_id")
    case("online", "simulate/total_steps-1e20-round-1", sim(lambda: trace(total_steps=1e20), round_s=1.0), check,
         param="round_s")
    # termination: restarts at least a round long, every policy; 0-GPU types, every policy
    for pol in on.policy_names():
        case("online", f"terminates/{pol}/restart120-round60", sim(lambda: short(4), policy=pol, round_s=60,
                                                                     restart=120), check)
        for multi in (False, True):
            case("online", f"zero-gpu-type/{pol}/multi={multi}",
                 sim(lambda multi=multi: short(6, multi), cl={"v100": 8, "p100": 0, "k80": 4}, policy=pol), check)
    for pol in ("las", "ftf"):
        case("online", f"terminates/{pol}/restart120-round60/stalls", sim(lambda: trace(12), policy=pol, round_s=60,
                                                                            restart=120), stalled)

    from stall_policies import Mover, OntoK80, no_k80_table as no_k80  # tests/ is on sys.path

    case("online", "terminates/mover/restart120-round60", sim(lambda: trace(6), policy=Mover(), round_s=60,
                                                              restart=120), stalled)
    m = "ResNet-18 (batch size 64)"
    case("online", "terminates/zero-rate-allocation", lambda: on.simulate(
        [on.Job(0, m, 0.0, 1000.0, 1, NAN)], cluster, OntoK80(), round_s=60, table=no_k80(m), progress=False), stalled)

    def pickled(restart):
        pm = on.ProgressModel(load_gavel(), restart)
        back = pickle.loads(pickle.dumps(pm))
        need(back.restart_time(m) == pm.restart_time(m), "restart time changed by pickling")
        need(back.steps_per_second(m, {"v100": 3}) == pm.steps_per_second(m, {"v100": 3}), "rate changed by pickling")
        return back

    for r in ("none", 30.0, {"default": 5.0, "ResNet-50": 60.0}):
        case("online", f"ProgressModel/pickle/restart={_fmt(r)[:30]}", lambda r=r: pickled(r))

    def no_stderr():
        old = sys.stderr
        sys.stderr = None
        try:
            return on.simulate(trace(), cluster, "fifo", progress=True)
        finally:
            sys.stderr = old

    case("online", "simulate/progress-without-stderr", no_stderr, check)

    exe = os.environ.get("HETPLACE_CLI") or "hetplace"

    def sim_cli(*args):
        def f():
            r = subprocess.run([exe, "simulate", "--jobs", "8", "--no-plots", "--no-progress", "--out",
                                str(tmp / "sim-cli"), *map(str, args)], capture_output=True, timeout=9)
            err = r.stderr.decode("utf-8", "replace")
            need(r.returncode in (0, 2), f"exit code {r.returncode}: {err[-300:]}")
            need("Traceback" not in err and "Warning" not in err, f"traceback or warning: {err[-300:]}")
            if r.returncode == 2:
                lines = err.splitlines()
                need(len(lines) == 1 and lines[0].startswith("hetplace: error:") or lines[-1].startswith("usage:")
                     or "error: argument" in lines[-1], f"exit 2 without exactly one error line: {err[-300:]}")
                need("executor failed" not in err, f"an input error blamed on the executor: {err[-300:]}")
            return r.returncode
        return f

    for ex in ("serial", "process"):
        for args in (["--seed", "-1"], ["--seed", str(2**64)], ["--cluster", "v100=2000000"], ["--round", "1e-9"],
                     ["--round", "5e-324"], ["--restart", "1e30"], ["--jobs", "20000000"], ["--policy", "x"],
                     ["--cluster", "v100=4,p100=0,k80=4", "--policy", "las-aware", "--multi-gpu"],
                     ["--round", "60", "--restart", "120", "--policy", "las", "--rate", "30", "--jobs", "12",
                      "--cluster", "v100=2,p100=2,k80=2"], []):
            case("online", f"cli/{ex}/{' '.join(args)}", sim_cli("--executor", ex, "--workers", "1", *args))


def add_depth_cases():
    """Lists nested beyond the recursion limit, self-containing and ragged: a HetplaceError, never RecursionError."""
    from hetplace import balance as bl

    labels = ("5k", "100k", "5k-bool", "self", "ragged-3k", "70")  # tests/hostile.py DEEP_STRUCTURES, in order

    def deep(i):
        from hostile import DEEP_STRUCTURES  # built in the child: 100,000 levels do not go through a pipe

        return DEEP_STRUCTURES[i]

    def problem(param, i):
        return lambda: hp.Problem(**{**BASE, "current": [0, 1, -1, 1], param: deep(i)})

    calls = {"largest_remainder": ("x", lambda v: bl.largest_remainder(v, 10)),
             "LoadBalancer.observe": ("compute_times", lambda v: bl.LoadBalancer(8, 2).observe(v)),
             "LoadBalancer/memory_caps": ("memory_caps", lambda v: bl.LoadBalancer(8, 2, memory_caps=v)),
             "LoadBalancer/knees": ("knees", lambda v: bl.LoadBalancer(8, 2, policy="gpu", knees=v))}
    for i, label in enumerate(labels):
        for param in ("throughput", "type_counts", "batch", "iterations", "grad_bytes", "worker_speed", "available",
                      "current", "restart_time", "bandwidth"):
            case("depth", f"Problem/{param}/{label}", problem(param, i), certify_problem, param)
        for name, (param, call) in calls.items():
            case("depth", f"{name}/{label}", lambda call=call, i=i: call(deep(i)), param=param)


#: Longest accepted delay from SIGINT to KeyboardInterrupt (docs/results.md: worst measured 0.6 s).
INTERRUPT_LATENCY_S = 2.0


def add_interrupt_cases():
    """Ctrl-C: a long call of each method and backend, SIGINT from a timer thread; then a small call must work.

    The calls and delays are those of tests/interrupt_cases.py (``CASES``).
    """
    import threading

    import interrupt_cases as ic

    def same(a, b):
        a, b = (getattr(x, "placement", x) for x in (a, b))  # an ExactResult holds its placement
        return a.worker_job.tolist() == b.worker_job.tolist()

    def make(name):
        make_long, make_small, delay = ic.CASES[name]
        state = {}

        def fn():
            small, call = make_small(), make_long()
            state["before"], state["small"] = small(), small

            def fire():
                state["sent"] = time.perf_counter()
                os.kill(os.getpid(), signal.SIGINT)

            timer = threading.Timer(delay, fire)
            timer.start()
            try:
                call()
            except KeyboardInterrupt:
                state["raised"] = time.perf_counter()
                raise
            finally:
                timer.cancel()
            raise Lie(f"the long call returned before SIGINT ({delay} s)" if "sent" not in state
                      else "the long call returned normally after SIGINT")

        def interrupted():
            need("sent" in state, "KeyboardInterrupt before any SIGINT was sent")
            need("raised" in state, "KeyboardInterrupt only after the long call had returned")
            latency = state["raised"] - state["sent"]
            need(latency <= INTERRUPT_LATENCY_S, f"KeyboardInterrupt {latency:.2f} s after SIGINT")
            need(same(state["small"](), state["before"]), "the next small call placed differently")
            return latency

        return fn, interrupted

    for name in ("dp", "brute", "milp-scip", "milp-scip-slice", "milp-cp-sat", "milp-highs", "milp-highs-child",
                 "smp-cython", "smp-numba", "smp-python"):
        fn, interrupted = make(name)
        case("interrupt", name, fn, interrupted=interrupted)


#: Seconds a forked child may take to decide (a cold Numba cache compiles the serial kernels there).
FORK_CHILD_S = 8.0


def add_fork_cases():
    """Fork after a parallel SMP decision: the child decides again, within a time limit, exactly as its parent."""
    import multiprocessing

    from hetplace.instances import synthetic_instance

    def decide(backend, threads):
        pl = hp.place(synthetic_instance(1, 64, 8), method="smp", seed=3, backend=backend, threads=threads,
                      samples=16)
        certify(synthetic_instance(1, 64, 8), pl)
        return pl.worker_job.tobytes()

    def in_os_fork(fn):
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            code = 1
            try:
                os.write(wr, fn())
                code = 0
            finally:
                os._exit(code)
        os.close(wr)
        deadline = time.monotonic() + FORK_CHILD_S
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(rd)
                raise Lie(f"the forked child did not decide within {FORK_CHILD_S:g} s")
            time.sleep(0.01)
        with os.fdopen(rd, "rb") as fh:
            return fh.read()

    def in_mp_fork(fn):
        ctx = multiprocessing.get_context("fork")
        rx, tx = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=lambda: tx.send_bytes(fn()))
        proc.start()
        got = rx.recv_bytes() if rx.poll(FORK_CHILD_S) else None
        proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join()
        need(got is not None, f"the multiprocessing child did not decide within {FORK_CHILD_S:g} s "
                              f"(exit code {proc.exitcode})")
        return got

    def fork_case(backend, child_threads, how):
        def f():
            parent = decide(backend, 2)
            child = (in_os_fork if how == "os.fork" else in_mp_fork)(lambda: decide(backend, child_threads))
            need(child == parent, "the forked child placed differently from its parent")
            need(decide(backend, 2) == parent, "the parent placed differently after forking")
            return parent
        return f

    for backend in ("cython", "numba"):
        for child_threads in (2, None, 1):
            for how in ("os.fork", "multiprocessing"):
                case("fork", f"{backend}/threads=2/{how}/child-threads={child_threads}",
                     fork_case(backend, child_threads, how))


# ----------------------------------------------------------------------------- running
def build_cases(tmp):
    """Every case of the campaign (hostile files are written into ``tmp``)."""
    CASES.clear()
    _SEEN.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # building hostile arrays (casts that overflow) is not under test
        _build_all(tmp)
    return CASES


def _build_all(tmp):
    add_problem_cases()
    add_place_cases()
    add_exact_cases()
    add_evaluate_cases()
    add_placement_cases()
    add_matching_cases()
    add_categories_cases()
    add_data_cases(tmp)
    cpaths, jpaths = add_io_cases(tmp)
    add_instances_cases()
    add_bench_cases(tmp)
    add_balance_cases()
    add_torch_cases(tmp)
    add_online_cases(tmp)
    add_cli_cases(cpaths, jpaths, tmp)
    add_depth_cases()
    add_interrupt_cases()
    add_fork_cases()


_BAD_WARNING = ("overflow", "invalid value", "divide by zero", "underflow")


def run_case(c):
    """Run one case in this process; return its outcome dict."""
    out = {"id": c.id, "entry": c.entry}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = c.fn()
        except HetplaceError as exc:
            msg = str(exc)
            out.update(outcome="HETPLACE_ERROR", detail=f"{type(exc).__name__}: {msg[:300]}")
            if not msg.strip():
                out.update(outcome="FAILURE", kind="empty-message")
            elif c.param and c.param.lower() not in msg.lower():
                out["vague"] = True
        except Lie as exc:
            out.update(outcome="FAILURE", kind="lie", detail=str(exc)[:400])
        except KeyboardInterrupt as exc:
            if c.interrupted is None:  # nobody sent one: a failure like any other exception
                out.update(outcome="FAILURE", kind="KeyboardInterrupt", detail=f"KeyboardInterrupt: {exc}",
                           traceback=traceback.format_exc(limit=-4)[-1500:])
            else:
                try:
                    out.update(outcome="INTERRUPTED", detail=f"KeyboardInterrupt {c.interrupted():.3f} s after SIGINT")
                except Lie as why:
                    out.update(outcome="FAILURE", kind="lie", detail=str(why)[:400])
                except BaseException as why:  # noqa: BLE001
                    out.update(outcome="FAILURE", kind=f"after-interrupt-{type(why).__name__}", detail=str(why)[:300],
                               traceback=traceback.format_exc(limit=-4)[-1500:])
        except BaseException as exc:  # noqa: BLE001 - every other exception is a failure
            tb = traceback.format_exc(limit=-4)
            out.update(outcome="FAILURE", kind=type(exc).__name__, detail=f"{type(exc).__name__}: {str(exc)[:300]}",
                       traceback=tb[-1500:])
        else:
            try:
                if c.check is not None:
                    c.check(result)
                out.update(outcome="OK")
            except HetplaceError as exc:
                out.update(outcome="FAILURE", kind="check-rejects-result", detail=f"{type(exc).__name__}: {exc}"[:400])
            except Lie as exc:
                out.update(outcome="FAILURE", kind="lie", detail=str(exc)[:400])
            except BaseException as exc:  # noqa: BLE001
                out.update(outcome="FAILURE", kind=f"check-{type(exc).__name__}", detail=str(exc)[:300],
                           traceback=traceback.format_exc(limit=-4)[-1500:])
    out["seconds"] = round(time.perf_counter() - t0, 3)
    bad = [w for w in caught if issubclass(w.category, RuntimeWarning)
           and any(k in str(w.message) for k in _BAD_WARNING)]
    if bad and out["outcome"] != "FAILURE":
        w = bad[0]
        out.update(outcome="FAILURE", kind="RuntimeWarning",
                   detail=f"{w.message} at {Path(w.filename).name}:{w.lineno} (result: {out['outcome']})")
    return out


def _limit_memory(gib):
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + int(gib * 2**30), hard))
    except (OSError, ValueError):
        pass


def run_forked(c, timeout, mem_gib):
    """Fork, run ``c`` in the child, collect its outcome; kill it after ``timeout`` seconds."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        code = 0
        try:
            os.setpgid(0, 0)
            _limit_memory(mem_gib)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)  # solver logs (verbose=True) write to the C-level descriptors
            os.dup2(null, 2)
            sys.stdout = sys.stderr = open(os.devnull, "w")
            res = run_case(c)
            data = json.dumps(res, default=str).encode()
            with os.fdopen(w, "wb") as fh:
                fh.write(data)
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    os.close(w)
    return pid, r, time.monotonic() + timeout


def run_spawned(c, timeout, mem_gib):
    """Start a fresh interpreter for ``c`` (``--case ID --emit``)."""
    p = subprocess.Popen([sys.executable, __file__, "--case", c.id, "--emit", "--mem", str(mem_gib)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    return p.pid, p.stdout.fileno(), time.monotonic() + timeout, p


_WARM_UP = """
import hetplace as hp
from hetplace import categories, matching
p = hp.data.default_problem()
for threads in (None, 1, 2):
    for opts in ({}, {"matching": "ordinal"}, {"sampling": "weighted"}, {"speed_buckets": 1}):
        hp.place(p, "smp", seed=1, backend="numba", samples=8, threads=threads, **opts)
        hp.place(p.with_worker_speed([0.5] * p.n_workers), "smp", seed=1, backend="numba", samples=8, threads=threads, **opts)
categories.sample_categories(6, 2, 4, seed=1, backend="numba")
categories.sample_categories(6, 2, 4, seed=1, backend="numba", method="weighted")
categories.enumerate_categories(6, 2, backend="numba")
for form in ("price", "ordinal"):
    matching.deferred_acceptance([[1.0, 2.0]], [1], form=form, backend="numba")
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="cases run at the same time (default 2)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    ap.add_argument("--mem", type=float, default=3.0, help="GiB of address space a case may add (default 3)")
    ap.add_argument("--only", action="append", help="entry point(s) to run (e.g. place, balance)")
    ap.add_argument("--match", help="run only case ids containing this text")
    ap.add_argument("--case", help="run one case by id")
    ap.add_argument("--debug", action="store_true", help="with --case: run in this process, print the traceback")
    ap.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--spawn", action="store_true", help="a fresh python per case instead of fork")
    ap.add_argument("--list", action="store_true", help="list the case ids and counts, run nothing")
    ap.add_argument("--report", help="write every outcome to this JSON file")
    ap.add_argument("--progress", action="store_true", help="print each failure as it happens")
    ap.add_argument("--show", type=int, default=200, help="failures printed in full (default 200)")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="hetplace-campaign-"))
    cases = build_cases(tmp)
    if args.only:
        cases = [c for c in cases if c.entry in args.only]
    if args.match:
        cases = [c for c in cases if args.match in c.id]
    if args.case:
        cases = [c for c in cases if c.id == args.case]
        if not cases:
            sys.exit(f"no case {args.case!r}")
        if args.emit:
            _limit_memory(args.mem)
            real = sys.stdout
            sys.stdout = sys.stderr
            res = run_case(cases[0])
            real.write(json.dumps(res, default=str))
            real.flush()
            os._exit(0)
        if args.debug:
            c = cases[0]
            res = c.fn()
            if c.check:
                c.check(res)
            print(repr(res)[:2000])
            print(json.dumps(run_case(c), indent=1, default=str))
            return 0
    if args.list:
        counts = {}
        for c in cases:
            counts[c.entry] = counts.get(c.entry, 0) + 1
            print(c.id)
        print(json.dumps(counts, indent=1), f"total {len(cases)}")
        return 0

    # compile (and cache) the Numba kernels once, in a separate process, before the cases start:
    # after a kernel edit every forked child would otherwise compile them itself and time out
    subprocess.run([sys.executable, "-c", _WARM_UP], cwd=str(ROOT), timeout=600, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results, pending, queue = [], {}, list(cases)
    t0 = time.monotonic()
    while queue or pending:
        while queue and len(pending) < args.jobs:
            c = queue.pop(0)
            if args.spawn:
                pid, fd, deadline, proc = run_spawned(c, args.timeout, args.mem)
            else:
                (pid, fd, deadline), proc = run_forked(c, args.timeout, args.mem), None
            pending[fd] = (c, pid, deadline, proc, bytearray())
        ready, _, _ = select.select(list(pending), [], [], 0.05)
        now = time.monotonic()
        for fd in list(pending):
            c, pid, deadline, proc, buf = pending[fd]
            done = False
            if fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    buf.extend(chunk)
                else:
                    done = True
            if not done and now > deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0) if proc is None else proc.wait()
                if proc is None:
                    os.close(fd)
                results.append({"id": c.id, "entry": c.entry, "outcome": "FAILURE", "kind": "timeout",
                                "detail": f"no result within {args.timeout:g} s"})
                del pending[fd]
                continue
            if done:
                if proc is None:
                    _, status = os.waitpid(pid, 0)
                    os.close(fd)
                    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
                else:
                    status = proc.wait()
                    sig = -status if status < 0 else 0
                try:
                    res = json.loads(bytes(buf).decode())
                except ValueError:
                    res = {"id": c.id, "entry": c.entry, "outcome": "FAILURE",
                           "kind": f"signal {signal.Signals(sig).name}" if sig else "died",
                           "detail": f"process ended (status {status}) without a result"}
                results.append(res)
                if res["outcome"] == "FAILURE" and args.progress:
                    print(f"FAILURE {res['id']}: [{res.get('kind')}] {res.get('detail', '')[:200]}", flush=True)
                del pending[fd]
                # a forked child may leave grandchildren (process pools); end its group
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    elapsed = time.monotonic() - t0

    table = {}
    for r in results:
        row = table.setdefault(r["entry"], {"cases": 0, "OK": 0, "HETPLACE_ERROR": 0, "INTERRUPTED": 0, "FAILURE": 0,
                                            "VAGUE": 0})
        row["cases"] += 1
        row[r["outcome"]] += 1
        row["VAGUE"] += bool(r.get("vague"))
    fails = [r for r in results if r["outcome"] == "FAILURE"]
    vague = [r for r in results if r.get("vague")]
    for r in sorted(fails, key=lambda r: r["id"])[: args.show]:
        print(f"FAILURE {r['id']}: [{r.get('kind')}] {r.get('detail', '')}")
        if r.get("traceback"):
            print("    " + r["traceback"].strip().replace("\n", "\n    ")[-800:])
    if vague:
        print(f"\n{len(vague)} HetplaceError message(s) not naming the varied parameter:")
        for r in sorted(vague, key=lambda r: r["id"])[:60]:
            print(f"  VAGUE {r['id']}: {r['detail'][:200]}")
    cols = (("cases", "cases", 7), ("OK", "OK", 7), ("HETPLACE_ERROR", "ERROR", 7), ("INTERRUPTED", "INTR", 6),
            ("FAILURE", "FAIL", 6), ("VAGUE", "vague", 7))
    print("\n" + f"{'entry point':<14}" + "".join(f"{head:>{w}}" for _, head, w in cols))
    tot = {k: sum(row[k] for row in table.values()) for k, _, _ in cols}
    for entry, row in [*table.items(), ("total", tot)]:
        print(f"{entry:<14}" + "".join(f"{row[k]:>{w}}" for k, _, w in cols))
    print(f"{elapsed:.0f} s, {args.jobs} at a time, {'spawned' if args.spawn else 'forked'}, timeout {args.timeout:g} s")
    if args.report:
        Path(args.report).write_text(json.dumps(results, indent=1, default=str))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
