"""Shared fixtures of the test suite.

The pieces a test file imports live in modules of their own, so that no test
file imports another:

- ``tests/instances.py``: every seeded random-instance generator (one family per
  kind of instance, the same instance for the same seed everywhere);
- ``tests/methods.py``: the one table of placement methods that every feature
  test iterates (``tests/test_methods.py`` holds it to the library's registries);
- ``tests/reference.py`` (and ``tests/balance/reference.py``): slow, obviously
  correct references;
- ``tests/hostile.py``: the hypothesis strategies and the two fuzzing budgets.

Marks (registered in pyproject.toml): the default run deselects ``slow`` (long
differential campaigns, full parameter ranges, scale tests) and ``fuzz`` (the large
fuzzing budgets); ``python -m pytest -m slow`` and ``-m fuzz`` run them.
"""

import glob
import os
import subprocess
import sys
from pathlib import Path

# Ray binds a local cluster to 127.0.0.1 only with this set before Ray is imported (tests/test_ray.py,
# benchmarks/bench_ray.py): no test or benchmark listens on another address
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import pytest

from hostile import FAST_EXAMPLES, FUZZ_EXAMPLES
from instances import gavel_problem
from methods import METHODS


_WARMUP = {}


def _numba_cache_is_cold():
    """No cached Numba compilation of the market kernels where Numba keeps its cache."""
    core = Path(__file__).resolve().parents[1] / "hetplace" / "_core"
    where = [str(core / "__pycache__")]
    if os.environ.get("NUMBA_CACHE_DIR"):
        where.append(os.path.join(os.environ["NUMBA_CACHE_DIR"], "**"))
    return not any(glob.glob(os.path.join(w, "_market*.nbi"), recursive=True) for w in where)


def pytest_sessionstart(session):
    """On a cold Numba cache, compile the kernels in the background (tests/numba_warmup.py).

    The suite runs on one core; the second compiles the kernels the tests will load.
    Off with the JIT off, under pytest-xdist workers, or with HETPLACE_NO_WARMUP=1.
    """
    if (os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0") or os.environ.get("HETPLACE_NO_WARMUP")
            or hasattr(session.config, "workerinput") or not _numba_cache_is_cold()):
        return
    script = Path(__file__).with_name("numba_warmup.py")
    _WARMUP["proc"] = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def pytest_sessionfinish(session, exitstatus):
    proc = _WARMUP.pop("proc", None)
    if proc is not None and proc.poll() is None:
        proc.terminate()  # Numba replaces cache files atomically: no half-written file is left
        proc.wait()


def pytest_report_header(config):
    rows = ", ".join(m.name for m in METHODS if m.runnable())
    return [f"hetplace methods under test: {rows}",
            f"fuzzing budgets: {FAST_EXAMPLES} examples (fast run), {FUZZ_EXAMPLES} (-m fuzz)"]


@pytest.fixture(scope="session")
def gavel():
    """:func:`instances.gavel_problem`: ``gavel(seed, n_workers, n_jobs, ...)``."""
    return gavel_problem


@pytest.fixture(scope="session")
def gavel_table():
    """The Gavel throughput table shipped with hetplace (:func:`hetplace.data.load_gavel`)."""
    from hetplace.data import load_gavel

    return load_gavel()
