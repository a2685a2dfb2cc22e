"""SMP sample driver, Numba backend: every sampled category through the market in
parallel with ``prange``, on single workers (``run_samples``) or on worker
classes (``run_samples_classes``, :mod:`hetplace._core._classes_nb`).  The
polish of the best results is the single source :mod:`hetplace._core._polish`,
reached through :mod:`hetplace._core._registry`.

Each sample writes only its own row of the outputs, so the result does not
depend on the number of threads; the choice among samples is made afterwards,
serially, by the public layer (:mod:`hetplace.smp`, which also holds the
plain-Python twin of these loops).

Each driver also has a serial compilation, ``<name>_serial``, of the same
source (``prange`` runs as ``range``): the public layer uses it for one
thread, where the parallel version still pays for the threading layer -- on a
machine whose cores are busy, 10x at K = 64 (benchmarks/bench_latency.py).
"""

import types

import numpy as np
from numba import njit, prange
from ._jit import JIT

from ._classes_nb import class_market
from ._matching_nb import market_category_kernel
from ._source import load

expand_counts = load("_polish", "numba").expand_counts


@njit(**JIT)
def _one_sample(rho, work, comm, sizes, form, max_rounds, job_order, order_len, worker_rank,
                wj, stats, nf, ni):
    fws = np.empty(nf)
    iws = np.empty(ni, dtype=np.int64)
    mstats = np.zeros(2, dtype=np.int64)
    total = market_category_kernel(rho, work, comm, sizes, form, max_rounds,
                                   job_order, order_len, worker_rank, wj, mstats, fws, iws)
    stats[0] = mstats[0]
    stats[1] = mstats[1]
    return total


def run_samples(rho, work, comm, worker_type, speed, uniform, cats, form, max_rounds,
                job_order, order_len, worker_rank, do_polish, max_steps,
                out_wj, out_total, out_stats, nf, ni):
    """Every category ``cats[s]`` through the market; write assignment, true total JCT, counters.

    ``worker_type``, ``speed``, ``uniform``, ``do_polish`` and ``max_steps`` are
    accepted for a uniform signature with the polish pass and not used here.
    """
    N = cats.shape[0]
    for s in prange(N):
        out_total[s] = _one_sample(rho, work, comm, cats[s], form, max_rounds, job_order,
                                   order_len, worker_rank, out_wj[s], out_stats[s], nf, ni)


def run_samples_classes(rhoC, work, comm, mc, members, cls_start, cats, max_rounds,
                        out_wj, out_total, out_stats, nf, ni):
    """Every category through the class-level market (``_classes_nb.class_market``).

    Writes each sample's assignment (counts expanded to workers by
    ``expand_counts``), its true total JCT and ``[rounds, proposals]``.
    """
    N = cats.shape[0]
    S = rhoC.shape[0]
    C = rhoC.shape[1]
    for s in prange(N):
        fws = np.empty(nf)
        iws = np.empty(ni, dtype=np.int64)
        cnt = np.zeros((S, C), dtype=np.int64)
        st = np.zeros(2, dtype=np.int64)
        out_total[s] = class_market(rhoC, work, comm, mc, cats[s], max_rounds, cnt, st, fws, iws)
        out_stats[s, 0] = st[0]
        out_stats[s, 1] = st[1]
        expand_counts(cnt, members, cls_start, out_wj[s])


def _compile(fn):
    """(parallel, serial) compilations of one driver; the serial one under its own name (own cache file)."""
    serial = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__)
    serial.__qualname__ = fn.__qualname__ + "_serial"
    serial.__doc__ = fn.__doc__
    return njit(parallel=True, **JIT)(fn), njit(**JIT)(serial)


run_samples, run_samples_serial = _compile(run_samples)
run_samples_classes, run_samples_classes_serial = _compile(run_samples_classes)
