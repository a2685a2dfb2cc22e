"""Ordinal deferred acceptance from raw values (docs/model.md §3.5): one source, three backends.

The kernel of ``hetplace.deferred_acceptance(values, capacities,
form="ordinal")``: job-proposing Gale-Shapley with slots, working from the
(S, K) value matrix itself.  Nothing of size (S, K) is built outside it: no
preference-list matrix and no worker-rank matrix.  Instead

* each job's list holds its acceptable workers bucketed by value (a stable
  counting sort over as many equal-width buckets as workers: O(K) per job),
  and a bucket is sorted exactly (higher value first, ties to the lower
  worker index) only when the job's proposals reach it.  A job that
  proposes to m workers pays O(K) plus the sorts of the buckets it reaches
  instead of a full sort of its row; when the values crowd into few
  buckets, those sorts are heap sorts, O(K log K) at worst;
* a worker's rank of job i, ``rank[i, k] / div[i]``, is divided only when job
  i proposes to it, and the worker keeps the rank of the job it holds.

Job-proposing deferred acceptance makes at most S x K proposals; the result,
the job-optimal stable matching, does not depend on their order.  The order
here is the one of the former two-step kernels (job order lists, then
Gale-Shapley on them: jobs on a stack, job 0 first, a displaced job pushed
again when it regains a free slot), so the proposal counts agree too.

This module is written once, in Cython's pure-Python mode, and compiled three
ways (see :mod:`hetplace._core._source`): ``cythonize`` builds it at install
(``backend="cython"``), :func:`hetplace._core._source.load` compiles every
``@cython.cfunc`` with Numba (``backend="numba"``) and runs it as plain
Python (``backend="python"``).  Every backend does the same floating-point
operations (one division per proposal) and the same comparisons, so
assignments and counters agree bit for bit.  The rules of the source are
those of :mod:`hetplace._core._polish`: kernels take typed arrays and scalars
only, never allocate (the ``def`` entry allocates the work arrays with NumPy),
and declare every local.  Private: inputs are trusted (validated by
:mod:`hetplace.matching`).
"""

from __future__ import annotations

import cython
import numpy as np

__all__ = ["COMPILED", "ordinal_kernel", "ordinal_match"]

#: True in the extension built by ``cythonize``; False when this source runs under Numba or as Python.
COMPILED = cython.compiled

#: Narrowest half range per bucket that is spread over buckets (its inverse cannot overflow).
TINY = cython.declare(cython.double, 1e-300)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _before(vals: cython.const[cython.double][:, ::1], i: cython.Py_ssize_t, a: cython.int,
            b: cython.int) -> cython.bint:
    """Job ``i`` prefers worker ``a`` to worker ``b``: higher value, ties to the lower index.

    ``|`` and ``&`` (not ``or`` and ``and``): both sides are cheap, and no branch.
    """
    va: cython.double = vals[i, a]
    vb: cython.double = vals[i, b]
    return (va > vb) | ((va == vb) & (a < b))


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _bucket(x: cython.double, vmin: cython.double, inv: cython.double, nb: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """Bucket of value ``x``: ``floor((x / 2 - vmin / 2) * inv)`` clipped to ``nb - 1``.

    A non-decreasing function of ``x`` (IEEE halving, subtraction and
    multiplication by ``inv >= 0`` round monotonically), so a higher bucket
    never holds a lower value and equal values share a bucket; the exact
    order inside a bucket is restored by :func:`_sort_range`.  Halved, the
    difference cannot overflow, whatever the finite values.
    """
    y: cython.double = (x * 0.5 - vmin * 0.5) * inv
    b: cython.Py_ssize_t = nb - 1
    if y < b:
        b = int(y)
    return b


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _sift_down(vals: cython.const[cython.double][:, ::1], i: cython.Py_ssize_t, heap: cython.int[::1],
               base: cython.Py_ssize_t, n: cython.Py_ssize_t, t: cython.Py_ssize_t) -> cython.void:
    """Restore the max-heap order (best worker of job ``i`` on top) of ``heap[base:base + n]`` below ``t``."""
    x: cython.int = heap[base + t]
    c: cython.Py_ssize_t = 2 * t + 1
    while c < n:
        if c + 1 < n:
            c += _before(vals, i, heap[base + c + 1], heap[base + c])
        if not _before(vals, i, heap[base + c], x):
            break
        heap[base + t] = heap[base + c]
        t = c
        c = 2 * t + 1
    heap[base + t] = x


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sort_range(vals: cython.const[cython.double][:, ::1], i: cython.Py_ssize_t, a: cython.int[::1],
                s: cython.Py_ssize_t, m: cython.Py_ssize_t) -> cython.void:
    """Sort workers ``a[s:s + m]`` best first for job ``i`` (higher value, ties to the lower index).

    A run already in order (e.g. equal values, which arrive in index order)
    costs one pass; up to 16 entries an insertion sort; beyond, a heap sort:
    O(m log m) whatever the values, in place, deterministic.
    """
    t: cython.Py_ssize_t
    u: cython.Py_ssize_t
    x: cython.int
    ordered: cython.bint = True
    for t in range(1, m):
        if _before(vals, i, a[s + t], a[s + t - 1]):
            ordered = False
            break
    if ordered:
        return
    if m <= 16:
        for t in range(1, m):
            x = a[s + t]
            u = t
            while u > 0 and _before(vals, i, x, a[s + u - 1]):
                a[s + u] = a[s + u - 1]
                u -= 1
            a[s + u] = x
        return
    for t in range(m // 2 - 1, -1, -1):
        _sift_down(vals, i, a, s, m, t)
    for t in range(m - 1, 0, -1):  # the best to the back, one by one: worst first
        x = a[s]
        a[s] = a[s + t]
        a[s + t] = x
        _sift_down(vals, i, a, s, t, 0)
    t = s
    u = s + m - 1
    while t < u:  # reversed: best first
        x = a[t]
        a[t] = a[u]
        a[u] = x
        t += 1
        u -= 1


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _build_list(vals: cython.const[cython.double][:, ::1], lo: cython.double, i: cython.Py_ssize_t,
                lists: cython.int[::1], base: cython.Py_ssize_t, tmp: cython.int[::1], tmp_b: cython.int[::1],
                count: cython.int[::1], fjob: cython.double[:, ::1]) -> cython.Py_ssize_t:
    """Job ``i``'s acceptable workers into ``lists[base:]``, bucketed by value (best bucket first).

    One bucket per acceptable worker over the range of its values; workers
    keep their index order inside a bucket (a stable counting sort).  The
    buckets are sorted exactly only when the job's proposals reach them.
    Sets ``fjob[0, i]`` (lowest value), ``fjob[1, i]`` (scale) and
    ``fjob[2, i]`` (number of buckets); returns the number of acceptable workers.
    """
    K: cython.Py_ssize_t = vals.shape[1]
    k: cython.Py_ssize_t
    t: cython.Py_ssize_t
    b: cython.Py_ssize_t
    n: cython.Py_ssize_t = 0
    nb: cython.Py_ssize_t
    c: cython.int
    pos: cython.int
    x: cython.double
    vmin: cython.double = 0.0
    vmax: cython.double = 0.0
    half: cython.double
    inv: cython.double = 0.0
    for k in range(K):
        x = vals[i, k]
        if x > lo:
            if n == 0:
                vmin = x
                vmax = x
            elif x < vmin:
                vmin = x
            elif x > vmax:
                vmax = x
            tmp[n] = k
            n += 1
    nb = n
    half = vmax * 0.5 - vmin * 0.5  # half the range: finite for any finite values
    if half > 0.0 and half >= nb * TINY:  # then 0 < nb / half <= 1 / TINY
        inv = nb / half
    else:  # one value, or a range too narrow to spread: one bucket
        nb = 1
    fjob[0, i] = vmin
    fjob[1, i] = inv
    fjob[2, i] = nb
    for b in range(nb):
        count[b] = 0
    for t in range(n):
        b = _bucket(vals[i, tmp[t]], vmin, inv, nb)
        tmp_b[t] = b
        count[b] += 1
    pos = 0
    for b in range(nb - 1, -1, -1):  # offsets, highest bucket first
        c = count[b]
        count[b] = pos
        pos += c
    for t in range(n):
        b = tmp_b[t]
        lists[base + count[b]] = tmp[t]
        count[b] += 1
    return n


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def ordinal_kernel(vals: cython.const[cython.double][:, ::1], lo: cython.double,
                   rank: cython.const[cython.double][:, ::1], div: cython.const[cython.double][::1],
                   caps: cython.const[cython.longlong][::1], worker_job: cython.longlong[::1],
                   stats: cython.longlong[::1], held: cython.double[::1], lists: cython.int[::1],
                   tmp: cython.int[::1], tmp_b: cython.int[::1], count: cython.int[::1],
                   fjob: cython.double[:, ::1], ijob: cython.longlong[:, ::1]) -> cython.int:
    """Job-proposing deferred acceptance with slots; return 0 when every job filled its slots, else 1.

    Parameters
    ----------
    vals : float64 (S, K)     pair (i, k) is acceptable iff ``vals[i, k] > lo``; job i
                              prefers the higher value, ties to the lower worker index
    lo : float64
    rank : float64 (S, K)     worker k prefers job i to job j iff ``rank[i, k] / div[i] >
                              rank[j, k] / div[j]``, ties to the lower job index; read on
                              proposed pairs only (may be ``vals`` itself)
    div : float64 (S,)        per-job divisor of ``rank`` (ones: ranks as given)
    caps : int64 (S,)         slots of each job
    worker_job : int64 (K,)   out: job of every worker, -1 unmatched
    stats : int64 (2,)        out: ``[1, proposals]``
    held : float64 (K,)       work: rank of the job a worker holds
    lists : int32 (A K,)      work: a list of K entries per job with capacity (A of them)
    tmp, tmp_b : int32 (K,)   work: one job's acceptable workers and their buckets
    count : int32 (K,)        work: bucket offsets
    fjob : float64 (3, S)     work: per job, lowest value, bucket scale, buckets
    ijob : int64 (6, S)       work: per job, list block, length, next position, end
                              of the sorted part, free slots; the stack of jobs
    """
    S: cython.Py_ssize_t = vals.shape[0]
    K: cython.Py_ssize_t = vals.shape[1]
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    s: cython.Py_ssize_t
    e: cython.Py_ssize_t
    n: cython.Py_ssize_t
    nb: cython.Py_ssize_t
    b: cython.Py_ssize_t
    base: cython.Py_ssize_t
    cur: cython.Py_ssize_t
    free: cython.longlong
    top: cython.Py_ssize_t = 0
    blocks: cython.Py_ssize_t = 0
    props: cython.longlong = 0
    status: cython.int = 0
    d: cython.double
    ri: cython.double
    vmin: cython.double
    inv: cython.double
    for k in range(K):
        worker_job[k] = -1
    for i in range(S):  # ijob rows: 0 block, 1 length, 2 next, 3 sorted end, 4 free slots, 5 stack
        ijob[0, i] = -1
        ijob[1, i] = 0
        ijob[2, i] = 0
        ijob[3, i] = 0
        ijob[4, i] = caps[i]
        if caps[i] > 0:
            ijob[0, i] = blocks
            ijob[1, i] = _build_list(vals, lo, i, lists, blocks * K, tmp, tmp_b, count, fjob)
            blocks += 1
    for i in range(S - 1, -1, -1):
        if caps[i] > 0:
            ijob[5, top] = i
            top += 1
    while top > 0:
        top -= 1
        i = ijob[5, top]
        base = ijob[0, i] * K
        n = ijob[1, i]
        s = ijob[2, i]
        e = ijob[3, i]
        free = ijob[4, i]
        d = div[i]
        while free > 0 and s < n:
            if s == e:  # the next bucket: find its end, sort it
                vmin = fjob[0, i]
                inv = fjob[1, i]
                nb = int(fjob[2, i])
                b = _bucket(vals[i, lists[base + s]], vmin, inv, nb)
                e = s + 1
                while e < n and _bucket(vals[i, lists[base + e]], vmin, inv, nb) == b:
                    e += 1
                if e - s > 1:  # most buckets hold one worker: no call
                    _sort_range(vals, i, lists, base + s, e - s)
            k = lists[base + s]
            s += 1
            props += 1
            ri = rank[i, k] / d
            cur = worker_job[k]
            if cur < 0:
                worker_job[k] = i
                held[k] = ri
                free -= 1
            elif ri > held[k] or (ri == held[k] and i < cur):
                worker_job[k] = i
                held[k] = ri
                free -= 1
                ijob[4, cur] += 1  # cur != i: a job never proposes to a worker it holds
                if ijob[4, cur] == 1:
                    ijob[5, top] = cur
                    top += 1
        ijob[2, i] = s
        ijob[3, i] = e
        ijob[4, i] = free
    for i in range(S):
        if ijob[4, i] > 0:
            status = 1
    stats[0] = 1
    stats[1] = props
    return status


def ordinal_match(vals: cython.const[cython.double][:, ::1], lo: cython.double,
                  rank: cython.const[cython.double][:, ::1], div: cython.const[cython.double][::1],
                  caps: cython.const[cython.longlong][::1], worker_job: cython.longlong[::1],
                  stats: cython.longlong[::1]):
    """Run :func:`ordinal_kernel` with work arrays allocated here; return its status (0 or 1).

    ``vals``, ``rank`` (S, K) and ``div`` (S,) float64, ``caps`` (S,) int64 with
    ``sum(caps) <= K``; ``worker_job`` (K,) and ``stats`` (2,) int64 are written.
    """
    S = vals.shape[0]
    K = vals.shape[1]
    A = int(np.count_nonzero(np.asarray(caps)))
    held: cython.double[::1] = np.empty(K)
    lists: cython.int[::1] = np.empty(max(A, 1) * K, dtype=np.int32)
    tmp: cython.int[:, ::1] = np.empty((3, K), dtype=np.int32)
    fjob: cython.double[:, ::1] = np.empty((3, S))
    ijob: cython.longlong[:, ::1] = np.empty((6, S), dtype=np.int64)
    status: cython.int
    with cython.nogil:
        status = ordinal_kernel(vals, lo, rank, div, caps, worker_job, stats, held, lists, tmp[0], tmp[1], tmp[2],
                                fjob, ijob)
    return status
