"""Policies of the goodput world (docs/online.md §10): Sia and Gavel as Sia ran them, and a FIFO baseline.

A goodput-world policy has ``name`` and ``decide(state: GoodputState) -> {job_id: (gpu_type, {node:
n_gpus})}`` (:mod:`hetplace.online.goodput_sim`).  Jobs left out get no GPUs this round; a job whose
restart is under way (``GoodputJobState.pinned``) keeps its GPUs whatever the policy says, and
``state.free`` already excludes them.
"""

import math

import numpy as np

from .._validation import check_seed, is_real_scalar
from ..errors import InvalidOptionError
from .goodput_configs import _shape_for, pack, place_counts, sia_configs, solve_sia_program

__all__ = ["GOODPUT_POLICIES", "make_goodput_policy", "goodput_policy_names", "SiaGoodputPolicy", "FifoGoodputPolicy",
           "GavelGoodputPolicy", "pack",
           "SIA_POLICY_RESTART_S", "sia_configs", "place_counts", "solve_sia_program"]

#: The restart seconds Sia's *policy* assumes per application (its re-allocation factor), which are not
#: the delays its simulator charges (cifar10 30 against 50, yolov3 45 against 80): the settings of
#: Sia's policy in its artifact (``sia.py``).
SIA_POLICY_RESTART_S = {"deepspeech2": 25.0, "imagenet": 250.0, "cifar10": 30.0, "bert": 120.0, "yolov3": 45.0,
                        "default": 30.0}


class FifoGoodputPolicy:
    """FIFO with the trace's sizes: each job its requested GPUs on the fastest type with room, never moved.

    Jobs start in arrival order; the first that does not fit on any type blocks the queue (no
    backfilling).  The type is the one where the job's goodput at its requested size and batch
    is highest, among those whose free nodes can hold it; a running job keeps its GPUs.
    """

    name = "fifo"
    label = "FIFO (trace sizes)"
    oracle = False

    def decide(self, state):
        free = {g: list(f) for g, f in state.free.items()}
        out = {}
        for js in state.jobs:
            if js.placement:
                out[js.job.job_id] = (js.gpu_type, dict(js.placement))
                if not js.pinned:
                    for k, c in js.placement.items():
                        free[js.gpu_type][k] -= c
        for js in state.jobs:
            if js.placement:
                continue
            n = js.job.num_replicas
            best = None
            for g in state.cluster:
                nodes = pack(free[g], n)
                if nodes is None:
                    continue
                shape = tuple(nodes[k] for k in sorted(nodes))
                rate = state.model.profile(js.job.app, g).rate(shape, js.epoch, js.job.batch_size)[0]
                if rate > 0 and (best is None or rate > best[0]):
                    best = (rate, g, nodes)
            if best is None:
                break
            _, g, nodes = best
            for k, c in nodes.items():
                free[g][k] -= c
            out[js.job.job_id] = (g, nodes)
        return out


class SiaGoodputPolicy:
    """Sia (SOSP'23) as its artifact runs it: a goodput-normalised integer programme over (type, count) configurations.

    Parameters
    ----------
    p : float
        Power of the objective (default -0.5): with ``p < 0`` Sia minimises
        ``sum G**p + lambda_n * (unallocated jobs)``, with ``p > 0`` it maximises it;
        ``p != 0``.
    lambda_n : float
        Weight of an unallocated job (default 1.1; its sign opposite to ``p``'s, ``|lambda_n| > 1``).
    restart_s : dict, optional
        Restart seconds per application of the re-allocation factor (default
        :data:`SIA_POLICY_RESTART_S`, Sia's own settings).
    bootstrap : bool
        True (default, Sia): a job's goodput is known only on types it has run on; a new job is
        worth 1 on one GPU of every type, and on a type it has not run on its goodput is the
        best-known type's scaled by the ratio of the two types' 1-GPU throughputs.  False: the
        oracle ablation, every type known from the start.
    clip : float
        Largest objective coefficient (default 3000, Sia's).
    time_limit : float or None
        Seconds per solve (default None: to optimality, as Sia's CBC runs).

    Notes
    -----
    Per job, a row of goodputs over :func:`sia_configs` is normalised so that its smallest
    valid entry is 1; counts above ``max(2 x the most GPUs the job has run on, 1)`` (Sia's
    growth cap, shared by every type) are invalid (1e-4).  When a job held a configuration in
    the previous round, every other entry of its row is multiplied by the re-allocation factor
    ``max(age - restarts R, 0) / (age + R)`` (1 while ``age < R``).  Coefficients
    ``round(G**p, 2)``, capped at ``clip``; one configuration per job, GPUs per type within
    capacity; jobs that are restarting keep theirs.  The programme is solved exactly with
    OR-Tools CP-SAT (single-threaded, seeded: reproducible), whose ties may fall elsewhere than
    CBC's.  Where Sia's policy uses Pollux's performance model fitted to the job's own runs, this
    one uses the goodput model's true step times on the configurations the job could have
    measured (docs/online.md §10).  Placement: :func:`place_counts`.
    """

    name = "sia"
    label = "Sia (re-implemented)"
    oracle = False

    def __init__(self, p=-0.5, lambda_n=1.1, restart_s=None, bootstrap=True, clip=3000.0, time_limit=None, seed=0):
        if not is_real_scalar(p) or not math.isfinite(float(p)) or float(p) == 0:
            raise InvalidOptionError(f"p must be a finite number != 0 (Sia: -0.5); got {p!r}.")
        if not is_real_scalar(lambda_n) or not math.isfinite(float(lambda_n)):
            raise InvalidOptionError(f"lambda_n must be a finite number; got {lambda_n!r}.")
        if not is_real_scalar(clip) or not float(clip) > 0:
            raise InvalidOptionError(f"clip must be a number > 0; got {clip!r}.")
        if time_limit is not None and not (is_real_scalar(time_limit) and float(time_limit) > 0):
            raise InvalidOptionError(f"time_limit must be seconds > 0 or None; got {time_limit!r}.")
        self.p, self.lambda_n, self.clip = float(p), float(lambda_n), float(clip)
        self.restart_s = dict(SIA_POLICY_RESTART_S if restart_s is None else restart_s)
        self.bootstrap = bool(bootstrap)
        self.time_limit = time_limit
        self.seed = check_seed(seed)

    def reset(self, seed=None):
        if seed is not None:
            self.seed = check_seed(seed)

    def _row(self, js, state, configs):
        model, cluster = state.model, state.cluster
        app = js.job.app
        known = [g for g in cluster if (not self.bootstrap) or g in js.max_gpus]
        row = np.full(len(configs), 1e-4)
        if not known:  # a new job: 1 GPU of any type, each worth 1
            for k, (g, n) in enumerate(configs):
                if n == 1:
                    row[k] = 1.0
            return row
        cap = 0
        for g in cluster:
            prof = model.profile(app, g)
            grow = max(2 * js.max_gpus.get(g, 0), 1) if self.bootstrap else 64
            cap = max(cap, min(grow, 64, int(prof.max_batch // prof.min_local_bsz)))
        src = known[0]
        src_prof = model.profile(app, src)
        for k, (g, n) in enumerate(configs):
            if not 1 <= n <= cap:
                continue
            if g in known:
                prof = model.profile(app, g)
                row[k] = prof.rate(_shape_for(n, cluster[g][1]), js.epoch, js.job.batch_size)[0]
            else:
                base = src_prof.rate(_shape_for(n, cluster[src][1]), js.epoch, js.job.batch_size)[0]
                a_src = src_prof.atomic_throughput
                row[k] = base * (model.profile(app, g).atomic_throughput / a_src if a_src > 0 else 0.0)
        pos = row[row > 1e-4]
        row = row / (pos.min() if pos.size else 1.0)
        row[row <= 1e-4] = 1e-4
        return row

    def goodputs(self, state):
        """The normalised goodput rows of ``state``'s jobs: ``(configs, jobs, G, capacity, pinned)``.

        ``G[i, k]`` is job ``jobs[i]``'s goodput on ``configs[k]`` over its smallest valid one
        (1e-4: invalid), every entry but the one it held multiplied by its re-allocation factor;
        ``capacity`` the free GPUs per type once the ``pinned`` allocations (restarting jobs,
        ``{job_id: (type, {node: n})}``) are kept.
        """
        configs = sia_configs(state.cluster)
        cap = {g: sum(state.free[g]) for g in state.cluster}  # restarting jobs keep theirs
        idx = {c: k for k, c in enumerate(configs)}
        pinned, jobs, rows = {}, [], []
        for js in state.jobs:
            if js.pinned:
                pinned[js.job.job_id] = (js.gpu_type, dict(js.placement))
                continue
            row = self._row(js, state, configs)
            prev = idx.get((js.gpu_type, js.n_gpus)) if js.placement else None
            if prev is not None:
                r_s = self.restart_s.get(js.job.app, self.restart_s.get("default", 30.0))
                f = 1.0 if js.age < r_s else max(js.age - js.restarts * r_s, 0.0) / (js.age + r_s)
                keep = row[prev]
                row = row * f
                row[prev] = keep
            rows.append(row)
            jobs.append(js)
        return configs, tuple(jobs), np.array(rows).reshape(len(jobs), len(configs)), cap, pinned

    def program(self, state):
        """Sia's programme for ``state``: ``(configs, jobs, coefficients, capacity, pinned)``.

        ``coefficients[i, k]`` is ``round(G**p, 2)`` (capped at ``clip``) of :meth:`goodputs`.
        """
        configs, jobs, G, cap, pinned = self.goodputs(state)
        with np.errstate(divide="ignore", over="ignore"):
            a = np.power(np.maximum(G, 0.0), self.p)
        coef = np.minimum(np.round(np.nan_to_num(a, nan=self.clip, posinf=self.clip), 2), self.clip)
        return configs, jobs, coef, cap, pinned

    def decide(self, state):
        configs, jobs, coef, cap, out = self.program(state)
        if jobs:
            pick = solve_sia_program(coef, configs, cap, self.lambda_n, self.p, self.seed, self.time_limit)
            counts = [(js.job.job_id,) + configs[k] for js, k in zip(jobs, pick) if k >= 0]
            out.update(place_counts(counts, state.cluster, state.free))
        return out


class GavelGoodputPolicy:
    """Gavel's heterogeneity-aware max-sum-throughput with the trace's sizes, as Sia's artifact runs it.

    Each job runs on exactly its ``num_replicas`` GPUs of one type at its ``batch_size``
    (``tune_batch = False``: no batch tuning).  Every round (360 s in Sia's runs) the time shares

        maximise  sum_j sum_t T[j, t] X[j, t]
        s.t.      X >= 0,  sum_t X[j, t] <= 1,  sum_j n_j X[j, t] <= GPUs of t

    are solved (:func:`~hetplace.online.policies_peers.max_sum_throughput_shares`), ``T`` the
    job's iterations per second on ``n_j`` GPUs of type ``t`` packed into whole nodes
    (un-normalised, as in Gavel), rounded to 5 decimals; then Sia's version of Gavel's round
    mechanism: priority ``X[j, t] / (job_time[j, t] / type_time[t])`` (times start at half a
    round per job), every (job, type) pair in descending (priority, share), type by type in
    cluster order, a job scheduled where its GPUs still fit (pairs of priority 0 included, so
    free GPUs are back-filled), times advanced by a round for each scheduled job.  Within a
    type, larger jobs first: a job that ran there keeps its GPUs if they are free, others take
    the lowest free GPUs server by server (a job may straddle servers).

    Parameters
    ----------
    center : bool
        True (default): the shares are the analytic centre of the programme's optimal face,
        where Gavel's interior-point solver (ECOS, in Gavel and in Sia's run of it) lands;
        False: a vertex of it (SciPy's HiGHS).  The centre spreads a job's time over the
        types, so Gavel's rounds move it between them (each move a restart).

    Notes
    -----
    It uses no job length.
    """

    name = "gavel-mst"
    label = "Gavel max-sum-throughput (trace sizes)"
    oracle = False
    tune_batch = False
    #: Round length Sia's artifact runs Gavel with (seconds).
    round_s = 360.0

    def __init__(self, center=True):
        self.center = bool(center)
        self.reset()

    def reset(self, seed=None):
        self._job_time, self._type_time = {}, {}

    def decide(self, state):
        from .policies_peers import max_sum_throughput_shares

        types = list(state.cluster)
        rs = state.round_s
        out = {js.job.job_id: (js.gpu_type, dict(js.placement)) for js in state.jobs if js.pinned}
        jobs = [js for js in state.jobs if not js.pinned]
        if not jobs:
            return out
        for g in types:
            self._type_time.setdefault(g, 0.0)
        for js in jobs:
            jid = js.job.job_id
            if jid not in self._job_time:
                self._job_time[jid] = dict.fromkeys(types, rs / 2)
                for g in types:
                    self._type_time[g] += rs / 2
        T = np.zeros((len(jobs), len(types)))
        for i, js in enumerate(jobs):
            for t, g in enumerate(types):
                m = state.cluster[g][1]
                n = js.job.num_replicas
                if n <= state.cluster[g][0] * m:
                    T[i, t] = state.model.profile(js.job.app, g).iteration_rate(_shape_for(n, m), js.job.batch_size)
        scale = np.array([js.job.num_replicas for js in jobs], dtype=np.float64)
        cap = np.array([sum(state.free[g]) for g in types], dtype=np.float64)
        X = np.clip(np.round(max_sum_throughput_shares(T, scale, cap, center=self.center), 5), 0.0, 1.0)
        pairs = []
        for t, g in enumerate(types):
            for i, js in enumerate(jobs):
                x = X[i, t]
                jt = self._job_time[js.job.job_id][g]
                pr = 0.0 if x == 0 else x / (jt / self._type_time[g]) if self._type_time[g] > 0 else x
                pairs.append((pr, x, t, i))
        order = sorted(range(len(pairs)), key=lambda k: (-pairs[k][0], -pairs[k][1], k))
        left = {g: int(c) for g, c in zip(types, cap)}
        chosen = {}
        for k in order:
            _, _, t, i = pairs[k]
            g = types[t]
            n = jobs[i].job.num_replicas
            if i in chosen or left[g] == 0 or n > left[g] or T[i, t] <= 0:
                continue
            chosen[i] = g
            left[g] -= n
        for i, g in chosen.items():
            jid = jobs[i].job.job_id
            self._job_time[jid][g] += rs
            self._type_time[g] += rs
        out.update(self._place(state, jobs, chosen))
        live = {js.job.job_id for js in state.jobs}
        self._job_time = {j: v for j, v in self._job_time.items() if j in live}
        return out

    def _place(self, state, jobs, chosen):
        out = {}
        for g, (n_nodes, m) in state.cluster.items():
            cnt = list(state.free[g])  # free GPUs per node
            mine = sorted((i for i, h in chosen.items() if h == g), key=lambda i: (-jobs[i].job.num_replicas, i))
            rest = []
            for i in mine:  # a job that ran on this type keeps its GPUs if they are free
                js = jobs[i]
                if js.gpu_type == g and js.placement and all(cnt[k] >= c for k, c in js.placement.items()):
                    for k, c in js.placement.items():
                        cnt[k] -= c
                    out[js.job.job_id] = (g, dict(js.placement))
                else:
                    rest.append(i)
            ptr = 0
            for i in rest:
                need = jobs[i].job.num_replicas
                nodes = {}
                while need > 0 and ptr < n_nodes:
                    take = min(cnt[ptr], need)
                    if take:
                        nodes[ptr] = nodes.get(ptr, 0) + take
                        cnt[ptr] -= take
                        need -= take
                    if cnt[ptr] == 0:
                        ptr += 1
                if need > 0:  # cannot happen when the shares fit; left out rather than over-filled
                    for k, c in nodes.items():
                        cnt[k] += c
                    continue
                out[jobs[i].job.job_id] = (g, nodes)
        return out


#: Goodput-world policies by name.
def _pollux(**options):
    from .goodput_pollux import PolluxGoodputPolicy

    return PolluxGoodputPolicy(**options)


def _smp(**options):
    from .goodput_smp import SmpGoodputPolicy

    return SmpGoodputPolicy(**options)


def _smp_mixed(**options):
    from .goodput_smp import SmpMixedGoodputPolicy

    return SmpMixedGoodputPolicy(**options)


_pollux.round_s = 60.0
GOODPUT_POLICIES = {"smp": _smp, "sia": SiaGoodputPolicy, "pollux": _pollux, "gavel-mst": GavelGoodputPolicy,
                    "fifo": FifoGoodputPolicy, "smp-mixed": _smp_mixed}


def goodput_policy_names():
    """Names :func:`make_goodput_policy` accepts."""
    return tuple(GOODPUT_POLICIES)


def make_goodput_policy(name, **options):
    """A goodput-world policy by name (:data:`GOODPUT_POLICIES`), with its options."""
    cls = GOODPUT_POLICIES.get(name)
    if cls is None:
        raise InvalidOptionError(
            f"unknown goodput policy {name!r}; choose one of {', '.join(GOODPUT_POLICIES)}.")
    return cls(**options)
