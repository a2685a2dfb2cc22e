"""Results of :meth:`hetplace.ray.RayScheduler.run`: per job, per run segment, per decision (no Ray import).

Every time here is in model seconds since the run started (the wall clock
times ``time_scale``), except :attr:`DecisionRecord.ready_s` and
:attr:`DecisionRecord.cpu_s`, which are wall and CPU seconds of the driver:
the runtime's own overhead.
"""

import math
from dataclasses import dataclass, field

__all__ = ["Segment", "JobResult", "DecisionRecord", "RunResult", "predicted_jct", "JOB_STATUSES"]

#: Final statuses of a job (docs/ray.md §4).
JOB_STATUSES = {
    "finished": "every iteration ran",
    "failed": "its fn raised (the traceback is in error), or its workers crashed too often",
    "infeasible": "the session's reason 'infeasible': no allocation its constraints allow exists on the up nodes",
    "unschedulable": "it waited with another reason (e.g. its tenant's quota) when nothing else was left to run",
    "cancelled": "the run ended (timeout) before it finished",
}


@dataclass
class Segment:
    """One run of a job on one set of workers (a start, or a restart after a resize, move or node loss).

    Attributes
    ----------
    decided : float
        Model time of the decision that gave the job these workers.
    workers : tuple of int
        The session's worker indices.
    types : dict
        ``{GPU type: workers}``.
    nodes : tuple of str
        Ray node id of every rank.
    step_time : float
        Model seconds per iteration the cost model gives on these workers.
    restore : bool
        The job ran before: the run first pays ``restart_time``.
    restart_time : float
    start_iteration : int
    launched : float or None
        Model time its tasks were launched (its placement group ready and the
        previous run stopped); None when it never launched.
    ended : float or None
        Model time it ended: the decision that replaced it, or when its node
        was found lost, or when its tasks returned (finish).
    startup : float or None
        Model seconds from the launch to the last rank's ``fn`` starting (the
        task's scheduling and worker process; None when its tasks did not return).
    end_cause : str
        ``"finish"``, ``"decision"``, ``"node_lost"``, ``"worker_lost"``, ``"error"``, ``"cancelled"``.
    iterations : int
        Iterations it did.
    """

    decided: float
    workers: tuple
    types: dict
    nodes: tuple
    step_time: float
    restore: bool
    restart_time: float
    start_iteration: int
    launched: "float | None" = None
    ended: "float | None" = None
    end_cause: str = ""
    iterations: int = 0
    decision: int = -1
    startup: "float | None" = None

    @property
    def predicted(self):
        """Model seconds this segment takes in the model: the restore it pays plus its iterations."""
        if self.launched is None and self.iterations == 0:
            return 0.0
        restore = self.restart_time if self.restore else 0.0
        if self.iterations == 0 and self.ended is not None:  # replaced while restoring: the part it paid
            restore = min(restore, max(0.0, self.ended - self.decided))
        return restore + self.iterations * self.step_time

    def to_dict(self):
        return {"decided": self.decided, "workers": list(self.workers), "types": dict(self.types),
                "step_time": self.step_time, "restore": self.restore, "start_iteration": self.start_iteration,
                "launched": self.launched, "ended": self.ended, "end_cause": self.end_cause,
                "iterations": self.iterations, "predicted": self.predicted, "decision": self.decision,
                "startup": self.startup}


def predicted_jct(arrival, segments, finish_boundary=None):
    """What the model predicts for the allocations a job actually ran on (model seconds).

    ``predicted = waiting + sum over segments of (restart_time if it restores) + iterations * step_time``,
    where the waiting is as it happened: from ``arrival`` to the first
    segment's decision, and from the end of each segment that was not
    replaced at once (a stop, a lost node) to the next segment's decision.  A
    segment replaced by a decision (resize, move) hands over at that
    decision's time: no waiting.  The runtime's own time (decide, placement
    group latency, worker start-up, stop latency, report lag) is left out,
    so ``jct - predicted_jct`` is what the runtime adds.

    Parameters
    ----------
    arrival : float
    segments : list of Segment
        In order; each with ``decided``, ``ended`` (or None for the last) and
        ``iterations``.

    Returns
    -------
    float
    """
    if not segments:
        return math.nan
    wait = segments[0].decided - arrival
    for prev, nxt in zip(segments, segments[1:]):
        boundary = prev.ended if prev.ended is not None else nxt.decided
        wait += max(0.0, nxt.decided - boundary)
    return wait + sum(s.predicted for s in segments)


@dataclass
class JobResult:
    """What happened to one job.

    Attributes
    ----------
    job_id : str or int
    status : str
        One of :data:`JOB_STATUSES`.
    arrival, start, finish : float
        Model times: its arrival, when its first workers were launched, when
        the driver saw its last worker return (start/finish None when it never
        ran or ended otherwise).
    jct : float or None
        ``finish - arrival`` (realised).
    predicted_jct : float or None
        :func:`predicted_jct` of its segments (finished jobs).
    restarts : int
        Decisions that changed its running workers (resize or move), as the
        session counts them (``Placement.restarted``).
    recoveries : int
        Runs it lost to a node or worker failure and ran again.
    error : str or None
        The worker's traceback (``"failed"``).
    reason : hetplace.Reason or None
        The session's last reason while it waited (``"infeasible"``,
        ``"unschedulable"``: why it never ran; else the last one it had).
    iterations : int
    segments : list of Segment
    """

    job_id: object
    arrival: float
    iterations: int
    status: str = "pending"
    start: "float | None" = None
    finish: "float | None" = None
    restarts: int = 0
    recoveries: int = 0
    error: "str | None" = None
    reason: object = None
    segments: list = field(default_factory=list)

    @property
    def jct(self):
        if self.status != "finished" or self.finish is None:
            return None
        return self.finish - self.arrival

    @property
    def predicted_jct(self):
        if self.status != "finished":
            return None
        return predicted_jct(self.arrival, self.segments)

    @property
    def overhead(self):
        """``jct / predicted_jct - 1``: the runtime's relative addition (finished jobs), else None."""
        if self.jct is None or not self.predicted_jct:
            return None
        return self.jct / self.predicted_jct - 1.0

    def to_dict(self):
        r = self.reason
        return {"job": self.job_id, "status": self.status, "arrival": self.arrival, "start": self.start,
                "finish": self.finish, "jct": self.jct, "predicted_jct": self.predicted_jct,
                "restarts": self.restarts, "recoveries": self.recoveries, "error": self.error,
                "reason": None if r is None else r.to_dict(), "segments": [s.to_dict() for s in self.segments]}


@dataclass
class DecisionRecord:
    """One decision the scheduler carried out.

    Attributes
    ----------
    index : int
    time : float
        Model time of the decision.
    trigger : str
        What caused it: ``"arrival"``, ``"finish"``, ``"round"``, ``"nodes"``, ``"failure"``.
    changes : list of hetplace.Change
    pending : dict
        ``{job_id: hetplace.Reason}``.
    decide_s : float
        Wall seconds of ``Session.decide``.
    cpu_s : float
        Driver CPU seconds of the round: deciding and carrying out the
        changes (creating and removing placement groups, signalling stops).
    placement_groups : int
        Placement groups it created.
    ready_s : float or None
        Wall seconds from the call to ``decide`` to all of them ready (None
        when it created none, or when a later decision replaced one before
        it was ready: ``superseded``).
    superseded : bool
    """

    index: int
    time: float
    trigger: str
    changes: list
    pending: dict
    decide_s: float
    cpu_s: float = 0.0
    placement_groups: int = 0
    ready_s: "float | None" = None
    superseded: bool = False
    _wall: float = 0.0
    _waiting: int = 0

    def to_dict(self):
        return {"index": self.index, "time": self.time, "trigger": self.trigger,
                "changes": [c.to_dict() for c in self.changes],
                "pending": {str(j): r.to_dict() for j, r in self.pending.items()},
                "decide_s": self.decide_s, "cpu_s": self.cpu_s, "placement_groups": self.placement_groups,
                "ready_s": self.ready_s, "superseded": self.superseded}


class RunResult:
    """The result of :meth:`RayScheduler.run`.

    Attributes
    ----------
    status : str
        ``"ok"`` (every job ended: finished, failed, infeasible or
        unschedulable) or ``"timeout"``.
    success : bool
        True when every job finished.
    jobs : dict
        ``{job_id: JobResult}`` in submission order.
    decisions : list of DecisionRecord
    wall_time : float
        Wall seconds of the run (from its first arrival's clock start).
    time_scale : float
    log : list of str
        What the scheduler logged (also sent to the ``hetplace.ray`` logger).
    """

    def __init__(self, status, jobs, decisions, wall_time, time_scale, log):
        self.status = status
        self.jobs = jobs
        self.decisions = decisions
        self.wall_time = wall_time
        self.time_scale = time_scale
        self.log = log
        self.success = all(j.status == "finished" for j in jobs.values())

    def ready_times(self):
        """Wall seconds from decide to all placement groups ready, of the decisions that created any."""
        return [d.ready_s for d in self.decisions if d.ready_s is not None]

    def summary(self):
        """A text table: one line per job, then the overhead figures."""
        lines = [f"{'job':<12} {'status':<13} {'arrival':>9} {'jct':>9} {'predicted':>9} {'diff %':>7} "
                 f"{'restarts':>8}"]
        for j in self.jobs.values():
            jct, pred = j.jct, j.predicted_jct
            diff = "" if j.overhead is None else f"{100 * j.overhead:+.1f}"
            lines.append(f"{str(j.job_id):<12} {j.status:<13} {j.arrival:>9.1f} "
                         f"{'' if jct is None else format(jct, '.1f'):>9} "
                         f"{'' if pred is None else format(pred, '.1f'):>9} {diff:>7} {j.restarts:>8}")
        ready = sorted(self.ready_times())
        if ready:
            lines.append(f"placement groups ready after decide: median {_quantile(ready, 0.5):.3f} s, "
                         f"p95 {_quantile(ready, 0.95):.3f} s ({len(ready)} decisions)")
        cpu = sorted(d.cpu_s for d in self.decisions)
        if cpu:
            lines.append(f"driver CPU per decision: median {_quantile(cpu, 0.5) * 1e3:.1f} ms, "
                         f"p95 {_quantile(cpu, 0.95) * 1e3:.1f} ms ({len(cpu)} decisions)")
        return "\n".join(lines)

    def to_dict(self):
        return {"status": self.status, "success": self.success, "wall_time": self.wall_time,
                "time_scale": self.time_scale, "jobs": [j.to_dict() for j in self.jobs.values()],
                "decisions": [d.to_dict() for d in self.decisions]}

    def __repr__(self):
        by = {}
        for j in self.jobs.values():
            by[j.status] = by.get(j.status, 0) + 1
        return (f"RunResult(status={self.status!r}, jobs={by}, decisions={len(self.decisions)}, "
                f"wall_time={self.wall_time:.3g})")


def _quantile(sorted_values, q):
    """The ``q`` quantile of sorted values (linear interpolation, as numpy's default)."""
    n = len(sorted_values)
    if n == 1:
        return sorted_values[0]
    pos = q * (n - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])
