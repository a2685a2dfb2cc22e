"""Slow, obviously-correct references for hetplace.balance (used by the tests only).

* :func:`largest_remainder_exact` -- water filling and Hamilton's method in
  exact rational arithmetic (``fractions.Fraction``), straight from the
  definition, O(n^2).
* :class:`DenseSignalKalman` -- the joint Kalman filter with one dense
  ``(n + m) x (n + m)`` covariance, exactly as it was before the structured
  O(n m^2) filter replaced it.
"""

from fractions import Fraction

import numpy as np


def _clip(v, lo, hi):
    return lo if v < lo else (hi if hi is not None and v > hi else v)


def water_fill_exact(x, total, lower, upper):
    """Exact quotas ``q_i = clip(s x_i, lower_i, upper_i)`` with ``sum(q) = total``.

    ``x``: Fractions >= 0; ``lower``: ints; ``upper``: ints or None (no cap).
    Zero weights sit at ``lower`` unless every positive weight is capped, then
    the rest is water-filled among them with equal weights.  All-zero weights
    are equal weights.  Returns a list of Fractions.
    """
    n = len(x)
    if not any(v > 0 for v in x):
        x = [Fraction(1)] * n
    pos = [i for i in range(n) if x[i] > 0]
    zero = [i for i in range(n) if x[i] == 0]

    def f(s):
        return sum(_clip(s * x[i], lower[i], upper[i]) for i in pos) + sum(lower[i] for i in zero)

    cuts = sorted({Fraction(lower[i]) / x[i] for i in pos}
                  | {Fraction(upper[i]) / x[i] for i in pos if upper[i] is not None})
    q = [Fraction(lower[i]) for i in range(n)]
    prev = Fraction(0)
    for s in cuts + [None]:
        if s is not None and f(s) < total:
            prev = s
            continue
        # total is reached on (prev, s]: fixed workers keep their value at prev, the free ones share
        free = [i for i in pos if lower[i] <= prev * x[i] and (upper[i] is None or (s is not None and s * x[i] <= upper[i]))]
        fixed = sum(_clip(prev * x[i], lower[i], upper[i]) for i in pos if i not in free) + sum(lower[i] for i in zero)
        X = sum(x[i] for i in free)
        if X > 0:
            t = (total - fixed) / X
            for i in pos:
                q[i] = t * x[i] if i in free else _clip(prev * x[i], lower[i], upper[i])
        elif s is not None:  # nobody free on the piece: the total is met with every worker fixed
            for i in pos:
                q[i] = _clip(s * x[i], lower[i], upper[i])
        else:  # every positive weight capped: the zero weights take the rest equally
            for i in pos:
                q[i] = Fraction(upper[i])
            rest = total - sum(q[i] for i in pos)
            sub = water_fill_exact([Fraction(1)] * len(zero), rest, [lower[i] for i in zero],
                                   [upper[i] for i in zero])
            for j, i in enumerate(zero):
                q[i] = sub[j]
        return q
    raise AssertionError("unreachable: f(inf) >= total for feasible bounds")


def largest_remainder_exact(x, total, lower=1, upper=None):
    """Hamilton's method on the exact quotas; ties to the lower index.

    Parameters
    ----------
    x : sequence of float
        Taken at their exact binary values.
    total : int
    lower : int or sequence of int
    upper : None (no cap), int or sequence of int or None

    Returns
    -------
    shares : list of int
    quotas : list of Fraction
    """
    n = len(x)
    X = [Fraction(float(v)) for v in x]
    lo = [int(lower)] * n if np.ndim(lower) == 0 else [int(v) for v in lower]
    if upper is None or np.ndim(upper) == 0:
        up = [None if upper is None or upper == float("inf") else min(int(upper), total)] * n
    else:
        up = [None if v is None or v == float("inf") else min(int(v), total) for v in upper]
    q = water_fill_exact(X, total, lo, up)
    base = [int(v) for v in q]  # floor (q >= 0)
    left = total - sum(base)
    order = sorted(range(n), key=lambda i: (-(q[i] - base[i]), i))
    for i in order[:left]:
        base[i] += 1
    return base, q


class DenseSignalKalman:
    """The joint Kalman filter as first written: one dense (n + m) x (n + m) covariance.

    Kept verbatim as the slow reference of :class:`hetplace.balance._estimators.SignalKalman`
    (O(n^3) time and O(n^2) memory per update).  Original docstring:

    Joint Kalman filter of per-worker log-speed levels and shared signal effects.

    Model (log speeds, ``n`` workers, ``m`` signals)::

        y_i,t = a_i,t + x_i,t . c + e_i,t     e ~ N(0, r)      (measurement)
        a_i,t = a_i,t-1 + w_i,t                w ~ N(0, q)      (drifting level)
        c_t   = c_t-1 + v_t                    v ~ N(0, q_c)    (near-constant effects)

    ``c`` is shared by all workers, so one co-tenant episode on any worker
    teaches the effect of ``cpu_avail`` to all of them.

    Parameters
    ----------
    n, m : int
    z : float
        A measurement whose innovation exceeds ``z`` predicted standard
        deviations is held back as a possible one-off; a second one on the
        same side, consistent with the first, is a change point: the level's
        variance is inflated and the measurement is used.
    prior_var : float
        Prior variance of every signal coefficient (mean 0).
    q_coef : float
        Drift variance of the coefficients per iteration.

    Attributes
    ----------
    state : ndarray of float64, shape (n + m,)
        ``[a_1..a_n, c_1..c_m]``.
    P : ndarray of float64, shape (n + m, n + m)
    innovation : ndarray of float64, shape (n,)
        Last innovations ``y - prediction`` (0 where not measured).
    changes : int

    Notes
    -----
    With the signals' coefficients unknown, a jump of ``y`` that coincides
    with a jump of ``x`` has a large predicted variance (``dx P_cc dx``), so it
    is learned from at once instead of being rejected; a jump with no signal
    behind it is an outlier until confirmed.  This is the linear, recursive
    counterpart of the NARX network of Chen et al. (SoCC 2020): an
    autoregressive part (the level, an exponentially weighted sum of past log
    speeds with the Kalman gain) plus exogenous inputs.
    """

    def __init__(self, n, m, z=3.5, prior_var=1.0, q_coef=1e-6, diffuse=100.0):
        self.n, self.m = int(n), int(m)
        self.z = float(z)
        self.q_coef = float(q_coef)
        self.state = np.zeros(n + m)
        self.P = np.diag(np.r_[np.full(n, diffuse), np.full(m, prior_var)])
        self.pend_y = np.full(n, np.nan)
        self.pend_x = np.zeros((n, m))
        self.innovation = np.zeros(n)
        self.changes = 0

    @property
    def coef(self):
        """ndarray (m,): current signal coefficients."""
        return self.state[self.n:].copy()

    def level_var(self):
        """ndarray (n,): marginal variance of every level (the interface the balancer uses)."""
        return np.diag(self.P)[: self.n].copy()

    def covariance(self):
        """The dense covariance (a copy)."""
        return self.P.copy()

    def predict(self, x):
        """Predicted log speeds (n,) under signals ``x`` (n, m) or None."""
        a = self.state[:self.n]
        if self.m and x is not None:
            return a + x @ self.state[self.n:]
        return a.copy()

    def residual(self, y, x):
        """``y - x . c`` (n,): the part of the log speed the signals do not explain."""
        if self.m and x is not None:
            return y - x @ self.state[self.n:]
        return y.copy()

    def inflate(self, i, var=1.0):
        """Forget worker ``i``'s level (a return from a stall); ``i`` an index or index array."""
        self.P[i, i] += var
        self.pend_y[i] = np.nan

    def update(self, y, valid, x, q, r):
        """Time update with drift ``q``, then the measurements ``y`` (n,) where ``valid``.

        Parameters
        ----------
        y : ndarray of float64, shape (n,)
        valid : ndarray of bool, shape (n,)
        x : ndarray of float64, shape (n, m) or None
        q, r : float
            Level drift and measurement variances (log units).

        Returns
        -------
        changed, outlier : ndarray of bool, shape (n,)
        """
        n, m = self.n, self.m
        self.P[np.arange(n), np.arange(n)] += q
        if m:
            self.P[np.arange(n, n + m), np.arange(n, n + m)] += self.q_coef
        changed = np.zeros(n, dtype=bool)
        outlier = np.zeros(n, dtype=bool)
        self.innovation = np.zeros(n)
        idx = np.flatnonzero(valid)
        if idx.size == 0:
            return changed, outlier
        c = self.state[n:]
        X = x[idx] if m else np.zeros((idx.size, 0))
        nu = y[idx] - self.state[idx] - (X @ c if m else 0.0)
        # marginal predicted variance of every measurement
        var = self.P[idx, idx] + r
        if m:
            Pac = self.P[idx, n:]
            var = var + 2.0 * np.einsum("kj,kj->k", X, Pac) + np.einsum("kj,jl,kl->k", X, self.P[n:, n:], X)
        sd = np.sqrt(np.maximum(var, 1e-12))
        self.innovation[idx] = nu
        out = np.abs(nu) > self.z * sd
        keep = ~out
        for j in np.flatnonzero(out):
            i = idx[j]
            py = self.pend_y[i]
            if np.isfinite(py):
                pu = py - (self.pend_x[i] @ c if m else 0.0)
                u = y[i] - (X[j] @ c if m else 0.0)
                same = np.sign(pu - self.state[i]) == np.sign(nu[j])
                if same and abs(u - pu) <= self.z * np.sqrt(2.0 * r):
                    self.P[i, i] += 1.0  # change point: let the level jump
                    self.pend_y[i] = np.nan
                    changed[i] = True
                    keep[j] = True
                    self.changes += 1
                    continue
            self.pend_y[i] = y[i]
            if m:
                self.pend_x[i] = X[j]
            outlier[i] = True
        self.pend_y[idx[keep & ~changed[idx]]] = np.nan
        k = idx[keep]
        if k.size == 0:
            return changed, outlier
        H = np.zeros((k.size, n + m))
        H[np.arange(k.size), k] = 1.0
        if m:
            H[:, n:] = x[k]
        resid = y[k] - H @ self.state
        PHt = self.P @ H.T
        S = H @ PHt + r * np.eye(k.size)
        K = np.linalg.solve(S, PHt.T).T
        self.state = self.state + K @ resid
        self.P = self.P - K @ PHt.T
        self.P = 0.5 * (self.P + self.P.T)
        return changed, outlier


