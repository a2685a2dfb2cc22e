"""Fork safety of the parallel kernels: a forked child runs them serially (docs/model.md §3.12).

GNU OpenMP's thread pool does not survive ``fork()``: the child inherits the
pool's bookkeeping but not its threads, so the child's next parallel region
waits for them forever (the Cython kernels), and Numba's OpenMP threading layer
kills the child instead ("fork() called from a process already using GNU
OpenMP").  Both backends share the system ``libgomp``, so a pool started by
either breaks both in the child.

:func:`_after_fork_in_child`, registered with :func:`os.register_at_fork` when
hetplace is imported (the one process-wide hook of the package: it only sets
this module's flag in a forked child), marks the child when its parent may
have started such a pool: hetplace ran a Cython decision on more than one
thread (:func:`note_parallel`), or Numba's threading layer is GNU OpenMP and
was launched (by hetplace or by the caller's own parallel Numba code).  In a
marked process, and in every process forked from it, :func:`serial_only` is
True and ``hetplace.smp`` runs every decision on one thread: the Cython
``prange`` with ``num_threads=1`` (libgomp then runs the region on the calling
thread without touching the pool) and the serial Numba compilation of the same
single-source kernels (``hetplace._core._source``, which never enters Numba's
threading layer).  Results are identical for any thread count, so a child
decides exactly as its parent would.
"""

import os
import sys

__all__ = ["note_parallel", "serial_only"]

#: This process (or an ancestor it was forked from) ran an OpenMP region on more than one thread.
_parallel_started = False
#: This process was forked from one that may have started GNU OpenMP's thread pool.
_forked_after_pool = False


def note_parallel():
    """Record that this process is about to run an OpenMP region on more than one thread."""
    global _parallel_started
    _parallel_started = True


def _numba_openmp_launched():
    """Numba's threading layer is (GNU) OpenMP and was launched in this process or an ancestor."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return parallel is not None and bool(parallel._is_initialized) and parallel._threading_layer == "omp"


def _after_fork_in_child():
    global _forked_after_pool
    if _parallel_started or _numba_openmp_launched():
        _forked_after_pool = True


def serial_only():
    """True when parallel kernels must not run here: a child forked after an OpenMP pool started."""
    return _forked_after_pool


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
