"""The method table of tests/methods.py against the library's registries.

A method of :data:`hetplace.api.METHODS`, a backend of :data:`hetplace.smp.BACKENDS`,
an exact method of :data:`hetplace.exact.METHODS` or a solver of
:data:`hetplace.exact.SOLVERS` that is not in the table would escape every
feature test that iterates it: these tests fail instead.
"""

import pytest

import hetplace.api
import hetplace.exact
import hetplace.smp

from methods import METHODS, by_name, rows_for
from instances import tiny_random


def test_every_place_method_is_in_the_table():
    assert {m.method for m in METHODS} == set(hetplace.api.METHODS)


def test_every_smp_backend_is_in_the_table():
    assert {m.options["backend"] for m in METHODS if m.method == "smp"} == set(hetplace.smp.BACKENDS)


def test_every_exact_method_is_in_the_table():
    assert {m.options["exact_method"] for m in METHODS if m.method == "exact"} == set(hetplace.exact.METHODS)


def test_every_milp_solver_is_in_the_table():
    """Each distinct solver (aliases such as ``"cpsat"`` name the same one) has a MILP row."""
    rows = [m for m in METHODS if m.options.get("exact_method") == "milp"]
    assert {hetplace.exact.SOLVERS[m.options["solver"]][0] for m in rows} == {
        v[0] for v in hetplace.exact.SOLVERS.values()}
    assert len(rows) == len({v[0] for v in hetplace.exact.SOLVERS.values()})


def test_every_row_supports_bounds_and_down_workers():
    """No row opts out of a feature test today; one that must shall change this test on purpose."""
    assert all(m.bounds and m.down_workers for m in METHODS)


def test_names_are_unique_and_found():
    assert len({m.name for m in METHODS}) == len(METHODS)
    assert all(by_name(m.name) is m for m in METHODS)
    with pytest.raises(KeyError):
        by_name("no-such-method")


def test_every_row_runs_and_the_exact_ones_agree():
    """Every row that applies gives a placement; the exact rows the same optimum (to their ``rel``)."""
    p = tiny_random(4, n_workers=5, n_jobs=2, speeds=False)
    rows = rows_for(p)
    assert {m.name for m in METHODS if m.runnable()} == {m.name for m in rows}  # tiny, uniform: all apply
    best = min(hetplace.place(p, method=m.method, seed=3, **m.options).mean_jct for m in rows if m.exact)
    for m in rows:
        pl = hetplace.place(p, method=m.method, seed=3, **m.options)
        assert pl.mean_jct >= best * (1 - 1e-9), m
        if m.exact:
            assert pl.mean_jct == pytest.approx(best, rel=m.rel), m
