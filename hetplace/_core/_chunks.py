"""Batches of independent rows per kernel call, with a stop flag read between calls (private).

The market drivers (``_market.run_samples*``) take a ``stop`` flag
(:func:`hetplace._interrupt.new_stop`).  It is read here, between driver
calls, not inside their ``prange`` loops: Numba's parallel compilation loads a
flag read in a ``prange`` body once per call (hoisted out of the loop), so a
flag polled there was not seen until the call ended (measured: 5 s at
K = 16,384).  A flag read inside a kernel that the loop calls is not hoisted:
the polish kernels read it before every step (``_polish.polish_kernel``), as
one polished row can run for seconds.  Rows are independent, so the results
do not depend on the batching.
"""

import time

__all__ = ["batches", "BATCH_SECONDS"]

#: A batch grows (doubling from ``first`` rows) while a call takes less than half of this:
#: a Ctrl-C waits for at most about one call, and the calls stay few (a Numba call costs
#: about 0.1 ms: one row per call made K = 1,024, S = 64 decisions 40 % slower).
BATCH_SECONDS = 0.05


def batches(n, first, stop):
    """``(a, b)`` row ranges covering ``range(n)`` in order, one per driver call.

    Parameters
    ----------
    n : int
        Rows.
    first : int
        Rows of the first batch (one per thread).
    stop : ndarray of int64, shape (1,), or None
        None: one batch of all rows.  Otherwise no further batch once
        ``stop[0]`` is nonzero.
    """
    if stop is None:
        yield 0, n
        return
    a, step = 0, max(1, first)
    while a < n:
        if stop[0] != 0:
            return
        b = min(n, a + step)
        t = time.perf_counter()
        yield a, b
        if time.perf_counter() - t < BATCH_SECONDS / 2:
            step *= 2
        a = b
