"""Local search priced by the network topology (docs/model.md §3.13): one source, three backends.

SMP with a topology (:func:`hetplace.smp.smp_place`) improves each packed
candidate with this descent.  Unlike :mod:`hetplace._core._polish`, whose
communication depends on a job's size only, every step here is priced by
the hierarchical ring of docs/model.md §1.6: job ``i`` on ``n`` workers costs

    ``work_i / X_i + (volume_i / b_i) * 2 (n - 1) / n  (+ its restart loss)``

with ``b_i`` the bandwidth of the smallest domain (node, rack, cluster)
holding its workers.  The state of a job (size, throughput, workers per node
and per rack, distinct nodes and racks and the sums of their ids -- the one
node of a job on one node is that sum) is updated in O(1) per worker, so a
move or a swap is priced in O(1).  Neighbourhoods, in this order:

* move: one worker to another job or idle (best for each worker, first
  improving worker taken);
* swap: two workers of different jobs (or one idle) trade places;
* compound steps (only when no move or swap improves; :func:`_compound`): a
  job moves all of its workers into one node or rack (trading places with
  workers of that domain), releases its workers on one node, takes a whole
  node (releasing, keeping, or handing its other workers to the node's main
  holder), exchanges its workers with another job, or keeps only its
  workers in one node or rack.  These let a job
  leave an extra node or change its size by a node at once, which
  single-worker moves cannot do without a loss first.  The first that
  improves is taken, priced exactly from scratch.

Every accepted step lowers the total by more than ``REL_GAIN`` of it, so the
descent ends.  :func:`dp_kernel` is the node DP that gives SMP exact
candidates of a restricted space (:func:`hetplace._smp_topology.dp_candidates`).
Rules of the source: those of :mod:`hetplace._core._polish` (kernels take
typed arrays and scalars, never allocate, declare every local).
Private: inputs are trusted (built by :mod:`hetplace.smp`).
"""

from __future__ import annotations

import os

import cython
import numpy as np
from cython.parallel import prange

__all__ = ["COMPILED", "topo_polish_rows", "topo_totals", "topo_pack_rows", "pack_kernel", "topo_dp", "dp_kernel"]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

#: A step must lower the total JCT by more than this fraction of it.
REL_GAIN = cython.declare(cython.double, 1e-12)
INF = cython.declare(cython.double, float("inf"))
_GO = np.zeros(1, dtype=np.int64)
_GO.flags.writeable = False

# columns of the per-job integer state st (S, 6)
# 0 n (workers), 1 distinct nodes, 2 distinct racks, 3 sum of node ids, 4 sum of rack ids,
# 5 workers in exactly one of the job's set and its current set


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _price(jp: cython.const[cython.double][:, ::1], ji: cython.const[cython.longlong][:, ::1],
           bwn: cython.const[cython.double][::1], bwr: cython.const[cython.double][::1], top: cython.double,
           has_rack: cython.bint, i: cython.Py_ssize_t, X: cython.double, n: cython.longlong,
           nn: cython.longlong, nr: cython.longlong, nsum: cython.longlong, rsum: cython.longlong,
           mis: cython.longlong) -> cython.double:
    """Job ``i``'s cost in the given state (``jp[i]`` = work, volume, restart cost; ``ji[i]`` = min, max, running)."""
    c: cython.double
    b: cython.double
    if n == 0 or n < ji[i, 0] or n > ji[i, 1]:
        return INF
    c = jp[i, 0] / X
    if n >= 2:
        if nn == 1:
            b = bwn[nsum]
        elif has_rack and nr == 1:
            b = bwr[rsum]
        else:
            b = top
        if b < INF:
            c = c + (jp[i, 1] / b) * (2.0 * (n - 1.0) / n)
    if ji[i, 2] != 0 and mis > 0:
        c = c + jp[i, 2]
    return c


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _after(rho: cython.const[cython.double][:, ::1], jp: cython.const[cython.double][:, ::1],
           ji: cython.const[cython.longlong][:, ::1], node: cython.const[cython.longlong][::1],
           node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
           bwr: cython.const[cython.double][::1], top: cython.double, has_rack: cython.bint,
           current: cython.const[cython.longlong][::1], X: cython.double[::1], st: cython.longlong[:, ::1],
           cnt: cython.longlong[:, ::1], cntr: cython.longlong[:, ::1], i: cython.Py_ssize_t,
           r: cython.Py_ssize_t, a: cython.Py_ssize_t) -> cython.double:
    """Job ``i``'s cost once it loses worker ``r`` and gains worker ``a`` (either -1 for none)."""
    x: cython.double = X[i]
    n: cython.longlong = st[i, 0]
    nn: cython.longlong = st[i, 1]
    nr: cython.longlong = st[i, 2]
    nsum: cython.longlong = st[i, 3]
    rsum: cython.longlong = st[i, 4]
    mis: cython.longlong = st[i, 5]
    vr: cython.longlong = -1
    va: cython.longlong = -1
    qr: cython.longlong = -1
    qa: cython.longlong = -1
    if r >= 0:
        x = x - rho[i, r]
        n -= 1
        vr = node[r]
        qr = node_rack[vr]
        if current[r] == i:
            mis += 1
        else:
            mis -= 1
    if a >= 0:
        x = x + rho[i, a]
        n += 1
        va = node[a]
        qa = node_rack[va]
        if current[a] == i:
            mis -= 1
        else:
            mis += 1
    if vr != va:
        if vr >= 0 and cnt[i, vr] == 1:
            nn -= 1
            nsum -= vr
        if va >= 0 and cnt[i, va] == 0:
            nn += 1
            nsum += va
        if qr != qa:
            if qr >= 0 and cntr[i, qr] == 1:
                nr -= 1
                rsum -= qr
            if qa >= 0 and cntr[i, qa] == 0:
                nr += 1
                rsum += qa
    return _price(jp, ji, bwn, bwr, top, has_rack, i, x, n, nn, nr, nsum, rsum, mis)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _rebuild(rho: cython.const[cython.double][:, ::1], jp: cython.const[cython.double][:, ::1],
             ji: cython.const[cython.longlong][:, ::1], node: cython.const[cython.longlong][::1],
             node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
             bwr: cython.const[cython.double][::1], top: cython.double, has_rack: cython.bint,
             current: cython.const[cython.longlong][::1], wj: cython.longlong[::1], X: cython.double[::1],
             st: cython.longlong[:, ::1], cnt: cython.longlong[:, ::1], cntr: cython.longlong[:, ::1],
             cost: cython.double[::1]) -> cython.double:
    """Recompute the whole state of assignment ``wj``; return its total (restart losses included)."""
    S: cython.Py_ssize_t = X.shape[0]
    K: cython.Py_ssize_t = wj.shape[0]
    N: cython.Py_ssize_t = cnt.shape[1]
    NR: cython.Py_ssize_t = cntr.shape[1]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    v: cython.Py_ssize_t
    q: cython.Py_ssize_t
    c: cython.Py_ssize_t
    total: cython.double = 0.0
    for i in range(S):
        X[i] = 0.0
        for c in range(6):
            st[i, c] = 0
        for v in range(N):
            cnt[i, v] = 0
        for q in range(NR):
            cntr[i, q] = 0
    for k in range(K):
        i = wj[k]
        if i >= 0:
            X[i] = X[i] + rho[i, k]
            st[i, 0] += 1
            v = node[k]
            q = node_rack[v]
            if cnt[i, v] == 0:
                st[i, 1] += 1
                st[i, 3] += v
            cnt[i, v] += 1
            if cntr[i, q] == 0:
                st[i, 2] += 1
                st[i, 4] += q
            cntr[i, q] += 1
        if i != current[k]:
            if i >= 0:
                st[i, 5] += 1
            if current[k] >= 0:
                st[current[k], 5] += 1
    for i in range(S):
        cost[i] = _price(jp, ji, bwn, bwr, top, has_rack, i, X[i], st[i, 0], st[i, 1], st[i, 2], st[i, 3],
                         st[i, 4], st[i, 5])
        total = total + cost[i]
    return total


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _same(wj: cython.longlong[::1], node: cython.const[cython.longlong][::1],
          wclass: cython.const[cython.longlong][::1], k: cython.Py_ssize_t) -> cython.bint:
    """Worker ``k`` is interchangeable with worker ``k - 1`` (same node, class and job)."""
    return k > 0 and node[k] == node[k - 1] and wclass[k] == wclass[k - 1] and wj[k] == wj[k - 1]


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _runs(rho: cython.const[cython.double][:, ::1], wj: cython.const[cython.longlong][::1],
          out: cython.longlong[::1]) -> cython.bint:
    """Leave idle every worker that ``out`` gives a job it cannot run (``rho <= 0``); True.

    Compound steps move workers without looking at their rates; such a worker would price as
    a worker adding nothing and make the placement infeasible.  Idling it keeps the step's
    intent (the job takes the rest of the node; the worker is free for the next descent).
    """
    K: cython.Py_ssize_t = wj.shape[0]
    k: cython.Py_ssize_t
    for k in range(K):
        if out[k] != wj[k] and out[k] >= 0 and rho[out[k], k] <= 0.0:
            out[k] = -1
    return True


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _compound(node: cython.const[cython.longlong][::1], node_rack: cython.const[cython.longlong][::1],
              avail: cython.const[cython.uchar][::1], wj: cython.longlong[::1], st: cython.longlong[:, ::1],
              cnt: cython.longlong[:, ::1], held: cython.double[::1], i: cython.Py_ssize_t, level: cython.int,
              d: cython.longlong, out: cython.longlong[::1]) -> cython.bint:
    """Write into ``out`` the assignment after compound step ``level`` of job ``i`` on domain ``d``.

    ``level`` 0: job ``i`` holds all of its workers in node ``d``; 1: in rack ``d`` (each
    of its workers outside trades places with a worker of the domain that is not its
    own: idle first, then on a node the job already uses, then of a job spread over
    several nodes, then any; ties to the lower index); 2: it releases its workers on
    node ``d`` (to idle); 3: it takes every worker of node ``d`` and releases the rest;
    4: it takes every worker of node ``d`` and keeps the rest; 5: it takes every worker
    of node ``d`` and hands the rest, one at a time, to the job it displaced that is
    owed the most (a job is owed the workers it lost; idle when none is owed);
    6: it exchanges its workers with job ``d``; 7: it releases its workers outside rack ``d``;
    8: outside node ``d``.  False when the step is not possible or
    changes nothing.  ``held`` (S,) is scratch.
    """
    K: cython.Py_ssize_t = wj.shape[0]
    S: cython.Py_ssize_t = st.shape[0]
    k: cython.Py_ssize_t
    p: cython.Py_ssize_t
    j: cython.Py_ssize_t
    tier: cython.int
    t: cython.int
    inside: cython.bint
    other: cython.longlong
    changed: cython.bint = False
    for k in range(K):
        out[k] = wj[k]
    if level == 6:
        for k in range(K):
            if wj[k] == i:
                out[k] = d
            elif wj[k] == d:
                out[k] = i
        return True
    if level == 2:
        if cnt[i, d] >= st[i, 0]:
            return False
        for k in range(K):
            if wj[k] == i and node[k] == d:
                out[k] = -1
        return True
    if level == 7 or level == 8:
        for k in range(K):
            if wj[k] == i:
                if level == 7:
                    inside = node_rack[node[k]] == d
                else:
                    inside = node[k] == d
                if not inside:
                    out[k] = -1
        return True
    if level >= 3:
        if level == 5:
            for j in range(S):
                held[j] = 0.0
            for k in range(K):
                if node[k] == d and wj[k] >= 0 and wj[k] != i and avail[k] != 0:
                    held[wj[k]] = held[wj[k]] + 1.0
        for k in range(K):
            if node[k] == d:
                if avail[k] != 0 and wj[k] != i:
                    out[k] = i
                    changed = True
            elif wj[k] == i and level != 4:
                other = -1
                if level == 5:  # to the displaced job that lost the most and is not yet repaid
                    for j in range(S):
                        if held[j] > 0.0 and (other < 0 or held[j] > held[other]):
                            other = j
                    if other >= 0:
                        held[other] = held[other] - 1.0
                out[k] = other
        return changed
    # each worker of the job outside the domain trades places with the next partner in it:
    # tier by tier, ascending index within a tier
    k = 0
    for tier in range(4):
        for p in range(K):
            if wj[p] == i or avail[p] == 0:
                continue
            if level == 0:
                inside = node[p] == d
            else:
                inside = node_rack[node[p]] == d
            if not inside:
                continue
            if wj[p] < 0:
                t = 0
            elif cnt[i, node[p]] > 0:
                t = 1
            elif st[wj[p], 1] > 1:
                t = 2
            else:
                t = 3
            if t != tier:
                continue
            while k < K:  # the next worker of the job outside the domain
                if wj[k] == i:
                    if level == 0:
                        inside = node[k] == d
                    else:
                        inside = node_rack[node[k]] == d
                    if not inside:
                        break
                k += 1
            if k >= K:
                return changed
            out[p] = i
            out[k] = wj[p]
            changed = True
            k += 1
    while k < K:  # a worker outside the domain left without a partner: not possible
        if wj[k] == i:
            if level == 0:
                inside = node[k] == d
            else:
                inside = node_rack[node[k]] == d
            if not inside:
                return False
        k += 1
    return changed


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def topo_descent(rho: cython.const[cython.double][:, ::1], jp: cython.const[cython.double][:, ::1],
                 ji: cython.const[cython.longlong][:, ::1], node: cython.const[cython.longlong][::1],
                 node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
                 bwr: cython.const[cython.double][::1], top: cython.double, has_rack: cython.bint,
                 current: cython.const[cython.longlong][::1], avail: cython.const[cython.uchar][::1],
                 wclass: cython.const[cython.longlong][::1], capn: cython.const[cython.longlong][::1],
                 capr: cython.const[cython.longlong][::1], replacing: cython.bint,
                 compound: cython.bint, wj: cython.longlong[::1], max_steps: cython.longlong,
                 X: cython.double[::1], st: cython.longlong[:, ::1], cnt: cython.longlong[:, ::1],
                 cntr: cython.longlong[:, ::1], cost: cython.double[::1], X2: cython.double[::1],
                 st2: cython.longlong[:, ::1], cnt2: cython.longlong[:, ::1], cntr2: cython.longlong[:, ::1],
                 cost2: cython.double[::1], trial: cython.longlong[::1], best_wj: cython.longlong[::1],
                 stop: cython.const[cython.longlong][::1]) -> cython.longlong:
    """Improve ``wj`` (a feasible assignment) in place; return the steps taken (see the module docstring)."""
    S: cython.Py_ssize_t = X.shape[0]
    K: cython.Py_ssize_t = wj.shape[0]
    N: cython.Py_ssize_t = cnt.shape[1]
    NR: cython.Py_ssize_t = cntr.shape[1]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    l: cython.Py_ssize_t
    b: cython.Py_ssize_t
    a: cython.Py_ssize_t
    tb: cython.Py_ssize_t
    tl: cython.Py_ssize_t
    v: cython.Py_ssize_t
    level: cython.int
    nd: cython.Py_ssize_t
    steps: cython.longlong = 0
    improved: cython.bint
    total: cython.double
    best: cython.double
    base: cython.double
    d: cython.double
    t2: cython.double
    best_total: cython.double
    total = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr, cost)
    while steps < max_steps and stop[0] == 0:
        improved = False
        for k in range(K):
            if avail[k] == 0 or (not replacing and _same(wj, node, wclass, k)):
                continue
            a = wj[k]
            base = 0.0
            if a >= 0:
                base = _after(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, X, st, cnt, cntr,
                              a, k, -1) - cost[a]
            best = -REL_GAIN * total
            tb = -2
            tl = -1
            for b in range(-1, S):
                if b == a or (b < 0 and a < 0):
                    continue
                d = base
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d = d + (_after(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, X, st, cnt,
                                    cntr, b, -1, k) - cost[b])
                if d < best:
                    best = d
                    tb = b
                    tl = -1
            for l in range(k + 1, K):
                if avail[l] == 0 or (not replacing and _same(wj, node, wclass, l)):
                    continue
                b = wj[l]
                if b == a:
                    continue
                d = 0.0
                if a >= 0:
                    if rho[a, l] <= 0.0:
                        continue
                    d = _after(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, X, st, cnt, cntr,
                               a, k, l) - cost[a]
                if b >= 0:
                    if rho[b, k] <= 0.0:
                        continue
                    d = d + (_after(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, X, st, cnt,
                                    cntr, b, l, k) - cost[b])
                if d < best:
                    best = d
                    tb = b
                    tl = l
            if tb == -2:
                continue
            if tl >= 0:
                wj[tl] = a
            wj[k] = tb
            total = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr,
                             cost)
            steps += 1
            improved = True
            if steps >= max_steps or stop[0] != 0:
                break
        if improved or not compound or steps >= max_steps:
            if improved:
                continue
            break
        # compound steps: the first that improves, priced from scratch
        best_total = total * (1.0 - REL_GAIN)
        tb = -1
        for i in range(S):
            for level in range(9):
                if (level == 1 and not has_rack) or (level == 2 and st[i, 1] <= 1) or level == 4:
                    continue
                if (level == 7 and (not has_rack or st[i, 2] <= 1)) or (level == 8 and st[i, 1] <= 1):
                    continue
                if level == 1 or level == 7:
                    nd = NR
                elif level == 6:
                    nd = S
                else:
                    nd = N
                for v in range(nd):
                    if (level == 2 and cnt[i, v] == 0) or (level == 6 and v <= i):
                        continue
                    if (level == 8 and cnt[i, v] == 0) or (level == 7 and cntr[i, v] == 0):
                        continue
                    if level == 0 and (cnt[i, v] == st[i, 0] or capn[v] < st[i, 0]):
                        continue
                    if level == 1 and (cntr[i, v] == st[i, 0] or capr[v] < st[i, 0]):
                        continue
                    if (level == 3 or level == 5) and cnt[i, v] == capn[v]:
                        continue
                    if not _compound(node, node_rack, avail, wj, st, cnt, cost2, i, level, v, trial):
                        continue
                    if not _runs(rho, wj, trial):
                        continue
                    t2 = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, trial, X2, st2,
                                  cnt2, cntr2, cost2)
                    if t2 < best_total:  # the first improving one
                        best_total = t2
                        tb = i
                        for k in range(K):
                            best_wj[k] = trial[k]
                        break
                if tb >= 0:
                    break
            if tb >= 0:
                break
        if tb < 0:
            break
        for k in range(K):
            wj[k] = best_wj[k]
        total = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr, cost)
        steps += 1
    return steps


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def topo_ils(rho: cython.const[cython.double][:, ::1], jp: cython.const[cython.double][:, ::1],
             ji: cython.const[cython.longlong][:, ::1], node: cython.const[cython.longlong][::1],
             node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
             bwr: cython.const[cython.double][::1], top: cython.double, has_rack: cython.bint,
             current: cython.const[cython.longlong][::1], avail: cython.const[cython.uchar][::1],
             wclass: cython.const[cython.longlong][::1], capn: cython.const[cython.longlong][::1],
             capr: cython.const[cython.longlong][::1], replacing: cython.bint, compound: cython.bint,
             wj: cython.longlong[::1], max_steps: cython.longlong, pert: cython.const[cython.longlong][:, ::1],
             X: cython.double[::1], st: cython.longlong[:, ::1], cnt: cython.longlong[:, ::1],
             cntr: cython.longlong[:, ::1], cost: cython.double[::1], X2: cython.double[::1],
             st2: cython.longlong[:, ::1], cnt2: cython.longlong[:, ::1], cntr2: cython.longlong[:, ::1],
             cost2: cython.double[::1], trial: cython.longlong[::1], best_wj: cython.longlong[::1],
             keep: cython.longlong[::1], walk: cython.longlong[::1], slack: cython.double,
             patience: cython.longlong, stop: cython.const[cython.longlong][::1]) -> cython.longlong:
    """Iterated local search: :func:`topo_descent`, then ``pert.shape[0]`` kicks from the best so far.

    The first descent uses every step; the descent after each kick moves and
    swaps only (about ten microseconds at K = 64, where a pass over the
    compound steps costs tens of times more); the best is then descended once
    more with the compound steps.

    Kick ``t`` is the compound step of :func:`_compound` given by ``pert[t]`` (job
    ``pert[t, 0] % S``; kind ``pert[t, 1] % 4``: relocate into a node, take a node and
    release the rest, take a node and hand the rest over, exchange with another job;
    domain ``pert[t, 2]`` modulo the nodes or jobs), followed by a descent; the result
    replaces the best when it lowers the total by more than ``REL_GAIN`` of it,
    and the walk's start (``walk``) when it is within ``1 + slack`` of the best
    (so chains of kicks can cross a small rise); otherwise the walk goes back to
    its start.  The kicks stop after ``patience`` in a row that did not lower the
    best.  ``wj`` ends as the best; returns the steps taken in all.
    """
    S: cython.Py_ssize_t = X.shape[0]
    K: cython.Py_ssize_t = wj.shape[0]
    N: cython.Py_ssize_t = cnt.shape[1]
    t: cython.Py_ssize_t
    k: cython.Py_ssize_t
    i: cython.Py_ssize_t
    d: cython.longlong
    level: cython.int
    kind: cython.longlong
    steps: cython.longlong
    kicked: cython.bint
    idle: cython.longlong
    best: cython.double
    total: cython.double
    steps = topo_descent(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass, capn, capr,
                         replacing, compound, wj, max_steps, X, st, cnt, cntr, cost, X2, st2, cnt2, cntr2, cost2,
                         trial, best_wj, stop)
    best = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr, cost)
    # the first descent ended in a local optimum of every step unless it ran out of steps; the final
    # descent below runs only when there were kicks and a kick improved (or the first ran out)
    kicked = steps >= max_steps and pert.shape[0] > 0
    for k in range(K):
        keep[k] = wj[k]
        walk[k] = wj[k]
    idle = 0
    for t in range(pert.shape[0]):
        if stop[0] != 0 or S < 1 or idle >= patience:
            break
        idle += 1
        i = pert[t, 0] % S
        kind = pert[t, 1] % 4
        if kind == 3:
            if S < 2:
                continue
            level = 6
            d = pert[t, 2] % (S - 1)
            if d >= i:
                d += 1
        else:
            level = 0 if kind == 0 else (3 if kind == 1 else 5)
            d = pert[t, 2] % N
            if level == 0 and (capn[d] < st[i, 0] or cnt[i, d] == st[i, 0]):
                continue
        if not _compound(node, node_rack, avail, wj, st, cnt, cost2, i, level, d, trial):
            continue
        if not _runs(rho, wj, trial):
            continue
        for k in range(K):
            wj[k] = trial[k]
        steps += 1 + topo_descent(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass,
                                  capn, capr, replacing, False, wj, max_steps, X, st, cnt, cntr, cost, X2, st2,
                                  cnt2, cntr2, cost2, trial, best_wj, stop)
        total = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr, cost)
        if total < best * (1.0 - REL_GAIN):
            best = total
            kicked = True
            idle = 0
            for k in range(K):
                keep[k] = wj[k]
                walk[k] = wj[k]
        elif total <= best * (1.0 + slack):  # the walk moves on, within slack of the best
            for k in range(K):
                walk[k] = wj[k]
        else:
            for k in range(K):
                wj[k] = walk[k]
            _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, wj, X, st, cnt, cntr, cost)
    for k in range(K):
        wj[k] = keep[k]
    if kicked and stop[0] == 0:  # a kick's best, with compound steps again (the first descent's is final)
        steps += topo_descent(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass, capn,
                              capr, replacing, compound, wj, max_steps, X, st, cnt, cntr, cost, X2, st2, cnt2,
                              cntr2, cost2, trial, best_wj, stop)
    return steps


@cython.cfunc
@cython.exceptval(check=False)
def _rows_kernel(rho: cython.const[cython.double][:, ::1], jp: cython.const[cython.double][:, ::1],
                 ji: cython.const[cython.longlong][:, ::1], node: cython.const[cython.longlong][::1],
                 node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
                 bwr: cython.const[cython.double][::1], top: cython.double, has_rack: cython.bint,
                 current: cython.const[cython.longlong][::1], avail: cython.const[cython.uchar][::1],
                 wclass: cython.const[cython.longlong][::1], capn: cython.const[cython.longlong][::1],
                 capr: cython.const[cython.longlong][::1], replacing: cython.bint, compound: cython.bint,
                 out_wj: cython.longlong[:, ::1], max_steps: cython.longlong,
                 pert: cython.const[cython.longlong][:, :, ::1], out_total: cython.double[::1],
                 out_steps: cython.longlong[::1], X: cython.double[:, ::1], st: cython.longlong[:, :, ::1],
                 cnt: cython.longlong[:, :, ::1], cntr: cython.longlong[:, :, ::1], cost: cython.double[:, ::1],
                 X2: cython.double[:, ::1], st2: cython.longlong[:, :, ::1], cnt2: cython.longlong[:, :, ::1],
                 cntr2: cython.longlong[:, :, ::1], cost2: cython.double[:, ::1], trial: cython.longlong[:, ::1],
                 best_wj: cython.longlong[:, ::1], keep: cython.longlong[:, ::1], walk: cython.longlong[:, ::1],
                 slack: cython.double, patience: cython.longlong, stop: cython.const[cython.longlong][::1],
                 threads: cython.int) -> cython.void:
    j: cython.Py_ssize_t
    for j in prange(out_wj.shape[0], nogil=True, num_threads=threads, schedule="dynamic"):
        if max_steps > 0:
            out_steps[j] = topo_ils(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass,
                                    capn, capr, replacing, compound, out_wj[j], max_steps, pert[j], X[j], st[j],
                                    cnt[j], cntr[j], cost[j], X2[j], st2[j], cnt2[j], cntr2[j], cost2[j], trial[j],
                                    best_wj[j], keep[j], walk[j], slack, patience, stop)
        out_total[j] = _rebuild(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, out_wj[j], X[j],
                                st[j], cnt[j], cntr[j], cost[j])


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _take(out: cython.longlong[::1], free: cython.uchar[::1], gorder: cython.const[cython.longlong][::1],
          sstart: cython.const[cython.longlong][::1], left: cython.longlong[::1], G: cython.Py_ssize_t,
          v: cython.Py_ssize_t, g: cython.Py_ssize_t, m: cython.longlong, i: cython.longlong) -> cython.void:
    """Give job ``i`` the first ``m`` free workers of type ``g`` on node ``v`` (fastest first)."""
    p: cython.Py_ssize_t
    k: cython.Py_ssize_t
    for p in range(sstart[v * G + g], sstart[v * G + g + 1]):
        if m == 0:
            break
        k = gorder[p]
        if free[k] != 0:
            free[k] = 0
            out[k] = i
            m -= 1


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def pack_kernel(wj: cython.const[cython.longlong][::1], worker_type: cython.const[cython.longlong][::1],
                node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
                has_rack: cython.bint, avail: cython.const[cython.uchar][::1], kept: cython.const[cython.uchar][::1],
                jorder: cython.const[cython.longlong][::1], gorder: cython.const[cython.longlong][::1],
                sstart: cython.const[cython.longlong][::1], out: cython.longlong[::1], free: cython.uchar[::1],
                need: cython.longlong[:, ::1], left: cython.longlong[::1], fr: cython.longlong[::1]) -> cython.void:
    """Concrete workers for the type counts of ``wj``, topology-aware (see ``hetplace._smp_topology.pack``).

    ``kept[i]`` 1: job ``i`` keeps its workers of ``wj``; ``jorder`` the other jobs' order
    (largest first); ``gorder`` the workers by (node, type, speed descending, index) and
    ``sstart`` (N G + 1) where each (node, type) slot starts in it.
    """
    K: cython.Py_ssize_t = wj.shape[0]
    S: cython.Py_ssize_t = need.shape[0]
    G: cython.Py_ssize_t = need.shape[1]
    N: cython.Py_ssize_t = bwn.shape[0]
    NR: cython.Py_ssize_t = fr.shape[0]
    t: cython.Py_ssize_t
    i: cython.Py_ssize_t
    g: cython.Py_ssize_t
    k: cython.Py_ssize_t
    v: cython.Py_ssize_t
    q: cython.Py_ssize_t
    bv: cython.Py_ssize_t
    bq: cython.Py_ssize_t
    c: cython.longlong
    f: cython.longlong
    rest: cython.longlong
    for i in range(S):
        for g in range(G):
            need[i, g] = 0
    for k in range(K):
        out[k] = -1
        free[k] = avail[k]
        i = wj[k]
        if i >= 0:
            if kept[i] != 0:
                out[k] = i
                free[k] = 0
            else:
                need[i, worker_type[k]] += 1
    for v in range(N * G):
        left[v] = 0
    for v in range(N):
        for g in range(G):
            for t in range(sstart[v * G + g], sstart[v * G + g + 1]):
                if free[gorder[t]] != 0:
                    left[v * G + g] += 1
    for t in range(jorder.shape[0]):
        i = jorder[t]
        if kept[i] != 0:
            continue
        for g in range(G):
            c = need[i, g]
            if c == 0:
                continue
            # one node: the best-fitting (fewest free), ties to the higher bandwidth, then the lower index
            bv = -1
            for v in range(N):
                f = left[v * G + g]
                if f >= c and (bv < 0 or f < left[bv * G + g] or (f == left[bv * G + g] and bwn[v] > bwn[bv])):
                    bv = v
            if bv >= 0:
                _take(out, free, gorder, sstart, left, G, bv, g, c, i)
                left[bv * G + g] -= c
                continue
            # several nodes: inside the best-fitting rack that can hold them, else anywhere
            bq = -1
            if has_rack:
                for q in range(NR):
                    fr[q] = 0
                for v in range(N):
                    fr[node_rack[v]] += left[v * G + g]
                for q in range(NR):
                    if fr[q] >= c and (bq < 0 or fr[q] < fr[bq]):
                        bq = q
            rest = c
            while rest > 0:
                bv = -1
                for v in range(N):  # the smallest node that finishes the job
                    if bq >= 0 and node_rack[v] != bq:
                        continue
                    f = left[v * G + g]
                    if f >= rest and (bv < 0 or f < left[bv * G + g]):
                        bv = v
                if bv >= 0:
                    _take(out, free, gorder, sstart, left, G, bv, g, rest, i)
                    left[bv * G + g] -= rest
                    rest = 0
                    break
                for v in range(N):  # else the fullest node
                    if bq >= 0 and node_rack[v] != bq:
                        continue
                    f = left[v * G + g]
                    if f > 0 and (bv < 0 or f > left[bv * G + g]):
                        bv = v
                if bv < 0:
                    break  # cannot happen: the counts come from workers of these types
                f = left[bv * G + g]
                _take(out, free, gorder, sstart, left, G, bv, g, f, i)
                left[bv * G + g] = 0
                rest -= f


@cython.cfunc
@cython.exceptval(check=False)
def _pack_rows_kernel(rows: cython.const[cython.longlong][:, ::1], worker_type: cython.const[cython.longlong][::1],
                      node_rack: cython.const[cython.longlong][::1], bwn: cython.const[cython.double][::1],
                      has_rack: cython.bint, avail: cython.const[cython.uchar][::1],
                      kept: cython.const[cython.uchar][:, ::1], jorder: cython.const[cython.longlong][:, ::1],
                      gorder: cython.const[cython.longlong][::1], sstart: cython.const[cython.longlong][::1],
                      out: cython.longlong[:, ::1], free: cython.uchar[:, ::1], need: cython.longlong[:, :, ::1],
                      left: cython.longlong[:, ::1], fr: cython.longlong[:, ::1], threads: cython.int) -> cython.void:
    j: cython.Py_ssize_t
    for j in prange(rows.shape[0], nogil=True, num_threads=threads, schedule="dynamic"):
        pack_kernel(rows[j], worker_type, node_rack, bwn, has_rack, avail, kept[j], jorder[j], gorder, sstart,
                    out[j], free[j], need[j], left[j], fr[j])


def topo_pack_rows(rows, worker_type, n_types, node, node_rack, bwn, has_rack, avail, speed, kept, threads=1):
    """Pack every row of ``rows`` (int64 (R, K)): :func:`pack_kernel` in parallel; returns (R, K) int64.

    ``kept`` uint8 (R, S): the jobs of each row that keep their workers; ``speed`` (K,) orders the
    workers of a node and type (fastest first).
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    R, K = rows.shape
    S = kept.shape[1]
    G = int(n_types)
    N = bwn.shape[0]
    NR = max(int(node_rack.max()) + 1 if node_rack.size else 1, 1)
    ks = np.arange(K)
    gorder = np.lexsort((ks, -np.asarray(speed), worker_type, node)).astype(np.int64)
    sstart = np.searchsorted(node[gorder] * G + worker_type[gorder], np.arange(N * G + 1)).astype(np.int64)
    # the jobs of each row, largest first (ties to the lower index)
    sizes = np.zeros((R, S), dtype=np.int64)
    r_, k_ = np.nonzero(rows >= 0)
    np.add.at(sizes, (r_, rows[r_, k_]), 1)
    jorder = np.ascontiguousarray(np.lexsort((np.broadcast_to(np.arange(S), (R, S)), -sizes), axis=-1),
                                  dtype=np.int64)
    out = np.empty((R, K), dtype=np.int64)
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    _pack_rows_kernel(rows, np.ascontiguousarray(worker_type, dtype=np.int64),
                      np.ascontiguousarray(node_rack, dtype=np.int64), np.ascontiguousarray(bwn, dtype=np.float64),
                      bool(has_rack), np.ascontiguousarray(avail, dtype=np.uint8),
                      np.ascontiguousarray(kept, dtype=np.uint8), jorder, gorder, sstart, out,
                      np.zeros((R, K), dtype=np.uint8), np.zeros((R, S, G), dtype=np.int64),
                      np.zeros((R, N * G), dtype=np.int64), np.zeros((R, NR), dtype=np.int64), nt)
    return out


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _node_step(dp: cython.double[:, ::1], back: cython.longlong[:, ::1], how: cython.longlong[:, ::1],
               G: cython.const[cython.double][:, ::1], p: cython.Py_ssize_t, mask: cython.Py_ssize_t,
               d: cython.double, u: cython.Py_ssize_t, code: cython.longlong) -> cython.void:
    """From ``d`` (jobs ``mask`` placed before position ``p``), every subset ``A`` of the others alone
    on node ``p`` within ``u`` workers: lower ``dp[p + 1, mask | A]`` (back pointer ``mask``, ``code``)."""
    comp: cython.Py_ssize_t = (dp.shape[1] - 1) ^ mask
    A: cython.Py_ssize_t = comp
    v: cython.double
    while True:
        v = d + G[A, u]
        if v < dp[p + 1, mask | A]:
            dp[p + 1, mask | A] = v
            back[p + 1, mask | A] = mask
            how[p + 1, mask | A] = code
        if A == 0:
            break
        A = (A - 1) & comp


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _run_step(dp: cython.const[cython.double][:, ::1], a: cython.Py_ssize_t,
              h: cython.const[cython.double][:, :, ::1], r: cython.Py_ssize_t, c_lo: cython.Py_ssize_t,
              c_hi: cython.Py_ssize_t, val: cython.double[:, ::1], prev: cython.longlong[:, ::1],
              code: cython.longlong[:, ::1], row: cython.Py_ssize_t, brow: cython.Py_ssize_t) -> cython.void:
    """From every state ``dp[a, mask]``, one job not in ``mask`` takes run ``r`` with ``c`` workers
    of the next node (``c_lo <= c < c_hi``): lower ``val[row + c, mask | job]`` (``prev[brow + c, .]``
    the mask, ``code[brow + c, .]`` ``r S + job``)."""
    S: cython.Py_ssize_t = h.shape[1]
    mask: cython.Py_ssize_t
    i: cython.Py_ssize_t
    c: cython.Py_ssize_t
    nxt: cython.Py_ssize_t
    d: cython.double
    v: cython.double
    for mask in range(val.shape[1]):
        d = dp[a, mask]
        if d == INF:
            continue
        for i in range(S):
            if (mask >> i) & 1:
                continue
            nxt = mask | (1 << i)
            for c in range(c_lo, c_hi):
                v = d + h[r, i, c]
                if v < val[row + c, nxt]:
                    val[row + c, nxt] = v
                    prev[brow + c, nxt] = mask
                    code[brow + c, nxt] = r * S + i


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def dp_kernel(f: cython.const[cython.double][:, :, ::1], cap: cython.const[cython.longlong][::1],
              h: cython.const[cython.double][:, :, ::1], run_a: cython.const[cython.longlong][::1],
              run_b: cython.const[cython.longlong][::1], part: cython.bint, dp: cython.double[:, ::1],
              back: cython.longlong[:, ::1], how: cython.longlong[:, ::1], size: cython.longlong[:, :, ::1],
              tmp: cython.double[:, ::1], tback: cython.longlong[:, ::1], tprev: cython.longlong[:, ::1],
              G: cython.double[:, ::1]) -> cython.void:
    """Exact dynamic programme over the nodes in a line order and the subsets of jobs (docs/model.md §3.13).

    Position ``p`` is a node with ``cap[p]`` workers; ``f[p, i, c]`` is job ``i`` alone on ``c``
    of them (+inf where it cannot); ``h[r, i, c]`` is job ``i`` on the whole nodes of run ``r``
    (positions ``run_a[r]`` to ``run_b[r] - 1``) plus ``c`` workers of node ``run_b[r]`` (``c = 0``:
    none; then the run has two nodes or more).  Every job takes one node (several jobs may share
    it, within its capacity) or one run; ``dp[p, mask]`` is the least summed cost of the jobs of
    ``mask`` on the positions before ``p``.  Back pointers: ``back[p, mask]`` the mask before
    the step into ``p``, ``how[p, mask]`` -1 (jobs ``mask ^ back`` alone on node ``p - 1``),
    ``r S + i`` (job ``i`` on run ``r``), or ``-(2 + c)``: the jobs ``mask ^ back`` alone on node
    ``p - 1`` beside ``c`` of its workers taken by a run, whose state ``(back, c)`` has
    ``tback[(p - 1) (C + 1) + c, back] = r S + i`` and ``tprev[...]`` (the same place) the mask
    before that run.
    ``size[p, A, u]``: the workers of the highest job of ``A`` when the jobs of ``A`` are alone on
    at most ``u`` workers of node ``p`` at least cost (the rest: ``A`` without it on ``u`` less
    those).  ``part``: runs with part of a node.  ``M = 2**S`` masks; ``G`` ((M, C + 1)) and
    ``tmp`` ((C + 1, M)) are work arrays.  Cost: about ``P (C + 1) 3**S`` steps.
    """
    P: cython.Py_ssize_t = f.shape[0]
    C: cython.Py_ssize_t = f.shape[2] - 1
    R: cython.Py_ssize_t = run_a.shape[0]
    M: cython.Py_ssize_t = dp.shape[1]
    p: cython.Py_ssize_t
    r: cython.Py_ssize_t
    j: cython.Py_ssize_t
    u: cython.Py_ssize_t
    c: cython.Py_ssize_t
    c0: cython.Py_ssize_t
    A: cython.Py_ssize_t
    B: cython.Py_ssize_t
    mask: cython.Py_ssize_t
    bc: cython.longlong
    v: cython.double
    best: cython.double
    for p in range(P + 1):
        for mask in range(M):
            dp[p, mask] = INF
            back[p, mask] = -1
            how[p, mask] = -1
    dp[0, 0] = 0.0
    for p in range(P):
        c0 = cap[p]
        # G[A, u]: the least summed cost of the jobs of A alone on u workers of node p at most
        for u in range(C + 1):
            G[0, u] = 0.0
            size[p, 0, u] = 0
        for A in range(1, M):
            j = 0
            B = A
            while B > 1:
                B >>= 1
                j += 1
            B = A ^ (1 << j)
            for u in range(c0 + 1):
                best = INF
                bc = 0
                for c in range(1, u + 1):
                    v = G[B, u - c] + f[p, j, c]
                    if v < best:
                        best = v
                        bc = c
                G[A, u] = best
                size[p, A, u] = bc
            for u in range(1, c0 + 1):
                if G[A, u - 1] < G[A, u]:
                    G[A, u] = G[A, u - 1]
                    size[p, A, u] = size[p, A, u - 1]
        # a run that takes c workers of node p: its states (c, mask)
        for c in range(C + 1):
            for mask in range(M):
                tmp[c, mask] = INF
                tback[p * (C + 1) + c, mask] = -1
                tprev[p * (C + 1) + c, mask] = -1
        if part:
            for r in range(R):
                if run_b[r] == p:
                    _run_step(dp, run_a[r], h, r, 1, c0, tmp, tprev, tback, 0, p * (C + 1))
        # node p: jobs alone on it (any subset of those left), beside a run's part or not
        for mask in range(M):
            if dp[p, mask] < INF:
                _node_step(dp, back, how, G, p, mask, dp[p, mask], c0, -1)
            if part:
                for c in range(1, c0):
                    if tmp[c, mask] < INF:
                        _node_step(dp, back, how, G, p, mask, tmp[c, mask], c0 - c, -(2 + c))
        # runs of whole nodes starting at p
        for r in range(R):
            if run_a[r] == p and run_b[r] - p >= 2:
                _run_step(dp, p, h, r, 0, 1, dp, back, how, run_b[r], run_b[r])


def topo_dp(f, cap, h, run_a, run_b, part=True):
    """Run :func:`dp_kernel`; returns ``(dp, back, how, size, tback, tprev)`` (see there).

    ``f`` float64 (P, S, C + 1), ``cap`` int64 (P,), ``h`` float64 (R, S, C + 1), ``run_a`` and
    ``run_b`` int64 (R,).
    """
    f = np.ascontiguousarray(f, dtype=np.float64)
    h = np.ascontiguousarray(h, dtype=np.float64)
    P, S, C1 = f.shape
    M = 1 << S
    dp = np.empty((P + 1, M))
    back = np.empty((P + 1, M), dtype=np.int64)
    how = np.empty((P + 1, M), dtype=np.int64)
    size = np.zeros((max(P, 1), M, C1), dtype=np.int64)
    tback = np.empty((max(P, 1) * C1, M), dtype=np.int64)
    tprev = np.empty((max(P, 1) * C1, M), dtype=np.int64)
    dp_kernel(f, np.ascontiguousarray(cap, dtype=np.int64), h, np.ascontiguousarray(run_a, dtype=np.int64),
              np.ascontiguousarray(run_b, dtype=np.int64), bool(part), dp, back, how, size, np.empty((C1, M)),
              tback, tprev, np.empty((M, C1)))
    return dp, back, how, size, tback, tprev


def _model(rho, jp, ji, node, node_rack, bwn, bwr):
    """Contiguous typed copies of the model arrays (a rack array of one zero when there is none)."""
    return (np.ascontiguousarray(rho, dtype=np.float64), np.ascontiguousarray(jp, dtype=np.float64),
            np.ascontiguousarray(ji, dtype=np.int64), np.ascontiguousarray(node, dtype=np.int64),
            np.ascontiguousarray(node_rack, dtype=np.int64), np.ascontiguousarray(bwn, dtype=np.float64),
            np.ascontiguousarray(bwr if bwr is not None and len(bwr) else np.zeros(1), dtype=np.float64))


def _workspace(R, S, N, NR):
    """Work arrays of :func:`topo_descent` for ``R`` rows.

    X (R, S), st (R, S, 6), cnt (R, S, N), cntr (R, S, NR), cost (R, S).
    """
    return (np.zeros((R, S)), np.zeros((R, S, 6), dtype=np.int64), np.zeros((R, S, N), dtype=np.int64),
            np.zeros((R, S, NR), dtype=np.int64), np.zeros((R, S)))


def topo_polish_rows(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass, replacing,
                     out_wj, max_steps, compound=True, kicks=None, slack=0.0, patience=None, threads=1, stop=None):
    """Improve every row of ``out_wj`` (int64 (R, K), feasible assignments) in place, in parallel over rows.

    Parameters
    ----------
    rho : float64 (S, K)        throughput of each worker for each job (0: not allowed or down)
    jp : float64 (S, 3)         work, communication volume (``iterations * grad_bytes``), restart cost
    ji : int64 (S, 3)           min_workers, max_workers, running (0/1)
    node : int64 (K,)           node of each worker
    node_rack : int64 (N,)      rack (second-level domain) of each node
    bwn : float64 (N,)          bandwidth inside each node
    bwr : float64 (NR,) or None bandwidth inside each rack (read only when ``has_rack``)
    top : float                 bandwidth of the top level
    has_rack : bool
    current : int64 (K,)        running placement (-1 none; all -1 without restarts)
    avail : uint8 (K,)          1 for a worker that is up
    wclass : int64 (K,)         worker class (same type and speed: interchangeable)
    replacing : bool            restart losses apply (interchangeable workers are then distinct)
    out_wj : int64 (R, K)       modified in place
    max_steps : int             steps per row at most
    compound : bool             try compound steps
    kicks : int64 (R, T, 3), optional   the kicks of each row's iterated search (:func:`topo_ils`);
                                        None: none (one descent per row)
    slack : float               a kick's result within ``1 + slack`` of the best becomes the walk's
                                next start (the best is kept apart)
    patience : int, optional    a row's kicks stop after this many in a row that did not lower its
                                best (None: all of them)
    threads : int               Cython's OpenMP threads; Numba's are set by the caller
    stop : int64 (1,), optional a stop flag (:mod:`hetplace._interrupt`)

    Returns
    -------
    total : float64 (R,)        each row's total (restart losses included; inf when infeasible)
    steps : int64 (R,)
    """
    rho, jp, ji, node, node_rack, bwn, bwr = _model(rho, jp, ji, node, node_rack, bwn, bwr)
    R, K = out_wj.shape
    S = jp.shape[0]
    N = bwn.shape[0]
    NR = max(int(node_rack.max()) + 1 if node_rack.size else 1, 1)
    X, st, cnt, cntr, cost = _workspace(R, S, N, NR)
    X2, st2, cnt2, cntr2, cost2 = _workspace(R, S, N, NR)
    trial = np.zeros((R, K), dtype=np.int64)
    best_wj = np.zeros((R, K), dtype=np.int64)
    keep = np.zeros((R, K), dtype=np.int64)
    if kicks is None:
        kicks = np.zeros((R, 0, 3), dtype=np.int64)
    out_total = np.zeros(R)
    out_steps = np.zeros(R, dtype=np.int64)
    up = np.asarray(avail, dtype=bool)
    capn = np.bincount(node[up], minlength=N).astype(np.int64)
    capr = np.bincount(node_rack[node[up]], minlength=NR).astype(np.int64)
    nt = threads if threads > 0 else (os.cpu_count() or 1)
    _rows_kernel(rho, jp, ji, node, node_rack, bwn, bwr, float(top), bool(has_rack),
                 np.ascontiguousarray(current, dtype=np.int64), np.ascontiguousarray(avail, dtype=np.uint8),
                 np.ascontiguousarray(wclass, dtype=np.int64), capn, capr, bool(replacing), bool(compound), out_wj,
                 int(max_steps), np.ascontiguousarray(kicks, dtype=np.int64), out_total, out_steps, X, st, cnt, cntr,
                 cost, X2, st2, cnt2, cntr2, cost2, trial, best_wj, keep, np.zeros((R, K), dtype=np.int64),
                 float(slack), kicks.shape[1] if patience is None else int(patience),
                 _GO if stop is None else stop, nt)
    return out_total, out_steps


def topo_totals(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, out_wj):
    """Totals of every row of ``out_wj`` (int64 (R, K)) as the descent prices them (no step taken)."""
    R, K = out_wj.shape
    avail = np.ones(K, dtype=np.uint8)
    wclass = np.zeros(K, dtype=np.int64)
    return topo_polish_rows(rho, jp, ji, node, node_rack, bwn, bwr, top, has_rack, current, avail, wclass, False,
                            out_wj, 0, compound=False)[0]
