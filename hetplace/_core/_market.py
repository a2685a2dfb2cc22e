"""The SMP market (docs/model.md §3.3-3.5, §3.8): one source, three backends.

Kernels
-------
_auction
    Price form: exact ascending-price auction (market-clearing prices) for
    "each job i gets exactly caps[i] workers, each worker at most one job",
    maximising the total value (``hetplace.deferred_acceptance``, and every
    round of both markets below).
_gale_shapley, _job_order, _relative_rank
    Ordinal form of the SMP market: job-proposing deferred acceptance with
    slots on preference lists built once per problem
    (``hetplace.deferred_acceptance(form="ordinal")`` runs the list-free
    kernel of :mod:`hetplace._core._ordinal` instead).
_market_category
    One SMP category on single workers: iterated linearised valuations, price
    or ordinal market, true total JCT of the best assignment seen.
_class_market
    One SMP category on worker classes: the same iteration, with the market
    solved as a transportation problem between job slots and classes.
_run_samples, _run_samples_classes
    Every sampled category through one of the two, in a ``prange`` over
    threads; each sample writes only its own output row, so the result does
    not depend on the number of threads.

This module is written once, in Cython's pure-Python mode, and compiled three
ways (see :mod:`hetplace._core._source`): ``cythonize`` builds it at install
(``backend="cython"``), :func:`hetplace._core._source.load` compiles every
``@cython.cfunc`` with Numba (``backend="numba"``; the drivers in parallel and
serially) and runs it as plain Python (``backend="python"``).  Every backend
does the same floating-point operations in the same order, so assignments,
prices, counters and totals agree bit for bit.  The rules of the source are
those of :mod:`hetplace._core._polish`: kernels never allocate (work arrays
``fws`` (float64) and ``iws`` (int64) of at least the lengths of the
``*_workspace_size`` functions come from the ``def`` entries or the caller;
their contents on entry do not matter), call no ``cython.*`` function and
declare every local.  Matrices inside the work arrays are flat, row-major.
The class market's totals and expansion are :mod:`hetplace._core._polish`'s
(``class_totals``, ``expand_counts``; ``cimport``-ed, see ``_polish.pxd``).
Private: inputs are trusted (validated by :mod:`hetplace.matching` or built by
:mod:`hetplace.smp`).
"""

from __future__ import annotations

import os

import cython
import numpy as np
from cython.cimports.libc.math import floor
from cython.cimports.hetplace._core._polish import class_totals, comm_is_spec, expand_counts, job_cost
from cython.parallel import prange

from hetplace._core._chunks import batches

__all__ = [
    "COMPILED", "FORM_PRICE", "FORM_ORDINAL", "auction_workspace_size", "gale_shapley_workspace_size",
    "market_workspace_size", "class_market_workspace_size", "auction_kernel", "job_order_kernel",
    "relative_rank_kernel", "ordinal_preferences", "market_category_kernel", "class_market_kernel",
    "run_samples", "run_samples_classes", "fit_max",
]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

#: ``form`` codes of the market kernels (Python names; the kernels compare with ``_PRICE``).
FORM_PRICE = 0
FORM_ORDINAL = 1
_PRICE = cython.declare(cython.int, 0)
INF = cython.declare(cython.double, float("inf"))
NAN = cython.declare(cython.double, float("nan"))
#: :func:`_sort_desc` sorts at most this many entries by insertion.
_INSERTION_MAX = cython.declare(cython.Py_ssize_t, 16)


def auction_workspace_size(S, K):
    """(n_float, n_int) work-array lengths of :func:`_auction` (S jobs, K workers)."""
    J = S + 1
    return 2 * J + J * J + K, 7 * J + J * J + 7 * K + 1


def gale_shapley_workspace_size(S, K):
    """(n_float, n_int) work-array lengths of :func:`_gale_shapley`."""
    return 0, 3 * S


def market_workspace_size(S, K):
    """(n_float, n_int) work-array lengths of :func:`_market_category`."""
    af, ai = auction_workspace_size(S, K)
    gf, gi = gale_shapley_workspace_size(S, K)
    return 4 * S + 1 + S * K + max(af, gf), 2 * K + S + max(ai, gi)


def class_market_workspace_size(S, C, K):
    """(n_float, n_int) work-array lengths of :func:`_class_market` (besides its (2, S, C) count array)."""
    af, ai = auction_workspace_size(C, K)
    return 2 * S + 2 * C + 1 + K * C + af, K + S + ai


# ------------------------------------------------------------------ the auction


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sort_desc(keys: cython.const[cython.double][::1], o_keys: cython.Py_ssize_t, buf: cython.longlong[::1],
               o_idx: cython.Py_ssize_t, o_tmp: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.void:
    """Sort ``buf[o_idx:o_idx + n]`` by ``keys[o_keys + entry]`` descending, ties by entry ascending.

    Bottom-up merge sort (insertion sort up to :data:`_INSERTION_MAX` entries),
    each pass from one part of ``buf`` to the other (``buf[o_tmp:o_tmp + n]``:
    scratch that must not overlap).  Parts are offsets into one work array
    (a slice of a memoryview costs Cython two atomic reference counts).  The
    order is a total order, so any correct sort returns the same permutation.
    """
    width: cython.Py_ssize_t = 1
    start: cython.Py_ssize_t
    mid: cython.Py_ssize_t
    hi: cython.Py_ssize_t
    a: cython.Py_ssize_t
    b: cython.Py_ssize_t
    o: cython.Py_ssize_t
    t: cython.Py_ssize_t
    src: cython.Py_ssize_t = o_idx  # the pass reads buf[src:] and writes buf[dst:]
    dst: cython.Py_ssize_t = o_tmp
    ia: cython.longlong
    ib: cython.longlong
    ka: cython.double
    kb: cython.double
    if n <= _INSERTION_MAX:  # short runs (the auction's classes): fewer steps
        for a in range(1, n):
            ia = buf[o_idx + a]
            ka = keys[o_keys + ia]
            b = a
            while b > 0:
                ib = buf[o_idx + b - 1]
                kb = keys[o_keys + ib]
                if ka > kb or (ka == kb and ia < ib):
                    buf[o_idx + b] = ib
                    b -= 1
                else:
                    break
            buf[o_idx + b] = ia
        return
    while width < n:
        start = 0
        while start < n:
            mid = start + width
            if mid > n:
                mid = n
            hi = start + 2 * width
            if hi > n:
                hi = n
            a = start
            b = mid
            o = start
            while a < mid and b < hi:
                ia = buf[src + a]
                ib = buf[src + b]
                ka = keys[o_keys + ia]
                kb = keys[o_keys + ib]
                if ka > kb or (ka == kb and ia < ib):
                    buf[dst + o] = ia
                    a += 1
                else:
                    buf[dst + o] = ib
                    b += 1
                o += 1
            while a < mid:
                buf[dst + o] = buf[src + a]
                a += 1
                o += 1
            while b < hi:
                buf[dst + o] = buf[src + b]
                b += 1
                o += 1
            start = hi
        t = src
        src = dst
        dst = t
        width *= 2
    if src != o_idx:
        for t in range(n):
            buf[o_idx + t] = buf[src + t]


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _cell_find(iws: cython.longlong[::1], o_cell_cls: cython.Py_ssize_t, o_cellpos: cython.Py_ssize_t,
               o_cls_first: cython.Py_ssize_t, o_off: cython.Py_ssize_t, o_ncell: cython.Py_ssize_t,
               m: cython.Py_ssize_t, c: cython.longlong) -> cython.Py_ssize_t:
    """Position (within job m's cells) of class c's cell, or -1 (the arrays: :func:`_auction`'s parts of ``iws``)."""
    t: cython.Py_ssize_t
    if iws[o_cls_first + c + 1] - iws[o_cls_first + c] == 1:
        return iws[o_cellpos + c]
    for t in range(iws[o_ncell + m]):
        if iws[o_cell_cls + iws[o_off + m] + t] == c:
            return t
    return -1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _value(vals_t: cython.const[cython.double][::1], scale: cython.const[cython.double][::1], lo: cython.double,
           S: cython.Py_ssize_t, k: cython.Py_ssize_t, j: cython.Py_ssize_t) -> cython.double:
    """Value of worker k for job j (0 for the idle pseudo-job ``j == S``), NaN when the pair is not allowed."""
    x: cython.double
    if j < S:
        x = vals_t[k * S + j]
        if not x > lo:
            return NAN
        return scale[j] * x
    return 0.0


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _auction(vals_t: cython.const[cython.double][::1], scale: cython.const[cython.double][::1], lo: cython.double,
             caps: cython.const[cython.longlong][::1], worker_job: cython.longlong[::1],
             job_price: cython.double[::1], stats: cython.longlong[::1], fws: cython.double[::1],
             iws: cython.longlong[::1]) -> cython.int:
    """Welfare-maximising assignment by an exact ascending-price auction.

    Parameters
    ----------
    vals_t : float64 (K * S,)
        Raw values, worker-major ((K, S) row-major); pair (job i, worker k) is
        allowed iff ``vals_t[k * S + i] > lo`` (NaN is never allowed) and is
        then worth ``scale[i] * vals_t[k * S + i]``.
    scale : float64 (S,)
        Per-job multiplier (ones for a plain value matrix).
    lo : float
        Allowed-pair threshold (``-inf``: every non-NaN; ``0.0``: throughput > 0).
    caps : int64 (S,)
        Exact number of workers of each job; ``sum(caps) <= K``.
    worker_job : int64 (K,), out
        Job of every worker, -1 idle.  Only allowed pairs are returned.
    job_price : float64 (S + 1,), out
        Final price of a slot of each job; index S is the idle pseudo-job.
    stats : int64 (2,), out
        ``[augmenting searches, proposals]``; a proposal is one worker moving
        into a job (an arriving worker's or a displaced worker's).
    fws, iws : float64, int64 work arrays (:func:`auction_workspace_size`).

    Returns
    -------
    int
        0 when every job got its capacity, 1 when the capacities cannot be
        filled with allowed pairs (infeasible; the assignment is then partial).

    Notes
    -----
    The exact ascending auction of Demange, Gale and Sotomayor (1986), which
    ends at the minimal market-clearing prices, realised as successive
    shortest augmenting paths over the S + 1 jobs (the Hungarian method of
    Kuhn and Munkres, for the transportation problem).  An idle pseudo-job
    (index S, ``K - sum(caps)`` slots, value 0 for every worker) squares the
    market.  Workers arrive one at a time (largest regret ``best - second best
    value`` first, ties by index) and propose to a job of highest net value
    ``v[i, k] - q[i]``.  A job with a free slot accepts; a full job keeps the
    proposal by passing one of its workers on to another job, along the
    cheapest chain of such displacements that ends in a free slot (Dijkstra on
    the job graph; edge i -> l costs the cheapest
    ``(v[i, w] - q[i]) - (v[l, w] - q[l]) >= 0`` over workers w of job i).  The
    prices of every job nearer than that free slot then rise by the difference
    of distances, so prices only ascend, free slots cost 0 and every placed
    worker sits at a job of maximal net value.  When all workers are placed
    the prices ``q`` and payoffs ``pi[k] = max_i v[i, k] - q[i]`` are an
    optimal dual solution (complementary slackness), so the total value is
    maximal, exactly up to floating-point rounding (reduced costs are clamped
    at 0).

    Runs of consecutive workers with identical values (e.g. workers of one
    type at uniform speed) are merged into classes and moved in bulk, by the
    bottleneck of the chain.  The cheapest class of every job pair (i, l) is
    cached; when it leaves job i the entry turns stale but keeps its key as a
    lower bound, and is recomputed only when that bound could shorten a path.
    Memory O(K + S^2); time O(S * settled jobs) per search, at most one search
    per worker and one per class of identical workers in the best case.
    """
    K: cython.Py_ssize_t = worker_job.shape[0]
    S: cython.Py_ssize_t = caps.shape[0]
    J: cython.Py_ssize_t = S + 1
    bb: cython.Py_ssize_t = 7 * J + J * J
    # the parts of the work arrays, as offsets (a slice of a memoryview costs Cython two atomic
    # reference counts per call, and the auction runs every market round: docs/results.md §0.2)
    o_d: cython.Py_ssize_t = 0  # d: fws[0:J]
    o_q: cython.Py_ssize_t = J  # q: fws[J:2 * J]
    o_cmin: cython.Py_ssize_t = 2 * J  # cmin: fws[2 * J:2 * J + J * J]
    o_regret: cython.Py_ssize_t = 2 * J + J * J  # regret: fws[2 * J + J * J:2 * J + J * J + K]
    o_cap: cython.Py_ssize_t = 0  # cap: iws[0:J]
    o_off: cython.Py_ssize_t = J  # off: iws[J:2 * J]
    o_cnt: cython.Py_ssize_t = 2 * J  # cnt: iws[2 * J:3 * J]
    o_ncell: cython.Py_ssize_t = 3 * J  # ncell: iws[3 * J:4 * J]
    o_settled: cython.Py_ssize_t = 4 * J  # settled: iws[4 * J:5 * J]
    o_pj: cython.Py_ssize_t = 5 * J  # pj: iws[5 * J:6 * J]
    o_pw: cython.Py_ssize_t = 6 * J  # pw: iws[6 * J:7 * J]
    o_carg: cython.Py_ssize_t = 7 * J  # carg: iws[7 * J:bb]
    o_cell_cls: cython.Py_ssize_t = bb  # cell_cls: iws[bb:bb + K]
    o_cell_cnt: cython.Py_ssize_t = bb + K  # cell_cnt: iws[bb + K:bb + 2 * K]
    o_cls_first: cython.Py_ssize_t = bb + 2 * K  # cls_first: iws[bb + 2 * K:bb + 3 * K + 1]
    o_supply: cython.Py_ssize_t = bb + 3 * K + 1  # supply: iws[bb + 3 * K + 1:bb + 4 * K + 1]
    o_cellpos: cython.Py_ssize_t = bb + 4 * K + 1  # cellpos: iws[bb + 4 * K + 1:bb + 5 * K + 1]
    o_order: cython.Py_ssize_t = bb + 5 * K + 1  # order: iws[bb + 5 * K + 1:bb + 6 * K + 1]
    o_tmp: cython.Py_ssize_t = bb + 6 * K + 1  # tmp: iws[bb + 6 * K + 1:bb + 7 * K + 1]
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    k: cython.Py_ssize_t
    l: cython.Py_ssize_t
    l2: cython.Py_ssize_t
    m: cython.Py_ssize_t
    nm: cython.Py_ssize_t
    t: cython.Py_ssize_t
    t0: cython.Py_ssize_t
    p: cython.Py_ssize_t
    last: cython.Py_ssize_t
    C: cython.Py_ssize_t
    k0: cython.Py_ssize_t
    w: cython.Py_ssize_t
    tgt: cython.Py_ssize_t
    tot: cython.longlong
    c: cython.longlong
    cc: cython.longlong
    c0: cython.longlong
    lc: cython.longlong
    ba: cython.longlong
    delta: cython.longlong
    n: cython.longlong
    u_: cython.longlong
    x: cython.double
    y: cython.double
    v: cython.double
    u: cython.double
    b1: cython.double
    b2: cython.double
    best: cython.double
    dm: cython.double
    ndm: cython.double
    bk: cython.double
    vl: cython.double
    vm: cython.double
    key: cython.double
    qm: cython.double
    rc: cython.double
    nd: cython.double
    D: cython.double
    vw: cython.double
    same: cython.bint
    ax: cython.bint
    ay: cython.bint
    status: cython.int = 0
    searches: cython.longlong = 0
    moves: cython.longlong = 0

    tot = 0
    for i in range(S):
        iws[o_cap + i] = caps[i]
        iws[o_off + i] = tot
        tot += caps[i]
    iws[o_cap + S] = K - tot
    iws[o_off + S] = tot
    for j in range(J):
        iws[o_cnt + j] = 0
        iws[o_ncell + j] = 0
        fws[o_q + j] = 0.0
        for l in range(J):
            fws[o_cmin + j * J + l] = INF
            iws[o_carg + j * J + l] = -1

    # classes: runs of consecutive workers with identical values
    C = 0
    for k in range(K):
        worker_job[k] = -1
        same = k > 0
        if same:
            for j in range(S):
                if iws[o_cap + j] == 0:
                    continue
                x = vals_t[k * S + j]
                y = vals_t[(k - 1) * S + j]
                ax = x > lo
                ay = y > lo
                if ax != ay or (ax and x != y):
                    same = False
                    break
        if not same:
            iws[o_cls_first + C] = k
            C += 1
    iws[o_cls_first + C] = K

    # arrival order: largest regret first (forced classes have regret inf)
    for c in range(C):
        k = iws[o_cls_first + c]
        iws[o_supply + c] = iws[o_cls_first + c + 1] - k
        iws[o_cellpos + c] = -1
        iws[o_order + c] = c
        b1 = -INF
        b2 = -INF
        for j in range(J):
            if iws[o_cap + j] == 0:
                continue
            v = _value(vals_t, scale, lo, S, k, j)
            if v != v:
                continue
            if v > b1:
                b2 = b1
                b1 = v
            elif v > b2:
                b2 = v
        if b1 == -INF:
            fws[o_regret + c] = -INF
        elif b2 == -INF:
            fws[o_regret + c] = INF
        else:
            fws[o_regret + c] = b1 - b2
    _sort_desc(fws, o_regret, iws, o_order, o_tmp, C)

    for t0 in range(C):
        c0 = iws[o_order + t0]
        k0 = iws[o_cls_first + c0]
        while iws[o_supply + c0] > 0:
            # net values of the arriving class
            best = -INF
            for j in range(J):
                iws[o_settled + j] = 1
                fws[o_d + j] = INF
                if iws[o_cap + j] == 0:
                    continue
                v = _value(vals_t, scale, lo, S, k0, j)
                if v != v:
                    continue
                u = v - fws[o_q + j]
                iws[o_settled + j] = 0
                if u > best:
                    best = u
            if best == -INF:
                status = 1
                break
            m = -1
            dm = INF
            for j in range(J):
                if iws[o_settled + j] == 0:
                    u = _value(vals_t, scale, lo, S, k0, j) - fws[o_q + j]
                    fws[o_d + j] = best - u
                    iws[o_pj + j] = -1
                    iws[o_pw + j] = c0
                    if fws[o_d + j] < dm:
                        dm = fws[o_d + j]
                        m = j
                if iws[o_cap + j] > 0:
                    iws[o_settled + j] = 0
            searches += 1
            # Dijkstra over jobs until the nearest job with a free slot settles;
            # m is the unsettled job of least label (ties: lowest index)
            tgt = -1
            while m >= 0:
                iws[o_settled + m] = 1
                if iws[o_cnt + m] < iws[o_cap + m]:
                    tgt = m
                    break
                qm = fws[o_q + m]
                nm = -1
                ndm = INF
                for l in range(J):
                    if iws[o_settled + l] != 0:
                        continue
                    c = iws[o_carg + m * J + l]
                    if c == -2:
                        # stale pair: its cached key is a lower bound of the
                        # cheapest move; refresh it only if it could improve d[l]
                        rc = (fws[o_cmin + m * J + l] - qm) + fws[o_q + l]
                        if rc < 0.0:
                            rc = 0.0
                        if dm + rc < fws[o_d + l]:
                            bk = INF
                            ba = -1
                            for t in range(iws[o_ncell + m]):
                                cc = iws[o_cell_cls + iws[o_off + m] + t]
                                w = iws[o_cls_first + cc]
                                vl = _value(vals_t, scale, lo, S, w, l)
                                if vl != vl:
                                    continue
                                vm = 0.0
                                if m < S:
                                    vm = scale[m] * vals_t[w * S + m]
                                key = vm - vl
                                if key < bk:
                                    bk = key
                                    ba = cc
                            fws[o_cmin + m * J + l] = bk
                            iws[o_carg + m * J + l] = ba
                            c = ba
                    if c >= 0:
                        rc = (fws[o_cmin + m * J + l] - qm) + fws[o_q + l]
                        if rc < 0.0:
                            rc = 0.0
                        nd = dm + rc
                        if nd < fws[o_d + l]:
                            fws[o_d + l] = nd
                            iws[o_pj + l] = m
                            iws[o_pw + l] = c
                    if fws[o_d + l] < ndm:
                        ndm = fws[o_d + l]
                        nm = l
                m = nm
                dm = ndm
            if tgt < 0:
                status = 1
                break
            # bottleneck of the chain
            delta = iws[o_supply + c0]
            n = iws[o_cap + tgt] - iws[o_cnt + tgt]
            if n < delta:
                delta = n
            l = tgt
            while iws[o_pj + l] >= 0:
                m = iws[o_pj + l]
                c = iws[o_pw + l]
                p = _cell_find(iws, o_cell_cls, o_cellpos, o_cls_first, o_off, o_ncell, m, c)
                n = iws[o_cell_cnt + iws[o_off + m] + p]
                if n < delta:
                    delta = n
                l = m
            # prices of the jobs nearer than the free slot rise
            D = fws[o_d + tgt]
            for j in range(J):
                if iws[o_cap + j] > 0 and iws[o_settled + j] != 0 and fws[o_d + j] < D:
                    fws[o_q + j] += D - fws[o_d + j]
            # move delta workers along the chain, from the free slot back
            l = tgt
            while True:
                c = iws[o_pw + l]
                m = iws[o_pj + l]
                if m >= 0:
                    p = _cell_find(iws, o_cell_cls, o_cellpos, o_cls_first, o_off, o_ncell, m, c)
                    iws[o_cell_cnt + iws[o_off + m] + p] -= delta
                    iws[o_cnt + m] -= delta
                    if iws[o_cell_cnt + iws[o_off + m] + p] == 0:
                        last = iws[o_ncell + m] - 1
                        if p != last:
                            lc = iws[o_cell_cls + iws[o_off + m] + last]
                            iws[o_cell_cls + iws[o_off + m] + p] = lc
                            iws[o_cell_cnt + iws[o_off + m] + p] = iws[o_cell_cnt + iws[o_off + m] + last]
                            if iws[o_cls_first + lc + 1] - iws[o_cls_first + lc] == 1:
                                iws[o_cellpos + lc] = p
                        iws[o_ncell + m] = last
                        if iws[o_cls_first + c + 1] - iws[o_cls_first + c] == 1:
                            iws[o_cellpos + c] = -1
                        for l2 in range(J):
                            if iws[o_carg + m * J + l2] == c:
                                iws[o_carg + m * J + l2] = -2
                else:
                    iws[o_supply + c0] -= delta
                p = _cell_find(iws, o_cell_cls, o_cellpos, o_cls_first, o_off, o_ncell, l, c)
                if p >= 0:
                    iws[o_cell_cnt + iws[o_off + l] + p] += delta
                else:
                    p = iws[o_ncell + l]
                    iws[o_cell_cls + iws[o_off + l] + p] = c
                    iws[o_cell_cnt + iws[o_off + l] + p] = delta
                    iws[o_ncell + l] = p + 1
                    if iws[o_cls_first + c + 1] - iws[o_cls_first + c] == 1:
                        iws[o_cellpos + c] = p
                    w = iws[o_cls_first + c]
                    vw = 0.0
                    if l < S:
                        vw = scale[l] * vals_t[w * S + l]
                    for l2 in range(J):
                        if l2 == l or iws[o_cap + l2] == 0:
                            continue
                        vl = _value(vals_t, scale, lo, S, w, l2)
                        if vl != vl:
                            continue
                        key = vw - vl
                        if key < fws[o_cmin + l * J + l2]:
                            fws[o_cmin + l * J + l2] = key
                            iws[o_carg + l * J + l2] = c
                iws[o_cnt + l] += delta
                moves += delta
                if m < 0:
                    break
                l = m

    # hand out the workers of each class to its jobs, lowest job first
    for c in range(C):
        iws[o_tmp + c] = iws[o_cls_first + c]
    for j in range(S):
        for t in range(iws[o_ncell + j]):
            c = iws[o_cell_cls + iws[o_off + j] + t]
            for u_ in range(iws[o_cell_cnt + iws[o_off + j] + t]):
                worker_job[iws[o_tmp + c]] = j
                iws[o_tmp + c] += 1
    for j in range(J):
        job_price[j] = fws[o_q + j]
    stats[0] = searches
    stats[1] = moves
    return status


# ------------------------------------------------------------------ the ordinal form


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _job_order(vals: cython.const[cython.double][:, ::1], lo: cython.double, job_order: cython.longlong[:, ::1],
               order_len: cython.longlong[::1], tmp: cython.longlong[::1]) -> cython.void:
    """Preference lists of the jobs: row i of ``job_order`` (S, K) holds job i's acceptable workers
    (``vals[i, k] > lo``), highest value first, ties to the lower index, then -1; ``order_len`` (S,)
    their number; ``tmp`` (2 K,) scratch (a list is sorted there, :func:`_sort_desc`)."""
    S: cython.Py_ssize_t = vals.shape[0]
    K: cython.Py_ssize_t = vals.shape[1]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    n: cython.Py_ssize_t
    for i in range(S):
        n = 0
        for k in range(K):
            if vals[i, k] > lo:
                tmp[n] = k
                n += 1
        _sort_desc(vals[i], 0, tmp, 0, K, n)
        for k in range(n):
            job_order[i, k] = tmp[k]
        for k in range(n, K):
            job_order[i, k] = -1
        order_len[i] = n


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _relative_rank(rho: cython.const[cython.double][:, ::1], worker_rank: cython.double[:, ::1]) -> cython.void:
    """Workers' ranking of jobs in the market: relative speed.

    ``worker_rank[i, k] = rho[i, k] / (sum_k rho[i, k] / K)`` (sum in worker
    order; rows summing to 0 get 0).  A worker prefers the job with the larger
    entry, ties to the lower job index.
    """
    S: cython.Py_ssize_t = rho.shape[0]
    K: cython.Py_ssize_t = rho.shape[1]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    s: cython.double
    m: cython.double
    for i in range(S):
        s = 0.0
        for k in range(K):
            s += rho[i, k]
        m = s / K
        for k in range(K):
            if m > 0.0:
                worker_rank[i, k] = rho[i, k] / m
            else:
                worker_rank[i, k] = 0.0


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _gale_shapley(job_order: cython.const[cython.longlong][:, ::1], order_len: cython.const[cython.longlong][::1],
                  worker_rank: cython.const[cython.double][:, ::1], caps: cython.const[cython.longlong][::1],
                  worker_job: cython.longlong[::1], stats: cython.longlong[::1],
                  iws: cython.longlong[::1]) -> cython.int:
    """Job-proposing deferred acceptance with slots on the lists of :func:`_job_order`.

    Worker k prefers job i to job j iff ``worker_rank[i, k] > worker_rank[j, k]``,
    ties to the lower job index; only acceptable pairs are ever compared.
    Writes ``worker_job`` (K,) (-1 unmatched) and ``stats = [1, proposals]``;
    ``iws``: :func:`gale_shapley_workspace_size`.  Returns 0 when every job
    filled its slots, else 1.

    Gale and Shapley (1962), hospitals/residents with the hospitals (jobs)
    proposing; Roth (1984) for its properties with slots.  The result is the
    job-optimal stable matching (unique whatever the order of proposals); jobs
    are processed from a stack, job 0 first.
    """
    S: cython.Py_ssize_t = caps.shape[0]
    K: cython.Py_ssize_t = worker_job.shape[0]
    ptr: cython.longlong[::1] = iws[0:S]
    need: cython.longlong[::1] = iws[S:2 * S]
    stack: cython.longlong[::1] = iws[2 * S:3 * S]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    top: cython.Py_ssize_t = 0
    cur: cython.longlong
    props: cython.longlong = 0
    ri: cython.double
    rc: cython.double
    status: cython.int = 0
    for k in range(K):
        worker_job[k] = -1
    for i in range(S - 1, -1, -1):
        ptr[i] = 0
        need[i] = caps[i]
        if caps[i] > 0:
            stack[top] = i
            top += 1
    while top > 0:
        top -= 1
        i = stack[top]
        while need[i] > 0 and ptr[i] < order_len[i]:
            k = job_order[i, ptr[i]]
            ptr[i] += 1
            props += 1
            cur = worker_job[k]
            if cur < 0:
                worker_job[k] = i
                need[i] -= 1
            else:
                ri = worker_rank[i, k]
                rc = worker_rank[cur, k]
                if ri > rc or (ri == rc and i < cur):
                    worker_job[k] = i
                    need[i] -= 1
                    need[cur] += 1
                    if need[cur] == 1:
                        stack[top] = cur
                        top += 1
    for i in range(S):
        if need[i] > 0:
            status = 1
    stats[0] = 1
    stats[1] = props
    return status


# ------------------------------------------------------------------ one category on single workers


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _market_category(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                     comm: cython.const[cython.double][:, ::1], sizes: cython.const[cython.longlong][::1],
                     form: cython.int, max_rounds: cython.Py_ssize_t,
                     job_order: cython.const[cython.longlong][:, ::1], order_len: cython.const[cython.longlong][::1],
                     worker_rank: cython.const[cython.double][:, ::1], worker_job: cython.longlong[::1],
                     stats: cython.longlong[::1], fws: cython.double[::1], iws: cython.longlong[::1]) -> cython.double:
    """Solve one SMP category: iterated linearised market (docs/model.md §3.3).

    Parameters
    ----------
    rho : float64 (S, K)      worker throughput per job (0: the job cannot use the worker)
    work : float64 (S,)       ``w_i = iterations * batch``
    comm : float64 (S, 3) or (S, K + 1)   communication by job size (see ``_polish.job_cost``)
    sizes : int64 (S,)        the category: ``sizes[i] >= 1``, ``sum(sizes) <= K``
    form : int                FORM_PRICE (0) or FORM_ORDINAL (1)
    max_rounds : int          market solves at most (>= 1)
    job_order, order_len, worker_rank
        Ordinal-form preferences (:func:`ordinal_preferences`); not read by the
        price form (any int64 (1, 1), int64 (1,) and float64 (1, 1) arrays).
    worker_job : int64 (K,), out   best assignment seen (job per worker, -1 idle)
    stats : int64 (2,), out        ``[rounds (market solves), proposals in total]``
    fws, iws : work arrays (:func:`market_workspace_size`)

    Returns
    -------
    float
        True total JCT ``sum_i work[i] / X_i + comm[i, n_i]`` of ``worker_job``;
        ``inf`` when a job got no worker.

    Notes
    -----
    The price form works on a worker-major copy of ``rho`` made in ``fws``.
    ``X_i`` starts at ``sizes[i] * (sum_k rho[i, k] / K)``.  Each round values
    pair (i, k) at ``a_i * rho[i, k]`` with ``a_i = work[i] / (X_i * X_i)``
    (the marginal JCT reduction of job i at ``X_i``), solves the market with
    capacities ``sizes``, and sets ``X_i`` to the true throughput of the
    assignment.  The best assignment (strictly smaller total; ties keep the
    earlier) is kept.  Stops when an assignment repeats the previous one,
    after ``max_rounds`` solves, or when the market cannot fill the category
    (then the total is that of the partial assignment).  The ordinal form's
    preferences do not depend on ``a_i``, so it solves once.
    """
    spec: cython.bint = comm_is_spec(comm)
    S: cython.Py_ssize_t = rho.shape[0]
    K: cython.Py_ssize_t = rho.shape[1]
    X: cython.double[::1] = fws[0:S]
    a: cython.double[::1] = fws[S:2 * S]
    Xt: cython.double[::1] = fws[2 * S:3 * S]
    jp: cython.double[::1] = fws[3 * S:4 * S + 1]
    rho_t: cython.double[::1] = fws[4 * S + 1:4 * S + 1 + S * K]
    fsub: cython.double[::1] = fws[4 * S + 1 + S * K:]
    cur: cython.longlong[::1] = iws[0:K]
    prev: cython.longlong[::1] = iws[K:2 * K]
    cnt: cython.longlong[::1] = iws[2 * K:2 * K + S]
    isub: cython.longlong[::1] = iws[2 * K + S:]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    r: cython.Py_ssize_t
    j: cython.Py_ssize_t
    s: cython.double
    x: cython.double
    total: cython.double
    best: cython.double = INF
    rounds: cython.longlong = 0
    props: cython.longlong = 0
    status: cython.int
    same: cython.bint
    if form == _PRICE:
        for i in range(S):
            s = 0.0
            for k in range(K):
                x = rho[i, k]
                rho_t[k * S + i] = x
                s += x
            X[i] = sizes[i] * (s / K)
    for r in range(max_rounds):
        rounds += 1
        if form == _PRICE:
            for i in range(S):
                a[i] = work[i] / (X[i] * X[i])
            status = _auction(rho_t, a, 0.0, sizes, cur, jp, stats, fsub, isub)
        else:
            status = _gale_shapley(job_order, order_len, worker_rank, sizes, cur, stats, isub)
        props += stats[1]
        for i in range(S):
            Xt[i] = 0.0
            cnt[i] = 0
        for k in range(K):
            j = cur[k]
            if j >= 0:
                Xt[j] += rho[j, k]
                cnt[j] += 1
        total = 0.0
        for i in range(S):
            if cnt[i] == 0:
                total = INF
                break
            total += job_cost(work, comm, spec, i, Xt[i], cnt[i])
        if r == 0 or total < best:
            best = total
            for k in range(K):
                worker_job[k] = cur[k]
        if form != _PRICE or status != 0:
            break
        if r > 0:
            same = True
            for k in range(K):
                if cur[k] != prev[k]:
                    same = False
                    break
            if same:
                break
        for k in range(K):
            prev[k] = cur[k]
        for i in range(S):
            X[i] = Xt[i]
    stats[0] = rounds
    stats[1] = props
    return best


# ------------------------------------------------------------------ one category on worker classes
# A worker class is a set of workers with identical throughput columns (same GPU
# type and speed; hetplace.smp.worker_classes).  The linearised market is then a
# transportation problem between job slots and classes, solved by the same auction
# with the roles of the sides swapped: the slots of each job arrive and the C
# classes are the nodes of the shortest-path search, so a search costs O(C^2)
# instead of O(S^2).  ``K - sum(sizes)`` dummy slots worth 0 everywhere stand for
# the idle workers, so every class is filled exactly.


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _fill_units(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                X: cython.double[::1], sizes: cython.const[cython.longlong][::1], V: cython.double[::1],
                K: cython.Py_ssize_t) -> cython.void:
    """Slot-major values (K, C): ``sizes[i]`` rows ``work[i] / X[i]^2 * rhoC[i, c]`` (NaN: not allowed), then 0-rows."""
    S: cython.Py_ssize_t = rhoC.shape[0]
    C: cython.Py_ssize_t = rhoC.shape[1]
    i: cython.Py_ssize_t
    c: cython.Py_ssize_t
    u: cython.Py_ssize_t = 0
    t: cython.longlong
    a: cython.double
    x: cython.double
    for i in range(S):
        a = work[i] / (X[i] * X[i])
        for t in range(sizes[i]):
            for c in range(C):
                x = rhoC[i, c]
                if x > 0.0:
                    V[u * C + c] = a * x
                else:
                    V[u * C + c] = NAN
            u += 1
    while u < K:
        for c in range(C):
            V[u * C + c] = 0.0
        u += 1


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _class_market(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                  comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                  sizes: cython.const[cython.longlong][::1], max_rounds: cython.Py_ssize_t,
                  cnt_best: cython.longlong[:, ::1], stats: cython.longlong[::1], fws: cython.double[::1],
                  iws: cython.longlong[::1], cnt: cython.longlong[:, ::1],
                  prev: cython.longlong[:, ::1]) -> cython.double:
    """One SMP category on worker classes (iterated linearised market, docs/model.md §3.8).

    Parameters
    ----------
    rhoC : float64 (S, C)     throughput of one worker of class c for job i (0: not allowed)
    work : float64 (S,)       iterations * batch
    comm : float64 (S, 3) or (S, K+1)   communication by job size (``_polish.job_cost``)
    mc : int64 (C,)           workers per class (sum K)
    sizes : int64 (S,)        the category, ``sizes[i] >= 1``, ``sum(sizes) <= K``
    max_rounds : int          market solves at most (>= 1)
    cnt_best : int64 (S, C), out   counts of the best assignment seen
    stats : int64 (2,), out        ``[rounds, proposals]``
    fws, iws : work arrays of :func:`class_market_workspace_size` lengths
    cnt, prev : int64 (S, C)       work arrays

    Returns
    -------
    float
        True total JCT of ``cnt_best`` (inf when a job got no worker).

    Notes
    -----
    The iteration of :func:`_market_category` (values ``work[i] / X_i^2 *
    rho``, X updated to the true throughput, stop on a repeat, on
    ``max_rounds`` or when infeasible; strictly better totals replace the
    best), with the market solved on classes.  ``X_i`` starts at
    ``sizes[i]`` times the job's mean worker throughput.
    """
    S: cython.Py_ssize_t = rhoC.shape[0]
    C: cython.Py_ssize_t = rhoC.shape[1]
    K: cython.Py_ssize_t = 0
    i: cython.Py_ssize_t
    c: cython.Py_ssize_t
    r: cython.Py_ssize_t
    u: cython.Py_ssize_t
    t: cython.longlong
    s: cython.double
    total: cython.double
    best: cython.double = INF
    status: cython.int
    rounds: cython.longlong = 0
    props: cython.longlong = 0
    same: cython.bint
    for c in range(C):
        K += mc[c]
    X: cython.double[::1] = fws[0:S]
    Xt: cython.double[::1] = fws[S:2 * S]
    ones: cython.double[::1] = fws[2 * S:2 * S + C]
    jp: cython.double[::1] = fws[2 * S + C:2 * S + 2 * C + 1]
    V: cython.double[::1] = fws[2 * S + 2 * C + 1:2 * S + 2 * C + 1 + K * C]
    fsub: cython.double[::1] = fws[2 * S + 2 * C + 1 + K * C:]
    unit_col: cython.longlong[::1] = iws[0:K]
    n: cython.longlong[::1] = iws[K:K + S]
    isub: cython.longlong[::1] = iws[K + S:]
    for c in range(C):
        ones[c] = 1.0
    for i in range(S):
        s = 0.0
        for c in range(C):
            s += mc[c] * rhoC[i, c]
        X[i] = sizes[i] * (s / K)
    for r in range(max_rounds):
        rounds += 1
        _fill_units(rhoC, work, X, sizes, V, K)
        status = _auction(V, ones, -INF, mc, unit_col, jp, stats, fsub, isub)
        props += stats[1]
        u = 0  # counts: slots of job i that the auction gave class c
        for i in range(S):
            for c in range(C):
                cnt[i, c] = 0
            for t in range(sizes[i]):
                if unit_col[u] >= 0:
                    cnt[i, unit_col[u]] += 1
                u += 1
        total = class_totals(rhoC, work, comm, cnt, Xt, n)
        if r == 0 or total < best:
            best = total
            for i in range(S):
                for c in range(C):
                    cnt_best[i, c] = cnt[i, c]
        if status != 0:
            break
        same = True  # and prev = cnt, in one pass
        for i in range(S):
            for c in range(C):
                if cnt[i, c] != prev[i, c]:
                    same = False
                    prev[i, c] = cnt[i, c]
        if r > 0 and same:
            break
        for i in range(S):
            X[i] = Xt[i]
    stats[0] = rounds
    stats[1] = props
    return best


# ------------------------------------------------------------------ drivers: every sample
# The samples are dealt round-robin to T work slices (T = threads): slice t
# serves samples t, t + T, ...  Each sample writes only its own output row.


@cython.cfunc
@cython.exceptval(check=False)
def _run_samples(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                 comm: cython.const[cython.double][:, ::1], cats: cython.const[cython.longlong][:, ::1],
                 form: cython.int, max_rounds: cython.Py_ssize_t,
                 job_order: cython.const[cython.longlong][:, ::1], order_len: cython.const[cython.longlong][::1],
                 worker_rank: cython.const[cython.double][:, ::1], out_wj: cython.longlong[:, ::1],
                 out_total: cython.double[::1], out_stats: cython.longlong[:, ::1], fws: cython.double[:, ::1],
                 iws: cython.longlong[:, ::1], mstats: cython.longlong[:, ::1], threads: cython.int) -> cython.void:
    N: cython.Py_ssize_t = cats.shape[0]
    T: cython.Py_ssize_t = fws.shape[0]
    t: cython.Py_ssize_t
    j: cython.Py_ssize_t
    s: cython.Py_ssize_t
    for t in prange(T, nogil=True, num_threads=threads, schedule="static", chunksize=1):
        for j in range((N - t + T - 1) // T):
            s = t + j * T
            out_total[s] = _market_category(rho, work, comm, cats[s], form, max_rounds, job_order, order_len,
                                            worker_rank, out_wj[s], mstats[t], fws[t], iws[t])
            out_stats[s, 0] = mstats[t, 0]
            out_stats[s, 1] = mstats[t, 1]


@cython.cfunc
@cython.exceptval(check=False)
def _run_samples_classes(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                         comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                         members: cython.const[cython.longlong][::1], cls_start: cython.const[cython.longlong][::1],
                         cats: cython.const[cython.longlong][:, ::1], max_rounds: cython.Py_ssize_t,
                         out_wj: cython.longlong[:, ::1], out_total: cython.double[::1],
                         out_stats: cython.longlong[:, ::1], fws: cython.double[:, ::1], iws: cython.longlong[:, ::1],
                         mstats: cython.longlong[:, ::1], cnt: cython.longlong[:, :, :, ::1],
                         threads: cython.int) -> cython.void:
    N: cython.Py_ssize_t = cats.shape[0]
    T: cython.Py_ssize_t = fws.shape[0]
    t: cython.Py_ssize_t
    j: cython.Py_ssize_t
    s: cython.Py_ssize_t
    for t in prange(T, nogil=True, num_threads=threads, schedule="static", chunksize=1):
        for j in range((N - t + T - 1) // T):
            s = t + j * T
            out_total[s] = _class_market(rhoC, work, comm, mc, cats[s], max_rounds, cnt[t, 0], mstats[t], fws[t],
                                         iws[t], cnt[t, 1], cnt[t, 2])
            out_stats[s, 0] = mstats[t, 0]
            out_stats[s, 1] = mstats[t, 1]
            expand_counts(cnt[t, 0], members, cls_start, out_wj[s])


# ------------------------------------------------------------------ categories fitted to the size bounds


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _fit_max_row(n: cython.longlong[::1], mx: cython.const[cython.longlong][::1], frac: cython.double[::1],
                 add: cython.longlong[::1], order: cython.longlong[::1]) -> cython.void:
    """Step 1 of ``hetplace.smp.fit_sizes`` on one row ``n`` (S,), in place; work arrays ``frac``,
    ``add`` (S,) and ``order`` (2 S,).

    Sizes above ``mx`` are clipped to it; while clipped workers are left and a
    job has room, each round gives them to the jobs with room in proportion
    to their sizes (``ideal = surplus * n_i / sum n``, 1 per job with room when
    those sizes sum to 0): ``floor(ideal)`` within the room, then one more to
    the largest fractional parts (ties to the lower job) that still have room.
    Sizes are whole, so the sums of their float64 copies are exact in any order.
    """
    S: cython.Py_ssize_t = n.shape[0]
    i: cython.Py_ssize_t
    t: cython.Py_ssize_t
    surplus: cython.longlong = 0
    room: cython.longlong
    rest: cython.longlong
    given: cython.longlong
    f: cython.longlong
    wsum: cython.double
    w: cython.double
    ideal: cython.double
    live: cython.bint
    ones: cython.bint
    for i in range(S):
        if n[i] > mx[i]:
            surplus += n[i] - mx[i]
            n[i] = mx[i]
    while surplus > 0:
        live = False
        wsum = 0.0
        for i in range(S):
            if mx[i] - n[i] > 0:
                live = True
                wsum += n[i]
        if not live:
            break
        ones = wsum == 0.0  # every job with room has size 0: weight 1 each
        if ones:
            for i in range(S):
                if mx[i] - n[i] > 0:
                    wsum += 1.0
        given = 0
        for i in range(S):
            room = mx[i] - n[i]
            w = 0.0
            if room > 0:
                w = n[i]
                if ones:
                    w = 1.0
            ideal = surplus * w / wsum
            f = cython.cast(cython.longlong, floor(ideal))
            if f > room:
                f = room
            add[i] = f
            frac[i] = ideal - floor(ideal)
            order[i] = i
            given += f
        rest = surplus - given
        _sort_desc(frac, 0, order, 0, S, S)
        for t in range(S):
            if rest <= 0:
                break
            i = order[t]
            if mx[i] - n[i] - add[i] > 0:
                add[i] += 1
                given += 1
                rest -= 1
        for i in range(S):
            n[i] += add[i]
        surplus -= given


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _fit_max_rows(out: cython.longlong[:, ::1], rows: cython.const[cython.longlong][::1],
                  mx: cython.const[cython.longlong][::1], frac: cython.double[::1], add: cython.longlong[::1],
                  order: cython.longlong[::1]) -> cython.void:
    """:func:`_fit_max_row` on the rows ``out[rows[j]]``."""
    j: cython.Py_ssize_t
    for j in range(rows.shape[0]):
        _fit_max_row(out[rows[j]], mx, frac, add, order)


# ------------------------------------------------------------------ Python entries


def _slices(threads):
    """Work slices of a driver: one per thread (<= 0: one per core)."""
    return threads if threads > 0 else (os.cpu_count() or 1)


def run_samples(rho, work, comm, cats, form, max_rounds, job_order, order_len, worker_rank,
                out_wj, out_total, out_stats, threads=1, stop=None):
    """Every category ``cats[s]`` through :func:`_market_category`; write assignment, true total JCT, counters.

    Parameters
    ----------
    rho, work, comm, form, max_rounds, job_order, order_len, worker_rank
        As :func:`_market_category`.
    cats : int64 (N, S)          the categories
    out_wj : int64 (N, K)        out: assignments
    out_total : float64 (N,)     out: true total JCTs
    out_stats : int64 (N, >= 2)  out: ``[rounds, proposals]`` in columns 0, 1
    threads : int                threads of the ``prange`` (<= 0: one per core), and
                                 work slices; Numba's thread count is set by the caller
    stop : int64 (1,), optional  a stop flag (:func:`hetplace._interrupt.new_stop`): the
                                 samples then go through the driver in batches
                                 (:func:`hetplace._core._chunks.batches`), and once
                                 ``stop[0]`` is nonzero the rest are skipped (rows left
                                 as they were; the caller discards them).  The same
                                 rows either way.
    """
    S, K = rho.shape
    T = _slices(threads)
    nf, ni = market_workspace_size(S, K)
    fws = np.empty((T, nf))
    iws = np.empty((T, ni), dtype=np.int64)
    mstats = np.zeros((T, 2), dtype=np.int64)
    for a, b in batches(cats.shape[0], T, stop):
        _run_samples(rho, work, comm, cats[a:b], form, max_rounds, job_order, order_len, worker_rank, out_wj[a:b],
                     out_total[a:b], out_stats[a:b], fws, iws, mstats, T)


def run_samples_classes(rhoC, work, comm, mc, members, cls_start, cats, max_rounds, out_wj, out_total, out_stats,
                        threads=1, stop=None):
    """Every category through :func:`_class_market`; counts expanded to workers by ``_polish.expand_counts``.

    ``members``, ``cls_start``: :func:`hetplace.smp.worker_classes`; outputs,
    ``threads`` and ``stop`` as :func:`run_samples`.
    """
    S, C = rhoC.shape
    K = out_wj.shape[1]
    T = _slices(threads)
    nf, ni = class_market_workspace_size(S, C, K)
    fws = np.empty((T, nf))
    iws = np.empty((T, ni), dtype=np.int64)
    mstats = np.zeros((T, 2), dtype=np.int64)
    cnt = np.zeros((T, 3, S, C), dtype=np.int64)
    for a, b in batches(cats.shape[0], T, stop):
        _run_samples_classes(rhoC, work, comm, mc, members, cls_start, cats[a:b], max_rounds, out_wj[a:b],
                             out_total[a:b], out_stats[a:b], fws, iws, mstats, cnt, T)


def auction_kernel(vals_t, scale, lo, caps, worker_job, job_price, stats, fws, iws):
    """Run :func:`_auction` on the (K, S) C-contiguous value matrix ``vals_t``; return its status.

    Other arguments as :func:`_auction`.
    """
    flat: cython.const[cython.double][::1] = np.ascontiguousarray(vals_t).reshape(-1)
    sc: cython.const[cython.double][::1] = scale
    cp: cython.const[cython.longlong][::1] = caps
    wj: cython.longlong[::1] = worker_job
    jp: cython.double[::1] = job_price
    st: cython.longlong[::1] = stats
    fw: cython.double[::1] = fws
    iw: cython.longlong[::1] = iws
    lo_: cython.double = lo
    status: cython.int
    with cython.nogil:
        status = _auction(flat, sc, lo_, cp, wj, jp, st, fw, iw)
    return status


def ordinal_preferences(rho):
    """``(job_order (S, K), order_len (S,), worker_rank (S, K))`` of the ordinal market, built once per problem."""
    S, K = rho.shape
    job_order = np.empty((S, K), dtype=np.int64)
    order_len = np.empty(S, dtype=np.int64)
    worker_rank = np.empty((S, K))
    job_order_kernel(rho, 0.0, job_order, order_len, np.empty(2 * K, dtype=np.int64))
    relative_rank_kernel(rho, worker_rank)
    return job_order, order_len, worker_rank


def job_order_kernel(vals: cython.const[cython.double][:, ::1], lo: cython.double, job_order: cython.longlong[:, ::1],
                     order_len: cython.longlong[::1], tmp: cython.longlong[::1]):
    """Job preference lists (:func:`_job_order`)."""
    with cython.nogil:
        _job_order(vals, lo, job_order, order_len, tmp)
    return 0


def relative_rank_kernel(rho: cython.const[cython.double][:, ::1], worker_rank: cython.double[:, ::1]):
    """Relative-speed ranks (:func:`_relative_rank`)."""
    with cython.nogil:
        _relative_rank(rho, worker_rank)
    return 0


def market_category_kernel(rho: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                           comm: cython.const[cython.double][:, ::1], sizes: cython.const[cython.longlong][::1],
                           form: cython.int, max_rounds: cython.Py_ssize_t,
                           job_order: cython.const[cython.longlong][:, ::1],
                           order_len: cython.const[cython.longlong][::1],
                           worker_rank: cython.const[cython.double][:, ::1], worker_job: cython.longlong[::1],
                           stats: cython.longlong[::1], fws: cython.double[::1], iws: cython.longlong[::1]):
    """One SMP category (:func:`_market_category`); return its true total JCT."""
    total: cython.double
    with cython.nogil:
        total = _market_category(rho, work, comm, sizes, form, max_rounds, job_order, order_len, worker_rank,
                                 worker_job, stats, fws, iws)
    return total


def class_market_kernel(rhoC: cython.const[cython.double][:, ::1], work: cython.const[cython.double][::1],
                        comm: cython.const[cython.double][:, ::1], mc: cython.const[cython.longlong][::1],
                        sizes: cython.const[cython.longlong][::1], max_rounds: cython.Py_ssize_t,
                        cnt_best: cython.longlong[:, ::1], stats: cython.longlong[::1], fws: cython.double[::1],
                        iws: cython.longlong[::1]):
    """One category on classes (:func:`_class_market`); return its true total JCT."""
    work2: cython.longlong[:, :, ::1] = np.empty((2, rhoC.shape[0], rhoC.shape[1]), dtype=np.int64)
    total: cython.double
    with cython.nogil:
        total = _class_market(rhoC, work, comm, mc, sizes, max_rounds, cnt_best, stats, fws, iws, work2[0],
                              work2[1])
    return total


def fit_max(cats, max_workers):
    """Step 1 of ``hetplace.smp.fit_sizes``: ``cats`` (int64 (N, S)) with every row fitted by :func:`_fit_max_row`.

    Returns ``cats`` itself when no size is above ``max_workers`` (int64 (S,)),
    else a new array (the caller's is never written).
    """
    over = np.flatnonzero((cats > max_workers).any(axis=1))
    if over.size == 0:
        return cats
    out = np.array(cats, dtype=np.int64, order="C")
    S = out.shape[1]
    frac = np.empty(S)
    add, order = np.empty(S, dtype=np.int64), np.empty(2 * S, dtype=np.int64)
    _fit_max_rows(out, over, max_workers, frac, add, order)
    return out
