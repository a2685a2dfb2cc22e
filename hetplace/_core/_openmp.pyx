# OpenMP's thread limit for hetplace.smp.available_threads (backend="cython").
#
# The SMP market and its drivers are the single source _market.py; this small
# extension stays in .pyx because the limit is read through OpenMP's C API under
# #ifdef _OPENMP (a build without OpenMP reports 1), which Cython's pure-Python
# mode cannot express.


cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int hp_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int hp_omp_max_threads(void) { return 1; }
    #endif
    """
    int hp_omp_max_threads() nogil


def max_threads():
    """OpenMP's current thread limit: ``OMP_NUM_THREADS``, ``omp_set_num_threads`` (threadpoolctl)."""
    return hp_omp_max_threads()
