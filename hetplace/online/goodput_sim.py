"""The goodput world's simulator (docs/online.md §10): a cluster in nodes, jobs that progress by goodput.

:func:`simulate_goodput` runs a Sia-format workload (:func:`~hetplace.online.goodput.read_sia_workload`)
on a cluster given as ``{gpu_type: (nodes, GPUs per node)}`` under a policy, round by round, with the
progress model of :mod:`hetplace.online.goodput`.  A policy places each job on one GPU type and
names how many GPUs it takes on which node of that type: ``{job_id: (gpu_type, {node: n_gpus})}``;
a policy that puts a job on **several types** at once (``"smp-mixed"``) gives ``{job_id: {gpu_type:
{node: n_gpus}, ...}}``, and the job then progresses at
:meth:`~hetplace.online.goodput.GoodputModel.mixed_rate` (an assumption: the profiles measure one type
at a time, docs/online.md §10.5).
The result is an :class:`~hetplace.online.OnlineResult` (JCTs, p99, makespan, GPU-hours, restarts,
decision times) as in Gavel's world.
"""

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_seed, is_real_scalar
from ..errors import InvalidOptionError
from .goodput import SIA_CLUSTER, GoodputJob, GoodputModel, _canon, read_sia_workload
from .simulator import DECISION_LIMIT_S, MAX_ROUNDS, STALL_ROUNDS, _policy_name, _reset, _RoundView, _Run, _timed_decide

__all__ = ["GoodputJobState", "GoodputState", "simulate_goodput", "parse_goodput_cluster", "ROUND_S"]

#: Round length of Sia's and Pollux's simulators (seconds).
ROUND_S = 60.0


@dataclass(frozen=True)
class _Record:
    """A workload job as the shared result table sees it (``model`` is the application)."""

    job_id: int
    model: str
    arrival: float
    scale_factor: int
    total_steps: float
    name: str
    batch_size: int


@dataclass(frozen=True)
class GoodputJobState:
    """An active job as a goodput-world policy sees it.

    Attributes
    ----------
    job : GoodputJob
        Name, arrival, application and the trace's ``num_replicas`` and ``batch_size``.
    progress : float
        Statistical progress so far (steps at the application's initial batch); a policy
        knows what a job has done, not how much is left.
    epoch : int
        Epochs completed.
    gpu_type : str, tuple or None
        Type it ran on in the previous round (None: no GPUs; a sorted tuple of types when it
        ran on several, see ``allocation``).
    placement : dict
        ``{node: n_gpus}`` it held in the previous round on ``gpu_type`` (on several types:
        ``{(gpu_type, node): n_gpus}``).
    attained_service : float
        GPU-seconds received so far (restarts included).
    age : float
        Seconds since it arrived.
    restarts : int
        Restarts so far (the first start not counted).
    restart_left : float
        Seconds of checkpoint-restore still to run: while > 0 the job keeps its
        GPUs whatever the policy returns (Sia's simulator does the same).
    max_gpus : dict
        ``{gpu_type: the most GPUs it has run on there}`` (types it has run on only).
    allocation : dict
        ``{gpu_type: {node: n_gpus}}`` held in the previous round (every type it ran on).
    """

    job: GoodputJob
    progress: float
    epoch: int
    gpu_type: object
    placement: dict
    attained_service: float
    age: float
    restarts: int
    restart_left: float
    max_gpus: dict
    allocation: dict = None

    @property
    def n_gpus(self):
        """GPUs held in the previous round."""
        return sum(self.placement.values())

    @property
    def pinned(self):
        """True while a restart is under way: the job keeps its allocation this round."""
        return self.restart_left > 0 and bool(self.placement)


@dataclass(frozen=True)
class GoodputState(_RoundView):
    """What a goodput-world policy sees at a round boundary.

    Attributes
    ----------
    time, round_s : float
    cluster : dict
        ``{gpu_type: (nodes, GPUs per node)}``.
    jobs : tuple of GoodputJobState
        Active jobs, by arrival.
    model : GoodputModel
        The profiles (step times, gradient statistics) of every application.
    round_index : int
    finished : tuple of GoodputJobState
        Jobs that finished since the previous decision, as they ended: ``progress`` is the
        work each needed (what a scheduler learns when a job completes).
    free : dict
        ``{gpu_type: tuple of free GPUs per node}`` once the pinned jobs (restarting,
        :attr:`GoodputJobState.pinned`) keep their GPUs: what the policy may hand out.
    """

    model: object
    round_index: int = 0
    finished: tuple = ()
    free: dict = None


def parse_goodput_cluster(cluster, model):
    """``{gpu_type: (nodes, GPUs per node)}`` checked against the types ``model`` profiles."""
    if cluster is None:
        cluster = SIA_CLUSTER
    if not isinstance(cluster, Mapping) or not cluster:
        raise InvalidOptionError(
            f"cluster must be a dict {{gpu_type: (nodes, GPUs per node)}}, e.g. {SIA_CLUSTER}; got {cluster!r}.")
    out = {}
    for g, spec in cluster.items():
        if g not in model.gpu_types:
            raise InvalidOptionError(
                f"cluster has GPU type {g!r}, which the model does not profile ({', '.join(model.gpu_types)}).")
        ok = isinstance(spec, Sequence) and len(spec) == 2 and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in spec)
        if not ok or not (1 <= spec[0] <= 100_000 and 1 <= spec[1] <= 64):
            raise InvalidOptionError(
                f"cluster[{g!r}] must be (nodes, GPUs per node), whole numbers in [1, 100000] and [1, 64]; "
                f"got {spec!r}.")
        out[g] = (int(spec[0]), int(spec[1]))
    return out


def _shape(place):
    """A placement ``{node: n}`` as the canonical tuple of GPUs per node (what a restart is judged on)."""
    return _canon(place[k] for k in sorted(place))


def _workload_iv(workload, model):
    if isinstance(workload, (str, Path)):
        workload = read_sia_workload(workload)
    if not isinstance(workload, Sequence) or not workload:
        raise InvalidOptionError("workload must be a non-empty sequence of GoodputJob (read_sia_workload) or a path.")
    ids = set()
    for j in workload:
        if not isinstance(j, GoodputJob):
            raise InvalidOptionError(f"workload must hold GoodputJob records; got {type(j).__name__}.")
        bad = None
        if isinstance(j.job_id, bool) or not isinstance(j.job_id, numbers.Integral):
            bad = f"job_id must be an integer; got {j.job_id!r}"
        elif not (is_real_scalar(j.arrival) and 0 <= float(j.arrival) <= 1e12):
            bad = f"arrival must be seconds in [0, 1e12]; got {j.arrival!r}"
        else:
            for name in ("num_replicas", "batch_size"):
                v = getattr(j, name)
                if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 1 <= v <= 10**9:
                    bad = f"{name} must be a whole number in [1, 1e9]; got {v!r}"
        if bad:
            raise InvalidOptionError(f"workload job {j.name!r}: {bad}.")
        if j.app not in model.profiles:
            raise InvalidOptionError(
                f"job {j.name!r} (id {j.job_id}) runs application {j.app!r}, which the model does not profile "
                f"({', '.join(sorted(model.profiles))}).")
        if j.job_id in ids:
            raise InvalidOptionError(f"job id {j.job_id} appears twice in the workload.")
        ids.add(j.job_id)
    return tuple(sorted(workload, key=lambda j: (j.arrival, j.job_id)))


class _GRun(_Run):
    """The shared per-job record, plus the goodput world's state."""

    __slots__ = ("gjob", "gtype", "place", "epoch", "max_by_type", "alloc")

    def __init__(self, gjob, total):
        super().__init__(_Record(gjob.job_id, gjob.app, gjob.arrival, gjob.num_replicas, total, gjob.name,
                                 gjob.batch_size))
        self.gjob, self.gtype, self.place, self.epoch, self.max_by_type = gjob, None, {}, 0, {}
        self.alloc = {}  # {gpu_type: {node: n}}: gtype and place are its one-type view

    def set_alloc(self, alloc):
        """Hold ``alloc`` (``{gpu_type: {node: n}}``, possibly empty); ``gtype``/``place`` follow."""
        self.alloc = {g: dict(p) for g, p in alloc.items() if p}
        if not self.alloc:
            self.gtype, self.place = None, {}
        elif len(self.alloc) == 1:
            (self.gtype, self.place), = self.alloc.items()
        else:
            self.gtype = tuple(sorted(self.alloc))
            self.place = {(g, k): n for g in self.gtype for k, n in sorted(self.alloc[g].items())}

    @property
    def pinned(self):
        """A restart is under way on GPUs it holds: it keeps them this round (GoodputJobState.pinned)."""
        return self.restart_left > 0 and bool(self.place)

    def gstate(self, now):
        return GoodputJobState(self.gjob, self.done, self.epoch, self.gtype, dict(self.place), self.attained,
                               now - self.gjob.arrival, self.restarts, self.restart_left, dict(self.max_by_type),
                               {g: dict(p) for g, p in self.alloc.items()})


def _check_decision(decision, name, active, cluster, free0):
    """``{job_id: {type: {node: n}}}`` of the policy's output, checked; pinned jobs are left to the caller.

    A value is ``(gpu_type, {node: n})`` (one type) or ``{gpu_type: {node: n}, ...}`` (several).
    """
    if not isinstance(decision, Mapping):
        raise InvalidOptionError(
            f"policy {name!r} returned {type(decision).__name__}; decide() must return a dict "
            "{job_id: (gpu_type, {node: n_gpus})}.")
    free = {g: list(f) for g, f in free0.items()}
    out = {}
    for jid, alloc in decision.items():
        run = active.get(jid)
        if run is None:
            raise InvalidOptionError(
                f"policy {name!r} allocated GPUs to job {jid!r}, which is not active at this round; allocate only "
                "to the job ids of state.jobs.")
        if run.pinned:
            continue  # a restarting job keeps its GPUs
        if alloc is None or alloc == () or (isinstance(alloc, Mapping) and not alloc):
            continue
        if isinstance(alloc, Mapping):
            parts = list(alloc.items())
            if not all(isinstance(v, Mapping) for _, v in parts):
                raise InvalidOptionError(
                    f"policy {name!r} gave job {jid} {alloc!r}; a job on several types takes "
                    "{gpu_type: {node: n_gpus}, ...}.")
        elif isinstance(alloc, Sequence) and len(alloc) == 2 and isinstance(alloc[1], Mapping):
            parts = [tuple(alloc)]
        else:
            raise InvalidOptionError(
                f"policy {name!r} gave job {jid} {alloc!r}; each value must be (gpu_type, {{node: n_gpus}}) or, "
                "on several types, {gpu_type: {node: n_gpus}}.")
        got = {}
        for g, nodes in parts:
            if g not in cluster:
                raise InvalidOptionError(
                    f"policy {name!r} gave job {jid} GPUs of type {g!r}, which the cluster does not have "
                    f"({', '.join(cluster)}).")
            clean = {}
            for k, n in nodes.items():
                if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k < cluster[g][0]:
                    raise InvalidOptionError(
                        f"policy {name!r} named node {k!r} of type {g!r} for job {jid}; nodes are "
                        f"0..{cluster[g][0] - 1}.")
                if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
                    raise InvalidOptionError(
                        f"policy {name!r} gave job {jid} {n!r} GPUs on node {k} of type {g!r}; counts must be whole "
                        "numbers >= 0.")
                if n:
                    if n > free[g][k]:
                        raise InvalidOptionError(
                            f"policy {name!r} put {n} GPUs of job {jid} on node {k} of type {g!r}, which has "
                            f"{free[g][k]} free this round (nodes hold {cluster[g][1]}; restarting jobs keep "
                            "theirs).")
                    free[g][k] -= int(n)
                    clean[int(k)] = int(n)
            if clean:
                got[g] = clean
        if got:
            out[jid] = got
    return out


def _alloc_shape(alloc):
    """``{type: shape}`` of an allocation ``{type: {node: n}}``: what a restart is judged on."""
    return {g: _shape(p) for g, p in alloc.items() if p}


def simulate_goodput(workload, model, policy, cluster=None, round_s=ROUND_S, seed=0, decision_limit=DECISION_LIMIT_S,
                     max_hours=None):
    """Simulate ``policy`` on a Sia-format ``workload`` in the goodput world.

    Parameters
    ----------
    workload : sequence of GoodputJob or path
        :func:`~hetplace.online.goodput.read_sia_workload`.
    model : GoodputModel
        :meth:`GoodputModel.from_sia` (the truth: step times, statistical efficiency,
        restart seconds per application).
    policy : str or policy object
        A name of :data:`GOODPUT_POLICIES` or an object with ``name`` and
        ``decide(state: GoodputState) -> {job_id: (gpu_type, {node: n_gpus})}``
        (optionally ``reset(seed=...)``).  With ``tune_batch = False`` its jobs run at
        their trace ``batch_size`` (Gavel's jobs); otherwise each job's executor picks its
        goodput-optimal batch for every placement and epoch.
    cluster : dict, optional
        ``{gpu_type: (nodes, GPUs per node)}``; default Sia's 64 GPUs
        (:data:`~hetplace.online.goodput.SIA_CLUSTER`).
    round_s : float
        Round length (default 60 s, Sia's and Pollux's simulators), in [1, 86400].
    seed : int
        Passed to ``policy.reset(seed=...)``.
    decision_limit : float
        Seconds one decision may take before it is counted in ``slow_decisions``.
    max_hours : float, optional
        Stop (``status="stalled"``) once simulated time passes this many hours.

    Returns
    -------
    OnlineResult
        Every job measured; ``total_steps`` and ``done_steps`` are statistical progress.

    Notes
    -----
    At every round boundary the jobs that have arrived join and the policy decides.  A job
    whose GPU type or shape (GPUs per node, in any order of nodes) changes, or that starts
    or resumes, pays its application's checkpoint-restore seconds (first start included)
    holding its new GPUs, and keeps them until the restart is over (the same shape on
    other nodes is no restart, as in Sia's simulator); then it progresses at the goodput
    of its placement (:meth:`AppProfile.advance`), its batch chosen again at every epoch,
    and finishes at the exact moment it reaches the end of its last epoch.
    """
    from .goodput_policies import make_goodput_policy
    from .result import OnlineResult

    if not isinstance(model, GoodputModel):
        raise InvalidOptionError(f"model must be a GoodputModel (GoodputModel.from_sia); got {type(model).__name__}.")
    cluster = parse_goodput_cluster(cluster, model)
    jobs = _workload_iv(workload, model)
    if not (is_real_scalar(round_s) and 1.0 <= float(round_s) <= 86400.0):
        raise InvalidOptionError(f"round_s must be seconds in [1, 86400]; got {round_s!r}.")
    round_s = float(round_s)
    if not (is_real_scalar(decision_limit) and float(decision_limit) > 0):
        raise InvalidOptionError(f"decision_limit must be seconds > 0; got {decision_limit!r}.")
    if max_hours is not None and not (is_real_scalar(max_hours) and float(max_hours) > 0):
        raise InvalidOptionError(f"max_hours must be hours > 0 or None; got {max_hours!r}.")
    seed = check_seed(seed)
    if isinstance(policy, str):
        policy = make_goodput_policy(policy)
    elif not callable(getattr(policy, "decide", None)):
        raise InvalidOptionError(
            f"policy must be a goodput policy name or an object with decide(state); got {type(policy).__name__}.")
    _reset(policy, seed)
    name = _policy_name(policy)
    tune = getattr(policy, "tune_batch", True) is not False
    limit_t = math.inf if max_hours is None else float(max_hours) * 3600.0
    runs = {j.job_id: _GRun(j, model.profile(j.app, next(iter(cluster))).total_progress) for j in jobs}
    K = sum(n * m for n, m in cluster.values())
    active = {}
    nxt, t, rnd, still, slow = 0, 0.0, 0, 0, 0
    status, stalled, finished = "complete", {}, []
    rounds = {"time": [], "busy": [], "active": [], "running": [], "decision_time": []}
    left = len(jobs)
    while left:
        while nxt < len(jobs) and jobs[nxt].arrival <= t:
            active[jobs[nxt].job_id] = runs[jobs[nxt].job_id]
            nxt += 1
        if not active:
            t = max(t + round_s, math.ceil(jobs[nxt].arrival / round_s) * round_s)
            continue
        if t > limit_t or rnd >= MAX_ROUNDS:
            status = "stalled"
            stalled = {jid: f"still running at the time limit ({t / 3600:.1f} h)" for jid in active}
            break
        free = {g: [m] * n for g, (n, m) in cluster.items()}
        for r in active.values():
            if r.pinned:
                for g, place in r.alloc.items():
                    for k, c in place.items():
                        free[g][k] -= c
        state = GoodputState(t, round_s, dict(cluster), tuple(r.gstate(t) for r in active.values()), model, rnd,
                             tuple(finished), {g: tuple(f) for g, f in free.items()})
        finished = []
        decision, dt, slow = _timed_decide(policy, state, rnd, decision_limit, slow)
        decision = _check_decision(decision, name, active, cluster, free)
        if not tune and any(len(a) > 1 for a in decision.values()):
            raise InvalidOptionError(
                f"policy {name!r} runs jobs at their trace batch (tune_batch=False) and put a job on several GPU "
                "types; a fixed-batch job runs on one type.")
        busy, running, advanced = 0.0, 0, False
        done_now = []
        for jid, run in active.items():
            if not run.pinned:  # pinned jobs keep theirs
                alloc = decision.get(jid, {})
                if _alloc_shape(alloc) == _alloc_shape(run.alloc):
                    run.set_alloc(alloc)  # the same shape on other nodes: no restart (Sia's simulator)
                else:
                    if alloc:
                        if math.isfinite(run.start):
                            run.restarts += 1
                        else:
                            run.start = t
                        run.restart_left = max(model.profile(run.gjob.app, g).restart_s for g in alloc)
                    else:
                        run.restart_left = 0.0
                    run.set_alloc(alloc)
            held = round_s
            if run.alloc:
                running += 1
                n = sum(sum(p.values()) for p in run.alloc.values())
                run.max_gpus = max(run.max_gpus, n)
                for g, p in run.alloc.items():
                    run.max_by_type[g] = max(run.max_by_type.get(g, 0), sum(p.values()))
                    run.types.add(g)
                use = min(run.restart_left, round_s)
                run.restart_left -= use
                run.restart_seconds += n * use
                before = run.done
                if len(run.alloc) == 1:
                    prof = model.profile(run.gjob.app, run.gtype)
                    placement = tuple(run.place[k] for k in sorted(run.place))
                    run.done, used = prof.advance(placement, run.done, round_s - use,
                                                  None if tune else run.gjob.batch_size)
                else:
                    prof = model.profile(run.gjob.app, run.gtype[0])  # the epochs are the application's
                    parts = {g: tuple(p[k] for k in sorted(p)) for g, p in run.alloc.items()}
                    run.done, used = model.advance_mixed(run.gjob.app, parts, run.done, round_s - use)
                run.epoch = prof.epoch_of(run.done)
                advanced = advanced or run.done > before or use > 0
                if run.done >= prof.total_progress:
                    held = use + used
                    run.finish = t + held
                    done_now.append(jid)
                run.time_run += held
                run.attained += n * held
                run.gpu_seconds += n * held
                busy += n * held
                for g in run.alloc:
                    run.rounds_on[g] = run.rounds_on.get(g, 0) + 1
            run.active_n_time += len(active) * held
            run.active_time += held
        for jid in done_now:
            run = active.pop(jid)
            finished.append(run.gstate(run.finish))
            run.set_alloc({})
            left -= 1
        rounds["time"].append(t)
        rounds["busy"].append(busy / (K * round_s))
        rounds["active"].append(len(active) + len(done_now))
        rounds["running"].append(running)
        rounds["decision_time"].append(dt)
        waiting = nxt >= len(jobs) or jobs[nxt].arrival > t + round_s
        still = still + 1 if (not advanced and waiting) else 0
        if still >= STALL_ROUNDS:
            status = "stalled"
            stalled = {jid: ("no GPUs" if not r.alloc else f"no progress on {r.alloc}")
                       for jid, r in active.items()}
            break
        t += round_s
        rnd += 1
    return OnlineResult(
        runs=[runs[j.job_id] for j in jobs], cluster={g: n * m for g, (n, m) in cluster.items()}, policy=name,
        round_s=round_s, restart="per-application", window=None,
        rounds={k: np.asarray(v) for k, v in rounds.items()}, status=status, progress=None, seed=seed,
        stalled=stalled, decision_limit=float(decision_limit), slow_decisions=slow,
    )
