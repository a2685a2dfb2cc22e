"""End-to-end tests of the command line on sample files (good and bad)."""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hetplace.cli import main
from hetplace.data import gavel_path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
CLUSTER = str(ROOT / "examples" / "cluster.toml")
JOBS = str(ROOT / "examples" / "jobs.csv")
GAVEL = gavel_path()  # the Gavel table shipped with hetplace
BATCH = {"resnet50": 256, "transformer": 128, "lm": 80, "recsys": 4096, "cyclegan": 4}


def run(argv):
    out = io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


# ---------------------------------------------------------------- default command
def test_default_command_places_default_instance_with_smp_and_gap():
    code, text = run([])
    assert code == 0
    assert "method smp" in text and "shares per worker" in text
    assert "exact optimum (dp, optimal)" in text and "gap of smp:" in text


def test_run_json_has_the_exact_reference():
    code, text = run(["run", "--method", "greedy", "--json"])
    doc = json.loads(text)
    assert code == 0 and doc["method"] == "greedy"
    assert doc["exact"]["status"] == "optimal"
    assert doc["exact"]["gap"] == pytest.approx(doc["mean_jct"] / doc["exact"]["objective"] - 1)


# ---------------------------------------------------------------- place
def test_place_prints_every_worker_share():
    code, text = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--method", "greedy"])
    assert code == 0
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["worker", "type"])
    table = [line.split() for line in lines[start + 1: start + 17]]
    assert [int(r[0]) for r in table] == list(range(16))
    assert [float(r[2]) for r in table[:4]] == [1.0, 1.0, 0.7, 0.5]  # the per-worker speeds of the file
    sums = {}
    for r in table:
        sums[r[3]] = sums.get(r[3], 0) + int(r[4])
    sums.pop("(idle)", None)
    assert sums == BATCH
    assert "method greedy, decision time" in text


def test_place_json_and_seed_reproducible():
    argv = ["place", "--cluster", CLUSTER, "--jobs", JOBS, "--method", "random", "--seed", "3", "--json"]
    code, text = run(argv)
    doc = json.loads(text)
    assert code == 0 and doc["method"] == "random" and doc["inputs"]["seed"] == 3
    sums = {}
    for w in doc["workers"]:
        if w["job"] is not None:
            sums[w["job"]] = sums.get(w["job"], 0) + w["share"]
    assert sums == BATCH
    assert json.loads(run(argv)[1])["workers"] == doc["workers"]  # same seed, same placement


@pytest.mark.parametrize("name, flag", [("p.json", []), ("p.txt", ["--json"]), ("p.csv", []), ("p.txt", [])])
def test_place_out_file(tmp_path, name, flag):
    out = tmp_path / name
    code, text = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--method", "equal", "--out", str(out), *flag])
    assert code == 0 and str(out) in text
    body = out.read_text()
    if name.endswith(".json") or flag:
        assert json.loads(body)["method"] == "equal"
    elif name.endswith(".csv"):
        rows = list(csv.DictReader(io.StringIO(body)))
        assert len(rows) == 16 and set(rows[0]) == {"worker", "type", "speed", "job", "share"}
    else:
        assert body.startswith("job") and "method equal" in body


def test_place_with_gavel_models():
    code, text = run(["place", "--cluster", str(DATA / "cluster_gavel.toml"), "--jobs", str(DATA / "jobs_gavel.csv"),
                      "--method", "exact", "--json"])
    assert code == 0
    assert [j["job"] for j in json.loads(text)["jobs"]] == ["resnet", "gan", "lm"]


def test_place_gavel_flag_overrides_cluster_file():
    code, _ = run(["place", "--cluster", CLUSTER, "--jobs", str(DATA / "jobs_gavel.csv"), "--gavel", str(GAVEL)])
    assert code == 0


# Bad files: exit code 2, nothing on stdout, one message on stderr naming file, line/field and fix.
BAD_CLI = [
    ("cluster_malformed.toml", None, ["cluster_malformed.toml, line 5", "malformed TOML"]),
    ("cluster_unknown_key.toml", None, ["key 'cnt'"]),
    ("cluster_bad_speeds.toml", None, ["key 'speeds'"]),
    (None, "jobs_missing_column.csv", ["jobs_missing_column.csv, line 1", "missing column(s) iterations"]),
    (None, "jobs_unknown_type.csv", ["jobs_unknown_type.csv, line 1", "unknown GPU type 'a100'"]),
    (None, "jobs_non_numeric.csv", ["jobs_non_numeric.csv, line 3, column 'batch'"]),
    (None, "jobs_unknown_model.csv", ["jobs_unknown_model.csv, line 2, column 'model'"]),
    ("cluster_small.toml", "jobs_too_many.csv", ["5 jobs", "4 workers"]),
]


@pytest.mark.parametrize("cluster, jobs, fragments", BAD_CLI)
def test_place_bad_files_exit_2_with_message(cluster, jobs, fragments, capsys):
    c = str(DATA / cluster) if cluster else CLUSTER
    j = str(DATA / jobs) if jobs else JOBS
    code, text = run(["place", "--cluster", c, "--jobs", j])
    err = capsys.readouterr().err
    assert code == 2 and text == ""
    assert err.startswith("hetplace: error: ") and err.count("\n") == 1
    assert "Fix:" in err and "Traceback" not in err
    for frag in fragments:
        assert frag in err


def test_place_unknown_model_name_exit_2(capsys):
    code, _ = run(["place", "--cluster", str(DATA / "cluster_gavel.toml"), "--jobs", str(DATA / "jobs_unknown_model.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "line 3, column 'model'" in err and "unknown model 'ResNet-50 (batch size 48)'" in err


def test_place_missing_gavel_and_unwritable_out(tmp_path, capsys):
    code, _ = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--gavel", str(tmp_path / "none.json")])
    assert code == 2 and "--gavel" in capsys.readouterr().err
    code, _ = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--out", str(tmp_path / "no" / "dir.json")])
    assert code == 2 and "cannot be written" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["place", "--cluster", CLUSTER], ["--method", "fastest"], ["bench", "--K", "0"], ["bench", "--executor", "mpi"],
     ["bench", "--exact-time-limit", "soon"], ["nonsense"]],
)
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv, out=io.StringIO()) == 2
    assert "usage: hetplace" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert main(["bench", "--help"], out=io.StringIO()) == 0
    assert "--dask-address" in capsys.readouterr().out


def test_python_dash_m_entry_point():
    env_cmd = [sys.executable, "-m", "hetplace", "place", "--cluster", CLUSTER, "--jobs", str(DATA / "jobs_ragged.csv")]
    proc = subprocess.run(env_cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "jobs_ragged.csv, line 3" in proc.stderr


# ---------------------------------------------------------------- bench
def test_bench_small_sweep_writes_csv_json_png(tmp_path, capsys):
    out = tmp_path / "b"
    code, text = run(["bench", "--families", "synthetic", "--K", "4", "6", "--S", "2", "3", "--seeds", "0",
                      "--executor", "serial", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "| K x S | equal | random | greedy | smp | auto | exact |" in text
    assert "hetplace bench: 4/4 instances" in err  # the progress counter (tqdm is not required)
    rows = list(csv.DictReader(open(out / "results.csv", newline="")))
    assert len(rows) == 4 * 6 and {r["family"] for r in rows} == {"synthetic"}
    assert all(r["gap_to"] == "optimum" and r["error"] == "" for r in rows)
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["command"].startswith("hetplace bench --families synthetic")
    assert (out / "summary.md").is_file()
    pytest.importorskip("matplotlib")
    for name in ("gap_vs_time", "time_vs_K", "time_vs_S", "summary"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_bench_with_gavel_flag_runs_all_families(tmp_path):
    code, _ = run(["bench", "--gavel", str(GAVEL), "--K", "4", "--S", "2", "--seeds", "0", "--methods", "greedy",
                   "exact", "--executor", "serial", "--no-progress", "--no-plots", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "results.csv", newline="")))
    assert code == 0 and [r["family"] for r in rows[::2]] == ["gavel", "speeds", "synthetic"]
    assert not list(tmp_path.glob("*.png"))


def test_bench_without_gavel_table_says_synthetic_only(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("hetplace.bench.DEFAULT_GAVEL", tmp_path / "removed.json")  # shipped table removed
    code, _ = run(["bench", "--K", "4", "--S", "2", "--seeds", "0", "--methods", "greedy", "--executor", "serial",
                   "--no-progress", "--no-plots"])
    err = capsys.readouterr().err
    assert code == 0 and "running the synthetic family only" in err and "--gavel PATH" in err
    rows = list(csv.DictReader(open(tmp_path / "bench-out" / "results.csv", newline="")))
    assert {r["family"] for r in rows} == {"synthetic"}
    assert "synthetic family only" in (tmp_path / "bench-out" / "summary.md").read_text()


def test_bench_gavel_families_without_table_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("hetplace.bench.DEFAULT_GAVEL", tmp_path / "removed.json")  # shipped table removed
    assert run(["bench", "--families", "gavel", "--executor", "serial"])[0] == 2
    assert "need a Gavel table" in capsys.readouterr().err
    assert run(["bench", "--gavel", str(tmp_path / "missing.json")])[0] == 2
    assert "is not a file" in capsys.readouterr().err


def test_bench_dask_missing_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, _ = run(["bench", "--families", "synthetic", "--K", "4", "--S", "2", "--executor", "dask",
                   "--out", str(tmp_path)])
    assert code == 2 and 'pip install "dask[distributed]"' in capsys.readouterr().err
