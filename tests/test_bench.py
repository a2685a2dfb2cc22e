"""Sweep engine (hetplace.bench): rows, gap references, executors, outputs."""
import concurrent.futures as cf
import csv
import json
import math
import sys
from pathlib import Path

import pytest

import hetplace.bench as bench
import hetplace.exact as exact_mod
from hetplace.bench import COLUMNS, SerialExecutor, SweepSpec, run_sweep
from hetplace.data import gavel_path
from hetplace.errors import InvalidOptionError, MissingDependencyError

GAVEL = gavel_path()  # the Gavel table shipped with hetplace


def tiny_spec(**kw):
    """Small grid whose references are all proven optimal quickly (DP or a fast MILP)."""
    base = dict(families=("synthetic",), K=(4, 6), S=(2, 3), seeds=(0, 1), exact_time_limit=30.0)
    base.update(families=("gavel", "speeds", "synthetic"), gavel=str(GAVEL), seeds=(0,))
    base.update(kw)
    return SweepSpec(**base)


@pytest.fixture(scope="module")
def serial_result():
    return run_sweep(tiny_spec(), executor=SerialExecutor())


# ---------------------------------------------------------------- rows
def test_one_row_per_instance_and_method_in_spec_order(serial_result):
    spec = serial_result.spec
    rows = serial_result.rows
    assert len(rows) == len(spec.instances()) * len(spec.methods)
    keys = [(r["family"], r["K"], r["S"], r["seed"]) for r in rows[:: len(spec.methods)]]
    assert keys == spec.instances()
    assert [r["method"] for r in rows[: len(spec.methods)]] == list(spec.methods)
    assert all(list(r) == list(COLUMNS) for r in rows)
    assert not serial_result.errors


def test_gaps_are_to_the_optimum_and_consistent(serial_result):
    for r in serial_result.rows:
        assert r["ref_status"] == "optimal" and r["gap_to"] == "optimum"
        assert r["gap"] == pytest.approx(r["mean_jct"] / r["ref_objective"] - 1.0, abs=1e-12)
        assert r["gap"] >= -1e-9  # nothing beats the proven optimum
        assert 0 < r["fairness"] <= 1 + 1e-12 and r["worst_slowdown"] >= 1 - 1e-12
        if r["method"] == "exact":
            assert r["gap"] == 0.0 and r["wall_time"] == r["ref_wall_time"]


def test_exact_reference_is_computed_once_per_instance(monkeypatch):
    calls = []
    real = exact_mod.solve_exact
    monkeypatch.setattr(bench, "_warm_up", lambda *a: None)
    monkeypatch.setattr(exact_mod, "solve_exact", lambda *a, **k: calls.append(1) or real(*a, **k))
    # not "auto": it may run its own exact solve, which is part of its timed decision
    spec = tiny_spec(families=("synthetic",), gavel=None, seeds=(0,), methods=("greedy", "smp", "exact"))
    res = run_sweep(spec, executor=SerialExecutor())
    assert len(calls) == len(spec.instances())
    assert all(r["detail"] for r in res.rows if r["method"] == "exact")


class _NotProven:
    """Stands in for an ExactResult that hit its time limit."""

    def __init__(self, real):
        self.status, self.method, self.solver, self.message = "feasible", "milp", "SCIP", "time limit"
        self.placement, self.objective = real.placement, real.objective
        self.bound = real.objective * 0.9
        self.wall_time = 0.5


def test_unproven_reference_gives_gap_to_bound(monkeypatch):
    real = exact_mod.solve_exact
    monkeypatch.setattr(exact_mod, "solve_exact", lambda *a, **k: _NotProven(real(*a, **k)))
    spec = tiny_spec(families=("synthetic",), gavel=None, K=(5,), S=(2,), seeds=(0,),
                     methods=("equal", "greedy", "smp", "exact"))
    res = run_sweep(spec, executor=SerialExecutor())
    for r in res.rows:
        assert r["gap_to"] == "bound" and r["ref_status"] == "feasible"
        # the certified gap: to the better of the solver's bound and hetplace.lower_bound's
        assert r["lb_status"] in ("optimal", "feasible") and r["lb_bound"] <= r["ref_objective"] * (1 + 1e-9)
        assert r["gap"] == pytest.approx(r["mean_jct"] / max(r["ref_bound"], r["lb_bound"]) - 1.0)
        assert r["gap"] >= r["mean_jct"] / r["ref_objective"] - 1.0 - 1e-9  # an upper estimate of the true gap
    ex = next(r for r in res.rows if r["method"] == "exact")
    assert ex["lb_bound"] > ex["ref_bound"]  # the LP's bound beats the (faked) solver's here
    assert ex["gap"] == pytest.approx(ex["ref_objective"] / ex["lb_bound"] - 1)
    md = bench.summary_markdown(res)
    assert "≤ " in md and "certified gap" in md


def test_failed_reference_still_gets_a_certified_gap(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("solver gone")

    monkeypatch.setattr(exact_mod, "solve_exact", broken)
    spec = tiny_spec(families=("synthetic",), gavel=None, K=(5,), S=(2,), seeds=(0,), methods=("greedy", "smp"))
    for r in run_sweep(spec, executor=SerialExecutor()).rows:
        assert r["gap_to"] == "bound" and math.isfinite(r["gap"]) and r["gap"] >= 0
        assert r["lb_bound"] > 0 and "solver gone" in r["error"]


def test_proven_reference_computes_no_lower_bound():
    spec = tiny_spec(families=("synthetic",), gavel=None, K=(5,), S=(2,), seeds=(0,), methods=("greedy",))
    (r,) = run_sweep(spec, executor=SerialExecutor()).rows
    assert r["gap_to"] == "optimum" and r["lb_status"] == "" and math.isnan(r["lb_bound"])


def test_a_failing_method_is_recorded_not_fatal(monkeypatch):
    import hetplace.api as api

    real = api.place

    def flaky(problem, method="auto", seed=None, **kw):
        if method == "greedy":
            raise RuntimeError("boom")
        return real(problem, method=method, seed=seed, **kw)

    monkeypatch.setattr(api, "place", flaky)
    res = run_sweep(tiny_spec(families=("synthetic",), gavel=None, K=(4,), S=(2,), seeds=(0,)),
                    executor=SerialExecutor())
    bad = [r for r in res.rows if r["error"]]
    assert [r["method"] for r in bad] == ["greedy"]
    assert bad[0]["error"] == "RuntimeError: boom" and math.isnan(bad[0]["gap"])
    assert all(math.isfinite(r["gap"]) for r in res.rows if r["method"] != "greedy")


# ---------------------------------------------------------------- spec validation
@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(families=("gavel",), gavel=None), "need a Gavel throughput table"),
        (dict(families=("mars",)), "'mars' is not valid"),
        (dict(methods=("fastest",)), "'fastest' is not valid"),
        (dict(methods=("smp", "smp")), "lists a value twice"),
        (dict(K=(2,), S=(3,)), "no pair with S <= K"),
        (dict(K=(0,)), "K must hold integers >= 1"),
        (dict(seeds=(-1,)), "seeds must hold integers >= 0"),
        (dict(K=()), "at least one value"),
        (dict(exact_time_limit=0), "exact_time_limit must be a positive number"),
        (dict(exact_solver="gurobi"), "exact_solver='gurobi' is not valid"),
        (dict(exact_method="magic"), "exact_method='magic' is not valid"),
    ],
)
def test_spec_validation(kw, fragment):
    base = dict(families=("synthetic",))
    base.update(kw)
    with pytest.raises(InvalidOptionError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        SweepSpec(**base)


def test_quick_preset_without_gavel_is_synthetic_only():
    spec = bench.quick_spec(None)
    assert spec.families == ("synthetic",) and spec.exact_time_limit == 5.0
    assert bench.quick_spec(str(GAVEL)).families == ("gavel", "speeds", "synthetic")


def test_instances_skip_more_jobs_than_workers():
    spec = SweepSpec(families=("synthetic",), K=(2, 4), S=(3,), seeds=(0,))
    assert spec.instances() == [("synthetic", 4, 3, 0)]


# ---------------------------------------------------------------- executors
def test_process_pool_equals_serial(serial_result):
    res = run_sweep(serial_result.spec, workers=2)  # the default executor: a local process pool
    assert res.comparable() == serial_result.comparable()
    assert res.meta["executor"] == "process x2"


class _MapOnly:
    def map(self, fn, items):
        return map(fn, items)


def test_map_only_executor_and_thread_pool_equal_serial(serial_result):
    spec = serial_result.spec
    assert run_sweep(spec, executor=_MapOnly()).comparable() == serial_result.comparable()
    with cf.ThreadPoolExecutor(1) as ex:
        assert run_sweep(spec, executor=ex).comparable() == serial_result.comparable()


def test_executor_without_submit_or_map_is_rejected():
    with pytest.raises(InvalidOptionError, match="submit.*or map"):
        run_sweep(tiny_spec(), executor=object())


def test_make_executor_validation():
    with pytest.raises(InvalidOptionError, match="executor='mpi' is not valid"):
        bench.make_executor("mpi")
    with pytest.raises(InvalidOptionError, match="workers must be a positive integer"):
        bench.make_executor("process", workers=0)
    with pytest.raises(InvalidOptionError, match="needs executor='dask'"):
        bench.make_executor("process", address="tcp://x:8786")


def test_dask_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingDependencyError, match=r'pip install "dask\[distributed\]"'):
        bench.make_executor("dask", workers=1)


def test_dask_local_cluster_equals_serial(serial_result):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        via_executor = run_sweep(serial_result.spec, executor=client.get_executor(pure=False))
        via_client = run_sweep(serial_result.spec, executor=client)  # a Client has submit() too
    assert via_executor.comparable() == serial_result.comparable()
    assert via_client.comparable() == serial_result.comparable()


# ---------------------------------------------------------------- outputs
def test_write_csv_json_summary_and_png(serial_result, tmp_path):
    paths = serial_result.write(tmp_path / "out")
    with open(paths["csv"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(COLUMNS) and len(rows) == len(serial_result.rows)
    assert float(rows[0]["mean_jct"]) == serial_result.rows[0]["mean_jct"]  # repr round-trips
    doc = json.loads(Path(paths["json"]).read_text())
    assert doc["columns"] == list(COLUMNS) and len(doc["rows"]) == len(serial_result.rows)
    assert doc["spec"]["K"] == list(serial_result.spec.K)
    md = Path(paths["summary"]).read_text()
    assert "| K x S | equal | random | greedy | smp | auto | exact |" in md
    pytest.importorskip("matplotlib")
    for name in ("gap_vs_time", "time_vs_K", "time_vs_S", "summary_png"):
        data = Path(paths[name]).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 300_000


def test_write_without_matplotlib_skips_plots(serial_result, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    paths = serial_result.write(tmp_path, plots=True)
    assert "pip install matplotlib" in paths["plots_skipped"]
    assert not list(tmp_path.glob("*.png")) and Path(paths["csv"]).is_file()


def test_nan_is_written_as_null_and_empty(tmp_path):
    spec = tiny_spec(families=("synthetic",), gavel=None, K=(4,), S=(2,), seeds=(0,), methods=("greedy",))
    row = dict.fromkeys(COLUMNS, "")
    row.update(family="synthetic", K=4, S=2, G=6, seed=0, method="greedy", wall_time=0.1, mean_jct=math.nan,
               gap=math.nan, fairness=math.nan, worst_slowdown=math.nan, idle_workers=-1, ref_objective=math.nan,
               ref_bound=math.nan, ref_wall_time=0.1, error="x")
    res = bench.SweepResult([row], spec, dict(command="c", executor="e", wall_time=0.1, n_instances=1,
                                               machine="m", date="d"))
    paths = res.write(tmp_path, plots=False)
    assert json.loads(Path(paths["json"]).read_text())["rows"][0]["gap"] is None
    assert next(csv.DictReader(open(paths["csv"], newline="")))["gap"] == ""


# ------------------------------------------------------------------ hostile arguments (fuzz/campaign.py)
@pytest.mark.parametrize("field", ["families", "methods"])
@pytest.mark.parametrize("value", [None, 3, 1.5])
def test_sweep_spec_rejects_a_non_list_of_names(field, value):
    # TypeError: 'NoneType' object is not iterable
    with pytest.raises(bench.InvalidOptionError, match=field):
        bench.SweepSpec(**{field: value})


def test_quick_spec_rejects_unknown_overrides():
    # TypeError from the dataclass before
    with pytest.raises(bench.InvalidOptionError, match="quick_spec does not take nope"):
        bench.quick_spec(None, nope=1)


@pytest.mark.parametrize("workers", [1025, 2**31, 2**63])
def test_executor_workers_beyond_a_c_int_are_rejected(workers):
    # OverflowError: Python int too large to convert to C int (ProcessPoolExecutor)
    with pytest.raises(bench.InvalidOptionError, match="workers must be at most"):
        bench.make_executor("process", workers)


@pytest.mark.parametrize("result", [None, 3, "x", {}])
def test_summary_markdown_rejects_what_is_not_a_sweep_result(result):
    with pytest.raises(bench.InvalidOptionError, match="SweepResult"):
        bench.summary_markdown(result)


@pytest.mark.parametrize("field, value", [("K", (10**20,)), ("K", (10**6 + 1,)), ("S", (2**63,)), ("seeds", (2**64,))])
def test_sweep_spec_bounds_sizes_and_seeds_up_front(field, value):
    # hetplace bench --K 99999999999999999999 ended in a numpy traceback (exit 1) inside the generator
    with pytest.raises(bench.InvalidOptionError, match=f"{field} must hold integers <="):
        bench.SweepSpec(families=("synthetic",), **{field: value})
