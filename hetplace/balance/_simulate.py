"""A simulator of non-dedicated clusters for LB-BSP policies (docs/model.md §6.5).

:func:`make_scenario` draws a seeded :class:`Scenario`: true per-worker speeds
over time (heterogeneous base speeds, step slowdowns from co-tenants, a
mean-reverting random walk, smooth periodic interference, a worker slowing to
a crawl), GPU knees and memory caps, communication time, measurement noise
(jitter on every measured time, rare one-off 3x hiccups), exogenous signals
and, for federated rounds, upload times and dropouts.

:func:`simulate` runs a :class:`~hetplace.balance.LoadBalancer` policy on it
and scores every iteration against the oracle that knows this iteration's
true speeds.
"""

import numbers
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidOptionError, MissingDependencyError
from ._balancer import MAX_WORKERS, POLICIES, LoadBalancer, _int_iv
from ._model import _optimal_integer_allocation as optimal_integer_allocation, _step_time as step_time  # unchecked kernels: inputs are the simulator's own

__all__ = ["Scenario", "BalanceResult", "make_scenario", "simulate", "KINDS", "EVENTS"]

#: Worker kinds of :func:`make_scenario`.
KINDS = ("cpu", "gpu", "fl")
#: Most worker-iterations one scenario holds (each (T, n) array is 128 MiB at this size).
MAX_CELLS = 2**24
#: Speed disturbances :func:`make_scenario` can combine.
EVENTS = ("steps", "walk", "periodic", "crawl")

# Relative speed, memory cap (x B/n) and knee (x B/n) of three GPU generations,
# in the spirit of K80 / P100 / V100 ratios of Gavel's ResNet-50 throughputs.
_GPU_TYPES = np.array([
    # speed, cap, knee
    [1.0, 1.00, 0.30],
    [2.2, 1.30, 0.45],
    [3.3, 1.50, 0.55],
])


@dataclass(frozen=True)
class Scenario:
    """A seeded, fully materialised simulation input.

    Shapes: ``T`` iterations, ``n`` workers.  Row ``t`` of every per-iteration
    array describes iteration ``t``; signals have ``T + 1`` rows (row ``t + 1``
    is read at the barrier after iteration ``t``).

    Attributes
    ----------
    kind : {"cpu", "gpu", "fl"}
    global_batch : int
    speed : ndarray of float64, shape (T, n)
        True samples/s above the knee.
    knee : ndarray of float64, shape (n,)
        Flat region of the time model (0 for CPUs and FL clients).
    memory_caps : ndarray of float64, shape (n,)
        Largest batch per worker (inf when uncapped).
    comm_time : ndarray of float64, shape (T,)
        Communication seconds per iteration (added to every policy and the oracle).
    noise : ndarray of float64, shape (T, n)
        Measurement factor: measured = true compute time x noise (jitter and hiccups).
    signals : dict of str -> ndarray of float64, shape (T + 1, n)
        ``cpu_avail`` (co-tenant share of the CPU left to us, noisy) and
        ``mem_avail`` (unrelated to speed: a decoy the regression must ignore).
    upload : ndarray of float64, shape (T, n) or None
        (``"fl"``) upload seconds per client and round.
    available : ndarray of bool, shape (T, n)
        False where a client has dropped out (reports no progress).
    deadline : float or None
        (``"fl"``) round deadline in seconds.
    min_batch : int
    description : str
    """

    kind: str
    global_batch: int
    speed: np.ndarray
    knee: np.ndarray
    memory_caps: np.ndarray
    comm_time: np.ndarray
    noise: np.ndarray
    signals: dict
    upload: np.ndarray = None
    available: np.ndarray = None
    deadline: float = None
    min_batch: int = 1
    description: str = ""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def iterations(self):
        return self.speed.shape[0]

    @property
    def n_workers(self):
        return self.speed.shape[1]

    def offset(self, t):
        """Upload time as sample-equivalents (n,) at iteration ``t`` (0 outside FL)."""
        if self.upload is None:
            return np.zeros(self.n_workers)
        return self.upload[t] * self.speed[t]

    def true_times(self, t, b):
        """True compute (+ upload) seconds (n,) of sizes ``b`` at iteration ``t``."""
        return step_time(b, self.speed[t], self.knee, self.offset(t))

    def oracle_compute_times(self):
        """ndarray (T,): the oracle's compute seconds of every iteration (cached)."""
        self._oracle_all()
        return self._cache["oracle"]

    def oracle_samples(self):
        """ndarray (T,): samples whose gradients the oracle aggregates in every round (cached).

        ``global_batch`` outside FL; in FL, the samples of the clients that are
        available and finish by the deadline (a dropped client's minimum share is lost).
        """
        self._oracle_all()
        return self._cache["oracle_samples"]

    def _oracle_all(self):
        if "oracle" in self._cache:
            return
        times, got = np.empty(self.iterations), np.empty(self.iterations)
        for t in range(self.iterations):
            b, times[t] = self.oracle(t)
            if self.kind == "fl":
                done = self.available[t] & (self.true_times(t, b) <= self._deadline_or_inf())
                got[t] = float(b[done].sum())
            else:
                got[t] = float(self.global_batch)
        for arr in (times, got):
            arr.setflags(write=False)
        self._cache["oracle"], self._cache["oracle_samples"] = times, got

    def _deadline_or_inf(self):
        return np.inf if self.deadline is None else self.deadline

    def oracle(self, t):
        """(sizes, compute time) of the best integer split at iteration ``t``'s true speeds.

        In FL a dropped client keeps the minimum share, and the round ends at
        the deadline at the latest, as for any policy.
        """
        n = self.n_workers
        lo = np.full(n, self.min_batch, dtype=np.int64)
        hi = np.where(np.isfinite(self.memory_caps), self.memory_caps, 2.0**62).astype(np.int64)
        avail = self.available[t]
        if avail.all():
            b, T = optimal_integer_allocation(self.speed[t], self.global_batch, lo, hi, self.knee, self.offset(t))
        else:
            # dropped clients keep the minimum share and are not waited for
            speed = np.where(avail, self.speed[t], 0.0)
            b, _ = optimal_integer_allocation(np.where(avail, speed, 1e-300), self.global_batch, lo, hi,
                                              self.knee, np.where(avail, self.offset(t), 0.0))
            T = float(np.max(self.true_times(t, b)[avail])) if avail.any() else 0.0
        # the oracle plays by the round's rules: nobody is waited for past the deadline
        return b, min(T, self._deadline_or_inf())


def _episodes(rng, T, rate, dur_lo, dur_hi, fac_lo, fac_hi):
    """Multiplicative factor (T,) of random slowdown episodes (a co-tenant starts and stops)."""
    f = np.ones(T)
    t = _gap(rng, rate, T) if rate > 0 else T
    while t < T:
        d = int(rng.integers(dur_lo, dur_hi + 1))
        f[t:t + d] *= rng.uniform(fac_lo, fac_hi)
        t += d + _gap(rng, rate, T)
    return f


def _gap(rng, rate, T):
    """Steps to the next episode, an exponential draw of mean ``1 / rate``, capped at ``T`` (a rate so small
    that ``1 / rate`` overflows, e.g. a subnormal one, draws infinity: no further episode)."""
    g = rng.exponential(1.0 / rate)
    return T if not g < T else int(g)


def make_scenario(kind="cpu", *, n_workers=None, global_batch=None, iterations=500, seed=0,
                  events=EVENTS, jitter=0.05, hiccup_rate=0.01, hiccup_factor=3.0,
                  comm_fraction=0.1, signal_noise=0.02, step_rate=None, walk_sd=0.01,
                  dropout_rate=0.02, deadline_factor=3.0):
    """Draw a seeded scenario of a non-dedicated cluster.

    Parameters
    ----------
    kind : {"cpu", "gpu", "fl"}, default "cpu"
        ``"cpu"``: linear time, base speeds spread x3.  ``"gpu"``: three GPU
        generations (relative speeds 1, 2.2, 3.3) with knees and memory caps.
        ``"fl"``: clients spread x10 in speed, with upload times, dropouts and
        a deadline.
    n_workers : int, optional
        Default 8 (20 for ``"fl"``).
    global_batch : int, optional
        Default ``64 * n_workers``.
    iterations : int, default 500
        ``iterations * n_workers`` is at most ``MAX_CELLS`` (2**24).
    seed : int, default 0
        Everything is drawn from ``numpy.random.default_rng(seed)``.
    events : sequence of {"steps", "walk", "periodic", "crawl"}
        Disturbances to combine: co-tenant step slowdowns (x0.4-0.75 for
        20-80 iterations), a mean-reverting random walk of log speed,
        smooth periodic interference (amplitude 15-35 %, period 30-90
        iterations) on a quarter of the workers, and one worker slowing to a
        crawl (x0.06-0.15 for 30-90 iterations).
    jitter : float, default 0.05
        Standard deviation of the log measurement noise on every time.
    hiccup_rate : float, default 0.01
        Probability that one measurement is inflated by ``hiccup_factor``
        (a one-off: the true time is unaffected).
    hiccup_factor : float, default 3.0
    comm_fraction : float, default 0.1
        Communication time as a fraction of the balanced compute time at base
        speeds.
    signal_noise : float, default 0.02
        Noise of the ``cpu_avail`` reading.
    step_rate : float, optional
        Co-tenant arrivals per worker and iteration; default ``1 / (60 n)``
        times 4 (about four episodes per 300 iterations in the cluster).
    walk_sd : float, default 0.01
        Per-iteration standard deviation of the random walk of log speed.
    dropout_rate : float, default 0.02
        (``"fl"``) probability per client and round of dropping out (for 1-5 rounds).
    deadline_factor : float, default 3.0
        (``"fl"``) deadline as a multiple of the balanced round time at base speeds.

    Returns
    -------
    Scenario
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidOptionError(f"kind must be one of {KINDS}; got {kind!r}.")
    try:
        events = (events,) if isinstance(events, str) else tuple(events)
    except TypeError:
        raise InvalidOptionError(f"events must be a sequence drawn from {EVENTS}; got {events!r}.") from None
    bad = [e for e in events if not isinstance(e, str) or e not in EVENTS]
    if bad:
        raise InvalidOptionError(f"events must be drawn from {EVENTS}; got {bad[0]!r}.")
    n = _int_iv(n_workers if n_workers is not None else (20 if kind == "fl" else 8), "n_workers", 1,
                "Pass the number of workers.", maximum=MAX_WORKERS)
    B = _int_iv(global_batch if global_batch is not None else 64 * n, "global_batch", n,
                "It must give every worker at least one sample.")
    T = _int_iv(iterations, "iterations", 1, "Pass the number of iterations to simulate.",
                maximum=max(1, MAX_CELLS // n))
    seed = _int_iv(seed, "seed", 0, "Pass a non-negative integer seed.", maximum=2**128 - 1)
    for name, val, hi in (("jitter", jitter, 1.0), ("hiccup_rate", hiccup_rate, 1.0),
                          ("comm_fraction", comm_fraction, 100.0), ("signal_noise", signal_noise, 1.0),
                          ("walk_sd", walk_sd, 1.0), ("dropout_rate", dropout_rate, 1.0)):
        if isinstance(val, (bool, np.bool_)) or not isinstance(val, numbers.Real) or not 0.0 <= float(val) <= hi:
            raise InvalidOptionError(f"{name} must be a number in [0, {hi:g}]; got {val!r}.")
    for name, val, lo, hi in (("hiccup_factor", hiccup_factor, 1.0, 1e6), ("deadline_factor", deadline_factor, 1e-3, 1e6),
                              ("step_rate", 0.0 if step_rate is None else step_rate, 0.0, 1.0)):
        if isinstance(val, (bool, np.bool_)) or not isinstance(val, numbers.Real) or not lo <= float(val) <= hi:
            raise InvalidOptionError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {val!r}.")
    rng = np.random.default_rng(seed)

    # ---- base speeds, knees, caps
    knee = np.zeros(n)
    caps = np.full(n, np.inf)
    if kind == "gpu":
        types = rng.integers(0, 3, n)
        base = 400.0 * _GPU_TYPES[types, 0] * rng.uniform(0.9, 1.1, n)
        share = B / n
        knee = np.round(_GPU_TYPES[types, 2] * share)
        caps = np.round(_GPU_TYPES[types, 1] * share)
        short = B - caps.sum()
        if short > 0:  # make the batch fit: spread the shortfall over the caps
            caps += np.ceil(short / n)
    elif kind == "fl":
        base = 100.0 * np.exp(rng.normal(0.0, 0.8, n))
    else:
        base = 500.0 * rng.uniform(0.5, 1.5, n)

    # ---- contention (seen by the cpu_avail signal) and hidden drift
    contention = np.ones((T + 1, n))
    if "steps" in events:
        rate = step_rate if step_rate is not None else 4.0 / (300.0 * n)
        for i in range(n):
            contention[:, i] *= _episodes(rng, T + 1, rate, 20, 80, 0.4, 0.75)
    if "periodic" in events:
        k = max(1, n // 4)
        for i in rng.choice(n, size=k, replace=False):
            amp, per, ph = rng.uniform(0.15, 0.35), rng.uniform(30, 90), rng.uniform(0, 2 * np.pi)
            tt = np.arange(T + 1)
            contention[:, i] *= 1.0 - amp * 0.5 * (1.0 + np.sin(2 * np.pi * tt / per + ph))
    if "crawl" in events:
        i = int(rng.integers(0, n))
        start = int(rng.integers(T // 5, max(T // 5 + 1, (3 * T) // 5)))
        contention[start:start + int(rng.integers(30, 91)), i] *= rng.uniform(0.06, 0.15)
    drift = np.zeros((T + 1, n))
    if "walk" in events and walk_sd > 0:
        rho = 0.99
        w = np.zeros(n)
        for t in range(T + 1):
            w = rho * w + walk_sd * rng.standard_normal(n)
            drift[t] = w
    speed_all = base[None, :] * contention * np.exp(drift)
    speed = speed_all[:T]

    # ---- measurement noise: jitter on every time, rare one-off hiccups
    noise = np.exp(jitter * rng.standard_normal((T, n)))
    noise *= np.where(rng.random((T, n)) < hiccup_rate, hiccup_factor, 1.0)

    # ---- exogenous signals (read at the barrier before the iteration they describe)
    cpu_avail = np.clip(contention * np.exp(signal_noise * rng.standard_normal((T + 1, n))), 0.01, 1.0)
    mem = np.clip(0.6 + np.cumsum(0.02 * rng.standard_normal((T + 1, n)), axis=0), 0.2, 1.0)
    signals = {"cpu_avail": cpu_avail, "mem_avail": mem}

    # ---- communication
    nominal = B / base.sum()
    comm = comm_fraction * nominal * np.exp(0.05 * rng.standard_normal(T))

    upload = None
    available = np.ones((T, n), dtype=bool)
    deadline = None
    if kind == "fl":
        u0 = nominal * rng.uniform(0.2, 1.0, n)
        upload = u0[None, :] * np.exp(0.1 * rng.standard_normal((T, n)))
        for i in range(n):
            t = 0
            while t < T:
                if rng.random() < dropout_rate:
                    d = int(rng.integers(1, 6))
                    available[t:t + d, i] = False
                    t += d
                t += 1
        deadline = deadline_factor * (nominal + float(u0.mean()))
        comm = np.zeros(T)
    desc = f"{kind}: n={n}, B={B}, T={T}, seed={seed}, events={'+'.join(events) or 'none'}, jitter={jitter:g}, hiccups={hiccup_rate:g}"
    for arr in (speed, knee, caps, comm, noise, cpu_avail, mem, available):
        arr.setflags(write=False)
    return Scenario(kind=kind, global_batch=B, speed=speed, knee=knee, memory_caps=caps, comm_time=comm,
                    noise=noise, signals=signals, upload=upload, available=available, deadline=deadline,
                    min_batch=1, description=desc)


@dataclass
class BalanceResult:
    """Outcome of :func:`simulate`.

    Attributes
    ----------
    policy : str
    scenario : Scenario
    iteration_time : ndarray of float64, shape (T,)
        Achieved seconds per iteration (slowest worker + communication).
    oracle_time : ndarray of float64, shape (T,)
        Seconds per iteration of the oracle that knows this iteration's true
        speeds (best integer split incl. knees and caps, + communication).
    bsp_time : ndarray of float64, shape (T,) or None
        Seconds per iteration of equal sizes on the same scenario.
    batch_sizes : ndarray of int64, shape (T, n)
    predicted_speeds : ndarray of float64, shape (T, n)
        Speeds the policy predicted for each iteration (NaN where it had none).
    efficiency : float
        Time-weighted efficiency ``sum(oracle_time) / sum(iteration_time)``.
        In FL, where a round may lose samples (dropped or late clients),
        seconds per aggregated sample: ``(sum(oracle_time) / sum(oracle_samples))
        / (sum(iteration_time) / sum(samples))`` -- a policy cannot look fast by
        losing work; 0 when nothing was aggregated.
    compute_efficiency : float
        The same without communication time.
    samples, oracle_samples : ndarray of float64, shape (T,) or None
        (FL) samples aggregated per round by the policy and by the oracle.
    bsp_efficiency : float or None
    speedup_vs_bsp : float or None
        ``sum(bsp_time) / sum(iteration_time)``.
    prediction_error : float or None
        Mean absolute relative error of the predicted speeds against the true
        speeds, over iterations after the first ``warmup``.
    max_over_cap : int
        Largest excess of any size over its cap (0 when caps were respected).
    samples_aggregated : float
        Fraction of samples whose gradients arrived (1 outside FL).
    tuner : dict or None
        The ``"gpu"`` tuner state at the end.
    """

    policy: str
    scenario: Scenario
    iteration_time: np.ndarray
    oracle_time: np.ndarray
    bsp_time: np.ndarray
    batch_sizes: np.ndarray
    predicted_speeds: np.ndarray
    compute_time: np.ndarray
    oracle_compute: np.ndarray
    samples_aggregated: float = 1.0
    tuner: dict = None
    warmup: int = 10
    extra: dict = field(default_factory=dict)
    samples: np.ndarray = None
    oracle_samples: np.ndarray = None
    bsp_samples: np.ndarray = None

    def _per_sample(self, time, got):
        """Seconds per aggregated sample (``time`` alone when every round aggregates the batch)."""
        if got is None:
            return float(time.sum())
        n = float(got.sum())
        return float(time.sum()) / n if n > 0 else np.inf

    def _ratio(self, num_time, num_got, den_time, den_got):
        num, den = self._per_sample(num_time, num_got), self._per_sample(den_time, den_got)
        if not np.isfinite(den):
            return 0.0
        return float(num / den)

    @property
    def efficiency(self):
        return self._ratio(self.oracle_time, self.oracle_samples, self.iteration_time, self.samples)

    @property
    def compute_efficiency(self):
        return self._ratio(self.oracle_compute, self.oracle_samples, self.compute_time, self.samples)

    @property
    def bsp_efficiency(self):
        if self.bsp_time is None:
            return None
        return self._ratio(self.oracle_time, self.oracle_samples, self.bsp_time, self.bsp_samples)

    @property
    def speedup_vs_bsp(self):
        if self.bsp_time is None:
            return None
        return self._ratio(self.bsp_time, self.bsp_samples, self.iteration_time, self.samples)

    @property
    def prediction_error(self):
        p = self.predicted_speeds[self.warmup:]
        v = self.scenario.speed[self.warmup:]
        ok = np.isfinite(p)
        if not ok.any():
            return None
        return float(np.mean(np.abs(p[ok] - v[ok]) / v[ok]))

    @property
    def max_over_cap(self):
        caps = self.scenario.memory_caps
        over = self.batch_sizes - np.where(np.isfinite(caps), caps, np.inf)[None, :]
        return int(max(0.0, float(np.max(over))))

    def summary(self):
        """One line of the headline numbers (str)."""
        parts = [f"{self.policy}: efficiency {self.efficiency:.3f}"]
        if self.bsp_time is not None:
            parts.append(f"BSP {self.bsp_efficiency:.3f}, speed-up vs BSP {self.speedup_vs_bsp:.2f}x")
        pe = self.prediction_error
        if pe is not None:
            parts.append(f"prediction error {pe:.3f}")
        return "; ".join(parts) + f"  [{self.scenario.description}]"

    def as_dict(self):
        """The headline numbers as a plain dict."""
        return {
            "policy": self.policy, "efficiency": self.efficiency,
            "compute_efficiency": self.compute_efficiency, "bsp_efficiency": self.bsp_efficiency,
            "speedup_vs_bsp": self.speedup_vs_bsp, "prediction_error": self.prediction_error,
            "max_over_cap": self.max_over_cap, "samples_aggregated": self.samples_aggregated,
        }

    def plot(self, path=None):
        """Plot iteration times (policy, BSP, oracle), batch sizes and true speeds.

        Parameters
        ----------
        path : str or os.PathLike, optional
            Save the figure there (format from the suffix); otherwise return it.

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        MissingDependencyError
            When matplotlib is not installed.
        """
        try:
            import matplotlib

            if path is not None:
                matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError:
            raise MissingDependencyError(
                "BalanceResult.plot needs matplotlib, which is not installed. "
                "Install it with: pip install matplotlib (or pip install 'hetplace[bench]')."
            ) from None
        T = self.iteration_time.size
        x = np.arange(T)
        fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
        ax = axes[0]
        if self.bsp_time is not None:
            ax.plot(x, self.bsp_time, color="0.6", lw=0.8, label=f"BSP (eff {self.bsp_efficiency:.3f})")
        ax.plot(x, self.iteration_time, color="C0", lw=0.9, label=f"{self.policy} (eff {self.efficiency:.3f})")
        ax.plot(x, self.oracle_time, color="C3", lw=0.9, ls="--", label="oracle")
        ax.set_ylabel("iteration time (s)")
        ax.set_yscale("log")
        ax.legend(loc="upper right", fontsize=8)
        ax.set_title(self.scenario.description, fontsize=9)
        axes[1].stackplot(x, self.batch_sizes.T, lw=0)
        axes[1].set_ylabel("batch sizes (stacked)")
        axes[2].plot(x, self.scenario.speed, lw=0.8)
        axes[2].set_ylabel("true speed (samples/s)")
        axes[2].set_yscale("log")
        axes[2].set_xlabel("iteration")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
            plt.close(fig)
        return fig


def _run(policy, sc, options, use_signals):
    n, B, T = sc.n_workers, sc.global_batch, sc.iterations
    caps = None if not np.isfinite(sc.memory_caps).any() else sc.memory_caps
    lb = LoadBalancer(B, n, policy=policy, memory_caps=caps, min_batch=sc.min_batch, **options)
    it_time = np.empty(T)
    comp = np.empty(T)
    sizes = np.empty((T, n), dtype=np.int64)
    pred = np.full((T, n), np.nan)
    got = np.zeros(T)
    for t in range(T):
        b = lb.batch_sizes
        sizes[t] = b
        p = lb.predicted_speeds
        if p is not None:
            pred[t] = p
        true = sc.true_times(t, b)
        avail = sc.available[t]
        if sc.kind == "fl":
            # a round waits for the available clients up to the deadline; late work is lost
            done = avail & (true <= sc.deadline)
            comp[t] = min(sc.deadline, float(np.max(true[avail]))) if avail.any() else 0.0
            got[t] = float(b[done].sum())
            compute_only = step_time(b, sc.speed[t], sc.knee)
            measured = np.where(avail, compute_only * sc.noise[t], np.inf)
            kw = {"upload_times": np.where(avail, sc.upload[t], np.inf)} if policy == "fl" else {}
        else:
            comp[t] = float(np.max(true))
            measured = true * sc.noise[t]
            kw = {}
        it_time[t] = comp[t] + sc.comm_time[t]
        if use_signals:
            kw.update({k: v[t + 1] for k, v in sc.signals.items()})
        lb.observe(measured, **kw)
    if sc.kind != "fl":
        got = None
    return it_time, comp, sizes, pred, got, lb.tuner


def simulate(policy: str = "cpu", scenario: "Scenario | None" = None, *, seed: int = 0, signals: bool = True,
             compare: bool = True, policy_options: "dict | None" = None, warmup: int = 10,
             **scenario_options) -> "BalanceResult":
    """Run an LB-BSP policy on a simulated non-dedicated cluster.

    Parameters
    ----------
    policy : {"cpu", "gpu", "fl", "bsp", "static", "naive"}, default "cpu"
    scenario : Scenario, optional
        Default: ``make_scenario(kind, seed=seed, **scenario_options)`` with
        ``kind`` "gpu" for the "gpu" policy, "fl" for "fl", else "cpu".
    seed : int, default 0
        Seed of the drawn scenario (ignored when ``scenario`` is given).
    signals : bool, default True
        Pass the scenario's exogenous signals to :meth:`LoadBalancer.observe`.
    compare : bool, default True
        Also run plain BSP on the same scenario (for ``speedup_vs_bsp``).
    policy_options : dict, optional
        Extra keyword options of :class:`LoadBalancer` (e.g. ``{"predictor": "ewma"}``).
    warmup : int, default 10
        Iterations left out of ``prediction_error``.
    **scenario_options
        Passed to :func:`make_scenario` (``kind``, ``n_workers``, ``jitter``, ...).

    Returns
    -------
    BalanceResult

    Notes
    -----
    Per iteration ``t``: the policy's sizes ``b`` run for the true time
    ``max_i t_i(b_i)`` plus communication; the policy then sees the measured
    times (true times x jitter x hiccups) and the signals read at the
    barrier.  The oracle's time is the best integer split for iteration
    ``t``'s true speeds (knees and caps included) plus the same
    communication: docs/model.md §6.5's limit.  Jitter and hiccups corrupt
    what the policy measures, not the time the iteration takes, so the
    efficiency measures estimation and prediction, not luck.
    """
    if not isinstance(policy, str) or policy not in POLICIES:
        raise InvalidOptionError(f"policy must be one of {POLICIES}; got {policy!r}.")
    if scenario is None:
        kind = scenario_options.pop("kind", "gpu" if policy == "gpu" else "fl" if policy == "fl" else "cpu")
        scenario = make_scenario(kind, seed=seed, **scenario_options)
    elif not isinstance(scenario, Scenario):
        raise InvalidOptionError(
            f"scenario must be a hetplace.balance.Scenario (from make_scenario) or None; got "
            f"{type(scenario).__name__}."
        )
    elif scenario_options:
        raise InvalidOptionError(
            f"scenario options {sorted(scenario_options)} cannot be combined with a ready scenario; "
            "pass them to make_scenario instead."
        )
    for name, val in (("signals", signals), ("compare", compare)):
        if not isinstance(val, (bool, np.bool_)):
            raise InvalidOptionError(f"{name} must be True or False; got {val!r}.")
    if policy_options is not None and not isinstance(policy_options, dict):
        raise InvalidOptionError(
            f"policy_options must be a dict of LoadBalancer options or None; got {type(policy_options).__name__}."
        )
    options = dict(policy_options or {})
    if policy == "fl" and "deadline" not in options and scenario.deadline is not None:
        options["deadline"] = scenario.deadline
    warmup = _int_iv(warmup, "warmup", 0, "It is a number of iterations.")
    sc = scenario
    T = sc.iterations
    oracle_c = sc.oracle_compute_times()
    it_time, comp, sizes, pred, got, tuner = _run(policy, sc, options, signals)
    bsp = bsp_got = None
    if compare:
        bsp, _, _, _, bsp_got, _ = _run("bsp", sc, {}, False)
    frac = 1.0 if got is None else float(got.sum()) / float(sc.global_batch * T)
    fl = sc.kind == "fl"
    return BalanceResult(
        policy=policy, scenario=sc, iteration_time=it_time, oracle_time=oracle_c + sc.comm_time,
        bsp_time=bsp, batch_sizes=sizes, predicted_speeds=pred, compute_time=comp,
        oracle_compute=oracle_c, samples_aggregated=frac, tuner=tuner, warmup=warmup,
        samples=got, oracle_samples=sc.oracle_samples() if fl else None, bsp_samples=bsp_got,
    )
