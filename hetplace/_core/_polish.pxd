cdef long long polish_nogil(const double[:, ::1] rho, const double[::1] work,
                            const double[:, ::1] comm, const long long[::1] worker_type,
                            bint uniform, long long[::1] worker_job,
                            long long max_steps) noexcept nogil
