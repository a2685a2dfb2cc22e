"""Shared setup of the benchmarks: the instance generators live in ``tests/``.

``tests/instances.py`` (seeded generators, Gavel loader) is imported by both the
tests and the benchmarks; this puts ``tests/`` on ``sys.path`` so benchmarks
can ``import instances`` without copying it into the package.
"""
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1] / "tests"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))
