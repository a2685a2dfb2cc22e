"""Executors and the progress bar shared by the sweeps (:mod:`hetplace.bench`, :mod:`hetplace.online.sweep`).

A sweep ships one task per payload to any ``concurrent.futures``-style executor (``submit`` or ``map``):
a local process pool, :class:`SerialExecutor`, or Dask distributed (:func:`make_executor`), and ticks a
progress bar on stderr as tasks complete (:func:`_execute`).  The public names are re-exported by
:mod:`hetplace.bench`, their documented home.
"""

import concurrent.futures as cf
import multiprocessing
import os
import sys
import time

from .errors import HetplaceError, InvalidOptionError, MissingDependencyError

__all__ = ["ExecutorError", "SerialExecutor", "make_executor", "EXECUTORS", "MAX_EXECUTOR_WORKERS",
           "DASK_CONNECT_TIMEOUT"]

#: Executor kinds :func:`make_executor` builds.
EXECUTORS = ("process", "serial", "dask")
#: Most processes of a local pool (``workers``).
MAX_EXECUTOR_WORKERS = 1024
#: Seconds :func:`make_executor` waits for a Dask scheduler at ``address`` before giving up.
DASK_CONNECT_TIMEOUT = 5


class ExecutorError(HetplaceError, RuntimeError):
    """The executor could not run a sweep task (a worker died, an environment is missing hetplace, ...).

    Failures of a method or of the exact reference inside a task are not
    raised: they are recorded in the row's ``error`` column.  A
    :class:`HetplaceError` a task raises (a bad input found only there) is
    raised as itself, on every executor, not wrapped in this one.
    """


# ------------------------------------------------------------------ executors
class SerialExecutor(cf.Executor):
    """Runs every task at ``submit`` time in the calling process (a ``concurrent.futures.Executor``)."""

    def submit(self, fn, /, *args, **kwargs):
        fut = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, like other executors
            fut.set_exception(exc)
        return fut


class _Managed:
    """Context manager around an executor and whatever must be closed with it."""

    def __init__(self, executor, closers=(), name=""):
        self.executor, self._closers, self.name = executor, list(closers), name

    def __enter__(self):
        return self.executor

    def __exit__(self, *exc):
        for close in self._closers:
            close()
        return False


def _process_context():
    # not "fork": a forked child of a process that already ran OpenMP/Numba threads can hang
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def make_executor(kind="process", workers=None, address=None):
    """An executor for :func:`hetplace.bench.run_sweep`, as a context manager.

    Parameters
    ----------
    kind : {"process", "serial", "dask"}
        ``"process"``: local :class:`concurrent.futures.ProcessPoolExecutor`;
        ``"serial"``: :class:`SerialExecutor`; ``"dask"``: a Dask distributed
        client's executor -- connected to ``address`` (e.g.
        ``"tcp://scheduler:8786"``) or, without one, to a fresh
        ``LocalCluster(n_workers=workers, threads_per_worker=1)``.
    workers : int, optional
        Processes of the local pool or local Dask cluster (default: CPU count).
    address : str, optional
        Dask scheduler address (``kind="dask"`` only).

    Returns
    -------
    context manager yielding the executor

    Raises
    ------
    InvalidOptionError
        Unknown ``kind``, bad ``workers``, ``address`` without ``kind="dask"``,
        or no scheduler reachable at ``address`` within :data:`DASK_CONNECT_TIMEOUT` s.
    MissingDependencyError
        ``kind="dask"`` without ``dask[distributed]`` installed.

    Examples
    --------
    >>> with make_executor("dask", address="tcp://10.0.0.5:8786") as ex:  # doctest: +SKIP
    ...     result = run_sweep(spec, executor=ex)
    """
    if kind not in EXECUTORS:
        raise InvalidOptionError(f"executor={kind!r} is not valid; choose one of {', '.join(map(repr, EXECUTORS))}.")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidOptionError(f"workers must be a positive integer; got {workers!r}.")
    if workers is not None and workers > MAX_EXECUTOR_WORKERS:  # 2**63 overflowed a C int in the pool
        raise InvalidOptionError(f"workers must be at most {MAX_EXECUTOR_WORKERS}; got {workers!r}.")
    if address is not None and kind != "dask":
        raise InvalidOptionError(f"a Dask address ({address!r}) needs executor='dask'; got executor={kind!r}.")
    workers = workers or os.cpu_count() or 1
    if kind == "serial":
        return _Managed(SerialExecutor(), name="serial")
    if kind == "process":
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=_process_context())
        return _Managed(pool, [lambda: pool.shutdown(wait=True, cancel_futures=True)], name=f"process x{workers}")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise MissingDependencyError(
            "executor='dask' needs Dask distributed: pip install \"dask[distributed]\" "
            "(or pip install \"hetplace[dask]\")."
        ) from None
    if address is not None:
        try:
            client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
        except (OSError, ValueError) as exc:  # unreachable scheduler (after the timeout) / malformed address
            raise InvalidOptionError(
                f"address={address!r}: no Dask scheduler could be reached ({exc}); pass the address of a "
                "running scheduler, e.g. tcp://10.0.0.5:8786, or omit it for a local cluster."
            ) from None
        closers = [client.close]
        name = f"dask {address}"
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        closers = [client.close, cluster.close]
        name = f"dask LocalCluster x{workers}"
    return _Managed(client.get_executor(pure=False), closers, name=name)


# ------------------------------------------------------------------ progress
class _Progress:
    """Progress bar on stderr: tqdm when installed, else a counter (also used by ``hetplace simulate``)."""

    def __init__(self, total, enabled, desc="hetplace bench", unit="instance"):
        # no stderr at all (a daemon, ``2>&-``: sys.stderr is None): no bar, rather than a crash
        enabled = bool(enabled) and getattr(sys.stderr, "write", None) is not None
        self.total, self.done, self.enabled = total, 0, enabled
        self.desc, self.unit = desc, unit
        self._bar = None
        self._t0 = time.perf_counter()
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, unit=unit, desc=desc, file=sys.stderr)
            try:
                self._tty = bool(sys.stderr.isatty())
            except (AttributeError, ValueError, OSError):  # a stream without isatty, or closed
                self._tty = False
            self._step = max(1, total // 10)

    def tick(self):
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(1)
            return
        if self._tty or self.done % self._step == 0 or self.done == self.total:
            msg = f"{self.desc}: {self.done}/{self.total} {self.unit}s, {time.perf_counter() - self._t0:.0f} s"
            sys.stderr.write(("\r" + msg) if self._tty else (msg + "\n"))
            if self._tty and self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()


def _result(future):
    """The task's result; a HetplaceError raised by the task (a bad input) propagates as itself."""
    try:
        return future.result()
    except HetplaceError:
        raise
    except Exception as exc:
        raise ExecutorError(
            f"the executor failed to run a sweep task: {type(exc).__name__}: {exc}. With Dask, hetplace "
            "(same version) must be importable on the scheduler and on every worker; with a process pool, "
            "a script that calls run_sweep needs an `if __name__ == \"__main__\":` guard."
        ) from exc


def _execute(executor, payloads, progress, task):
    """Run ``task`` on every payload with ``executor``, ticking ``progress``; results in payload order."""
    if hasattr(executor, "submit"):
        futures = [executor.submit(task, p) for p in payloads]
        if all(isinstance(f, cf.Future) for f in futures):
            for f in cf.as_completed(futures):
                _result(f)
                progress.tick()
        else:  # e.g. a dask Client: its futures are not concurrent.futures ones
            for f in futures:
                _result(f)
                progress.tick()
        return [_result(f) for f in futures]
    if hasattr(executor, "map"):
        out = []
        it = iter(executor.map(task, payloads))
        while True:
            try:
                r = next(it)
            except StopIteration:
                break
            except HetplaceError:
                raise
            except Exception as exc:
                raise ExecutorError(f"the executor failed to run a sweep task: {type(exc).__name__}: {exc}.") from exc
            out.append(r)
            progress.tick()
        return out
    raise InvalidOptionError(
        f"executor must have a submit(fn, arg) or map(fn, iterable) method (a concurrent.futures.Executor, "
        f"a dask Client, ...); got {type(executor).__name__}."
    )
