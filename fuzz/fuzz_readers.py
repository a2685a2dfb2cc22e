"""Coverage-guided fuzzing of the file readers and of ``hetplace place`` (atheris / libFuzzer).

Run (from the repository root; how to read the output: docs/fuzzing.md)::

    pip install atheris
    mkdir -p /tmp/hetplace-corpus
    python fuzz/fuzz_readers.py /tmp/hetplace-corpus fuzz/seeds -max_total_time=300 -rss_limit_mb=2048

The first byte of an input picks the target, the rest is the file content:

==  ======================================================================
0   :func:`hetplace.io.read_cluster` of the bytes as a cluster TOML file
1   :func:`hetplace.io.read_jobs` of the bytes as a job CSV file (against a
    3-type cluster and the shipped Gavel table, so ``model`` cells are read)
2   :func:`hetplace.data.load_gavel` of the bytes as a Gavel JSON file
3   ``hetplace place --cluster A --jobs B --method equal`` (in process): the
    bytes split at the first NUL byte into the cluster and the job file
==  ======================================================================

The property (:func:`check_one`): each call returns a valid result or raises
a :class:`~hetplace.errors.HetplaceError`; the command exits 0, or 2 with one
``hetplace: error:`` line on stderr.  Anything else (another exception, a
traceback, another exit code) is a crash, and libFuzzer saves the input as
``crash-<sha1>`` in the current folder.

:func:`check_one` is also what ``tests/test_io.py`` runs on inputs that
Hypothesis draws (``HETPLACE_FUZZ_EXAMPLES`` examples), without atheris.
"""

import contextlib
import io
import math
import sys
import tempfile
from pathlib import Path

TARGETS = ("cluster", "jobs", "gavel", "cli")
#: Problems of more cells than this (jobs x (workers + 1)) are not placed by target 3:
#: ``Problem`` holds several dense (S, K + 1) arrays, and a fuzzed file can ask for
#: thousands of jobs on a million workers (tens of GB); see docs/fuzzing.md.
MAX_CLI_CELLS = 2_000_000

_CLUSTER_3 = '[[types]]\nname = "k80"\ncount = 8\n[[types]]\nname = "p100"\ncount = 8\n[[types]]\nname = "v100"\ncount = 8\n'


class Harness:
    """Files and fixed inputs of the targets, in a private temporary folder."""

    def __init__(self, folder=None):
        from hetplace.data import load_gavel
        from hetplace.io import read_cluster

        self.folder = Path(folder or tempfile.mkdtemp(prefix="hetplace-fuzz-"))
        (self.folder / "base.toml").write_text(_CLUSTER_3, encoding="utf-8")
        self.spec = read_cluster(self.folder / "base.toml")
        self.gavel = load_gavel()

    def write(self, name, data):
        path = self.folder / name
        path.write_bytes(data)
        return path


def _check_cluster(spec):
    from hetplace.problem import MAX_WORKERS

    assert len(spec.type_names) == len(spec.type_counts) == len(set(spec.type_names)) > 0
    assert all(isinstance(c, int) and c >= 0 for c in spec.type_counts)
    assert 0 < spec.n_workers <= MAX_WORKERS
    assert spec.bandwidth > 0
    if spec.worker_speed is not None:
        assert spec.worker_speed.shape == (spec.n_workers,)
        assert ((spec.worker_speed > 0) & (spec.worker_speed <= 1)).all()
    if spec.topology is not None:  # [[nodes]]: Problem(node=, node_bandwidth=, rack=, rack_bandwidth=) arguments
        t = spec.topology
        N = t["node_bandwidth"].size
        assert t["node"].shape == (spec.n_workers,) and (t["node"] >= 0).all() and t["node"].max() == N - 1
        assert (t["node_bandwidth"] > 0).all()
        if "rack" in t:
            assert t["rack"].shape == (N,) and t["rack"].max() == t["rack_bandwidth"].size - 1
            assert (t["rack_bandwidth"] > 0).all()


def _check_jobs(data, G):
    import numpy as np

    S = len(data["job_names"])
    assert S > 0 and len(set(data["job_names"])) == S
    assert data["throughput"].shape == (S, G) and np.isfinite(data["throughput"]).all()
    assert (data["throughput"] >= 0).all()
    assert data["batch"].shape == (S,) and (data["batch"] >= 1).all()
    assert (data["iterations"] > 0).all() and np.isfinite(data["iterations"]).all()
    assert (data["grad_bytes"] >= 0).all() and np.isfinite(data["grad_bytes"]).all()


def _cli(harness, body):
    from hetplace.cli import main
    from hetplace.errors import HetplaceError
    from hetplace.io import read_cluster, read_jobs

    cluster_bytes, _, jobs_bytes = body.partition(b"\0")
    c = harness.write("cli.toml", cluster_bytes)
    j = harness.write("cli.csv", jobs_bytes)
    try:  # skip problems too large to build (see MAX_CLI_CELLS)
        spec = read_cluster(c)
        S = len(read_jobs(j, spec)["job_names"])
        if S * (spec.n_workers + 1) > MAX_CLI_CELLS:
            return None
    except HetplaceError:
        pass
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["place", "--cluster", str(c), "--jobs", str(j), "--method", "equal"], out=out)
    text = err.getvalue()
    if code == 0:
        assert "Traceback" not in text, text
    else:
        assert code == 2, (code, text)
        assert text.startswith("hetplace: error: ") and text.count("\n") == 1, text
    return code


def check_one(harness, target, body):
    """Run ``target`` (an index into :data:`TARGETS`) on the file content ``body``.

    Returns the result (None when the input was refused with a
    ``HetplaceError``); raises anything else, which is a crash.
    """
    from hetplace.data import load_gavel
    from hetplace.errors import HetplaceError
    from hetplace.io import read_cluster, read_jobs

    name = TARGETS[target % len(TARGETS)]
    if name == "cli":
        return _cli(harness, body)
    path = harness.write({"cluster": "c.toml", "jobs": "j.csv", "gavel": "g.json"}[name], body)
    try:
        if name == "cluster":
            spec = read_cluster(path)
            _check_cluster(spec)
            return spec
        if name == "jobs":
            data = read_jobs(path, harness.spec, gavel=harness.gavel)
            _check_jobs(data, len(harness.spec.type_names))
            return data
        table = load_gavel(path)
        assert table.types and all(math.isfinite(table.samples_per_second(m, t)) for m in table.models[:3]
                                   for t in table.types)
        return table
    except HetplaceError:
        return None


def _instrument():
    """Instrument the readers' code (and tomllib's parser) for coverage; not numpy or numba."""
    import inspect

    import atheris

    with atheris.instrument_imports(include=["tomllib"]):
        import tomllib  # noqa: F401  (imported here so that its parser is instrumented)
    import hetplace.cli
    import hetplace.data
    import hetplace.io

    for module in (hetplace.io, hetplace.data, hetplace.cli):
        for obj in list(vars(module).values()):
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                atheris.instrument_func(obj)
            elif inspect.isclass(obj) and obj.__module__ == module.__name__:
                for member in vars(obj).values():
                    if inspect.isfunction(member):
                        atheris.instrument_func(member)


def main(argv=None):
    import atheris

    _instrument()
    harness = Harness()

    def one_input(data):
        if data:
            check_one(harness, data[0], data[1:])

    atheris.Setup(list(sys.argv if argv is None else argv), one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
