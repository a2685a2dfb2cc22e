"""Exact optimal placements (docs/model.md §4): type DP, OR-Tools MILP, brute force.

:func:`solve_exact` validates its options, picks a method and returns an
:class:`ExactResult` whose ``objective`` is always the true mean JCT of the
returned placement, recomputed by :func:`hetplace.placement.evaluate`.

Methods
-------
``"dp"``
    Dynamic programme over "workers used per type" (docs/model.md §4.2).  Exact when
    every worker speed is 1; milliseconds for few types.  Numba kernel
    :func:`hetplace._core._dp_nb.type_dp` (compiled on first use, cached).
``"pruned-dp"``
    The type DP restricted by the configuration LP's Lagrangian bound
    (:func:`hetplace.lower_bound`) and an incumbent (docs/model.md §4.9): exact,
    for speeds 1, far beyond the plain DP's reach (K = 256, S = 32).
``"milp"``
    Mixed-integer linear programme solved by OR-Tools ``pywraplp`` with SCIP,
    CP-SAT or HiGHS.  Exact for per-worker speeds, communication and a network
    topology.
``"brute"``
    Enumeration of all ``(S+1)**K`` worker -> job maps (Cython kernel
    :func:`hetplace._core._brute.brute_force`); for tests on tiny instances.
``"auto"``
    ``"dp"`` when every speed is 1 and the DP work is at most
    :data:`AUTO_DP_MAX_WORK` transitions, else ``"pruned-dp"`` when it applies,
    else ``"milp"``.

Tenant quotas (``Problem(tenant=, quota=)``, docs/model.md §1.7, §4.10): the
MILP and brute force are exact within them; the type DPs refuse a binding
quota, and ``"auto"`` then runs the MILP.
"""

import math
import numbers
import os
import time

import numpy as np

from .errors import InvalidOptionError, InvalidProblemTypeError, MissingDependencyError, SolverError
from . import _interrupt
from ._cost import job_time, price, restarted
from .bound import _class_counts
from ._result import Result
from ._validation import check_time_limit
from ._incumbent import _incumbent, _smp_seed0, _trimmed  # noqa: F401 - _trimmed: tests use exact._trimmed
from .placement import current_counts, evaluate, is_feasible, realise_counts
from .problem import Problem

__all__ = [
    "ExactResult",
    "solve_exact",
    "dp_size",
    "METHODS",
    "SOLVERS",
    "SOLVER_NAMES",
    "DP_MAX_STATES",
    "DP_MAX_TABLE",
    "AUTO_DP_MAX_WORK",
    "DP_MAX_WORK",
    "BRUTE_MAX_ASSIGNMENTS",
    "MILP_MAX_CELLS",
    "PRUNED_DP_MAX_VECTORS",
    "PRUNED_DP_MAX_CELLS",
    "PRUNED_DP_MAX_STATES",
]

METHODS = ("auto", "dp", "pruned-dp", "milp", "brute")
#: accepted ``solver`` spellings (case-insensitive) -> (OR-Tools id, display name)
SOLVERS = {
    "scip": ("SCIP", "SCIP"),
    "cp-sat": ("CP_SAT", "CP-SAT"),
    "cpsat": ("CP_SAT", "CP-SAT"),
    "highs": ("HIGHS", "HiGHS"),
}
#: The MILP solvers by their own names (:data:`SOLVERS` without its alias ``"cpsat"``), as the CLI offers them.
SOLVER_NAMES = tuple(dict.fromkeys(name.lower() for _, name in SOLVERS.values()))

#: Largest DP state space ``prod(type_counts + 1)`` that ``method="dp"`` accepts
#: (two float64 value arrays of this length).
DP_MAX_STATES = 5_000_000
#: Largest back-pointer table ``n_jobs * prod(type_counts + 1)`` (int32 entries,
#: 4 bytes each: 400 MB at the cap) that ``method="dp"`` accepts.
DP_MAX_TABLE = 100_000_000
#: ``method="auto"`` uses the DP when its work ``n_jobs * prod_g (m_g+1)(m_g+2)/2``
#: (transitions) is at most this, a few seconds of DP.  The DP's time per transition
#: is predictable, the MILP's time is not; on few-type clusters the DP wins where the
#: MILP can take minutes (measured in docs/results.md §5;
#: ``pytest benchmarks/bench_exact.py -k auto_threshold``).
AUTO_DP_MAX_WORK = 2_000_000_000
#: ``method="pruned-dp"`` prices every count vector ``prod(type_counts + 1)`` of every job
#: (twice, one job at a time: a few (V,) arrays): at most this many vectors, and
#: ``n_jobs * vectors`` at most :data:`PRUNED_DP_MAX_CELLS` (measured: about 1 s per 1e7 cells).
PRUNED_DP_MAX_VECTORS = 2_000_000
PRUNED_DP_MAX_CELLS = 200_000_000
#: Most states one stage of ``method="pruned-dp"`` keeps; beyond it the call returns the
#: incumbent with the Lagrangian bound (status ``"feasible"``).
PRUNED_DP_MAX_STATES = 2_000_000
#: Targets of ``method="pruned-dp"``'s rounds, as fractions of the way from the Lagrangian
#: bound L to the incumbent's total U: a round keeps only what can reach ``L + f (U - L)``.
_PRUNED_DP_TARGETS = (1 / 64, 1 / 16, 1 / 4, 1 / 2, 1.0)
#: Largest DP work (transitions) that ``method="dp"`` accepts without a ``time_limit``:
#: about 1-2 minutes at the measured 3-5.6 ns per transition (docs/model.md §4.7).
#: Beyond it ``method="dp"`` raises unless ``time_limit`` bounds the call.
DP_MAX_WORK = 20_000_000_000
#: Nanoseconds per DP transition used to predict its time in messages (the slow end
#: of the measured 2.5-5.6 ns, see AUTO_DP_MAX_WORK).
_DP_NS_PER_TRANSITION = 5.0
#: DP transitions / brute-force assignments from which the call runs in a worker
#: thread that Ctrl-C and ``time_limit`` can stop (hetplace._interrupt): about 30 ms;
#: shorter calls run inline (a thread costs ~0.1 ms).
_STOPPABLE_MIN_WORK = 10_000_000
#: Seconds the single-worker moves may add to a DP or brute force stopped by time_limit.
_MOVES_SECONDS = 0.2
#: Largest ``(n_jobs + 1) ** n_workers`` that ``method="brute"`` accepts: a second or
#: two of brute force (measured in docs/results.md §5;
#: ``pytest benchmarks/bench_exact.py -k brute_force``).
BRUTE_MAX_ASSIGNMENTS = 50_000_000
#: Largest ``n_jobs * (n_workers + 1)`` the MILP accepts (``method="milp"``, or ``"auto"`` when
#: the type DP does not apply): its model and its greedy incumbent read the dense (S, K + 1)
#: tables of :class:`Problem` (8 bytes a cell, 128 MiB each at the cap).  Measured on the
#: project's 2-core machine (synthetic instances): the incumbent alone takes 0.2 s and 92 MiB
#: at K = 4096, S = 256 (2**20 cells) and 6.6 s and 840 MiB at K = 16384, S = 2048 (2**25);
#: beyond the cap neither the incumbent nor the model fits a useful time limit, and
#: ``method="smp"`` works on worker classes without any dense table.
MILP_MAX_CELLS = 2**24
#: Up to this many cells the greedy incumbent is always built, even once ``time_limit`` is
#: spent (about 0.4 s at most), so a small problem's ``"time_limit"`` result has a placement.
_INCUMBENT_ALWAYS_CELLS = 2**21
#: Seconds per cell of ``n_jobs * (n_workers + 1)`` that the greedy incumbent takes (its dense
#: tables included; measured above: 2.0e-7 at 2**20 and 2**25 cells), and that the descent of
#: :func:`_improve_by_moves` is given before the MILP is built (its deadline).
_INCUMBENT_SECONDS_PER_CELL = 2e-7
_MOVE_SECONDS_PER_CELL = 1e-7
#: Most steps of :func:`_improve_by_moves`' descent (its deadline ends it first on large problems).
_MOVE_MAX_STEPS = 1_000_000
#: Most MILP solver threads accepted (the same cap as ``place(method="smp", threads=...)``).
MAX_THREADS = 1024

# Tolerances passed to the MILP solvers: "gap ~ 0" so optima are truly optimal.
_REL_GAP = 1e-9
_ABS_GAP = 1e-12
# CP-SAT solves integer programmes only: continuous variables are multiplied by
# this factor and rounded (see ExactResult notes in solve_exact).
_CPSAT_VAR_SCALING = 1e6
#: Relative tolerance of the check every MILP result passes before it is reported
#: (see ``_verify``): an "optimal" whose solver value, bound or gap disagrees with
#: the re-evaluated mean JCT by more, or that the greedy baseline or a local move
#: beats by more, is reported "feasible".  CP-SAT optimises a model whose
#: continuous variables lie on a 1e-6 grid, hence its looser tolerance.
_CHECK_REL = {"SCIP": 1e-6, "HiGHS": 1e-6, "CP-SAT": 1e-5}
#: Largest time limit handed to a solver (s, about 31 years): OR-Tools takes the
#: limit in int64 milliseconds and SCIP refuses more than 1e20 s.
_MAX_SOLVER_SECONDS = 1e9
#: No tangent cut is placed at an aggregate throughput below this fraction of the
#: job's fastest worker: its coefficient 1/x0^2 would exceed 1e6.
_CUT_X_MIN = 1e-3
#: Seconds per constraint coefficient that ``Solver.Solve`` spends loading the model
#: into each solver before the solver's own clock starts (and, for CP-SAT, scaling it
#: to integers after), with some margin; set aside from ``time_limit``.  Measured in
#: docs/results.md §5.
_SETUP_SECONDS_PER_NONZERO = {"SCIP": 2e-6, "HiGHS": 9e-6, "CP-SAT": 1.5e-6}
#: Smallest objective coefficient of a job's compute variable (see _build_milp).
_OBJ_COEF_MIN = 1e-6
#: Largest objective coefficient of a job's keep variable in the normalised objective (see
#: _build_milp): the normaliser grows with the largest restart cost a solver has to weigh, so
#: restart_time up to 1e30 stays within what SCIP, CP-SAT and HiGHS represent (1e20 is their
#: infinity, and CP-SAT scales the objective to integers).
_OBJ_COEF_MAX = 1e6
#: Milliseconds SCIP and HiGHS run in this process before a longer solve moves to a child
#: process that Ctrl-C can kill (``_run_solver``): about the worst wait of a Ctrl-C.
_SLICE_MS = 500
#: HiGHS's "unknown" result through OR-Tools (a limit hit before any incumbent).
_HIGHS_UNKNOWN = 99
#: Seconds a MILP child process takes to start and import OR-Tools (measured 0.2-0.3 s), set
#: aside from its time limit.
_CHILD_START_SECONDS = 0.4
#: Seconds a MILP child process may outlive its time limit before it is killed.
_CHILD_GRACE_SECONDS = 5.0


class ExactResult(Result):
    """Outcome of :func:`solve_exact` (fields ``None`` when unsolved).

    Attributes
    ----------
    status : str
        ``"optimal"`` (proven, and verified: see Notes of :func:`solve_exact`);
        ``"feasible"`` (a limit was hit, or the solver's optimum failed the
        check; the best placement found is returned; also a DP or brute
        force stopped by ``time_limit``); ``"time_limit"``
        (``time_limit`` ran out before the solver could start; the greedy
        baseline is returned, ``info["incumbent"] == "greedy"``);
        ``"no_solution"`` (the solver hit the limit before any incumbent, or
        ``time_limit`` cannot cover the greedy incumbent of a large problem:
        no placement, the bound is ``mean(jct_alone)``);
        ``"error"`` (the solver failed, see ``message``).  ``"infeasible"``
        is never reported: every valid :class:`Problem` has a placement, so a
        solver's infeasibility claim is reported as ``"error"``.
    success : bool
        True exactly when ``status == "optimal"``.
    message : str
        Human-readable account of the outcome.
    placement : Placement or None
        The best placement found.
    objective : float or None
        TRUE mean JCT (s) of ``placement``, recomputed by ``evaluate``.
    bound : float or None
        Lower bound on the optimal mean JCT (s) as the solver reports it (at
        least ``mean(problem.jct_alone)``); never clamped, so a bound above
        ``objective`` -- a solver fault -- stays visible (and such a result is
        not ``"optimal"``).
    gap : float or None
        ``(objective - bound) / objective``, unclamped (about 0 when optimal;
        negative when the bound is invalid).
    wall_time : float
        Seconds spent in :func:`solve_exact`, model building included.
    method : str
        ``"dp"``, ``"milp"`` or ``"brute"``: the method that ran.
    solver : str
        ``"SCIP"``, ``"CP-SAT"``, ``"HiGHS"``, ``"dp"`` or ``"brute"``.
    info : dict
        Method-specific details (model size, nodes, formulation, ...).
    """

    FIELDS = ("placement", "objective", "bound", "gap", "wall_time", "method", "solver")
    STATUSES = ("optimal", "feasible", "time_limit", "no_solution", "error")
    SUCCESS = ("optimal",)

    def __init__(self, status, message, placement, bound, wall_time, method, solver, info=None):
        objective = None if placement is None else float(placement.mean_jct)
        bound = None if bound is None else float(bound)  # as reported: never clamped
        if objective is not None and bound is not None and objective > 0:
            gap = (objective - bound) / objective
        else:
            gap = None
        super().__init__(status, message, info, placement=placement, objective=objective, bound=bound, gap=gap,
                         wall_time=float(wall_time), method=method, solver=solver)

    def __repr__(self):
        def fmt(v):
            return "None" if v is None else f"{v:.6g}"

        return (
            f"ExactResult(status={self.status!r}, method={self.method!r}, solver={self.solver!r}, "
            f"objective={fmt(self.objective)}, bound={fmt(self.bound)}, gap={fmt(self.gap)}, "
            f"wall_time={self.wall_time:.3g}s)"
        )


# ---------------------------------------------------------------- validation
def _solver_choices():
    """``"'scip', 'cp-sat' (or 'cpsat'), 'highs'"``: :data:`SOLVER_NAMES`, each with its aliases in :data:`SOLVERS`."""
    return ", ".join(
        repr(name) + "".join(f" (or {alias!r})" for alias in SOLVERS if alias != name and SOLVERS[alias] == SOLVERS[name])
        for name in SOLVER_NAMES
    )


def _solve_exact_iv(problem, method, solver, time_limit, threads, verbose):
    """Validate the arguments of :func:`solve_exact`; return canonical values."""
    if not isinstance(problem, Problem):
        raise InvalidProblemTypeError(
            f"problem must be a hetplace.Problem; got {type(problem).__name__}. "
            "Build one with hetplace.Problem(throughput, type_counts, batch, iterations, ...)."
        )
    if not isinstance(method, str) or method.strip().lower() not in METHODS:
        raise InvalidOptionError(
            f"method must be one of {', '.join(repr(m) for m in METHODS)}; got {method!r}."
        )
    method = method.strip().lower()
    if not isinstance(solver, str) or solver.strip().lower() not in SOLVERS:
        raise InvalidOptionError(f"solver must be one of {_solver_choices()} (case-insensitive); got {solver!r}.")
    solver = "cp-sat" if solver.strip().lower() == "cpsat" else solver.strip().lower()
    time_limit = check_time_limit(time_limit)  # numpy numbers welcome; 1e300 is clamped later
    if threads is not None:
        if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral) or threads < 1:
            raise InvalidOptionError(
                f"threads must be a positive integer or None (solver default); got {threads!r}."
            )
        if threads > MAX_THREADS:  # the solvers take a C int: 2**31 raised OverflowError inside OR-Tools
            raise InvalidOptionError(f"threads must be at most {MAX_THREADS}; got {threads!r}.")
        threads = int(threads)
    if not isinstance(verbose, (bool, np.bool_)):
        raise InvalidOptionError(f"verbose must be True or False; got {verbose!r}.")
    return method, solver, time_limit, threads, bool(verbose)


def dp_size(problem):
    """Size of the type DP for ``problem``.

    Returns
    -------
    states : int
        ``prod_g (m_g + 1)``, the number of "workers used per type" states
        (``m_g``: the available workers of type g, ``problem.available_counts``).
    work : int
        ``n_jobs * prod_g (m_g + 1)(m_g + 2) / 2``, the number of transitions.
    """
    m = [int(c) for c in problem.available_counts]  # down workers are not in the DP
    states = math.prod(c + 1 for c in m)
    work = problem.n_jobs * math.prod((c + 1) * (c + 2) // 2 for c in m)
    return states, work


def _speed_refusal(problem, method):
    """Why a type DP (``method``) cannot run on ``problem``'s per-worker speeds (None when all are 1)."""
    slow = np.flatnonzero(problem.available & (problem.worker_speed != 1.0))
    if slow.size:
        k = int(slow[0])
        return (
            f"method='{method}' needs every worker_speed to be 1 (then workers of one type are "
            "interchangeable, docs/model.md §2.3); this problem has per-worker speeds (worker "
            f"{k} has speed {float(problem.worker_speed[k])!r}). Use method='milp' (exact for "
            "per-worker speeds) or method='auto'."
        )
    return None


def _topology_refusal(problem, method):
    """Why a method that prices jobs by their type counts (``method``) cannot run with a network topology."""
    if problem.topology is None:
        return None
    return (
        f"method='{method}' prices a job by how many workers of each type it has, but this problem has a "
        "network topology (node=...): a job's communication depends on the nodes its workers are in "
        "(docs/model.md §1.6). Use method='milp' (exact with a topology), method='brute' on tiny "
        "problems, or method='auto'."
    )


def _quota_refusal(problem, method):
    """Why a type DP (``method``) cannot run with a binding tenant quota (None without one).

    The DP's state counts the workers of each type all jobs use together, not
    each tenant's share of them, so it cannot keep a tenant within its quota.
    """
    if not problem.has_quota:
        return None
    up = problem.available_counts
    can = problem.throughput > 0
    t, g = next((int(t), int(g)) for t, g in np.argwhere(problem.quota_cap < up[None, :])
                if (can[problem.tenant == t, g]).any())
    return (
        f"method='{method}' cannot honour tenant quotas, and this problem's quota binds: quota[{t}, {g}] = "
        f"{problem.quota[t, g]:g} (tenant {t}, type {problem.type_names[g]!r}) is below the {int(up[g])} available "
        "workers of that type (docs/model.md §1.7); the type DP counts the workers of each type all jobs use, "
        "not each tenant's. Use method='milp' (exact with quotas), method='brute' on tiny problems, or "
        "method='auto' (which then runs the MILP)."
    )


def _dp_refusal(problem):
    """Why the DP cannot run on ``problem`` (None when it can)."""
    why = _topology_refusal(problem, "dp") or _speed_refusal(problem, "dp") or _quota_refusal(problem, "dp")
    if why is not None:
        return why
    states, _ = dp_size(problem)
    if states > DP_MAX_STATES or states * problem.n_jobs > DP_MAX_TABLE:
        return (
            f"method='dp' needs prod(type_counts + 1) = {states:,} states and "
            f"n_jobs * states = {states * problem.n_jobs:,} back-pointers; the caps are "
            f"DP_MAX_STATES = {DP_MAX_STATES:,} and DP_MAX_TABLE = {DP_MAX_TABLE:,}. "
            "Use method='milp' (or method='auto')."
        )
    return None


def _dp_work_refusal(problem):
    """Why ``method="dp"`` without a ``time_limit`` would run too long (None when it would not)."""
    _, work = dp_size(problem)
    if work <= DP_MAX_WORK:
        return None
    minutes = work * _DP_NS_PER_TRANSITION * 1e-9 / 60
    return (
        f"method='dp' would make n_jobs * prod_g (m_g+1)(m_g+2)/2 = {work:,} transitions "
        f"(about {minutes:,.0f} minutes at ~{_DP_NS_PER_TRANSITION:g} ns each), above DP_MAX_WORK = "
        f"{DP_MAX_WORK:,}. Pass time_limit= (the DP then returns the greedy baseline with a lower "
        "bound if it has not finished), or use method='milp' (or method='auto')."
    )


# ---------------------------------------------------------------- public API
def solve_exact(
    problem: Problem, method: str = "auto", solver: str = "scip", time_limit: "float | None" = None,
    threads: "int | None" = None, verbose: bool = False,
) -> "ExactResult":
    """Optimal placement minimising the mean JCT (docs/model.md §1.2-1.4, §4).

    With running jobs (``Problem(current=, restart_time=)``) the JCTs include
    the restart losses, and every method is exact for that objective
    (docs/model.md §1.4).
    With ``Problem(weight=)`` every method is exact for the weighted mean
    (docs/model.md §1.5): it solves ``problem.objective_problem``.
    With tenant quotas (``Problem(tenant=, quota=)``, docs/model.md §1.7,
    §4.10) the MILP and brute force return the optimum within the quotas;
    the type DPs refuse a quota that binds (``problem.has_quota``).

    Parameters
    ----------
    problem : Problem
    method : {"auto", "dp", "pruned-dp", "milp", "brute"}, default "auto"
        ``"auto"`` runs the type DP when every worker speed is 1 and its work
        ``n_jobs * prod_g (m_g+1)(m_g+2)/2`` is at most :data:`AUTO_DP_MAX_WORK`
        (a threshold measured by ``benchmarks/bench_exact.py``); above it, with
        speeds 1, ``"pruned-dp"`` when its count vectors fit
        :data:`PRUNED_DP_MAX_VECTORS` and :data:`PRUNED_DP_MAX_CELLS`; else the
        MILP.  ``"pruned-dp"``: the type DP restricted by the configuration
        LP's Lagrangian bound (:func:`hetplace.lower_bound`) and an incumbent
        (docs/model.md §4.9).  ``result.method`` says which ran.
    solver : {"scip", "cp-sat", "highs"}, default "scip"
        MILP solver (case-insensitive; ``"cpsat"`` is accepted).  Ignored by
        ``"dp"``, ``"pruned-dp"`` and ``"brute"``.
    time_limit : float, optional
        Seconds for the whole MILP call, measured from its start: the greedy
        incumbent, the model build (the clock is checked in every per-job
        loop) and the solver's model set-up (estimated from the model size)
        all count, and the solver gets only what is left.  When the budget is
        spent before the solver can start, status is ``"time_limit"`` with the
        greedy incumbent (``info["incumbent"] == "greedy"``); when the solver
        hits it, its incumbent and bound are returned (``"feasible"``), or
        status ``"no_solution"``.  Above 2**21 cells ``n_jobs * (n_workers + 1)``
        the incumbent itself is built only when its predicted time (0.2 us a
        cell) fits what is left, else status is ``"no_solution"`` at once.  Solvers check their clock between steps, so
        they may overrun by a fraction of a second.  Python and numpy numbers
        are accepted; limits above 1e9 s are clamped to 1e9 s.  The DP and
        brute force stop at the limit too and return the greedy incumbent
        (or brute force's best assignment so far) with a valid bound, status
        ``"feasible"`` (docs/model.md §4.7).
    threads : int, optional
        MILP solver threads (default: the solver's own).  HiGHS through OR-Tools
        ignores it.
    verbose : bool, default False
        Print the solver log.

    Returns
    -------
    ExactResult

    Raises
    ------
    InvalidProblemTypeError
        ``problem`` is not a :class:`Problem`.
    InvalidOptionError
        An option is not one of the valid values; ``method="dp"`` on a problem
        with per-worker speeds or beyond :data:`DP_MAX_STATES` /
        :data:`DP_MAX_TABLE`, or beyond :data:`DP_MAX_WORK` transitions without
        a ``time_limit``; ``method="dp"`` or ``"pruned-dp"`` on a problem whose
        tenant quota binds (the message names it); ``method="brute"`` beyond
        :data:`BRUTE_MAX_ASSIGNMENTS`; the MILP (``"milp"``, or ``"auto"``
        when the DP does not apply) beyond :data:`MILP_MAX_CELLS`, before
        anything is built.
    MissingDependencyError
        OR-Tools is not installed (MILP only).
    SolverError
        The OR-Tools build lacks the requested solver.
    KeyboardInterrupt
        On Ctrl-C (SIGINT), within about a second whatever the method and
        solver, after the work has stopped (docs/model.md §4.7).

    Notes
    -----
    **MILP** (our exact linearisation of docs/model.md §1.2; see §4.3).  Workers with equal
    (type, speed) form a class ``c`` of ``m_c`` workers with per-worker
    throughput ``r_ic``; with uniform speeds the classes are the types, with
    all-distinct speeds every worker is its own class (the per-worker binary
    model ``x[i,k]``).  Job ``i`` takes ``y_ic = sum_b 2^b z_icb`` workers of
    class ``c`` (binary expansion, ``z`` binary).  With ``t_i = 1 / X_i`` and
    ``p_icb = z_icb t_i`` (the exact McCormick product of a binary and a
    bounded continuous), write ``q_icb = 2^b r_ic p_icb`` -- the fraction of
    job ``i``'s batch that bit ``b`` of class ``c`` processes.  Constraints:
    ``q <= z`` (a used group's share is at most 1 since ``X_i >= 2^b r_ic``),
    ``q <= 2^b r_ic t_i`` and ``sum q >= 1``; together they give exactly
    ``t_i >= 1 / X_i`` for every integer ``z``, tight at the optimum because
    ``t_i`` has a positive cost.  Communication: a size one-hot ``u[i,n]``
    with ``sum_n n u[i,n] = n_i`` prices ``comm_time[i, n]`` (only for jobs
    with a gradient to exchange).  This model alone is exact but its LP
    relaxation is weak (docs/results.md §5), so valid inequalities
    (ours; not needed for exactness) tighten it: for jobs with communication,
    the aggregate ``X_i`` is split by job size, ``x_in`` in ``[L_n u_in,
    U_n u_in]`` (``L_n``/``U_n``: the ``n`` slowest/fastest workers) with the
    tangents of the convex ``1/X`` in perspective form,
    ``t_in >= 2 u_in / X0 - x_in / X0^2`` and ``t_i >= sum_n t_in`` (an outer
    approximation of the convex hull of the disjunction over sizes, so the LP
    no longer prices communication by its chord); other jobs get plain
    tangents ``t_i >= 2/X0 - X_i/X0^2``.  Restarts
    (docs/model.md §1.4): a binary ``keep_i`` per running job that can keep its
    workers forces its current class counts ``cur_ic`` (``sum_b 2^b z_icb >=
    cur_ic keep_i`` where it runs now, ``n_i <= held_i keep_i + n_max_i (1 -
    keep_i)``) and the objective adds ``restart_cost_i (1 - keep_i)``; the
    restart cost of a running job that cannot keep is a constant, which the
    solver never sees: it is added to the solver's value and bound afterwards.
    A restart that cannot pay -- ``restart_cost_i`` above the job's JCT cap
    ``J_i`` (below) minus ``jct_alone_i``, so no placement as good as the
    incumbent restarts job i -- fixes ``keep_i = 1`` and leaves the objective
    (the same optima: only placements worse than the incumbent are cut).  So
    every restart cost a solver weighs is at most the incumbent's total, and
    ``restart_time`` anywhere in the supported range 1e-30..1e30 s gives
    every solver a representable model (before, from about 1e13 s SCIP and
    CP-SAT stopped proving optima and from 1e25 s ended in errors).  Throughputs are
    normalised per job and the objective by the mean alone-JCT (or, when a
    weighed restart cost would exceed 1e6 in those units, by that cost over
    ``S * 1e6``: the JCTs are then below the solvers' tolerance of it) so
    coefficients are O(1).  Gap limits: relative 1e-9, absolute 1e-12.  SCIP
    runs without its aggregation separator and with at most 5 root cut rounds
    (faster on this model, same optima: docs/results.md §5).

    **Network topology** (``Problem(node=...)``, docs/model.md §4.3): classes
    are (node, type, speed); a binary per job and domain (one node, or one rack
    of several nodes) confines its workers, and a size-by-level one-hot
    ``w[i,n,d] = u[i,n] level[i,d]`` (exact disaggregation) prices its ring at
    that domain's bandwidth (none: the top level's).  Sizes are pruned with
    the communication's floor (``comm_model.floor``), never ``size_cost``
    (the top level's, an upper bound); the incumbent is also SMP's placement,
    its local moves are priced by :func:`hetplace._cost.price`, and it is given
    to SCIP and CP-SAT as a hint.

    **CP-SAT** only solves integer programmes: OR-Tools multiplies continuous
    variables by ``mip_var_scaling`` and rounds them.  We set it to 1e6, so
    ``t_i`` and the shares live on a grid of 1e-6 (relative to their O(1)
    scale; bounds are widened by 1e-5 so the rounded model stays feasible):
    CP-SAT's optimum and bound are those of this discretised model and agree
    with SCIP to about 1e-6 relative (tested at 1e-5), not to 1e-9.  CP-SAT's
    presolve is switched off: with it on, OR-Tools 9.15 returned wrong
    "optimal" placements on 20 of 300 tiny instances of this model (0 of 300
    with it off).

    **HiGHS** through OR-Tools' ``pywraplp`` reports its incumbent value as
    the best bound.  When HiGHS proves optimality the two coincide (gap limits
    ~0); on a time limit we therefore report the valid but weak bound
    ``mean(problem.jct_alone)`` (every job alone on the whole cluster).

    **Pruning by an incumbent** (ours).  Before building, a feasible
    placement is made (the greedy baseline, trimmed to ``max_workers``; with
    running jobs also the keep-greedy baseline, whichever is better; then
    improved by single-worker
    moves and swaps, priced with restart losses); with its mean JCT ``U``
    (restart losses included), a job's JCT without its restart loss in any
    placement at least as good is at most ``J_i = S U - sum_{j != i}
    jct_alone_j - sum_j forced_j`` (``forced_j``: the restart cost of a
    running job that cannot keep, paid in every placement).  Sizes whose communication plus best compute
    exceed ``J_i`` (and sizes above ``max_workers``) get no ``u[i,n]``, and
    ``tau_i <= r_hat_i J_i / w_i``.  This removes no optimum but keeps the
    coefficients representable: a 1e13 s size cost next to O(1) shares made
    CP-SAT's integer scaling round the shares to 0 and report a placement 67 %
    above the optimum as "optimal".  A job whose compute term weighs below
    1e-6 per unit of ``tau_i`` in the normalised objective carries ``tau_i``
    scaled up (else the solvers' tolerances ignore it), and no tangent point
    lies below 1e-3 of the job's fastest worker.

    **Verification**.  No MILP status is reported unchecked: the placement is
    re-evaluated with :func:`hetplace.evaluate`; an "optimal" whose solver
    value differs from it, whose bound exceeds it, whose gap to the bound is
    larger than the tolerance (1e-6; CP-SAT 1e-5), or that the incumbent or a
    local move beats, is reported ``"feasible"`` with the best placement found
    and the reasons in ``message`` and ``info["verification"]``.  A solver's
    "infeasible" is reported as ``"error"`` (every valid Problem has a
    placement).  On 400 seeded hostile tiny instances (tests/test_exact.py,
    ``_hostile``: gradients 1e-3..1e12 s per iteration, throughputs and speeds
    down to 1e-6) SCIP and HiGHS were optimal on all, CP-SAT on 396 (4 honest
    downgrades), and no reported optimum was wrong.

    **Tenant quotas** (docs/model.md §4.10): one row per binding (tenant,
    type), ``sum`` over the tenant's jobs and the type's classes of
    ``2^b z_icb <= quota_cap[t, g]`` (a class lies in one type); a type whose
    quota is 0 gives the tenant's jobs no variable.  The incumbent (the
    greedy baseline within the quotas, and without a ``time_limit`` also
    SMP's placement when it is within them), the local moves and the hint
    stay within the quotas (the moves are then priced by
    :func:`hetplace._cost.price`, as with a topology).  Brute force skips
    every assignment beyond a quota (a numpy enumeration: the compiled kernel
    knows no tenants).

    **Type DP**: see :func:`hetplace._core._dp_nb.type_dp`.  Bound = objective.
    The DP and brute force price sizes with ``Problem.size_cost_spec``
    through the core's one job-cost function (``inf`` outside the size
    bounds), so no job gets more workers than samples.
    """
    t0 = time.perf_counter()
    method, solver, time_limit, threads, verbose = _solve_exact_iv(
        problem, method, solver, time_limit, threads, verbose
    )
    if problem.weight is not None:
        return _solve_weighted(problem, method, solver, time_limit, threads, verbose, t0)
    if method == "dp":
        why = _dp_refusal(problem)
        if why is None and time_limit is None:
            why = _dp_work_refusal(problem)
        if why is not None:
            raise InvalidOptionError(why)
    elif method == "pruned-dp":
        why = _pruned_dp_refusal(problem)
        if why is not None:
            raise InvalidOptionError(why)
    elif method == "brute":
        n = (problem.n_jobs + 1) ** problem.n_workers
        if n > BRUTE_MAX_ASSIGNMENTS:
            raise InvalidOptionError(
                f"method='brute' would enumerate (n_jobs + 1) ** n_workers = "
                f"{problem.n_jobs + 1}**{problem.n_workers} = {n:,} assignments, above "
                f"BRUTE_MAX_ASSIGNMENTS = {BRUTE_MAX_ASSIGNMENTS:,}. Use method='dp', "
                "'milp' or 'auto'."
            )
    elif method == "auto":
        method = "milp"
        if problem.topology is not None:
            pass  # the MILP is the exact method that prices the network (docs/model.md §1.6)
        elif _dp_refusal(problem) is None and dp_size(problem)[1] <= AUTO_DP_MAX_WORK:
            method = "dp"
        elif _pruned_dp_refusal(problem) is None:
            method = "pruned-dp"

    if method == "dp":
        return _solve_dp(problem, t0, time_limit, verbose)
    if method == "pruned-dp":
        return _solve_pruned_dp(problem, t0, time_limit, verbose)
    if method == "brute":
        return _solve_brute(problem, t0, time_limit, verbose)
    return _solve_milp(problem, solver, time_limit, threads, verbose, t0)


def _solve_weighted(problem, method, solver, time_limit, threads, verbose, t0):
    """:func:`solve_exact` of a weighted problem (docs/model.md §1.5).

    Solves ``problem.objective_problem`` (work, communication and restart
    costs scaled by the weights: its mean JCT is the weighted objective over
    ``objective_scale``) and reports its placement evaluated on ``problem``
    (each job's own JCT, the weighted mean) and its bound times
    ``objective_scale``.  ``info`` is the scaled problem's, so its solver values
    (``dp_total_jct``, ``brute_total_jct``, ``incumbent_objective``,
    ``milp_objective``, ``solver_bound``, ``lagrangian_bound``) are in its units;
    ``info["objective_scale"]`` converts them.
    """
    if time_limit is not None:
        time_limit = max(time_limit - (time.perf_counter() - t0), 1e-3)
    res = solve_exact(problem.objective_problem, method, solver, time_limit, threads, verbose)
    placement = None
    if res.placement is not None:
        placement = evaluate(problem, res.placement.worker_job, method=res.placement.method,
                             info=res.placement.info)
    bound = None if res.bound is None else res.bound * problem.objective_scale
    info = {**res.info, "objective_scale": problem.objective_scale}
    return ExactResult(res.status, res.message, placement, bound, time.perf_counter() - t0, res.method,
                       res.solver, info)


# ---------------------------------------------------------------- type DP
def _solve_dp(problem, t0, time_limit, verbose):
    from ._core._dp_nb import type_dp  # lazy: importing hetplace compiles nothing

    counts = problem.available_counts  # the DP runs on the available workers only
    radix = np.ascontiguousarray(counts + 1, dtype=np.int64)
    stride = np.cumprod(np.concatenate(([1], radix[:-1])))
    members = [np.flatnonzero((problem.worker_type == g) & problem.available) for g in range(problem.n_types)]
    penalty, keep = _dp_keep(problem, members, stride)
    states, work = dp_size(problem)
    stop = _interrupt.new_stop()
    args = (
        np.ascontiguousarray(problem.throughput, dtype=np.float64),
        np.ascontiguousarray(problem.work, dtype=np.float64),
        problem.size_cost_spec,  # communication, inf outside the size bounds (_core._polish.job_cost)
        radix, penalty, keep, stop,
    )
    deadline = math.inf if time_limit is None else t0 + time_limit
    if work >= _STOPPABLE_MIN_WORK:  # long: Ctrl-C and time_limit stop it (_interrupt)
        total, choice, done, prefix = _interrupt.call(lambda: type_dp(*args), stop, deadline)
    else:  # milliseconds: not worth a thread
        total, choice, done, prefix = type_dp(*args)
    info = {"states": states, "transitions": work}
    if done < problem.n_jobs:  # time_limit: the greedy incumbent, and the bound of the finished stages
        info["dp_jobs_done"] = int(done)
        bound = (float(prefix) + float(problem.jct_alone[done:].sum())) / problem.n_jobs
        msg = (f"time_limit={time_limit} s ran out after {done} of {problem.n_jobs} DP stages; the "
               "placement returned is the greedy baseline (improved by single-worker moves), not an "
               "optimum; the bound is the finished stages' optimum plus jct_alone of the other jobs")
        return _greedy_result(problem, t0, "feasible", msg, bound, "dp", "dp", info, verbose)
    if not np.isfinite(total):  # pragma: no cover - Problem() rejects uncoverable instances
        return ExactResult("infeasible", "the type DP found no feasible placement", None, None,
                           time.perf_counter() - t0, "dp", "dp")
    y = (choice[:, None] // stride[None, :]) % radix[None, :]  # (S, G) type counts
    worker_job = realise_counts(problem, y, members)
    info["dp_total_jct"] = float(total)
    placement = evaluate(problem, worker_job, method="exact", info=info)
    wall = time.perf_counter() - t0
    if verbose:
        print(f"type DP: {states:,} states, {work:,} transitions, {wall:.3f} s")
    return ExactResult("optimal", "optimal (type DP)", placement, placement.mean_jct, wall,
                       "dp", "dp", info)


def _greedy_result(problem, t0, status, msg, bound, method, solver, info, verbose, best=None):
    """The result of a DP or brute force that ``time_limit`` stopped: the better of ``best``
    (a placement it found, or None) and the greedy incumbent improved by moves (for at most
    :data:`_MOVES_SECONDS`), with ``bound``."""
    incumbent = _incumbent(problem)
    incumbent = _improve_by_moves(problem, incumbent, 1e-9, deadline=time.perf_counter() + _MOVES_SECONDS)
    if best is None or incumbent.mean_jct < best.mean_jct:
        best = evaluate(problem, incumbent.worker_job, method="exact", info=info)
        info["incumbent"] = "greedy"
    if verbose:
        print(f"{method}: {msg}")
    return ExactResult(status, msg, best, bound, time.perf_counter() - t0, method, solver, info)


def _dp_keep(problem, members, stride):
    """The type DP's restart option (docs/model.md §1.4): ``penalty`` (S,) and ``keep`` (S,).

    ``penalty`` is ``problem.restart_cost``; ``keep[i]`` is the state index of
    job i's current type counts (``stride``: the DP's mixed radix) when it
    may keep its workers (``problem.can_keep``), else -1.  Available workers
    of one type are interchangeable here (the DP runs only when they all
    have speed 1), so any vector equal to those counts is realised with the
    job's own workers (:func:`hetplace.placement.realise_counts`).
    """
    penalty = np.ascontiguousarray(problem.restart_cost, dtype=np.float64)
    have = current_counts(problem, members)  # (S, G) over the available workers
    keep = np.where(problem.can_keep, have @ stride, -1).astype(np.int64)
    return penalty, np.ascontiguousarray(keep)


# ---------------------------------------------------------------- brute force
def _solve_brute(problem, t0, time_limit, verbose):
    if problem.topology is not None or problem.has_quota:
        # the compiled kernel prices jobs by their sizes and knows no tenants: price every assignment
        return _solve_brute_priced(problem, t0, time_limit, verbose)
    try:
        from ._core._brute import brute_force
    except ImportError as exc:
        from ._core import missing_compiled_message

        raise MissingDependencyError(
            missing_compiled_message("_brute", exc, "method='brute'", instead="use method='dp' or 'milp'")
        ) from None

    best = np.full(problem.n_workers, -1, dtype=np.int64)
    stop = _interrupt.new_stop()
    args = (
        np.ascontiguousarray(problem.worker_throughput, dtype=np.float64),
        np.ascontiguousarray(problem.work, dtype=np.float64),
        problem.size_cost_spec,  # communication, inf outside the size bounds (_core._polish.job_cost)
        np.ascontiguousarray(problem.current, dtype=np.int64),
        np.ascontiguousarray(problem.restart_cost, dtype=np.float64),
        best, stop,
    )
    n = (problem.n_jobs + 1) ** problem.n_workers
    info = {"assignments": n}
    if n >= _STOPPABLE_MIN_WORK:  # long: Ctrl-C and time_limit stop it (_interrupt)
        deadline = math.inf if time_limit is None else t0 + time_limit
        total = _interrupt.call(lambda: brute_force(*args), stop, deadline)
    else:
        total = brute_force(*args)
    if stop[0] == _interrupt.DEADLINE:  # the best assignment so far, or the greedy incumbent
        return _brute_out_of_time(problem, t0, time_limit, best if np.isfinite(total) else None, info, verbose)
    if not np.isfinite(total):  # pragma: no cover - Problem() rejects uncoverable instances
        return ExactResult("infeasible", "no assignment gives every job a worker", None, None,
                           time.perf_counter() - t0, "brute", "brute")
    return _brute_optimum(problem, t0, float(total), best, n, info, verbose)


def _brute_out_of_time(problem, t0, time_limit, best, info, verbose):
    """Brute force stopped by ``time_limit``: the best assignment found (or the greedy incumbent), "feasible"."""
    found = evaluate(problem, best, method="exact", info=info) if best is not None else None
    msg = (f"time_limit={time_limit} s ran out before the enumeration ended; the best placement "
           "found is returned, not an optimum, and the bound is mean(jct_alone)")
    return _greedy_result(problem, t0, "feasible", msg, float(np.mean(problem.jct_alone)), "brute",
                          "brute", info, verbose, best=found)


def _brute_optimum(problem, t0, total, best, n, info, verbose):
    """The result of a finished enumeration of ``n`` assignments whose best is ``best`` (total ``total``)."""
    info["brute_total_jct"] = total
    placement = evaluate(problem, best, method="exact", info=info)
    wall = time.perf_counter() - t0
    if verbose:
        print(f"brute force: {n:,} assignments, {wall:.3f} s")
    return ExactResult("optimal", "optimal (exhaustive enumeration)", placement,
                       placement.mean_jct, wall, "brute", "brute", info)


# ---------------------------------------------------------------- MILP
#: Assignments :func:`_solve_brute_priced` prices per numpy call.
_BRUTE_CHUNK = 1 << 15


def _solve_brute_priced(problem, t0, time_limit, verbose):
    """Brute force with a network topology or a binding quota: every assignment, priced by :func:`price`.

    The assignments are enumerated in the compiled brute force's order (worker
    0's job varies slowest; -1 idle first, then the jobs), in chunks; those
    that give a job a worker it cannot use, or a tenant more workers of a type
    than its quota (docs/model.md §1.7), are skipped, and the first one of
    least total wins.  Python between chunks, so Ctrl-C and ``time_limit``
    stop it at the next chunk.
    """
    S, K = problem.n_jobs, problem.n_workers
    n = (S + 1) ** K
    info = {"assignments": n}
    deadline = math.inf if time_limit is None else t0 + time_limit
    place = (S + 1) ** np.arange(K - 1, -1, -1, dtype=np.int64)
    ok_worker = problem.available[None, :]
    best_total, best_wj = math.inf, None
    start = 0
    while start < n:
        code = np.arange(start, min(n, start + _BRUTE_CHUNK), dtype=np.int64)
        wj = (code[:, None] // place[None, :]) % (S + 1) - 1
        busy = wj >= 0
        usable = ~busy | (ok_worker & (problem.throughput[np.maximum(wj, 0), problem.worker_type[None, :]] > 0))
        rows = usable.all(axis=1)
        if problem.has_quota and rows.any():
            rows[rows] = _within_quota(problem, wj[rows])
        if rows.any():
            wj = np.ascontiguousarray(wj[rows])
            with np.errstate(divide="ignore", invalid="ignore"):
                total = price(problem, wj).total
            r = int(np.argmin(total))
            if total[r] < best_total:
                best_total, best_wj = float(total[r]), wj[r].copy()
        start += _BRUTE_CHUNK
        if time.perf_counter() > deadline:
            return _brute_out_of_time(problem, t0, time_limit, best_wj, info, verbose)
    return _brute_optimum(problem, t0, best_total, best_wj, n, info, verbose)


def _worker_classes(problem, grouping):
    """Workers grouped by equal (type, speed), in worker-index order.

    Returns ``members`` (list of int64 arrays) and ``rate`` (S, C): the
    per-worker throughput of every class.  ``grouping="workers"`` makes every
    worker its own class (the plain per-worker binary model).  With a network
    topology the classes are (node, type, speed): a class lies in one node.
    """
    K = problem.n_workers
    if grouping == "workers":
        members = [np.array([k]) for k in range(K)]
    elif problem.topology is not None:
        # with a network topology a class is also one node: (node, type, speed)
        _, _, class_of = problem.worker_classes
        key = problem.topology.node * (int(class_of.max()) + 1) + class_of
        order = np.argsort(key, kind="stable")
        cuts = np.flatnonzero(np.diff(key[order])) + 1
        groups = np.split(order, cuts)
        members = [groups[c] for c in np.argsort([g[0] for g in groups], kind="stable")]
    else:
        order, starts, _ = problem.worker_classes  # Problem.worker_classes, by first worker here
        groups = [order[a:b] for a, b in zip(starts[:-1], starts[1:])]
        members = [groups[c] for c in np.argsort([g[0] for g in groups], kind="stable")]
    first = np.array([m[0] for m in members])
    return members, problem._class_rates(first)


def _load_ortools():
    try:
        from ortools.linear_solver import pywraplp
    except ImportError:  # pragma: no cover - ortools is a hard dependency
        raise MissingDependencyError(
            "method='milp' needs OR-Tools: pip install 'ortools>=9.10'"
        ) from None
    return pywraplp


def _solver_parameters(key, threads, verbose):
    """Solver-specific parameter text: gap limits ~0 (and CP-SAT scaling)."""
    if key == "scip":
        # the aggregation (c-MIR) separator and long root cut loops cost seconds on this
        # model for no gain (measured in docs/results.md §5)
        return (
            f"limits/gap = {_REL_GAP}\nlimits/absgap = {_ABS_GAP}\n"
            "separating/aggregation/freq = -1\nseparating/maxroundsroot = 5\n"
            "misc/catchctrlc = FALSE\n"  # Ctrl-C is ours (_run_solver), not a limit to return from
        )
    if key == "cp-sat":
        text = (
            f"relative_gap_limit: {_REL_GAP} absolute_gap_limit: {_ABS_GAP} "
            f"mip_var_scaling: {_CPSAT_VAR_SCALING} cp_model_presolve: false "
            f"log_search_progress: {str(verbose).lower()} catch_sigint_signal: false"
        )
        if threads is not None:
            text += f" num_workers: {threads}"
        return text
    # HiGHS: OR-Tools forwards "name=value" lines to Highs::setOptionValue
    return (
        f"mip_rel_gap={_REL_GAP}\nmip_abs_gap={_ABS_GAP}\n"
        f"output_flag={'true' if verbose else 'false'}"
    )


class _BudgetSpent(Exception):
    """Raised inside the model build when ``time_limit`` is used up."""


def _check_clock(deadline):
    if time.perf_counter() > deadline:
        raise _BudgetSpent


def _within_quota(problem, rows):
    """(R,) bool: which assignments ``rows`` (R, K) keep every tenant within its quota (docs/model.md §1.7).

    All True without tenants.  Only the binding (tenant, type) pairs -- a quota
    below the type's available workers -- can be exceeded: the workers of each
    (row, pair) are counted by one ``np.unique`` over the busy workers (memory
    O(R K) whatever the number of tenants) and compared with the quota.
    """
    rows = np.atleast_2d(rows)
    R = rows.shape[0]
    ok = np.ones(R, dtype=bool)
    if problem.tenant is None or R == 0:
        return ok
    bind = problem.quota_cap < problem.available_counts[None, :]  # (T, G)
    pair = np.full(bind.shape, -1, dtype=np.int64)
    pair[bind] = np.arange(int(bind.sum()))
    Q = int(bind.sum())
    if Q == 0:
        return ok
    t = np.where(rows >= 0, problem.tenant[np.maximum(rows, 0)], -1)
    q = np.where(t >= 0, pair[np.maximum(t, 0), problem.worker_type[None, :]], -1)
    r = np.broadcast_to(np.arange(R)[:, None], rows.shape)
    key, count = np.unique(r[q >= 0] * Q + q[q >= 0], return_counts=True)
    over = count > problem.quota_cap[bind][key % Q]
    ok[key[over] // Q] = False
    return ok


def _improve_by_moves(problem, placement, rel, deadline=math.inf):
    """Local search from ``placement`` by the polish kernel (:mod:`hetplace._core._polish`).

    Best-improvement descent over single-worker moves (to another job or
    idle) and swaps, priced exactly with the restart losses (docs/model.md
    §1.4), until no step pays or ``deadline`` (``time.perf_counter()``) is
    reached -- then the descent stops after its current step and what it
    reached is used.  Returns the polished placement, confirmed by
    :func:`evaluate`, when it lowers the mean JCT by more than ``rel``
    (relative), else ``placement`` itself: a claimed optimum that a step
    improves is not an optimum.  The same kernel as SMP's polish, on the
    backend ``"auto"`` resolves to, single-threaded; with a network topology
    (which that kernel does not price) or a binding tenant quota (which it
    does not know) :func:`_improve_by_priced_moves`.
    """
    if problem.topology is not None or problem.has_quota:
        # the polish kernel prices by size and knows no tenants: the numpy descent prices the network
        # and keeps every step within the quotas
        return _improve_by_priced_moves(problem, placement, rel, deadline)
    from ._core._registry import resolve

    _, table = resolve("auto")
    S, K = problem.n_jobs, problem.n_workers
    out_wj = np.array(placement.worker_job, dtype=np.int64).reshape(1, K)
    out_total = np.zeros(1)
    out_stats = np.zeros((1, 3), dtype=np.int64)
    restart = (problem.restart_cost, problem.current, None) if problem.replacing else None
    stop = _interrupt.new_stop()

    def descend():
        with np.errstate(divide="ignore", invalid="ignore"):  # the python backend's numpy scalars, as IEEE
            table.polish_rows(problem.worker_throughput, problem.work, problem.size_cost_spec, problem.worker_type,
                              problem.class_speed, problem.uniform_speed, np.zeros(1, dtype=np.int64),
                              _MOVE_MAX_STEPS, out_wj, out_total, out_stats, 1, restart, stop)

    # a deadline beyond a day is none (threading cannot wait 1e300 s)
    _interrupt.call(descend, stop, deadline if deadline - time.perf_counter() < 86400.0 else math.inf)
    if not out_stats[0, 2] or not is_feasible(problem, out_wj[0]):
        return placement
    moved = evaluate(problem, out_wj[0], method="exact", info=placement.info)
    return moved if moved.mean_jct < placement.mean_jct * (1.0 - rel) else placement


#: Seconds at most that :func:`_improve_by_priced_moves` runs when its deadline is later (or none).
_PRICED_MOVE_SECONDS = 1.0
#: Most cells (candidate assignments x workers) of one step's moves, and of its swaps, that
#: :func:`_improve_by_priced_moves` prices (about 1 us a cell: ~2 s); beyond, that kind is not tried
#: (K = 64, S = 12: 53,000 cells of moves, 129,000 of swaps).
_PRICED_MOVE_CELLS = 1 << 21
#: Cells of one batch it prices at once (its memory: ~30 bytes a cell).
_PRICED_BATCH_CELLS = 1 << 17


def _improve_by_priced_moves(problem, placement, rel, deadline=math.inf):
    """:func:`_improve_by_moves` with a network topology or quotas: the same neighbourhood priced by :func:`price`.

    Best-improvement steps over single-worker moves (to another job or idle),
    and over swaps when no move pays, every candidate assignment priced
    exactly (the network and the restart losses) in numpy batches; at most
    :data:`_PRICED_MOVE_SECONDS` and :data:`_MOVE_MAX_STEPS` steps.  With a
    binding tenant quota a candidate that exceeds it is never taken
    (:func:`_within_quota`).  Returns the placement reached, confirmed by
    :func:`evaluate`, when it lowers the mean JCT by more than ``rel``, else
    ``placement``.  A twin of the polish kernel's neighbourhood because that
    kernel prices a job by its size (docs/model.md §1.6) and knows no tenants.
    """
    S, K = problem.n_jobs, problem.n_workers
    deadline = min(deadline, time.perf_counter() + _PRICED_MOVE_SECONDS)
    wj = np.array(placement.worker_job, dtype=np.int64)
    usable = (problem.worker_throughput > 0) & problem.available[None, :]  # (S, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = price(problem, wj).total
    start = total
    if K * (S + 1) * K > _PRICED_MOVE_CELLS:  # one step would take seconds: none is tried
        return placement
    swaps = K * (K - 1) // 2 * K <= _PRICED_MOVE_CELLS
    iu, ju = np.triu_indices(K, 1) if swaps else (None, None)
    batch = max(1, _PRICED_BATCH_CELLS // max(K, 1))
    quota = problem.has_quota

    def best_of(ks, js):
        """The least total of ``wj`` with worker ``ks[t]`` given job ``js[t]`` (and, for swaps, the
        pair's other worker the first's job): rows built and priced a batch at a time."""
        best_total, best_row = math.inf, None
        for lo in range(0, ks.shape[0], batch):
            part = slice(lo, lo + batch)
            rows = np.repeat(wj[None, :], ks[part].shape[0], axis=0)
            r = np.arange(rows.shape[0])
            if ks.ndim == 1:
                rows[r, ks[part]] = js[part]
            else:  # swaps: (k, l) exchange their jobs
                rows[r, ks[part, 0]] = wj[ks[part, 1]]
                rows[r, ks[part, 1]] = wj[ks[part, 0]]
            with np.errstate(divide="ignore", invalid="ignore"):
                t = price(problem, rows).total
            if quota:
                t[~_within_quota(problem, rows)] = math.inf
            i = int(np.argmin(t))
            if t[i] < best_total:
                best_total, best_row = float(t[i]), rows[i].copy()
            if time.perf_counter() > deadline:
                break
        return best_total, best_row

    for _ in range(_MOVE_MAX_STEPS):
        if time.perf_counter() > deadline:
            break
        # moves: worker k to job j (or idle, j = -1)
        ks, js = np.meshgrid(np.arange(K), np.arange(-1, S), indexing="ij")
        ks, js = ks.ravel(), js.ravel()
        ok = (js != wj[ks]) & ((js < 0) | usable[np.maximum(js, 0), ks])
        best_total, best_row = best_of(ks[ok], js[ok])
        if (not best_total < total * (1.0 - 1e-12) and problem.topology is not None
                and time.perf_counter() <= deadline):
            # whole jobs: two jobs exchange their workers, or a job moves into one node (no single
            # worker's move can consolidate a job spread over nodes)
            rows = _job_moves(problem, wj, usable)
            if rows.shape[0]:
                with np.errstate(divide="ignore", invalid="ignore"):
                    t = price(problem, rows).total
                if quota:
                    t[~_within_quota(problem, rows)] = math.inf
                i = int(np.argmin(t))
                if t[i] < best_total:
                    best_total, best_row = float(t[i]), rows[i].copy()
        if not best_total < total * (1.0 - 1e-12) and swaps and time.perf_counter() <= deadline:
            # swaps of two workers of different jobs (or a worker and an idle one)
            a, b = wj[iu], wj[ju]
            ok = (a != b) & ((b < 0) | usable[np.maximum(b, 0), iu]) & ((a < 0) | usable[np.maximum(a, 0), ju])
            if ok.any():
                best_total, best_row = best_of(np.stack([iu[ok], ju[ok]], axis=1), None)
        if not best_total < total * (1.0 - 1e-12):
            break
        wj, total = best_row, best_total
    if not total < start or not is_feasible(problem, wj):
        return placement
    moved = evaluate(problem, wj, method="exact", info=placement.info)
    return moved if moved.mean_jct < placement.mean_jct * (1.0 - rel) else placement


def _job_moves(problem, wj, usable):
    """Candidate assignments moving whole jobs: (R, K) int64.

    Every pair of jobs exchanging their worker sets (when each can use the
    other's workers), and every job re-placed inside one node on its own and
    the idle workers there, on its ``n`` fastest of them for every ``n`` up to
    ``max_workers`` (its other workers left idle).
    """
    S = problem.n_jobs
    rows = []
    sets = [np.flatnonzero(wj == i) for i in range(S)]
    for i in range(S):
        for j in range(i + 1, S):
            if usable[i, sets[j]].all() and usable[j, sets[i]].all():
                r = wj.copy()
                r[sets[i]], r[sets[j]] = j, i
                rows.append(r)
    node = problem.topology.node
    rho = problem.worker_throughput
    for i in range(S):
        base = wj.copy()
        base[sets[i]] = -1
        for v in np.unique(node[usable[i]]):
            free = np.flatnonzero((node == v) & (base < 0) & usable[i])
            free = free[np.argsort(-rho[i, free], kind="stable")][: int(problem.max_workers[i])]
            for n in range(max(int(problem.min_workers[i]), 1), free.size + 1):
                r = base.copy()
                r[free[:n]] = i
                rows.append(r)
    return np.array(rows, dtype=np.int64).reshape(len(rows), wj.size)


def _comm_floor(problem, i, n):
    """(len(n),): a lower bound of job ``i``'s communication on ``n`` workers, ``inf`` outside its size bounds.

    ``Problem.size_cost[i, n]`` without a topology (exact); with one, the
    network's floor (``comm_model.floor``: the best domain that can hold ``n``
    workers), since ``size_cost`` is then the top level's, an upper bound.
    """
    if problem.topology is None:
        return problem.size_cost[i, n]
    n = np.asarray(n)
    out = problem.comm_model.floor(np.full(n.shape, i), n)
    return np.where((n > problem.max_workers[i]) | ((n > 0) & (n < problem.min_workers[i])), math.inf, out)


def _build_milp(pywraplp, solver_id, problem, upper=None, deadline=math.inf, grouping="classes", cuts="size"):
    """Build the MILP of the Notes of :func:`solve_exact`; return (solver, handles).

    ``upper`` is a known feasible placement (the incumbent): sizes,
    throughputs and restarts that cannot beat it are left out of the model.
    ``handles["offset"]`` (s) is the mean restart loss every placement pays,
    which the solver does not see: add it to the solver's value and bound.
    Raises :class:`_BudgetSpent` once ``deadline`` (a ``perf_counter`` time)
    has passed; the clock is checked in every per-job loop.
    """
    # ---------------------------------------------------------------- data
    S, K = problem.n_jobs, problem.n_workers
    members, rate = _worker_classes(problem, grouping)  # rate: (S, C) per-worker samples/s
    _check_clock(deadline)
    size = np.array([len(m) for m in members])
    C = size.size
    n_lo = problem.min_workers
    # most workers one job can get: every other job keeps its minimum (one by default)
    cap = K - (int(n_lo.sum()) - n_lo)
    rho = problem.worker_throughput
    if problem.has_quota:
        # a type whose quota is 0 for a job's tenant gives the job no worker: its rates there are 0
        # (exact, and no variable the quota row would fix: CP-SAT's grid then found no integer point
        # of a size variable's bounds and called the model invalid)
        none = np.zeros((S, problem.n_types), dtype=bool)
        mine = problem.tenant >= 0
        none[mine] = problem.quota_cap[problem.tenant[mine]] == 0
        if none.any():
            class_type = problem.worker_type[[int(m[0]) for m in members]]
            rate = np.where(none[:, class_type], 0.0, rate)
            rho = np.where(none[:, problem.worker_type], 0.0, rho)
    r_hat = rate.max(axis=1)  # per-job throughput normaliser
    topo = problem.topology
    if topo is None:
        with_comm = [bool(np.any(problem.comm_time[i] > 0)) for i in range(S)]
    else:  # a job with a gradient to exchange pays on some level (an inf bandwidth: 0 there)
        with_comm = [bool(problem.comm_model.volume[i] > 0) for i in range(S)]
    # CP-SAT rounds continuous domains to its grid: widen bounds (never binding) by
    # a little more than one grid step so the rounded model stays feasible
    slack = 10.0 / _CPSAT_VAR_SCALING if solver_id == "CP_SAT" else 0.0
    # Largest JCT job i can have in a placement at least as good as the incumbent:
    # sum_j JCT_j <= S * upper and JCT_j >= jct_alone_j.  A size whose communication
    # plus best compute exceeds it can never be optimal: leaving it out keeps the
    # coefficients in a range the solvers represent exactly (CP-SAT scales the
    # objective to integers; a 1e13 s size next to 1e-6 shares rounds the shares
    # away), and bounds tau_i.  The slack (1e-9 of the total) absorbs round-off.
    j_max = _jct_caps(problem, upper)
    r_sorted, sizes = [], []  # per job: usable rates fastest first; sizes kept in the model
    n_max = []  # largest size kept for job i
    tau_lo, tau_hi = [], []  # bounds of tau_i = r_hat_i / X_i
    for i in range(S):
        _check_clock(deadline)
        r = np.sort(rho[i][rho[i] > 0])[::-1]
        r_sorted.append(r)
        n_hi = int(min(cap[i], r.size, problem.max_workers[i]))  # no job uses more than max_workers
        # a lower bound of its JCT on each size (with a topology the communication's floor:
        # size_cost is then the top level's, an upper bound that would cut optima)
        n_range = np.arange(1, n_hi + 1)
        best = job_time(problem, i, np.cumsum(r[:n_hi]), n_range, comm=_comm_floor(problem, i, n_range))
        # ... nor fewer than min_workers (size_cost is inf there, but j_max may be inf too)
        keep = [n for n in range(int(n_lo[i]), n_hi + 1) if best[n - 1] <= j_max[i]]
        sizes.append(keep)
        n_max.append(keep[-1])
        tau_lo.append(r_hat[i] / r[:n_max[i]].sum() * (1.0 - slack))
        hi = r_hat[i] / r[-1]
        if np.isfinite(j_max[i]):
            # compute time work_i / X_i <= JCT_i <= j_max_i bounds X_i from below
            hi = min(hi, r_hat[i] * j_max[i] / problem.work[i])
        tau_hi.append(max(hi, r_hat[i] / r[:n_max[i]].sum()) * (1.0 + slack))
    # Restarts (docs/model.md §1.4): a job keeps its workers exactly when its class
    # counts equal its current ones (cur[i, c]), so one binary keep_i per running job
    # that may keep them; the others pay restart_cost_i whatever the placement.
    # Keeping is a size held_i placement, so it is left out (the job always pays)
    # when that size cannot beat the incumbent (held_i not in sizes[i]).
    cur = current_counts(problem, members)
    held = cur.sum(axis=1)
    keepable = [bool(problem.can_keep[i] and problem.restart_cost[i] > 0 and held[i] in sizes[i])
                for i in range(S)]
    # A restart of job i costs at least jct_alone_i + restart_cost_i of the total, so when that
    # exceeds j_max_i no placement as good as the incumbent restarts it: keep_i is fixed to 1 and
    # its cost leaves the objective (equivalent, and a 1e30 s cost never reaches a solver).  The
    # restart costs left are each at most the incumbent's total; the rest of the running jobs
    # restart in every placement, a constant added after the solve (``offset``).
    forced_keep = [keepable[i] and problem.restart_cost[i] > j_max[i] - problem.jct_alone[i] for i in range(S)]
    weighed = [keepable[i] and not forced_keep[i] for i in range(S)]
    offset = float(sum(problem.restart_cost[i] for i in range(S) if not keepable[i])) / S
    # objective normaliser (s): the mean alone-JCT, or more when a restart cost would weigh
    # above _OBJ_COEF_MAX (then the JCTs are below the solvers' tolerance of that cost anyway)
    scale = max(float(np.mean(problem.jct_alone)),
                max((float(problem.restart_cost[i]) for i in range(S) if weighed[i]), default=0.0)
                / (S * _OBJ_COEF_MAX))
    items = []  # per job: (class, bit, a = 2^b r_ic / r_hat_i)
    for i in range(S):
        _check_clock(deadline)
        row = []
        for c in range(C):
            if rate[i, c] > 0:
                for b in range(int(min(size[c], n_max[i])).bit_length()):
                    row.append((c, b, (2 ** b) * rate[i, c] / r_hat[i]))
        items.append(row)

    solver = pywraplp.Solver.CreateSolver(solver_id)
    if solver is None:
        raise SolverError(
            f"this OR-Tools build has no {solver_id} solver "
            f"(ortools {_ortools_version()}). Reinstall with pip install --force-reinstall ortools, "
            "or choose another solver= ('scip', 'cp-sat', 'highs')."
        )

    # ---------------------------------------------------------------- variables
    z, q = [], []
    for i in range(S):
        _check_clock(deadline)
        z.append([solver.BoolVar(f"z_{i}_{c}_{b}") for (c, b, _) in items[i]])
        q.append([solver.NumVar(0.0, 1.0, f"q_{i}_{c}_{b}") for (c, b, _) in items[i]])
    # tau_i is carried as sigma_i * tau'_i: a job whose compute term weighs less than
    # _OBJ_COEF_MIN per unit of tau_i in the normalised objective (its JCT is ~1e-9 of
    # the mean) would otherwise be below the solvers' tolerances, and tau_i left at its
    # upper bound; sigma_i = 1 for every job that matters more
    coef = [problem.work[i] / r_hat[i] / (S * scale) for i in range(S)]
    sigma = [min(max(1.0, _OBJ_COEF_MIN / coef[i]), max(1.0, tau_hi[i])) for i in range(S)]
    tau = [solver.NumVar(tau_lo[i] / sigma[i], tau_hi[i] / sigma[i], f"tau_{i}") for i in range(S)]
    u = []  # up to K sizes per job: S * K variables on a large cluster, so the clock is checked per job
    for i in range(S):
        _check_clock(deadline)
        u.append({n: solver.BoolVar(f"u_{i}_{n}") for n in sizes[i]} if with_comm[i] else None)
    keep = [solver.BoolVar(f"keep_{i}") if keepable[i] else None for i in range(S)]
    for i in np.flatnonzero(forced_keep):
        keep[i].SetBounds(1.0, 1.0)
    # network topology (docs/model.md §4.3): level[i][d] = 1 puts all of job i's workers in
    # domain d (a node, or a rack of several nodes; none: the top level), and
    # w[i][n, d] = u_in * level_id, the size-and-level one-hot that prices its ring
    level, w, domains = [None] * S, [None] * S, []
    if topo is not None:
        domains = _milp_domains(topo, members)
        for i in range(S):
            _check_clock(deadline)
            if u[i] is None:
                continue
            fit = {d: int(min(n_max[i], sum(size[c] for c in np.flatnonzero(mask) if rate[i, c] > 0)))
                   for d, (mask, _) in enumerate(domains)}
            use = [d for d in range(len(domains)) if any(2 <= n <= fit[d] for n in sizes[i])]
            if not use:  # the top level only: priced by size (comm_time is the top level's)
                continue
            level[i] = {d: solver.BoolVar(f"level_{i}_{d}") for d in use}
            w[i] = {(n, d): solver.NumVar(0.0, 1.0, f"w_{i}_{n}_{d}")
                    for n in sizes[i] if n >= 2 for d in use + [-1] if d < 0 or n <= fit[d]}

    # ---------------------------------------------------------------- constraints
    inf = solver.infinity()

    nnz = [0]  # constraint coefficients: what the solver's model extraction costs

    def row(lb, ub, terms):  # lb <= sum(coef * var) <= ub; faster than operator overloading
        ct = solver.Constraint(lb, ub)
        for var, coef in terms:
            ct.SetCoefficient(var, coef)
        nnz[0] += len(terms)

    # class capacity: the jobs use at most m_c workers of class c
    by_class = [[] for _ in range(C)]
    for i in range(S):
        for j, (c, b, _) in enumerate(items[i]):
            by_class[c].append((z[i][j], 2 ** b))
    for c in range(C):
        if c % 64 == 0:
            _check_clock(deadline)
        if by_class[c]:
            row(-inf, int(size[c]), by_class[c])
    # tenant quotas (docs/model.md §1.7): the jobs of tenant t use at most quota_cap[t, g] workers
    # of type g, summed over the classes of that type (a class lies in one type)
    # (only rows that can bind: a row at or above the type's workers in the classes repeats the
    # capacity rows, and HiGHS's presolve returned wrong "optimal" answers with such rows)
    if problem.has_quota:
        class_type = problem.worker_type[[int(m[0]) for m in members]]
        in_type = np.bincount(class_type, weights=size * (rate > 0).any(axis=0), minlength=problem.n_types)
        by_quota = {}
        for i in np.flatnonzero(problem.tenant >= 0):
            _check_clock(deadline)
            for j, (c, b, _) in enumerate(items[i]):
                by_quota.setdefault((int(problem.tenant[i]), int(class_type[c])), []).append((z[i][j], 2 ** b))
        for (t, g), terms in sorted(by_quota.items()):
            cap_tg = int(problem.quota_cap[t, g])
            if cap_tg < in_type[g] and sum(a for _, a in terms) > cap_tg:
                row(-inf, cap_tg, terms)
    for i in range(S):
        _check_clock(deadline)
        # every job gets at least one worker
        row(1, inf, [(v, 1) for v in z[i]])
        # ... and at least min_i (for jobs with communication the size one-hot says it too)
        if n_lo[i] > 1:
            row(int(n_lo[i]), inf, [(z[i][j], 2 ** b) for j, (_, b, _) in enumerate(items[i])])
        # ... and at most n_max_i (its max_workers, or what the incumbent leaves):
        # for jobs with communication the size one-hot below says it
        reach = sum(min(int(size[c]), 2 ** int(min(size[c], n_max[i])).bit_length() - 1)
                    for c in {c for (c, _, _) in items[i]})  # most workers its bits can express
        # (redundant, so left out, when n_max_i is just what the cluster allows anyway)
        if u[i] is None and reach > n_max[i] and n_max[i] < min(cap[i], r_sorted[i].size):
            row(-inf, n_max[i], [(z[i][j], 2 ** b) for j, (_, b, _) in enumerate(items[i])])
    # a group's share of the batch is 0 when unused and at most 1 when used: q <= z
    for i in range(S):
        _check_clock(deadline)
        for j in range(len(items[i])):
            row(-inf, 0, [(q[i][j], 1), (z[i][j], -1)])
    # a group's share is at most its throughput fraction: q <= (2^b r_ic / r_hat_i) tau_i
    for i in range(S):
        _check_clock(deadline)
        for j, (_, _, a) in enumerate(items[i]):
            row(-inf, 0, [(q[i][j], 1), (tau[i], -a * sigma[i])])
    # the shares cover the batch, hence tau_i >= r_hat_i / X_i
    for i in range(S):
        row(1, inf, [(v, 1) for v in q[i]])
    # job size one-hot (communication): sum_n u = 1 and sum_n n u = n_i = sum 2^b z
    for i in range(S):
        _check_clock(deadline)
        if u[i] is not None:
            row(1, 1, [(v, 1) for v in u[i].values()])
            row(0, 0, [(v, n) for n, v in u[i].items()]
                + [(z[i][j], -(2 ** b)) for j, (_, b, _) in enumerate(items[i])])
    # network levels: at most one domain per job; a class outside the chosen domain
    # gives the job no worker (y_ic <= m_ic (1 - sum of the levels without c));
    # w splits the size one-hot over the levels: sum_d w_ind = u_in (n >= 2: size 1 costs
    # nothing anywhere), sum_n w_ind <= level_id, and the top level's sum <= 1 - sum_d level_id
    for i in range(S):
        if not level[i]:
            continue
        _check_clock(deadline)
        row(-inf, 1, [(v, 1) for v in level[i].values()])
        for c in sorted({c for (c, _, _) in items[i]}):
            away = [v for d, v in level[i].items() if not domains[d][0][c]]
            if away:
                m_c = int(min(size[c], n_max[i]))
                row(-inf, m_c, [(z[i][j], 2 ** b) for j, (cc, b, _) in enumerate(items[i]) if cc == c]
                    + [(v, m_c) for v in away])
        for n in sizes[i]:
            if n >= 2:
                row(0, 0, [(v, 1) for (nn, _), v in w[i].items() if nn == n] + [(u[i][n], -1)])
        for d, v in level[i].items():
            row(-inf, 0, [(x, 1) for (_, dd), x in w[i].items() if dd == d] + [(v, -1)])
            # valid, tightens the LP: the size priced at level d lies in d, sum_n n w_ind <= sum_{c in d} y_ic
            row(-inf, 0, [(x, nn) for (nn, dd), x in w[i].items() if dd == d]
                + [(z[i][j], -(2 ** b)) for j, (c, b, _) in enumerate(items[i]) if domains[d][0][c]])
        row(-inf, 1, [(x, 1) for (_, dd), x in w[i].items() if dd < 0] + [(v, 1) for v in level[i].values()])
        # valid, tightens the LP: at level d on n workers, X_i is at most the n fastest in d (U_nd),
        # so tau_i >= rhat_i / U_nd; one size-and-level term is 1 (size 1: the fastest anywhere)
        fastest = {-1: np.cumsum(r_sorted[i])}
        for d in level[i]:
            r = np.repeat(rate[i], size)[np.repeat(domains[d][0], size)]
            fastest[d] = np.cumsum(np.sort(r[r > 0])[::-1])
        terms = [(x, r_hat[i] / fastest[d][n - 1]) for (n, d), x in w[i].items()]
        if 1 in u[i]:
            terms.append((u[i][1], r_hat[i] / r_sorted[i][0]))
        row(0, inf, [(tau[i], sigma[i] * (1.0 + slack))] + [(x, -a) for x, a in terms])
    # keep_i = 1 forces n_ic = cur_ic on every class: n_ic >= cur_ic keep_i where the
    # job runs now, and n_i <= held_i keep_i + n_max_i (1 - keep_i), so with keep_i = 1
    # no class gets more (cur_ic = 0 where the job has rate 0: its classes hold all of
    # its current workers, as can_keep says they are up)
    for i in range(S):
        if keep[i] is None:
            continue
        _check_clock(deadline)
        for c in np.flatnonzero(cur[i]):
            row(0, inf, [(z[i][j], 2 ** b) for j, (cc, b, _) in enumerate(items[i]) if cc == c]
                + [(keep[i], -int(cur[i, c]))])
        row(-inf, n_max[i], [(z[i][j], 2 ** b) for j, (_, b, _) in enumerate(items[i])]
            + [(keep[i], n_max[i] - int(held[i]))])
    # tangent cuts of the convex 1/X: valid inequalities that only tighten the LP.
    # Tangent points below _CUT_X_MIN (a job's aggregate under 1e-3 of its fastest
    # worker) would need coefficients up to 1/x0^2 that solvers cannot represent;
    # the cuts are valid at any point, so those are simply not added.
    if cuts != "none":
        for i in range(S):
            _check_clock(deadline)
            x_terms = [(z[i][j], a) for j, (_, _, a) in enumerate(items[i])]  # X_i / r_hat_i
            r = r_sorted[i] / r_hat[i]
            if cuts == "size" and u[i] is not None:
                # per job size n (perspective of the tangents): X_i/r_hat_i is carried by
                # x_in, nonzero only for the size in use, within [n slowest, n fastest]
                parts, lower = [], []
                for n, un in u[i].items():
                    lo, hi = r[-n:].sum() * (1.0 - slack), r[:n].sum() * (1.0 + slack)
                    x_n = solver.NumVar(0.0, hi, f"x_{i}_{n}")
                    t_n = solver.NumVar(0.0, tau_hi[i], f"t_{i}_{n}")
                    row(-inf, 0, [(x_n, 1), (un, -hi)])
                    row(0, inf, [(x_n, 1), (un, -lo)])
                    for x0 in _tangent_points(lo, hi, 4):
                        # t_n >= (2 / x0) u_n - x_n / x0^2
                        row(0, inf, [(t_n, 1), (un, -2.0 / x0), (x_n, 1.0 / (x0 * x0))])
                    parts.append(x_n)
                    lower.append(t_n)
                # sum_n x_in <= X_i / r_hat_i ("=" at the optimum: the cuts favour large x_in)
                row(-inf, 0, [(v, 1) for v in parts] + [(v, -a) for v, a in x_terms])
                # tau_i >= sum_n t_in
                row(0, inf, [(tau[i], sigma[i])] + [(v, -1) for v in lower])
            else:
                for x0 in _tangent_points(r[-1], r[:n_max[i]].sum(), 6):
                    # tau_i >= 2 / x0 - (X_i / r_hat_i) / x0^2
                    row(2.0 / x0, inf, [(tau[i], sigma[i])] + [(v, a / (x0 * x0)) for v, a in x_terms])

    # ---------------------------------------------------------------- objective
    # (1 / (S * scale)) * sum_i (w_i / r_hat_i * tau_i + sum_n comm_time[i, n] u_in
    #                           + restart_cost_i (1 - keep_i))   (jobs whose restart is weighed)
    # + offset: the restart costs every placement pays, added to value and bound after the solve
    objective = solver.Objective()
    for i in range(S):
        objective.SetCoefficient(tau[i], coef[i] * sigma[i])
        if u[i] is not None and w[i] is None:
            for n, v in u[i].items():
                objective.SetCoefficient(v, problem.comm_time[i, n] / (S * scale))
        elif u[i] is not None:  # the ring at the bandwidth of the job's level (w: size and level)
            for (n, d), v in w[i].items():
                b = topo.bandwidth if d < 0 else domains[d][1]
                comm = float(problem.comm_model.at_bandwidth(i, n, b))
                objective.SetCoefficient(v, comm / (S * scale))
        if weighed[i]:
            objective.SetCoefficient(keep[i], -float(problem.restart_cost[i]) / (S * scale))
    if any(weighed):
        objective.SetOffset(sum(float(problem.restart_cost[i]) for i in range(S) if weighed[i]) / (S * scale))
    objective.SetMinimization()
    _check_clock(deadline)
    if (topo is not None or problem.has_quota) and upper is not None and solver_id != "HIGHS":
        # the incumbent as a start (only with a topology or a binding quota: the flat model's placements
        # stay bit for bit as before; not for HiGHS, which OR-Tools 9.15 crashes with a hint: a
        # segmentation fault)
        _milp_hint(solver, problem, upper, members, items, z, u, level, w, keep, domains)
    handles = {"z": z, "items": items, "members": members, "scale": scale, "offset": offset, "n_classes": C,
               "nnz": nnz[0], "n_keep": sum(v is not None for v in keep), "n_forced_keep": int(sum(forced_keep)),
               "sizes_kept": int(sum(len(s) for s in sizes)),
               "sizes_usable": int(sum(min(c, r.size, int(m)) - int(lo) + 1
                                       for c, r, m, lo in zip(cap, r_sorted, problem.max_workers, n_lo)))}
    return solver, handles


def _milp_hint(solver, problem, upper, members, items, z, u, level, w, keep, domains):
    """Give the solver the incumbent ``upper`` as a (partial) start: its bits, sizes, levels and keeps.

    Its class counts, sizes and the smallest modelled domain holding each job
    (the top level when that domain is not in the model) set every binary and
    ``w``; the solver completes the continuous rest.  Entries the pruned model
    cannot take (a size it left out) are skipped, so a hint is never wrong,
    at worst partial.
    """
    S = problem.n_jobs
    wj = upper.worker_job
    counts = _class_counts(wj, members, S)
    n = counts.sum(axis=1)
    width = np.array([len(m) for m in members])
    gone = restarted(problem, wj)
    variables, values = [], []
    for i in range(S):
        for j, (c, b, _) in enumerate(items[i]):
            variables.append(z[i][j])
            values.append(float((int(counts[i, c]) >> b) & 1))
        if u[i] is not None:
            if int(n[i]) not in u[i]:
                continue
            for m, v in u[i].items():
                variables.append(v)
                values.append(float(m == n[i]))
        if level[i]:
            inside = [d for d in level[i] if not counts[i][~domains[d][0]].any()]
            # the domains holding the job are nested: the smallest has the fewest workers
            d0 = min(inside, key=lambda d: int(width[domains[d][0]].sum())) if inside else -1
            for d, v in level[i].items():
                variables.append(v)
                values.append(float(d == d0))
            for (m, d), v in w[i].items():
                variables.append(v)
                values.append(float(m == n[i] and d == d0))
        if keep[i] is not None:
            variables.append(keep[i])
            values.append(float(not gone[i]))
    solver.SetHint(variables, values)


def _milp_domains(topology, members):
    """The network domains a job of the MILP can be confined to: ``[(in_domain, bandwidth)]``.

    ``in_domain`` is a (C,) bool mask of the classes (``members``, each in one
    node) inside it.  Every node that holds a class, and every rack holding
    classes of two nodes or more (a rack of one node prices as that node);
    only domains faster than the top level (confining a job to a slower one
    never pays in the model).  The model prices a job at its cheapest level
    that holds its workers: its true cost when every domain is at least as fast
    as the domains holding it (nodes inside racks inside the top); otherwise a
    job may be priced below it, which the check of every result (:func:`_verify`)
    reports.
    """
    cls_node = np.array([int(topology.node[m[0]]) for m in members], dtype=np.int64)
    out = []
    for v in np.unique(cls_node):
        b = float(topology.node_bandwidth[v])
        if b > topology.bandwidth:
            out.append((cls_node == v, b))
    if topology.rack is not None:
        cls_rack = topology.rack[cls_node]
        for r in np.unique(cls_rack):
            b = float(topology.rack_bandwidth[r])
            if np.unique(cls_node[cls_rack == r]).size >= 2 and b > topology.bandwidth:
                out.append((cls_rack == r, b))
    return out


def _jct_caps(problem, upper):
    """(S,): the largest JCT_i, restart loss excluded, of a placement at least as good as ``upper``.

    ``upper`` is a :class:`~hetplace.placement.Placement` (or None).  Every
    placement has ``S * mean = sum_j (JCT_j + loss_j)`` with ``JCT_j >=
    jct_alone_j`` and ``loss_j = restart_cost_j`` for every running job that
    cannot keep its workers (it restarts in every placement), so
    ``JCT_i <= T - sum_{j != i} jct_alone_j`` with ``T`` the total of ``upper``
    without those forced losses (summed without them, so a 1e30 s forced loss
    does not swamp the JCTs).  The slack (1e-9 of ``T``) absorbs round-off.
    ``inf`` when ``upper`` is None.
    """
    if upper is None:
        return np.full(problem.n_jobs, np.inf)
    alone = problem.jct_alone
    forced = problem.running & ~problem.can_keep
    priced = price(problem, upper.worker_job)
    total = float(np.sum(priced.time) + np.sum(priced.restart_loss[~forced]))
    return total - (float(alone.sum()) - alone) + 1e-9 * total


def _tangent_points(lo, hi, count):
    """``count`` tangent points from ``lo`` to ``hi`` (geometric), none below _CUT_X_MIN."""
    if hi < _CUT_X_MIN:
        return np.empty(0)
    if lo < _CUT_X_MIN:
        lo = _CUT_X_MIN
    return np.geomspace(lo, hi, count if hi > lo else 1)


def _ortools_version():
    try:
        import ortools

        return ortools.__version__
    except Exception:  # pragma: no cover
        return "unknown"


def _solve_milp(problem, solver_key, time_limit, threads, verbose, t0, grouping="classes", cuts="size"):
    S, K = problem.n_jobs, problem.n_workers
    cells = S * (K + 1)
    if cells > MILP_MAX_CELLS:  # before anything is built: refused in microseconds
        raise InvalidOptionError(
            f"the MILP (method='milp', or 'auto' when the type DP does not apply) supports at most "
            f"MILP_MAX_CELLS = {MILP_MAX_CELLS:,} cells n_jobs * (n_workers + 1); this problem has {S:,} jobs "
            f"on {K:,} workers = {cells:,} cells (each dense table it reads would take {cells * 8 / 2**20:,.0f} MiB, "
            "and neither its greedy incumbent nor its model could be built in a useful time). Use "
            "place(problem, method='smp'), which works on worker classes, or place the jobs in several rounds."
        )
    pywraplp = _load_ortools()
    solver_id, solver_name = SOLVERS[solver_key]
    deadline = math.inf if time_limit is None else t0 + time_limit
    tol = _CHECK_REL[solver_name]
    info = {"formulation": grouping, "tangent_cuts": cuts}

    # ---------------------------------------------------------------- incumbent
    # the greedy baseline improved by local moves: feasible, never claimed optimal; the
    # closer it is to the optimum, the tighter the pruning of _build_milp.  Beyond
    # _INCUMBENT_ALWAYS_CELLS it is built only when its predicted time fits what is left
    need = cells * _INCUMBENT_SECONDS_PER_CELL
    if cells > _INCUMBENT_ALWAYS_CELLS and time.perf_counter() + need > deadline:
        weak_bound = float(np.mean(problem.jct_alone))  # class-wise, no dense table
        msg = (f"time_limit={time_limit} s cannot cover the greedy incumbent of {S:,} jobs on {K:,} workers "
               f"(dense tables of {cells:,} cells, about {need:.2g} s), so {solver_name} never ran; no placement, "
               f"and the bound is mean(jct_alone). Allow time_limit >= about {need + 1:.0f} s, or use "
               "place(problem, method='smp')")
        info.update(incumbent=None, build_time=time.perf_counter() - t0)
        if verbose:
            print(f"{solver_name} MILP: {msg}")
        return ExactResult("no_solution", msg, None, weak_bound, time.perf_counter() - t0, "milp", solver_name,
                           info)
    incumbent = _incumbent(problem)
    if problem.topology is not None or (problem.has_quota and time_limit is None):
        # the greedy baseline ignores the network; SMP's placement (seed 0) is often far better,
        # and a better incumbent prunes more sizes and starts the solver closer.  With a binding
        # quota: only when SMP's placement is within the quotas (_smp_seed0 returns None otherwise),
        # and only without a time_limit, which SMP's search does not watch
        smp = _smp_seed0(problem)
        if smp is not None and smp.mean_jct < incumbent.mean_jct:
            incumbent = smp
    incumbent = _improve_by_moves(problem, incumbent, 1e-9, deadline=deadline - cells * _MOVE_SECONDS_PER_CELL)
    weak_bound = float(np.mean(problem.jct_alone))  # every job alone: a valid lower bound
    info["incumbent_objective"] = incumbent.mean_jct

    def out_of_time(stage):
        msg = (f"time_limit={time_limit} s was used up {stage}, before {solver_name} could run; "
               "the placement returned is the greedy baseline (improved by single-worker moves), "
               "not an optimum, and the bound is mean(jct_alone)")
        info["incumbent"] = "greedy"
        info["build_time"] = time.perf_counter() - t0
        if verbose:
            print(f"{solver_name} MILP: {msg}")
        return ExactResult("time_limit", msg, incumbent, weak_bound, time.perf_counter() - t0,
                           "milp", solver_name, info)

    if time.perf_counter() > deadline:
        return out_of_time("by the greedy incumbent")
    try:
        solver, h = _build_milp(pywraplp, solver_id, problem, upper=incumbent,
                                deadline=deadline, grouping=grouping, cuts=cuts)
    except _BudgetSpent:
        return out_of_time("while building the model")
    build_time = time.perf_counter() - t0

    # ---------------------------------------------------------------- solve
    if verbose:
        solver.EnableOutput()
    else:
        solver.SuppressOutput()
    if time_limit is not None:
        # the limit covers the whole call: the solver gets what is left once its model
        # set-up (copying the model in, before its own clock starts) is set aside
        reserve = h["nnz"] * _SETUP_SECONDS_PER_NONZERO[solver_name]
        info["setup_reserve"] = reserve
        remaining = min(deadline - time.perf_counter() - reserve, _MAX_SOLVER_SECONDS)
        if remaining <= 0.0:
            return out_of_time(f"by the model build ({build_time:.3g} s; {solver_name} would need "
                               f"about {reserve:.2g} s more to load it)")
        limit_ms = max(1, int(remaining * 1000))
        solver.SetTimeLimit(limit_ms)
    else:
        limit_ms = None
    if threads is not None and solver_key != "highs":
        solver.SetNumThreads(threads)
    solver.SetSolverSpecificParametersAsString(_solver_parameters(solver_key, threads, verbose))
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, _REL_GAP)
    code, nodes = _run_solver(pywraplp, solver, solver_key, params, limit_ms, h["nnz"], verbose)
    solve_time = time.perf_counter() - t0 - build_time

    # ---------------------------------------------------------------- check status
    info.update({
        "n_variables": solver.NumVariables(),
        "n_constraints": solver.NumConstraints(),
        "n_classes": h["n_classes"],
        "sizes_kept": h["sizes_kept"],
        "sizes_usable": h["sizes_usable"],
        "n_keep": h["n_keep"],
        "n_forced_keep": h["n_forced_keep"],
        "build_time": build_time,
        "solve_time": solve_time,
        "solver_status_code": int(code),
    })
    if nodes is not None:
        info["nodes"] = nodes
    elif solver_key != "cp-sat":
        try:
            info["nodes"] = int(solver.nodes())
        except Exception:  # pragma: no cover - not every backend reports nodes
            pass
    placement, milp_objective = None, None
    if code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        counts = np.zeros((problem.n_jobs, h["n_classes"]), dtype=np.int64)
        for i, row in enumerate(h["items"]):
            for j, (c, b, _) in enumerate(row):
                if h["z"][i][j].solution_value() > 0.5:
                    counts[i, c] += 2 ** b
        worker_job = realise_counts(problem, counts, h["members"])
        milp_objective = solver.Objective().Value() * h["scale"] + h["offset"]
        info["milp_objective"] = milp_objective
        if is_feasible(problem, worker_job):
            placement = evaluate(problem, worker_job, method="exact", info=info)
    solver_bound = None
    if solver_key != "highs" or code == pywraplp.Solver.OPTIMAL:
        try:
            bb = solver.Objective().BestBound()
        except Exception:  # pragma: no cover
            bb = float("nan")
        if np.isfinite(bb):
            solver_bound = bb * h["scale"] + h["offset"]
    info["solver_bound"] = solver_bound
    bound = weak_bound if solver_bound is None else max(weak_bound, solver_bound)

    if code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE) and placement is None:
        status = "error"
        msg = (f"{solver_name} returned a placement that breaks the model's constraints "
               "(a numerical failure); nothing is returned")
        bound = None
    elif code == pywraplp.Solver.OPTIMAL:
        status, msg = "optimal", f"optimal ({solver_name} MILP, relative gap limit {_REL_GAP:g})"
    elif code == pywraplp.Solver.FEASIBLE:
        status = "feasible"
        msg = f"{solver_name} stopped at a limit (time_limit={time_limit}); incumbent returned"
        if solver_key == "highs":
            msg += "; bound is mean(jct_alone) because OR-Tools does not pass HiGHS's dual bound"
    elif code == pywraplp.Solver.INFEASIBLE:
        # every valid Problem is feasible: the greedy incumbent is the witness
        status, bound = "error", None
        msg = (f"{solver_name} reported the MILP infeasible, but the greedy baseline places every job "
               f"(mean JCT {incumbent.mean_jct:.6g} s): a numerical failure of the solver; "
               "try another solver=")
    elif time_limit is not None and code not in (pywraplp.Solver.ABNORMAL, pywraplp.Solver.MODEL_INVALID,
                                                  pywraplp.Solver.UNBOUNDED):
        # NOT_SOLVED, or HiGHS's "unknown" (99): the limit came before any incumbent
        status = "no_solution"
        msg = f"{solver_name} found no placement within time_limit={time_limit} s"
    else:
        codes = ("UNBOUNDED", "ABNORMAL", "NOT_SOLVED", "MODEL_INVALID")
        names = {getattr(pywraplp.Solver, n): n for n in codes}
        status = "error"
        msg = f"{solver_name} failed with status {names.get(code, code)}; try another solver="
        bound = None

    # ---------------------------------------------------------------- verify
    if placement is not None:
        placement, status, msg = _verify(problem, placement, status, msg, milp_objective, bound,
                                         incumbent, tol, solver_name, deadline, info)
    if verbose:
        print(f"{solver_name} MILP: {msg}; build {build_time:.3f} s, solve {solve_time:.3f} s")
    return ExactResult(status, msg, placement, bound, time.perf_counter() - t0, "milp", solver_name, info)


def _run_solver(pywraplp, solver, solver_key, params, limit_ms, nnz, verbose):
    """``solver.Solve(params)`` so that Ctrl-C stops it; returns ``(code, nodes or None)``.

    The solve runs in a worker thread (:func:`hetplace._interrupt.call`) and
    SCIP and CP-SAT have their own SIGINT handling switched off
    (:func:`_solver_parameters`), so a Ctrl-C raises ``KeyboardInterrupt``
    here once the solver has stopped.  CP-SAT is stopped by ``InterruptSolve``
    (within milliseconds).  HiGHS cannot be interrupted through ``pywraplp``,
    and SCIP's ``InterruptSolve`` waits while OR-Tools holds interruptions
    (measured: up to 4.5 s into a solve): they run here for at most
    :data:`_SLICE_MS` (a Ctrl-C waits for the slice to end), and a solve that
    needs longer starts again in a child process (:mod:`hetplace._milp_child`,
    the same model and parameters, so the same result) with the time left,
    which a Ctrl-C kills.  ``nodes`` is the child's node count (None when the
    solve ran here).  The child's time limit is what is left of ``limit_ms``
    after the slice, its start (:data:`_CHILD_START_SECONDS`) and its model
    set-up (``nnz`` coefficients at ``_SETUP_SECONDS_PER_NONZERO``).
    """
    if solver_key == "cp-sat":
        return _interrupt.call(lambda: solver.Solve(params), interrupt=solver.InterruptSolve), None
    start = time.perf_counter()
    if limit_ms is not None and limit_ms <= _SLICE_MS:
        return _interrupt.call(lambda: solver.Solve(params)), None
    solver.SetTimeLimit(_SLICE_MS)
    code = _interrupt.call(lambda: solver.Solve(params))
    if code not in (pywraplp.Solver.FEASIBLE, pywraplp.Solver.NOT_SOLVED, _HIGHS_UNKNOWN):
        return code, None  # finished within the slice
    solver_id, name = SOLVERS[solver_key]
    if limit_ms is not None:
        spent = time.perf_counter() - start + _CHILD_START_SECONDS + nnz * _SETUP_SECONDS_PER_NONZERO[name]
        limit_ms = int(limit_ms - spent * 1000)
        if limit_ms <= 0:
            return code, None
    return _solve_in_child(pywraplp, solver, solver_key, solver_id, params, limit_ms, verbose)


def _solve_in_child(pywraplp, solver, solver_key, solver_id, params, limit_ms, verbose):
    """Solve ``solver``'s model in a child process (:mod:`hetplace._milp_child`); load its solution here.

    Returns ``(code, nodes)``.  A Ctrl-C kills the child (and raises); a child
    that outlives its time limit by :data:`_CHILD_GRACE_SECONDS` is killed and
    reported as ``NOT_SOLVED``; one that fails raises :class:`SolverError`.
    """
    import pickle
    import subprocess
    import sys

    from ortools.linear_solver import linear_solver_pb2

    model = linear_solver_pb2.MPModelProto()
    solver.ExportModelToProto(model)
    request = pickle.dumps({"solver": solver_id, "model": model.SerializeToString(), "verbose": verbose,
                            "parameters": _solver_parameters(solver_key, None, verbose),
                            "time_limit_ms": limit_ms,
                            "rel_gap": params.GetDoubleParam(params.RELATIVE_MIP_GAP)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_milp_child.py")
    bootstrap = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
    child = subprocess.Popen([sys.executable, "-c", bootstrap, path], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)

    def exchange():
        child.stdin.write(request)
        child.stdin.flush()  # stdin stays open: the child exits when it closes (we died)
        return child.stdout.read()

    deadline = math.inf if limit_ms is None else time.perf_counter() + limit_ms / 1000 + _CHILD_GRACE_SECONDS
    try:
        reply = _interrupt.call(exchange, deadline=deadline, interrupt=child.kill)
    finally:
        child.kill()  # no-op once it has exited
        child.stdin.close()
        child.stdout.close()
        child.wait()
    if not reply:
        if limit_ms is not None and time.perf_counter() > deadline:
            return pywraplp.Solver.NOT_SOLVED, None
        raise SolverError(f"the {solver_id} child process ended without an answer (exit code "
                          f"{child.returncode}); its error is above on stderr")
    answer = pickle.loads(reply)
    if answer["code"] in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        response = linear_solver_pb2.MPSolutionResponse()
        response.ParseFromString(answer["response"])
        if not solver.LoadSolutionFromProto(response):  # pragma: no cover - the same model
            raise SolverError(f"the {solver_id} child's solution did not load into the model")
    return answer["code"], answer["nodes"]


def _verify(problem, placement, status, msg, milp_objective, bound, incumbent, tol, solver_name,
            deadline, info):
    """Check a solver's claim against :func:`evaluate`; never let a wrong "optimal" through.

    An ``"optimal"`` stays optimal only when (relative tolerance ``tol``):
    the solver's value of its placement equals the re-evaluated mean JCT; the
    bound does not exceed it; the gap to the bound is at most ``tol``; and
    neither the greedy incumbent nor a local-search step (single-worker moves,
    and swaps: the polish kernel) beats it.  Otherwise it becomes ``"feasible"``
    with the best placement found and ``message`` says why.  For ``"feasible"``
    results the better of the solver's and the greedy placement is returned.
    """
    true = placement.mean_jct
    reasons = []
    if status == "optimal":
        if abs(milp_objective - true) > tol * true:
            reasons.append(f"{solver_name} valued its placement at {milp_objective:.9g} s but it "
                           f"evaluates to {true:.9g} s")
        if bound is not None and bound > true * (1.0 + tol):
            reasons.append(f"the bound {bound:.9g} s exceeds the objective {true:.9g} s (a solver "
                           f"fault: that bound is not valid; mean(jct_alone) = "
                           f"{float(np.mean(problem.jct_alone)):.9g} s is)")
        elif bound is not None and true - bound > tol * true:
            reasons.append(f"the gap to the bound is {(true - bound) / true:.3g}")
    best = placement
    if incumbent.mean_jct < best.mean_jct * (1.0 - tol):
        if status == "optimal":
            reasons.append(f"the greedy baseline is better ({incumbent.mean_jct:.9g} s vs {true:.9g} s)")
        best = evaluate(problem, incumbent.worker_job, method="exact", info=info)
        info["incumbent"] = "greedy"
    if status == "optimal":
        moved = _improve_by_moves(problem, best, tol, deadline=max(deadline, time.perf_counter() + 1.0))
        if moved is not best:
            reasons.append(f"local moves lower the mean JCT to {moved.mean_jct:.9g} s")
            best = moved
            info["incumbent"] = "local search"
    if reasons:
        info["verification"] = reasons
        status = "feasible"
        msg = (f"{solver_name} reported optimal, but the check failed: " + "; ".join(reasons)
               + f". Not an optimum (tolerance {tol:g}); the best placement found is returned"
               + (" (with its true mean JCT)" if best is not placement else ""))
    elif best is not placement:
        msg += "; the greedy baseline beat the solver's incumbent and is returned"
    return best, status, msg


# ---------------------------------------------------------------- pruned type DP
def _pruned_dp_refusal(problem):
    """Why ``method="pruned-dp"`` cannot run on ``problem`` (None when it can)."""
    why = (_topology_refusal(problem, "pruned-dp") or _speed_refusal(problem, "pruned-dp")
           or _quota_refusal(problem, "pruned-dp"))
    if why is not None:
        return why
    vectors, _ = dp_size(problem)
    if vectors > PRUNED_DP_MAX_VECTORS or vectors * problem.n_jobs > PRUNED_DP_MAX_CELLS:
        return (
            f"method='pruned-dp' prices every job's prod(type_counts + 1) = {vectors:,} count vectors "
            f"(n_jobs * vectors = {vectors * problem.n_jobs:,}); the caps are PRUNED_DP_MAX_VECTORS = "
            f"{PRUNED_DP_MAX_VECTORS:,} and PRUNED_DP_MAX_CELLS = {PRUNED_DP_MAX_CELLS:,}. "
            "Use method='milp' (or method='auto')."
        )
    return None


def _solve_pruned_dp(problem, t0, time_limit, verbose):
    """The type DP restricted by the configuration LP's Lagrangian bound (docs/model.md §4.9).

    With prices ``pi >= 0`` on the types (:func:`hetplace.lower_bound`'s best),
    every placement's total JCT is at least
    ``sum_{i done} c_i(y_i) + sum_{j left} min_n [c_j(n) + pi . n] - pi . (m - used)``;
    a DP state whose value makes this exceed the incumbent's total cannot lead to
    a better placement and is dropped, and a job's vector ``y`` whose reduced
    cost ``c_i(y) + pi . y - min_n [c_i(n) + pi . n]`` exceeds the incumbent's
    total minus the Lagrangian bound is never tried.  What survives is searched
    exactly, so the result is the optimum (or the incumbent, proven optimal).
    """
    from .bound import lower_bound

    deadline = math.inf if time_limit is None else t0 + time_limit
    S, G = problem.n_jobs, problem.n_types
    m = np.asarray(problem.available_counts, dtype=np.int64)
    radix = m + 1
    stride = np.cumprod(np.concatenate(([1], radix[:-1]))).astype(np.int64)
    members = [np.flatnonzero((problem.worker_type == g) & problem.available) for g in range(G)]
    penalty, keep = _dp_keep(problem, members, stride)
    V = int(np.prod(radix))
    info = {"vectors": V}

    def left():
        return None if time_limit is None else max(deadline - time.perf_counter(), 1e-3)

    # the bound's prices, and the incumbent: SMP's placement or the bound's (greedy), the better
    times = info["seconds"] = {}
    t = time.perf_counter()
    lb = lower_bound(problem, time_limit=left())
    times["bound"] = time.perf_counter() - t
    info["bound_status"] = lb.status
    incumbent = _smp_seed0(problem)
    info["incumbent"] = "smp"
    if incumbent is None or (lb.placement is not None and lb.placement.mean_jct < incumbent.mean_jct):
        incumbent, info["incumbent"] = lb.placement, "greedy"
    pi = np.zeros(G)
    prices = lb.info.get("prices")
    if prices is not None and not lb.info.get("rounded"):
        for g, price in zip(prices["type"], prices["price"]):
            pi[g] = max(float(price), 0.0)  # any pi >= 0 gives a valid bound
    U = float(incumbent.mean_jct) * S
    tol = 1e-9 * abs(U)  # float rounding of the sums below

    # every job's reduced costs over all count vectors: its minimum, then its candidates
    idx = np.arange(V, dtype=np.int64)
    vec = (idx[:, None] // stride[None, :]) % radix[None, :]  # (V, G), type 0 least significant
    size = vec.sum(axis=1)
    vpi = vec @ pi
    rho = np.asarray(problem.throughput, dtype=np.float64)

    def costs(i):
        X = vec @ rho[i]
        unusable = (vec[:, rho[i] <= 0].sum(axis=1) > 0) | (size == 0)
        with np.errstate(divide="ignore"):
            c = job_time(problem, np.full(V, i), X, size)
        c = np.where(unusable, np.inf, c)
        if penalty[i] != 0.0:
            c = c + np.where(idx == keep[i], 0.0, penalty[i])
        return c

    t = time.perf_counter()
    mins = np.empty(S)
    for i in range(S):
        if time.perf_counter() > deadline:
            return _pruned_stop(problem, t0, time_limit, incumbent, lb, None, info, verbose, "pricing")
        mins[i] = float(np.min(costs(i) + vpi))
    L = float(mins.sum() - pi @ m)
    info["lagrangian_bound"] = L / S
    cands = []
    for i in range(S):
        c = costs(i)
        red = c + vpi - mins[i]
        pick = np.flatnonzero(red <= (U - L) + tol)
        srt = np.argsort(red[pick], kind="stable")
        cands.append((pick[srt], c[pick][srt], red[pick][srt]))
    info["candidates"] = int(sum(p.size for p, _, _ in cands))
    times["pricing"] = time.perf_counter() - t
    t = time.perf_counter()

    def sparse_dp(T):
        """Best placement of total at most ``T`` (None if there is none), or a reason to stop."""
        use = [int(np.searchsorted(red, (T - L) + tol, side="right")) for _, _, red in cands]
        order = np.argsort(use, kind="stable")  # jobs with the fewest candidates first
        suffix = np.concatenate((np.cumsum(mins[order][::-1])[::-1], [0.0]))
        s_idx = np.zeros(1, dtype=np.int64)
        s_val = np.zeros(1)
        s_dig = np.zeros((1, G), dtype=np.int64)
        stages = []  # per stage: (parent position, candidate vector index) of every state
        counts = []
        round_info = {"target": T / S, "candidates": int(sum(use)), "stage_states": counts}
        rounds.append(round_info)
        for k, i in enumerate(order):
            pick, cost, _ = cands[i]
            parts = []
            for y, cy in zip(pick[:use[i]], cost[:use[i]]):
                dig = s_dig + vec[y]
                fit = np.all(dig <= m, axis=1)
                val = s_val + cy
                bound = val + dig @ pi + suffix[k + 1] - pi @ m
                ok = np.flatnonzero(fit & (bound <= T + tol))
                if ok.size:
                    parts.append((s_idx[ok] + y, val[ok], ok, np.full(ok.size, y, dtype=np.int64)))
                if time.perf_counter() > deadline:
                    return f"time_limit at stage {k}"
            if not parts:  # no placement of total at most T
                return None
            n_idx = np.concatenate([p[0] for p in parts])
            n_val = np.concatenate([p[1] for p in parts])
            n_par = np.concatenate([p[2] for p in parts])
            n_y = np.concatenate([p[3] for p in parts])
            srt = np.lexsort((n_val, n_idx))  # per state, the least value first (ties: any)
            first = srt[np.r_[True, n_idx[srt][1:] != n_idx[srt][:-1]]]
            s_idx, s_val = n_idx[first], n_val[first]
            s_dig = (s_idx[:, None] // stride[None, :]) % radix[None, :]
            stages.append((n_par[first], n_y[first]))
            counts.append(int(first.size))
            if first.size > PRUNED_DP_MAX_STATES:
                return f"stage {k}: {first.size:,} states above PRUNED_DP_MAX_STATES"
        pos = int(np.argmin(s_val))
        y = np.zeros((S, G), dtype=np.int64)
        for k in range(S - 1, -1, -1):
            par, ys = stages[k]
            y[order[k]] = vec[ys[pos]]
            pos = int(par[pos])
        return y

    # rounds of growing targets T between L and U: a round that finds a placement of total at
    # most T found the optimum; one that finds none proves every total above T
    rounds = info["rounds"] = []
    proven = L
    best = None
    for frac in _PRUNED_DP_TARGETS:
        T = L + (U - L) * frac if frac < 1 else U
        if T <= proven:
            continue
        out = sparse_dp(T)
        if isinstance(out, str):
            info["states"] = int(sum(sum(r["stage_states"]) for r in rounds))
            return _pruned_stop(problem, t0, time_limit, incumbent, lb, proven, info, verbose, out)
        if out is not None:
            best = out
            break
        proven = T - tol
    info["states"] = int(sum(sum(r["stage_states"]) for r in rounds))
    times["dp"] = time.perf_counter() - t
    placement = evaluate(problem, incumbent.worker_job, method="exact", info=info)
    if best is not None:
        found = evaluate(problem, realise_counts(problem, best, members), method="exact", info=info)
        if found.mean_jct < placement.mean_jct:
            info["incumbent"] = "pruned-dp"
            placement = found
    wall = time.perf_counter() - t0
    if verbose:
        print(f"pruned type DP: {info['candidates']:,} candidate vectors, {info['states']:,} states, {wall:.3f} s")
    return ExactResult("optimal", "optimal (type DP pruned by the configuration LP's Lagrangian bound)", placement,
                       placement.mean_jct, wall, "pruned-dp", "pruned-dp", info)


def _pruned_stop(problem, t0, time_limit, incumbent, lb, proven, info, verbose, where):
    """The incumbent with the best bound when the pruned DP stops unfinished (time or states).

    ``proven``: a total no placement is below (the Lagrangian bound, or a target a
    finished round excluded), or None."""
    bound = lb.bound if proven is None else max(lb.bound, proven / problem.n_jobs * (1 - 1e-12))
    placement = evaluate(problem, incumbent.worker_job, method="exact", info=info)
    msg = (f"the pruned type DP stopped ({where}; time_limit={time_limit}); the placement returned is "
           f"the {info['incumbent']} incumbent and the bound the configuration LP's")
    if verbose:
        print(f"pruned-dp: {msg}")
    return ExactResult("feasible", msg, placement, bound, time.perf_counter() - t0, "pruned-dp", "pruned-dp", info)
