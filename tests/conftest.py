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

import pytest

from hostile import FAST_EXAMPLES, FUZZ_EXAMPLES
from instances import gavel_problem
from methods import METHODS


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
