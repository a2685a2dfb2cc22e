"""Online speed estimators for LB-BSP (docs/model.md §6.3).

All estimators work on log speeds (samples/s), so a 3x hiccup and a halving
are symmetric, additive disturbances.  Shapes: ``n`` workers, ``m`` signals.

* :class:`RobustLevel` -- a robust local-level filter per worker: a bank of
  exponentially weighted averages with different gains, the gain with the
  least recent (clipped) one-step prediction loss is used; innovations beyond
  ``z`` robust standard deviations are rejected as one-off hiccups unless the
  next measurement confirms them, which declares a change point and resets
  the level (a co-tenant started, a worker slowed to a crawl).
* :class:`SignalKalman` -- the NARX-style predictor: per-worker drifting
  levels plus exogenous signals with shared coefficients,
  ``log v_i,t = a_i,t + x_i,t . c``, all fitted online by one Kalman filter
  (recursive least squares with drifting intercepts) in O(n m^2) per
  iteration (levels are independent given ``c``), with the same
  hiccup rejection and change-point confirmation.  Its noise variances come
  from the filter bank: a local-level filter with gain ``g`` and innovation
  variance ``s2`` has ``r = (1 - g) s2`` and ``q = g**2 s2``.
* :class:`EWMA` -- the classic exponentially weighted moving average of
  measured speeds, the baseline the predictor is compared with.

Private module: inputs are assumed clean (validated by the balancer).
"""

import numpy as np

__all__ = ["RobustLevel", "SignalKalman", "SignalHold", "EWMA"]

#: Gains of the filter bank: from heavy smoothing to "last measurement".
DEFAULT_GAINS = (0.04, 0.08, 0.14, 0.22, 0.35, 0.55, 1.0)


class RobustLevel:
    """Robust local-level filter of ``n`` log-speed series.

    Parameters
    ----------
    n : int
        Number of workers.
    gains : sequence of float in (0, 1]
        Gains of the EWMA bank.
    z : float
        Innovations beyond ``z`` robust standard deviations are outliers.
    forget : float in (0, 1)
        Forgetting factor of the pooled loss and scale estimates.
    min_samples : int
        Iterations before the bank may leave the default gain (about 0.2).

    Attributes
    ----------
    level : ndarray of float64, shape (n, J)
        Level of every worker under every gain (NaN before the first value).
    sigma : float
        Robust standard deviation of one-step innovations, pooled over workers.
    best : int
        Index of the gain in use.
    changes : int
        Change points confirmed so far.

    Notes
    -----
    The steady-state Kalman filter of a random walk observed in white noise is
    an EWMA whose gain depends on the ratio of the two variances; the bank
    picks that gain from data instead of assuming the ratio.  Each worker's
    effective gain is ``max(g, 1 / (k + 1))`` after ``k`` measurements since
    its last reset, i.e. a running mean until the EWMA takes over.  Outlier
    rejection with confirmation is the two-sample rule of robust change
    detection (a one-off spike is dropped, a persistent shift is accepted one
    iteration late).
    """

    def __init__(self, n, gains=DEFAULT_GAINS, z=3.5, forget=0.03, min_samples=20):
        self.gains = np.asarray(gains, dtype=np.float64)
        self.min_samples = int(min_samples)
        self.z = float(z)
        self.forget = float(forget)
        J = self.gains.size
        self.level = np.full((n, J), np.nan)
        self.count = np.zeros(n)
        self.loss = np.zeros(J)
        self.loss_weight = 0.0
        self.sigma = np.nan
        self.scale_weight = 0.0
        self.pending = np.full(n, np.nan)
        self.best = int(np.argmin(np.abs(self.gains - 0.2)))
        self.changes = 0

    def predict(self):
        """ndarray (n,): current level of every worker (NaN if never seen)."""
        return self.level[:, self.best].copy()

    def reset(self, i, value):
        """Restart worker(s) ``i`` at ``value`` (a confirmed change or a return from a stall).

        ``i`` an index or an index array, ``value`` a scalar or one value per index.
        """
        self.level[i, :] = np.asarray(value, dtype=np.float64)[..., None]
        self.count[i] = 1.0
        self.pending[i] = np.nan

    def update(self, y, valid):
        """Feed one iteration of measurements.

        Parameters
        ----------
        y : ndarray of float64, shape (n,)
            Log measurements (ignored where ``valid`` is False).
        valid : ndarray of bool, shape (n,)

        Returns
        -------
        changed : ndarray of bool, shape (n,)
            Workers whose level was reset by a confirmed change point.
        outlier : ndarray of bool, shape (n,)
            Measurements rejected this iteration (pending confirmation).
        """
        n = y.size
        changed = np.zeros(n, dtype=bool)
        outlier = np.zeros(n, dtype=bool)
        new = valid & np.isnan(self.level[:, 0])
        if new.any():
            self.level[new, :] = y[new, None]
            self.count[new] = 1.0
        seen = valid & ~new
        if not seen.any():
            return changed, outlier
        idx = np.flatnonzero(seen)
        ys = y[idx]
        e_best = ys - self.level[idx, self.best]
        if not np.isfinite(self.sigma):
            # first scale: robust spread of the first innovations, floored
            self.sigma = max(1.4826 * float(np.median(np.abs(e_best))), 0.01)
        thr = self.z * self.sigma
        out = np.abs(e_best) > thr
        # confirmation: a second outlier on the same side, close to the first
        pend = self.pending[idx]
        has_pend = np.isfinite(pend)
        same_side = np.sign(pend - self.level[idx, self.best]) == np.sign(e_best)
        confirm = out & has_pend & same_side & (np.abs(ys - pend) <= thr * 1.5)
        ci = idx[confirm]
        self.reset(ci, 0.5 * (ys[confirm] + pend[confirm]))
        changed[ci] = True
        self.changes += int(confirm.sum())
        hold = out & ~confirm
        self.pending[idx[hold]] = ys[hold]
        outlier[idx[hold]] = True
        self.pending[idx[~out]] = np.nan
        ok = ~out
        if ok.any():
            k = idx[ok]
            e = ys[ok, None] - self.level[k, :]  # (k, J)
            clip = 2.0 * self.sigma
            # pooled loss of every gain (clipped squares: a bounded-influence loss)
            cl = np.minimum(e * e, thr * thr).mean(axis=0)
            f = max(self.forget, 1.0 / (1.0 + self.loss_weight))
            self.loss = (1.0 - f) * self.loss + f * cl
            self.loss_weight += 1.0
            if self.loss_weight >= self.min_samples:
                self.best = int(np.argmin(self.loss))
            g = np.maximum(self.gains[None, :], 1.0 / (self.count[k, None] + 1.0))
            self.level[k, :] += g * np.clip(e, -clip, clip)
            self.count[k] += 1.0
        # pooled robust scale of the innovations (bounded influence of outliers)
        e2 = np.minimum(e_best * e_best, thr * thr)
        e2 = e2[~confirm]
        if e2.size:
            f = max(self.forget, 1.0 / (1.0 + self.scale_weight))
            self.sigma = float(np.sqrt((1.0 - f) * self.sigma**2 + f * e2.mean()))
            self.sigma = max(self.sigma, 1e-3)
            self.scale_weight += 1.0
        return changed, outlier

    def level_sd(self):
        """Approximate standard deviation of the level estimate (float, log units)."""
        g = self.gains[self.best]
        return float(self.sigma * np.sqrt(g / (2.0 - g)))


class SignalKalman:
    """Kalman filter of per-worker log-speed levels and shared signal effects, O(n m^2).

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
    G : ndarray of float64, shape (n, m)
        Regression of each level on the coefficients: ``E[a | c] = a_hat + G (c - c_hat)``.
    d : ndarray of float64, shape (n,)
        ``Var(a_i | c)``; the levels are independent given ``c``.
    Pcc : ndarray of float64, shape (m, m)
        Covariance of the coefficients.
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

    *Structure.*  Each measurement involves one level and the shared ``c``,
    so given ``c`` the levels are independent and the joint covariance is
    ``P = [[diag(d) + G Pcc G^T, G Pcc], [Pcc G^T, Pcc]]`` -- O(n m) numbers
    instead of (n + m)^2.  A measurement update is then an m-dimensional
    Bayesian regression for ``c`` (information form, Woodbury) plus n scalar
    updates of ``a_i | c``: O(n m^2) instead of the O(n^3) dense update, and
    the same posterior to rounding.  The level drift ``q`` keeps the
    structure (``d += q``).  The coefficient drift ``q_c`` does not (given
    the new ``c``, the levels share the old coefficient's uncertainty): the
    filter keeps every level's variance and every level-coefficient
    covariance exact and drops the induced cross-covariances of two levels,
    of order ``q_c |G|^2`` (1e-6 here against level variances of 1e-4 and
    more).  ``tests/balance/reference.py`` keeps the dense filter; with
    ``q_coef=0`` the two agree to rounding, and on the seeded scenarios they
    give the same batch sizes.
    """

    def __init__(self, n, m, z=3.5, prior_var=1.0, q_coef=1e-6, diffuse=100.0):
        self.n, self.m = int(n), int(m)
        self.z = float(z)
        self.q_coef = float(q_coef)
        self.diffuse = float(diffuse)
        self.state = np.zeros(n + m)
        self.G = np.zeros((n, m))
        self.d = np.full(n, float(diffuse))
        self.Pcc = np.eye(m) * float(prior_var)
        self.pend_y = np.full(n, np.nan)
        self.pend_x = np.zeros((n, m))
        self.innovation = np.zeros(n)
        self.changes = 0

    @property
    def coef(self):
        """ndarray (m,): current signal coefficients."""
        return self.state[self.n:].copy()

    def level_var(self):
        """ndarray (n,): marginal variance of every level, ``d + diag(G Pcc G^T)``."""
        if not self.m:
            return self.d.copy()
        return self.d + np.einsum("ij,jk,ik->i", self.G, self.Pcc, self.G)

    def covariance(self):
        """The dense joint covariance (n + m, n + m) -- O((n + m)^2) memory, for tests and small n."""
        n = self.n
        GP = self.G @ self.Pcc
        P = np.empty((n + self.m, n + self.m))
        P[:n, :n] = GP @ self.G.T
        P[np.arange(n), np.arange(n)] += self.d
        P[:n, n:] = GP
        P[n:, :n] = GP.T
        P[n:, n:] = self.Pcc
        return P

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
        """Forget the level of worker(s) ``i`` (a return from a stall); ``i`` an index or index array."""
        self.d[i] += var
        self.pend_y[i] = np.nan

    def _drift(self, q):
        """Time update: levels drift by ``q``, coefficients by ``q_coef`` (see Notes)."""
        self.d += q
        if not self.m or self.q_coef == 0.0:
            return
        old = self.Pcc
        new = old + self.q_coef * np.eye(self.m)
        # keep Pac = G Pcc and every Var(a_i) exact: G' = G Pcc Pcc'^-1, d' = d + g Pcc g - g' Pcc' g'
        var_before = np.einsum("ij,jk,ik->i", self.G, old, self.G)
        self.G = np.linalg.solve(new, (self.G @ old).T).T
        var_after = np.einsum("ij,jk,ik->i", self.G, new, self.G)
        self.d += np.maximum(var_before - var_after, 0.0)
        self.Pcc = new

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
        self._drift(q)
        changed = np.zeros(n, dtype=bool)
        outlier = np.zeros(n, dtype=bool)
        self.innovation = np.zeros(n)
        idx = np.flatnonzero(valid)
        if idx.size == 0:
            return changed, outlier
        c = self.state[n:]
        X = x[idx] if m else np.zeros((idx.size, 0))
        nu = y[idx] - self.state[idx] - (X @ c if m else 0.0)
        # marginal predicted variance of every measurement: h P h + r with h = e_i + x_i
        if m:
            Ht = self.G[idx] + X  # y_i depends on c through a_i's regression and its own signals
            var = self.d[idx] + np.einsum("kj,jl,kl->k", Ht, self.Pcc, Ht) + r
        else:
            var = self.d[idx] + r
        sd = np.sqrt(np.maximum(var, 1e-12))
        self.innovation[idx] = nu
        # a worker's first measurement (diffuse level) is never an outlier, however large its log speed
        first = (self.d[idx] + (var - self.d[idx] - r)) > 0.5 * self.diffuse
        out = (np.abs(nu) > self.z * sd) & ~first
        keep = ~out
        if out.any():
            j = np.flatnonzero(out)
            i = idx[j]
            py = self.pend_y[i]
            has = np.isfinite(py)
            pu = py - (np.einsum("kj,j->k", self.pend_x[i], c) if m else 0.0)
            u = y[i] - (X[j] @ c if m else 0.0)
            same = np.sign(pu - self.state[i]) == np.sign(nu[j])
            conf = has & same & (np.abs(u - pu) <= self.z * np.sqrt(2.0 * r))
            ci = i[conf]
            self.d[ci] += 1.0  # change point: let the level jump
            self.pend_y[ci] = np.nan
            changed[ci] = True
            keep[j[conf]] = True
            self.changes += int(conf.sum())
            hold = ~conf
            self.pend_y[i[hold]] = y[i[hold]]
            if m:
                self.pend_x[i[hold]] = X[j[hold]]
            outlier[i[hold]] = True
        self.pend_y[idx[keep & ~changed[idx]]] = np.nan
        k = idx[keep]
        if k.size == 0:
            return changed, outlier
        self._measure(k, y[k], x[k] if m else None, r)
        return changed, outlier

    def _measure(self, k, yk, xk, r):
        """Condition on ``y_k = a_k + x_k . c + e`` for distinct workers ``k`` (exact, O(|k| m^2))."""
        n, m = self.n, self.m
        a = self.state[:n]
        dk = self.d[k]
        s = dk + r  # Var(y_k | c)
        if m:
            c = self.state[n:]
            Ht = self.G[k] + xk  # y_k = a_hat_k + x_k c_hat + Ht (c - c_hat) + (eps_k + e_k)
            resid = yk - a[k] - xk @ c
            # c | y: information form, Pcc' = (Pcc^-1 + Ht^T S^-1 Ht)^-1 = (I + Pcc A)^-1 Pcc
            A = Ht.T @ (Ht / s[:, None])
            bvec = Ht.T @ (resid / s)
            Pcc_new = np.linalg.solve(np.eye(m) + self.Pcc @ A, self.Pcc)
            Pcc_new = 0.5 * (Pcc_new + Pcc_new.T)
            dc = Pcc_new @ bvec
            # a_i | c, y_i: gain kappa on the part of y_i not explained by c
            kappa = dk / s
            Gk = self.G[k] - kappa[:, None] * Ht
            shift = self.G @ dc  # E[a | c] re-centred on the new c_hat (every worker)
            a_new = a + shift
            a_new[k] = a[k] + kappa * resid + Gk @ dc
            self.G[k] = Gk
            self.state[:n] = a_new
            self.state[n:] = c + dc
            self.Pcc = Pcc_new
        else:
            kappa = dk / s
            self.state[k] = a[k] + kappa * (yk - a[k])
        self.d[k] = dk * r / s


class SignalHold:
    """Deadband hold of noisy exogenous signals.

    A held value moves to the new reading only when the reading leaves a band
    of ``z`` noise standard deviations around it; the noise scale is the
    pooled robust spread of first differences (median absolute deviation).

    Parameters
    ----------
    n, m : int
    z : float
    forget : float
        Forgetting factor of the noise-scale estimate.

    Notes
    -----
    Values are returned relative to each worker's first reading: the
    per-worker level absorbs the rest, and the level and the coefficients
    are not confounded at the start.

    Regressing speed on a signal whose variation is mostly reading noise
    shrinks its coefficient towards 0 (errors-in-variables attenuation) and
    makes the filter confidently wrong when a real co-tenant arrives; holding
    the signal through its noise leaves only real moves to learn from.
    """

    def __init__(self, n, m, z=3.5, forget=0.02):
        self.z = float(z)
        self.forget = float(forget)
        self.held = None
        self.last = None
        self.scale = np.nan
        self.weight = 0.0

    def update(self, x):
        """Feed a reading ``x`` (n, m); return the held values minus the first reading (n, m)."""
        if self.held is None:
            self.held = x.copy()
            self.last = x.copy()
            self.origin = x.copy()
            return self.held - self.origin
        d = np.abs(x - self.last)
        self.last = x.copy()
        # robust per-signal spread of one reading's noise: MAD of differences / sqrt(2)
        s = 1.4826 * np.median(d, axis=0) / np.sqrt(2.0)
        if not np.all(np.isfinite(self.scale)):
            self.scale = s
        else:
            f = max(self.forget, 1.0 / (1.0 + self.weight))
            self.scale = (1.0 - f) * self.scale + f * s
        self.weight += 1.0
        band = self.z * np.maximum(self.scale, 1e-4)
        move = np.abs(x - self.held) > band[None, :]
        self.held = np.where(move, x, self.held)
        return self.held - self.origin


class EWMA:
    """Exponentially weighted moving average of measured speeds (the baseline).

    Parameters
    ----------
    n : int
    alpha : float in (0, 1]
        Weight of the newest measurement.
    """

    def __init__(self, n, alpha=0.3):
        self.alpha = float(alpha)
        self.value = np.full(n, np.nan)

    def update(self, speed, valid):
        """Blend finite measurements ``speed`` (n,) into the average."""
        first = valid & np.isnan(self.value)
        self.value[first] = speed[first]
        rest = valid & ~first
        self.value[rest] = self.alpha * speed[rest] + (1.0 - self.alpha) * self.value[rest]

    def predict(self):
        """ndarray (n,): the average (NaN if never seen)."""
        return self.value.copy()
