"""LB-BSP semi-dynamic batch sizing: :class:`LoadBalancer` and its policies (docs/model.md §6.3)."""

import math
import numbers

import numpy as np

from .._validation import COUNT_MAX, check_real_range, exact_int_sum
from ..errors import InvalidOptionError, InvalidProblemError, InvalidProblemTypeError
from ._estimators import EWMA, RobustLevel, SignalHold, SignalKalman
from ._model import _equal_finish as equal_finish, _float_array_iv, _step_time as step_time, round_to_batch  # unchecked kernels

__all__ = ["LoadBalancer", "POLICIES", "PREDICTORS", "MAX_WORKERS", "MAX_SIGNALS"]

#: Most workers one balancer takes (memory is about 0.3 kB per worker, time linear).
MAX_WORKERS = 1_000_000
#: Most exogenous signals per observation (the filter is O(n m^2)).
MAX_SIGNALS = 32

#: Policy names accepted by :class:`LoadBalancer`.
POLICIES = ("bsp", "static", "naive", "cpu", "gpu", "fl")
#: Speed predictors of the "cpu", "gpu" and "fl" policies.
PREDICTORS = ("narx", "ewma")

_OPTIONS = {
    "bsp": set(),
    "static": set(),
    "naive": set(),
    "cpu": {"predictor", "hysteresis", "ewma_alpha", "z"},
    "gpu": {"predictor", "knees", "window", "max_window", "step", "tol", "reopen", "ewma_alpha", "z"},
    "fl": {"predictor", "deadline", "hysteresis", "ewma_alpha", "z"},
}


# ---------------------------------------------------------------- validation
def _int_iv(value, name, minimum, fix, maximum=COUNT_MAX):
    """``value`` as an int in [minimum, maximum] (a whole float is accepted), else a clear error."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
                and math.isfinite(float(value)) and float(value).is_integer():
            value = int(value)
        else:
            raise InvalidProblemTypeError(f"{name} must be an integer; got {value!r}. {fix}")
    value = int(value)
    if value < minimum:
        raise InvalidProblemError(f"{name} must be >= {minimum}; got {value}. {fix}")
    if maximum is not None and value > maximum:
        raise InvalidProblemError(
            f"{name} must be at most {maximum} (the supported range is [{minimum}, {maximum}]); got {value}. {fix}"
        )
    return value


def _float_iv(value, name, lo, hi, fix, lo_open=False):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidOptionError(f"{name} must be a number; got {value!r}. {fix}")
    value = float(value)
    bad = not math.isfinite(value) or value > hi or (value <= lo if lo_open else value < lo)
    if bad:
        rng = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
        raise InvalidOptionError(f"{name} must lie in {rng}; got {value!r}. {fix}")
    return value


def _vector_iv(value, name, n, what):
    """A per-worker float vector of shape (n,) (NaN/inf not yet checked)."""
    arr = _float_array_iv(value, name, what)
    if arr.ndim == 0:
        raise InvalidProblemError(
            f"{name} must have one value per worker, shape ({n},); got the scalar {value!r}."
        )
    if arr.shape != (n,):
        raise InvalidProblemError(
            f"{name} must have one value per worker, shape ({n},); got shape {arr.shape}. "
            f"Pass exactly n_workers = {n} values."
        )
    return arr


def _caps_iv(memory_caps, n, global_batch, min_batch):
    """Caps as float64 (n,), each clipped to ``global_batch`` (a larger cap binds nothing)."""
    if memory_caps is None:
        return np.full(n, np.inf)
    caps = _vector_iv(memory_caps, "memory_caps", n, "a maximum batch in samples")
    if np.isnan(caps).any():
        i = int(np.flatnonzero(np.isnan(caps))[0])
        raise InvalidProblemError(f"memory_caps must not be NaN; got NaN for worker {i}. Use inf for no cap.")
    fin = np.isfinite(caps)
    if np.any(caps[fin] != np.round(caps[fin])) or np.any(caps == -np.inf):
        i = int(np.flatnonzero((fin & (caps != np.round(caps))) | (caps == -np.inf))[0])
        raise InvalidProblemError(
            f"memory_caps must be whole numbers of samples (or inf); got {float(caps[i])!r} for worker {i}."
        )
    low = np.flatnonzero(caps < min_batch)
    if low.size:
        i = int(low[0])
        raise InvalidProblemError(
            f"memory_caps[{i}] = {caps[i]:g} is below min_batch = {min_batch}: every worker must fit "
            "its minimum batch. Raise the cap or lower min_batch."
        )
    caps = np.where(fin, np.minimum(caps, float(global_batch)), np.inf)
    if not np.isinf(caps).any():
        total = exact_int_sum(caps.astype(np.int64))
        if total < global_batch:
            raise InvalidProblemError(
                f"global_batch = {global_batch} does not fit the memory caps: sum(memory_caps) = "
                f"{total}. Raise the caps, add workers or lower the global batch."
            )
    return caps


def _seconds_iv(value, name, n, allow_zero):
    """Per-worker seconds (n,): no NaN, > 0 (or >= 0), inf allowed, finite ones in the supported range."""
    t = _vector_iv(value, name, n, "a time in seconds")
    if np.isnan(t).any():
        i = int(np.flatnonzero(np.isnan(t))[0])
        raise InvalidProblemError(
            f"{name} must not be NaN; got NaN for worker {i}. Report inf for a worker that made no progress."
        )
    bad = np.flatnonzero(t < 0 if allow_zero else t <= 0)
    if bad.size:
        i = int(bad[0])
        rel = ">= 0" if allow_zero else "> 0"
        raise InvalidProblemError(
            f"{name} must be {rel} seconds; got {float(t[i])!r} for worker {i}. Report the pure "
            "compute time of the batch it ran (inf if it made no progress)."
        )
    check_real_range(name, np.where(np.isfinite(t), t, 0.0), error=InvalidProblemError,
                     fix="Report times in seconds (inf for no progress).")
    return t


# ------------------------------------------------------------ speed models
class _SpeedModel:
    """Per-worker log-speed predictor shared by the "cpu", "gpu" and "fl" policies.

    ``predictor="narx"``: :class:`SignalKalman` (drifting per-worker levels
    plus exogenous signals with shared coefficients, hiccup rejection,
    change points) whose noise variances come from the gain and innovation
    scale picked by the :class:`RobustLevel` filter bank.
    ``predictor="ewma"``: plain EWMA of measured speeds (signals ignored).
    """

    def __init__(self, n, predictor, ewma_alpha, z):
        self.n = n
        self.z = z
        self.predictor = predictor
        self.bank = RobustLevel(n, z=z)
        self.ewma = EWMA(n, ewma_alpha)
        self.kf = None
        self.hold = None
        self.x_cur = None
        self.x_next = None
        self.stalled = np.zeros(n, dtype=bool)
        self.last_change = np.zeros(n, dtype=bool)
        self.hedge = np.zeros(n)
        # slowdown outliers seen / confirmed as real (weak prior: 1 in 4 is real)
        self.slow_seen, self.slow_real = 2.0, 0.5
        self.slow_pending = np.zeros(n, dtype=bool)

    def noise(self):
        """(q, r): level drift and measurement variances from the filter bank."""
        g = float(self.bank.gains[self.bank.best])
        s2 = self.bank.sigma**2 if np.isfinite(self.bank.sigma) else 0.05**2
        return g * g * s2, (1.0 - g) * s2

    def update(self, y, valid, x_cur, x_next, share=None):
        """Feed log speeds ``y`` (n,) measured under signals ``x_cur`` (n, m) or None.

        ``x_next`` (n, m) or None: the signals read now, for the next iteration.
        ``share`` (n,): each worker's fraction of the global batch (for the hedge).
        """
        n = self.n
        if x_next is not None and self.predictor != "ewma":
            if self.hold is None:
                self.hold = SignalHold(n, x_next.shape[1], z=self.z)
                self.x_next = self.hold.update(x_cur)
            x_cur = self.x_next
            x_next = self.hold.update(x_next)
        self.x_cur, self.x_next = x_cur, x_next
        back = valid & self.stalled
        self.stalled = ~valid
        if self.predictor == "ewma":
            self.ewma.update(np.where(valid, np.exp(np.where(valid, y, 0.0)), 0.0), np.ones(n, dtype=bool))
            self.last_change = back
            return back
        m = 0 if x_cur is None else x_cur.shape[1]
        if self.kf is None:
            self.kf = SignalKalman(n, m, z=self.z)
        u = self.kf.residual(np.where(valid, y, 0.0), x_cur)
        back_i = np.flatnonzero(back)
        self.bank.reset(back_i, u[back_i])
        self.kf.inflate(back_i)
        upd = valid & ~back
        self.bank.update(np.where(upd, u, 0.0), upd)
        q, r = self.noise()
        changed, outlier = self.kf.update(np.where(valid, y, 0.0), valid, x_cur, q, r)
        ch_i = np.flatnonzero(changed)
        self.bank.reset(ch_i, u[ch_i])
        # learn how often a slowdown outlier is real (confirmed next iteration)
        resolved = self.slow_pending & valid
        self.slow_seen += float(resolved.sum())
        self.slow_real += float((resolved & changed).sum())
        nu = self.kf.innovation
        slow = outlier & (nu < 0)
        self.slow_pending = slow
        self.hedge = np.zeros(n)
        if slow.any():
            pi = self.slow_real / self.slow_seen
            f = np.exp(-nu)  # how many times slower the measurement says
            s = np.full(n, 1.0 / n) if share is None else share
            # expected next-iteration time (in units of the balanced time):
            # ignore  -> pi * f + (1 - pi)
            # believe -> pi * 1 + (1 - pi) * (1 + s (1 - 1/f))  (others absorb its work)
            ignore = pi * f + (1.0 - pi)
            believe = pi + (1.0 - pi) * (1.0 + s * (1.0 - 1.0 / f))
            take = slow & (believe < ignore)
            self.hedge[take] = nu[take]
        changed = changed | back
        self.last_change = changed
        return changed

    def predict(self):
        """Predicted log speed (n,) for the next iteration (NaN where never measured)."""
        x_next = self.x_next
        if self.predictor == "ewma":
            with np.errstate(divide="ignore"):
                return np.log(self.ewma.predict())
        if self.kf is None:
            return np.full(self.n, np.nan)
        out = self.kf.predict(x_next if self.kf.m else None) + self.hedge
        never = self.kf.level_var() > 50.0
        return np.where(never, np.nan, out)

    def level_sd(self):
        """Typical standard deviation of a predicted log speed (float)."""
        if self.predictor == "ewma" or self.kf is None:
            return 0.05
        d = self.kf.level_var()
        d = d[d < 50.0]
        return float(np.sqrt(np.median(d))) if d.size else 0.05


def _speeds_for_allocation(logv, stalled):
    """Speeds (n,) for the allocator: unknown -> mean of known, stalled -> 0."""
    v = np.exp(logv)
    known = np.isfinite(v) & ~stalled
    fill = float(np.exp(np.mean(logv[known]))) if known.any() else 1.0
    v = np.where(np.isfinite(v), v, fill)
    return np.where(stalled, 0.0, v)


# ----------------------------------------------------------------- policies
class _Policy:
    """Base: holds the bounds; ``update`` returns the next integer sizes."""

    predicted = None

    def __init__(self, n, B, lo, hi):
        self.n, self.B, self.lo, self.hi = n, B, lo, hi

    def equal(self):
        return round_to_batch(np.ones(self.n), self.B, self.lo, self.hi)

    def proportional(self, speed):
        return round_to_batch(speed, self.B, self.lo, self.hi)


class _BSP(_Policy):
    def update(self, b, times, x_cur, x_next):
        return b


class _Naive(_Policy):
    """Proportional to the last measured speeds (no memory, no robustness)."""

    def update(self, b, times, x_cur, x_next):
        speed = np.where(np.isfinite(times), b / times, 0.0)
        self.predicted = speed
        return self.proportional(speed)


class _Static(_Policy):
    """Proportional to the first measured speeds, then fixed."""

    sizes = None

    def update(self, b, times, x_cur, x_next):
        if self.sizes is None:
            speed = np.where(np.isfinite(times), b / times, 0.0)
            self.predicted = speed
            self.sizes = self.proportional(speed)
        return self.sizes


class _CPU(_Policy):
    """Linear time; b proportional to predicted speed, with hysteresis."""

    def __init__(self, n, B, lo, hi, predictor="narx", hysteresis=0.003, ewma_alpha=0.3, z=3.5):
        super().__init__(n, B, lo, hi)
        self.model = _SpeedModel(n, predictor, ewma_alpha, z)
        self.hysteresis = hysteresis
        self.switches = 0

    def update(self, b, times, x_cur, x_next):
        valid = np.isfinite(times)
        y = np.where(valid, np.log(b / np.where(valid, times, 1.0)), np.nan)
        self.model.update(y, valid, x_cur, x_next, b / self.B)
        logv = self.model.predict()
        v = _speeds_for_allocation(logv, self.model.stalled)
        self.predicted = v
        new = self.proportional(v)
        if np.array_equal(new, b):
            return b
        t_old = np.max(step_time(b, v))
        t_new = np.max(step_time(new, v))
        if t_new < t_old * (1.0 - self.hysteresis) or not np.isfinite(t_old):
            self.switches += 1
            return new
        return b


class _GPU(_Policy):
    """Piecewise-linear time model with caps, and the leader/straggler tuner.

    A (re)opened tuner closes after at most ``MAX_WINDOWS`` monitoring windows.

    Sizes change only at window ends (a tuner move) or at a re-open (a jump
    to the model's equal-finish sizes after a change point or a drift worth
    more than ``reopen``).  See :class:`LoadBalancer` for the options.
    """

    MAX_WINDOWS = 8

    def __init__(self, n, B, lo, hi, predictor="narx", knees=None, window=3, max_window=24,
                 step=None, tol=None, reopen=0.02, ewma_alpha=0.3, z=3.5):
        super().__init__(n, B, lo, hi)
        self.model = _SpeedModel(n, predictor, ewma_alpha, z)
        self.knee = np.zeros(n) if knees is None else np.asarray(knees, dtype=np.float64).copy()
        self.learn_knees = knees is None
        self.prev_b = None
        self.prev_t = None
        self.prev_x = None
        self.flat_streak = np.zeros(n, dtype=np.int64)
        self.flat_cand = np.zeros(n)
        self.window0 = window
        self.max_window = max_window
        self.step0 = step if step is not None else max(1, int(round(B / (16.0 * n))))
        self.tol = tol
        self.reopen_tol = reopen
        self.window = window
        self.step = self.step0
        self.count = 0
        self.state = "open"
        self.direction = np.zeros(n, dtype=np.int64)
        self.windows = 0  # windows since the last (re)open
        self.windows_total = 0
        self.converged_after = []  # windows each (re)open took to converge
        self.reopens = 0
        self.moves = 0
        self.buf = []
        self.noise_sd = None

    def _open(self, sizes):
        self.state = "open"
        self.window = self.window0
        self.step = self.step0
        self.count = 0
        self.windows = 0
        self.buf = []
        self.direction[:] = 0
        self.reopens += 1
        return sizes

    def _close(self):
        if self.state == "open":
            self.converged_after.append(self.windows)
        self.state = "closed"

    def _learn_knees(self, b, times, x_cur):
        """Raise knee estimates from two consecutive sub-linear responses to a big size change.

        Between iterations ``t-1`` and ``t`` (no signal change), a batch that
        moved by a factor >= 1.65 while the time moved with elasticity
        ``d log t / d log b <= 0.7`` is evidence of the flat region; with the
        knee ``k`` between the two sizes, ``t_lo / t_hi = k / b_hi``.  Two
        such iterations in a row are required (a one-off hiccup cannot make
        two), and estimates only ever raise the knee.  Returns the workers
        whose knee changed.
        """
        changed = np.zeros(self.n, dtype=bool)
        if self.prev_b is not None:
            ok = np.isfinite(times) & np.isfinite(self.prev_t)
            if x_cur is not None and self.prev_x is not None:
                ok &= np.all(np.abs(x_cur - self.prev_x) < 1e-12, axis=1)
            db = np.log(b / self.prev_b)
            big = ok & (np.abs(db) >= 0.5)
            with np.errstate(divide="ignore", invalid="ignore"):
                e = np.where(big, np.log(np.where(ok, times, 1.0) / np.where(ok, self.prev_t, 1.0)) / np.where(big, db, 1.0), 1.0)
            flat = big & (e <= 0.7)
            self.flat_streak[~flat] = 0
            self.flat_cand[~flat] = 0.0
            f = np.flatnonzero(flat)
            if f.size:
                bf, pb = b[f].astype(np.float64), self.prev_b[f]
                up = bf >= pb
                hi_b, lo_b = np.maximum(bf, pb), np.minimum(bf, pb)
                t_hi = np.where(up, times[f], self.prev_t[f])
                t_lo = np.where(up, self.prev_t[f], times[f])
                k = np.clip(hi_b * t_lo / t_hi, lo_b, hi_b)
                self.flat_cand[f] = np.maximum(self.flat_cand[f], k)
                self.flat_streak[f] += 1
                move = f[(self.flat_streak[f] >= 2) & (self.flat_cand[f] > self.knee[f] * 1.05)]
                self.knee[move] = np.minimum(self.flat_cand[move], self.hi[move])
                changed[move] = True
        self.prev_b, self.prev_t = b.astype(np.float64), np.where(np.isfinite(times), times, np.nan)
        self.prev_x = None if x_cur is None else x_cur.copy()
        return changed

    def update(self, b, times, x_cur, x_next):
        valid = np.isfinite(times)
        knee_moved = self._learn_knees(b, times, self.model.x_next) if self.learn_knees else np.zeros(self.n, bool)
        if self.model.kf is not None:
            self.model.kf.inflate(np.flatnonzero(knee_moved))  # the level was measured with the old knee
        eff = np.maximum(b, self.knee)
        y = np.where(valid, np.log(eff / np.where(valid, times, 1.0)), np.nan)
        changed = self.model.update(y, valid, x_cur, x_next, b / self.B) | knee_moved
        logv = self.model.predict()
        v = _speeds_for_allocation(logv, self.model.stalled)
        self.predicted = v
        # ---- re-open: a change point, or the model's equal-finish sizes are worth it
        target, _ = equal_finish(v, self.B, self.lo, self.hi, self.knee)
        best = round_to_batch(target, self.B, self.lo, self.hi)
        t_cur = float(np.max(step_time(b, v, self.knee)))
        t_best = float(np.max(step_time(best, v, self.knee)))
        gain = 1.0 - t_best / t_cur if np.isfinite(t_cur) else 1.0
        if changed.any() or gain > self.reopen_tol:
            return self._open(best)
        # ---- monitoring window on the measured times of the current sizes
        self.buf.append(times)
        self.count += 1
        if self.count < self.window:
            return b
        win = np.asarray(self.buf)
        med = np.median(win, axis=0)  # robust to a one-off hiccup
        self.buf = []
        # timing noise at fixed sizes: pooled MAD of log times around the window medians
        ok = np.isfinite(win).all(axis=0)
        if ok.any() and win.shape[0] >= 2:
            dev = np.abs(np.log(win[:, ok]) - np.log(med[ok]))
            s_w = 1.4826 * float(np.median(dev)) * math.sqrt(win.shape[0] / (win.shape[0] - 1.0))
            self.noise_sd = s_w if self.noise_sd is None else 0.8 * self.noise_sd + 0.2 * s_w
        self.count = 0
        self.windows += 1
        self.windows_total += 1
        if self.state == "closed":
            return b
        if self.windows >= self.MAX_WINDOWS:  # the stated bound: close, a drift re-opens
            self._close()
            return b
        can_give = b > self.lo
        can_take = (b < self.hi) & np.isfinite(med)
        if not can_give.any() or not can_take.any():
            self._close()
            return b
        s = int(np.argmax(np.where(can_give, med, -np.inf)))
        ell = int(np.argmin(np.where(can_take, med, np.inf)))
        sigma = self.noise_sd if self.noise_sd is not None else 0.05
        # a median of W log-normal times has sd ~1.25 sigma / sqrt(W); the gap of two, x sqrt(2)
        tol = self.tol if self.tol is not None else max(0.005, 2.5 * 1.25 * sigma * math.sqrt(2.0 / self.window))
        if s == ell or med[s] <= med[ell] * (1.0 + tol):
            self._close()
            return b
        room = min(b[s] - self.lo[s], self.hi[ell] - b[ell])
        if np.isfinite(med[s]):
            # samples that equalise the pair, from their measured per-sample rates
            r_s, r_l = b[s] / med[s], b[ell] / med[ell]
            star = (b[s] * r_l - b[ell] * r_s) / (r_s + r_l)
            delta = int(min(self.step, max(math.ceil(star), 0), room))
            if delta >= 1 and max((b[s] - delta) / r_s, (b[ell] + delta) / r_l) >= med[s]:
                delta = 0  # the move would not shorten the pair's slower time
        else:
            delta = int(min(self.step, room))
        if delta < 1:
            self._close()
            return b
        if self.direction[s] == 1 or self.direction[ell] == -1:  # the moves reversed
            self.step = max(1, self.step // 2)
            self.window = min(2 * self.window, self.max_window)
        self.direction[s], self.direction[ell] = -1, 1
        new = b.copy()
        new[s] -= delta
        new[ell] += delta
        self.moves += 1
        return new


class _FL(_Policy):
    """Federated rounds: compute + upload time, minimum share, deadline, dropouts."""

    def __init__(self, n, B, lo, hi, predictor="narx", deadline=None, hysteresis=0.003,
                 ewma_alpha=0.3, z=3.5):
        super().__init__(n, B, lo, hi)
        self.model = _SpeedModel(n, predictor, ewma_alpha, z)
        self.upload = RobustLevel(n, z=z)
        self.deadline = deadline
        self.hysteresis = hysteresis
        self.dropped = np.zeros(n, dtype=bool)
        self.excluded = np.zeros(n, dtype=bool)

    def update(self, b, times, x_cur, x_next, upload=None):
        valid = np.isfinite(times)
        self.dropped = ~valid
        y = np.where(valid, np.log(b / np.where(valid, times, 1.0)), np.nan)
        self.model.update(y, valid, x_cur, x_next, b / self.B)
        if upload is not None:
            ok = np.isfinite(upload) & (upload > 0)
            self.upload.update(np.where(ok, np.log(np.where(ok, upload, 1.0)), 0.0), ok)
        u = np.exp(self.upload.predict()) if upload is not None or np.isfinite(self.upload.level).any() else np.zeros(self.n)
        u = np.where(np.isfinite(u), u, 0.0)
        logv = self.model.predict()
        v = _speeds_for_allocation(logv, self.model.stalled)
        excluded = v <= 0
        if self.deadline is not None:
            with np.errstate(divide="ignore"):
                t_min = np.where(v > 0, self.lo / np.where(v > 0, v, 1.0), np.inf) + u
            excluded = excluded | (t_min > self.deadline)
            if excluded.all():
                excluded = v <= 0
        self.excluded = excluded
        v_alloc = np.where(excluded, 0.0, v)
        self.predicted = v
        target, _ = equal_finish(v_alloc, self.B, self.lo, self.hi, 0.0, u * v_alloc)
        new = round_to_batch(target, self.B, self.lo, self.hi)
        if self.dropped.any() or self._goodput(new, v, u) > self._goodput(b, v, u) * (1.0 + self.hysteresis):
            return new
        return b

    def _goodput(self, b, v, u):
        """Predicted samples aggregated per second of round for sizes ``b``."""
        t = step_time(b, v, 0.0, u * v)
        T = float(np.max(t))
        if self.deadline is not None:
            T = min(T, self.deadline)
        if not np.isfinite(T) or T <= 0:
            return 0.0
        return float(b[t <= T * (1.0 + 1e-12)].sum()) / T


# --------------------------------------------------------------- the class
class LoadBalancer:
    """Semi-dynamic batch sizing for one data-parallel job (LB-BSP).

    Call :meth:`observe` at every synchronisation barrier with each worker's
    pure compute time for the sizes it just ran; use the returned sizes for
    the next iteration.  Sizes change only at barriers.

    Parameters
    ----------
    global_batch : int
        B, samples per iteration, in [1, 2**53]; the sizes always sum to it.
    n_workers : int
        Number of workers n, in [1, MAX_WORKERS] (1,000,000).  Memory and
        time per :meth:`observe` are linear in n (measured in docs/balance.md).
    policy : {"cpu", "gpu", "fl", "bsp", "static", "naive"}, default "cpu"
        ``"bsp"``: equal sizes (the baseline).  ``"static"``: proportional to
        the first measured speeds, then fixed.  ``"naive"``: proportional to
        the last measured speeds.  ``"cpu"``: proportional to predicted
        speeds (linear time).  ``"gpu"``: piecewise-linear time with a knee
        and memory caps, tuned per monitoring window.  ``"fl"``: federated
        rounds with upload times, a minimum share, a deadline and dropouts.
    memory_caps : array_like of int, shape (n,), optional
        Largest batch each worker can hold (samples, or inf); default no cap.
        A cap above ``global_batch`` binds nothing and is kept as ``global_batch``.
    min_batch : int, default 1
        Smallest batch of any worker (for ``"fl"``: the minimum share).
    predictor : {"narx", "ewma"}, default "narx"
        Speed predictor of ``"cpu"``, ``"gpu"`` and ``"fl"``.  ``"narx"``:
        robust level of past log speeds (filter bank, hiccup rejection,
        change points) plus exogenous signals fitted online by recursive
        least squares.  ``"ewma"``: plain EWMA of measured speeds.
    hysteresis : float, default 0.003
        (``"cpu"``, ``"fl"``) change sizes only when the predicted iteration
        time drops by more than this fraction, so the sampler is not churned.
    ewma_alpha : float in (0, 1], default 0.3
        Weight of the newest measurement for ``predictor="ewma"``.
    z : float, default 3.5
        Outlier threshold in robust standard deviations (``"narx"``).
    knees : array_like of float, shape (n,), optional
        (``"gpu"``) batch size below which a worker's time is flat.  Default:
        learned online (raised when two consecutive big size changes get a
        sub-linear time response); the re-calibrated model and the tuner
        correct what is not learned yet.
    window, max_window : int, default 3 and 24
        (``"gpu"``) first and largest monitoring window, in iterations.
    step : int, optional
        (``"gpu"``) first tuner move Δ in samples; default ``max(1, round(B / 16n))``.
    tol : float, optional
        (``"gpu"``) gap between the straggler's and the leader's window-median
        times below which the tuner has converged; default
        ``max(0.005, 2.5 * 1.25 * s * sqrt(2 / window))`` with ``s`` the
        timing noise measured inside windows.
    reopen : float, default 0.02
        (``"gpu"``) re-open (jump to the model's equal-finish sizes) when
        that would cut the predicted iteration time by more than this.
    deadline : float, optional
        (``"fl"``) round deadline in seconds: clients predicted to miss it
        even at the minimum share get the minimum share.

    Attributes
    ----------
    batch_sizes : ndarray of int64, shape (n,)
        Sizes for the next iteration (a copy).
    predicted_speeds : ndarray of float64, shape (n,) or None
        Speeds (samples/s) the last decision used; None before the first
        observation and for ``"bsp"``.
    iteration : int
        Observations so far.

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError, InvalidOptionError
        Sizes that cannot fit (``n * min_batch > B`` or ``sum(memory_caps) < B``),
        a wrong number of values, NaN or non-positive times, unknown options.

    Notes
    -----
    C. Chen, Q. Weng, W. Wang, B. Li, B. Li, *Semi-Dynamic Load Balancing:
    Efficient Distributed Learning in Non-Dedicated Environments*, ACM SoCC
    2020, and *Accelerating Distributed Learning in Non-Dedicated
    Environments*, IEEE TCC 2021.  The paper's NARX network is replaced by a
    small linear model in log speed (robust level + exogenous regression),
    cheap enough to run at every barrier; see ``docs/balance.md``.

    A worker that reports ``inf`` (no progress) is treated as stalled: it gets
    ``min_batch`` until it reports a finite time again, and it is never
    divided by.

    Examples
    --------
    >>> lb = LoadBalancer(96, 3, policy="cpu")
    >>> lb.batch_sizes.tolist()
    [32, 32, 32]
    >>> lb.observe([1.0, 1.0, 2.0]).tolist()
    [39, 38, 19]
    """

    def __init__(
        self, global_batch: int, n_workers: int, policy: str = "cpu",
        memory_caps: "np.typing.ArrayLike | None" = None, min_batch: int = 1, **options,
    ) -> None:
        self.global_batch = _int_iv(global_batch, "global_batch", 1, "Pass the samples per iteration.")
        self.n_workers = _int_iv(n_workers, "n_workers", 1, "Pass the number of workers.", maximum=MAX_WORKERS)
        self.min_batch = _int_iv(min_batch, "min_batch", 1, "Every worker needs at least one sample.")
        n, B = self.n_workers, self.global_batch
        if n * self.min_batch > B:
            raise InvalidProblemError(
                f"global_batch = {B} cannot give each of the {n} workers min_batch = {self.min_batch} "
                f"samples ({n * self.min_batch} needed). Lower min_batch, use fewer workers or raise "
                "the global batch."
            )
        if not isinstance(policy, str) or policy not in POLICIES:
            raise InvalidOptionError(f"policy must be one of {POLICIES}; got {policy!r}.")
        self.policy = policy
        unknown = sorted(set(options) - _OPTIONS[policy])
        if unknown:
            allowed = sorted(_OPTIONS[policy]) or "none"
            raise InvalidOptionError(
                f"option {unknown[0]!r} does not apply to policy={policy!r}; its options are {allowed}."
            )
        caps = _caps_iv(memory_caps, n, B, self.min_batch)
        self.memory_caps = caps
        lo = np.full(n, float(self.min_batch))
        self._lo, self._hi = lo, caps
        self._impl = self._make_policy(policy, options)
        self._sizes = self._impl.equal()
        self.iteration = 0
        self._signal_names = None
        self._signal_log = None
        self._x_cur = None

    # ------------------------------------------------------------ options
    def _make_policy(self, policy, opts):
        n, B, lo, hi = self.n_workers, self.global_batch, self._lo, self._hi
        if policy == "bsp":
            return _BSP(n, B, lo, hi)
        if policy == "static":
            return _Static(n, B, lo, hi)
        if policy == "naive":
            return _Naive(n, B, lo, hi)
        kw = {}
        pred = opts.get("predictor", "narx")
        if not isinstance(pred, str) or pred not in PREDICTORS:
            raise InvalidOptionError(f"predictor must be one of {PREDICTORS}; got {pred!r}.")
        kw["predictor"] = pred
        kw["ewma_alpha"] = _float_iv(opts.get("ewma_alpha", 0.3), "ewma_alpha", 0.0, 1.0,
                                     "It is the weight of the newest speed.", lo_open=True)
        kw["z"] = _float_iv(opts.get("z", 3.5), "z", 1.0, 100.0, "Typical values are 3 to 5.")
        if policy in ("cpu", "fl"):
            kw["hysteresis"] = _float_iv(opts.get("hysteresis", 0.003), "hysteresis", 0.0, 0.5,
                                         "Use 0 to always follow the prediction.")
        if policy == "cpu":
            return _CPU(n, B, lo, hi, **kw)
        if policy == "fl":
            dl = opts.get("deadline")
            if dl is not None:
                dl = _float_iv(dl, "deadline", 0.0, math.inf, "Pass the round deadline in seconds.", lo_open=True) \
                    if not (isinstance(dl, numbers.Real) and dl == math.inf) else None
            return _FL(n, B, lo, hi, deadline=dl, **kw)
        knees = opts.get("knees")
        if knees is not None:
            knees = _vector_iv(knees, "knees", n, "a batch size in samples")
            if np.any(~np.isfinite(knees)) or np.any(knees < 0):
                i = int(np.flatnonzero(~np.isfinite(knees) | (knees < 0))[0])
                raise InvalidProblemError(f"knees must be finite and >= 0; got {float(knees[i])!r} for worker {i}.")
            check_real_range("knees", knees, error=InvalidProblemError, fix="Pass knees in samples.")
        window = _int_iv(opts.get("window", 3), "window", 1, "It is counted in iterations.")
        max_window = _int_iv(opts.get("max_window", 24), "max_window", window,
                             "It must be at least window.")
        step = opts.get("step")
        if step is not None:
            step = _int_iv(step, "step", 1, "It is the first tuner move in samples.")
        tol = opts.get("tol")
        if tol is not None:
            tol = _float_iv(tol, "tol", 0.0, 1.0, "It is a relative time gap.", lo_open=True)
        reopen = _float_iv(opts.get("reopen", 0.02), "reopen", 0.0, 1.0, "It is a relative time gain.")
        return _GPU(n, B, lo, hi, knees=knees, window=window, max_window=max_window, step=step,
                    tol=tol, reopen=reopen, **kw)

    # ------------------------------------------------------------ inputs
    def _times_iv(self, compute_times):
        return _seconds_iv(compute_times, "compute_times", self.n_workers, allow_zero=False)

    def _signals_iv(self, signals):
        n = self.n_workers
        names = tuple(sorted(signals))
        if self._signal_names is None:
            if not names:
                return None
            if len(names) > MAX_SIGNALS:
                raise InvalidOptionError(
                    f"observe takes at most {MAX_SIGNALS} signals; got {len(names)}. Pass the few that "
                    "explain speed (e.g. cpu_avail)."
                )
            self._signal_names = names
        elif names != self._signal_names:
            raise InvalidOptionError(
                f"signals must be the same at every observe: the first call gave {list(self._signal_names)}, "
                f"this one {list(names)}. Pass every signal each iteration."
            )
        cols = []
        for name in names:
            arr = _vector_iv(signals[name], f"signal {name!r}", n, "a number")
            if not np.all(np.isfinite(arr)):
                i = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise InvalidProblemError(
                    f"signal {name!r} must be finite; got {float(arr[i])!r} for worker {i}. Repeat the last "
                    "known value when a reading is missing."
                )
            check_real_range(f"signal {name!r}", arr, error=InvalidProblemError,
                             fix="Rescale the signal (e.g. a fraction instead of a byte count).")
            cols.append(arr)
        x = np.stack(cols, axis=1)
        if self._signal_log is None:
            # positive signals (availabilities, free memory) act multiplicatively on speed
            self._signal_log = np.all(x > 0, axis=0)
        return np.where(self._signal_log[None, :], np.log(np.maximum(x, 1e-9)), x)

    # ------------------------------------------------------------ API
    @property
    def batch_sizes(self):
        """ndarray of int64, shape (n,): sizes for the next iteration (a copy)."""
        return self._sizes.copy()

    @property
    def predicted_speeds(self):
        """ndarray of float64, shape (n,), or None: speeds behind the last decision (samples/s)."""
        p = self._impl.predicted
        return None if p is None else np.array(p, dtype=np.float64)

    @property
    def tuner(self):
        """dict of the ``"gpu"`` tuner state (None for other policies).

        Keys: ``state`` ("open"/"closed"), ``window``, ``step``, ``windows``
        (since the last re-open), ``converged_after`` (windows each (re)open
        took to close), ``reopens``, ``moves``.
        """
        g = self._impl
        if not isinstance(g, _GPU):
            return None
        return {
            "state": g.state, "window": g.window, "step": g.step, "windows": g.windows,
            "converged_after": list(g.converged_after), "reopens": g.reopens, "moves": g.moves,
        }

    @property
    def dropped(self):
        """ndarray of bool (n,) or None: ``"fl"`` clients that reported no progress last round."""
        return self._impl.dropped.copy() if isinstance(self._impl, _FL) else None

    def observe(self, compute_times: "np.typing.ArrayLike", **signals) -> np.ndarray:
        """Record one iteration and return the next iteration's batch sizes.

        Parameters
        ----------
        compute_times : array_like of float, shape (n,)
            Each worker's pure compute time (seconds) for the sizes in
            :attr:`batch_sizes`; ``inf`` marks a worker that made no progress.
        **signals : array_like of float, shape (n,)
            Exogenous inputs read at this barrier that hold during the next
            iteration, e.g. ``cpu_avail=``, ``mem_avail=``; the same names at
            every call.  Positive signals enter the model in log.  For
            ``policy="fl"``, ``upload_times=`` (seconds, per client) is the
            upload time of the round just finished.

        Returns
        -------
        ndarray of int64, shape (n,)
            Sizes for the next iteration: sum ``global_batch``, each within
            ``[min_batch, memory_caps[i]]``.
        """
        t = self._times_iv(compute_times)
        upload = None
        if isinstance(self._impl, _FL) and "upload_times" in signals:
            signals = dict(signals)
            upload = _seconds_iv(signals.pop("upload_times"), "upload_times", self.n_workers, allow_zero=True)
        x_next = self._signals_iv(signals)
        x_cur = self._x_cur if self._x_cur is not None else x_next
        b = self._sizes
        if isinstance(self._impl, _FL):
            new = self._impl.update(b, t, x_cur, x_next, upload=upload)
        else:
            new = self._impl.update(b, t, x_cur, x_next)
        self._x_cur = x_next
        self._sizes = np.asarray(new, dtype=np.int64).copy()
        self.iteration += 1
        return self._sizes.copy()

    def __repr__(self):
        return (
            f"LoadBalancer(global_batch={self.global_batch}, n_workers={self.n_workers}, "
            f"policy={self.policy!r}, iteration={self.iteration})"
        )
