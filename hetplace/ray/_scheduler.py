"""The driver of :mod:`hetplace.ray`: a :class:`hetplace.Session` whose decisions run on a Ray cluster.

The driver loop (docs/ray.md §3): jobs arrive at their model times, the
session decides on arrivals, finishes, node changes and every ``round_s``;
each change becomes placement groups (one per running job, one bundle per
worker, each pinned to its decided node by the node's ``ray.io/node-id``
label) and tasks (one per worker, running ``fn(ctx)``).  A resize or move
asks the old tasks to stop at an iteration boundary, waits for them, and
starts the new ones from the last iteration they reported.
"""

import json
import logging
import math
import numbers
import re
import time
import uuid

import ray
from ray import exceptions as ray_exceptions
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, PlacementGroupSchedulingStrategy

from ..errors import InvalidOptionError, SessionError
from ..session import SESSION_POLICIES, Session
from . import _worker
from ._cluster import NODE_ID_LABEL, ClusterView, gpu_nodes, untyped_gpu_nodes
from ._results import DecisionRecord, JobResult, RunResult, Segment

__all__ = ["RayScheduler"]

logger = logging.getLogger("hetplace.ray")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: Runs of a job lost to worker crashes (not node losses) before it is declared failed.
MAX_RECOVERIES = 3


class _Spec:
    __slots__ = ("job_id", "fn", "kwargs", "arrival", "iterations", "seq")


class _Run:
    """One placement group of a job and, once launched, its tasks."""

    __slots__ = ("epoch", "workers", "nodes", "types", "pg", "ready_ref", "pg_ready", "refs", "phase", "segment",
                 "record", "shares", "returned", "start_iteration", "step_time", "launch_time", "queued_at")

    def __init__(self):
        self.pg = None
        self.ready_ref = None
        self.pg_ready = False
        self.refs = []
        self.returned = {}
        self.phase = "queued"
        self.record = None
        self.start_iteration = None


class _Job:
    """The driver's state of one job."""

    __slots__ = ("spec", "result", "run", "stopping", "done", "epoch", "launched", "fn_ref", "in_session",
                 "reason_code", "restore_next")

    def __init__(self, spec):
        self.spec = spec
        self.result = JobResult(spec.job_id, float(spec.arrival), int(spec.iterations))
        self.run = None
        self.stopping = None
        self.done = 0
        self.epoch = 0
        self.launched = False
        self.fn_ref = None
        self.in_session = False
        self.reason_code = None


def _positive(name, value, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(float(value)) or float(value) <= 0 \
            or (not allow_inf and math.isinf(float(value))):
        raise InvalidOptionError(f"{name} must be a positive{'' if allow_inf else ', finite'} number; got {value!r}.")
    return float(value)


class RayScheduler:
    """Runs jobs on a Ray cluster where a :class:`hetplace.Session` decides (docs/ray.md).

    Parameters
    ----------
    policy : str
        A session policy (:data:`hetplace.session.SESSION_POLICIES`), default ``"smp"``.
    round_s : float
        Model seconds between periodic decisions (decisions also follow
        every arrival, finish, failure and node change).
    time_scale : float
        Model seconds per wall second: ``round_s``, arrivals, restart times
        and JCTs are model seconds, and the wall clock runs ``time_scale``
        times faster (a trace of hours replays in a minute).
    type_label : str
        The node label naming a node's GPU type (else its single
        ``accelerator_type:<name>`` resource).
    quotas : dict, optional
        ``{tenant: {type: max GPUs}}`` (the session's quotas).
    seed : int
        Seed of every decision.
    bandwidth, node_bandwidth : float, optional
        Bytes/s between nodes and inside one (default inf: no communication
        time), for the cost model's ring all-reduce.
    options : dict, optional
        Options of the policy (the session's ``options``).
    budget_s : float, optional
        Wall seconds a decision may take (the session's ``budget_s``).
    report_s : float
        Wall seconds between a worker's progress reports and stop polls (the
        stop latency is at most about this).
    warmup : bool
        Start one Ray worker process per GPU before the clock starts, so the
        first runs do not pay Python's start-up (docs/ray.md §5).
    restart_overhead_s : float
        Wall seconds the runtime itself adds to a restart (stopping the old
        tasks, a new placement group, the new tasks' start; about 0.3 s on a
        local cluster of 2 cores, docs/ray.md §5).  The session decides with each job's
        ``restart_time + restart_overhead_s * time_scale``, so a move must pay
        for the runtime's part too; the emulated job and ``predicted_jct`` use
        the job's own ``restart_time``.  0 leaves the session's restart cost
        as submitted.

    Examples
    --------
    See docs/ray.md (a Ray cluster is needed to run them).
    """

    #: Wall seconds a queued placement group waits for Ray's resource view to show its GPUs free.
    PG_SYNC_S = 1.0
    #: Wall seconds the warm-up waits for its groups and tasks (a node that is busy or slow starts cold).
    WARMUP_S = 30.0
    #: Wall seconds a lost worker's node is watched for death before the loss counts as a worker crash.
    NODE_DEATH_S = 1.0
    #: Wall seconds the clean-up gives running tasks to stop (then they are cancelled).
    STOP_GRACE_S = 1.0

    def __init__(self, policy="smp", *, round_s=60.0, time_scale=1.0, type_label="gpu_type", quotas=None, seed=0,
                 bandwidth=None, node_bandwidth=None, options=None, budget_s=None, report_s=0.1, warmup=True,
                 restart_overhead_s=0.3):
        if not isinstance(policy, str) or policy not in SESSION_POLICIES:
            raise InvalidOptionError(f"policy must be one of {', '.join(map(repr, SESSION_POLICIES))}; got {policy!r}.")
        self.policy = policy
        self.round_s = _positive("round_s", round_s)
        self.time_scale = _positive("time_scale", time_scale)
        if not isinstance(type_label, str) or not type_label:
            raise InvalidOptionError(f"type_label must be a non-empty label name; got {type_label!r}.")
        self.type_label = type_label
        self.report_s = _positive("report_s", report_s)
        if not isinstance(warmup, bool):
            raise InvalidOptionError(f"warmup must be True or False; got {warmup!r}.")
        self.warmup = warmup
        if isinstance(restart_overhead_s, bool) or not isinstance(restart_overhead_s, numbers.Real) or not (
                0 <= float(restart_overhead_s) < math.inf):
            raise InvalidOptionError(f"restart_overhead_s must be a finite number of wall seconds >= 0; "
                                     f"got {restart_overhead_s!r}.")
        self.restart_overhead_s = float(restart_overhead_s)
        self._session_args = dict(policy=policy, quotas=quotas, seed=seed, budget_s=budget_s, bandwidth=bandwidth,
                                  node_bandwidth=node_bandwidth, options=options)
        # the session's own checks of these arguments, on a one-GPU cluster, now rather than at run()
        try:
            Session({"_probe": [1]}, **{**self._session_args, "quotas": None})
        except SessionError as exc:
            raise InvalidOptionError(str(exc)) from None
        self._specs = {}
        self._ran = False
        #: Name of the run's coordinator actor (set by :meth:`run`; the actor is gone when it returns).
        self.coordinator_name = None

    # ---------------------------------------------------------------- jobs
    def submit(self, job_id, fn, *, throughput, batch, iterations, grad_bytes=0.0, min_workers=1, max_workers=None,
               types=None, tenant=None, weight=1.0, restart_time=0.0, arrival=0.0):
        """Add a job to run: ``fn(ctx)`` in each of its workers from model time ``arrival``.

        Parameters
        ----------
        job_id : str or int
        fn : callable
            ``fn(ctx)`` with a :class:`~hetplace.ray.WorkerContext`; it runs
            from ``ctx.start_iteration``, calls ``ctx.report(iterations_done)``
            and returns when done or when ``ctx.should_stop()``.
            :func:`~hetplace.ray.emulated_job` emulates the cost model.
        throughput, batch, grad_bytes, min_workers, max_workers, types, tenant, weight, restart_time
            As :meth:`hetplace.Session.submit` (``restart_time`` in model seconds).
        iterations : int
            Iterations of the whole job (a whole number >= 1).
        arrival : float
            Model seconds after the run starts when the job is submitted.

        Raises
        ------
        SessionError
            A bad job field (named with the job, the value and the fix).
        """
        if self._ran:
            raise InvalidOptionError("submit after run(): a RayScheduler runs once; make a new one.")
        if isinstance(job_id, bool) or not isinstance(job_id, (str, numbers.Integral)):
            raise SessionError(f"job_id must be a str or an int; got {job_id!r} ({type(job_id).__name__}).")
        if job_id in self._specs:
            raise SessionError(f"job {job_id!r} is already submitted; give a new id.")
        if not callable(fn):
            raise SessionError(f"job {job_id!r}: fn must be a callable fn(ctx) (e.g. hetplace.ray.emulated_job); "
                               f"got {fn!r}.")
        if isinstance(iterations, bool) or not isinstance(iterations, numbers.Real) or not float(iterations) >= 1 \
                or not float(iterations).is_integer() or float(iterations) > 2**53:
            raise SessionError(f"job {job_id!r}: iterations must be a whole number >= 1; got {iterations!r}.")
        if isinstance(arrival, bool) or not isinstance(arrival, numbers.Real) or not 0 <= float(arrival) < math.inf:
            raise SessionError(f"job {job_id!r}: arrival must be a finite number of model seconds >= 0; "
                               f"got {arrival!r}.")
        kwargs = dict(throughput=throughput, batch=batch, iterations=int(iterations), grad_bytes=grad_bytes,
                      min_workers=min_workers, max_workers=max_workers, types=types, tenant=tenant, weight=weight,
                      restart_time=restart_time)
        # the session's checks now (on a cluster of the job's own types), so a bad job fails here
        if isinstance(throughput, dict) and throughput and all(isinstance(t, str) and t for t in throughput):
            probe = Session({t: [1] for t in throughput}, policy=self.policy)
            probe.submit(job_id, **{**kwargs, "tenant": None, "types": None if types is None else [
                t for t in types if t in throughput] or types})
        spec = _Spec()
        spec.job_id, spec.fn, spec.kwargs = job_id, fn, kwargs
        spec.arrival, spec.iterations, spec.seq = float(arrival), int(iterations), len(self._specs)
        self._specs[job_id] = spec

    # ---------------------------------------------------------------- the run
    def run(self, timeout_s=None):
        """Run every submitted job to its end; returns a :class:`~hetplace.ray.RunResult`.

        Parameters
        ----------
        timeout_s : float, optional
            Wall seconds after which the run stops (status ``"timeout"``,
            unfinished jobs ``"cancelled"``).

        Notes
        -----
        Needs a connected Ray (``ray.init(address=...)``).  Whatever ends the
        run -- the last job, the timeout, an exception or Ctrl-C in the driver
        -- every placement group, task and actor it made is removed before it
        returns or raises.
        """
        if self._ran:
            raise InvalidOptionError("run() was called already: a RayScheduler runs once; make a new one.")
        if timeout_s is not None:
            timeout_s = _positive("timeout_s", timeout_s)
        if not ray.is_initialized():
            raise InvalidOptionError("RayScheduler.run needs a connected Ray: call ray.init(address=...) first "
                                     "(address='auto' for a running cluster).")
        self._ran = True
        self._t0 = None
        self._trigger = None
        self._log_lines = []
        self._pgs = {}
        self._held = {}
        self._freeing = {}
        self._gone = set()
        self._queue = []
        self._watch = {}
        self._coord = None
        try:
            return self._run(timeout_s)
        finally:
            self._cleanup()

    # ---------------------------------------------------------------- setup
    def _setup(self):
        from ray import cloudpickle

        # the worker side travels by value: a worker needs Ray, not this package, for emulated jobs
        cloudpickle.register_pickle_by_value(_worker)
        nodes = ray.nodes()
        for nid in untyped_gpu_nodes(nodes, self.type_label):
            self._log(f"node {nid[:8]} has GPUs but no GPU type (label {self.type_label!r} or one "
                      "accelerator_type resource): left out")
        self._view = ClusterView(gpu_nodes(nodes, self.type_label))
        for n in nodes:
            res = n.get("Resources") or {}
            if n.get("Alive") and n["NodeID"] in self._view.index and res.get("CPU", 0.0) < res.get("GPU", 0.0):
                self._log(f"node {n['NodeID'][:8]} has fewer CPUs ({res.get('CPU', 0.0):g}) than GPUs "
                          f"({res['GPU']:g}): its pool keeps fewer idle worker processes than it runs, so starts "
                          "may pay a process start-up (give it num_cpus >= 2 x num_gpus; docs/ray.md §5)")
        self._session = self._new_session(self._view)
        # every job's fields against this cluster, before anything starts
        scratch = self._new_session(self._view)
        for spec in self._specs.values():
            scratch.submit(spec.job_id, **spec.kwargs)
        self._jobs = {jid: _Job(spec) for jid, spec in self._specs.items()}
        here = ray.get_runtime_context().get_node_id()
        coord_cls = ray.remote(num_cpus=0, max_restarts=0)(_worker.Coordinator)
        self._token = uuid.uuid4().hex[:12]  # names this run's groups and actor apart from other runs'
        self.coordinator_name = f"hetplace-coordinator-{self._token}"
        self._coord = coord_cls.options(
            name=self.coordinator_name, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True)).remote()
        ray.get(self._coord.ping.remote())
        self._task = ray.remote(num_cpus=0, num_gpus=1, max_retries=0, max_calls=0)(_worker.run_worker)
        self._total_gpus = ray.cluster_resources().get("GPU", 0.0)
        for job in self._jobs.values():
            job.fn_ref = ray.put(job.spec.fn)
        if self.warmup:
            self._warm()
        self._log(f"cluster: {len(self._view.node_ids)} GPU nodes, {self._view.n_workers} GPUs, types "
                  f"{self._view.session_cluster()}")

    def _new_session(self, view):
        return Session(view.session_cluster(), **self._session_args)

    def _warm(self):
        """One idle Ray worker process per GPU of every node (started now, reused by the jobs' tasks).

        In a placement group per node, as the jobs' tasks will run: Ray reuses
        an idle worker process for a task of the same job, and these stay idle
        in the node's pool (up to the node's CPU count) when the group goes.
        """
        pgs, refs = [], []
        try:
            for v, (nid, gpus) in enumerate(zip(self._view.node_ids, self._view.node_gpus)):
                pg = placement_group([{"GPU": 1.0}] * gpus, bundle_label_selector=[{NODE_ID_LABEL: nid}] * gpus,
                                     name=f"hetplace-warmup:{self._token}:{v}")
                pgs.append(pg)
            ready_refs = [pg.ready() for pg in pgs]
            ready, _ = ray.wait(ready_refs, num_returns=len(pgs), timeout=self.WARMUP_S)
            fn = ray.put(_worker.warm)
            for v, pg in enumerate(pgs):
                if ready_refs[v] not in ready:  # its node is busy or gone: it starts cold
                    continue
                for b in range(pg.bundle_count):
                    # the workers' own task body, so each process has it (and the coordinator's handle) loaded
                    spec = {"job_id": "_warmup", "epoch": v * 1000 + b, "rank": 0, "world_size": 1,
                            "start_iteration": 0, "iterations": 0, "step_time": 0.3, "report_s": self.report_s}
                    strategy = PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=b)
                    refs.append(self._task.options(scheduling_strategy=strategy).remote(fn, spec, self._coord))
            ray.wait(refs, num_returns=len(refs), timeout=self.WARMUP_S)  # a node lost meanwhile: its tasks fail
            ray.get([self._coord.forget.remote("_warmup", v * 1000 + b)
                     for v, pg in enumerate(pgs) for b in range(pg.bundle_count)])
        finally:
            for pg in pgs:
                remove_placement_group(pg)
        self._wait_free(10.0)

    def _wait_free(self, limit):
        """Wait (up to ``limit`` wall seconds) until Ray's view shows every GPU free of this run's groups."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if self._total_gpus - ray.available_resources().get("GPU", 0.0) <= sum(self._held.values()) + 1e-6:
                return True
            time.sleep(0.01)
        return False

    # ---------------------------------------------------------------- the loop
    def _run(self, timeout_s):
        self._setup()
        ts = self.time_scale
        self._decisions = []
        self._t0 = time.monotonic()
        arrivals = sorted(self._jobs.values(), key=lambda j: (j.spec.arrival, j.spec.seq))
        a = 0
        next_round = self.round_s
        status = "ok"
        while True:
            now = self._clock()
            trigger = None
            while a < len(arrivals) and arrivals[a].spec.arrival <= now:
                job = arrivals[a]
                self._session.submit(job.spec.job_id, **self._session_kwargs(job.spec))
                job.in_session = True
                job.result.status = "pending"
                self._log(f"job {job.spec.job_id!r} arrives")
                a += 1
                trigger = trigger or "arrival"
            self._collect(0.0)
            trigger, self._trigger = self._trigger or trigger, None
            if now >= next_round:
                trigger = self._check_nodes() or trigger or "round"
                next_round = (math.floor(now / self.round_s) + 1) * self.round_s
            if trigger:
                d = self._decide(trigger)
                if a == len(arrivals) and not d.assignment and not self._busy():
                    self._end_waiting(d)
            self._create_queued()
            if all(j.result.status not in ("pending", "running") for j in self._jobs.values()) and a == len(arrivals):
                break
            if timeout_s is not None and time.monotonic() - self._t0 > timeout_s:
                status = "timeout"
                self._log(f"timeout after {timeout_s} s: the run stops")
                for j in self._jobs.values():
                    if j.result.status in ("pending", "running"):
                        self._cancel_job(j)
                break
            horizon = next_round
            if a < len(arrivals):
                horizon = min(horizon, arrivals[a].spec.arrival)
            wait = min(max(0.0, (horizon - self._clock()) / ts), 0.01 if self._queue else 0.5)
            self._collect(wait)
        wall = time.monotonic() - self._t0
        return RunResult(status, {jid: j.result for jid, j in self._jobs.items()}, self._decisions, wall, ts,
                         self._log_lines)

    def _session_kwargs(self, spec):
        """The job as the session sees it: its restart cost plus the runtime's own (``restart_overhead_s``)."""
        kw = dict(spec.kwargs)
        kw["restart_time"] = float(kw["restart_time"]) + self.restart_overhead_s * self.time_scale
        return kw

    def _clock(self):
        """Model seconds since the run's clock started."""
        return (time.monotonic() - self._t0) * self.time_scale

    def _busy(self):
        """True while any job holds a run (starting, running or stopping)."""
        return any(j.run is not None or j.stopping is not None for j in self._jobs.values())

    def _end_waiting(self, d):
        """Nothing runs, nothing is left to arrive and the decision places nobody: the waiting jobs end."""
        for jid, reason in d.pending.items():
            job = self._jobs[jid]
            job.result.reason = reason
            job.result.status = "infeasible" if reason.code == "infeasible" else "unschedulable"
            self._session.finish(jid)
            job.in_session = False
            self._log(f"job {jid!r} ends {job.result.status}: {reason.message}")

    # ---------------------------------------------------------------- deciding
    def _decide(self, trigger):
        cpu0, wall0 = time.process_time(), time.monotonic()
        self._update_progress()
        d = self._session.decide()
        decide_s = time.monotonic() - wall0
        t = self._clock()  # the decision happens when it is made: a job waits for it (docs/ray.md §4)
        rec = DecisionRecord(len(self._decisions), t, trigger, list(d.changes), dict(d.pending), decide_s)
        rec._wall = wall0
        self._decisions.append(rec)
        if d.placement is not None and d.placement.problem.replacing:
            for i, jid in enumerate(d.jobs):
                if d.placement.restarted[i]:
                    self._jobs[jid].result.restarts += 1
        for c in d.changes:
            job = self._jobs[c.job_id]
            if c.action in ("stop", "resize", "migrate"):
                self._end_run(job, t, "decision")
            if c.action in ("start", "resize", "migrate"):
                self._begin_run(job, c.after, d, rec, t)
            self._log(f"decision {rec.index}: {c.action} {c.job_id!r} {self._where(c.before)} -> "
                      f"{self._where(c.after)}")
        for jid, reason in d.pending.items():
            job = self._jobs[jid]
            job.result.reason = reason
            if job.reason_code != reason.code:
                self._log(f"job {jid!r} waits ({reason.code}): {reason.message}")
            job.reason_code = reason.code
        for jid in d.assignment:
            self._jobs[jid].reason_code = None
        rec.cpu_s = time.process_time() - cpu0
        return d

    def _where(self, workers):
        if not workers:
            return "-"
        counts = {}
        for k in workers:
            t = self._view.node_type[self._view.worker_node[k]]
            counts[t] = counts.get(t, 0) + 1
        return "+".join(f"{n}x{t}" for t, n in counts.items())

    def _update_progress(self):
        """The session learns every job's remaining iterations from the workers' last reports."""
        live = [(j, r) for j in self._jobs.values() for r in (j.run, j.stopping)
                if r is not None and r.phase in ("running", "stopping")]
        reports = ray.get(self._coord.progress.remote()) if live else {}
        for job, run in live:
            job.done = max(job.done, self._reported(job, run, reports))
        for job in self._jobs.values():
            if job.in_session:
                left = job.spec.iterations - job.done
                self._session.progress(job.spec.job_id, max(float(left), 1e-9))

    @staticmethod
    def _reported(job, run, reports):
        ranks = reports.get((job.spec.job_id, run.epoch), {})
        return min(ranks.get(r, run.start_iteration) for r in range(len(run.workers)))

    # ---------------------------------------------------------------- runs
    def _begin_run(self, job, workers, d, rec, t):
        """A placement group for ``workers``; its tasks launch when it is ready and the old run stopped."""
        run = _Run()
        run.epoch = job.epoch
        job.epoch += 1
        run.workers = tuple(sorted(workers))
        slots = [self._view.worker_slot(k) for k in run.workers]
        run.nodes = tuple(nid for nid, _ in slots)
        run.types = tuple(self._view.node_type[self._view.index[nid]] for nid in run.nodes)
        i = d.jobs.index(job.spec.job_id)
        pl = d.placement
        run.step_time = float(pl.compute_per_iteration[i] + pl.comm_per_iteration[i])
        shares = pl.shares
        run.shares = tuple(int(shares[k]) for k in run.workers)
        counts = {}
        for typ in run.types:
            counts[typ] = counts.get(typ, 0) + 1
        run.segment = Segment(decided=t, workers=run.workers, types=counts, nodes=run.nodes, step_time=run.step_time,
                              restore=False, restart_time=float(job.spec.kwargs["restart_time"]),
                              start_iteration=job.done, decision=rec.index)
        job.result.segments.append(run.segment)
        run.record = rec
        rec.placement_groups += 1
        rec._waiting += 1
        job.run = run
        job.result.status = "running"
        self._enqueue(job, run)

    def _enqueue(self, job, run):
        """The run's placement group is created once the GPUs it needs are free (:meth:`_create_queued`)."""
        run.queued_at = time.monotonic()
        self._queue.append((job, run))

    def _create_queued(self):
        """Create the queued runs' placement groups whose GPUs are free, in decision order.

        Free by the driver's own count (the bundles of its groups on each node)
        and in Ray's resource view: a group asked for while a removed group's
        GPUs still show as used would wait for Ray's retry (about 0.5-1 s
        here), one asked for after they show as free is ready in milliseconds.
        Ray's view is only waited for ``pg_sync_s`` wall seconds (other users
        of the cluster may hold GPUs); after that the group is created anyway.
        """
        if not self._queue:
            return
        synced = None
        keep = []
        for job, run in self._queue:
            if job.run is not run:
                continue
            need = {}
            for nid in run.nodes:
                need[nid] = need.get(nid, 0) + 1
            gpus = {nid: self._view.node_gpus[self._view.index[nid]] for nid in need}
            if any(self._held.get(nid, 0) + n > gpus[nid] for nid, n in need.items()):
                keep.append((job, run))  # GPUs still held by a run that is stopping
                continue
            # GPUs of groups removed a moment ago may still show as used in Ray's view
            if any(self._held.get(nid, 0) + self._freeing.get(nid, 0) + n > gpus[nid] for nid, n in need.items()):
                if synced is None:
                    avail = ray.available_resources().get("GPU", 0.0)
                    synced = self._total_gpus - avail <= sum(self._held.values()) + 1e-6
                    if synced:
                        self._freeing = {}
                if not synced and time.monotonic() - run.queued_at < self.PG_SYNC_S:
                    keep.append((job, run))
                    continue
            self._create_pg(job, run)
        self._queue = keep

    def _create_pg(self, job, run):
        run.pg = placement_group([{"GPU": 1.0} for _ in run.workers], strategy="PACK",
                                 bundle_label_selector=[{NODE_ID_LABEL: nid} for nid in run.nodes],
                                 name=f"hetplace:{self._token}:{job.spec.job_id}:{run.epoch}")
        self._pgs[run.pg] = run.nodes
        for nid in run.nodes:
            self._held[nid] = self._held.get(nid, 0) + 1
        run.phase = "pg"
        run.ready_ref = run.pg.ready()
        self._watch[run.ready_ref] = ("pg", job, run, None)

    def _pg_ready(self, job, run):
        run.pg_ready = True
        rec = run.record
        if rec is not None:
            rec._waiting -= 1
            if rec._waiting == 0 and not rec.superseded:
                rec.ready_s = time.monotonic() - rec._wall
        self._try_launch(job)

    def _try_launch(self, job):
        run = job.run
        if run is None or run.phase != "pg" or not run.pg_ready or job.stopping is not None:
            return
        start = job.done
        run.start_iteration = start
        seg = run.segment
        seg.start_iteration = start
        seg.restore = job.launched
        seg.launched = self._clock()
        run.launch_time = time.time()
        if job.result.start is None:
            job.result.start = seg.launched
        job.launched = True
        kw = job.spec.kwargs
        base = {"job_id": job.spec.job_id, "epoch": run.epoch, "world_size": len(run.workers),
                "local_batches": run.shares, "batch": int(kw["batch"]), "start_iteration": start,
                "iterations": job.spec.iterations, "step_time": run.step_time,
                "restart_time": float(kw["restart_time"]), "restore": seg.restore, "time_scale": self.time_scale,
                "report_s": self.report_s}
        for r in range(len(run.workers)):
            spec = dict(base, rank=r, gpu_type=run.types[r], node_id=run.nodes[r], local_batch=run.shares[r])
            strategy = PlacementGroupSchedulingStrategy(run.pg, placement_group_bundle_index=r)
            ref = self._task.options(scheduling_strategy=strategy).remote(job.fn_ref, spec, self._coord)
            run.refs.append(ref)
            self._watch[ref] = ("task", job, run, r)
        run.phase = "running"

    def _end_run(self, job, t, cause):
        """A decision takes the job's workers away: stop its run (at an iteration boundary) or drop its group."""
        run = job.run
        if run is None:
            return
        job.run = None
        job.result.status = "pending"
        run.segment.ended = t
        run.segment.end_cause = cause
        if run.phase in ("queued", "pg"):  # never launched
            self._drop_pg(run)
            return
        self._coord.stop.remote(job.spec.job_id, run.epoch)
        run.phase = "stopping"
        job.stopping = run

    def _drop_pg(self, run):
        """Remove a run's placement group (and forget its readiness)."""
        if run.ready_ref is not None:
            self._watch.pop(run.ready_ref, None)
        if not run.pg_ready and run.record is not None:
            run.record.superseded = True
            run.record.ready_s = None
        if run.pg is not None:
            try:
                remove_placement_group(run.pg)
            except Exception:  # already gone with its node: nothing to free
                pass
            for nid in self._pgs.pop(run.pg, ()):
                self._held[nid] -= 1
                self._freeing[nid] = self._freeing.get(nid, 0) + 1
            run.pg = None

    def _kill_run(self, job, run):
        """Stop a run now (failures, timeouts): its tasks are asked to stop and its group removed.

        Removing the group ends any task still in it (Ray kills what runs on a removed
        group's resources).  No ``ray.cancel``: cancelling a task that is just finishing
        crashed Ray's core worker in the driver here (Ray 2.60, "Tried to complete task
        that was not pending").
        """
        if run.refs and self._coord is not None:
            self._coord.stop.remote(job.spec.job_id, run.epoch)
        for ref in run.refs:
            self._watch.pop(ref, None)
        self._drop_pg(run)

    # ---------------------------------------------------------------- events
    def _collect(self, timeout):
        """Handle every ready task or placement group (waiting up to ``timeout`` wall seconds for the first).

        The decision trigger the events call for is left in ``self._trigger``.
        """
        if not self._watch:
            if timeout > 0:
                time.sleep(timeout)
            return
        refs = list(self._watch)
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            return
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            item = self._watch.pop(ref, None)
            if item is None:
                continue
            kind, job, run, rank = item
            if kind == "pg":
                self._pg_ready(job, run)
            else:
                self._trigger = self._task_done(job, run, rank, ref) or self._trigger

    def _task_done(self, job, run, rank, ref):
        try:
            out = ray.get(ref)
        except (ray_exceptions.RayTaskError, ray_exceptions.RaySystemError) as exc:
            # its fn raised, or its fn or arguments cannot be loaded in the worker: the job's own fault
            if isinstance(exc, ray_exceptions.TaskCancelledError):
                return None
            return self._job_failed(job, run, rank, exc)
        except ray_exceptions.RayError as exc:
            if isinstance(exc, ray_exceptions.TaskCancelledError):
                return None
            return self._run_lost(job, run, rank, exc)
        run.returned[rank] = out
        if len(run.returned) < len(run.workers):
            return None
        done = min(int(o["done"]) for o in run.returned.values())
        run.segment.startup = (max(o["began"] for o in run.returned.values()) - run.launch_time) * self.time_scale
        job.done = max(job.done, done)
        run.segment.iterations = job.done - run.start_iteration
        self._drop_pg(run)
        self._coord.forget.remote(job.spec.job_id, run.epoch)
        now = self._clock()
        if run.phase == "stopping":  # a decision moved it: its next run may start now
            job.stopping = None
            if job.done < job.spec.iterations:
                self._try_launch(job)
                return None
            if job.run is not None:  # it got to the end while stopping: nothing to restart
                job.run.segment.ended = now
                self._drop_pg(job.run)
                job.run = None
        else:  # it returned without being asked to: the job is done
            run.segment.ended = now
            run.segment.end_cause = "finish"
            job.run = None
        job.result.finish = now
        job.result.status = "finished"
        self._session.finish(job.spec.job_id)
        job.in_session = False
        self._log(f"job {job.spec.job_id!r} finished: jct {job.result.jct:.1f} s, model "
                  f"{job.result.predicted_jct:.1f} s")
        return "finish"

    def _job_failed(self, job, run, rank, exc):
        now = self._clock()
        reports = ray.get(self._coord.progress.remote())
        job.done = max(job.done, self._reported(job, run, reports))
        for r in (job.run, job.stopping):
            if r is not None:
                self._kill_run(job, r)
                if r.segment.ended is None:
                    r.segment.ended = now
                    r.segment.end_cause = "error"
                r.segment.iterations = max(0, job.done - (r.start_iteration or 0)) if r.phase not in (
                    "queued", "pg") else 0
        if run is not job.run and run is not job.stopping:
            self._kill_run(job, run)
        job.run = job.stopping = None
        job.result.status = "failed"
        job.result.finish = now
        job.result.error = "Traceback of the worker (rank %d):\n%s" % (rank, _ANSI.sub("", str(exc)))
        if job.in_session:
            self._session.finish(job.spec.job_id)
            job.in_session = False
        first = str(exc).strip().splitlines()
        self._log(f"job {job.spec.job_id!r} failed in rank {rank}: {first[-1] if first else type(exc).__name__}")
        return "failure"

    def _run_lost(self, job, run, rank, exc):
        """A worker died (its process or its node): the run ends at its last report."""
        if run is not job.run and run is not job.stopping:
            return None  # already handled (its node was found lost)
        # Ray says the node died: it is down now, even before ray.nodes() shows it
        dead = {run.nodes[rank]} if isinstance(exc, ray_exceptions.NodeDiedError) else set()
        trigger = self._check_nodes(dead)
        end = time.monotonic() + self.NODE_DEATH_S
        while (run is job.run or run is job.stopping) and not dead and time.monotonic() < end:
            time.sleep(0.05)  # a crashed worker, or a node ray.nodes() does not show dead yet
            trigger = self._check_nodes() or trigger
        if run is not job.run and run is not job.stopping:
            return trigger or "nodes"
        # its node is still up: a worker crashed; run the job again on the same workers
        current = run is job.run
        self._lose(job, run, "worker_lost")
        job.result.recoveries += 1
        if job.result.recoveries > MAX_RECOVERIES:
            job.result.status = "failed"
            job.result.error = f"its workers crashed {job.result.recoveries} times; last: {exc}"
            job.result.finish = self._clock()
            if job.in_session:
                self._session.finish(job.spec.job_id)
                job.in_session = False
            return "failure"
        self._log(f"job {job.spec.job_id!r}: a worker was lost ({type(exc).__name__}); it restarts")
        if current and job.in_session and job.spec.job_id in self._session.running:
            # the session still runs it there: a fresh group on the same workers (a restore, no decision)
            self._begin_same(job, run)
        return "failure"

    def _begin_same(self, job, old):
        run = _Run()
        run.epoch = job.epoch
        job.epoch += 1
        run.workers, run.nodes, run.types = old.workers, old.nodes, old.types
        run.step_time, run.shares = old.step_time, old.shares
        t = self._clock()
        rec = self._decisions[-1]
        run.segment = Segment(decided=t, workers=run.workers, types=dict(old.segment.types), nodes=run.nodes,
                              step_time=run.step_time, restore=False, restart_time=old.segment.restart_time,
                              start_iteration=job.done, decision=rec.index)
        job.result.segments.append(run.segment)
        run.record = None
        job.run = run
        self._enqueue(job, run)

    def _lose(self, job, run, cause):
        """End ``run`` of ``job`` now (its node or a worker is gone), at its workers' last report."""
        now = self._clock()
        if run.phase not in ("queued", "pg"):
            reports = ray.get(self._coord.progress.remote())
            job.done = max(job.done, self._reported(job, run, reports))
            run.segment.iterations = job.done - run.start_iteration
        if run.segment.ended is None:
            run.segment.ended = now
            run.segment.end_cause = cause
        self._kill_run(job, run)
        if run is job.run:
            job.run = None
        if run is job.stopping:
            job.stopping = None
            self._try_launch(job)

    def _check_nodes(self, dead=()):
        """Nodes that left (or in ``dead``) are the session's ``node_down``; nodes that joined grow its cluster."""
        nodes = ray.nodes()
        # a Ray node id never comes back: once dead (or said dead by a task's error), it stays down
        self._gone.update(dead)
        self._gone.update(n["NodeID"] for n in nodes if not n.get("Alive", False))
        alive = {n["NodeID"] for n in nodes if n.get("Alive", False)} - self._gone
        self._total_gpus = sum((n.get("Resources") or {}).get("GPU", 0.0) for n in nodes if n["NodeID"] in alive)
        down = set(self._session.down_nodes)
        trigger = None
        for v, nid in enumerate(self._view.node_ids):
            if v not in down and nid not in alive:
                lost = self._session.node_down(v)
                self._log(f"node {nid[:8]} ({self._view.node_type[v]}) is gone; jobs that ran there: {lost}")
                for jid in lost:
                    job = self._jobs[jid]
                    if job.run is not None:
                        self._lose(job, job.run, "node_lost")
                        job.result.recoveries += 1
                for job in self._jobs.values():  # a stopping run there ends now too
                    if job.stopping is not None and nid in job.stopping.nodes:
                        self._lose(job, job.stopping, "node_lost")
                trigger = "nodes"
        added = [n for n in gpu_nodes(nodes, self.type_label)
                 if n[0] not in self._view.index and n[0] not in self._gone]
        if added:
            self._grow(added)
            trigger = "nodes"
        return trigger

    def _grow(self, added):
        """Nodes joined: the session continues on the larger cluster (its state carried over through JSON)."""
        old, new = self._view, self._view.with_nodes(added)
        remap = {k: new.worker_of(*old.worker_slot(k)) for k in range(old.n_workers)}
        state = json.loads(self._session.to_json())
        state["cluster"] = json.loads(self._new_session(new).to_json())["cluster"]
        state["running"] = [[jid, [remap[k] for k in ws]] for jid, ws in state["running"]]
        state["down"] = sorted(new.index[old.node_ids[v]] for v in state["down"])
        self._session = Session.from_json(json.dumps(state))
        for job in self._jobs.values():
            for run in (job.run, job.stopping):
                if run is not None:
                    run.workers = tuple(remap[k] for k in run.workers)
        self._view = new
        for nid, typ, gpus in added:
            self._log(f"node {nid[:8]} joined: {gpus} x {typ}")

    def _cancel_job(self, job):
        now = self._clock()
        for run in (job.run, job.stopping):
            if run is not None:
                if run.segment.ended is None:
                    run.segment.ended = now
                    run.segment.end_cause = "cancelled"
                self._kill_run(job, run)
        job.run = job.stopping = None
        job.result.status = "cancelled"

    # ---------------------------------------------------------------- logging and cleanup
    def _log(self, message):
        t = self._clock() if getattr(self, "_t0", None) is not None else 0.0
        line = f"[t={t:.1f}] {message}"
        self._log_lines.append(line)
        logger.info(line)

    def _cleanup(self):
        """Remove every placement group, task and actor this run made (also on an exception or Ctrl-C).

        Running tasks are first asked to stop (for up to ``STOP_GRACE_S``), so their
        worker processes stay in Ray's pool; the ones still running then end with their groups.
        """
        tasks = [ref for ref, item in self._watch.items() if item[0] == "task"]
        if tasks and self._coord is not None:
            try:
                for key in {(item[1].spec.job_id, item[2].epoch) for item in self._watch.values()
                            if item[0] == "task"}:
                    self._coord.stop.remote(*key)
                ray.wait(tasks, num_returns=len(tasks), timeout=self.STOP_GRACE_S)
            except BaseException:  # a second Ctrl-C, a lost connection: remove the groups at once
                pass
        self._watch.clear()  # what still runs ends with its group
        self._queue = []
        for pg in list(self._pgs):
            try:
                remove_placement_group(pg)
            except Exception:
                pass
        self._pgs.clear()
        if self._coord is not None:
            try:
                ray.kill(self._coord)
            except Exception:
                pass
            self._coord = None

