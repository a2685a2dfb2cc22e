"""The one set of Numba compile options of every ``_*_nb.py`` kernel module.

``error_model="numpy"``: a float division by zero gives ``inf``/``nan`` as in
IEEE arithmetic -- the same as the Cython kernels (``cdivision=True``) and the
plain-Python path -- instead of raising ``ZeroDivisionError`` inside a kernel
(which surfaced as ``SystemError`` from a ``prange`` driver).  Kernels treat an
infinite cost as "never choose this".
"""

#: Options of every ``@njit`` kernel (drivers add ``parallel=True``).
JIT = dict(cache=True, nogil=True, error_model="numpy")
