"""SMP's policy in the goodput world (docs/online.md §10.4): one GPU type and size per job, restarts priced.

Every round, each job gets one of Sia's configurations (a GPU type and a count: powers of two
inside a node, whole nodes above) or none, to maximise the sum over jobs of the *restart-discounted
normalised goodput* below.  The choice is an assignment of at most ~160 jobs to at most ~19
configurations under one capacity per type: it is solved exactly (OR-Tools CP-SAT, the solver
of :func:`~hetplace.online.goodput_configs.solve_sia_program`), not sampled.

What the policy knows is what a scheduler can know: a job's model, progress so far, epoch, age,
restarts and its own allocations; the profiles of a model on a (type, count) that some job of that
model has run on, or at most twice that count (Sia's growth rule, pooled over the jobs of a
model), the other types projected by their 1-GPU throughput ratio as Sia's bootstrap does; the
lengths of the jobs that have *finished*; each model's measured checkpoint-restore delay.  It
never reads a running job's length.

:class:`SmpMixedGoodputPolicy` (``"smp-mixed"``) may also put a job on two GPU types at once, at
the stated mixed-rate assumption of :meth:`~hetplace.online.goodput.GoodputModel.mixed_rate`
(docs/online.md §10.5).
"""

import math

import numpy as np

from .._validation import check_positive_int, check_seed, is_real_scalar
from ..errors import InvalidOptionError
from .goodput_configs import _shape_for, place_counts, sia_configs, solve_sia_program

__all__ = ["SmpGoodputPolicy", "SmpMixedGoodputPolicy", "mixed_configs"]


class SmpGoodputPolicy:
    """Restart-discounted normalised goodput, learnt per model; one exact assignment per round.

    For job ``j`` and configuration ``c = (type, n)`` it may use, with ``r_c`` its goodput
    (progress per second at its current epoch, the executor's best batch), ``R_j`` its expected
    remaining progress, ``D_c`` the model's restart delay on that type (0 when ``c`` is the
    configuration it holds):

        T_c = R_j / r_c,   H_c = min(T_c, horizon_s),   v_c = r_c H_c / (H_c + D_c)

    ``v_c`` is the progress rate over the next ``H_c`` seconds once the restart is paid: the
    allocation is expected to last ``horizon_s`` at most, or until the job ends.  The row is
    normalised so that the job's best option is worth 1 (every job alike, whatever its model's
    speed).  A running job's other options are multiplied by Sia's re-allocation factor
    ``max(age - restarts D, 0) / (age + D)`` (1 while ``age < D``), so that a job moved often is
    moved less; and every option of a running job gains what preempting it would lose,
    ``v_cur D / (H_cur + D)``, so that taking all its GPUs is priced like any other move.

    With ``age_s``, the row is last multiplied by ``1 + age / age_s`` (aging: a job that has been
    in the system long weighs more, which lowers the tail and raises the mean; off by default,
    docs/online.md §10.4 has the measured trade).

    ``R_j`` is learnt: ``E[L - a | L > a]`` over the lengths ``L`` of the finished jobs of its
    model longer than its progress ``a`` (when ``min_samples`` of them are), else as much again
    as it has done, at least one minute on its best single GPU.

    Parameters
    ----------
    horizon_s : float
        Seconds an allocation is expected to last (default 600: ten of Sia's rounds).
    age_s : float or None
        Age (seconds since arrival) that doubles a job's weight; None (default): no aging.
    min_samples : int
        Finished jobs of a model, longer than a job's progress, needed to use their lengths
        (default 1).
    pooled : bool
        True (default): what one job of a model has run on is known for every job of that
        model; False: per job, as Sia.
    time_limit : float or None
        Seconds per solve (default None: to optimality).
    seed : int
        Seed of the solver (single-threaded: reproducible).
    """

    name = "smp"
    label = "SMP-goodput (ours)"
    oracle = False

    def __init__(self, horizon_s=600.0, age_s=None, min_samples=1, pooled=True, time_limit=None, seed=0):
        if not (is_real_scalar(horizon_s) and 0 < float(horizon_s) < math.inf):
            raise InvalidOptionError(f"horizon_s must be seconds > 0 (default 600); got {horizon_s!r}.")
        if age_s is not None and not (is_real_scalar(age_s) and 0 < float(age_s) < math.inf):
            raise InvalidOptionError(f"age_s must be seconds > 0 or None (default: no aging); got {age_s!r}.")
        self.age_s = None if age_s is None else float(age_s)
        if time_limit is not None and not (is_real_scalar(time_limit) and float(time_limit) > 0):
            raise InvalidOptionError(f"time_limit must be seconds > 0 or None; got {time_limit!r}.")
        self.horizon_s = float(horizon_s)
        self.min_samples = check_positive_int("min_samples", min_samples, allow_none=False)
        self.pooled = bool(pooled)
        self.time_limit = time_limit
        self.seed = check_seed(seed)
        self.reset()

    def reset(self, seed=None):
        """Forget what was learnt (finished lengths, profiled configurations)."""
        if seed is not None:
            self.seed = check_seed(seed)
        self._lengths = {}  # model -> progress of its finished jobs
        self._known = {}  # model (or job id) -> {type: most GPUs run on}

    # -- what is learnt --------------------------------------------------------------------------------
    def _learn(self, state):
        for f in state.finished:
            self._lengths.setdefault(f.job.app, []).append(float(f.progress))
            self._merge(f)
        for js in state.jobs:
            self._merge(js)

    def _merge(self, js):
        kn = self._known.setdefault(js.job.app if self.pooled else js.job.job_id, {})
        for g, n in js.max_gpus.items():
            kn[g] = max(kn.get(g, 0), n)

    def remaining(self, js, best_single_rate):
        """Expected remaining progress of job state ``js`` (see the class notes)."""
        a = float(js.progress)
        L = np.asarray(self._lengths.get(js.job.app, ()), dtype=np.float64)
        L = L[L > a]
        if L.size >= self.min_samples:
            return float(L.mean() - a)
        return max(a, best_single_rate * 60.0)

    def rates(self, js, state, configs):
        """Goodput of ``js`` on each configuration as the policy knows it (0: not allowed or unknown)."""
        model, cluster = state.model, state.cluster
        app = js.job.app
        kn = self._known.get(app if self.pooled else js.job.job_id, {})
        out = np.zeros(len(configs))
        if not kn:  # nothing of this model has run: one GPU of any type, type-blind (Sia's first start)
            for k, (g, n) in enumerate(configs):
                if n == 1:
                    out[k] = 1.0
            return out
        lim = max(2 * max(kn.values()), 1)
        src = next(g for g in cluster if g in kn) if any(g in kn for g in cluster) else None
        for k, (g, n) in enumerate(configs):
            prof = model.profile(app, g)
            if n > lim or n > prof.max_batch // prof.min_local_bsz:
                continue
            if g in kn or src is None:
                out[k] = prof.rate(_shape_for(n, cluster[g][1]), js.epoch)[0]
            else:
                sp = model.profile(app, src)
                a = sp.atomic_throughput
                base = sp.rate(_shape_for(n, cluster[src][1]), js.epoch)[0]
                out[k] = base * prof.atomic_throughput / a if a > 0 else 0.0
        return out

    def values(self, js, state, configs):
        """The row ``v`` of job state ``js`` over ``configs`` (0: not an option)."""
        r = self.rates(js, state, configs)
        if not (r > 0).any():
            return r
        app = js.job.app
        single = float(r[[k for k, c in enumerate(configs) if _parts(c) == ((c[0], 1),)]].max())
        R = max(self.remaining(js, single if single > 0 else float(r.max())), 1e-9)
        cur = _current(js)
        D = np.array([0.0 if c == cur else _restart_s(state.model, app, c) for c in configs])
        with np.errstate(divide="ignore"):
            H = np.minimum(np.where(r > 0, R / np.where(r > 0, r, 1.0), 0.0), self.horizon_s)
        v = np.where(r > 0, r * H / np.maximum(H + D, 1e-300), 0.0)
        top = v.max()
        if not top > 0:
            return np.zeros_like(v)
        v = v / top
        kc = configs.index(cur) if cur in configs else -1
        if kc >= 0 and v[kc] > 0:
            d = _restart_s(state.model, app, cur)
            f = 1.0 if js.age < d else max(js.age - js.restarts * d, 0.0) / (js.age + d)
            keep = v[kc]
            v = v * f
            v[kc] = keep
            h = min(R / r[kc], self.horizon_s)
            v[v > 0] += keep * d / (h + d)
        if self.age_s is not None:
            v = v * (1.0 + js.age / self.age_s)
        return v

    def decide(self, state):
        self._learn(state)
        configs = self._configs(state.cluster)
        cap = {g: sum(state.free[g]) for g in state.cluster}
        out, jobs, rows = {}, [], []
        for js in state.jobs:
            if js.pinned:  # a restart under way keeps its GPUs
                out[js.job.job_id] = self._hold(js)
                continue
            jobs.append(js)
            rows.append(self.values(js, state, configs))
        if jobs:
            v = np.array(rows)
            top = float(v.max())
            if top > 0:
                coef = np.round(v * (1000.0 / top), 2)
                pick = solve_sia_program(coef, configs, cap, 0.0, 1.0, self.seed, self.time_limit,
                                         usage=self._usage(configs))
                chosen = [(js.job.job_id, configs[k]) for i, (js, k) in enumerate(zip(jobs, pick))
                          if k >= 0 and v[i, k] > 0]
                out.update(self._place(chosen, state))
        return out

    # -- what the mixed-type variant changes --------------------------------------------------------------
    def _configs(self, cluster):
        return sia_configs(cluster)

    def _usage(self, configs):
        return None  # one type per configuration

    def _hold(self, js):
        return (js.gpu_type, dict(js.placement))

    def _place(self, chosen, state):
        return place_counts([(jid,) + c for jid, c in chosen], state.cluster, state.free)


def _parts(config):
    """A configuration as its parts: ``(type, n)`` -> ``((type, n),)``; a mixed one is already a tuple of parts."""
    return config if isinstance(config[0], tuple) else (config,)


def _current(js):
    """The configuration job state ``js`` holds: ``(type, n)``, a sorted tuple of parts, or None."""
    alloc = js.allocation
    if alloc is None:  # a state made by hand, without the allocation field
        return (js.gpu_type, js.n_gpus) if js.placement else None
    parts = tuple(sorted((g, sum(p.values())) for g, p in alloc.items() if p))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else parts


def _restart_s(model, app, config):
    """Checkpoint-restore seconds of ``app`` on ``config`` (the longest of its types')."""
    return max(model.profile(app, g).restart_s for g, _ in _parts(config))


def mixed_configs(cluster, max_part=None):
    """Sia's configurations, then every pair of them on two different types (sorted parts), at most 64 GPUs.

    ``max_part``: the largest part of a pair (default: any configuration).
    """
    single = sia_configs(cluster)
    pairs = []
    for a in range(len(single)):
        for b in range(a + 1, len(single)):
            (g, n), (h, m) = single[a], single[b]
            if g != h and n + m <= 64 and (max_part is None or max(n, m) <= max_part):
                pairs.append(tuple(sorted((single[a], single[b]))))
    return single + pairs


class SmpMixedGoodputPolicy(SmpGoodputPolicy):
    """:class:`SmpGoodputPolicy` that may also put a job on **two GPU types** at once (docs/online.md §10.5).

    Its options are Sia's configurations and every pair of them on two different types (at most
    64 GPUs).  A pair's goodput is :meth:`~hetplace.online.goodput.GoodputModel.mixed_rate`, the
    stated mixed-rate assumption (the profiles measure one type at a time), offered only once
    the job's model has run on both types and each part within Sia's growth cap; its restart
    delay is the longer of its types'.  Values, learning and the exact assignment are the
    parent's; a configuration's GPUs count against each of its types' capacity.  A pair whose
    parts cannot both be placed on nodes this round is left out (its GPUs stay free).

    Parameters
    ----------
    max_part : int or None
        The largest part of a pair (default None: any configuration).
    **options
        As :class:`SmpGoodputPolicy`.
    """

    name = "smp-mixed"
    label = "SMP-goodput, mixed types (ours; assumed mixed rates)"

    def __init__(self, max_part=None, **options):
        self.max_part = None if max_part is None else check_positive_int("max_part", max_part, allow_none=False)
        super().__init__(**options)

    def rates(self, js, state, configs):
        single = [k for k, c in enumerate(configs) if not isinstance(c[0], tuple)]
        out = np.zeros(len(configs))
        out[single] = super().rates(js, state, [configs[k] for k in single])
        kn = self._known.get(js.job.app if self.pooled else js.job.job_id, {})
        if not kn:
            return out
        lim = max(2 * max(kn.values()), 1)
        model, cluster, app = state.model, state.cluster, js.job.app
        for k, c in enumerate(configs):
            if not isinstance(c[0], tuple):
                continue
            if any(g not in kn or n > lim or n > model.profile(app, g).max_batch // model.profile(app, g).min_local_bsz
                   for g, n in c):
                continue
            out[k] = model.mixed_rate(app, {g: _shape_for(n, cluster[g][1]) for g, n in c}, js.epoch)
        return out

    def _configs(self, cluster):
        return mixed_configs(cluster, self.max_part)

    def _usage(self, configs):
        return [dict(_parts(c)) for c in configs]

    def _hold(self, js):
        return {g: dict(p) for g, p in js.allocation.items()}

    def _place(self, chosen, state):
        counts = [((jid, g), g, n) for jid, c in chosen for g, n in _parts(c)]
        placed = place_counts(counts, state.cluster, state.free)
        return {jid: {g: placed[(jid, g)][1] for g, _ in _parts(c)} for jid, c in chosen
                if all((jid, g) in placed for g, _ in _parts(c))}
