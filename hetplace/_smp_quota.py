"""Tenant quotas in SMP's search (private; docs/model.md §3.14).

Everything here runs only when a quota binds (``problem.has_quota``): :mod:`hetplace.smp`
and :mod:`hetplace._smp_topology` call :func:`quota_sizes` (a job's usable size within
its tenant's quota) and :func:`quota_finish` (the best rows repaired and descended
within the quotas); without a binding quota SMP never imports this module, so its
placements stay bit for bit those of the quota-blind search.
"""

import numpy as np

from ._cost import aggregate, comm_cost_at, job_time, price
from ._quota import quota_counts
from ._rows import best_distinct_rows

__all__ = ["quota_sizes", "quota_finish", "QuotaSearch"]

#: Rows made quota-feasible and descended by :func:`quota_finish`: the best distinct ones by total.
QUOTA_ROWS = 16

#: Above this many representatives (:class:`QuotaSearch`) a step tries moves only, no swaps.
QUOTA_SWAP_REPS = 384

#: Up to this many representatives a step also tries the two chains through the idle pool
#: (a job takes a worker and releases one of its own; a job gives a worker and takes an idle one).
QUOTA_CHAIN_REPS = 96

#: With a topology, a step prices exactly (whole rows through ``_cost.price``) the steps that
#: the size-priced deltas rank best, this many, in batches of at most QUOTA_PRICE_CELLS cells.
QUOTA_EXACT_TOP = 128
QUOTA_PRICE_CELLS = 2**21

#: Steps of one quota descent at most (repair and improvement together).
QUOTA_MAX_STEPS = 20_000

#: Up to this K * S every budget of the quota search is full (the sizes measured against proven
#: optima).  Above it (docs/model.md §3.14, "At scale"): the quota-aware greedy placement joins
#: the starts, one row is descended, and its improvement takes at most QUOTA_LARGE_STEPS_PER_JOB
#: steps per job.  Measured (Gavel instance seed 3, four tenants capped at 80 % of an equal share
#: of the V100s): K = 1,024, S = 64 from 3.3 s to 0.65 s at 0.035 % above the lower bound (was
#: 0.031 %); K = 4,096, S = 256 from 24.7 s to 4.0 s at 0.003 % (was 0.003 %).
QUOTA_SMALL = 1024
QUOTA_LARGE_STEPS_PER_JOB = 4

#: With a topology, compound steps (a job into a node, two jobs exchanging) descended per sweep
#: round from the best row (:meth:`QuotaSearch.sweep`).
QUOTA_SWEEP = 24


def quota_sizes(problem):
    """(S,) int64: the most workers each job can hold within its tenant's quota and its ``max_workers``.

    A job of tenant ``t`` can hold at most ``sum_g quota_cap[t, g]`` over the
    types it can run on; a job of no tenant is bounded by ``max_workers`` only.
    """
    cap = problem.max_workers.astype(np.int64).copy()
    if problem.tenant is None:
        return cap
    mine = np.flatnonzero(problem.tenant >= 0)
    allowed = (problem.throughput[mine] > 0) & (problem.available_counts > 0)[None, :]
    room = (allowed * problem.quota_cap[problem.tenant[mine]]).sum(axis=1)
    cap[mine] = np.minimum(cap[mine], room)
    return cap


class QuotaSearch:
    """Best-improvement local search that repairs quota excess and then never breaks a quota.

    The state is one assignment ``worker_job`` (K,).  Workers that no step can
    tell apart (same holder, class, current job and, with a topology, node)
    are represented by their lowest index.  Steps: a **move** (a worker to
    another job or idle), a **swap** (two workers of different holders trade
    places) and two **chains through the idle pool** (a job takes a worker
    from another job and releases one of its own; a job gives a worker to
    another job and takes an idle one), which let a job trade a worker of a
    type its tenant has used up for one of another type in one step.  A step
    is chosen lexicographically on (change of the quota excess, change of the
    total): while some tenant holds more workers of a type than its quota,
    the step that removes the most excess at the least cost (a repair); once
    none does, the step that lowers the total most without creating any
    excess.  A chosen move is repeated on its group's next workers while it
    still pays.  A step that leaves a job outside its size bounds or without
    workers is never taken (its cost is inf).  Deterministic: ties go to the
    first candidate (moves, then swaps, then the chains; representatives in
    key order; target jobs ascending, idle first).

    Parameters
    ----------
    problem : Problem
        With tenants (``problem.tenant`` not None).
    exact : bool
        False: steps priced by per-job deltas ``work / X + comm(n)`` with
        restart losses, exact for a size-priced model (the flat ring).  True
        (a topology): the :data:`QUOTA_EXACT_TOP` steps those deltas rank best
        are priced exactly as whole rows by :func:`hetplace._cost.price`, and
        :meth:`sweep` adds compound steps.
    """

    def __init__(self, problem, exact=False):
        p = self.p = problem
        self.S, self.K = p.n_jobs, p.n_workers
        self.class_of = p.worker_classes[2]
        self.C = int(p.worker_classes[1].size - 1)
        self.up = np.flatnonzero(p.available)
        self.wtype = p.worker_type
        self.tenant = np.append(p.tenant, p.n_tenants)  # job -1 (idle) -> the extra row of no tenant
        self.tenant[self.tenant < 0] = p.n_tenants
        big = np.iinfo(np.int64).max // 4
        self.cap = np.vstack([p.quota_cap, np.full((1, p.n_types), big, dtype=np.int64)])
        self.cur = p.current if p.replacing else None
        self.node = p.topology.node if (exact and p.topology is not None) else None
        self.exact = exact
        self.jobs = np.arange(self.S)
        self.steps = 0

    # --- the state of one assignment
    def _state(self, wj):
        p, S = self.p, self.S
        X, n = aggregate(p, wj)
        busy = wj >= 0
        U = np.zeros((p.n_tenants + 1) * p.n_types, dtype=np.int64)
        np.add.at(U, self.tenant[wj[busy]] * p.n_types + self.wtype[busy], 1)
        U = U.reshape(p.n_tenants + 1, p.n_types)
        if self.cur is not None:
            moved = wj != self.cur
            d = (np.bincount(wj[moved & (wj >= 0)], minlength=S)
                 + np.bincount(self.cur[moved & (self.cur >= 0)], minlength=S))
        else:
            d = np.zeros(S, dtype=np.int64)
        f = self._cost(self.jobs, X, n, d)
        excess = int(np.maximum(U[:-1] - self.cap[:-1], 0).sum())
        if self.exact:
            total = price(p, wj).total
        else:
            total = float(f.sum())
        return X, n, d, U, f, excess, total

    def _cost(self, jobs, X, n, d):
        """Time of ``jobs`` at summed throughput ``X`` and size ``n`` plus the restart loss at difference ``d``.

        Size-priced: with a topology, the communication at the top level's
        bandwidth (the flat model of docs/model.md §1.6, an upper bound).
        """
        p = self.p
        comm = None
        if p.topology is not None:
            comm = comm_cost_at(p, jobs, n, np.full(np.shape(jobs), p.topology.bandwidth))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = job_time(p, jobs, X, n, comm=comm)
        t = np.where(n > 0, t, np.inf)
        if self.cur is not None:
            t = t + np.where(p.running[jobs] & (d > 0), p.restart_cost[jobs], 0.0)
        return t

    def _reps(self, wj):
        """The representatives: lowest-indexed worker of every (holder, class, current, node) group."""
        up, S = self.up, self.S
        key = (wj[up] + 1) * self.C + self.class_of[up]
        if self.cur is not None:
            key = key * (S + 1) + self.cur[up] + 1
        if self.node is not None:
            key = key * (int(self.node.max()) + 1) + self.node[up]
        order = np.argsort(key, kind="stable")
        ks = key[order]
        first = np.ones(ks.size, dtype=bool)
        first[1:] = ks[1:] != ks[:-1]
        return up[order[first]]

    # --- one step
    def _candidates(self, wj, X, n, d, U, f):
        """Every legal step from ``wj`` and its change of the quota excess.

        Returns a dict: ``reps`` (R,) the representatives, ``h`` their
        holders, ``rate`` (R, S) every job's rate on each, ``cur`` their
        current jobs; ``mv = (r, b, dE)``, representative ``r`` to job ``b``
        (-1: idle); ``sw = (r1, r2, A, B, gB, lB, dE)``, pair steps: ``r1``
        leaves ``A`` for ``B`` (when ``gB``) or idle, ``r2`` joins ``A`` from
        ``B`` (when ``lB``) or from idle.
        """
        p, S = self.p, self.S
        reps = self._reps(wj)
        R = reps.size
        h = wj[reps]
        rate = p._class_rates(reps).T  # (R, S): every job's rate on every representative
        g = self.wtype[reps]
        cur = self.cur[reps] if self.cur is not None else np.full(R, -2)
        over = U > self.cap  # (T+1, G)
        full = U >= self.cap
        # moves: representative r to job b (b = -1: idle)
        b = np.arange(-1, S)
        bsafe = np.maximum(b, 0)
        ok = (b[None, :] != h[:, None]) & ((b[None, :] < 0) | (rate[:, bsafe] > 0))
        ta, tb = self.tenant[h], self.tenant[b]
        dE = np.where(ta[:, None] == tb[None, :], 0,
                      full[tb[None, :], g[:, None]].astype(np.int64) - over[ta, g][:, None])
        mv_r, mv_b = np.nonzero(ok)
        mv_dE = dE[mv_r, mv_b]
        mv_b = b[mv_b]
        # pair steps (r1, r2, A, B, gB, lB): r1 leaves A for B (gB) or idle, r2 joins A, leaving B (lB) or idle
        parts = []
        if R <= QUOTA_SWAP_REPS:
            # swaps: r1 and r2 trade places (one of them may be idle)
            r1, r2 = np.triu_indices(R, 1)
            a1, a2 = h[r1], h[r2]
            ok = a1 != a2
            ok &= (a1 < 0) | (rate[r2, np.maximum(a1, 0)] > 0)
            ok &= (a2 < 0) | (rate[r1, np.maximum(a2, 0)] > 0)
            same = (self.class_of[reps[r1]] == self.class_of[reps[r2]]) & (cur[r1] == cur[r2])
            if self.node is not None:
                same &= self.node[reps[r1]] == self.node[reps[r2]]
            ok &= ~same
            one = np.ones(int(ok.sum()), dtype=bool)
            parts.append((r1[ok], r2[ok], a1[ok], a2[ok], one, one))
        if R <= QUOTA_CHAIN_REPS:
            busy = np.flatnonzero(h >= 0)
            # replace: job A takes r2 from job B and releases its own r1 to idle
            r1, r2 = (v.ravel() for v in np.meshgrid(busy, busy, indexing="ij"))
            ok = (h[r1] != h[r2]) & (rate[r2, np.maximum(h[r1], 0)] > 0)
            r1, r2 = r1[ok], r2[ok]
            parts.append((r1, r2, h[r1], h[r2], np.zeros(r1.size, dtype=bool), np.ones(r1.size, dtype=bool)))
            # push: job A gives r1 to job B and takes the idle r2
            idle = np.flatnonzero(h < 0)
            r1, r2, bb = (v.ravel() for v in np.meshgrid(busy, idle, np.arange(S), indexing="ij"))
            ok = (bb != h[r1]) & (rate[r2, np.maximum(h[r1], 0)] > 0) & (rate[r1, bb] > 0)
            r1, r2, bb = r1[ok], r2[ok], bb[ok]
            parts.append((r1, r2, h[r1], bb, np.ones(r1.size, dtype=bool), np.zeros(r1.size, dtype=bool)))
        if parts:
            r1, r2, A, B, gB, lB = (np.concatenate(v) for v in zip(*parts))
        else:
            r1 = r2 = A = B = np.zeros(0, dtype=np.int64)
            gB = lB = np.zeros(0, dtype=bool)
        # change of the quota excess: the four (tenant, type) cells the step touches, merged where they coincide
        T1 = U.shape[1]
        tA, tB, g1, g2 = self.tenant[A], self.tenant[B], g[r1], g[r2]
        cells = np.stack([tA * T1 + g1, tA * T1 + g2, tB * T1 + g1, tB * T1 + g2], axis=1)
        moves = np.stack([-np.ones(A.size, dtype=np.int64), np.ones(A.size, dtype=np.int64),
                          gB.astype(np.int64), -lB.astype(np.int64)], axis=1)
        Uf, capf = U.ravel(), self.cap.ravel()
        net = (moves[:, None, :] * (cells[:, :, None] == cells[:, None, :])).sum(axis=2)
        first = np.ones(cells.shape, dtype=bool)
        for q in range(1, 4):
            first[:, q] = (cells[:, :q] != cells[:, q:q + 1]).all(axis=1)
        before = np.maximum(Uf[cells] - capf[cells], 0)
        after = np.maximum(Uf[cells] + net - capf[cells], 0)
        sw_dE = ((after - before) * first).sum(axis=1)
        return dict(reps=reps, h=h, rate=rate, cur=cur, mv=(mv_r, mv_b, mv_dE), sw=(r1, r2, A, B, gB, lB, sw_dE))

    def _deltas_flat(self, c, X, n, d, f, mv_sel, sw_sel):
        """Change of the total of the selected moves and pair steps, from per-job deltas (size-priced model)."""
        with np.errstate(invalid="ignore"):  # inf - inf (a job leaving its size bounds): nan, never chosen
            return self._deltas_flat_(c, X, n, d, f, mv_sel, sw_sel)

    def _deltas_flat_(self, c, X, n, d, f, mv_sel, sw_sel):
        h, rate, cur = c["h"], c["rate"], c["cur"]
        mv_r, mv_b, _ = c["mv"]
        r, bb = mv_r[mv_sel], mv_b[mv_sel]
        a = h[r]
        r1, r2, A, B, gB, lB, _ = c["sw"]
        r1, r2, A, B, gB, lB = r1[sw_sel], r2[sw_sel], A[sw_sel], B[sw_sel], gB[sw_sel], lB[sw_sel]
        # the four sides priced in one call: a move's giving job a (none when the worker was idle) and
        # receiving job b (none when it goes idle), a pair step's jobs A and B (either may be idle)
        sa, sb, s1, s2 = np.maximum(a, 0), np.maximum(bb, 0), np.maximum(A, 0), np.maximum(B, 0)
        jobs = np.concatenate([sa, sb, s1, s2])
        Xn = np.concatenate([X[sa] - rate[r, sa], X[sb] + rate[r, sb],
                             X[s1] - rate[r1, s1] + rate[r2, s1],
                             X[s2] + np.where(gB, rate[r1, s2], 0.0) - np.where(lB, rate[r2, s2], 0.0)])
        nn = np.concatenate([n[sa] - 1, n[sb] + 1, n[s1], n[s2] + gB - lB])
        dn = np.concatenate([d[sa] + np.where(cur[r] == a, 1, -1), d[sb] + np.where(cur[r] == bb, -1, 1),
                             d[s1] + np.where(cur[r1] == A, 1, -1) + np.where(cur[r2] == A, -1, 1),
                             d[s2] + gB * np.where(cur[r1] == B, -1, 1) + lB * np.where(cur[r2] == B, 1, -1)])
        g = self._cost(jobs, Xn, nn, dn) - f[jobs]
        g[np.concatenate([a, bb, A, B]) < 0] = 0.0
        M, W = a.size, A.size
        return np.concatenate([g[:M] + g[M:2 * M], g[2 * M:2 * M + W] + g[2 * M + W:]])

    def _apply_pair(self, rows, at, reps, r1, r2, A, B, gB):
        """Write pair steps into ``rows[at]`` (the workers of representatives ``r1``, ``r2``)."""
        rows[at, reps[r1]] = np.where(gB, B, -1)
        rows[at, reps[r2]] = A

    def _deltas_exact(self, c, wj, total, mv_sel, sw_sel):
        """Change of the total of the selected steps, each priced as a whole row (any model)."""
        reps = c["reps"]
        mv_r, mv_b, _ = c["mv"]
        r1, r2, A, B, gB, lB, _ = c["sw"]
        M, W = int(mv_sel.size), int(sw_sel.size)
        out = np.empty(M + W)
        step = max(1, QUOTA_PRICE_CELLS // max(self.K, 1) // 4)
        for lo in range(0, M + W, step):
            idx = np.arange(lo, min(lo + step, M + W))
            rows = np.repeat(wj[None, :], idx.size, axis=0)
            m = idx < M
            im, iw = mv_sel[idx[m]], sw_sel[idx[~m] - M]
            rows[np.flatnonzero(m), reps[mv_r[im]]] = mv_b[im]
            self._apply_pair(rows, np.flatnonzero(~m), reps, r1[iw], r2[iw], A[iw], B[iw], gB[iw])
            pr = price(self.p, rows, totals=False)
            t = pr.jct.sum(axis=1)
            t[(pr.n == 0).any(axis=1)] = np.inf
            with np.errstate(invalid="ignore"):  # inf - inf from a row without a finite total: nan, never chosen
                out[idx] = t - total
        return out

    def descend(self, wj, max_steps=QUOTA_MAX_STEPS, repair_only=False):
        """Repair, then improve ``wj`` (int64 (K,), changed in place); returns its final quota excess.

        A repair step lowers the excess (the most it can, then at the least
        cost); when none is possible, a step that lowers the total without
        raising the excess is taken instead (so the walk cannot cycle: the
        excess never grows and between two repairs the total only falls).
        Stops at a quota-feasible local optimum (``repair_only``: as soon as
        the row is within the quotas), when stuck, or after ``max_steps`` steps.
        """
        while self.steps < max_steps:
            X, n, d, U, f, excess, total = self._state(wj)
            if repair_only and excess == 0:
                return 0
            c = self._candidates(wj, X, n, d, U, f)
            nm = c["mv"][2].size
            allE = np.concatenate([c["mv"][2], c["sw"][6]])
            best = None
            if excess > 0:
                best = self._pick(c, wj, X, n, d, f, total, allE, np.flatnonzero(allE < 0), nm, repair=True)
            if best is None:
                best = self._pick(c, wj, X, n, d, f, total, allE, np.flatnonzero(allE == 0), nm, repair=False)
            if best is None:
                return excess
            reps = c["reps"]
            if best < nm:
                k, b = int(reps[c["mv"][0][best]]), int(c["mv"][1][best])
                repair = excess > 0 and allE[best] < 0
                self._repeat(wj, k, b, repair, excess, total, max_steps)
            else:
                r1, r2, A, B, gB, _, _ = c["sw"]
                s = best - nm
                wj[reps[r1[s]]] = B[s] if gB[s] else -1
                wj[reps[r2[s]]] = A[s]
                self.steps += 1
        return self._state(wj)[5]

    def _repeat(self, wj, k, b, repair, excess, total, max_steps):
        """Move worker ``k`` to job ``b``, then its group's next workers while the same move still pays.

        The group: the workers of ``k``'s holder with its class, current job
        and node.  A repeated repair must lower the excess again at a finite
        total; a repeated improvement must lower the total by the threshold
        without creating any excess.  (The class polish repeats its steps the
        same way, docs/model.md §3.8.)
        """
        a = wj[k]
        group = (self.class_of == self.class_of[k]) & self.p.available
        if self.cur is not None:
            group &= self.cur == self.cur[k]
        if self.node is not None:
            group &= self.node == self.node[k]
        wj[k] = b
        self.steps += 1
        while self.steps < max_steps:
            more = np.flatnonzero(group & (wj == a))
            if not more.size:
                return
            trial = wj.copy()
            trial[more[0]] = b
            state = self._state(trial)
            e, t = state[5], state[6]
            ok = (e < excess and np.isfinite(t)) if repair else (e == 0 and t < total - 1e-12 * abs(total))
            if not ok:
                return
            wj[more[0]] = b
            excess, total = e, t
            self.steps += 1

    def _compound(self, wj):
        """Compound steps of a topology from ``wj``, as rows ((M, K) int64), best immediate total first.

        Job ``j`` moves into node ``v`` (its own workers there first, then idle
        ones, then other jobs' workers, fastest first), at its size and at the
        most it can hold there, handing its other workers to the jobs it
        displaced (one each, when they can run on one) or releasing them; two jobs exchange
        their worker sets; three jobs rotate theirs.  A row may exceed a quota (the descent that follows
        repairs it); rows are ranked by (excess, exact total), ties by order.
        """
        p, S, node = self.p, self.S, self.node
        n = np.bincount(wj[wj >= 0], minlength=S)
        rows = []
        rate = p._class_rates(self.up)  # (S, |up|)
        vnode = node[self.up]
        for j in range(S):
            own = wj == j
            for v in range(int(node.max()) + 1):
                m = (vnode == v) & (rate[j] > 0)
                ws = self.up[m]
                if not ws.size:
                    continue
                held = wj[ws]
                pri = np.where(held == j, 0, np.where(held < 0, 1, 2))
                ws = ws[np.lexsort((ws, -rate[j][m], pri))]
                for size in sorted({int(n[j]), min(int(ws.size), int(p.max_workers[j]))}):
                    if 1 <= size <= ws.size:
                        row = wj.copy()
                        row[own] = -1
                        taken = ws[:size]
                        row[taken] = j
                        # each job displaced takes one of j's released workers it can run on, lowest first
                        free = np.flatnonzero(own & (row < 0)).tolist()
                        for i in wj[taken][(wj[taken] >= 0) & (wj[taken] != j)].tolist():
                            for t, k in enumerate(free):
                                if p.throughput[i, self.wtype[k]] > 0:
                                    row[k] = i
                                    del free[t]
                                    break
                        rows.append(row)
        for j in range(S):
            for j2 in range(j + 1, S):
                row = wj.copy()
                row[wj == j] = j2
                row[wj == j2] = j
                rows.append(row)
                for j3 in range(j2 + 1, S):  # three jobs rotating their worker sets, both ways
                    for x, y, z in ((j, j2, j3), (j, j3, j2)):
                        row = wj.copy()
                        row[wj == x], row[wj == y], row[wj == z] = y, z, x
                        rows.append(row)
        if not rows:
            return np.zeros((0, self.K), dtype=np.int64)
        rows = np.array(rows, dtype=np.int64)
        busy = rows >= 0
        js = np.maximum(rows, 0)
        rows = rows[(~busy | (p.throughput[js, self.wtype[None, :]] > 0)).all(axis=1)]
        if not len(rows):
            return rows
        G = p.n_types
        cell = (self.tenant[rows] * G + self.wtype[None, :]).ravel()
        used = np.zeros((len(rows), (p.n_tenants + 1) * G), dtype=np.int64)
        np.add.at(used, (np.repeat(np.arange(len(rows)), self.K), cell), 1)
        used = used.reshape(len(rows), p.n_tenants + 1, G)[:, :-1]
        excess = np.maximum(used - self.cap[None, :-1], 0).sum(axis=(1, 2))
        pr = price(p, rows, totals=False)
        tot = pr.jct.sum(axis=1)
        tot[(pr.n == 0).any(axis=1)] = np.inf
        keep = np.flatnonzero(np.isfinite(tot) | (excess > 0))
        order = keep[np.lexsort((keep, tot[keep], excess[keep]))]
        return rows[order]

    def sweep(self, wj, total, tries=QUOTA_SWEEP, rounds=3):
        """Kick-and-descend walk from the compound steps of ``wj`` (in place); returns the new total.

        Each round, the ``tries`` best compound rows (:meth:`_compound`) of the
        walk's position are repaired and descended.  The best feasible result
        becomes the walk's next position, even when it is worse (the second
        step of a rearrangement often costs first), unless it was visited
        before; ``wj`` ends as the best row seen.  At most ``rounds`` rounds.
        """
        start, seen = wj.copy(), {wj.tobytes()}
        for _ in range(rounds):
            nxt, nxt_t = None, np.inf
            for row in self._compound(start)[:tries]:
                row = row.copy()
                if self.descend(row) != 0:
                    continue
                t = price(self.p, row).total
                if t < total - 1e-12 * abs(total):
                    wj[:], total = row, t
                if row.tobytes() not in seen and t < nxt_t:
                    nxt, nxt_t = row, t
            if nxt is None:
                break
            start = nxt
            seen.add(nxt.tobytes())
        return total

    def _pick(self, c, wj, X, n, d, f, total, allE, sel, nm, repair):
        """Index (moves first, then swaps) of the chosen step among ``sel``, or None."""
        if not sel.size:
            return None
        mv_sel, sw_sel = sel[sel < nm], sel[sel >= nm] - nm
        delta = self._deltas_flat(c, X, n, d, f, mv_sel, sw_sel)
        if self.exact:
            # a topology: the QUOTA_EXACT_TOP steps best by the size-priced deltas are priced exactly
            top = np.flatnonzero(np.isfinite(delta))
            top = np.sort(top[np.lexsort((top, delta[top]))[:QUOTA_EXACT_TOP]])  # moves first, as sel
            sel = sel[top]
            if not sel.size:
                return None
            mv_sel, sw_sel = sel[sel < nm], sel[sel >= nm] - nm
            delta = self._deltas_exact(c, wj, total, mv_sel, sw_sel)
        ok = np.isfinite(delta)
        if not repair:
            ok &= delta < -1e-12 * abs(total)
        if not ok.any():
            return None
        cand = np.flatnonzero(ok)
        # lexicographic: the largest drop of the excess, then the least change of the total, then the first
        first = cand[np.lexsort((cand, delta[cand], allE[sel[cand]]))[0]]
        return int(sel[first])


def _quota_counts(problem):
    """(S, G) int64: workers of each type giving every job its ``min_workers`` within capacities and quotas.

    The max-flow of :func:`hetplace._quota.quota_counts`, its greedy first fill trying each
    job's fastest types first.  Problem validation guarantees that it exists.
    """
    p = problem
    allowed = (p.throughput > 0) & (p.available_counts > 0)[None, :]
    order = np.argsort(-p.throughput, axis=1, kind="stable")
    return quota_counts(allowed, p.available_counts, p.min_workers, p.tenant, p.quota_cap, order)


def _quota_start(problem):
    """(K,) int64: a quota-feasible assignment with every job at its ``min_workers`` (fastest workers first)."""
    from .baselines import assign_counts

    return assign_counts(problem, _quota_counts(problem))


def _quota_budget(K, S):
    """(rows descended, compound steps per sweep round) of :func:`quota_finish` for K workers, S jobs.

    All of :data:`QUOTA_ROWS` and :data:`QUOTA_SWEEP` up to ``K S =``
    :data:`QUOTA_SMALL` and K = 32 (the instances measured against proven
    optima); above, one row (the best of the repaired rows and greedy's, see
    :func:`quota_finish`) and a third of the sweep, where a step's candidates
    grow as ``(S C)^2``.
    """
    rows = QUOTA_ROWS if K * S <= QUOTA_SMALL else 1
    tries = QUOTA_SWEEP if K <= 32 else max(1, QUOTA_SWEEP // 3)
    return rows, tries


def quota_finish(problem, out_wj, out_total, starts=(), limit=None):
    """Quota-feasible rows from SMP's results: repaired, then descended within the quotas (docs/model.md §3.14).

    The ``limit`` (default :func:`_quota_budget`) best distinct finite rows of
    ``out_wj`` and of each ``(rows, totals)`` pair of ``starts`` (results
    before the quota-blind polish or search, which tends to pull every row to
    the same infeasible optimum) are repaired by :class:`QuotaSearch`; the
    ``limit`` best distinct repaired rows are then descended within the
    quotas.  When no row can be repaired, the max-flow start
    (:func:`_quota_start`), descended, is the only row.  With a topology the
    best row then gets the compound sweep (:meth:`QuotaSearch.sweep`).

    Returns
    -------
    rows : ndarray of int64, shape (M, K)
        Within every quota.
    totals : ndarray of float64, shape (M,)
    steps : int
        Steps of the quota searches.
    """
    search = QuotaSearch(problem, exact=problem.topology is not None)
    budget, tries = _quota_budget(problem.n_workers, problem.n_jobs)
    limit = budget if limit is None else limit
    improve = QUOTA_MAX_STEPS
    if problem.n_workers * problem.n_jobs > QUOTA_SMALL:  # at scale: greedy's placement as a start, fewer steps
        from .baselines import greedy_placement

        g = greedy_placement(problem)[None, :]
        starts = [*starts, (g, price(problem, g).total)]
        improve = QUOTA_LARGE_STEPS_PER_JOB * problem.n_jobs
    repaired, seen = [], set()
    for rows, totals in [(out_wj, out_total), *starts]:
        for s in best_distinct_rows(rows, totals, limit):
            key = rows[s].tobytes()
            if key in seen:
                continue
            seen.add(key)
            wj = rows[s].copy()
            if search.descend(wj, repair_only=True) == 0:
                repaired.append(wj)
    done = []
    if repaired:
        repaired = np.array(repaired, dtype=np.int64)
        for s in best_distinct_rows(repaired, price(problem, repaired).total, limit):
            wj = repaired[s].copy()
            search.descend(wj, max_steps=min(QUOTA_MAX_STEPS, search.steps + improve))
            done.append(wj)
    if not done:
        wj = _quota_start(problem)
        search.descend(wj)
        done.append(wj)
    rows = np.array(done, dtype=np.int64)
    totals = price(problem, rows).total
    if search.node is not None:  # a topology: kicks of compound steps from the best row
        s = int(np.argmin(totals))
        totals[s] = search.sweep(rows[s], totals[s], tries)
    return rows, totals, search.steps


