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
  (recursive least squares with drifting intercepts), with the same
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
        """Restart worker ``i`` at ``value`` (a confirmed change or a return from a stall)."""
        self.level[i, :] = value
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
        for j, i in enumerate(idx):
            if confirm[j]:
                self.reset(i, 0.5 * (ys[j] + pend[j]))
                changed[i] = True
                self.changes += 1
            elif out[j]:
                self.pending[i] = ys[j]
                outlier[i] = True
            else:
                self.pending[i] = np.nan
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
    """Joint Kalman filter of per-worker log-speed levels and shared signal effects.

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
        """Forget worker ``i``'s level (a return from a stall)."""
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
