"""One BLAS thread for the small dense algebra of the online models (private).

NumPy's and SciPy's OpenBLAS start a thread per core for every call, however small.  On
a busy machine those threads wait for cores that other work holds: measured on the
project's 2-core machine with two other simulations running, SciPy's barycentric
transforms of one goodput profile's triangulation (3,914 simplices, one 3x3 LU each) took
24.5 s with OpenBLAS's default two threads and 4.7 ms with one.  The online models only
ever do such small algebra, one decision at a time, so they run it on one thread.
"""

import contextlib

__all__ = ["single_blas_thread"]


@contextlib.contextmanager
def single_blas_thread():
    """Limit the loaded BLAS libraries to one thread inside the block (threadpoolctl).

    Without threadpoolctl installed this does nothing: results are the same either way,
    only the time on a busy machine differs (``pip install threadpoolctl``).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is in the test and bench extras
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
