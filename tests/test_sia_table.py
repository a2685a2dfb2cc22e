"""hetplace.online.sia_table and ``hetplace sia-table`` on a made-up checkout of Sia's artifact."""

import io
import json
import math

import numpy as np
import pytest

pytest.importorskip("scipy")

from goodput_fixtures import write_artifact  # noqa: E402

from hetplace.cli import main  # noqa: E402
from hetplace.errors import InvalidOptionError, InvalidProblemError  # noqa: E402
from hetplace.online import sia_table  # noqa: E402
from hetplace.online.goodput import GoodputModel, read_sia_workload  # noqa: E402
from hetplace.online.goodput_sim import simulate_goodput  # noqa: E402


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """The three trace sets of one small workload each (helios: two), on Sia's GPU type suffixes."""
    root = write_artifact(tmp_path_factory.mktemp("sia"), apps=("cifar10", "bert"), suffixes=("aws", "dgx-ext", "rtx"),
                          slower={"aws": 2.0, "dgx-ext": 0.5, "rtx": 1.0}, work=3000.0)
    w = root / "sia-simulator" / "workloads"
    for folder, n in (("philly", 1), ("saturn", 2), ("newtrace", 1)):
        (w / folder).mkdir(parents=True)
        for k in range(1, n + 1):
            rows = ["name,time,application,num_replicas,batch_size"]
            rows += [f"job-{i},{90 * i + 7 * k},{('cifar10', 'bert')[i % 2]},{1 + i % 4},{64 * (1 + i % 3)}"
                     for i in range(6)]
            (w / folder / f"workload-{k}.csv").write_text("\n".join(rows) + "\n")
    return root


def test_the_table_pools_as_sias_statistics_script(artifact):
    t = sia_table(artifact, "helios", ["sia", "gavel-mst"], executor="serial")
    assert [r.policy for r in t.rows] == ["sia", "gavel-mst"] and len(t.workloads) == 2
    model = GoodputModel.from_sia(artifact)
    for row in t.rows:
        jct, mk, gpu = [], [], 0.0
        for w in t.workloads:
            jobs = read_sia_workload(w)
            r = simulate_goodput(jobs, model, row.policy, round_s=row.round_s)
            jct.append(r.jobs["jct"])
            mk.append((np.max(r.jobs["arrival"] + r.jobs["jct"]) - r.jobs["arrival"].min()) / 3600)
            gpu += r.jobs["gpu_seconds"].sum()
        pooled = np.sort(np.concatenate(jct)) / 3600
        assert row.n_jobs == 12 and row.n_unfinished == 0 and row.n_workloads == 2
        assert 0 < row.sim_s_median <= row.sim_s_max < 600  # each workload's simulation timed in its worker
        assert 0 < row.sim_cpu_s < 1200
        assert row.avg_jct_h == pytest.approx(pooled.mean())
        assert row.avg_jct_std_h == pytest.approx(np.std([j.mean() / 3600 for j in jct]))
        assert row.p99_h == pytest.approx(pooled[math.floor(0.99 * pooled.size)])
        assert row.makespan_h == pytest.approx(np.mean(mk))
        assert row.gpu_h_per_job == pytest.approx(gpu / 3600 / 12)
    assert t.rows[0].round_s == 60.0 and t.rows[1].round_s == 360.0  # as Sia ran them
    md = t.to_markdown()
    assert "| sia | " in md and "0.7 / 10.9 / 14.9 / 4.8" in md  # Sia's published Helios row beside ours


def test_workloads_by_number_and_bad_arguments(artifact):
    t = sia_table(artifact, "helios", "sia", workloads=[2], executor="serial")
    assert [w.endswith("workload-2.csv") for w in t.workloads] == [True]
    with pytest.raises(InvalidOptionError, match="workload 3 is not in the helios set"):
        sia_table(artifact, "helios", "sia", workloads=[3], executor="serial")
    with pytest.raises(InvalidOptionError, match="trace_set must be one of"):
        sia_table(artifact, "alibaba", "sia")
    with pytest.raises(InvalidOptionError, match="unknown goodput policy 'pollux-ga'"):
        sia_table(artifact, "philly", ["pollux-ga"])
    with pytest.raises(InvalidProblemError, match="expected a checkout of Sia's artifact"):
        sia_table(artifact / "nowhere", "philly")


def test_a_malformed_profile_is_named_before_anything_runs(tmp_path):
    root = write_artifact(tmp_path, apps=("cifar10",), suffixes=("aws", "dgx-ext", "rtx"))
    (root / "sia-simulator" / "traces" / "cifar10" / "scalability-rtx.csv").write_text("num_nodes\n1\n")
    with pytest.raises(InvalidProblemError, match=r"scalability-rtx\.csv: missing column"):
        sia_table(root, "philly", "sia")


def test_the_command_prints_and_writes_the_table(artifact, tmp_path):
    out = io.StringIO()
    code = main(["sia-table", str(artifact), "--trace-set", "philly", "--policy", "sia", "fifo", "--executor",
                 "serial", "--out", str(tmp_path / "o"), "--no-progress", "--no-plots"], out=out)
    assert code == 0
    text = out.getvalue()
    assert "Trace set philly (1 workloads)" in text and "| fifo | " in text
    doc = json.loads((tmp_path / "o" / "sia_table.json").read_text())
    assert [r["policy"] for r in doc["rows"]] == ["sia", "fifo"]
    assert (tmp_path / "o" / "sia_table.csv").read_text().startswith("policy,trace_set,")
    assert main(["sia-table", str(tmp_path / "none"), "--executor", "serial"], out=io.StringIO()) == 2


@pytest.mark.parametrize("trace_set", ["philly", "helios", "newtrace", "pollux"])
def test_the_plot_has_the_published_figures_where_there_are_some(artifact, tmp_path, trace_set):
    # Pollux's own set publishes the average JCT only: its p99 bar is left out, not an IndexError
    pytest.importorskip("matplotlib")
    import dataclasses

    from hetplace.online.sia_table import SiaTable, plot_sia_table

    t = sia_table(artifact, "philly", ["fifo"], executor="serial")
    rows = [dataclasses.replace(t.rows[0], policy=p, trace_set=trace_set) for p in ("pollux", "sia", "smp")]
    out = plot_sia_table(SiaTable(trace_set, rows, t.workloads), tmp_path)
    assert out["plot"].stat().st_size > 0
