"""Ctrl-C and deadlines around long compiled calls (private; docs/model.md §4.7).

CPython runs a Python signal handler in the main thread, between bytecodes: a
kernel or a solver that runs for minutes inside one C call defers the
``KeyboardInterrupt`` of a Ctrl-C until it returns (and SCIP and CP-SAT catch
SIGINT themselves and return as if a limit had been hit).  :func:`call` runs
such a call in a worker thread while the calling thread waits on an event, so
a Ctrl-C raises ``KeyboardInterrupt`` in the calling thread at once; it then
stops the work -- the stop flag the compiled loops poll (:func:`new_stop`:
``stop[0]`` becomes :data:`INTERRUPTED`) and/or the solver's own interrupt --
waits for the worker to return, so nothing keeps burning CPU, and re-raises.
A deadline stops the work the same way (``stop[0] = DEADLINE``) but returns
the worker's result: the caller reads the flag and reports the incumbent.

Kernels release the GIL while they run (Cython ``nogil``, Numba ``nogil=True``;
``Solver.Solve`` of OR-Tools too), so the calling thread is free to take the
signal.  A call from a thread other than the main one works the same way
(deadline included), only no signal ever reaches it.
"""

import math
import threading
import time

import numpy as np

__all__ = ["GO", "INTERRUPTED", "DEADLINE", "new_stop", "call"]

#: ``stop[0]`` while the work may go on.
GO = 0
#: ``stop[0]`` after a Ctrl-C (or any exception) in the waiting thread: the result is discarded.
INTERRUPTED = 1
#: ``stop[0]`` after the deadline: the work returns what it has, the caller reports it.
DEADLINE = 2


#: Seconds between two requests to stop a worker that has not returned yet.
REPEAT_SECONDS = 0.05


def new_stop():
    """A fresh stop flag: int64 array of shape (1,), ``GO``; the kernels poll ``stop[0] != 0``."""
    return np.zeros(1, dtype=np.int64)


def call(fn, stop=None, deadline=math.inf, interrupt=None):
    """``fn()`` in a worker thread; Ctrl-C in the calling thread stops it and raises.

    Parameters
    ----------
    fn : callable
        The work, without arguments; its return value is returned and its
        exception re-raised here.
    stop : ndarray of int64, shape (1,), optional
        The flag ``fn`` polls (:func:`new_stop`); set to :data:`INTERRUPTED`
        on an exception in the waiting thread, to :data:`DEADLINE` at
        ``deadline``.
    deadline : float, default inf
        ``time.perf_counter()`` time at which the work is asked to stop
        (and then still awaited: its result is returned).
    interrupt : callable, optional
        Called (without arguments) when the work is asked to stop, after the
        flag is set: e.g. a solver's ``InterruptSolve``.

    Returns
    -------
    object
        What ``fn()`` returned.

    Raises
    ------
    KeyboardInterrupt
        (or any exception raised in the waiting thread) once the worker has
        returned; the worker's own exception otherwise.
    """
    box = {}
    done = threading.Event()

    def work():
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the calling thread
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="hetplace-work", daemon=True)
    worker.start()
    try:
        if math.isfinite(deadline):
            if not done.wait(max(0.0, deadline - time.perf_counter())):
                _stop(stop, DEADLINE, interrupt)
        done.wait()  # interruptible: a signal handler's exception ends it
    except BaseException:
        _stop(stop, INTERRUPTED, interrupt)
        _wait(done, interrupt)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def _stop(stop, reason, interrupt):
    if stop is not None:
        stop[0] = reason
    if interrupt is not None:
        interrupt()


def _wait(done, interrupt):
    """Wait for the stopped worker, repeating ``interrupt`` every :data:`REPEAT_SECONDS`.

    SCIP drops an interrupt that arrives in some of its stages (measured: a
    Ctrl-C in its first seconds took effect only 1-4 s later); asking again
    costs nothing.  A repeated Ctrl-C cannot leave the worker running unattended.
    """
    while True:
        try:
            if done.wait(REPEAT_SECONDS):
                return
            if interrupt is not None:
                interrupt()
        except KeyboardInterrupt:
            continue
