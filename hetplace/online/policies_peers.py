"""The peers' scheduling policies for :mod:`hetplace.online`, re-implemented from their descriptions.

Every policy has a ``name``, an optional ``reset()`` and ``decide(state)``, which
maps a ``ClusterState`` (the simulator's snapshot at a round boundary) to
``{job_id: {gpu_type: n_gpus}}`` for the jobs that run in the coming round.

- ``"fifo"`` / ``"fifo-aware"``: first come, first served (Gavel's FIFO baselines).
- ``"las"`` / ``"las-aware"``: Gavel's max-min fairness ("LAS" in its paper), the
  linear programme over time shares, heterogeneity-agnostic or -aware, carried out
  by Gavel's round-based priority mechanism.
- ``"ftf"`` / ``"ftf-aware"``: Gavel's finish-time fairness, same mechanism.
- ``"allox"``: AlloX's min-cost matching of single-GPU jobs to (GPU, position) slots.
- ``"sia"``: a Sia-like integer programme choosing one GPU type and a count per job.
- ``"gavel-mst"``: Gavel's heterogeneity-aware max-sum-throughput, same round mechanism.

Gavel's and AlloX's policies give every job exactly its scale factor of GPUs, all of
one type; Sia's chooses the count.  Formulations, and where each departs from the
original, are in ``docs/online_policies.md``.  Throughputs are read through the
simulator's progress model (``state.progress.steps_per_second(model, {type: n})``),
so a policy sees the same rates the simulation runs at.
"""

import math
import inspect

import numpy as np

from .._validation import check_choice, check_seed, is_real_scalar
from ..errors import InvalidOptionError, SolverError
from . import _lp

__all__ = [
    "PEER_POLICIES", "FifoPolicy", "FifoAwarePolicy", "LasPolicy", "LasAwarePolicy",
    "FtfPolicy", "FtfAwarePolicy", "AlloxPolicy", "SiaPolicy", "GavelMaxSumThroughputPolicy",
    "max_sum_throughput_shares",
]

#: GPU counts a job may take in Gavel's traces and the throughput table.
SIZES = (1, 2, 4, 8)


def _check_real(name, value, low=0.0, strict=False, high=math.inf, fix=""):
    """``value`` as a float in ``[low, high]`` (``(low, high]`` when strict); InvalidOptionError otherwise."""
    ok = is_real_scalar(value) and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (v > low if strict else v >= low) and v <= high
    if not ok:
        side = ">" if strict else ">="
        top = f" and <= {high:g}" if math.isfinite(high) else ""
        raise InvalidOptionError(
            f"{name} must be a finite real number {side} {low:g}{top}; got {value!r}.{(' ' + fix) if fix else ''}"
        )
    return float(value)


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidOptionError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


class _PeerPolicy:
    """Shared plumbing: option names checked, throughputs through the progress model, the type order."""

    name = ""
    #: What the policy's table row says it is.
    label = ""
    #: True for a policy whose definition needs the jobs' true lengths (the simulator then hands it them).
    oracle = False

    def __new__(cls, *args, **options):
        if args:
            raise InvalidOptionError(
                f"policy {cls.name!r} takes its options by keyword, e.g. {cls.name}(seed=0); got {len(args)} "
                "positional argument(s)."
            )
        allowed = [k for k in inspect.signature(cls.__init__).parameters if k != "self"]
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise InvalidOptionError(
                f"policy {cls.name!r} does not take option(s) {', '.join(unknown)}; its options are: "
                f"{', '.join(allowed) or 'none'}."
            )
        return super().__new__(cls)

    def __init__(self):
        self._rate_cache = {}
        self._progress = None

    def reset(self):
        """Forget everything learnt from earlier rounds (called at the start of a simulation)."""
        self._rate_cache = {}
        self._progress = None

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"

    # -- throughputs
    def _rate(self, state, model, gpu_type, n):
        """Steps/s of ``model`` on ``n`` GPUs of ``gpu_type`` under the simulator's progress model."""
        if state.progress is not self._progress:
            self._rate_cache, self._progress = {}, state.progress
        key = (model, gpu_type, n)
        r = self._rate_cache.get(key)
        if r is None:
            r = float(state.progress.steps_per_second(model, {gpu_type: n}))
            self._rate_cache[key] = r
        return r

    def _rates(self, state, jobs, types):
        """(J, T) steps/s of each job on its scale factor of GPUs of each type; 0 where it does not fit or run.

        A count the table measures with a figure of 0 (e.g. ResNet-50, batch 128, on 2-8 K80s)
        is 0 here too: Gavel's scheduler never places a job where its throughput is 0, whereas
        the progress model fills such a count from the smaller ones.
        """
        R = np.zeros((len(jobs), len(types)))
        table = state.table
        counts = set(table.gpu_counts) if table is not None else set()
        for j, js in enumerate(jobs):
            s = js.job.scale_factor
            for t, g in enumerate(types):
                if s <= state.cluster[g]:
                    if s in counts and g in table.types and table.steps_per_second(js.job.model, g, s) <= 0:
                        continue
                    R[j, t] = self._rate(state, js.job.model, g, s)
        return R

    @staticmethod
    def _speed_order(state, types):
        """Type indices fastest first: by the mean single-GPU steps/s over the table's models (Gavel: v100, p100, k80)."""
        table = state.table
        speed = [np.mean([table.steps_per_second(m, g, 1) for m in table.models]) for g in types]
        return sorted(range(len(types)), key=lambda t: (-speed[t], t))


# ---------------------------------------------------------------------------------- FIFO
class FifoPolicy(_PeerPolicy):
    """First come, first served, heterogeneity-agnostic (Gavel's FIFO baseline).

    Jobs are served in arrival order (ties by job id) and never pre-empted: a job
    that ran last round keeps its GPUs until it finishes.  Each waiting job takes
    its scale factor of GPUs of the first type, in ``type_order``, with that many
    GPUs free and on which it can run at all; the queue stops at the first job that
    fits on no type (no job jumps the queue).

    Parameters
    ----------
    type_order : {"cluster", "random"}
        ``"cluster"`` (default): the order of the cluster's types as given
        (``{"v100": 36, "p100": 36, "k80": 36}`` tries V100s first);
        ``"random"``: a uniformly random type among those with room, seeded by
        ``seed``, as Gavel's FIFO does.
    seed : int
        Seed of the ``"random"`` order.

    Notes
    -----
    Departures from Gavel: Gavel's FIFO may pick a type on which the job's measured
    throughput is 0 and then leave it waiting; here such types are not candidates.
    Gavel recomputes FIFO only when the job set changes (and runs it through its
    round mechanism, which for FIFO runs exactly the allocation); deciding every
    round gives the same allocation for the same job set.
    """

    name = "fifo"
    label = "FIFO"
    _aware = False

    def __init__(self, type_order="cluster", seed=0):
        super().__init__()
        self.type_order = check_choice("type_order", type_order, ("cluster", "random"))
        self.seed = check_seed(seed)
        self._rng = np.random.default_rng(self.seed)

    def reset(self):
        super().reset()
        self._rng = np.random.default_rng(self.seed)

    def decide(self, state):
        """Allocation for the coming round: ``{job_id: {gpu_type: scale_factor}}``."""
        types = list(state.cluster)
        jobs = sorted(state.jobs, key=lambda js: (js.job.arrival, js.job.job_id))
        R = self._rates(state, jobs, types)
        free = np.array([state.cluster[g] for g in types], dtype=np.int64)
        out = {}
        waiting = []
        for j, js in enumerate(jobs):
            held = {g: n for g, n in js.allocation.items() if n}
            if not self._aware and held:  # non-pre-emptive: a running job keeps its GPUs
                out[js.job.job_id] = held
                for g, n in held.items():
                    free[types.index(g)] -= n
            else:
                waiting.append(j)
        for j in waiting:
            s = jobs[j].job.scale_factor
            room = [t for t in range(len(types)) if free[t] >= s]
            if not room:
                break  # strict FIFO: the head of the queue waits, so does everyone behind it
            usable = [t for t in room if R[j, t] > 0]
            if not usable:
                continue  # it cannot run on any type with room; the next job may
            if self._aware:
                t = max(usable, key=lambda u: (R[j, u], -u))
            elif self.type_order == "random":
                t = usable[int(self._rng.integers(len(usable)))]
            else:
                t = usable[0]
            out[jobs[j].job.job_id] = {types[t]: s}
            free[t] -= s
        return out


class FifoAwarePolicy(FifoPolicy):
    """First come, first served, heterogeneity-aware (Gavel's FIFO with performance).

    Every round, jobs in arrival order (ties by job id) each take their scale factor
    of GPUs of the type, among those with that many GPUs free, where they run the
    fastest; the queue stops at the first job that fits on no type.  The allocation
    is recomputed from scratch each round, as Gavel's performance-aware FIFO does
    whenever it recomputes, so a job moves to a faster type when an earlier job
    frees it.

    Parameters
    ----------
    type_order, seed
        Accepted for symmetry with ``"fifo"``; the choice of type is by speed (ties
        to the type listed first in the cluster).
    """

    name = "fifo-aware"
    label = "FIFO-aware (simplified)"
    _aware = True


# ------------------------------------------------------------------ Gavel's round mechanism
class _GavelRoundPolicy(_PeerPolicy):
    """A time-share programme solved when the job set changes, carried out by Gavel's priorities.

    Bookkeeping (Gavel's, counted in rounds rather than seconds; a round is
    ``state.round_s`` long): since the last reset, ``time[j, t]`` is the rounds job j
    ran on type t plus one half (Gavel's initial value), and ``worker[t]`` the sum of
    those of the jobs present at the reset plus every round run on type t since.
    Job j's priority on type t is ``X[j, t] / (time[j, t] / worker[t])`` (0 where
    ``X[j, t] = 0``, where it cannot run, or when it is not in the allocation).
    Each round the per-type queues, each sorted by (priority, deficit, share)
    descending, are walked one type after the other (fastest type first for the
    aware policies; a seeded shuffle every round for the agnostic ones, as Gavel
    does) and each job not yet placed takes its scale factor of GPUs of the queue's
    type when that many are free.  The programme is re-solved, and the bookkeeping
    reset, when the set of active jobs differs from the one it was solved for and
    at least ``min_reset_interval`` seconds have passed since the last reset
    (Gavel's simulator default: 1920 s).  Jobs that arrived since have priority 0;
    with ``new_jobs="idle"`` (default, what Gavel's simulator does) such a job picked
    from a queue takes its GPUs for the round but does not run on them (Gavel's
    queue walk counts it against the free GPUs, then its worker assignment skips
    jobs outside the allocation), so they stay idle; ``new_jobs="run"`` runs it
    there instead.
    """

    _aware = False

    def __init__(self, min_reset_interval=1920.0, seed=0, new_jobs="idle", point="center"):
        super().__init__()
        self.point = check_choice("point", point, LP_POINTS)
        self.min_reset_interval = _check_real(
            "min_reset_interval", min_reset_interval,
            fix="Pass the seconds between re-solves, e.g. 1920 (Gavel's default) or 0 to re-solve at every change.",
        )
        self.seed = check_seed(seed)
        self.new_jobs = check_choice("new_jobs", new_jobs, ("idle", "run"))
        self.reset()

    def reset(self):
        super().reset()
        self._rng = np.random.default_rng(self.seed)
        self._types = None
        self._X = {}  # job_id -> (T,) time shares
        self._solved_ids = None
        self._last_reset = None
        self._rounds_since_reset = 0
        self._time = {}  # job_id -> (T,) rounds run since the reset (+ 1/2)
        self._worker = None  # (T,)
        self._deficit = {}  # job_id -> (T,)
        self._seen = {}  # job_id -> (T,) rounds_on when last seen
        self.n_solves = 0

    # subclasses: the time shares of jobs (sorted by id) given their rates R
    def _solve(self, state, jobs, R, types):
        raise NotImplementedError

    def _account(self, jobs, types):
        """Add the rounds each job ran since the last call (from ``rounds_on``) to the bookkeeping."""
        T = len(types)
        ids = set()
        for js in jobs:
            jid = js.job.job_id
            ids.add(jid)
            now = np.array([float(js.rounds_on.get(g, 0)) for g in types])
            if jid in self._seen:
                delta = np.maximum(now - self._seen[jid], 0.0)
                self._time[jid] = self._time.get(jid, np.full(T, 0.5)) + delta
                self._worker += delta
            else:
                self._time[jid] = np.full(T, 0.5)
                self._deficit[jid] = np.zeros(T)
            self._seen[jid] = now
        for gone in [k for k in self._seen if k not in ids]:
            del self._seen[gone], self._time[gone]
            self._deficit.pop(gone, None)
            self._X.pop(gone, None)

    def _reset_bookkeeping(self, jobs, T):
        """Gavel's reset: fold what each job got against its share into its deficit, restart the counts."""
        for js in jobs:
            jid = js.job.job_id
            if jid in self._X:
                self._deficit[jid] = self._deficit[jid] + self._X[jid] * self._rounds_since_reset - (self._time[jid] - 0.5)
            self._time[jid] = np.full(T, 0.5)
        self._worker = np.full(T, 0.5 * len(jobs))
        self._rounds_since_reset = 0

    def decide(self, state):
        """Allocation for the coming round: ``{job_id: {gpu_type: scale_factor}}``."""
        types = list(state.cluster)
        T = len(types)
        if types != self._types:
            self.reset()
            self._types, self._worker = types, np.zeros(T)
        jobs = sorted(state.jobs, key=lambda js: js.job.job_id)
        self._account(jobs, types)
        R = self._rates(state, jobs, types)
        ids = frozenset(js.job.job_id for js in jobs)
        if ids != self._solved_ids and (
            self._last_reset is None or state.time - self._last_reset >= self.min_reset_interval
        ):
            self._reset_bookkeeping(jobs, T)
            X = self._solve(state, jobs, R, types) if jobs else np.zeros((0, T))
            self.n_solves += 1
            self._X = {js.job.job_id: X[j] for j, js in enumerate(jobs)}
            self._solved_ids, self._last_reset = ids, state.time
        self._rounds_since_reset += 1
        return self._assign(state, jobs, R, types)

    def _assign(self, state, jobs, R, types):
        T = len(types)
        J = len(jobs)
        X = np.zeros((J, T))
        D = np.zeros((J, T))
        for j, js in enumerate(jobs):
            jid = js.job.job_id
            if jid in self._X:
                X[j] = self._X[jid]
            D[j] = self._deficit.get(jid, 0.0)
        time = np.array([self._time[js.job.job_id] for js in jobs]).reshape(J, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(self._worker[None, :] > 0, time / self._worker[None, :], 0.0)
            prio = np.where(frac > 0, X / frac, X * 1e9)
        prio[(X <= 0) | (R <= 0)] = 0.0
        order = self._speed_order(state, types)
        if not self._aware:
            order = [order[i] for i in self._rng.permutation(T)]
        free = np.array([state.cluster[g] for g in types], dtype=np.int64)
        placed = set()
        out = {}
        for t in order:
            # (priority, deficit, share) descending; ties stay in job-id order
            queue = sorted(range(J), key=lambda j: (-prio[j, t], -D[j, t], -X[j, t]))
            for j in queue:
                if free[t] == 0:
                    break
                s = jobs[j].job.scale_factor
                if j in placed or R[j, t] <= 0 or s > free[t]:
                    continue
                placed.add(j)
                free[t] -= s
                jid = jobs[j].job.job_id
                if jid in self._X or self.new_jobs == "run":
                    out[jid] = {types[t]: s}
        return out

    def shares(self):
        """The current time shares ``{job_id: {gpu_type: X}}`` of the last solve (for inspection and tests)."""
        return {jid: dict(zip(self._types, map(float, row))) for jid, row in self._X.items()}


def _runnable(R):
    return R.max(axis=1) > 0 if R.size else np.zeros(R.shape[0], dtype=bool)


def _aggregate_split(shares_one, capacity):
    """Type-blind shares: one aggregate share per job split over the types in proportion to their GPUs."""
    cap = np.asarray(capacity, dtype=np.float64)
    return shares_one[:, :1] * (cap / cap.sum())[None, :]


class LasPolicy(_GavelRoundPolicy):
    """Gavel's max-min fairness ("LAS"), heterogeneity-agnostic.

    The programme gives each job j a total time share ``S_j`` of the cluster seen
    as one pool of ``sum_t m_t`` GPUs and maximises ``min_j s_j S_j`` (equal GPU
    time for every job; Gavel's agnostic variant sets every throughput to 1, which
    makes its normalisation a constant); among the optimal shares, the one with the
    most GPU time in use.  Each job's share is split over the types in proportion to
    their GPU counts (a type-blind point of Gavel's optimal face, where all types
    look alike), and Gavel's round mechanism carries it out with a type order
    shuffled every round.

    Parameters
    ----------
    min_reset_interval : float
        Seconds between re-solves of the programme (Gavel's default 1920; 0 =
        at every change of the job set).
    seed : int
        Seed of the per-round type shuffle.

    Notes
    -----
    "Least attained service" enters through the round mechanism (the rounds a job
    received since the last reset against its share), not through the programme;
    Gavel's job priority weights (all 1 in its traces) are not modelled.  Gavel
    keeps the point of the optimal face its interior-point solver (ECOS) returns;
    here the point is fixed as above so that the result does not depend on a solver.
    """

    name = "las"
    label = "LAS (Gavel max-min)"

    def _solve(self, state, jobs, R, types):
        cap = np.array([state.cluster[g] for g in types], dtype=np.float64)
        scale = np.array([js.job.scale_factor for js in jobs], dtype=np.float64)
        ok = _runnable(R)
        X = np.zeros((len(jobs), len(types)))
        if ok.any():
            res = _lp.max_min_shares(scale[ok, None], scale[ok], [cap.sum()])
            X[ok] = _aggregate_split(res.shares, cap)
        return X


class LasAwarePolicy(LasPolicy):
    """Gavel's heterogeneity-aware max-min fairness ("LAS" aware, Gavel's MaxMinFairness_Perf).

    The programme over time shares ``X[j, t]`` is

        maximise  min_j  sum_t  s_j r[j, t] X[j, t] / p_j
        s.t.      X >= 0,  sum_t X[j, t] <= 1,  sum_j s_j X[j, t] <= m_t

    with ``r[j, t]`` job j's steps/s on its ``s_j`` GPUs of type t and ``p_j =
    sum_t r[j, t] m_t / sum_u m_u`` its rate under Gavel's proportional share (an
    equal ``1/n`` slice of every type, rows rescaled to sum to 1).  Among the optimal
    shares the one with the largest total ``sum_j sum_t s_j r[j, t] X[j, t] / p_j``
    is taken (a second LP; Gavel keeps its solver's point).  Gavel's round mechanism
    carries it out, fastest type's queue first.

    Parameters
    ----------
    min_reset_interval, seed
        As for ``"las"`` (the seed is unused: the type order is fixed).
    """

    name = "las-aware"
    label = "LAS-aware (Gavel max-min, het.)"
    _aware = True

    def _solve(self, state, jobs, R, types):
        cap = np.array([state.cluster[g] for g in types], dtype=np.float64)
        scale = np.array([js.job.scale_factor for js in jobs], dtype=np.float64)
        prop = R @ _lp.proportional_share(cap)
        ok = prop > 0
        X = np.zeros((len(jobs), len(types)))
        if ok.any():
            coef = scale[ok, None] * R[ok] / prop[ok, None]
            X[ok] = _lp.max_min_shares(coef, scale[ok], cap, efficient=self.point == "efficient",
                                       center=self.point == "center").shares
        return X


class FtfPolicy(_GavelRoundPolicy):
    """Gavel's finish-time fairness, heterogeneity-agnostic.

    As ``"ftf-aware"``, but every type's rate is replaced by the job's rate on the
    fastest type (Gavel's agnostic variant uses the V100 figure for all types).  With
    ``point="center"`` (default) that programme over every type is solved and its
    shares moved to the analytic centre of the optimal ones (where Gavel's
    interior-point solver stops); with ``point="vertex"`` the cluster is one pool of
    ``sum_t m_t`` GPUs and each job's share of the pool is split over the types in
    proportion to their GPU counts.  The round mechanism shuffles the type order
    every round.

    Parameters
    ----------
    min_reset_interval, seed
        As for ``"las"``.
    tol : float
        Relative width of the bisection bracket on the finish-time ratio (default 1e-3).
    """

    name = "ftf"
    label = "FTF (Gavel, oracle lengths)"
    #: Gavel's finish-time fairness programme takes every job's remaining steps.
    oracle = True

    def __init__(self, min_reset_interval=1920.0, seed=0, tol=1e-3, new_jobs="idle", point="center"):
        self.tol = _check_real("tol", tol, low=0.0, strict=True, high=0.5,
                               fix="Pass a relative tolerance such as 1e-3.")
        super().__init__(min_reset_interval=min_reset_interval, seed=seed, new_jobs=new_jobs, point=point)
        if self.point == "efficient":
            raise InvalidOptionError("point='efficient' is not defined for finish-time fairness; use 'center' or "
                                     "'vertex'.")

    def reset(self):
        super().reset()
        self._isolated_time = {}  # job_id -> isolated seconds accumulated (Gavel's cumulative isolated time)
        self._prev = {}  # job_id -> (steps left, isolated rate) at the previous solve

    def _rates_for_programme(self, state, R, types):
        ref = self._speed_order(state, types)[0]
        r = np.where(R[:, ref] > 0, R[:, ref], R.max(axis=1) if R.size else 0.0)
        if self.point == "center":  # Gavel's programme: every type at the fastest type's rate
            return np.repeat(r[:, None], len(types), axis=1)
        return r[:, None]

    def _capacity(self, cap):
        return cap if self.point == "center" else np.array([cap.sum()])

    def _solve(self, state, jobs, R, types):
        cap = np.array([state.cluster[g] for g in types], dtype=np.float64)
        scale = np.array([js.job.scale_factor for js in jobs], dtype=np.float64)
        rates = self._rates_for_programme(state, R, types)
        pool = self._capacity(cap)
        usable = (rates > 0) & (scale[:, None] <= pool[None, :])
        iso = ((rates * usable) * _lp.isolated_share(pool, scale)).sum(axis=1)
        left = np.array([max(js.job.total_steps - js.done_steps, 0.0) for js in jobs])
        # Gavel's cumulative isolated time: steps done since the previous solve at that solve's isolated rate
        isolated = np.zeros(len(jobs))
        for j, js in enumerate(jobs):
            jid = js.job.job_id
            acc = self._isolated_time.get(jid, 0.0)
            if jid in self._prev and self._prev[jid][1] > 0:
                acc += max(self._prev[jid][0] - left[j], 0.0) / self._prev[jid][1]
            isolated[j] = self._isolated_time[jid] = acc
        ids = {js.job.job_id for js in jobs}
        self._isolated_time = {k: v for k, v in self._isolated_time.items() if k in ids}
        self._prev = {js.job.job_id: (left[j], iso[j]) for j, js in enumerate(jobs)}
        elapsed = np.array([max(state.time - js.job.arrival, 0.0) for js in jobs])
        ok = (iso > 0) & (left > 0)
        X = np.zeros((len(jobs), len(types)))
        if ok.any():
            res = _lp.ftf_shares(rates[ok], scale[ok], pool, left[ok], elapsed[ok], isolated[ok], tol=self.tol,
                                 center=self.point == "center")
            X[ok] = self._expand(res.shares, cap)
        return X

    def _expand(self, shares, cap):
        return shares if self.point == "center" else _aggregate_split(shares, cap)


class FtfAwarePolicy(FtfPolicy):
    """Gavel's heterogeneity-aware finish-time fairness (Gavel's FinishTimeFairness_Perf).

    The programme is

        minimise  max_j  (e_j + R_j / sum_t r[j, t] X[j, t]) / (I_j + R_j / sum_t r[j, t] X_iso[j, t])
        s.t.      X >= 0,  sum_t X[j, t] <= 1,  sum_j s_j X[j, t] <= m_t

    with ``e_j`` the seconds since job j arrived, ``R_j`` its steps left, ``r[j, t]``
    its steps/s on its ``s_j`` GPUs of type t, ``X_iso[j, t] = m_t / (n s_j)`` (rows
    rescaled to sum to at most 1) Gavel's isolated "1/n of the cluster" share and
    ``I_j`` the isolated time it accumulated so far (the steps it did between solves
    divided by the isolated rate at the earlier solve, as Gavel accumulates it).
    Gavel solves it as a convex programme (ECOS); here it is solved exactly by
    bisection on the ratio over max-min LPs (:func:`hetplace.online._lp.ftf_shares`,
    relative tolerance ``tol``).  Gavel's round mechanism carries the shares out,
    fastest type's queue first.

    Parameters
    ----------
    min_reset_interval, seed, tol
        As for ``"ftf"``.
    """

    name = "ftf-aware"
    label = "FTF-aware (Gavel, het., oracle lengths)"
    _aware = True

    def _rates_for_programme(self, state, R, types):
        return R

    def _capacity(self, cap):
        return cap

    def _expand(self, shares, cap):
        return shares


class GavelMaxSumThroughputPolicy(_GavelRoundPolicy):
    """Gavel's heterogeneity-aware max-sum-throughput (Gavel's ThroughputSumWithPerf), the Gavel baseline in Sia.

    The programme over time shares ``X[j, t]`` is

        maximise  sum_j sum_t r[j, t] X[j, t]
        s.t.      X >= 0,  sum_t X[j, t] <= 1,  sum_j s_j X[j, t] <= m_t

    with ``r[j, t]`` job j's steps/s on its ``s_j`` GPUs of type t (the trace's sizes),
    un-normalised as in Gavel.  It is re-solved when the job set changes (after
    ``min_reset_interval`` seconds) and carried out by Gavel's round mechanism, fastest
    type's queue first.  It uses no job length.

    Parameters
    ----------
    min_reset_interval, seed, new_jobs
        As for ``"las"``.
    point : {"vertex", "center"}
        Which point of the optimal face: a vertex (default; SciPy's HiGHS, a basic
        optimal solution) or its analytic centre (:func:`_lp.max_sum_center`), where
        Gavel's interior-point solver (ECOS) lands when jobs tie (docs/online_policies.md).

    Notes
    -----
    Gavel solves the programme with cvxpy and keeps the point of the optimal face its
    solver returns.  The value is the same at either point; they differ only where the
    optimum is not unique (jobs of one model and size tie).
    """

    name = "gavel-mst"
    label = "Gavel max-sum-throughput (het.)"
    _aware = True

    def __init__(self, min_reset_interval=1920.0, seed=0, new_jobs="idle", point="vertex"):
        super().__init__(min_reset_interval=min_reset_interval, seed=seed, new_jobs=new_jobs, point=point)
        if self.point == "efficient":
            raise InvalidOptionError("point='efficient' is not defined for max-sum-throughput; use 'vertex' or "
                                     "'center'.")

    def _solve(self, state, jobs, R, types):
        cap = np.array([state.cluster[g] for g in types], dtype=np.float64)
        scale = np.array([js.job.scale_factor for js in jobs], dtype=np.float64)
        return max_sum_throughput_shares(R, scale, cap, center=self.point == "center")


def max_sum_throughput_shares(R, scale, capacity, center=False):
    """Time shares ``X`` (J, T) maximising ``sum R * X`` under Gavel's constraints (module docstring of the policy).

    ``X[j, t] = 0`` where ``R[j, t] <= 0``; solved by SciPy's HiGHS (a vertex of the optimal face);
    ``center=True``: the analytic centre of the optimal face instead (:func:`_lp.max_sum_center`),
    where Gavel's interior-point solver (ECOS) lands.
    """
    from scipy.optimize import linprog

    R = np.asarray(R, dtype=np.float64)
    J, T = R.shape
    X = np.zeros((J, T))
    usable = (R > 0) & (np.asarray(scale)[:, None] <= np.asarray(capacity)[None, :])
    if not usable.any():
        return X
    idx = np.flatnonzero(usable.ravel())
    jj, tt = np.divmod(idx, T)
    n = idx.size
    A = np.zeros((J + T, n))
    A[jj, np.arange(n)] = 1.0  # each job's shares sum to at most 1
    A[J + tt, np.arange(n)] = np.asarray(scale, dtype=np.float64)[jj]  # GPUs of each type
    b = np.concatenate([np.ones(J), np.asarray(capacity, dtype=np.float64)])
    res = linprog(-R.ravel()[idx], A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs")
    if res.status != 0:
        raise SolverError(f"HiGHS returned status {res.status} ({res.message}) on policy 'gavel-mst'; report this.")
    X.ravel()[idx] = np.clip(res.x, 0.0, 1.0)
    return _lp.max_sum_center(X, R, scale, capacity) if center else X


# ---------------------------------------------------------------------------------- AlloX
class AlloxPolicy(_PeerPolicy):
    """AlloX: single-GPU jobs matched to (GPU, position) slots at the least total completion time.

    Jobs are not pre-empted: a job that ran last round keeps its GPUs.  The waiting
    single-GPU jobs are matched to slots "the p-th job from the end on a free GPU of
    type t", at cost ``p * q[j, t]`` with ``q[j, t]`` the job's remaining steps over
    its steps/s on one GPU of type t: a minimum-cost matching (the Hungarian method,
    ``scipy.optimize.linear_sum_assignment``) then minimises the sum of completion
    times of the waiting jobs if each GPU ran its matched jobs in order.  The jobs
    matched to the first position of each GPU start now; the rest are matched again
    next round.

    Parameters
    ----------
    multi_gpu : {"fifo", "error"}
        AlloX's model has single-GPU jobs only.  ``"fifo"`` (default): waiting
        multi-GPU jobs are served first, in arrival order, each on the free type
        where its scale factor of GPUs runs fastest (those that fit nowhere wait);
        the matching then places the single-GPU jobs on the GPUs left.
        ``"error"``: a multi-GPU job raises InvalidOptionError.

    Notes
    -----
    The GPUs of one type are identical, so a type with ``f`` free GPUs offers each
    position ``p = 1 .. ceil(J / f)`` ``f`` times (a balanced spread is optimal on
    identical machines), and of the jobs matched to a type those with the largest
    positions start (ties to the shorter job).  Gavel's AlloX adds each job's wait so
    far to every slot; a constant per job, it does not change the matching and is
    left out.  Gavel's ``alpha`` (the share of the longest-waiting jobs considered) is
    1 here, as in its experiments.
    """

    name = "allox"
    label = "AlloX + FIFO (ours, oracle lengths)"
    #: AlloX's matching costs are the jobs' processing times (remaining steps over rates).
    oracle = True

    def __init__(self, multi_gpu="fifo"):
        super().__init__()
        self.multi_gpu = check_choice("multi_gpu", multi_gpu, ("fifo", "error"))
        if self.multi_gpu == "error":
            self.label = "AlloX (oracle lengths)"  # AlloX's own model: single-GPU jobs only

    def decide(self, state):
        """Allocation for the coming round: ``{job_id: {gpu_type: scale_factor}}``."""
        types = list(state.cluster)
        T = len(types)
        jobs = sorted(state.jobs, key=lambda js: (js.job.arrival, js.job.job_id))
        free = np.array([state.cluster[g] for g in types], dtype=np.int64)
        out = {}
        waiting_single, waiting_multi = [], []
        for js in jobs:
            held = {g: n for g, n in js.allocation.items() if n}
            if held:
                out[js.job.job_id] = held
                for g, n in held.items():
                    free[types.index(g)] -= n
            elif js.job.scale_factor == 1:
                waiting_single.append(js)
            else:
                if self.multi_gpu == "error":
                    raise InvalidOptionError(
                        f"policy 'allox' schedules single-GPU jobs only; job {js.job.job_id} asks for "
                        f"{js.job.scale_factor} GPUs. Pass multi_gpu='fifo' to serve multi-GPU jobs first "
                        "in arrival order, or a single-GPU trace."
                    )
                waiting_multi.append(js)
        for js in waiting_multi:
            s = js.job.scale_factor
            cands = [t for t in range(T) if free[t] >= s and self._rate(state, js.job.model, types[t], s) > 0]
            if cands:
                t = max(cands, key=lambda u: (self._rate(state, js.job.model, types[u], s), -u))
                out[js.job.job_id] = {types[t]: s}
                free[t] -= s
        if not waiting_single or free.sum() == 0:
            return out
        q = np.full((len(waiting_single), T), np.inf)
        for j, js in enumerate(waiting_single):
            left = max(js.job.total_steps - js.done_steps, 0.0)
            for t in range(T):
                r = self._rate(state, js.job.model, types[t], 1) if free[t] > 0 else 0.0
                if r > 0:
                    q[j, t] = left / r
        for j, t in _allox_match(q, free)[0]:
            out[waiting_single[j].job.job_id] = {types[t]: 1}
        return out


def _allox_match(q, free):
    """AlloX's matching of jobs to (type, position) slots.

    Parameters
    ----------
    q : numpy.ndarray, shape (J, T)
        Processing time of each job on one GPU of each type (inf = cannot run there).
    free : numpy.ndarray, shape (T,)
        Free GPUs of each type.

    Returns
    -------
    starts : list of (job, type)
        The jobs that start now: on each type, the matched jobs with the largest
        positions, one per free GPU (ties to the shorter job, then the lower index).
    total : float
        The matching's cost ``sum_j p_j q[j, t_j]``: the sum of completion times if
        every GPU ran its matched jobs in order (over the jobs that can run).
    """
    from scipy.optimize import linear_sum_assignment

    J, T = q.shape
    # slots (type, position), each position repeated once per free GPU of the type
    slot_type, slot_pos = [], []
    for t in range(T):
        f = int(free[t])
        if f > 0:
            for p in range(1, -(-J // f) + 1):
                slot_type += [t] * f
                slot_pos += [p] * f
    if not slot_type:
        return [], 0.0
    slot_type = np.array(slot_type)
    slot_pos = np.array(slot_pos, dtype=np.float64)
    cost = q[:, slot_type] * slot_pos[None, :]
    finite = np.isfinite(cost)
    if not finite.any():
        return [], 0.0
    big = (np.max(cost[finite]) + 1.0) * (J + 1)  # any usable slot beats an unusable one
    rows, cols = linear_sum_assignment(np.where(finite, cost, big))
    starts, total = [], 0.0
    for t in range(T):
        mine = [(slot_pos[c], q[r, t], r) for r, c in zip(rows, cols) if slot_type[c] == t and finite[r, c]]
        total += sum(p * qq for p, qq, _ in mine)
        mine.sort(key=lambda e: (-e[0], e[1], e[2]))
        starts += [(int(r), t) for _, _, r in mine[: int(free[t])]]
    return starts, total


# ---------------------------------------------------------------------------------- Sia
class SiaPolicy(_PeerPolicy):
    """A Sia-like integer programme: one GPU type and one GPU count per job, every round.

    For each job j and configuration c = (type t, n GPUs), n in {1, 2, 4, 8} with
    ``n <= m_t``, a non-zero rate and ``n`` within Sia's growth cap (below), ``g[j, c]``
    is Sia's normalised goodput: the job's steps/s on c over its smallest rate over its
    configurations (so the slowest configuration is worth 1).  With ``rigid=True`` (each
    job keeps its trace's ``s_j`` GPUs and only the type is chosen) the rates are
    scaled so that the slowest type is worth ``s_j``, as Sia normalises its rigid jobs.
    A job that held configuration c' last round has every other configuration's ``g``
    scaled by Sia's restart factor ``max(age_j - restarts_j * P_j, 0) / (age_j + P_j)``
    (``age_j`` seconds since arrival; 1 while ``age_j < P_j``, or with ``rigid=True``
    while its attained service is below ``P_j``), ``P_j`` the restart delay of the job's
    model under the simulator's restart model (``state.progress.restart_time``: 0 under
    ``"none"``, so the factor is then 1) unless ``restart_penalty`` fixes one.  With
    ``A[j, c] = min(round(g[j, c]^p, 2), 3000)`` (Sia rounds to 1e-2 and caps at
    3000), the programme is Sia's:

        p < 0:   minimise  sum_jc A[j, c] x[j, c] + lambda_n * (jobs left without GPUs)
        p >= 0:  maximise  the same expression
        s.t.     x binary,  sum_c x[j, c] <= 1,  sum_{j, c on type t} n_c x[j, c] <= m_t

    written as the maximisation of ``sum_jc x[j, c] w[j, c]`` with ``w = lambda_n - A``
    (``p < 0``) or ``w = A - lambda_n`` (``p >= 0``), configurations of ``w <= 0`` left
    out, plus ``-lambda_a`` per configuration other than the one held (Sia parses a
    ``lambda_a`` but its programme never uses it: default 0).  Solved with OR-Tools
    CP-SAT on weights in units of 1e-3, one worker, a deterministic time limit.

    **Growth cap** (Sia's simulator): a job may take at most ``max(1, 2 * n_max)``
    GPUs of a type, ``n_max`` the largest count it has run on that type so far; so a new
    job starts on one GPU and at most doubles each round.  Not applied with
    ``rigid=True``.

    Parameters
    ----------
    p : float
        Sia's fairness exponent (default -0.5): negative, minimise; zero or
        positive, maximise (Sia's code's two branches).
    lambda_n : float
        Cost of leaving a job without GPUs (default 1.1, Sia's).
    lambda_a : float
        Cost of a configuration other than the one held (default 0: Sia parses
        one, 0.01, but does not use it; a positive value adds a change penalty
        of hetplace's own).
    restart_penalty : float or None
        Seconds of restart in Sia's restart factor.  None (default): the
        simulator's restart delay for the job's model (0 under ``"none"``).
    rigid : bool
        True: each job keeps its trace's scale factor and Sia only picks the type.
    time_limit : float
        CP-SAT's deterministic time limit (default 5; its own units, about seconds).

    Notes
    -----
    Simplified from Sia: goodput is the table's throughput (no statistical-efficiency
    model, batch sizes are fixed); configurations are one server's 1/2/4/8 GPUs (the
    table measures nothing larger); there is no throughput estimation from profiles
    (the table is known), no separate migration factor (Sia's evaluated setting uses
    1) and no time-share penalty window.  Sia schedules every 60 s; the round length
    here is the simulator's.  Before hetplace 0.x this policy charged
    ``lambda_a = 0.01`` and a fixed 30 s restart factor, capped ``g^p`` at 200, let a
    job start on 8 GPUs, normalised rigid rows to 1 and refused ``p >= 0``.
    """

    name = "sia"
    label = "Sia-like (simplified)"
    _CLIP = 3000.0  # Sia's cap on g**p (sia_goodput_clip_val)

    def __init__(self, p=-0.5, lambda_n=1.1, lambda_a=0.0, restart_penalty=None, rigid=False, time_limit=5.0):
        super().__init__()
        if not (is_real_scalar(p) and math.isfinite(float(p))):
            raise InvalidOptionError(
                f"p must be a finite real number (Sia's fairness exponent: negative minimises, e.g. -0.5; zero or "
                f"positive maximises); got {p!r}."
            )
        self.p = float(p)
        self.lambda_n = _check_real("lambda_n", lambda_n, strict=True, fix="Sia uses 1.1.")
        self.lambda_a = _check_real("lambda_a", lambda_a, fix="Sia's programme uses none: 0.")
        self.restart_penalty = None if restart_penalty is None else _check_real(
            "restart_penalty", restart_penalty, fix="Pass seconds, e.g. 30, or None for the simulator's restart model.")
        self.rigid = _check_bool("rigid", rigid)
        self.time_limit = _check_real("time_limit", time_limit, strict=True, fix="Pass e.g. 5.")
        self._grown = {}

    def reset(self):
        super().reset()
        self._grown = {}  # job_id -> {gpu_type: largest count it ran on}

    def _penalty(self, state, model):
        if self.restart_penalty is not None:
            return self.restart_penalty
        return float(state.progress.restart_time(model))

    def _configs(self, state, js, types):
        sizes = (js.job.scale_factor,) if self.rigid else SIZES
        grown = self._grown.get(js.job.job_id, {})
        out = []
        for t, g in enumerate(types):
            cap = math.inf if self.rigid else max(1, 2 * grown.get(g, 0))
            for n in sizes:
                if n <= state.cluster[g] and n <= cap:
                    r = self._rate(state, js.job.model, g, n)
                    if r > 0:
                        out.append((t, n, r))
        return out

    def _weights(self, state, js, types):
        """[(type index, n, weight)]: the job's configurations worth taking and their objective weights."""
        configs = self._configs(state, js, types)
        if not configs:
            return []
        low = min(r for _, _, r in configs)
        norm = js.job.scale_factor / low if self.rigid else 1.0 / low
        held = {g: n for g, n in js.allocation.items() if n}
        prev = (types.index(next(iter(held))), held[next(iter(held))]) if len(held) == 1 else None
        age = max(state.time - js.job.arrival, 0.0)
        P = self._penalty(state, js.job.model)
        young = (js.attained_service < P) if self.rigid else (age < P)
        factor = 1.0 if (young or age + P <= 0) else max(age - js.restarts * P, 0.0) / (age + P)
        out = []
        for t, n, r in configs:
            same = prev == (t, n)
            g = r * norm * (1.0 if (same or not held) else factor)
            A = self._CLIP if g <= 0 else min(round(g ** self.p, 2), self._CLIP)
            w = (self.lambda_n - A) if self.p < 0 else (A - self.lambda_n)
            if held and not same:
                w -= self.lambda_a
            if w > 0:
                out.append((t, n, w))
        return out

    def decide(self, state):
        """Allocation for the coming round: ``{job_id: {gpu_type: n_gpus}}``."""
        from ortools.sat.python import cp_model

        types = list(state.cluster)
        jobs = sorted(state.jobs, key=lambda js: js.job.job_id)
        ids = {js.job.job_id for js in jobs}
        self._grown = {k: v for k, v in self._grown.items() if k in ids}
        for js in jobs:  # the largest count each job has run on, per type (Sia's growth cap)
            for g, n in js.allocation.items():
                if n:
                    d = self._grown.setdefault(js.job.job_id, {})
                    d[g] = max(d.get(g, 0), int(n))
        model = cp_model.CpModel()
        used = [[] for _ in types]
        choice = []  # (job index, type, n, var)
        objective = []
        for j, js in enumerate(jobs):
            row = []
            for t, n, w in self._weights(state, js, types):
                wi = int(round(w * 1000))
                if wi <= 0:
                    continue  # worth nothing at the solver's resolution
                x = model.NewBoolVar("")
                row.append(x)
                used[t].append((n, x))
                choice.append((j, t, n, x))
                objective.append(wi * x)
            # one configuration per job at most
            if len(row) > 1:
                model.AddAtMostOne(row)
        if not choice:
            return {}
        # no type over-subscribed
        for t, g in enumerate(types):
            if used[t] and sum(n for n, _ in used[t]) > state.cluster[g]:
                model.Add(sum(n * x for n, x in used[t]) <= state.cluster[g])
        model.Maximize(sum(objective))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        solver.parameters.max_deterministic_time = self.time_limit
        status = solver.Solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise SolverError(
                f"CP-SAT returned {solver.StatusName(status)} on policy 'sia' (x = 0 is always feasible); "
                f"raise time_limit (now {self.time_limit:g}) or report this."
            )
        self.last_status = solver.StatusName(status)
        out = {}
        for j, t, n, x in choice:
            if solver.Value(x):
                out[jobs[j].job.job_id] = {types[t]: n}
        return out


#: Peer policies by name, for ``hetplace.online.make_policy(name, **options)``.
#: Which point of the max-min optimal face "las-aware" takes (see LasAwarePolicy).
LP_POINTS = ("center", "efficient", "vertex")

PEER_POLICIES = {
    "fifo": FifoPolicy,
    "fifo-aware": FifoAwarePolicy,
    "las": LasPolicy,
    "las-aware": LasAwarePolicy,
    "ftf": FtfPolicy,
    "ftf-aware": FtfAwarePolicy,
    "allox": AlloxPolicy,
    "sia": SiaPolicy,
    "gavel-mst": GavelMaxSumThroughputPolicy,
}
