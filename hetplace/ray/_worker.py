"""The worker side of :mod:`hetplace.ray`: the context a job's ``fn`` gets, and :func:`emulated_job`.

Each worker of a running job is one Ray task in one bundle of the job's
placement group; it runs ``fn(ctx)`` with a :class:`WorkerContext`.  The
context talks to the run's coordinator actor (progress reports, the stop
flag, a rendezvous address), at most once per ``report_s`` wall seconds, so a
worker costs the driver and the actor a few calls a second whatever its
iteration rate.
"""

import math
import socket
import time

__all__ = ["WorkerContext", "emulated_job"]

#: Wall seconds between two looks at the stop reply (should_stop is called once per iteration).
_STOP_POLL_S = 0.01


class WorkerContext:
    """What ``fn(ctx)`` knows about its job and how it talks to the scheduler.

    Attributes
    ----------
    job_id : str or int
    rank, world_size : int
        This worker's rank among the job's workers, and their number.
    gpu_type : str
        The GPU type of this worker's node.
    node_id : str
        The Ray node id it runs on.
    local_batch : int
        Samples per iteration of this worker: the job's batch split in
        proportion to its workers' throughputs, as the model splits it
        (largest remainder; ``local_batches`` holds every rank's).
    local_batches : tuple of int
        ``local_batch`` of every rank, in rank order (they sum to ``batch``).
    batch : int
        The job's global batch.
    start_iteration : int
        Iterations done before this run (the last reported iteration of the
        previous run); the run goes on from there.
    iterations : int
        The job's total iterations.
    step_time : float
        Model seconds per iteration the cost model gives on this run's workers
        (compute at the split batch plus the ring all-reduce at the bandwidth
        of the job's domain).
    restart_time : float
        Model seconds a restore takes (the job's ``restart_time``).
    restore : bool
        True when the job ran before (this run restores a checkpoint).
    time_scale : float
        Model seconds per wall second.
    epoch : int
        Which run of the job this is (0, 1, ...).
    """

    def __init__(self, spec, coordinator):
        for k, v in spec.items():
            setattr(self, k, v)
        self._coord = coordinator
        self._done = int(spec["start_iteration"])
        self._sent_done = None
        self._stop = False
        self._pending = None
        self._last_sent = -math.inf
        self._last_poll = -math.inf
        # resolves when the scheduler asks this run to stop: should_stop() is a local check of it
        self._stop_ref = coordinator.wait_stop.remote(self.job_id, self.epoch)

    # ---------------------------------------------------------------- reports
    def report(self, iterations_done):
        """Report the iterations the job has done in all (not this run's only).

        Cheap: the report travels at most once per ``report_s`` wall seconds
        (and always on the last iteration); the scheduler restarts a moved job
        from the last iteration it received.
        """
        it = int(iterations_done)
        if it < self._done:
            raise ValueError(f"ctx.report: iterations_done must not go back; got {iterations_done!r} after "
                             f"{self._done}.")
        self._done = it
        if it >= self.iterations or time.monotonic() - self._last_sent >= self.report_s:
            self._send()

    def should_stop(self):
        """True when the scheduler asks this run to stop: return from ``fn`` at the next iteration boundary.

        A local check (of a reply the scheduler sends when it decides to stop
        the run), made at most once per 10 ms; the answer is at most that, plus
        one message, old.
        """
        if self._stop:
            return True
        now = time.monotonic()
        if self._stop_ref is not None and now - self._last_poll >= _STOP_POLL_S:
            self._last_poll = now
            return self.wait_stop(0.0)
        return self._stop

    def wait_stop(self, timeout):
        """Sleep up to ``timeout`` wall seconds, or until the scheduler asks this run to stop; True if it did.

        For a ``fn`` that waits (an emulated step, a data loader): it sleeps
        without polling and wakes as soon as the stop arrives.
        """
        if self._stop:
            return True
        if self._stop_ref is None:
            time.sleep(max(0.0, timeout))
            return self._stop
        import ray

        ready, _ = ray.wait([self._stop_ref], timeout=max(0.0, timeout))
        if ready:
            self._stop = bool(ray.get(ready[0]))
            if not self._stop:  # forgotten (the run ended): nothing left to wait for
                self._stop_ref = None
        return self._stop

    def _poll(self):
        import ray

        if self._pending is not None:
            ready, _ = ray.wait([self._pending], timeout=0)
            if ready:
                self._stop = bool(ray.get(ready[0])) or self._stop
                self._pending = None

    def _send(self):
        self._poll()
        if self._pending is not None and self._done == self._sent_done:
            return
        self._pending = self._coord.report.remote(self.job_id, self.epoch, self.rank, self._done)
        self._sent_done = self._done
        self._last_sent = time.monotonic()

    def _flush(self):
        """The last report, delivered before the task returns."""
        import ray

        ray.get(self._coord.report.remote(self.job_id, self.epoch, self.rank, self._done))

    # ---------------------------------------------------------------- rendezvous
    def rendezvous(self, timeout=60.0):
        """A ``tcp://127.0.0.1:<port>`` address all ranks of this run agree on (for ``init_process_group``).

        Rank 0 picks a free port on the loopback address and publishes it
        through the coordinator; the other ranks wait for it.  Every rank of a
        local cluster shares the loopback address; on a multi-machine cluster
        pass your own ``init_method`` instead.
        """
        import ray

        key = ("rendezvous", self.job_id, self.epoch)
        if self.rank == 0:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            addr = f"tcp://127.0.0.1:{port}"
            ray.get(self._coord.put.remote(key, addr))
            return addr
        addr = ray.get(self._coord.get.remote(key, timeout))
        if addr is None:
            raise TimeoutError(f"job {self.job_id!r} rank {self.rank}: rank 0 published no address in {timeout} s.")
        return addr

    def __repr__(self):
        return (f"WorkerContext(job_id={self.job_id!r}, rank={self.rank}, world_size={self.world_size}, "
                f"gpu_type={self.gpu_type!r}, local_batch={self.local_batch}, start_iteration={self.start_iteration})")


def emulated_job(ctx):
    """A built-in ``fn`` that runs a job as the cost model says it runs.

    It sleeps ``restart_time`` when it restores (``ctx.restore``: the job ran
    before) and then, per iteration, ``ctx.step_time`` (the cost model's
    iteration time on this run's workers), all divided by ``ctx.time_scale``,
    and reports its progress.  The sleeps follow one schedule from the run's
    start (no drift) and report a block of iterations at a time (about one
    ``report_s``), so a worker wakes a few times a second whatever the step
    time.  Asked to stop, it returns at once with the iterations its clock
    has completed (the iteration in progress is lost, as in a real job that
    stops at the next boundary and restarts from the last one).

    Parameters
    ----------
    ctx : WorkerContext

    Returns
    -------
    int
        The iterations done in all when it returned.
    """
    scale = float(ctx.time_scale)
    t0 = time.monotonic()
    if ctx.restore and ctx.restart_time > 0 and ctx.wait_stop(t0 + ctx.restart_time / scale - time.monotonic()):
        return ctx.start_iteration
    start = time.monotonic()
    step = ctx.step_time / scale
    total = int(ctx.iterations)
    block = max(1, int(ctx.report_s / step)) if step > 0 else total
    first = i = int(ctx.start_iteration)
    while i < total:
        nxt = min(i + block, total)
        end = start + (nxt - first) * step
        if ctx.wait_stop(end - time.monotonic()):  # stop after the last whole iteration
            i = min(nxt, first + int((time.monotonic() - start) / step)) if step > 0 else i
            ctx.report(i)
            return i
        i = nxt
        ctx.report(i)
    return i


def run_worker(fn, spec, coordinator):
    """The body of a worker task: ``fn(ctx)``, then the last report (trusted arguments)."""
    began = time.time()
    ctx = WorkerContext(spec, coordinator)
    fn(ctx)
    ctx._flush()
    return {"done": ctx._done, "stopped": ctx._stop, "began": began, "ended": time.time()}


class Coordinator:
    """The actor between a run's workers and the driver: progress reports, stop flags, a key-value rendezvous.

    An asyncio actor (one event loop, no locks); the driver creates one per
    :meth:`RayScheduler.run` on its own node and kills it when the run ends.
    """

    def __init__(self):
        self._reports = {}
        self._stop = set()
        self._kv = {}
        self._waiters = {}
        self._stop_events = {}

    async def report(self, job_id, epoch, rank, done):
        ranks = self._reports.setdefault((job_id, epoch), {})
        ranks[rank] = max(int(done), ranks.get(rank, 0))
        return (job_id, epoch) in self._stop

    async def stop(self, job_id, epoch):
        self._stop.add((job_id, epoch))
        ev = self._stop_events.get((job_id, epoch))
        if ev is not None:
            ev.set()

    async def wait_stop(self, job_id, epoch):
        """Returns True when the run is asked to stop (False when it is forgotten first)."""
        import asyncio

        key = (job_id, epoch)
        if key not in self._stop:
            ev = self._stop_events.setdefault(key, asyncio.Event())
            await ev.wait()
        return key in self._stop

    async def progress(self):
        return {k: dict(v) for k, v in self._reports.items()}

    async def forget(self, job_id, epoch):
        self._reports.pop((job_id, epoch), None)
        self._stop.discard((job_id, epoch))
        ev = self._stop_events.pop((job_id, epoch), None)
        if ev is not None:
            ev.set()
        self._kv.pop(("rendezvous", job_id, epoch), None)

    async def put(self, key, value):
        self._kv[key] = value
        ev = self._waiters.pop(key, None)
        if ev is not None:
            ev.set()

    async def get(self, key, timeout):
        import asyncio

        if key not in self._kv:
            ev = self._waiters.setdefault(key, asyncio.Event())
            try:
                await asyncio.wait_for(ev.wait(), timeout)
            except asyncio.TimeoutError:
                return None
        return self._kv.get(key)

    async def ping(self):
        return True


def warm(ctx):
    """The ``fn`` of the warm-up: holds its worker process ``ctx.step_time`` wall seconds (one process per GPU)."""
    time.sleep(ctx.step_time)
