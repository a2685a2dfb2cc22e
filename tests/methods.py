"""The one table of placement methods that every feature test iterates.

Each row is one way to call :func:`hetplace.place`: a method of
:data:`hetplace.api.METHODS`, and for ``"smp"`` one backend of
:data:`hetplace.smp.BACKENDS`, for ``"exact"`` one exact method of
:data:`hetplace.exact.METHODS` (the MILP once per solver of
:data:`hetplace.exact.SOLVERS`).  ``tests/test_methods.py`` compares the table
with those registries, so a method, backend, exact method or solver added to
the library but not here fails the suite; the feature tests (size bounds:
``test_bounds.py``, down workers: ``test_available.py``, re-placement with
restarts: ``test_restart_*.py``, job weights: ``test_weights.py``, a network
topology: ``test_topology_methods.py``, tenant quotas: ``test_quotas_exact.py``,
the edges of the numeric range: ``test_placement.py``, hostile inputs:
``test_hostile.py``) run every row that :meth:`Method.applies` to their instance.
"""

import dataclasses
import types

import pytest

from hetplace import exact, place
from hetplace.smp import _cython_available

__all__ = ["Method", "METHODS", "EXACT", "HEURISTIC", "SMP", "MILP_SOLVERS", "EXACT_REL", "CPSAT_REL",
           "by_name", "run", "rows_for", "needs_cython"]


@dataclasses.dataclass(frozen=True)
class Method:
    """One row of the table.

    Attributes
    ----------
    name : str
        Test id, e.g. ``"smp-numba"`` or ``"exact-milp-highs"``.
    method : str
        ``method=`` of :func:`hetplace.place`.
    options : mapping
        The options that select this row (``backend=``, ``exact_method=``, ``solver=``).
    exact : bool
        Returns a proven optimum (to ``rel``).
    rel : float or None
        Relative tolerance of its objective against the optimum (exact rows),
        None for heuristics.
    uniform_speeds_only : bool
        Refuses per-worker speeds (the type DP).
    max_assignments : int or None
        Largest ``(n_jobs + 1) ** n_workers`` it accepts (brute force).
    bounds : bool
        Honours size bounds (``Problem(min_workers=, max_workers=)``); test_bounds.py checks it.
    down_workers : bool
        Leaves down workers (``Problem(available=)``) idle; test_available.py checks it.
    restart_aware : bool
        Prices the restart cost of ``Problem(current=, restart_time=)`` in its choice
        (every row must still return a valid placement of such a problem).
    quotas : bool
        Honours binding tenant quotas (``Problem(tenant=, quota=)``, docs/model.md §1.7):
        returns a placement within them.  A row that cannot (the type DPs refuse
        them) is kept from problems whose quota binds (``problem.has_quota``);
        tests/test_quotas_exact.py checks both.
    needs : str or None
        ``"cython"`` when it needs the compiled extensions.

    Today every row supports bounds and down workers; a row that cannot says so here,
    and :meth:`applies` then keeps it from problems that use the feature (as it keeps
    the rows with ``quotas=False`` from problems whose quota binds).
    """

    name: str
    method: str
    options: types.MappingProxyType = dataclasses.field(default_factory=lambda: types.MappingProxyType({}))
    exact: bool = False
    rel: "float | None" = None
    uniform_speeds_only: bool = False
    max_assignments: "int | None" = None
    bounds: bool = True
    down_workers: bool = True
    restart_aware: bool = False
    quotas: bool = True
    needs: "str | None" = None

    def runnable(self):
        """Whether this machine can run the row (the Cython backend is built)."""
        return self.needs != "cython" or _cython_available()

    def applies(self, problem):
        """Whether the row accepts ``problem`` (its features, speeds and size) on this machine."""
        if not self.runnable():
            return False
        if (problem.bounded and not self.bounds) or (not problem.available.all() and not self.down_workers):
            return False
        if problem.has_quota and not self.quotas:
            return False
        if self.uniform_speeds_only and exact._dp_refusal(problem) is not None:
            return False
        if self.max_assignments is not None and (problem.n_jobs + 1) ** problem.n_workers > self.max_assignments:
            return False
        return True

    def __str__(self):
        return self.name


def _row(name, method, exact_=False, rel=None, **kw):
    options = {k: kw.pop(k) for k in ("backend", "exact_method", "solver") if k in kw}
    return Method(name, method, types.MappingProxyType(options), exact=exact_, rel=rel, **kw)


#: Skip a test when the Cython extensions are not built.
needs_cython = pytest.mark.skipif(not _cython_available(), reason="Cython extension not built (pip install .)")

#: CP-SAT's continuous variables live on a 1e-6 grid (hetplace.exact): its optimum to 1e-5.
CPSAT_REL = 1e-5
#: The DP, brute force, SCIP and HiGHS against an independent optimum.
EXACT_REL = 1e-6

METHODS = (
    _row("equal", "equal"),
    _row("random", "random"),
    _row("greedy", "greedy"),
    _row("keep-greedy", "keep-greedy", restart_aware=True),
    _row("smp-python", "smp", backend="python", restart_aware=True),
    _row("smp-numba", "smp", backend="numba", restart_aware=True),
    _row("smp-cython", "smp", backend="cython", restart_aware=True, needs="cython"),
    _row("smp-auto", "smp", backend="auto", restart_aware=True),
    _row("auto", "auto", restart_aware=True),
    _row("exact-auto", "exact", True, EXACT_REL, exact_method="auto", restart_aware=True),
    _row("exact-dp", "exact", True, EXACT_REL, exact_method="dp", uniform_speeds_only=True, restart_aware=True,
         quotas=False),
    _row("exact-pruned-dp", "exact", True, EXACT_REL, exact_method="pruned-dp", uniform_speeds_only=True,
         restart_aware=True, quotas=False),
    _row("exact-brute", "exact", True, EXACT_REL, exact_method="brute", max_assignments=200_000,
         restart_aware=True),
    _row("exact-milp-scip", "exact", True, EXACT_REL, exact_method="milp", solver="scip", restart_aware=True),
    _row("exact-milp-highs", "exact", True, EXACT_REL, exact_method="milp", solver="highs", restart_aware=True),
    _row("exact-milp-cp-sat", "exact", True, CPSAT_REL, exact_method="milp", solver="cp-sat", restart_aware=True),
)

#: Rows that prove an optimum.
EXACT = tuple(m for m in METHODS if m.exact)
#: Rows that do not.
HEURISTIC = tuple(m for m in METHODS if not m.exact)
#: The MILP's solvers, one name each (in the table's order).
MILP_SOLVERS = tuple(m.options["solver"] for m in METHODS if m.options.get("exact_method") == "milp")
#: SMP, once per backend.
SMP = tuple(m for m in METHODS if m.method == "smp")


def by_name(name):
    """The row called ``name``."""
    for m in METHODS:
        if m.name == name:
            return m
    raise KeyError(name)


def run(row, problem, seed=3, **extra):
    """``hetplace.place(problem, row.method, seed=seed, **row.options, **extra)``."""
    return place(problem, method=row.method, seed=seed, **dict(row.options), **extra)


def rows_for(problem, rows=METHODS):
    """The rows of ``rows`` that accept ``problem`` on this machine."""
    return [m for m in rows if m.applies(problem)]
