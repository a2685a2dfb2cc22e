# The kernels of the single source _polish.py that other single-source modules call
# (``from cython.cimports.hetplace._core._polish import class_totals``); see its docstrings.
# Under Numba and plain Python, hetplace._core._source serves that import with the
# same backend's compilation of _polish.py.

cdef double class_totals(const double[:, ::1] rhoC, const double[::1] work, const double[:, ::1] comm,
                         long long[:, ::1] cnt, double[::1] X, long long[::1] n) noexcept nogil

cdef void expand_counts(long long[:, ::1] cnt, const long long[::1] members, const long long[::1] cls_start,
                        long long[::1] worker_job) noexcept nogil

cdef double job_cost(const double[::1] work, const double[:, ::1] comm, bint spec, Py_ssize_t i, double X,
                     long long n) noexcept nogil

cdef bint comm_is_spec(const double[:, ::1] comm) noexcept nogil
