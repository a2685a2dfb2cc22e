"""End-to-end tests of the command line on sample files (good and bad)."""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hetplace.cli import BOUND_TIME_LIMIT, main
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


def test_default_command_prints_the_certified_gap_to_the_lower_bound():
    code, text = run(["--no-exact"])
    assert code == 0 and "certified gap" in text and "hetplace.lower_bound" in text
    assert "exact optimum" not in text
    assert "certified gap" not in run(["--no-exact", "--no-bound"])[1]


def test_run_json_certified_gap_is_at_least_the_true_gap():
    doc = json.loads(run(["run", "--method", "greedy", "--json"])[1])
    b = doc["bound"]
    assert b["certified_gap"] == pytest.approx(doc["mean_jct"] / b["bound"] - 1)
    assert b["bound"] <= doc["exact"]["objective"] * (1 + 1e-9)
    assert b["certified_gap"] >= doc["exact"]["gap"] - 1e-9
    assert b["time_limit"] == BOUND_TIME_LIMIT
    assert "bound" not in json.loads(run(["run", "--json", "--no-bound"])[1])


# ---------------------------------------------------------------- place
def test_place_prints_and_writes_the_certified_gap():
    code, text = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--method", "greedy"])
    assert code == 0 and "certified gap" in text
    doc = json.loads(run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--method", "greedy", "--json"])[1])
    assert doc["bound"]["bound"] <= doc["mean_jct"] and doc["bound"]["certified_gap"] >= 0
    no = run(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--no-bound"])[1]
    assert "certified gap" not in no


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


QUOTAS = str(ROOT / "examples" / "quotas.toml")
TENANT_JOBS = str(ROOT / "examples" / "jobs_tenants.csv")


def test_place_help_names_the_tenant_column_and_quotas(capsys):
    assert main(["place", "--help"], out=io.StringIO()) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "[[quotas]]: GPUs per tenant" in text and "grad_bytes, tenant)" in text


@pytest.mark.parametrize("name", ["p.txt", "p.csv"])
def test_place_out_file_with_tenants(tmp_path, name):
    out = tmp_path / name
    code, _ = run(["place", "--cluster", QUOTAS, "--jobs", TENANT_JOBS, "--method", "smp", "--out", str(out)])
    assert code == 0
    body = out.read_text()
    if name.endswith(".csv"):  # one line per worker, as without tenants
        assert body.splitlines()[0] == "worker,type,speed,job,share"
    else:
        assert "GPUs per tenant: used/quota (- = no limit)" in body and "interns" in body


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


# ---------------------------------------------------------------- hostile input: exit 2, one line, no traceback
JOBS_HEADER = "name,throughput_k80,throughput_p100,throughput_v100,batch,iterations\n"


def _error_line(argv, capsys):
    """Run ``main(argv)``; return its one-line error message (asserting exit 2, no traceback, nothing on stdout)."""
    code, text = run(argv)
    err = capsys.readouterr().err
    assert code == 2 and text == "", (code, err)
    assert err.startswith("hetplace: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_cli_csv_field_over_the_limit_exits_2(tmp_path, capsys):
    j = tmp_path / "jobs.csv"
    j.write_text(JOBS_HEADER + "a" * 200_000 + ",1,1,1,1,1\n")
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", str(j)], capsys)
    assert "jobs.csv, line 2, column 'name': a cell is longer than" in err and len(err) < 400


def test_cli_huge_integer_in_cluster_toml_exits_2(tmp_path, capsys):
    c = tmp_path / "c.toml"
    c.write_text("[[types]]\nname = 'a'\ncount = " + "9" * 5000 + "\n")
    assert "c.toml, line 3, key 'count'" in _error_line(["place", "--cluster", str(c), "--jobs", JOBS], capsys)


def test_cli_huge_integer_in_job_csv_exits_2_with_a_short_message(tmp_path, capsys):
    j = tmp_path / "jobs.csv"
    j.write_text(JOBS_HEADER + "x,1,1,1," + "9" * 5000 + ",1\n")
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", str(j)], capsys)
    assert "line 2, column 'batch'" in err and "(5002 characters)" in err and len(err) < 400


def test_cli_cluster_count_of_a_trillion_exits_2(tmp_path, capsys):
    c = tmp_path / "c.toml"
    c.write_text("[[types]]\nname = 'k80'\ncount = 1000000000000\n")
    err = _error_line(["place", "--cluster", str(c), "--jobs", JOBS], capsys)
    assert "sums to 1000000000000; at most 1000000 is supported" in err  # was MemoryError


@pytest.mark.parametrize("flag", ["--cluster", "--gavel"])
def test_cli_deeply_nested_file_exits_2(tmp_path, capsys, flag):
    f = tmp_path / ("c.toml" if flag == "--cluster" else "t.json")
    f.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n" if flag == "--cluster" else "[" * 100_000 + "]" * 100_000)
    argv = ["place", "--cluster", str(f), "--jobs", JOBS] if flag == "--cluster" else \
        ["place", "--cluster", CLUSTER, "--jobs", JOBS, "--gavel", str(f)]
    assert "deeper than Python's recursion limit" in _error_line(argv, capsys)  # was RecursionError


@pytest.mark.parametrize("body, fragment", [
    (b'{"k80": {"\xff": 1}}', "not UTF-8 text: byte 0xff at byte offset 10"),
    (b'{"k80": {"(\'A\', 1)": {"null": 1' + b"0" * 5000 + b"}}}", "an integer of 5,001 digits"),
    (b'{"k80": {"(\'A\', 1)": {"null": 1' + b"0" * 400 + b"}}}", "an integer of 401 digits"),
])
def test_cli_bad_gavel_json_exits_2(tmp_path, capsys, body, fragment):
    g = tmp_path / "t.json"
    g.write_bytes(body)
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--gavel", str(g)], capsys)
    assert err.startswith("hetplace: error: --gavel: ") and fragment in err


def test_cli_gavel_flag_pointing_at_a_directory_exits_2(tmp_path, capsys):
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", JOBS, "--gavel", str(tmp_path)], capsys)
    assert "the Gavel throughput file is a directory, not a regular file" in err  # was IsADirectoryError


def test_cli_gavel_table_without_models_exits_2(tmp_path, capsys):
    g = tmp_path / "t.json"
    g.write_text('{"k80": {}, "p100": {}, "v100": {}}')
    j = tmp_path / "jobs.csv"
    j.write_text("name,model,batch,iterations\nx,Foo,1,1\n")
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", str(j), "--gavel", str(g)], capsys)
    assert "has no single-GPU measurement" in err  # was IndexError in the unknown-model message's own code


def test_bench_gavel_table_without_models_exits_2(tmp_path, capsys):
    g = tmp_path / "t.json"
    g.write_text('{"k80": {"(\'A\', 2)": {"null": 1.0}}}')
    err = _error_line(["bench", "--families", "gavel", "--K", "4", "--S", "2", "--seeds", "0", "--methods", "greedy",
                       "--executor", "serial", "--no-progress", "--no-plots", "--gavel", str(g),
                       "--out", str(tmp_path / "b")], capsys)
    assert "has no single-GPU measurement" in err  # was ValueError: high <= 0 in the instance generator


@pytest.mark.parametrize("flag", ["--cluster", "--jobs", "--gavel"])
def test_cli_dev_zero_as_input_exits_2(capsys, flag):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    argv = {"--cluster": ["--cluster", "/dev/zero", "--jobs", JOBS], "--jobs": ["--cluster", CLUSTER, "--jobs", "/dev/zero"],
            "--gavel": ["--cluster", CLUSTER, "--jobs", JOBS, "--gavel", "/dev/zero"]}[flag]
    assert "/dev/zero: " in _error_line(["place", *argv], capsys)  # was read until memory ran out


@pytest.mark.parametrize("flag", ["--cluster", "--jobs", "--gavel"])
def test_cli_fifo_as_input_exits_2_without_hanging(tmp_path, flag):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    argv = {"--cluster": ["--cluster", str(fifo), "--jobs", JOBS], "--jobs": ["--cluster", CLUSTER, "--jobs", str(fifo)],
            "--gavel": ["--cluster", CLUSTER, "--jobs", JOBS, "--gavel", str(fifo)]}[flag]
    try:  # in a child process: the old reader blocks in open() for ever
        proc = subprocess.run([sys.executable, "-m", "hetplace", "place", *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hetplace place {flag} FIFO hung")
    assert proc.returncode == 2 and "is a named pipe (FIFO), not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_unreachable_dask_scheduler_exits_2_quickly(tmp_path):
    import socket
    import time

    pytest.importorskip("distributed")
    with socket.socket() as s:  # a port on this machine that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "hetplace", "bench", "--families", "synthetic", "--K", "4", "--S", "2", "--seeds", "0",
         "--executor", "dask", "--dask-address", f"tcp://127.0.0.1:{port}", "--no-progress", "--no-plots",
         "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("hetplace: error: --dask-address: ") and "Traceback" not in proc.stderr
    assert f"tcp://127.0.0.1:{port}" in proc.stderr
    assert time.monotonic() - start < 60  # connect timeout of 5 s (was 30 s, then a traceback)


def test_cli_os_error_of_any_kind_is_one_line_exit_2(monkeypatch, capsys):
    import hetplace.io

    def fail(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/some/file")

    monkeypatch.setattr(hetplace.io, "load_problem", fail)
    err = _error_line(["place", "--cluster", CLUSTER, "--jobs", JOBS], capsys)
    assert err == "hetplace: error: /some/file: Permission denied. Fix: check the path, its permissions and the free space.\n"


def test_cli_output_to_a_closed_pipe_exits_quietly(tmp_path):
    c = tmp_path / "c.toml"
    c.write_text("[[types]]\nname = 'a'\ncount = 5000\n")  # ~300 KB of output: more than a pipe holds
    j = tmp_path / "jobs.csv"
    j.write_text("name,throughput_a,batch,iterations\n" + "".join(f"j{i},{1 + i % 7},256,{1000 + i}\n" for i in range(20)))
    proc = subprocess.Popen([sys.executable, "-m", "hetplace", "place", "--cluster", str(c), "--jobs", str(j),
                             "--method", "greedy"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()  # like `| head -1`: read one line, then close the pipe
    proc.stdout.close()
    try:
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    finally:
        proc.kill()
    assert first.startswith(b"Problem(")
    assert err == "" and code == 1  # was a BrokenPipeError traceback


def test_cli_without_stderr_reports_by_exit_code(monkeypatch):
    # a daemon or `2>&-`: sys.stderr is None; an error must still end in exit 2, not AttributeError
    monkeypatch.setattr(sys, "stderr", None)
    assert main(["place", "--cluster", "missing.toml", "--jobs", "missing.csv"]) == 2
