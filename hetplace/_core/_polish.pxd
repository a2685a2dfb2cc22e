from libc.stdint cimport int64_t

cdef long long polish_nogil(const double[:, ::1] rho, const double[::1] work,
                            const double[:, ::1] comm, const int64_t[::1] worker_type,
                            bint uniform, int64_t[::1] worker_job,
                            long long max_steps) noexcept nogil
