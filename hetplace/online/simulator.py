"""Round-driven cluster simulator (docs/online.md §3): cluster state, the policy loop, physical GPUs, restarts."""

import inspect
import math
import numbers
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_seed, is_real_scalar
from ..errors import HetplaceWarning, HiddenInformationError, InvalidOptionError
from .nodes import has_nodes, parse_layout
from .progress import ProgressModel, spread_rate
from .trace import Job

__all__ = ["JobState", "ClusterState", "JobView", "is_oracle", "simulate", "parse_cluster", "STALL_ROUNDS",
           "MIN_ROUND_S", "MAX_SECONDS", "MAX_ROUNDS", "DECISION_LIMIT_S"]

#: Consecutive rounds in which active jobs exist, none arrives and no job advances, after which
#: :func:`simulate` gives up (``status="stalled"``); a restart model adds the rounds its longest
#: restart spans, so a job that keeps its GPUs through a long restart is not taken for stalled.
STALL_ROUNDS = 1000
#: Shortest round :func:`simulate` accepts (seconds): the round is the simulator's clock tick.
MIN_ROUND_S = 1.0
#: Latest arrival and longest round (seconds, about 31,700 years): far below where adding a round to
#: the clock stops changing it (2**53 s).
MAX_SECONDS = 1e12
#: Most rounds a simulation may need: a trace whose last job cannot finish within this many rounds,
#: even alone on its fastest allocation, is refused before the first round.
MAX_ROUNDS = 10**8
#: Seconds a policy's decision may take (default of :func:`simulate`'s ``decision_limit``): a round
#: whose ``decide`` takes longer is counted and reported in the result (``slow_decisions``).
DECISION_LIMIT_S = 10.0


@dataclass(frozen=True)
class JobView:
    """A job as a non-oracle policy sees it: what a scheduler knows when the job is submitted.

    ``job_id``, ``model``, ``arrival`` and ``scale_factor`` of the :class:`Job`; its length
    (``total_steps``, and ``duration``, which is derived from it) is hidden: reading either
    raises :class:`~hetplace.errors.HiddenInformationError` (docs/online.md §3.1).
    """

    job_id: int
    model: str
    arrival: float
    scale_factor: int

    def _hidden(self, name):
        raise HiddenInformationError(
            f"job {self.job_id}: {name} (the job's true length; remaining_steps too) is hidden from a non-oracle "
            "policy: a scheduler does not know how long a job will run. Use what it can know (done_steps, "
            "attained_service, time_run, restarts, the jobs of state.finished), or declare the policy an oracle "
            "(class attribute oracle = True) and say so in its name and label."
        )

    @property
    def total_steps(self):
        """Hidden: raises :class:`~hetplace.errors.HiddenInformationError`."""
        self._hidden("total_steps")

    @property
    def duration(self):
        """Hidden: raises :class:`~hetplace.errors.HiddenInformationError`."""
        self._hidden("duration")


def is_oracle(policy):
    """True when ``policy`` is declared to see job lengths (class or instance attribute ``oracle = True``)."""
    return getattr(policy, "oracle", False) is True


@dataclass(frozen=True)
class JobState:
    """An active job as a policy sees it.

    Attributes
    ----------
    job : Job or JobView
        The :class:`Job` for an oracle policy, a :class:`JobView` (no length)
        for every other one.
    done_steps : float
        Steps run so far.
    allocation : dict
        ``{gpu_type: n_gpus}`` it held in the previous round (``{}``: none).
    attained_service : float
        GPU-seconds received so far (restarts included).
    time_run : float
        Seconds it has held GPUs.
    rounds_on : dict
        ``{gpu_type: rounds}`` it received on each type.
    restarts : int
        Restarts so far.
    gpus : dict
        ``{gpu_type: tuple of GPU indices}`` it held in the previous round
        (indices ``0 .. cluster[type] - 1``).
    restart_left : float
        Seconds of a restart still to pay if it keeps its GPUs.
    """

    job: Job
    done_steps: float
    allocation: dict
    attained_service: float
    time_run: float
    rounds_on: dict
    restarts: int
    gpus: dict = field(default_factory=dict)
    restart_left: float = 0.0

    @property
    def remaining_steps(self):
        """``job.total_steps - done_steps`` (oracle policies only: a :class:`JobView` raises)."""
        return self.job.total_steps - self.done_steps


@dataclass(frozen=True)
class _RoundView:
    """The fields every world's round state starts with (its subclasses document them)."""

    time: float
    round_s: float
    cluster: dict
    jobs: tuple


@dataclass(frozen=True)
class ClusterState(_RoundView):
    """What a policy sees at a round boundary.

    Attributes
    ----------
    time : float
        Seconds since the start of the trace.
    round_s : float
        Length of the round about to run.
    cluster : dict
        ``{gpu_type: n_gpus}``.
    jobs : tuple of JobState
        Active jobs (arrived, not finished), by ``job_id``.
    progress : ProgressModel
        The simulator's progress model (``progress.steps_per_second(model, {"v100": 2})``).
    table : hetplace.data.GavelTable
    round_index : int
        0, 1, ... (rounds in which jobs were active).
    finished : tuple of Job
        Jobs that finished since the previous decision, with their lengths
        (a scheduler knows how long a finished job ran; a non-oracle policy
        may learn from them).
    oracle : bool
        Whether ``jobs`` carry their lengths (:class:`Job`) or not
        (:class:`JobView`): what :func:`simulate` hands the policy, by
        :func:`is_oracle`.  Default True for a state built by hand.
    nodes : tuple of Node
        The cluster's nodes (type and physical GPUs each) when it is given node
        by node; ``()`` otherwise.  Node ids are positions in this tuple.
    network : Network or None
        The bandwidths between and inside nodes (None without nodes).
    free : dict
        ``{gpu_type: tuple of GPU indices}`` held by no active job in the
        previous round (with nodes only; ``{}`` otherwise).
    """

    progress: ProgressModel
    table: object
    round_index: int = 0
    finished: tuple = ()
    oracle: bool = True
    nodes: tuple = ()
    network: object = None
    free: dict = field(default_factory=dict)


def parse_cluster(cluster, table=None):
    """``{gpu_type: n_gpus}`` from a dict or a ``"v100=36,p100=36,k80=36"`` string, checked against ``table``."""
    text = None
    if isinstance(cluster, str):
        text, out = cluster, {}
        for part in filter(None, (p.strip() for p in cluster.split(","))):
            name, sep, count = part.partition("=")
            try:
                value = int(count)
            except ValueError:
                value = None
            if not sep or value is None:
                raise InvalidOptionError(
                    f"cluster={cluster!r}: {part!r} is not TYPE=COUNT; write e.g. 'v100=36,p100=36,k80=36'."
                )
            out[name.strip()] = value
        cluster = out
    if not isinstance(cluster, Mapping):
        raise InvalidOptionError(
            f"cluster must be a dict {{gpu_type: n_gpus}} such as {{'v100': 36, 'p100': 36, 'k80': 36}}; "
            f"got {type(cluster).__name__}."
        )
    from ..problem import MAX_WORKERS

    out = {}
    for g, n in cluster.items():
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 0:
            raise InvalidOptionError(f"cluster[{g!r}] must be a non-negative integer of GPUs; got {n!r}.")
        if n > MAX_WORKERS:
            raise InvalidOptionError(
                f"cluster[{g!r}] = {n!r} GPUs; hetplace handles at most {MAX_WORKERS:,} GPUs (workers) in a "
                "cluster. Fix: simulate a smaller cluster."
            )
        if table is not None and g not in table.types:
            raise InvalidOptionError(
                f"cluster names GPU type {g!r}{f' (in {text!r})' if text else ''}, which the throughput table "
                f"does not have; use {', '.join(table.types)}."
            )
        out[str(g)] = int(n)
    if sum(out.values()) < 1:
        raise InvalidOptionError(f"cluster must have at least one GPU; got {cluster!r}.")
    if sum(out.values()) > MAX_WORKERS:
        raise InvalidOptionError(
            f"cluster has {sum(out.values()):,} GPUs; hetplace handles at most {MAX_WORKERS:,} GPUs (workers) in a "
            "cluster. Fix: simulate a smaller cluster."
        )
    return out


def _trace_iv(trace, table):
    if isinstance(trace, (str, bytes)) or not isinstance(trace, Sequence) or not trace:
        raise InvalidOptionError(
            "trace must be a non-empty sequence of hetplace.online.Job (gavel_trace(...) or read_trace(path)); "
            f"got {type(trace).__name__}{'' if trace else ' (empty)'}."
        )
    ids = set()
    for j in trace:
        if not isinstance(j, Job):
            raise InvalidOptionError(f"trace must hold hetplace.online.Job objects; got {type(j).__name__}.")
        _job_iv(j)
        if j.job_id in ids:
            raise InvalidOptionError(f"trace has job_id {j.job_id} twice; job ids must be distinct.")
        ids.add(j.job_id)
        if not (math.isfinite(j.arrival) and j.arrival >= 0 and math.isfinite(j.total_steps) and j.total_steps > 0):
            raise InvalidOptionError(
                f"trace job {j.job_id} needs a finite arrival >= 0 and total_steps > 0; got {j.arrival!r}, "
                f"{j.total_steps!r}."
            )
        if j.arrival > MAX_SECONDS:
            raise InvalidOptionError(
                f"trace job {j.job_id}: arrival={j.arrival!r} s is beyond the simulator's clock ({MAX_SECONDS:g} s, "
                "about 31,700 years). Fix: measure arrivals in seconds from the start of the trace."
            )
    known = set(table.models)
    for j in trace:
        if j.model not in known:
            raise InvalidOptionError(
                f"trace job {j.job_id}: model {j.model!r} is not in the throughput table {table.path}."
            )
    return sorted(trace, key=lambda j: (j.arrival, j.job_id))


def _job_iv(j):
    """Check the fields of one :class:`Job` (types and ranges) before any of them is used."""
    from ..problem import MAX_WORKERS

    def integral(v):
        return not isinstance(v, (bool, np.bool_)) and isinstance(v, numbers.Integral)

    if not integral(j.job_id) or not 0 <= j.job_id < 2**63:
        raise InvalidOptionError(
            f"trace job {j.job_id!r}: job_id must be an integer in [0, 2**63) (the simulator marks free GPUs with "
            f"-1); got {j.job_id!r}. Fix: number the jobs 0, 1, ..."
        )
    jid = int(j.job_id)
    if not isinstance(j.model, str):
        raise InvalidOptionError(
            f"trace job {jid}: model must be a model string of the throughput table, e.g. 'ResNet-50 (batch size "
            f"64)'; got {type(j.model).__name__} {j.model!r}."
        )
    for name in ("arrival", "total_steps"):
        value = getattr(j, name)
        if not is_real_scalar(value):
            raise InvalidOptionError(
                f"trace job {jid}: {name} must be a real number; got {type(value).__name__} {value!r}."
            )
    if not integral(j.scale_factor) or not 1 <= j.scale_factor <= MAX_WORKERS:
        raise InvalidOptionError(
            f"trace job {jid}: scale_factor must be a whole number of GPUs in [1, {MAX_WORKERS:,}]; got "
            f"{type(j.scale_factor).__name__} {j.scale_factor!r}. Fix: pass e.g. 1, 2, 4 or 8."
        )
    d = j.duration
    if not is_real_scalar(d) or not (math.isnan(float(d)) or 0 <= float(d) < math.inf):
        raise InvalidOptionError(
            f"trace job {jid}: duration must be a finite number of seconds >= 0, or NaN when unknown; got {d!r}."
        )


def _measure_iv(measure, trace):
    if measure is None:
        return None
    if (isinstance(measure, (str, bytes)) or not isinstance(measure, Sequence) or len(measure) != 2
            or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in measure)
            or not measure[0] < measure[1]):
        raise InvalidOptionError(
            f"measure must be None or (first, last) job ids with first < last (jobs first..last-1 are measured, "
            f"e.g. (4000, 5000)); got {measure!r}."
        )
    first, last = int(measure[0]), int(measure[1])
    if not any(first <= j.job_id < last for j in trace):
        raise InvalidOptionError(
            f"measure={measure!r} holds no job of the trace (job ids {min(j.job_id for j in trace)}.."
            f"{max(j.job_id for j in trace)}); pick a window inside them."
        )
    return first, last


class _Run:
    """Mutable per-job record of the simulator."""

    __slots__ = ("job", "view", "done", "alloc", "gpus", "attained", "time_run", "rounds_on", "restarts",
                 "restart_left", "start", "finish", "gpu_seconds", "types", "active_n_time", "active_time", "max_gpus",
                 "restart_seconds")

    def __init__(self, job):
        self.job = job
        self.view = JobView(job.job_id, job.model, job.arrival, job.scale_factor)
        self.restart_seconds = 0.0  # GPU-seconds spent paying restart delays
        self.done = 0.0
        self.alloc = {}
        self.gpus = {}
        self.attained = 0.0
        self.time_run = 0.0
        self.rounds_on = {}
        self.restarts = 0
        self.restart_left = 0.0
        self.start = math.nan
        self.finish = math.nan
        self.gpu_seconds = 0.0
        self.types = set()
        self.active_n_time = 0.0
        self.active_time = 0.0
        self.max_gpus = 0

    def state(self, oracle=True):
        return JobState(self.job if oracle else self.view, self.done, dict(self.alloc), self.attained, self.time_run, dict(self.rounds_on),
                        self.restarts, {g: tuple(v) for g, v in self.gpus.items()}, self.restart_left)


def _policy_name(policy):
    return getattr(policy, "name", type(policy).__name__)


def _check_decision(decision, policy, active, cluster):
    """``(counts, pins)``: the policy's output as ``{job_id: {type: n}}`` without empty entries, and
    ``{job_id: {type: sorted tuple of GPU indices}}`` where it named physical GPUs; or InvalidOptionError."""
    name = _policy_name(policy)
    pins = {}
    claimed = {}  # (type, GPU index) -> job id, for named GPUs
    if not isinstance(decision, Mapping):
        raise InvalidOptionError(
            f"policy {name!r} returned {type(decision).__name__} from decide(); it must return a dict "
            "{job_id: {gpu_type: n_gpus}}."
        )
    used = dict.fromkeys(cluster, 0)
    out = {}
    for jid, alloc in decision.items():
        if jid not in active:
            raise InvalidOptionError(
                f"policy {name!r} allocated GPUs to job {jid!r}, which is not active (arrived and unfinished) at "
                "this round; allocate only to the job ids of state.jobs."
            )
        if not isinstance(alloc, Mapping):
            raise InvalidOptionError(
                f"policy {name!r} gave job {jid} {alloc!r}; each value must be a dict {{gpu_type: n_gpus}}."
            )
        clean = {}
        for g, n in alloc.items():
            if g not in cluster:
                raise InvalidOptionError(
                    f"policy {name!r} gave job {jid} GPUs of type {g!r}, which the cluster does not have "
                    f"({', '.join(cluster)})."
                )
            if isinstance(n, (Sequence, np.ndarray)) and not isinstance(n, (str, bytes)):
                n = _named_gpus(n, name, jid, g, cluster[g], claimed)
                if n:
                    pins.setdefault(jid, {})[g] = n
                n = len(n)
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 0:
                raise InvalidOptionError(
                    f"policy {name!r} gave job {jid} {n!r} GPUs of type {g!r}; counts must be non-negative integers."
                )
            if n:
                clean[g] = int(n)
                used[g] += int(n)
        if clean:
            out[jid] = clean
    over = [g for g in cluster if used[g] > cluster[g]]
    if over:
        g = over[0]
        raise InvalidOptionError(
            f"policy {name!r} allocated {used[g]} GPUs of type {g!r}, more than the cluster's {cluster[g]}; "
            "the allocations of one round must fit the cluster."
        )
    return out, pins


def _named_gpus(gpus, name, jid, g, capacity, claimed):
    """The physical GPUs a policy named for job ``jid`` on type ``g``, as a sorted tuple, or InvalidOptionError."""
    out = []
    for k in gpus:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or not 0 <= k < capacity:
            raise InvalidOptionError(
                f"policy {name!r} named GPU {k!r} of type {g!r} for job {jid}; physical GPUs are integers "
                f"0..{capacity - 1} (state.nodes lists them per node). Fix: name GPUs of that range, or give a count."
            )
        k = int(k)
        if (g, k) in claimed:
            raise InvalidOptionError(
                f"policy {name!r} named GPU {k} of type {g!r} for job {jid} and for job {claimed[g, k]} (or twice); "
                "a GPU runs one job per round."
            )
        claimed[g, k] = jid
        out.append(k)
    return tuple(sorted(out))


def _timed_decide(policy, state, rnd, decision_limit, slow):
    """``(decision, seconds, slow rounds so far)`` of one ``policy.decide(state)``; warns at the first slow one.

    A Python call cannot be interrupted safely, so a decision over ``decision_limit`` is still
    used; the simulators count such rounds (``slow_decisions``) and warn once per run.
    """
    t0 = time.perf_counter()
    decision = policy.decide(state)
    dt = time.perf_counter() - t0
    if dt > decision_limit:
        if not slow:
            warnings.warn(
                f"policy {_policy_name(policy)!r} took {dt:.3g} s to decide round {rnd}, over the "
                f"decision_limit of {decision_limit:g} s; the result counts such rounds (slow_decisions).",
                HetplaceWarning, stacklevel=3,
            )
        slow += 1
    return decision, dt, slow


def _reset(policy, seed):
    reset = getattr(policy, "reset", None)
    if reset is None:
        return
    try:
        params = inspect.signature(reset).parameters
    except (TypeError, ValueError):
        params = {}
    if "seed" in params:
        reset(seed=seed)
    else:
        reset()


def _setup_iv(table, cluster, round_s, network=None):
    """``(table, cluster, round_s, layout)`` validated: the table (default Gavel's), the cluster dict, seconds per
    round, and the :class:`~hetplace.online.nodes.Layout` of a cluster given node by node (else None)."""
    from ..data import GavelTable, load_gavel

    if table is None:
        table = load_gavel()
    elif not isinstance(table, GavelTable):
        raise InvalidOptionError(f"table must be a hetplace.data.GavelTable or None; got {type(table).__name__}.")
    layout = None
    if has_nodes(cluster):
        cluster, layout = parse_layout(cluster, network)
    elif network is not None:
        raise InvalidOptionError(
            f"network={network!r} was given but the cluster is given by counts ({cluster!r}); give it node by node "
            "(e.g. {'v100': [4, 4, 4]}: GPUs per node) or drop network=."
        )
    cluster = parse_cluster(cluster, table)
    if not is_real_scalar(round_s) or not (MIN_ROUND_S <= float(round_s) <= MAX_SECONDS):
        raise InvalidOptionError(
            f"round_s must be a number of seconds in [{MIN_ROUND_S:g}, {MAX_SECONDS:g}] (the simulator's clock "
            f"tick); got {round_s!r}. Fix: pass e.g. 360 (Gavel's rounds) or 60."
        )
    return table, cluster, float(round_s), layout


def _rounds_iv(jobs, cluster, round_s, model, restart_of):
    """Refuse a run that needs more than :data:`MAX_ROUNDS` rounds however well it is scheduled.

    A lower bound on the rounds: each job alone on its fastest allocation of the cluster
    (:meth:`ProgressModel.bound`) from its arrival; and the rounds the longest restart spans.
    Jobs no type of the cluster can run are left out (they end the run ``stalled``).
    """
    types = [g for g, n in cluster.items() if n > 0]
    K = sum(cluster.values())
    best = {m: model.bound(m, K, types) for m in {j.model for j in jobs}}
    end, worst = 0.0, None
    for j in jobs:
        if best[j.model] > 0:
            e = j.arrival + j.total_steps / best[j.model]
            if e > end:
                end, worst = e, j
    if end / round_s > MAX_ROUNDS:
        raise InvalidOptionError(
            f"round_s={round_s!r} would take at least {end / round_s:.3g} rounds: trace job {worst.job_id} "
            f"(arrival={worst.arrival!r}, total_steps={worst.total_steps!r}) cannot finish before {end:.4g} s even "
            "alone on its fastest "
            f"allocation, and the simulator runs at most {MAX_ROUNDS:,} rounds. Fix: raise round_s to at least "
            f"{end / MAX_ROUNDS:.3g} s or shorten the job."
        )
    longest = max(restart_of.values(), default=0.0)
    if longest / round_s > MAX_ROUNDS:
        raise InvalidOptionError(
            f"restart={longest!r} s spans {longest / round_s:.3g} rounds of {round_s:g} s; the simulator runs at most "
            f"{MAX_ROUNDS:,} rounds. Fix: pass a restart cost in seconds (Sia charges 15-250 s) or longer rounds."
        )


def simulate(trace, cluster, policy, round_s=360, restart="none", table=None, measure=None, seed=0, progress=True,
             decision_limit=DECISION_LIMIT_S, network=None):
    """Simulate ``policy`` on ``trace`` on ``cluster``, round by round.

    Parameters
    ----------
    trace : sequence of Job
        :func:`gavel_trace` or :func:`read_trace`.
    cluster : dict or str
        ``{gpu_type: n_gpus}``, e.g. ``{"v100": 36, "p100": 36, "k80": 36}``, or
        ``"v100=36,p100=36,k80=36"``; or node by node: ``{gpu_type: [GPUs per
        node, ...]}`` (with ``network``), or the path of a cluster TOML file with
        ``[[nodes]]`` (docs/online.md §3.2).
    policy : str or policy object
        A name of :func:`hetplace.online.make_policy`, or an object with
        ``name`` and ``decide(state) -> {job_id: {gpu_type: n_gpus}}``
        (optionally ``reset()`` or ``reset(seed=...)``, called first).
        Unless it is declared an oracle (:func:`is_oracle`: ``oracle = True``),
        its jobs are :class:`JobView` objects without their lengths.
    round_s : float
        Round length in seconds (Gavel: 360), in [:data:`MIN_ROUND_S`, :data:`MAX_SECONDS`]
        = [1, 1e12]; a trace whose last job could not finish within :data:`MAX_ROUNDS`
        rounds even alone on its fastest allocation is refused.
    restart : "none", "flat30", "sia", float or dict
        Restart model of :class:`ProgressModel` (its longest restart spans at most
        :data:`MAX_ROUNDS` rounds); the named models ``"flat30"`` and ``"sia"``
        also charge a job's first start.
    table : hetplace.data.GavelTable, optional
        Default: the table shipped with hetplace.
    measure : (int, int), optional
        Job ids ``first .. last - 1`` whose figures the result reports; the
        simulation stops once they have all finished (Gavel's window, e.g.
        ``(4000, 5000)``).  Default: every job, run to the end.
    seed : int
        Passed to ``policy.reset(seed=...)`` when it takes one.
    progress : bool
        Progress bar on stderr (tqdm if installed, else a counter).
    decision_limit : float
        Seconds one ``decide`` call may take (default :data:`DECISION_LIMIT_S`
        = 10).  A Python call cannot be interrupted safely, so a slower
        decision is still applied, but it is counted in the result
        (``slow_decisions``, ``decision_time_max``) and a
        :class:`~hetplace.errors.HetplaceWarning` says so once per run.
    network : Network, float or dict, optional
        With a cluster given node by node (and only then): the bandwidth
        between nodes in bytes/s (a number, ``{"inter": b, "intra": b2}`` or a
        :class:`~hetplace.online.nodes.Network`).  Jobs are then placed
        consolidated on nodes, and a job spread over several nodes runs slower
        by a ring all-reduce at the inter-node bandwidth (docs/online.md §2.2).

    Returns
    -------
    OnlineResult
        ``status="complete"``, or ``"stalled"`` when no job advanced for
        :data:`STALL_ROUNDS` rounds (plus the rounds the longest restart spans)
        while none was about to arrive, whatever the jobs held; ``stalled``
        then says why for each active job (no GPUs, an allocation on which its
        rate is 0, a restart at least as long as the round paid again every
        round, ...).

    Raises
    ------
    InvalidOptionError
        Bad trace (every :class:`Job` field is checked: ``job_id`` an integer in
        [0, 2**63) and unique, ``scale_factor`` a whole number in [1, 1,000,000],
        ``arrival`` in [0, 1e12] s, ``total_steps`` finite and > 0, ``duration``
        finite >= 0 or NaN, ``model`` in the table; the message names the job and
        the field), cluster (a GPU type the table lacks, a count that is not a
        non-negative integer, more than 1,000,000 GPUs), round, restart model,
        measure window, policy name, or a policy output that does not fit
        (unknown job, unknown type, negative or non-integer count, a type over
        its capacity); the message names the policy.  An allocation on which a
        job's rate is 0 is accepted (the job holds the GPUs idle, as a model
        that does not fit would) and reported if it stalls the run.

    Notes
    -----
    At every round boundary the jobs that have arrived join; the policy
    decides; each running job pays what is left of a restart, then advances
    at ``progress.steps_per_second(model, allocation)`` and finishes at the
    exact moment its steps run out (its GPUs stay idle for the rest of the
    round).  docs/online.md §3.
    """
    from ..data import default_grad_bytes
    from .policies import make_policy
    from .result import OnlineResult

    table, cluster, round_s, layout = _setup_iv(table, cluster, round_s, network)
    seed = check_seed(seed)
    if not isinstance(progress, (bool, np.bool_)):
        raise InvalidOptionError(f"progress must be True or False; got {progress!r}.")
    if not is_real_scalar(decision_limit) or not float(decision_limit) > 0:
        raise InvalidOptionError(
            f"decision_limit must be a number of seconds > 0 (inf: no limit); got {decision_limit!r}."
        )
    decision_limit = float(decision_limit)
    model = ProgressModel(table, restart)
    jobs = _trace_iv(trace, table)
    window = _measure_iv(measure, jobs)
    restart_of = {m: model.restart_time(m) for m in {j.model for j in jobs}}
    grad_of = {m: default_grad_bytes(m) for m in restart_of}
    _rounds_iv(jobs, cluster, round_s, model, restart_of)
    if isinstance(policy, str):
        policy = make_policy(policy)
    elif not callable(getattr(policy, "decide", None)):
        raise InvalidOptionError(
            f"policy must be a policy name (hetplace.online.POLICIES) or an object with decide(state); got "
            f"{type(policy).__name__}."
        )
    _reset(policy, seed)
    oracle = is_oracle(policy)

    from .._executors import _Progress

    target = [j for j in jobs if window is None or window[0] <= j.job_id < window[1]]
    bar = _Progress(len(target), bool(progress), desc=f"simulate {_policy_name(policy)}", unit="job")
    runs = {j.job_id: _Run(j) for j in jobs}
    to_finish = {j.job_id for j in target}
    owner = {g: np.full(n, -1, dtype=np.int64) for g, n in cluster.items()}
    K = sum(cluster.values())
    active = {}  # job_id -> _Run, arrival order
    nxt = 0
    t = 0.0
    rnd = 0
    stall = 0  # rounds in a row in which no job ran
    still = 0  # rounds in a row in which no job advanced (whatever the jobs held)
    still_limit = STALL_ROUNDS + math.ceil(max(restart_of.values(), default=0.0) / round_s)
    status = "complete"
    stalled = {}
    rounds = {"time": [], "busy": [], "active": [], "running": [], "decision_time": []}
    finished = []  # jobs finished since the last decision, for state.finished
    slow = 0
    try:
        while to_finish:
            while nxt < len(jobs) and jobs[nxt].arrival <= t:
                active[jobs[nxt].job_id] = runs[jobs[nxt].job_id]
                nxt += 1
            if not active:
                if nxt >= len(jobs):
                    break
                t = math.ceil(jobs[nxt].arrival / round_s) * round_s
                if t < jobs[nxt].arrival:  # rounding of the ceil
                    t += round_s
                continue
            topo = {} if layout is None else {
                "nodes": layout.nodes, "network": layout.network,
                "free": {g: tuple(int(k) for k in np.flatnonzero(o < 0)) for g, o in owner.items()}}
            state = ClusterState(t, round_s, dict(cluster), tuple(r.state(oracle) for r in active.values()), model,
                                 table, rnd, tuple(finished), oracle, **topo)
            finished = []
            decision, dt, slow = _timed_decide(policy, state, rnd, decision_limit, slow)
            decision, pins = _check_decision(decision, policy, active, cluster)
            restarted = _map_gpus(decision, active, owner, t, restart_of, model.first_start, layout, pins,
                                  _policy_name(policy))
            busy, running = 0.0, 0
            advanced = False
            n_active = len(active)
            done_now = []
            for jid, run in active.items():
                alloc = run.alloc
                held = round_s
                if alloc:
                    running += 1
                    n = sum(alloc.values())
                    avail = round_s
                    if run.restart_left > 0:
                        use = min(run.restart_left, round_s)
                        run.restart_left -= use
                        avail -= use
                        run.restart_seconds += n * use
                    rate = model.steps_per_second(run.job.model, alloc)
                    bw = None if layout is None else _link_bandwidth(run.gpus, layout)
                    if bw is not None:
                        rate = spread_rate(rate, n, grad_of[run.job.model], bw)
                    need = run.job.total_steps - run.done
                    if rate > 0 and avail > 0 and need <= rate * avail * (1 + 1e-12):
                        held = (round_s - avail) + min(need / rate, avail)
                        run.done = run.job.total_steps
                        run.finish = t + held
                        done_now.append(jid)
                        advanced = True
                    elif avail > 0:
                        before = run.done
                        run.done += rate * avail
                        advanced = advanced or run.done > before
                    run.time_run += held
                    run.attained += n * held
                    run.gpu_seconds += n * held
                    busy += n * held
                    for g in alloc:
                        run.rounds_on[g] = run.rounds_on.get(g, 0) + 1
                run.active_n_time += n_active * held
                run.active_time += held
            for jid in done_now:
                run = active.pop(jid)
                finished.append(run.job)
                for g, idx in run.gpus.items():
                    owner[g][list(idx)] = -1
                run.gpus, run.alloc = {}, {}
                if jid in to_finish:
                    to_finish.discard(jid)
                    bar.tick()
            rounds["time"].append(t)
            rounds["busy"].append(busy / (K * round_s))
            rounds["active"].append(n_active)
            rounds["running"].append(running)
            rounds["decision_time"].append(dt)
            waiting = nxt >= len(jobs) or jobs[nxt].arrival > t + round_s  # no arrival before the next round
            stall = stall + 1 if (running == 0 and waiting) else 0
            still = still + 1 if (not advanced and waiting) else 0
            if stall >= STALL_ROUNDS or still >= still_limit:
                status = "stalled"
                stalled = _stall_reasons(active, restarted, model, round_s, restart_of, cluster)
                break
            t += round_s
            rnd += 1
    finally:
        bar.close()
    return OnlineResult(
        runs=[runs[j.job_id] for j in jobs], cluster=cluster, policy=_policy_name(policy), round_s=round_s,
        restart=restart, window=window, rounds={k: np.asarray(v) for k, v in rounds.items()}, status=status,
        progress=model, seed=seed, stalled=stalled, decision_limit=decision_limit, slow_decisions=slow,
    )


def _stall_reasons(active, restarted, model, round_s, restart_of, cluster):
    """``{job_id: why it made no progress}`` for the active jobs of a stalled simulation."""
    out = {}
    usable = [g for g, n in cluster.items() if n > 0]
    for jid, run in active.items():
        job = run.job
        churn = (run.restart_left > 0 and restart_of[job.model] >= round_s and (jid in restarted or not run.alloc))
        if run.alloc and model.steps_per_second(job.model, run.alloc) <= 0:
            alloc = ", ".join(f"{n} {g}" for g, n in run.alloc.items())
            why = (f"the policy gave it a zero-rate allocation ({alloc}): the throughput table has no figure "
                   f"for {job.model!r} there (the model does not fit)")
        elif churn:
            why = (f"the policy preempts or moves it before a restart is paid ({run.restarts} restarts so far) and each "
                   f"restart costs {restart_of[job.model]:g} s >= the round of {round_s:g} s, so it never runs")
        elif run.alloc:
            alloc = ", ".join(f"{n} {g}" for g, n in run.alloc.items())
            why = f"it holds {alloc} but its steps no longer advance"
        elif not usable or model.bound(job.model, sum(cluster.values()), usable) <= 0:
            why = f"no GPU type of the cluster runs {job.model!r} (the table has no figure > 0 for it there)"
        elif job.scale_factor > max(cluster[g] for g in usable):
            why = (f"the policy gave it no GPUs (it asks for {job.scale_factor}; no type has that many: "
                   f"{', '.join(f'{g}={n}' for g, n in cluster.items())})")
        else:
            why = "the policy gave it no GPUs"
        out[int(jid)] = why
    return out


def _link_bandwidth(gpus, layout):
    """The bandwidth between the nodes the physical ``gpus`` ({type: indices}) lie on, None for one node
    (:meth:`~hetplace.online.nodes.Network.link_bandwidth`)."""
    return layout.network.link_bandwidth({int(layout.node_of[g][k]) for g, idx in gpus.items() for k in idx})


def _consolidated(owner_g, node_of_g, n, before, rack=None):
    """``n`` free GPUs of one type, consolidated on nodes (Gavel's rule, docs/online.md §3.2).

    The job's own previous GPUs when they are exactly ``n`` and all free; else
    the fullest-fitting node with ``n`` free GPUs (best fit: fewest free, then
    lowest id); else (with ``rack``, the rack of every node) inside the rack
    with the fewest free GPUs of the type that still holds ``n`` (then the
    lowest rack id) when one does; there, or over the cluster, nodes by most
    free GPUs first (fewest nodes), the last one best fit.  Lowest free
    indices inside a node.
    """
    if len(before) == n and all(owner_g[k] < 0 for k in before):
        return list(before)
    free = np.flatnonzero(owner_g < 0)
    per_node = {}
    for k in free.tolist():
        per_node.setdefault(int(node_of_g[k]), []).append(k)
    fits = [v for v in per_node if len(per_node[v]) >= n]
    if fits:
        v = min(fits, key=lambda v: (len(per_node[v]), v))
        return per_node[v][:n]
    if rack is not None:
        per_rack = {}
        for v, ks in per_node.items():
            per_rack[rack[v]] = per_rack.get(rack[v], 0) + len(ks)
        fits = [r for r, c in per_rack.items() if c >= n]
        if fits:
            r = min(fits, key=lambda r: (per_rack[r], r))
            per_node = {v: ks for v, ks in per_node.items() if rack[v] == r}
    take, left = [], n
    while left > 0:
        fits = [v for v in per_node if len(per_node[v]) >= left]
        if fits:
            v = min(fits, key=lambda v: (len(per_node[v]), v))
        else:
            v = max(per_node, key=lambda v: (len(per_node[v]), -v))
        got = per_node.pop(v)[:left]
        take.extend(got)
        left -= len(got)
    return take


def _map_gpus(decision, active, owner, t, restart_of, first_start=False, layout=None, pins=None, name=None):
    """Update every active job's ``alloc`` and physical ``gpus`` from ``decision``; count restarts.

    A job whose counts per type are unchanged keeps its GPUs; the others
    first take back their own previous GPUs of a type that are still free,
    then the lowest free indices.  A job that held GPUs before and whose GPU
    set changes (other GPUs, more, fewer, or none to some) restarts.  With a ``layout``
    (nodes), movers are placed largest first, each type consolidated by
    :func:`_consolidated`.  ``pins`` ({job_id: {type: GPU indices}}, from a
    decision that named physical GPUs) are taken as named, before the other
    movers; a named GPU held by a job that keeps its GPUs is an error.  With ``first_start``
    a job's first start also pays its restart delay (not counted as a restart).  Returns
    the ids of the jobs that restarted.
    """
    moved = []
    restarted = set()
    pins = pins or {}
    for jid, run in active.items():
        new = decision.get(jid, {})
        pin = pins.get(jid)
        if new == run.alloc and (pin is None or all(set(v) == set(run.gpus.get(g, ())) for g, v in pin.items())):
            continue
        for g, idx in run.gpus.items():  # release first, so movers can take them
            owner[g][list(idx)] = -1
        moved.append((run, new))
    for run, new in moved:
        for g, idx in pins.get(run.job.job_id, {}).items():
            held = owner[g][list(idx)]
            if (held >= 0).any():
                k = idx[int(np.argmax(held >= 0))]
                raise InvalidOptionError(
                    f"policy {name!r} named GPU {k} of type {g!r} for job {run.job.job_id}, but job "
                    f"{int(owner[g][k])} keeps it (its allocation did not change). Fix: name free GPUs "
                    "(state.free, and the GPUs of the jobs you move), or name that job's GPUs too."
                )
    if layout is not None or pins:
        # named GPUs first (they are fixed), then the largest movers first (Gavel: consolidate the big jobs)
        moved.sort(key=lambda m: (m[0].job.job_id not in pins, -sum(m[1].values()), m[0].job.job_id))
    for run, new in moved:
        before = run.gpus
        gpus = {}
        pin = pins.get(run.job.job_id, {})
        for g, n in new.items():
            if g in pin:
                owner[g][list(pin[g])] = run.job.job_id
                gpus[g] = pin[g]
                continue
            if layout is not None:
                take = _consolidated(owner[g], layout.node_of[g], n, before.get(g, ()), layout.network.rack)
                owner[g][take] = run.job.job_id
                gpus[g] = tuple(sorted(int(k) for k in take))
                continue
            free_own = [k for k in before.get(g, ()) if owner[g][k] < 0][:n]
            take = list(free_own)
            if len(take) < n:
                free = np.flatnonzero(owner[g] < 0)
                if free_own:
                    free = free[~np.isin(free, free_own)]
                take.extend(int(k) for k in free[: n - len(take)])
            owner[g][take] = run.job.job_id
            gpus[g] = tuple(sorted(take))
        changed = {g: set(v) for g, v in gpus.items()} != {g: set(v) for g, v in before.items()}
        if new and run.time_run > 0 and changed:
            run.restarts += 1
            run.restart_left = restart_of[run.job.model]
            restarted.add(run.job.job_id)
        elif new and first_start and math.isnan(run.start):
            run.restart_left = restart_of[run.job.model]
        if new and math.isnan(run.start):
            run.start = t
        run.gpus, run.alloc = gpus, dict(new)
        if new:
            run.types.update(new)
            run.max_gpus = max(run.max_gpus, sum(new.values()))
    return restarted
