"""Pricing kernel of the configuration-LP lower bound (docs/model.md §4.8) -- Numba.

Kernel: inputs are trusted (validated and built by :mod:`hetplace.bound`); no checks here.
Compiled lazily on first call and cached on disk (``cache=True``).

For one job with work ``a``, per-worker rates ``r_c > 0`` on its usable classes,
capacities ``m_c``, class prices ``pi_c >= 0`` and size range ``[lo, hi]``, the
pricing problem is ``min_n a / (r . n) + comm(N) + pi . n`` over integer count
vectors ``n`` (``0 <= n <= m``, ``N = sum n`` in ``[lo, hi]``).  For a fixed size
N and any ``lam > 0``, ``a / X >= 2 sqrt(a lam) - lam X`` (the tangent of the
convex ``a / X``), so

    D_N(lam) = 2 sqrt(a lam) + min { (pi - lam r) . n : sum n = N, 0 <= n <= m }

is a lower bound of every count vector of size N (integer or not).  The inner
minimum is a greedy fill of the N cheapest units of ``pi_c - lam r_c``.  The
kernel maximises ``D_N`` over ``lam`` by bisection on the sign of its
superderivative ``sqrt(a / lam) - X(lam)`` (every evaluated ``lam`` is valid:
the bound never depends on the search converging), prunes sizes by two
size-wise lower bounds, and returns the minimum over sizes, together with the
best INTEGER count vector it met (the greedy fills on both sides of the
optimal ``lam`` and the vectors between them), priced exactly.
"""
import math

import numba as nb
import numpy as np

from ._jit import JIT

__all__ = ["price_jobs", "BISECTION_STEPS", "MAX_WALK", "MAX_REFINES", "MAX_SCAN"]

#: Bisection steps on ``log(lam)`` per size (the bracket's ratio is at most
#: ``(r_max / r_min)**2``; 40 halvings leave it within a factor 1 + 1e-9 or so).
BISECTION_STEPS = 40
#: Most integer vectors evaluated on the walk between the two greedy fills of one size.
MAX_WALK = 64
#: Most sizes per job refined by the bisection; beyond, a size's bound is its cheap one.
MAX_REFINES = 64
#: Most sizes per job scanned; the sizes above are covered by one tail bound.
MAX_SCAN = 4096


@nb.njit(**JIT)
def _comm(coef, N):
    if N <= 1:
        return 0.0
    return coef * 2.0 * (N - 1.0) / N


@nb.njit(**JIT)
def _greedy(r, pi, m, N, lam, n_out, v, order):
    """Fill ``n_out`` with the N cheapest units of ``pi - lam r``; return (X, P).

    ``v`` and ``order`` are scratch arrays of the class count (no allocation:
    this is the innermost call).  Selection, not a sort: the cheapest class left
    is taken whole until N units are in, O(C) per class used; ties go to the
    lower class index.
    """
    C = r.size
    for c in range(C):
        v[c] = pi[c] - lam * r[c]
        n_out[c] = 0
    left = N
    X = 0.0
    P = 0.0
    while left > 0:
        c = -1
        for t in range(C):
            if v[t] < np.inf and (c < 0 or v[t] < v[c]):
                c = t
        if c < 0:
            break
        v[c] = np.inf
        k = m[c] if m[c] < left else left
        n_out[c] = k
        left -= k
        X += k * r[c]
        P += k * pi[c]
    return X, P


@nb.njit(**JIT)
def _value(a, coef, r, pi, n):
    """Exact pricing value ``a / (r . n) + comm(N) + pi . n`` of an integer vector."""
    X = 0.0
    P = 0.0
    N = 0
    for c in range(r.size):
        X += n[c] * r[c]
        P += n[c] * pi[c]
        N += n[c]
    return a / X + _comm(coef, N) + P


@nb.njit(**JIT)
def _dual(a, X, P, lam):
    """``D(lam)`` for the fill with throughput X and price P: ``2 sqrt(a lam) + P - lam X``."""
    return 2.0 * math.sqrt(a * lam) + P - lam * X


@nb.njit(**JIT)
def _refine(a, coef, r, pi, m, N, rmin, rmax, nL, nH, walk, best_n, best, v, order):
    """max over lam of D_N(lam) + comm(N), and that lam; updates ``best_n``/``best[0]`` with integer vectors met.

    ``D_N`` is concave and piecewise ``2 sqrt(a lam) + P_k - lam X_k`` (one piece per greedy
    fill).  The bracket [lam_lo, lam_hi] keeps a fill nL whose superderivative
    ``sqrt(a / lam) - X`` is >= 0 and a fill nH where it is <= 0; the next query is where their
    two pieces meet (a cutting-plane step, exact after finitely many pieces), or the geometric
    midpoint when that is not strictly inside.  Every evaluated ``D_N(lam)`` is a valid bound.
    """
    lam_lo = a / (N * rmax) ** 2  # X(lam) <= N rmax: superderivative >= 0 here
    lam_hi = a / (N * rmin) ** 2  # X(lam) >= N rmin: superderivative <= 0 here
    XL, PL = _greedy(r, pi, m, N, lam_lo, nL, v, order)
    XH, PH = _greedy(r, pi, m, N, lam_hi, nH, v, order)
    top = _dual(a, XL, PL, lam_lo)
    lam_top = lam_lo
    d = _dual(a, XH, PH, lam_hi)
    if d > top:
        top, lam_top = d, lam_hi
    for _ in range(BISECTION_STEPS):
        if XH - XL <= 1e-12 * XH:
            # one fill on [lam_lo, lam_hi]: D is 2 sqrt(a lam) + P - lam X there, maximal at a / X^2
            lam = min(max(a / (XL * XL), lam_lo), lam_hi)
            d = _dual(a, XL, PL, lam)
            if d > top:
                top, lam_top = d, lam
            break
        lam = (PH - PL) / (XH - XL)  # where the pieces of nL and nH meet
        if not (lam_lo < lam < lam_hi):
            lam = math.sqrt(lam_lo * lam_hi)
        X, P = _greedy(r, pi, m, N, lam, walk, v, order)
        d = _dual(a, X, P, lam)
        if d > top:
            top, lam_top = d, lam
        line = _dual(a, XL, PL, lam)
        if d >= line - 1e-12 * abs(line):
            # D meets both pieces here: the maximum lies on one of them, next to lam
            for k in range(2):
                Xk = XL if k == 0 else XH
                lc = a / (Xk * Xk)
                lc = min(max(lc, lam_lo), lam) if k == 0 else min(max(lc, lam), lam_hi)
                X2, P2 = _greedy(r, pi, m, N, lc, walk, v, order)
                d = _dual(a, X2, P2, lc)
                if d > top:
                    top, lam_top = d, lc
            break
        if math.sqrt(a / lam) > X:
            lam_lo = lam
            nL[:] = walk
            XL, PL = X, P
        else:
            lam_hi = lam
            nH[:] = walk
            XH, PH = X, P
        if lam_hi <= lam_lo * (1.0 + 1e-12):
            break
    # integer vectors: both greedy fills, and the walk from nL towards nH one unit at a time
    # (slowest unit of nL's surplus to the fastest of nH's), priced incrementally
    C = r.size
    cnt = 0
    for c in range(C):
        if nL[c] != nH[c]:
            order[cnt] = c
            cnt += 1
    walk[:] = nL
    X = 0.0
    P = 0.0
    for c in range(C):
        X += nL[c] * r[c]
        P += nL[c] * pi[c]
    cm = _comm(coef, N)
    for step in range(MAX_WALK + 1):
        val = a / X + cm + P
        if val < best[0]:
            best[0] = val
            best_n[:] = walk
        dn = -1
        up = -1
        for t in range(cnt):
            c = order[t]
            if walk[c] > nH[c] and (dn < 0 or r[c] < r[dn]):
                dn = c
            if walk[c] < nH[c] and (up < 0 or r[c] > r[up]):
                up = c
        if dn < 0 or up < 0:
            break
        walk[dn] -= 1
        walk[up] += 1
        X += r[up] - r[dn]
        P += pi[up] - pi[dn]
    val = _value(a, coef, r, pi, nH)
    if val < best[0]:
        best[0] = val
        best_n[:] = nH
    return top + _comm(coef, N), lam_top


@nb.njit(**JIT)
def price_jobs(r_all, a_all, coef_all, lo_all, hi_all, m_all, pi_all, start, out_lb, out_n, out_val, out_size):
    """Lower bounds of every job's pricing minimum, and its best integer vector.

    Parameters
    ----------
    r_all : ndarray of float64, shape (S, C)
        Per-worker rate of job ``i`` on class ``c`` (0: unusable).
    a_all, coef_all : ndarray of float64, shape (S,)
        Work ``T_i Pi_i`` and communication coefficient ``T_i D_i / r``.
    lo_all, hi_all : ndarray of int64, shape (S,)
        Size range of each job.
    m_all : ndarray of int64, shape (C,)
        Class capacities.
    pi_all : ndarray of float64, shape (C,)
        Class prices (>= 0).
    start : ndarray of int64, shape (S,)
        Size to try first (last round's best size; any value is valid).
    out_lb : ndarray of float64, shape (S,)
        Lower bound of ``min_n a/(r.n) + comm(N) + pi.n`` (restart excluded).
    out_n : ndarray of int64, shape (S, C)
        Best integer vector met; ``out_val`` its exact value; ``out_size`` the
        size of the smallest lower bound.
    """
    S, Ctot = r_all.shape
    for i in range(S):
        cnt = 0
        for c in range(Ctot):
            if r_all[i, c] > 0.0 and m_all[c] > 0:
                cnt += 1
        idx = np.empty(cnt, dtype=np.int64)
        cnt = 0
        for c in range(Ctot):
            if r_all[i, c] > 0.0 and m_all[c] > 0:
                idx[cnt] = c
                cnt += 1
        r = r_all[i, idx]
        pi = pi_all[idx]
        m = m_all[idx]
        a = a_all[i]
        coef = coef_all[i]
        cap = m.sum()
        lo = lo_all[i]
        hi = min(hi_all[i], cap)
        out_n[i, :] = 0
        if lo > hi or cnt == 0:
            out_lb[i] = np.inf
            out_val[i] = np.inf
            out_size[i] = 0
            continue
        rmin = r.min()
        rmax = r.max()
        v = np.empty(cnt)
        order = np.empty(cnt, dtype=np.int64)
        nL = np.empty(cnt, dtype=np.int64)
        nH = np.empty(cnt, dtype=np.int64)
        walk = np.empty(cnt, dtype=np.int64)
        best_n = np.zeros(cnt, dtype=np.int64)
        best = np.array([np.inf])
        N0 = min(max(start[i], lo), hi)
        U, lam_prev = _refine(a, coef, r, pi, m, N0, rmin, rmax, nL, nH, walk, best_n, best, v, order)
        bestN = N0
        lam_ref = a / (max(best_n.sum(), 1) * 1.0) ** 2
        Xb = 0.0
        for c in range(cnt):
            Xb += best_n[c] * r[c]
        if Xb > 0:
            lam_ref = a / (Xb * Xb)
        # prefix walkers: units of pi - lam_ref r ascending; of r descending; of pi ascending
        vr = pi - lam_ref * r
        ov = np.argsort(vr, kind="mergesort")
        orr = np.argsort(-r, kind="mergesort")
        op = np.argsort(pi, kind="mergesort")
        root_ref = 2.0 * math.sqrt(a * lam_ref)
        pv, tv, uv = 0.0, 0, 0  # prefix of v, class position, units used of it
        px, tx, ux = 0.0, 0, 0  # Xmax(N)
        pp, tp, up_ = 0.0, 0, 0  # Pmin(N)
        # Xmax(hi): the hi fastest usable workers
        xtot = 0.0
        left = hi
        for t in range(cnt):
            k = m[orr[t]] if m[orr[t]] < left else left
            xtot += k * r[orr[t]]
            left -= k
        refines = 0
        scanned = 0
        for N in range(1, hi + 1):
            # advance each walker by one unit
            while uv >= m[ov[tv]]:
                tv += 1
                uv = 0
            pv += vr[ov[tv]]
            uv += 1
            while ux >= m[orr[tx]]:
                tx += 1
                ux = 0
            px += r[orr[tx]]
            ux += 1
            while up_ >= m[op[tp]]:
                tp += 1
                up_ = 0
            pp += pi[op[tp]]
            up_ += 1
            if N < lo:
                continue
            cm = _comm(coef, N)
            crude1 = cm + root_ref + pv
            crude2 = cm + a / px + pp
            crude = crude1 if crude1 > crude2 else crude2
            if crude < U and N != N0:
                # one tangent at the last refined size's best lam: near-tight, one greedy fill
                X3, P3 = _greedy(r, pi, m, N, lam_prev, walk, v, order)
                d3 = cm + 2.0 * math.sqrt(a * lam_prev) + P3 - lam_prev * X3
                if d3 > crude:
                    crude = d3
            if crude < U and N != N0:
                if refines < MAX_REFINES:
                    refines += 1
                    val, lam_prev = _refine(a, coef, r, pi, m, N, rmin, rmax, nL, nH, walk, best_n, best, v, order)
                    if crude > val:
                        val = crude
                else:
                    val = crude  # a valid bound of this size too
                if val < U:
                    U = val
                    bestN = N
            if N == hi:
                break
            # every larger size N' pays at least comm(N) + Pmin(N) + a / Xmax(hi): stop once that is >= U
            tail = cm + pp + a / xtot
            if tail >= U:
                break
            scanned += 1
            if scanned >= MAX_SCAN:
                U = min(U, tail)  # sizes above N: covered by the tail bound
                break
            # the next unit's price at lam_ref is >= 0: crude1 never falls again (comm grows too)
            if crude1 >= U:
                t2, u2 = tv, uv
                while t2 < cnt and u2 >= m[ov[t2]]:
                    t2 += 1
                    u2 = 0
                if t2 >= cnt or vr[ov[t2]] >= 0.0:
                    break
        out_lb[i] = U
        out_val[i] = best[0]
        out_size[i] = bestN
        for c in range(cnt):
            out_n[i, idx[c]] = best_n[c]
