"""Type dynamic programme over "workers used per type" (docs/model.md §4.2) -- Numba kernel.

Kernel: inputs are trusted (validated by :mod:`hetplace.exact`); no checks here.
Compiled lazily on first call and cached on disk (``cache=True``).
"""
import numba as nb
from ._jit import JIT
from ._source import load
import numpy as np

#: The one job-cost function of the compiled core, as Numba compiles it (``_polish.job_cost``).
_POLISH = load("_polish", "numba")
job_cost = _POLISH.job_cost
comm_is_spec = _POLISH.comm_is_spec

__all__ = ["type_dp", "POLL_STATES"]

#: Target states between two looks at the stop flag (a few microseconds of DP).
POLL_STATES = 256


@nb.njit(**JIT)
def _next_digits(digits, radix):
    """Count the mixed-radix number ``digits`` (digit 0 least significant) up by one, in place."""
    g = 0
    while g < digits.shape[0]:
        digits[g] += 1
        if digits[g] < radix[g]:
            return
        digits[g] = 0
        g += 1


@nb.njit(**JIT)
def type_dp(rho, work, size_cost, radix, penalty, keep, stop):
    """Minimum total JCT (restart losses included) over type-count matrices, with the argmin.

    Parameters
    ----------
    rho : ndarray of float64, shape (S, G)
        Throughput of job ``i`` on one worker of type ``g`` (0 = cannot run).
    work : ndarray of float64, shape (S,)
        ``iterations * batch`` of every job.
    size_cost : ndarray of float64, shape (S, 3) or (S, K + 1)
        Communication time of job ``i`` by size, ``inf`` for sizes it cannot
        use: ``Problem.size_cost_spec`` or ``Problem.size_cost``
        (``_polish.job_cost`` reads either).
    radix : ndarray of int64, shape (G,)
        ``type_counts + 1``: the mixed radix of the state index (type 0 is
        the least significant digit).
    penalty : ndarray of float64, shape (S,)
        Restart loss of every job (``Problem.restart_cost``: 0 for new jobs),
        paid by every vector except ``keep[i]``.
    keep : ndarray of int64, shape (S,)
        Mixed-radix index of job ``i``'s current type counts when it may keep
        exactly its current workers (``Problem.can_keep``), else -1.
    stop : ndarray of int64, shape (1,)
        Stop flag (:func:`hetplace._interrupt.new_stop`), polled every
        :data:`POLL_STATES` target states: once nonzero the DP returns
        with the jobs it has finished.

    Returns
    -------
    total : float
        Smallest total JCT (``inf`` if no feasible placement).
    choice : ndarray of int64, shape (S,)
        Mixed-radix index of the type-count vector given to each job.
    done : int
        Jobs whose stage finished: ``S``, or fewer when ``stop`` ended the
        DP (``total`` is then ``inf`` and ``choice`` all -1).
    prefix : float
        ``min_s f_{done-1}(s)``: the smallest total JCT of jobs
        ``0..done-1`` alone on the cluster (0 when ``done == 0``), a lower
        bound on their part of any placement's total.

    Notes
    -----
    State ``s`` = workers of each type used by jobs ``0..i``; the recursion is
    ``f_i(s) = min_{0 < y <= s} f_{i-1}(s - y) + cost_i(y)`` with
    ``cost_i(y) = work_i / sum_g y_g rho_ig + size_cost_i(sum_g y_g)`` (``inf`` when
    ``y`` uses a type the job cannot run on or more workers than it can use),
    plus ``penalty_i`` unless ``y == keep_i`` (docs/model.md §1.4: the vector
    of its current counts is the one that lets a job keep its workers; a zero
    penalty is never added, so without restarts the values are unchanged).  Digit-wise ``y <= s`` means
    ``index(s - y) = index(s) - index(y)`` (no borrows), so predecessors are
    found by subtraction.  Work is ``S * prod_g (m_g+1)(m_g+2)/2`` transitions;
    memory is one int32 back-pointer per (job, state).  Ties keep the first
    ``y`` in index order, so results are deterministic.
    """
    S, G = rho.shape
    spec = comm_is_spec(size_cost)
    n_states = 1
    for g in range(G):
        n_states *= radix[g]
    stride = np.empty(G, dtype=np.int64)
    acc = 1
    for g in range(G):
        stride[g] = acc
        acc *= radix[g]

    f = np.full(n_states, np.inf)
    f[0] = 0.0
    nxt = np.empty(n_states)
    back = np.empty((S, n_states), dtype=np.int32)
    cost = np.empty(n_states)
    d = np.zeros(G, dtype=np.int64)  # digits of the target state s
    e = np.zeros(G, dtype=np.int64)  # digits of the job's vector y

    done = S
    for i in range(S):
        if stop[0] != 0:
            done = i
            break
        # cost of every type-count vector y for job i
        for g in range(G):
            e[g] = 0
        for y in range(n_states):
            X = 0.0
            n = 0
            ok = True
            for g in range(G):
                if e[g] > 0:
                    if rho[i, g] <= 0.0:
                        ok = False
                    X += e[g] * rho[i, g]
                    n += e[g]
            if ok and n > 0:
                cost[y] = job_cost(work, size_cost, spec, i, X, n)
                if penalty[i] != 0.0 and y != keep[i]:
                    cost[y] += penalty[i]
            else:
                cost[y] = np.inf
            _next_digits(e, radix)

        # transitions: for every target state s, every y <= s digit-wise
        for g in range(G):
            d[g] = 0
        for s in range(n_states):
            if s % POLL_STATES == 0 and stop[0] != 0:
                break
            best = np.inf
            arg = -1
            for g in range(G):
                e[g] = 0
            y = 0
            while True:
                if y > 0:
                    v = f[s - y] + cost[y]
                    if v < best:
                        best = v
                        arg = y
                g = 0
                while g < G:
                    if e[g] < d[g]:
                        e[g] += 1
                        y += stride[g]
                        break
                    y -= e[g] * stride[g]
                    e[g] = 0
                    g += 1
                if g == G:
                    break
            nxt[s] = best
            back[i, s] = arg
            _next_digits(d, radix)
        if stop[0] != 0:  # stage i unfinished: f is still f_{i-1}
            done = i
            break
        for s in range(n_states):
            f[s] = nxt[s]

    best_s = 0
    for s in range(1, n_states):
        if f[s] < f[best_s]:
            best_s = s
    if done < S:
        return np.inf, np.full(S, -1, dtype=np.int64), done, f[best_s]
    total = f[best_s]
    choice = np.full(S, -1, dtype=np.int64)
    if total < np.inf:
        s = best_s
        for i in range(S - 1, -1, -1):
            y = back[i, s]
            choice[i] = y
            s -= y
    return total, choice, S, total
