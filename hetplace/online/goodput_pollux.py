"""Pollux (OSDI'21) as Sia's artifact runs it on a heterogeneous cluster: heterogeneity-unaware, a genetic search.

Sia's evaluation runs Pollux without knowledge of GPU types (``pollux_unaware.py`` of its artifact):
the cluster becomes identical virtual nodes of the smallest node size, each job has one speedup
model whatever type it ran on, a genetic algorithm searches replicas per virtual node for the
largest power mean of the jobs' speedups, and each job is then cut back to the GPUs of the type
that holds most of its replicas.  docs/online.md §10.2 says where this departs from the artifact.
"""

import math

import numpy as np

from .._validation import check_seed, is_real_scalar
from ..errors import InvalidOptionError

__all__ = ["PolluxGoodputPolicy", "TYPE_PREFERENCE"]

#: GPU types a job keeps when its replicas are split evenly between two, most preferred first (the
#: artifact's order for its type names: A100 before RTX 2080Ti before T4); other types after these.
TYPE_PREFERENCE = ("a100", "rtx2080ti", "t4")


def _even_shape(n, r):
    """``r`` replicas over ``n`` nodes as evenly as possible (GPUs per node)."""
    q, s = divmod(r, n)
    return (q + 1,) * s + (q,) * (n - s)


def _warm():
    """Compile (or load from Numba's cache) the search once, on a tiny input, so that the first
    round's decision time is the search's and not the compiler's."""
    from .._core._pollux_nb import search  # lazy: importing hetplace compiles nothing

    base = np.zeros((1, 1), dtype=np.int64)
    search(base[None].copy(), base, np.zeros(1, dtype=np.bool_), np.ones(1, dtype=np.int64), np.ones((1, 2, 2)),
           np.ones(1), 1, 2, 1, -1.0, np.uint64(0))


class PolluxGoodputPolicy:
    """Pollux as Sia ran it: a genetic search over replicas per virtual node, blind to GPU types.

    Parameters
    ----------
    p : float
        Power of the mean of speedups maximised (default -1, as Sia ran Pollux).
    population, generations : int
        Of the genetic search (default 100 and 100, Pollux's).
    restart_s : float
        Seconds of restart the fitness assumes for every job (default 30, Pollux's).
    seed : int

    Notes
    -----
    Virtual nodes of the smallest node size (4 GPUs on Sia's cluster: 16 of them), numbered type
    by type in cluster order.  Each job's speedup at ``(virtual nodes, replicas)`` is its goodput
    there over its goodput on one node at its fair share of replicas (``ceil(GPUs / jobs)``),
    from the goodput model of the type it last ran on, spread evenly over the nodes (before it has
    run: linear in replicas); a job may grow to twice the most replicas it has run on (at most 16,
    the smallest type's GPUs, and within its largest batch).  Fitness: the power mean of the
    speedups over 4 (``p = -1``), a job whose replicas change discounted by ``max(age - 30
    restarts, 0) / (age + 30)``.  Operators as Pollux's: one-point crossover over the jobs in
    (least attained service, arrival) order; mutation resets a row to the current allocation or
    zeroes parts of it (probability 0.1 each) and adds replicas where GPUs are free; repair
    allows one distributed job per virtual node, caps each job's replicas, and fills virtual
    nodes in job order.  The search is Pollux's NSGA-II over this fitness and a cluster-utility
    objective (population 100, 100 generations), keeping the solution of the best power mean,
    seeded each round with the previous round's last front; it runs in a Numba kernel (:mod:`hetplace._core._pollux_nb`,
    counter-based random draws: the same search compiled or as plain Python).  A job is then cut back to the GPUs of the type holding most
    of its replicas (ties: :data:`TYPE_PREFERENCE`).
    """

    name = "pollux"
    label = "Pollux (heterogeneity-unaware, as Sia ran it)"
    oracle = False

    def __init__(self, p=-1.0, population=100, generations=100, restart_s=30.0, seed=0):
        if not (is_real_scalar(p) and math.isfinite(float(p)) and float(p) != 0):
            raise InvalidOptionError(f"p must be a finite number != 0 (Pollux as Sia ran it: -1); got {p!r}.")
        for name, v in (("population", population), ("generations", generations)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10_000:
                raise InvalidOptionError(f"{name} must be an integer in [1, 10000]; got {v!r}.")
        if not (is_real_scalar(restart_s) and 0 <= float(restart_s) < math.inf):
            raise InvalidOptionError(f"restart_s must be seconds >= 0; got {restart_s!r}.")
        self.p, self.population, self.generations = float(p), population, generations
        self.restart_s, self.seed = float(restart_s), check_seed(seed)
        self.reset()

    def reset(self, seed=None):
        if seed is not None:
            self.seed = check_seed(seed)
        self._vnodes = None
        self._alloc = {}    # job id -> replicas per virtual node (the last round's, after the type cut)
        self._pop = None    # (ids, last non-dominated front) of the last round: the next search starts from it
        self._model = {}    # job id -> the GPU type whose goodput stands for the job
        self._tables = {}   # (app, type, epoch, replica cap, fair share) -> speedup table
        _warm()

    # -- the virtual cluster -------------------------------------------------------------------------
    def _layout(self, cluster):
        if self._vnodes is None:
            size = min(m for _, m in cluster.values())
            vn = []
            for g, (n, m) in cluster.items():
                for k in range(n):
                    vn += [(g, k)] * (m // size)
            self._vnodes = (size, vn)
        return self._vnodes

    # -- speedups --------------------------------------------------------------------------------------
    def _table(self, js, state, cap_r, fair):
        """speedup[n, r] of job ``js`` for n virtual nodes and r replicas (0 where not allowed).

        It depends on the job only through its application, the type standing for it, its epoch,
        its replica cap and the fair share: jobs alike share one (read-only) table.
        """
        g = self._model.get(js.job.job_id)
        key = (js.job.app, g, js.epoch if g is not None else None, cap_r, fair)
        tab = self._tables.get(key)
        if tab is None:
            tab = self._tables[key] = self._build_table(js, state, g, cap_r, fair)
            tab.flags.writeable = False
        return tab

    def _build_table(self, js, state, g, cap_r, fair):
        nv = len(self._vnodes[1])
        tab = np.zeros((nv + 1, cap_r + 1))
        if g is None:  # no model yet: linear in replicas
            for r in range(1, cap_r + 1):
                tab[1:r + 1, r] = r / fair
            return tab
        prof = state.model.profile(js.job.app, g)
        m = state.cluster[g][1]
        base = prof.rate(_even_shape(1, min(fair, m)) if fair <= m else _even_shape(-(-fair // m), fair), js.epoch)[0]
        if base <= 0:
            base = prof.rate((1,), js.epoch)[0]
        for r in range(1, cap_r + 1):
            for n in range(1, min(r, nv) + 1):
                shape = _even_shape(n, r)
                if max(shape) > m:
                    shape = _even_shape(-(-r // m), r)
                tab[n, r] = prof.rate(shape, js.epoch)[0] / base if base > 0 else r / fair
        return tab

    # -- the search ------------------------------------------------------------------------------------
    def decide(self, state):
        size, vn = self._layout(state.cluster)
        nv = len(vn)
        for js in state.jobs:
            if js.gpu_type is not None:
                self._model[js.job.job_id] = js.gpu_type
        jobs = sorted(state.jobs, key=lambda js: (not js.pinned, js.attained_service, js.job.arrival, js.job.job_id))
        J = len(jobs)
        if J == 0:
            return {}
        ids = [js.job.job_id for js in jobs]
        total = sum(n * m for n, m in state.cluster.values())
        fair = max(1, math.ceil(total / J))
        small = min(n * m for n, m in state.cluster.values())
        caps, tabs, fac = [], [], np.ones(J)
        for i, js in enumerate(jobs):
            prof = state.model.profile(js.job.app, next(iter(state.cluster)))
            grown = max(2 * max(js.max_gpus.values(), default=0), 1)
            cap_r = min(grown, small, int(prof.max_batch // prof.min_local_bsz))
            if js.job.app == "ncf":
                cap_r = 1
            caps.append(cap_r)
            tabs.append(self._table(js, state, cap_r, fair))
            fac[i] = max(js.age - self.restart_s * js.restarts, 0.0) / (js.age + self.restart_s)
        caps = np.array(caps, dtype=np.int64)
        stack = np.zeros((J, nv + 1, int(caps.max()) + 1))  # speedup[job, n, r], zero past each cap
        for i, t in enumerate(tabs):
            stack[i, :, : t.shape[1]] = t
        base = np.zeros((J, nv), dtype=np.int64)
        for i, jid in enumerate(ids):
            if jid in self._alloc:
                base[i] = self._alloc[jid]
        pinned = np.array([js.pinned for js in jobs])
        from .._core._categories import stream_key
        from .._core._pollux_nb import search  # lazy: importing hetplace compiles nothing

        pop, _ = search(self._seed_population(ids, base), base, pinned, caps, stack, fac, size, self.population,
                        self.generations, self.p, np.uint64(stream_key(self.seed, state.round_index)))
        best = pop[0].copy()
        self._pop = (ids, pop)
        return self._to_real(best, jobs, state, vn, pinned)

    def _seed_population(self, ids, base):
        if self._pop is None:
            return base[None].copy()
        old_ids, old = self._pop
        pos = {j: k for k, j in enumerate(old_ids)}
        pop = np.zeros((len(old), len(ids), base.shape[1]), dtype=np.int64)
        for i, j in enumerate(ids):
            if j in pos:
                pop[:, i] = old[:, pos[j]]
        return np.concatenate([base[None], pop])

    # -- back to real GPUs -----------------------------------------------------------------------------
    def _to_real(self, best, jobs, state, vn, pinned):
        pref = {g: k for k, g in enumerate(TYPE_PREFERENCE)}
        order = {g: k for k, g in enumerate(state.cluster)}
        out = {}
        self._alloc = {}
        left = {g: list(f) for g, f in state.free.items()}  # pinned jobs' GPUs are already out
        for i, js in enumerate(jobs):
            row = best[i].copy()
            jid = js.job.job_id
            if pinned[i]:
                out[jid] = (js.gpu_type, dict(js.placement))
                self._alloc[jid] = row
                continue
            if row.sum() == 0:
                self._alloc[jid] = row
                continue
            per = {}
            for v, c in enumerate(row):
                if c:
                    per[vn[v][0]] = per.get(vn[v][0], 0) + int(c)
            g = min(per, key=lambda t: (-per[t], pref.get(t, len(pref) + order[t])))
            nodes = {}
            for v, c in enumerate(row):
                if c and vn[v][0] == g:
                    nodes[vn[v][1]] = nodes.get(vn[v][1], 0) + int(c)
                elif c:
                    row[v] = 0
            if any(c > left[g][k] for k, c in nodes.items()):  # cannot happen after the repair; never over-fill
                row[:] = 0
                self._alloc[jid] = row
                continue
            for k, c in nodes.items():
                left[g][k] -= c
            self._alloc[jid] = row
            out[jid] = (g, nodes)
        return out
