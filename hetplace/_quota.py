"""Tenant quotas per GPU type (docs/model.md §1.7): validation, feasibility and usage (private).

A job ``i`` belongs to tenant ``tenant[i]`` (-1: none), and the jobs of tenant ``t``
together hold at most ``quota[t, g]`` workers of type ``g`` (``inf``: no limit).  This
module is the one home of that rule on the Python side: :class:`hetplace.Problem`
validates through :func:`quota_iv`, every method and checker reads the usage through
:func:`quota_usage` / :func:`quota_violation`, and the search keeps within
:func:`quota_room`.
"""

import math
from collections import deque

import numpy as np

from ._validation import as_real_array
from .errors import InvalidProblemError

__all__ = ["quota_iv", "quota_flow", "quota_counts", "hall_fits", "HALL_MAX_TYPES", "quota_usage", "quota_violation",
           "quota_room", "MAX_TENANTS"]

#: Most tenants a problem may have (rows of ``quota``).
MAX_TENANTS = 100_000


def _tenant_iv(tenant, S, T, job_names):
    raw = as_real_array(tenant, "tenant", what="integer tenant indices (-1: none)",
                        shape_text=f"one tenant index per job, shape ({S},)", error=InvalidProblemError)
    if raw.ndim == 0:
        raw = np.full(S, raw)
    if raw.shape != (S,):
        raise InvalidProblemError(
            f"tenant must have one entry per job, shape ({S},); got shape {raw.shape}. Use -1 for a job of no tenant."
        )
    arr = np.asarray(raw, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)) | (arr < -1) | (arr >= max(T, 0)))
    if bad.size:
        i = int(bad[0])
        fix = (f"use 0..{T - 1} (a row of quota) or -1 for none" if T > 0
               else "use -1 for none, or give quota with a row per tenant")
        raise InvalidProblemError(
            f"tenant[{i}] = {raw.tolist()[i]!r} (job {job_names[i]!r}) is not a tenant index: {fix}."
        )
    return arr.astype(np.int64)


def _quota_table_iv(quota, G, type_names):
    raw = as_real_array(quota, "quota", what="numbers of workers (inf: no limit)",
                        shape_text=f"one row per tenant and one column per type, shape (n_tenants, {G})",
                        error=InvalidProblemError)
    if raw.ndim != 2 or raw.shape[1] != G or raw.shape[0] < 1:
        raise InvalidProblemError(
            f"quota must have one row per tenant and one column per type, shape (n_tenants, {G}); "
            f"got shape {raw.shape}."
        )
    if raw.shape[0] > MAX_TENANTS:
        raise InvalidProblemError(f"quota has {raw.shape[0]:,} rows; at most {MAX_TENANTS:,} tenants are supported.")
    q = np.asarray(raw, dtype=np.float64)
    bad = np.argwhere(np.isnan(q) | (q < 0) | (np.isfinite(q) & (q != np.round(q))))
    if bad.size:
        t, g = (int(v) for v in bad[0])
        raise InvalidProblemError(
            f"quota[{t}, {g}] = {raw.tolist()[t][g]!r} (tenant {t}, type {type_names[g]!r}) must be a whole number "
            "of workers >= 0, or inf for no limit."
        )
    return q


def quota_flow(allowed, capacity, demand, tenant, cap):
    """Whether every job can get ``demand[i]`` workers of its allowed types within capacities and quotas.

    A max-flow from the jobs (supply ``demand``) through (tenant, type) nodes
    (capacity ``cap[t, g]``; a job of no tenant goes straight to its types) to
    the types (capacity ``capacity``): a greedy first fill, then breadth-first
    augmenting paths (Edmonds-Karp).

    Parameters
    ----------
    allowed : ndarray of bool, shape (S, G)
    capacity : ndarray of int64, shape (G,)
    demand : ndarray of int64, shape (S,)
    tenant : ndarray of int64, shape (S,)
    cap : ndarray of int64, shape (T, G)
        The quota, capped at the capacity (no ``inf``).

    Returns
    -------
    ndarray of int64 or None
        None when every demand is met; else the jobs reached from a short job
        in the residual graph (a set whose demand the capacities and quotas
        cannot meet together).
    """
    return _max_flow(allowed, capacity, demand, tenant, cap)[0]


def quota_counts(allowed, capacity, demand, tenant, cap, order=None):
    """(S, G) int64: workers of each type meeting every job's ``demand`` within capacities and quotas, or None.

    The flow of :func:`quota_flow`; ``order`` (S, G), when given, lists each
    job's types in the order the greedy first fill tries them (e.g. fastest
    first).  None when no such counts exist.
    """
    short, flow = _max_flow(allowed, capacity, demand, tenant, cap, order)
    return flow if short is None else None


def _max_flow(allowed, capacity, demand, tenant, cap, order=None):
    """``(short, flow)`` of :func:`quota_flow` and :func:`quota_counts` (one max-flow)."""
    S, G = allowed.shape
    T = cap.shape[0]
    # nodes: 0 source, 1..S jobs, then T*G (tenant, type), then G types, then the sink
    J0, Q0 = 1, 1 + S
    Y0 = Q0 + T * G
    sink = Y0 + G
    n = sink + 1
    adj = [[] for _ in range(n)]
    to, capv = [], []

    def edge(a, b, c):
        adj[a].append(len(to))
        to.append(b)
        capv.append(int(c))
        adj[b].append(len(to))
        to.append(a)
        capv.append(0)

    job_edge = []
    for i in range(S):
        edge(0, J0 + i, demand[i])
        t = int(tenant[i])
        for g in (range(G) if order is None else order[i].tolist()):
            if allowed[i, g]:
                job_edge.append((i, g, len(to)))
                edge(J0 + i, (Q0 + t * G + g) if t >= 0 else (Y0 + g), demand[i])
    for t in range(T):
        for g in range(G):
            if cap[t, g] > 0:
                edge(Q0 + t * G + g, Y0 + g, cap[t, g])
    for g in range(G):
        edge(Y0 + g, sink, capacity[g])
    need = int(np.sum(demand))
    got = _greedy_fill(adj, to, capv, 0, sink)
    while got < need:
        prev = [-1] * n
        prev[0] = -2
        dq = deque([0])
        while dq and prev[sink] == -1:
            a = dq.popleft()
            for e in adj[a]:
                b = to[e]
                if capv[e] > 0 and prev[b] == -1:
                    prev[b] = e
                    dq.append(b)
        if prev[sink] == -1:
            seen = np.array([prev[J0 + i] != -1 for i in range(S)], dtype=bool)
            return np.flatnonzero(seen), None
        amount, b = need - got, sink
        while b != 0:
            e = prev[b]
            amount = min(amount, capv[e])
            b = to[e ^ 1]
        b = sink
        while b != 0:
            e = prev[b]
            capv[e] -= amount
            capv[e ^ 1] += amount
            b = to[e ^ 1]
        got += amount
    flow = np.zeros((S, G), dtype=np.int64)
    for i, g, e in job_edge:
        flow[i, g] = capv[e ^ 1]  # the flow on an edge is its reverse edge's residual capacity
    return None, flow


def _greedy_fill(adj, to, capv, source, sink):
    """Push flow along the first open path of every job (depth-first, no backtracking); returns the flow pushed.

    Most instances are met here; the breadth-first augmentations then only fix the rest.
    """
    got = 0
    ptr = [0] * len(adj)  # current arc: forward edges before it are saturated (greedy never frees one)
    for e0 in adj[source]:
        if e0 & 1:
            continue
        while capv[e0] > 0:
            path, a = [e0], to[e0]
            while a != sink:
                arcs, p = adj[a], ptr[a]
                while p < len(arcs) and (arcs[p] & 1 or capv[arcs[p]] <= 0):
                    p += 1
                ptr[a] = p
                if p < len(arcs):
                    path.append(arcs[p])
                    a = to[arcs[p]]
                    continue
                if len(path) == 1:  # a dead end at the job itself
                    break
                path.pop()  # retreat: the arc into a dead end is dead for this fill
                a = to[path[-1]]
                ptr[a] += 1
            if a != sink:
                break
            amount = min(capv[e] for e in path)
            for e in path:
                capv[e] -= amount
                capv[e ^ 1] += amount
            got += amount
    return got


#: Up to this many types :func:`hall_fits` is cheaper than a max-flow (2**G sums); hetplace.Session's
#: admission checks it first.
HALL_MAX_TYPES = 12


def hall_fits(mask, demand, capacity):
    """Whether jobs of usable-type bit masks ``mask`` and minima ``demand`` all fit ``capacity`` (G,).

    Gale's condition for a transportation problem: for every set U of types, the minima of the
    jobs that can use only types of U are at most the workers of U.  The sums over subsets are a
    zeta transform, O(G 2**G) whatever the number of jobs.
    """
    G = capacity.size
    need = np.bincount(mask, weights=demand, minlength=1 << G)
    have = np.zeros(1 << G)
    for g in range(G):
        have[1 << g] = capacity[g]
    for g in range(G):  # subset sums: every U collects its subsets (need) and its types (have)
        bit = 1 << g
        idx = np.flatnonzero(np.arange(1 << G) & bit)
        need[idx] += need[idx ^ bit]
        have[idx] += have[idx ^ bit]
    return bool((need <= have + 0.5).all())


def quota_iv(tenant, quota, rho, up_counts, min_workers, job_names, type_names, check=True):
    """Validate ``tenant`` and ``quota`` of a Problem; return ``(tenant (S,) int64, quota (T, G) float64)``.

    ``(None, None)`` when neither is given.  ``tenant`` without ``quota`` means
    tenants without limits (every quota ``inf``).  Raises
    :class:`~hetplace.errors.InvalidProblemError` for a bad value, or when no
    placement gives every job its ``min_workers`` within the quotas (checked
    unless ``check`` is False: a caller that has checked it already).
    """
    S, G = rho.shape
    if tenant is None and quota is None:
        return None, None
    if tenant is None:
        raise InvalidProblemError(
            "quota is given but tenant is not: give tenant=[...] (the tenant index of each job, -1 for none), "
            "or drop quota."
        )
    if quota is None:
        t = _tenant_iv(tenant, S, MAX_TENANTS, job_names)
        q = np.full((max(int(t.max()) + 1, 1), G), math.inf)
    else:
        q = _quota_table_iv(quota, G, type_names)
        t = _tenant_iv(tenant, S, q.shape[0], job_names)
    allowed = (rho > 0) & (up_counts > 0)[None, :]
    capped = np.minimum(q, up_counts[None, :].astype(np.float64)).astype(np.int64)
    mine = t >= 0
    if check and mine.any():
        room = (allowed[mine] * capped[t[mine]]).sum(axis=1)
        bad = np.flatnonzero(room < min_workers[mine])
        if bad.size:
            i = int(np.flatnonzero(mine)[bad[0]])
            raise InvalidProblemError(
                f"job {job_names[i]!r} (tenant {int(t[i])}) needs min_workers = {int(min_workers[i])}, but its "
                f"tenant's quota leaves it only {int(room[bad[0]])} usable workers of the types it can run on. "
                "Raise the tenant's quota, lower the job's min_workers, or leave the job out."
            )
        short = quota_flow(allowed, up_counts, min_workers, t, capped)
        if short is not None:
            names = ", ".join(repr(job_names[j]) for j in short[:8]) + (", ..." if short.size > 8 else "")
            raise InvalidProblemError(
                f"no placement gives every job its min_workers within the quotas: jobs {names} need "
                f"{int(min_workers[short].sum())} workers together, more than their tenants' quotas and the "
                "available workers of their types allow. Raise those quotas, lower the minima, or leave jobs out."
            )
    return t, q


def quota_usage(tenant, n_tenants, worker_job, worker_type, n_types):
    """(T, G) int64: workers of each type held by each tenant's jobs in ``worker_job``."""
    busy = worker_job >= 0
    t = tenant[worker_job[busy]]
    mine = t >= 0
    out = np.zeros(n_tenants * n_types, dtype=np.int64)
    np.add.at(out, t[mine] * n_types + worker_type[busy][mine], 1)
    return out.reshape(n_tenants, n_types)


def quota_violation(problem, worker_job):
    """The first ``(tenant, type, used, quota)`` that ``worker_job`` exceeds, or None (also without quotas)."""
    if problem.tenant is None:
        return None
    used = quota_usage(problem.tenant, problem.n_tenants, np.asarray(worker_job), problem.worker_type,
                       problem.n_types)
    over = np.argwhere(used > problem.quota)
    if not over.size:
        return None
    t, g = (int(v) for v in over[0])
    return t, g, int(used[t, g]), problem.quota[t, g]


def quota_room(problem, worker_job):
    """(T, G) int64: workers of each type each tenant may still take in ``worker_job`` (never below 0)."""
    used = quota_usage(problem.tenant, problem.n_tenants, np.asarray(worker_job), problem.worker_type,
                       problem.n_types)
    return np.maximum(problem.quota_cap - used, 0)
