"""Shared setup of the benchmarks: the instance generators live in ``tests/``.

``tests/instances.py`` (seeded generators, Gavel loader) is imported by both the
tests and the benchmarks; this puts ``tests/`` on ``sys.path`` so benchmarks
can ``import instances`` without copying it into the package.
"""
import os
import sys
from pathlib import Path

# Ray binds a local cluster to 127.0.0.1 only with this set before Ray is imported (tests/test_ray.py,
# benchmarks/bench_ray.py): no test or benchmark listens on another address
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

_TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))
