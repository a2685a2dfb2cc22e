"""Linear programmes of Gavel's fairness policies over time shares (private).

Both programmes choose a time-share matrix ``X`` (jobs x GPU types): ``X[j, t]``
is the fraction of the time job ``j`` runs on its scale factor ``s_j`` of GPUs of
type ``t``.  A share matrix is feasible when

    X >= 0,   sum_t X[j, t] <= 1           (a job runs at most all the time)
    sum_j s_j X[j, t] <= m_t               (type t has m_t GPUs)

:func:`max_min_shares` maximises the smallest weighted rate ``sum_t c[j, t] X[j, t]``
(Gavel's max-min fairness, the policy its paper calls LAS);
:func:`ftf_shares` minimises the largest finish-time fairness ratio
``(elapsed_j + left_j / rate_j(X)) / (isolated_j + left_j / iso_rate_j)`` (Gavel's
finish-time fairness), by bisection over max-min programmes.  Both are solved with
OR-Tools' GLOP simplex through ``pywraplp``.  :func:`proportional_share` and
:func:`isolated_share` are Gavel's reference allocations used to normalise them.

The callers (``hetplace/online/policies_peers.py``) hand clean float arrays; nothing
here validates user input.  See ``docs/online_policies.md``.
"""

from dataclasses import dataclass

import math

import numpy as np

from ..errors import MissingDependencyError, SolverError

__all__ = ["ShareResult", "max_min_shares", "ftf_shares", "proportional_share", "isolated_share", "ftf_ratios",
           "max_sum_center"]


@dataclass(frozen=True)
class ShareResult:
    """A time-share matrix from one of the programmes.

    Attributes
    ----------
    shares : numpy.ndarray, shape (J, T), float64
        ``X[j, t]`` in [0, 1], rows summing to at most 1 (up to 1e-9).
    value : float
        The programme's objective: the max-min value, or the largest
        finish-time fairness ratio of ``shares``.
    bound : float
        A proven bound on the optimum: equal to ``value`` for the max-min
        programme; for finish-time fairness the largest ratio shown to be
        unreachable (so the optimum lies in ``[bound, value]``).
    n_solves : int
        Linear programmes solved.
    """

    shares: np.ndarray
    value: float
    bound: float
    n_solves: int


def _pywraplp():
    try:
        from ortools.linear_solver import pywraplp
    except ImportError:  # pragma: no cover - ortools is a hard dependency
        raise MissingDependencyError("the online LP policies need OR-Tools: pip install 'ortools>=9.10'") from None
    return pywraplp


class _MaxMinModel:
    """The max-min programme built once; its rate coefficients can be replaced and re-solved.

    Variables ``X[j, t]`` (only where ``usable[j, t]``) and ``z``; rows

        z - sum_t c[j, t] X[j, t] <= 0      (one per job: z is below every job's rate)
        sum_t X[j, t] <= 1                  (one per job)
        sum_j s_j X[j, t] <= m_t            (one per type)
    """

    def __init__(self, usable, scale, capacity):
        pywraplp = _pywraplp()
        self._pywraplp = pywraplp
        solver = pywraplp.Solver.CreateSolver("GLOP")
        if solver is None:  # pragma: no cover - GLOP ships with every OR-Tools wheel
            raise SolverError("OR-Tools has no GLOP solver; reinstall with pip install --force-reinstall ortools.")
        self.solver = solver
        J, T = usable.shape
        self.cells = [(j, t) for j in range(J) for t in range(T) if usable[j, t]]
        inf = solver.infinity()
        self.x = [solver.NumVar(0.0, 1.0, "") for _ in self.cells]
        self.z = solver.NumVar(0.0, inf, "z")
        # z is below every job's rate
        self.rate_rows = [solver.Constraint(-inf, 0.0) for _ in range(J)]
        for row in self.rate_rows:
            row.SetCoefficient(self.z, 1.0)
        # every job runs at most all of the time
        time_rows = [solver.Constraint(-inf, 1.0) for _ in range(J)]
        # no type is over-subscribed
        cap_rows = [solver.Constraint(-inf, float(capacity[t])) for t in range(T)]
        for var, (j, t) in zip(self.x, self.cells):
            time_rows[j].SetCoefficient(var, 1.0)
            cap_rows[t].SetCoefficient(var, float(scale[j]))
        self.shape = (J, T)
        self.floor = None

    def set_rates(self, coef):
        for var, (j, t) in zip(self.x, self.cells):
            self.rate_rows[j].SetCoefficient(var, -float(coef[j, t]))

    def solve_max_min(self):
        """Maximise z; returns z (GLOP optimal) or raises SolverError."""
        if self.floor is not None:
            self.z.SetLb(0.0)
        obj = self.solver.Objective()
        obj.Clear()
        obj.SetCoefficient(self.z, 1.0)
        obj.SetMaximization()
        self._solve()
        return self.z.solution_value()

    def solve_efficient(self, coef, z_star, rel=1e-7):
        """Second stage: keep z >= z_star (1 - rel) and maximise the total rate sum_jt c X."""
        self.z.SetLb(max(0.0, z_star * (1.0 - rel) - 1e-12))
        self.floor = z_star
        obj = self.solver.Objective()
        obj.Clear()
        for var, (j, t) in zip(self.x, self.cells):
            obj.SetCoefficient(var, float(coef[j, t]))
        obj.SetMaximization()
        self._solve()

    def _solve(self):
        status = self.solver.Solve()
        if status != self._pywraplp.Solver.OPTIMAL:
            raise SolverError(
                f"GLOP returned status {status} on a time-share programme that always has the solution X = 0; "
                "please report this with the cluster and the jobs."
            )

    def shares(self):
        X = np.zeros(self.shape)
        for var, (j, t) in zip(self.x, self.cells):
            X[j, t] = var.solution_value()
        return _clean(X)


def _clean(X):
    """Clip solver noise: entries into [0, 1], rows summing above 1 scaled back to 1."""
    X = np.clip(X, 0.0, 1.0)
    X[X < 1e-12] = 0.0
    rows = X.sum(axis=1)
    over = rows > 1.0
    X[over] /= rows[over, None]
    return X


def _capacity_fix(X, scale, capacity):
    """Scale a column down where solver noise puts it above its capacity (by at most ~1e-9)."""
    used = scale @ X
    over = used > capacity
    if over.any():
        X[:, over] *= capacity[over] / used[over]
    return X


def _damped_step(phi, X, f, step, g):
    """One Newton step on the barrier ``phi``, backtracked until it decreases enough: ``(X, f, done)``.

    ``done`` when the Newton decrement is below 1e-9 (converged) or no step length above 1e-12
    decreases ``phi`` by a quarter of the linear prediction (``X`` then unchanged).
    """
    dec = -float((g * step).sum())
    if dec < 1e-9:
        return X, f, True
    t = 1.0
    while True:
        fn = phi(X + t * step)
        if fn <= f - 0.25 * t * dec:
            return X + t * step, fn, False
        t *= 0.5
        if t < 1e-12:
            return X, f, True


def _analytic_center(coef, scale, capacity, usable, X0, z_low, iters=100):
    """Newton's method on the log barrier of the optimal region ``{X : every job's rate >= z_low}``.

    Maximises ``sum log X + sum_j log(1 - sum_t X) + sum_t log(m_t - sum_j s_j X)
    + sum_j log(sum_t c X - z_low)`` over the usable cells, from the strictly
    feasible ``X0``: the point an interior-point solver converges to on the
    optimal face (the analytic centre), which is where Gavel's ECOS stops.  The
    Hessian is block-diagonal per job plus one rank-one term per type, solved
    by the Woodbury identity in ``O(J T^3)`` per step.
    """
    J, T = coef.shape
    M = usable.astype(np.float64)
    c = coef * M
    U = scale[:, None] * M  # capacity row of type t: sum_j U[j, t] X[j, t]
    X = X0 * M
    eye = np.eye(T)

    def slacks(X):
        return (np.where(usable, X, 1.0), 1.0 - X.sum(axis=1), capacity - (U * X).sum(axis=0),
                (c * X).sum(axis=1) - z_low)

    def phi(X):
        x, a, b, d = slacks(X)
        if (x <= 0).any() or (a <= 0).any() or (b <= 0).any() or (d <= 0).any():
            return math.inf
        return -(np.log(x[usable]).sum() + np.log(a).sum() + np.log(b).sum() + np.log(d).sum())

    f = phi(X)
    for _ in range(iters):
        x, a, b, d = slacks(X)
        g = (-1.0 / x + (1.0 / a)[:, None] + U / b[None, :] - c / d[:, None]) * M
        # per-job blocks B_j = diag(1/x^2) + m m^T / a^2 + c c^T / d^2 (unusable cells: identity, g = 0)
        B = np.einsum("jt,tu->jtu", np.where(usable, 1.0 / x**2, 1.0), eye)
        B += np.einsum("jt,ju->jtu", M, M) / (a**2)[:, None, None]
        B += np.einsum("jt,ju->jtu", c, c) / (d**2)[:, None, None]
        Binv = np.linalg.inv(B)
        # coupling: sum_t u_t u_t^T / b_t^2, u_t = column t of U placed in cell (j, t)
        BinvG = np.einsum("jtu,ju->jt", Binv, g)
        W = np.einsum("jtu,ju->jtu", Binv, U)  # B^-1 u_s restricted to job j: W[j, t, s] = Binv[j,t,s] U[j,s]
        small = np.diag(b**2) + np.einsum("jt,jts->ts", U, W)  # D^-1 + U^T B^-1 U
        rhs = np.einsum("jt,jt->t", U, BinvG)
        y = np.linalg.solve(small, rhs)
        step = -(BinvG - np.einsum("jts,s->jt", W, y)) * M
        X, f, done = _damped_step(phi, X, f, step, g)
        if done:
            break
    return X


def _center_total(coef, scale, capacity, usable, X0, z_low, iters=100):
    """Newton's method on the log barrier of ``{X : sum_jt c X >= z_low}``: the analytic centre of a max-sum face.

    As :func:`_analytic_center`, with one total-rate constraint in place of one per job: the
    Hessian is the per-job blocks plus ``T + 1`` rank-one terms (one per type, one for the
    total), solved by the Woodbury identity with a ``(T + 1)``-square system.
    """
    J, T = coef.shape
    M = usable.astype(np.float64)
    c = coef * M
    U = scale[:, None] * M
    X = X0 * M
    eye = np.eye(T)

    def slacks(X):
        return (np.where(usable, X, 1.0), 1.0 - X.sum(axis=1), capacity - (U * X).sum(axis=0),
                float((c * X).sum()) - z_low)

    def phi(X):
        x, a, b, d = slacks(X)
        if (x <= 0).any() or (a <= 0).any() or (b <= 0).any() or d <= 0:
            return math.inf
        return -(np.log(x[usable]).sum() + np.log(a).sum() + np.log(b).sum() + math.log(d))

    f = phi(X)
    if not math.isfinite(f):
        return X
    for _ in range(iters):
        x, a, b, d = slacks(X)
        g = (-1.0 / x + (1.0 / a)[:, None] + U / b[None, :] - c / d) * M
        B = np.einsum("jt,tu->jtu", np.where(usable, 1.0 / x**2, 1.0), eye)
        B += np.einsum("jt,ju->jtu", M, M) / (a**2)[:, None, None]
        try:  # a share within ~1e-150 of 0 overflows 1 / x**2: stop at the last (feasible) iterate
            if not np.isfinite(B).all():
                break
            Binv = np.linalg.inv(B)
        except np.linalg.LinAlgError:
            break
        BinvG = np.einsum("jtu,ju->jt", Binv, g)
        # coupling vectors: column s < T is type s's capacity row, column T the total rate
        W = np.concatenate([np.einsum("jts,js->jts", Binv, U), np.einsum("jtu,ju->jt", Binv, c)[:, :, None]], axis=2)
        V = np.concatenate([np.einsum("jt,ts->jts", U, eye), c[:, :, None]], axis=2)
        small = np.diag(np.r_[b**2, d**2]) + np.einsum("jts,jtr->sr", V, W)
        try:
            y = np.linalg.solve(small, np.einsum("jts,jt->s", V, BinvG))
        except np.linalg.LinAlgError:
            break
        step = -(BinvG - np.einsum("jts,s->jt", W, y)) * M
        X, f, done = _damped_step(phi, X, f, step, g)
        if done:
            break
    return X


def max_sum_center(X, coef, scale, capacity, gap=1e-6):
    """The analytic centre of the optimal face of ``max sum c X`` (Gavel's max-sum-throughput), from an optimum ``X``.

    ``X`` is any optimal share matrix (a vertex from a simplex solver); the result keeps the
    total rate within a relative ``gap`` of it and lies where an interior-point solver such as
    Gavel's ECOS converges: inside the face, every usable share strictly positive.  Types
    without GPUs are left out.
    """
    coef = np.asarray(coef, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    usable = (coef > 0) & (scale[:, None] <= capacity[None, :]) & (capacity[None, :] > 0)
    total = float((coef * X).sum())
    if not usable.any() or total <= 0:
        return X
    keep = usable.any(axis=0)
    if not keep.all():
        out = np.zeros_like(X)
        out[:, keep] = max_sum_center(X[:, keep], coef[:, keep], scale, capacity[keep], gap)
        return out
    T = coef.shape[1]
    theta = 0.5 * min(1.0 / T, float(np.min(capacity / np.maximum((scale[:, None] * usable).sum(axis=0), 1e-300))))
    alpha = 0.5 * gap
    X0 = (1 - alpha) * X + alpha * theta * usable
    return _capacity_fix(_clean(_center_total(coef, scale, capacity, usable, X0, total * (1 - gap))), scale,
                         capacity)


def max_min_shares(coef, scale, capacity, efficient=True, center=False, center_gap=1e-6):
    """Time shares maximising the smallest weighted rate (Gavel's max-min fairness).

    Parameters
    ----------
    coef : numpy.ndarray, shape (J, T), float64
        ``c[j, t] >= 0``: job j's normalised rate per unit of time share on type t
        (0 = the job cannot use the type).
    scale : numpy.ndarray, shape (J,)
        GPUs each job uses at a time (its scale factor).
    capacity : numpy.ndarray, shape (T,)
        GPUs of each type.
    efficient : bool
        Stage two: among the max-min optimal shares, the ones with the largest
        total rate ``sum_jt c[j, t] X[j, t]``, so capacity the minimum does not
        need is not left idle (Gavel keeps whatever point of the optimal face its
        interior-point solver returns).

    Returns
    -------
    ShareResult
        ``value = bound`` = the max-min value ``z*``.
    """
    coef = np.asarray(coef, dtype=np.float64)
    J, T = coef.shape
    scale = np.asarray(scale, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    if J == 0:
        return ShareResult(np.zeros((0, T)), 0.0, 0.0, 0)
    usable = (coef > 0) & (scale[:, None] <= capacity[None, :])
    model = _MaxMinModel(usable, scale, capacity)
    model.set_rates(coef)
    z = model.solve_max_min()
    n = 1
    if efficient and not center:
        model.solve_efficient(coef, z)
        n += 1
    X = _capacity_fix(model.shares(), scale, capacity)
    if center and z > 0:
        # strictly inside: a little of the uniform point that fills every usable cell equally
        X = _center_from(X, coef, scale, capacity, usable, z, center_gap)
        n += 1
    return ShareResult(X, float(z), float(z), n)


def proportional_share(capacity):
    """Gavel's proportional reference row: ``m_t / n`` of every type for each of n jobs, divided by its row sum.

    Gavel divides by the row sum whether it is above or below 1, so the row is
    ``m_t / sum_u m_u`` for any number of jobs: a job's proportional rate is its
    GPU-weighted mean rate over the cluster, a per-job constant.

    Returns
    -------
    numpy.ndarray, shape (T,)
        The same row for every job (Gavel ignores scale factors here).
    """
    row = np.asarray(capacity, dtype=np.float64)
    return row / row.sum()


def isolated_share(capacity, scale):
    """Gavel's isolated reference: each of n jobs gets ``m_t / (n s_j)`` of type t, rows scaled to sum <= 1.

    This fills every type exactly (``sum_j s_j X[j, t] = m_t`` before the row scaling)
    and is the "1/n of the cluster" each finish-time fairness ratio is measured against.

    Returns
    -------
    numpy.ndarray, shape (J, T)
    """
    capacity = np.asarray(capacity, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    X = capacity[None, :] / max(len(scale), 1) / scale[:, None]
    rows = np.maximum(X.sum(axis=1), 1.0)
    return X / rows[:, None]


def ftf_ratios(X, tput, left, elapsed, isolated_time, iso_rate):
    """Finish-time fairness ratio of every job under shares X (inf where its rate is 0)."""
    rate = (np.asarray(tput) * X).sum(axis=1)
    with np.errstate(divide="ignore"):
        finish = elapsed + np.where(rate > 0, left / np.where(rate > 0, rate, 1.0), np.inf)
    return finish / (isolated_time + left / iso_rate)


def _center_from(X, coef, scale, capacity, usable, z_low, gap):
    """The analytic centre of ``{X : every job's rate c X >= z_low}`` from the solution ``X`` reaching it.

    A type with no GPUs has no usable cell and its capacity slack is 0, outside the barrier's
    domain: the centre is taken over the other types (their columns hold every share).
    """
    empty = capacity <= 0
    if empty.any():
        keep = ~empty
        out = np.zeros_like(X)
        out[:, keep] = _center_from(X[:, keep], coef[:, keep], scale, capacity[keep], usable[:, keep], z_low, gap)
        return out
    T = coef.shape[1]
    theta = 0.5 * min(1.0 / T, float(np.min(capacity / np.maximum((scale[:, None] * usable).sum(axis=0), 1e-300))))
    alpha = 0.5 * gap
    X0 = (1 - alpha) * X + alpha * theta * usable
    return _capacity_fix(_clean(_analytic_center(coef, scale, capacity, usable, X0, z_low * (1 - gap))),
                         scale, capacity)


def ftf_shares(tput, scale, capacity, left, elapsed, isolated_time, tol=1e-3, max_solves=60, center=False,
               center_gap=1e-6):
    """Time shares minimising the largest finish-time fairness ratio (Gavel's FTF).

    Job j's ratio under shares X is

        rho_j(X) = (e_j + R_j / r_j(X)) / (I_j + R_j / r_j(X_iso)),   r_j(X) = sum_t tput[j, t] X[j, t]

    with e_j the time since the job arrived, R_j its steps left, I_j the isolated time
    it has accumulated so far and X_iso :func:`isolated_share`.  The programme
    ``min_X max_j rho_j(X)`` is solved by bisection on the ratio ``rho``: a ratio is
    reachable exactly when the max-min programme with coefficients
    ``tput[j, t] / d_j(rho)``, ``d_j(rho) = R_j / (rho E_j - e_j)`` (the rate job j
    needs), reaches 1.  Bisection starts from ``[max_j rho_j(best type alone),
    max_j rho_j(X_iso)]``, tightens the upper end with the ratio each reachable
    solution actually achieves, and stops at relative width ``tol``.

    Parameters
    ----------
    tput : numpy.ndarray, shape (J, T)
        Steps/s of each job on its scale factor of GPUs of each type (0 = unusable).
    scale, capacity : numpy.ndarray
        As in :func:`max_min_shares`.
    left, elapsed, isolated_time : numpy.ndarray, shape (J,)
        ``R_j > 0``, ``e_j >= 0`` and ``I_j >= 0`` (seconds).
    tol : float
        Relative width of the final bracket.
    max_solves : int
        Cap on the linear programmes solved.

    Returns
    -------
    ShareResult
        ``shares`` reaching ``value = max_j rho_j(shares)``; ``bound`` a ratio shown
        unreachable, or the bracket's lower end (never above the optimum).
    """
    tput = np.asarray(tput, dtype=np.float64)
    J, T = tput.shape
    scale = np.asarray(scale, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    left = np.asarray(left, dtype=np.float64)
    elapsed = np.asarray(elapsed, dtype=np.float64)
    isolated_time = np.asarray(isolated_time, dtype=np.float64)
    if J == 0:
        return ShareResult(np.zeros((0, T)), 0.0, 0.0, 0)
    usable = (tput > 0) & (scale[:, None] <= capacity[None, :])
    tput = np.where(usable, tput, 0.0)
    X_iso = isolated_share(capacity, scale) * usable
    iso_rate = (tput * X_iso).sum(axis=1)
    runnable = iso_rate > 0  # a job with no usable type is left out (ratio inf whatever X is)
    iso_rate = np.where(runnable, iso_rate, 1.0)
    E = isolated_time + left / iso_rate  # the finish time the ratio is measured against
    best = tput.max(axis=1)
    with np.errstate(divide="ignore"):
        lo = float(np.max(np.where(runnable, (elapsed + left / np.where(best > 0, best, 1.0)) / E, 0.0)))
    X_best = X_iso
    value = float(np.max(np.where(runnable, ftf_ratios(X_iso, tput, left, elapsed, isolated_time, iso_rate), 0.0)))
    hi = value
    model = _MaxMinModel(usable & runnable[:, None], scale, capacity)
    n = 0
    while hi - lo > tol * lo and n < max_solves:
        rho = 0.5 * (lo + hi)
        slack = rho * E - elapsed
        if np.any(runnable & (slack <= 0)):  # some job has already waited past rho E_j
            lo = rho
            continue
        need = left / np.where(runnable, slack, 1.0)  # the rate each job needs to finish by rho E_j
        coef = np.where(runnable[:, None], tput / need[:, None], 0.0)
        model.set_rates(coef)
        z = model.solve_max_min()
        n += 1
        if z >= 1.0 - 1e-9:  # rho is reachable
            X = _capacity_fix(model.shares(), scale, capacity)
            achieved = float(np.max(np.where(runnable, ftf_ratios(X, tput, left, elapsed, isolated_time, iso_rate), 0.0)))
            if achieved < value:
                X_best, value = X, achieved
            hi = min(rho, value)
        else:
            lo = rho
    if center and value > 0 and X_best is not X_iso:
        # the centre of the shares that reach the best ratio found (where an interior-point solver stops)
        slack = value * E - elapsed
        if not np.any(runnable & (slack <= 0)):
            need = left / np.where(runnable, slack, 1.0)
            coef = np.where(runnable[:, None], tput / need[:, None], 0.0)
            use = usable & runnable[:, None]
            # every job reaches its need (rate >= 1 in these units) at X_best up to solver noise
            z_low = min(1.0, float(np.min(np.where(runnable, (coef * X_best).sum(axis=1), np.inf))))
            if z_low > 0:
                X_best = _center_from(X_best, coef, scale, capacity, use, z_low, center_gap)
                value = float(np.max(np.where(runnable, ftf_ratios(X_best, tput, left, elapsed, isolated_time,
                                                                   iso_rate), 0.0)))
                n += 1
    return ShareResult(X_best, value, lo, n)
