"""A proven lower bound on the optimal mean JCT (docs/model.md §4.8): the configuration LP.

:func:`lower_bound` returns a :class:`BoundResult` whose ``bound`` no placement
of the problem beats, so any placement can be certified:
``placement.gap_to_bound(result.bound)`` is at least its true gap to the optimum.

Methods
-------
``"colgen"``
    Column generation on the configuration LP (one column per job and vector of
    worker counts by class, capacity rows per class, one convexity row per job),
    solved by OR-Tools GLOP; the bound is the best Lagrangian bound met, valid
    at every iteration.  Pricing is exact enumeration on small clusters and a
    provable relaxation (Numba kernel :func:`hetplace._core._bound_nb.price_jobs`)
    elsewhere.
``"alone"``
    ``mean(problem.jct_alone)``: every job alone on the whole cluster (instant, weak).
``"auto"``
    ``"colgen"``.
"""

import math
import time

import numpy as np

from ._cost import job_time
from ._result import Result
from ._validation import check_choice, check_positive_int, check_time_limit
from .errors import MissingDependencyError
from .placement import _check_problem, current_counts, evaluate

__all__ = ["BoundResult", "lower_bound", "METHODS", "MAX_CLASSES", "ENUM_MAX_VECTORS", "MAX_ITERATIONS", "CONVERGED_REL"]

METHODS = ("auto", "colgen", "alone")
#: Most worker classes the LP prices exactly; with more (per-worker speeds), the available
#: workers of each type are grouped into equal-size speed buckets valued at their FASTEST
#: member (a relaxation: every placement is priced at most at its true JCT, so the bound stays
#: valid).  Measured on speeds_instance(0, 4096, 256): 48 classes 2.2 s, SMP's certified gap
#: 0.86 %; 96: 5.4 s, 0.61 %; 255: no convergence in 60 s (docs/model.md §4.8).
MAX_CLASSES = 96
#: Pricing enumerates every count vector when there are at most this many (per job),
#: and at most :data:`ENUM_MAX_CELLS` (job, vector) pairs in all; else the Numba relaxation.
ENUM_MAX_VECTORS = 20_000
ENUM_MAX_CELLS = 2_000_000
#: Column-generation rounds at most (each: one LP solve and one pricing pass).
MAX_ITERATIONS = 200
#: Relative gap between the restricted master's LP value (at least the LP optimum) and the
#: Lagrangian bound (at most it) at which the LP counts as solved: the bound is then within
#: this of the LP optimum (status "optimal").
CONVERGED_REL = 1e-6
#: A column enters the master when its reduced cost is below ``-_ENTER_REL`` times the job's scale.
_ENTER_REL = 1e-9
#: The reported bound is the best Lagrangian bound times ``1 - _SAFETY_REL``, a margin for the
#: float rounding of its sums (each relative error ~1e-15).
_SAFETY_REL = 1e-12
#: Up to this many cells ``n_jobs * (n_workers + 1)`` the greedy incumbent seeds the master
#: and is returned as ``placement`` (its dense tables cost ~0.2 us a cell).
_INCUMBENT_MAX_CELLS = 2**21
#: Column generation stops when the bound rose by less than ``_FLAT_REL`` (relative) in the
#: last ``_FLAT_ROUNDS`` iterations while within ``_FLAT_LP_REL`` of the LP value (tailing
#: off; the bound stays valid).
_FLAT_ROUNDS = 20
_FLAT_REL = 1e-7
_FLAT_LP_REL = 1e-4
#: With more than this many classes per type, the prices start from the one-bucket-per-type LP.
_WARM_CLASSES_PER_TYPE = 4
#: Dual smoothing (Wentges): pricing at ``alpha * best + (1 - alpha) * LP duals``.
_SMOOTH = 0.5


class BoundResult(Result):
    """Outcome of :func:`lower_bound`.

    Attributes
    ----------
    status : str
        ``"optimal"``: the configuration LP was solved: the bound is within
        :data:`CONVERGED_REL` (relative) of the LP optimum; ``"feasible"``:
        column generation stalled or hit :data:`MAX_ITERATIONS` (the bound is
        valid, ``info["lp_gap"]`` below the restricted LP's value);
        ``"time_limit"``: ``time_limit`` ran out (the bound is valid).
    success : bool
        True when ``status == "optimal"``.
    message : str
    bound : float
        Proven lower bound on the optimal mean JCT (s), restart losses included.
    placement : Placement or None
        A feasible placement met on the way: the greedy incumbent on small
        problems (``n_jobs * (n_workers + 1) <= 2**21``), SMP's (seed 0)
        when the classes were many per type (per-worker speeds) and it is
        better; else None.
    wall_time : float
        Seconds spent in :func:`lower_bound`.
    method : str
        ``"colgen"`` or ``"alone"``.
    info : dict
        ``iterations``, ``columns``, ``lp_value`` (mean JCT units; the LP
        optimum when ``"optimal"``), ``classes``, ``rounded`` (True when speed
        buckets rounded speeds up), ``pricing`` (``"enumeration"`` or
        ``"relaxation"``), ``trace`` (bound after each iteration), ``lp_gap``
        (``lp_value / bound - 1``: how far the bound may be below the LP optimum).
    """

    FIELDS = ("bound", "placement", "wall_time", "method")
    STATUSES = ("optimal", "feasible", "time_limit")
    SUCCESS = ("optimal",)
    SHOWN = ("status", "bound", "method", "wall_time")


# ---------------------------------------------------------------- classes
def _bound_classes(problem, max_classes=None):
    """Classes of available workers for the LP.

    Returns
    -------
    rates : float64 (S, C)   per-worker throughput of job i on class c (rounded UP in buckets)
    cap : int64 (C,)         workers per class
    members : list of C int64 arrays
    rounded : bool           True when speed buckets replaced exact classes
    ctype, cspeed            type and (rounded) speed of each class
    """
    max_classes = MAX_CLASSES if max_classes is None else max_classes
    order, starts, _ = problem.worker_classes
    groups = [order[a:b] for a, b in zip(starts[:-1], starts[1:])]
    groups = [g for g in groups if problem.class_speed[g[0]] > 0]  # down workers are in no class
    if len(groups) <= max_classes:
        first = np.array([g[0] for g in groups], dtype=np.int64)
        rates = problem._class_rates(first)
        return (np.ascontiguousarray(rates), np.array([g.size for g in groups], dtype=np.int64), groups, False,
                problem.worker_type[first], problem.class_speed[first])
    types = [g for g in range(problem.n_types) if problem.available_counts[g] > 0]
    per = max(1, max_classes // len(types))
    members, tcol, speed = [], [], []
    sp = problem.class_speed
    for g in types:
        ws = np.flatnonzero((problem.worker_type == g) & problem.available)
        ws = ws[np.lexsort((ws, -sp[ws]))]  # fastest first
        for part in np.array_split(ws, min(per, ws.size)):
            members.append(np.sort(part))
            tcol.append(g)
            speed.append(sp[part[0]])  # the bucket's fastest: rounded UP
    rates = problem.throughput[:, tcol] * np.asarray(speed)[None, :]
    return (np.ascontiguousarray(rates), np.array([m.size for m in members], dtype=np.int64), members, True,
            np.asarray(tcol, dtype=np.int64), np.asarray(speed, dtype=np.float64))


def _enumerate_vectors(cap):
    """int64 (V, C): every count vector with ``0 <= n <= cap``."""
    grids = np.meshgrid(*[np.arange(c + 1) for c in cap], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64) if len(cap) else np.zeros((1, 0), np.int64)


def _column_time(problem, jobs, X, n):
    """``job_time`` of ``jobs[t]`` on ``n[t]`` workers of summed throughput ``X[t]``, as the LP prices it.

    Exact without a network topology.  With one, a column (class counts, no
    nodes) does not say which nodes the job spans, so its communication is
    the network's floor ``comm_model.floor`` (the best domain that can hold
    ``n`` workers; ``inf`` outside the size bounds): at most the true cost of
    every placement with those counts, so the bound stays valid.
    """
    if problem.topology is None:
        return job_time(problem, jobs, X, n)
    jobs, n = np.broadcast_arrays(jobs, n)
    comm = problem.comm_model.floor(jobs, n)
    comm = np.where((n > problem.max_workers[jobs]) | ((n > 0) & (n < problem.min_workers[jobs])), math.inf, comm)
    return job_time(problem, jobs, X, n, comm=comm)


def _column_costs(problem, n, rates, keep, can_keep):
    """(S,): JCT of every job ``i`` with class counts ``n[i]`` (vectorised :func:`_column_cost`; exact
    without a topology, its floor with one: :func:`_column_time`)."""
    S = problem.n_jobs
    idx = np.arange(S)
    cost = _column_time(problem, idx, np.einsum("ic,ic->i", rates, n), n.sum(axis=1))
    kept = can_keep & (n == keep).all(axis=1)
    return cost + np.where(kept, 0.0, problem.restart_cost)


def _column_cost(problem, i, n, rates, keep_vec):
    """JCT of job ``i`` with class counts ``n`` (restart loss included unless ``n`` is its kept vector;
    :func:`_column_time`)."""
    cost = float(_column_time(problem, np.array([i]), np.array([float(rates[i] @ n)]), np.array([int(n.sum())]))[0])
    if problem.restart_cost[i] > 0 and not (keep_vec is not None and np.array_equal(n, keep_vec)):
        cost += float(problem.restart_cost[i])
    return cost


# ---------------------------------------------------------------- public API
def lower_bound(problem, method: str = "auto", time_limit: "float | None" = None,
                threads: "int | None" = None) -> BoundResult:
    """A proven lower bound on the optimal mean JCT of ``problem`` (docs/model.md §4.8).

    Parameters
    ----------
    problem : Problem
        Any problem: per-worker speeds, size bounds, down workers and
        re-placement with restart costs are all accounted for.
    method : {"auto", "colgen", "alone"}, default "auto"
        ``"colgen"`` (``"auto"``): the configuration LP by column generation;
        ``"alone"``: ``mean(problem.jct_alone)``, instant and weak.
    time_limit : float, optional
        Seconds for the call; when it runs out the best bound so far is
        returned (status ``"time_limit"``; it is valid at every iteration).
        Checked between iterations, so one LP solve or pricing pass may overrun.
    threads : int, optional
        Accepted for API symmetry with :func:`hetplace.solve_exact`; the LP
        (GLOP) and the pricing kernel run on one thread.

    Returns
    -------
    BoundResult

    Raises
    ------
    InvalidProblemTypeError
        ``problem`` is not a :class:`Problem`.
    InvalidOptionError
        ``method``, ``time_limit`` or ``threads`` is not valid.

    Notes
    -----
    Classes c group interchangeable available workers (same type and speed;
    beyond :data:`MAX_CLASSES` classes, speed buckets valued at their fastest
    member), ``m_c`` of them.  The configuration LP has a column for every job
    ``i`` and integer count vector ``n`` within its size bounds, priced at the
    job's exact JCT ``work_i / (r_i . n) + comm_i(sum n)`` plus its restart
    loss unless ``n`` equals its current counts (then it may have kept its
    workers).  Every placement is a 0/1 point of this LP with at most its mean
    JCT, so the LP value -- and every Lagrangian bound
    ``L(pi) = sum_i min_n [c_i(n) + pi . n] - pi . m`` with ``pi >= 0`` -- is a
    lower bound; the per-job minimum may itself be replaced by a lower bound
    of it (the pricing relaxation).  The reported bound is the best ``L(pi)``
    over the iterations, divided by S.  With tenant quotas (docs/model.md
    §1.7, §4.10) each binding (tenant, type) adds a row
    ``sum_{i of t} sum_{c of type g} n_c x_in <= quota_cap[t, g]``, priced
    like a capacity row (the pricing kernel then runs once per distinct
    price vector the jobs pay).  With ``Problem(weight=)`` it bounds
    the weighted objective: the bound of ``problem.objective_problem`` times
    ``problem.objective_scale`` (docs/model.md §1.5).
    """
    _check_problem(problem)
    method = check_choice("method", method, METHODS)
    time_limit = check_time_limit(time_limit)
    threads = check_positive_int("threads", threads, maximum=1024)
    t0 = time.perf_counter()
    if problem.weight is not None:  # a bound of the scaled problem, in weighted units (docs/model.md §1.5)
        res = lower_bound(problem.objective_problem, method, time_limit, threads)
        placement = None if res.placement is None else evaluate(problem, res.placement.worker_job,
                                                                method=res.placement.method, info=res.placement.info)
        info = dict(res.info)
        scale = problem.objective_scale
        info["lp_value"] = None if info.get("lp_value") is None else info["lp_value"] * scale
        if info.get("trace") is not None:
            info["trace"] = [b * scale for b in info["trace"]]
        return BoundResult(res.status, res.message, info, bound=res.bound * scale * (1 - _SAFETY_REL),
                           placement=placement, wall_time=time.perf_counter() - t0, method=res.method)
    if method == "alone":
        bound = float(np.mean(problem.jct_alone))
        return BoundResult("feasible", "mean(jct_alone): every job alone on the whole cluster",
                           {"lp_value": None}, bound=bound * (1 - _SAFETY_REL), placement=None,
                           wall_time=time.perf_counter() - t0, method="alone")
    return _colgen(problem, time_limit, t0)


def _load_glop():
    try:
        from ortools.linear_solver import pywraplp
    except ImportError:  # pragma: no cover - ortools is a hard dependency
        raise MissingDependencyError("hetplace.lower_bound needs OR-Tools: pip install 'ortools>=9.15'") from None
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:  # pragma: no cover
        raise MissingDependencyError("this OR-Tools build lacks GLOP; reinstall ortools (pip install ortools)")
    return pywraplp, solver


class _Master:
    """The restricted master LP: convexity rows (= 1), capacity rows (<= m_c) and quota rows.

    ``quota`` (optional) is a :class:`_QuotaRows`: its rows follow the
    capacity rows, so the prices are the classes' and then the quota rows'.
    """

    def __init__(self, S, cap, big, quota=None):
        self.pywraplp, self.solver = _load_glop()
        inf = self.solver.infinity()
        self.conv = [self.solver.Constraint(1.0, 1.0) for _ in range(S)]
        self.capr = [self.solver.Constraint(-inf, float(c)) for c in cap]
        self.quota = quota
        if quota is not None:  # after the capacity rows: the prices are (classes, then quota rows)
            self.capr += [self.solver.Constraint(-inf, float(q)) for q in quota.rhs]
        self.obj = self.solver.Objective()
        self.obj.SetMinimization()
        self.cols = [dict() for _ in range(S)]  # job -> {count tuple: variable}
        self.n_cols = 0
        for i in range(S):  # artificial columns: the master is always feasible
            v = self.solver.NumVar(0.0, inf, "")
            self.conv[i].SetCoefficient(v, 1.0)
            self.obj.SetCoefficient(v, float(big[i]))

    def add(self, i, n, cost):
        key = np.ascontiguousarray(n, dtype=np.int64).tobytes()
        if key in self.cols[i] or not math.isfinite(cost):
            return False
        v = self.solver.NumVar(0.0, self.solver.infinity(), "")
        self.cols[i][key] = v
        self.n_cols += 1
        self.conv[i].SetCoefficient(v, 1.0)
        for c in np.flatnonzero(n):
            self.capr[c].SetCoefficient(v, float(n[c]))
        if self.quota is not None:
            for q, a in self.quota.column(i, n):
                self.capr[len(n) + q].SetCoefficient(v, a)
        self.obj.SetCoefficient(v, float(cost))
        return True

    def solve(self):
        code = self.solver.Solve()
        if code != self.pywraplp.Solver.OPTIMAL:
            return None
        pi = np.array([max(0.0, -c.dual_value()) for c in self.capr])
        mu = np.array([c.dual_value() for c in self.conv])
        return self.obj.Value(), pi, mu

    def solution(self):
        """(job, counts, x) of every column with x > 0."""
        return [(i, np.frombuffer(k, dtype=np.int64), v.solution_value()) for i in range(len(self.cols))
                for k, v in self.cols[i].items() if v.solution_value() > 1e-9]


def _colgen(problem, time_limit, t0, max_classes=None, state=None):
    from ._core._bound_nb import price_jobs

    deadline = math.inf if time_limit is None else t0 + time_limit
    S = problem.n_jobs
    rates, cap, members, rounded, ctype, cspeed = _bound_classes(problem, max_classes)
    C = cap.size
    keep = current_counts(problem, members)  # (S, C)
    can_keep = problem.can_keep.copy()
    restart = problem.restart_cost.astype(np.float64)
    work = problem.work.astype(np.float64)
    if problem.topology is None:
        coef = problem.comm_coef.astype(np.float64)
    else:
        # the relaxation prices coef * 2 (n-1)/n: with a topology, coef at the best bandwidth of a
        # domain of two workers or more, at most the floor (and so the true cost) of every size
        scale2 = problem.comm_model.floor_scale[2] if problem.n_workers >= 2 else 0.0
        coef = np.ascontiguousarray(problem.comm_model.volume * scale2, dtype=np.float64)
    lo = problem.min_workers.astype(np.int64)
    hi = problem.max_workers.astype(np.int64)
    scale = float(np.mean(problem.jct_alone))  # costs are divided by it inside the LP (O(1) numbers)

    # pricing: exact enumeration on small clusters, else the Numba relaxation
    V = math.prod(int(c) + 1 for c in cap)
    enum = V <= ENUM_MAX_VECTORS and V * S <= ENUM_MAX_CELLS
    if enum:
        vec = _enumerate_vectors(cap)
        N = vec.sum(axis=1)
        X = rates @ vec.T  # (S, V)
        bad_class = ((rates <= 0).astype(np.int64) @ vec.T) > 0  # (S, V): a worker of an unusable class
        ok = (~bad_class) & (N[None, :] >= np.maximum(lo, 1)[:, None]) & (N[None, :] <= hi[:, None])
        with np.errstate(divide="ignore"):
            base = np.where(ok, _column_time(problem, np.arange(S)[:, None], X, N[None, :]), np.inf)  # (S, V), no restart
        kept_idx = np.full(S, -1)
        radix = np.cumprod(np.r_[1, (cap + 1)[::-1][:-1]])[::-1]
        for i in np.flatnonzero(can_keep):
            kept_idx[i] = int(keep[i] @ radix)
        full = base + restart[:, None]
        has = kept_idx >= 0
        full[np.flatnonzero(has), kept_idx[has]] = base[np.flatnonzero(has), kept_idx[has]]

    # tenant quotas (docs/model.md §1.7, §4.10): a row per binding (tenant, type), priced like a
    # capacity row (``pi`` holds the classes' prices, then the quota rows')
    quota = _QuotaRows(problem, cap, ctype) if problem.has_quota else None
    if quota is not None and quota.Q == 0:
        quota = None
    rhs = cap if quota is None else np.concatenate((cap, quota.rhs))  # the right sides the prices multiply

    def row_counts(n):
        """(S, C [+ Q]): each job's coefficients in the capacity (and quota) rows."""
        return n if quota is None else np.concatenate((n, quota.counts(n)), axis=1)

    def job_prices(pi):
        """(S, C): what one worker of each class costs each job: its class's price, plus its tenant's
        quota row's for the class's type."""
        return np.broadcast_to(pi[None, :C], (S, C)) if quota is None else pi[None, :C] + quota.class_prices(pi[C:])

    def price(pi, start):
        """(lb (S,), best vectors (S, C), their exact costs (S,), sizes (S,)) at prices ``pi``."""
        if enum and quota is not None:
            # job i pays pi_c per worker of class c and the quota rows' prices of its tenant
            val = full + job_prices(pi) @ vec.T
            j = np.argmin(val, axis=1)
            lb = val[np.arange(S), j]
            n = vec[j]
            return lb, n, full[np.arange(S), j], N[j]
        if enum:
            val = full + (vec @ pi)[None, :]
            j = np.argmin(val, axis=1)
            lb = val[np.arange(S), j]
            n = vec[j]
            return lb, n, full[np.arange(S), j], N[j]
        lb = np.empty(S)
        n = np.zeros((S, C), dtype=np.int64)
        val = np.empty(S)
        size = np.empty(S, dtype=np.int64)
        if quota is None:
            price_jobs(rates, work, coef, lo, hi, cap, np.ascontiguousarray(pi, dtype=np.float64),
                       np.ascontiguousarray(start, dtype=np.int64), lb, n, val, size)
        else:  # the kernel takes one price vector: one call per distinct vector the jobs pay
            P = job_prices(pi)
            _, first, group = np.unique(P, axis=0, return_index=True, return_inverse=True)
            for g, row in enumerate(first.tolist()):
                jobs = np.flatnonzero(group.ravel() == g)
                part = [np.empty(jobs.size), np.zeros((jobs.size, C), dtype=np.int64), np.empty(jobs.size),
                        np.empty(jobs.size, dtype=np.int64)]
                price_jobs(rates[jobs], work[jobs], coef[jobs], lo[jobs], hi[jobs], cap,
                           np.ascontiguousarray(P[row], dtype=np.float64),
                           np.ascontiguousarray(start[jobs], dtype=np.int64), *part)
                lb[jobs], n[jobs], val[jobs], size[jobs] = part
        lb = lb + restart  # a restarted job pays restart; the kept vector is priced separately
        cost = _column_costs(problem, n, rates, keep, can_keep)
        kv = np.full(S, np.inf)
        if quota is None:
            for i in np.flatnonzero(can_keep):
                kv[i] = _column_cost(problem, i, keep[i], rates, keep[i]) + float(keep[i] @ pi)
            better = kv < cost + n @ pi
            n[better] = keep[better]
            cost[better] = (kv - keep @ pi)[better]
            return np.minimum(lb, kv), n, cost, size
        P = job_prices(pi)
        for i in np.flatnonzero(can_keep):
            kv[i] = _column_cost(problem, i, keep[i], rates, keep[i]) + float(keep[i] @ P[i])
        better = kv < cost + np.einsum("sc,sc->s", n, P)
        n[better] = keep[better]
        cost[better] = (kv - np.einsum("sc,sc->s", keep, P))[better]
        return np.minimum(lb, kv), n, cost, size

    # the master, seeded by the greedy incumbent (small problems) and the kept placements
    big = 10.0 * np.maximum(problem.jct_alone + restart, 1e-300) / scale + 10.0
    master = _Master(S, cap, big, quota)
    placement = None
    if S * (problem.n_workers + 1) <= _INCUMBENT_MAX_CELLS:
        from ._incumbent import _incumbent

        placement = _incumbent(problem)
        seed_counts = _class_counts(placement.worker_job, members, S)
        for i in range(S):
            master.add(i, seed_counts[i], _column_cost(problem, i, seed_counts[i], rates,
                                                        keep[i] if can_keep[i] else None) / scale)
    for i in np.flatnonzero(can_keep):
        master.add(i, keep[i], _column_cost(problem, i, keep[i], rates, keep[i]) / scale)

    start = np.maximum(lo, 1).copy()
    pi = np.zeros(rhs.size)  # prices of this round's pricing (seconds per worker)
    coarse = None
    if C > _WARM_CLASSES_PER_TYPE * len(set(ctype.tolist())) and not enum:
        # many classes per type (per-worker speeds): SMP's placement seeds the master too; its
        # columns bring the LP's duals near their optimum within a few iterations (measured:
        # speeds K = 16384, S = 1024 in 58 iterations instead of 90, the bound within 0.05 % of
        # the LP value from the 18th instead of the 80th), and it is the placement returned
        from ._incumbent import _smp_seed0

        smp = _smp_seed0(problem)  # None when it exceeds a tenant's quota
        if smp is not None:
            if placement is None or smp.mean_jct < placement.mean_jct:
                placement = smp
            sc = _class_counts(smp.worker_job, members, S)
            for i in range(S):
                kept = keep[i] if can_keep[i] else None
                master.add(i, sc[i], _column_cost(problem, i, sc[i], rates, kept) / scale)
        # warm start: the LP on one bucket per type (its prices per type), each class priced in
        # proportion to its speed -- in equilibrium a job's prices are lam_i * r_ic
        coarse_state = {}
        coarse = _colgen(problem, None if time_limit is None else max(deadline - time.perf_counter(), 1e-9) / 2,
                         time.perf_counter(), max_classes=1, state=coarse_state)
        tp = coarse.info["prices"]
        pi = np.array([tp["price"][tp["type"].index(g)] * sp / tp["speed"][tp["type"].index(g)]
                       for g, sp in zip(ctype.tolist(), cspeed.tolist())])
        if quota is not None:  # the quota rows are the coarse LP's (the same binding pairs)
            qp = np.asarray(tp.get("quota", ()), dtype=np.float64)
            pi = np.concatenate((pi, qp if qp.size == quota.Q else np.zeros(quota.Q)))
        # and its LP solution's columns, each type's count spread over the type's buckets in
        # proportion to their sizes (largest remainder): near-feasible columns for the master
        for i, k, _ in coarse_state.get("solution", ()):
            n = np.zeros(C, dtype=np.int64)
            for cc, g in enumerate(tp["type"]):
                if k[cc] == 0:
                    continue
                mine = np.flatnonzero(ctype == g)
                share = k[cc] * cap[mine] / cap[mine].sum()
                base = np.floor(share).astype(np.int64)
                left = int(k[cc] - base.sum())
                base[np.argsort(-(share - base), kind="stable")[:left]] += 1
                n[mine] = base
            master.add(i, n, _column_cost(problem, i, n, rates, keep[i] if can_keep[i] else None) / scale)
    best_bound, best_pi = -math.inf, pi
    lp_value, lp_pi, mu = math.inf, None, None
    trace = []
    status, message = "feasible", ""
    it = 0
    stalled = 0
    alpha = 0.0
    for it in range(1, MAX_ITERATIONS + 1):
        # the Lagrangian bound at this round's prices: valid whatever they are
        lb, n, cost, size = price(pi, start)
        start = np.where(size > 0, size, start)
        L = float(lb.sum() - pi @ rhs)
        if L > best_bound:
            best_bound, best_pi = L, pi
        trace.append(best_bound / S)
        # columns entering the master: negative reduced cost at the LP's duals (every one at first)
        if lp_pi is None:
            rc = np.full(S, -1.0)
        else:
            rc = cost / scale + row_counts(n) @ lp_pi - mu
        added = 0
        for i in np.flatnonzero(rc < -_ENTER_REL * (np.abs(mu) + 1.0) if mu is not None else rc < 0):
            if master.add(i, n[i], cost[i] / scale):
                added += 1
        if time.perf_counter() > deadline:
            status = "time_limit"
            message = f"time_limit={time_limit} s ran out after {it} iterations; the bound is the best so far"
            break
        if added == 0 and lp_pi is not None:
            if alpha == 0.0:  # at the LP's own duals nothing improves: the pricing relaxation's gap
                stalled += 1
                if stalled >= 2 or best_bound >= lp_value * (1 - CONVERGED_REL):
                    status = "optimal" if best_bound >= lp_value * (1 - CONVERGED_REL) else "feasible"
                    message = (f"configuration LP solved in {it} iterations" if status == "optimal" else
                               f"column generation stalled after {it} iterations (no improving integer "
                               "column; the pricing relaxation leaves a gap to the LP value)")
                    break
            alpha = 0.0  # mispricing at the smoothed prices: price at the LP's duals next
            pi = lp_pi * scale
            continue
        stalled = 0
        out = master.solve()
        if out is None:  # pragma: no cover - GLOP failed: keep the bound we have
            message = "GLOP failed on the master LP; the best Lagrangian bound so far is returned"
            break
        val, lp_pi, mu = out
        lp_value = val * scale
        if best_bound >= lp_value * (1 - CONVERGED_REL):
            status = "optimal"
            message = f"configuration LP solved in {it} iterations"
            break
        if time.perf_counter() > deadline:
            status = "time_limit"
            message = f"time_limit={time_limit} s ran out after {it} iterations; the bound is the best so far"
            break
        flat = (it > _FLAT_ROUNDS and trace[-1] <= trace[-1 - _FLAT_ROUNDS] * (1 + _FLAT_REL)
                and best_bound >= lp_value * (1 - _FLAT_LP_REL))
        if flat:
            message = (f"column generation tailed off after {it} iterations (the bound rose by less than "
                       f"{_FLAT_REL:g} in {_FLAT_ROUNDS} iterations, within {_FLAT_LP_REL:g} of the LP value)")
            break
        # Wentges smoothing: price between the best prices so far and the LP's duals
        alpha = _SMOOTH if it > 1 else 0.0
        pi = alpha * best_pi + (1 - alpha) * lp_pi * scale
    else:
        message = f"MAX_ITERATIONS = {MAX_ITERATIONS} reached; the bound is the best so far"
    bound = best_bound / S * (1 - _SAFETY_REL)
    info = {
        "iterations": it, "columns": master.n_cols, "lp_value": lp_value / S if math.isfinite(lp_value) else None,
        "classes": C, "rounded": rounded, "pricing": "enumeration" if enum else "relaxation",
        "trace": trace,
        "lp_gap": (lp_value / best_bound - 1) if math.isfinite(lp_value) and best_bound > 0 else None,
        "prices": {"type": ctype.tolist(), "speed": cspeed.tolist(), "price": list(map(float, best_pi[:C]))},
    }
    if quota is not None:  # the quota rows' prices, in the order of _QuotaRows (a warm start reads them)
        info["prices"]["quota"] = list(map(float, best_pi[C:]))
    if state is not None:
        state["solution"] = master.solution()
    if coarse is not None:
        info["warm_start"] = {"iterations": coarse.info["iterations"], "bound": coarse.bound}
        if coarse.bound > bound:  # a valid bound too (speeds rounded up to each type's fastest)
            bound = coarse.bound
    if problem.topology is not None:
        # the LP prices communication at its floor; every job alone (exact with a topology) may be higher
        bound = max(bound, float(np.mean(problem.jct_alone)) * (1 - _SAFETY_REL))
    return BoundResult(status, message, info, bound=bound, placement=placement,
                       wall_time=time.perf_counter() - t0, method="colgen")


class _QuotaRows:
    """The configuration LP's rows of the binding tenant quotas (docs/model.md §1.7, §4.10), kept sparse.

    Row ``q`` is a binding (tenant t, type g) -- ``quota_cap[t, g]`` below the
    type's workers in the classes, and t has a job -- with right side
    ``rhs[q] = quota_cap[t, g]``; job i's column ``n`` has the coefficient
    ``sum_{c of type g} n_c`` in it when ``tenant[i] == t``, else 0.
    ``job_row[i, g]``: the row of job i's workers of type g (-1: none).
    """

    def __init__(self, problem, cap, ctype):
        G, T = problem.n_types, problem.n_tenants
        tenant = problem.tenant
        in_type = np.bincount(ctype, weights=cap, minlength=G)
        has_job = np.bincount(tenant[tenant >= 0], minlength=T) > 0
        bind = (problem.quota_cap < in_type[None, :]) & has_job[:, None]
        index = np.full((T, G), -1, dtype=np.int64)
        index[bind] = np.arange(int(bind.sum()))  # row-major: the order of rhs
        self.Q = int(bind.sum())
        self.rhs = problem.quota_cap[bind].astype(np.float64)
        self.job_row = np.where((tenant >= 0)[:, None], index[np.maximum(tenant, 0)], -1)  # (S, G)
        self.ctype = np.asarray(ctype, dtype=np.int64)
        self._rows = np.nonzero(self.job_row >= 0)  # (jobs, types) with a row

    def type_counts(self, n):
        """(S, G): each job's workers of each type, from its class counts ``n`` (S, C)."""
        out = np.zeros((n.shape[0], self.job_row.shape[1]), dtype=np.float64)
        np.add.at(out.T, self.ctype, n.T.astype(np.float64))
        return out

    def counts(self, n):
        """(S, Q): each job's coefficients in the quota rows, from its class counts ``n`` (S, C)."""
        out = np.zeros((n.shape[0], self.Q))
        i, g = self._rows
        out[i, self.job_row[i, g]] = self.type_counts(n)[i, g]
        return out

    def class_prices(self, mu):
        """(S, C): the quota rows' prices ``mu`` (Q,) that one worker of each class costs each job."""
        per_type = np.where(self.job_row >= 0, np.asarray(mu)[np.maximum(self.job_row, 0)] if self.Q else 0.0, 0.0)
        return per_type[:, self.ctype]

    def column(self, i, n):
        """``[(row, coefficient)]`` of job ``i``'s column ``n`` (C,) in the quota rows (nonzero ones)."""
        by_type = np.bincount(self.ctype, weights=n, minlength=self.job_row.shape[1])
        used = np.flatnonzero((self.job_row[i] >= 0) & (by_type > 0))
        return [(int(self.job_row[i, g]), float(by_type[g])) for g in used]


def _class_counts(worker_job, members, S):
    """int64 (S, C): workers of each class that ``worker_job`` gives each job."""
    out = np.zeros((S, len(members)), dtype=np.int64)
    for c, m in enumerate(members):
        j = worker_job[m]
        out[:, c] = np.bincount(j[j >= 0], minlength=S)
    return out
