"""The package stands on its own: shipped data, examples, typing marker, metadata, compiled-backend detection."""
import csv
import io
import json
import re
import warnings
from importlib import metadata, resources
from pathlib import Path

import pytest

import hetplace
import hetplace._core as core
import hetplace.bench as bench
from hetplace.data import EXAMPLES, example_path, gavel_path, load_gavel
from hetplace.errors import HetplaceWarning, InvalidOptionError, InvalidProblemError, MissingDependencyError

ROOT = Path(__file__).resolve().parents[1]
DATA = resources.files("hetplace") / "_data"
GPU_TYPES = {"k80", "p100", "v100", "k80_unconsolidated", "p100_unconsolidated", "v100_unconsolidated"}


# ---------------------------------------------------------------- package data
def test_gavel_table_ships_isolated_figures_only_for_every_type_and_gpu_count():
    raw = json.loads((DATA / "gavel_throughputs.json").read_text(encoding="utf-8"))
    assert set(raw) == GPU_TYPES
    counts = {key.rsplit(", ", 1)[1].rstrip(")") for entries in raw.values() for key in entries}
    assert counts == {"1", "2", "4", "8"}
    for entries in raw.values():
        for value in entries.values():
            assert list(value) == ["null"] and value["null"] >= 0  # no pair (space-sharing) entries
    assert len((DATA / "gavel_throughputs.json").read_bytes()) < 100_000
    assert Path(str(DATA / "gavel_throughputs.json")) == gavel_path()


def test_load_gavel_reads_the_shipped_table_by_default():
    table = load_gavel()
    assert table.path == gavel_path() and table.types == ["k80", "p100", "v100"]
    assert len(table.models) == 26 and table.gpu_counts == [1, 2, 4, 8]
    assert table.samples_per_second("ResNet-50 (batch size 64)", "v100") > table.samples_per_second(
        "ResNet-50 (batch size 64)", "k80") > 0


def test_steps_per_second_gives_gavel_multi_gpu_isolated_figures():
    raw = json.loads(gavel_path().read_text(encoding="utf-8"))
    table = load_gavel()
    model = "ResNet-50 (batch size 64)"
    for n in (1, 2, 4, 8):
        key = f"('{model}', {n})"
        assert table.steps_per_second(model, "v100", n) == raw["v100"][key]["null"]
        assert table.steps_per_second(model, "v100", n, consolidated=False) == raw["v100_unconsolidated"][key]["null"]
    for m in table.models:  # the one-GPU figure is the one behind samples_per_second
        assert table.steps_per_second(m, "p100") * table.per_gpu_batch(m) == table.samples_per_second(m, "p100")
    assert table.steps_per_second("A3C", "k80", 2) == 0.0  # not measured on two GPUs
    with pytest.raises(InvalidProblemError, match=r"n_gpus=3 .*pass one of 1, 2, 4, 8"):
        table.steps_per_second(model, "v100", 3)
    with pytest.raises(InvalidProblemError, match=r"unknown GPU type 'a100'"):
        table.steps_per_second(model, "a100")
    with pytest.raises(InvalidProblemError, match=r"consolidated must be True or False; got 'no'"):
        table.steps_per_second(model, "v100", 2, consolidated="no")


def test_gavel_licence_and_attribution_ship():
    licence = (DATA / "GAVEL_LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License") and "Copyright (c) 2020 Stanford Future Data Systems" in licence
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    assert "Gavel" in readme and "GAVEL_LICENSE" in readme and "OSDI 2020" in readme


def test_example_files_ship_and_place():
    from hetplace.io import load_problem

    for name in EXAMPLES:
        shipped = (DATA / "examples" / name).read_bytes()
        assert example_path(name).read_bytes() == shipped
        if (ROOT / "examples" / name).is_file():  # in a clone: the copy matches examples/
            assert (ROOT / "examples" / name).read_bytes() == shipped
    p = load_problem(example_path("cluster.toml"), example_path("jobs.csv"))
    assert p.n_workers == 16 and p.n_jobs == 5
    with pytest.raises(InvalidOptionError, match=r"name='cluster.json' is not valid; choose one of 'cluster.toml'"):
        example_path("cluster.json")


def test_place_help_names_the_shipped_examples(capsys):
    from hetplace.cli import main

    assert main(["place", "--help"]) == 0
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, also after a path's hyphens
    assert str(example_path("cluster.toml")) in text and "example_path(" in text


def test_py_typed_marker_ships():
    assert (resources.files("hetplace") / "py.typed").is_file()


def test_installed_metadata_fields_are_non_empty():
    try:
        meta = metadata.metadata("hetplace")
    except metadata.PackageNotFoundError:
        pytest.skip("hetplace is not installed (pip install -e .)")
    for field in ("Name", "Version", "Summary", "Author", "Keywords", "Requires-Python"):
        assert meta.get(field), field
    assert meta.get("License-Expression") == "MIT"
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and any(c.startswith("Programming Language :: Python :: 3.") for c in classifiers)
    assert any(c.startswith("Operating System ::") for c in classifiers)
    assert any(c.startswith("Topic ::") for c in classifiers)
    licences = {Path(str(f)).name for f in metadata.distribution("hetplace").files or () if "licenses" in str(f)}
    assert {"LICENSE", "GAVEL_LICENSE"} <= licences or not licences  # editable installs list no files


# ---------------------------------------------------------------- bench outside the repository
def test_bench_from_outside_the_repository_runs_all_three_families(tmp_path, monkeypatch, capsys):
    from hetplace.cli import main

    monkeypatch.chdir(tmp_path)
    assert bench.default_gavel_path() == gavel_path()
    assert bench.quick_spec(bench.default_gavel_path()).families == ("gavel", "speeds", "synthetic")
    code = main(["bench", "--K", "4", "--S", "2", "--seeds", "0", "--methods", "greedy", "--executor", "serial",
                 "--no-progress", "--no-plots", "--exact-time-limit", "10"], out=io.StringIO())
    assert code == 0 and "synthetic family only" not in capsys.readouterr().err
    rows = list(csv.DictReader(open(tmp_path / "bench-out" / "results.csv", newline="")))
    assert [r["family"] for r in rows] == ["gavel", "speeds", "synthetic"]


# ---------------------------------------------------------------- compiled backend missing
@pytest.fixture
def no_compiled_smp(monkeypatch):
    """hetplace._core._openmp cannot be imported (as in a source tree without built extensions)."""
    monkeypatch.setitem(__import__("sys").modules, "hetplace._core._openmp", None)
    # once imported, the submodule is also an attribute of the package, which `from ._core import _openmp` finds first
    monkeypatch.delattr(core, "_openmp", raising=False)
    monkeypatch.setattr(core, "_warned", False)


def test_missing_compiled_kernels_warn_once_naming_the_path_and_fix(no_compiled_smp):
    from hetplace.smp import resolve_backend

    with pytest.warns(HetplaceWarning) as record:
        assert resolve_backend("auto") == "numba"
        assert resolve_backend("auto") == "numba"
    assert len(record) == 1
    message = str(record[0].message)
    assert str(Path(hetplace.__file__).parent / "_core") in message and "pip install -e ." in message
    assert "build_ext --inplace" in message and "Numba backend runs" in message
    assert record[0].filename == __file__  # points at the caller, not inside hetplace
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidOptionError, match=r"backend='cython' needs the compiled extension "
                           r"hetplace\._core\._openmp, .*pip install -e \..*; or pass backend='numba'\."):
            resolve_backend("cython")


def test_missing_compiled_kernels_of_another_install_say_run_elsewhere(no_compiled_smp, monkeypatch):
    from hetplace.smp import resolve_backend

    monkeypatch.setattr(core, "_installed_elsewhere", lambda: "/opt/venv/lib/site-packages/hetplace")
    with pytest.warns(HetplaceWarning, match=r"imported the source tree .*not the hetplace installed with its "
                      r"compiled kernels at /opt/venv/lib/site-packages/hetplace\. Fix: run from another folder"):
        resolve_backend("auto")


def test_brute_force_without_its_extension_says_how_to_build_it(monkeypatch):
    from hetplace.exact import solve_exact

    monkeypatch.setitem(__import__("sys").modules, "hetplace._core._brute", None)
    with pytest.raises(MissingDependencyError, match=r"method='brute' needs the compiled extension "
                       r"hetplace\._core\._brute, .*build_ext --inplace.*; or use method='dp' or 'milp'\."):
        solve_exact(hetplace.Problem([[10.0, 20.0]], [1, 1], [4], [100]), method="brute")


def test_installed_compiled_kernels_elsewhere_are_found(monkeypatch, tmp_path):
    so = tmp_path / "hetplace" / "_core" / "_openmp.cpython-311-x86_64-linux-gnu.so"
    so.parent.mkdir(parents=True)
    so.write_bytes(b"")

    class Dist:
        files = [metadata.PackagePath("hetplace/_core/_openmp.cpython-311-x86_64-linux-gnu.so"),
                 metadata.PackagePath("hetplace/__init__.py")]

        @staticmethod
        def locate_file(f):
            return tmp_path / f

    class Clone:  # the clone's own egg-info, found first from its root, lists no compiled files
        files = [metadata.PackagePath("hetplace/_core/_openmp.pyx")]

        @staticmethod
        def locate_file(f):
            return Path(hetplace.__file__).parents[1] / f

    monkeypatch.setattr(metadata, "distributions", lambda name: iter([Clone, Dist]))
    assert core._installed_elsewhere() == str(tmp_path / "hetplace")
    Dist.files = Dist.files[1:]  # an editable install lists no compiled files
    assert core._installed_elsewhere() is None


def test_no_test_folder_is_named_like_an_importable_package():
    # tests/torch made pytest import it as a namespace package `torch` without PyTorch installed,
    # so importorskip("torch") passed and the tests errored instead of skipping
    import importlib.util

    tests = Path(__file__).resolve().parent
    for folder in (p for p in tests.rglob("*") if p.is_dir() and not p.name.startswith((".", "_"))):
        for name in ("torch", "numpy", "numba", "scipy", "hetplace", "pandas", "ortools", "hypothesis"):
            assert folder.name != name, f"{folder} shadows the package {name!r}"
    assert importlib.util.find_spec("hetplace") is not None


# ---------------------------------------------------------------- the test extra is complete
# modules the tests may skip without: the pinned PyTorch build is installed on its own
# (README, command 1), the standard library and the tests' own helpers are always there
_OWN_INSTALL = {"torch", "tomllib", "instances"}
_DISTRIBUTION_OF = {"distributed": "dask"}  # module -> distribution, where they differ


def _requirement_name(requirement):
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_test_extra_installs_every_module_a_test_or_benchmark_skips_without():
    # the cimport test skipped on every fresh machine: Cython was a build requirement only,
    # so `pip install -e ".[test]"` (README, CI) never put it where the tests run
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the tomli backport, a dependency there
        import tomli as tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["test"]
    installed = {_requirement_name(r) for r in extra}
    skipped_without = set()
    for path in [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]:
        skipped_without.update(re.findall(r"importorskip\(\s*[\"']([A-Za-z_][\w.]*)[\"']", path.read_text(encoding="utf-8")))
    assert "Cython" in skipped_without and "matplotlib" in skipped_without  # the scan finds them
    tops = {m.split(".")[0] for m in skipped_without}  # scipy.stats is scipy, torch.distributed torch
    missing = {m for m in tops - _OWN_INSTALL if _DISTRIBUTION_OF.get(m, m).lower() not in installed}
    assert not missing, (f"tests skip without {sorted(missing)}, which the test extra does not install; "
                         "add them to [project.optional-dependencies] test in pyproject.toml")


# ---------------------------------------------------------------- the source distribution is complete
def test_source_distribution_has_every_tracked_file_the_tests_docs_and_fuzzer_read(monkeypatch):
    # the sdist had no fuzz/ (tests/test_io.py imports fuzz/fuzz_readers.py: ModuleNotFoundError)
    # and no docs/bench_quick.png (docs/bench.md shows it; sphinx -W fails on a missing image)
    import subprocess

    from setuptools.command.egg_info import FileList

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:  # an unpacked sdist: every file on disk is what it shipped
        pytest.skip("not a git checkout: nothing to compare the manifest with")
    monkeypatch.chdir(ROOT)
    files = FileList()
    files.findall()
    for line in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines():
        if line.split("#")[0].strip():
            files.process_template_line(line.split("#")[0].strip())
    shipped = set(files.files) | {"pyproject.toml", "MANIFEST.in"}  # setuptools adds these two itself
    wanted = [f for f in tracked.stdout.splitlines()
              if f.startswith(("tests/", "benchmarks/", "docs/", "examples/", "fuzz/", ".ci/"))
              or f in ("LICENSE", "README.md", "setup.py")]
    assert "fuzz/fuzz_readers.py" in wanted and "docs/bench_quick.png" in wanted  # the scan sees them
    missing = sorted(set(wanted) - shipped)
    assert not missing, f"MANIFEST.in leaves {missing} out of the source distribution"
