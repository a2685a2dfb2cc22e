"""hetplace's own online policies (docs/online.md §5): SMP re-placement every round.

``"smp"`` re-places the running and waiting jobs each round with
``hetplace.place(problem, method="smp")`` on a restart-aware
:class:`hetplace.Problem` (``current`` = where the running jobs are,
``restart_time`` = the restart model), job sizes free within bounds and GPU
types mixed; ``"smp-rigid"`` keeps the trace's GPU counts and lets SMP choose
the types and the GPUs.

None of them sees a job's true length (docs/online.md §3.1): where the policy needs
remaining work (admission order, value weights, the Problem's iterations) it uses
:class:`RemainingEstimate`, learnt from the jobs that have finished.  ``"smp-oracle"``
is ``"smp"`` given the true remaining steps, with shortest-remaining-time admission:
what ``"smp"`` was before policies were made non-oracle by default, kept for comparison.
"""

import heapq
import math

import numpy as np

from .._cost import ring_fraction
from ..data import default_grad_bytes
from .progress import spread_rate
from .._validation import check_choice, check_positive_int, check_seed, is_real_scalar
from ..errors import InvalidOptionError

__all__ = ["SMPPolicy", "SMPOraclePolicy", "SMPFairPolicy", "SMPRigidPolicy", "RemainingEstimate", "OUR_POLICIES",
           "ADMISSION", "SIZING", "CERTIFY_TIME_LIMIT"]

#: Admission orders when more jobs are waiting than a Problem can hold.
ADMISSION = ("las", "srpt", "fifo", "las-log")
#: How "smp" sizes jobs each round: measured counts by marginal gain (default), each job's fastest
#: measured count in admission order, or any size in a range.
SIZING = ("marginal", "measured", "range")
#: Bandwidth (bytes/s) of the policy's Problem; the gradient sizes are fitted to it (see ``_comm_per_step``).
_BANDWIDTH = 1e9
#: Value multiplier of a job behind its fair share (``fairness``): it outranks every other move.
_LATE_BOOST = 1e6
#: Seconds the lower bound of one round may take with ``certify=True`` (the bound found by then is valid).
CERTIFY_TIME_LIMIT = 1.0


class RemainingEstimate:
    """A running job's remaining steps from what a scheduler knows: its steps done and the finished jobs.

    Lengths are counted in *work seconds*: a job's steps over the fastest rate the progress
    model allows it on its scale factor (``progress.bound(model, scale_factor)``), so jobs of
    different models compare.  A job with ``a`` work seconds done is expected to need
    ``E[L - a | L > a]`` more, ``L`` over the lengths of the finished jobs of its model (when at
    least ``min_samples`` of them are longer than ``a``), else of every finished job (when one
    is), else ``max(a, round_s)`` (before any job finished: it has run ``a``, expect as much
    again, at least a round).  It reads only ``done_steps``, the job's model and scale factor
    and ``state.finished``, so it is the same for two traces that differ only in the lengths of
    unfinished jobs.

    Parameters
    ----------
    min_samples : int
        Finished jobs of the same model, longer than the job's work so far, needed to use
        that model's lengths rather than every model's (default 5).
    """

    def __init__(self, min_samples=5):
        self.min_samples = check_positive_int("min_samples", min_samples, allow_none=False)
        self.reset()

    def reset(self):
        """Forget the finished jobs seen."""
        self._lengths = {None: []}  # model (None: every model) -> work seconds of the finished jobs
        self._arrays = {}  # key -> (sorted lengths, suffix sums), rebuilt after new data

    def observe(self, state):
        """Add the lengths of the jobs that finished since the last call (``state.finished``)."""
        for job in state.finished:
            b = state.progress.bound(job.model, job.scale_factor)
            if b > 0:
                L = float(job.total_steps) / b
                self._lengths.setdefault(job.model, []).append(L)
                self._lengths[None].append(L)
                self._arrays.pop(job.model, None)
                self._arrays.pop(None, None)

    def _sorted(self, key):
        d = self._arrays.get(key)
        if d is None:
            a = np.sort(np.asarray(self._lengths.get(key, ()), dtype=np.float64))
            d = (a, np.concatenate([np.cumsum(a[::-1])[::-1], [0.0]]))
            self._arrays[key] = d
        return d

    def remaining(self, state, s):
        """Expected remaining steps of job state ``s`` (> 0)."""
        b = state.progress.bound(s.job.model, s.job.scale_factor)
        if not b > 0:
            return max(float(s.done_steps), 1.0)
        a = float(s.done_steps) / b
        for key, need in ((s.job.model, self.min_samples), (None, 1)):
            arr, suffix = self._sorted(key)
            k = int(np.searchsorted(arr, a, side="right"))
            n = arr.size - k
            if n >= need:
                return max(suffix[k] / n - a, 1e-9) * b
        return max(a, state.round_s) * b


class SMPPolicy:
    """Each round, an SMP re-placement of the active jobs with free job sizes and mixed types.

    Parameters
    ----------
    max_gpus : int
        Most GPUs a job may get (default 8, the largest count Gavel measured).
        A model with no multi-GPU figure in the table gets at most 1.
    admission : {"las-log", "las", "srpt", "fifo"} or None
        The order jobs are considered in: ``"las-log"`` (default of ``"smp"``),
        least attained work in doubling classes (class 0 below one round of
        work at the job's best rate, then one class per doubling; Tiresias-like,
        so jobs change order rarely); ``"las"``, least attained service first;
        ``"srpt"`` (default of ``"smp-oracle"``), shortest remaining time first
        (the remaining steps over the fastest rate the progress model allows on
        the job's scale factor; estimated by :class:`RemainingEstimate` unless
        the policy is an oracle); ``"fifo"``, arrival order; ties by arrival
        then job id.  None: the class's default.  With
        ``sizing="marginal"`` it breaks ties between moves of equal value;
        with the other sizings (and ``"smp-rigid"``) it is the first-fit order
        of admission when jobs outnumber what the cluster can hold, and the
        others wait this round.
    samples : int
        SMP samples per round (default 16).
    restart_candidates : int
        SMP's ``restart_candidates`` (running jobs tried as the only restart
        of a keep candidate, each a small SMP run of its own; default 2).
    restart_floor : float
        Seconds of restart the policy's Problem charges at least, even when
        the restart model says 0 (default 10): without it a restart is free
        to SMP and jobs move between equivalent GPUs every round for nothing.
    seed : int
        Base seed; round ``r`` uses ``seed * 1_000_003 + r``.  ``reset(seed=)``
        from :func:`simulate` overrides it.
    share_cap : float
        At most this many equal shares ``K / active jobs`` of the cluster per
        job (default inf: no cap).
    min_efficiency : float
        A count ``n > 1`` whose per-GPU efficiency ``T(n) / (n T(1))`` on the
        fastest type is below this is never used (default 0).
    sizing : {"marginal", "measured", "range"}
        How job sizes are chosen each round (docs/online.md §5.1).
        ``"marginal"`` (default): measured counts, GPUs handed out one move at
        a time to the largest gain in value per GPU (value below).
        ``"measured"``: in admission order, each job its fastest measured
        count among the GPUs still free.  ``"range"``: any size in
        ``[1, max_gpus]``, SMP's own choice with a fitted communication time.
    priority : float
        Exponent ``a`` of the remaining-time weight in the value of
        ``sizing="marginal"`` (default 0, in ``[0, 4]``): job i on an
        allocation of ``X`` steps/s is worth ``X / X_i * t_i**-a``, ``X_i``
        its best steps/s per GPU and ``t_i`` its remaining steps (estimated
        unless an oracle) over ``X_i``.
        0 values every job's normalised throughput alike (efficiency first,
        ties in admission order); larger values favour short jobs.
    fairness : float or None
        With ``sizing="marginal"``: a job whose estimated finish-time fairness
        (the FTF it would end with if it ran at an isolated ``1 / n`` share of
        the cluster from now on) reaches this value is served before every
        other job (default None: no such rule; values ``>= 1``).
    certify : bool
        Also compute :func:`hetplace.lower_bound` of every round's placement
        problem (default False; a time limit of :data:`CERTIFY_TIME_LIMIT`
        s) and record ``(round index, SMP's mean JCT, bound, certified gap)``
        in :attr:`bound_log`: how far each decision can be from the optimum
        of the policy's own placement model for that round (not of the whole
        online run).  The decision times the simulator reports then include
        the bound's.
    physical : bool
        On a cluster given node by node: return the physical GPUs of SMP's
        topology-priced placement (True, default) or per-type counts that the
        simulator places consolidated, Gavel's way (False; docs/online.md §5.1.1).

    Notes
    -----
    The policy's model.  With measured sizes (``"marginal"``, ``"measured"``)
    a job of size n has, on one GPU of type g, the table's per-GPU rate at
    n, ``T_g(n) / n``, times the batch, and no communication term: for a job
    on one type SMP's model is the progress model, and a job split over types
    is the progress model's proportional split.  With ``"marginal"`` SMP's
    objective for the type choice is the same value as the sizing's: the
    iterations of job i are ``w_i X_i'**2 / r_i`` times its remaining steps
    ``r_i`` (``w_i`` the value weight, ``X_i'`` its sized rate), so that near
    the sized rates, SMP's sum of JCTs changes as minus the total value;
    restart times are weighted alike.  With ``"range"``: throughput of job i
    on one GPU of type g = the table's 1-GPU steps/s times the batch; batch =
    the model's per-GPU batch, times the smallest factor that lets it reach
    its largest allowed size (a Problem job uses at most ``batch`` workers);
    iterations = remaining steps; communication per step fitted to the
    table's V100 scaling (least squares of ``1/T(n) - 1/(n T(1))`` against
    the ring all-reduce factor ``2 (n - 1) / n``, clipped at 0).  The
    simulator's progress model is what counts; this is only how SMP ranks
    placements.
    """

    name = "smp"
    label = "SMP (ours)"
    rigid = False
    #: Not an oracle: the simulator hides job lengths; remaining work is estimated (RemainingEstimate).
    oracle = False
    _default_admission = "las-log"

    def __init__(self, max_gpus=8, admission=None, samples=16, restart_candidates=2, restart_floor=10.0, seed=0,
                 share_cap=math.inf, min_efficiency=0.0, sizing="marginal", priority=0.0, fairness=None,
                 certify=False, physical=True):
        if not isinstance(physical, (bool, np.bool_)):
            raise InvalidOptionError(
                f"physical must be True or False (name the GPUs SMP chose on a cluster given as nodes); "
                f"got {physical!r}."
            )
        self.physical = bool(physical)
        if not isinstance(certify, (bool, np.bool_)):
            raise InvalidOptionError(f"certify must be True or False (record each round's lower bound); got {certify!r}.")
        self.certify = bool(certify)
        self.max_gpus = check_positive_int("max_gpus", max_gpus, allow_none=False, maximum=4096)
        if not is_real_scalar(priority) or not (0 <= float(priority) <= 4):
            raise InvalidOptionError(
                f"priority must be a number in [0, 4] (exponent of the remaining-time weight; 0 = efficiency "
                f"first); got {priority!r}."
            )
        self.priority = float(priority)
        if fairness is not None and (not is_real_scalar(fairness) or not (1 <= float(fairness) < math.inf)):
            raise InvalidOptionError(
                f"fairness must be None or a finite number >= 1 (the estimated finish-time fairness at which a "
                f"job is served first); got {fairness!r}."
            )
        self.fairness = None if fairness is None else float(fairness)
        if not is_real_scalar(share_cap) or not (0 < float(share_cap) <= math.inf):
            raise InvalidOptionError(
                f"share_cap must be a number > 0 (multiples of an equal share of the GPUs a job may get; inf = no "
                f"cap); got {share_cap!r}."
            )
        self.share_cap = float(share_cap)
        if not is_real_scalar(min_efficiency) or not (0 <= float(min_efficiency) <= 1):
            raise InvalidOptionError(
                f"min_efficiency must be a number in [0, 1] (per-GPU efficiency a size must keep); got "
                f"{min_efficiency!r}."
            )
        self.min_efficiency = float(min_efficiency)
        self.sizing = check_choice("sizing", sizing, SIZING)
        self.admission = check_choice("admission", self._default_admission if admission is None else admission,
                                      ADMISSION)
        self.samples = check_positive_int("samples", samples, allow_none=False)
        self.seed = check_seed(seed) or 0
        rc = restart_candidates
        if isinstance(rc, bool) or not isinstance(rc, int) or rc < 0:
            raise InvalidOptionError(f"restart_candidates must be an integer >= 0; got {rc!r}.")
        self.restart_candidates = rc
        if not is_real_scalar(restart_floor) or not (0 <= float(restart_floor) < math.inf):
            raise InvalidOptionError(f"restart_floor must be a finite number of seconds >= 0; got {restart_floor!r}.")
        self.restart_floor = float(restart_floor)
        self._per_model = {}
        self._count_cache = {}
        self._share = 4096
        self.decision_log = []  # (n_active, n_admitted) per round
        self.bound_log = []  # with certify: (round index, mean JCT, bound, certified gap) per placement
        self.estimate = RemainingEstimate()

    def reset(self, seed=None):
        if seed is not None:
            self.seed = seed
        self.decision_log = []
        self.bound_log = []
        self.estimate.reset()

    def _left(self, state, s):
        """Remaining steps of job state ``s`` as the policy sees them: true for an oracle, else estimated."""
        if self.oracle:
            return s.remaining_steps
        return self.estimate.remaining(state, s)

    # ------------------------------------------------------------ per-model data
    def _model_data(self, table, types, model):
        key = (id(table), types, model)
        d = self._per_model.get(key)
        if d is None:
            rho = np.array([table.samples_per_second(model, g) for g in types])
            batch = table.per_gpu_batch(model)
            multi = [n for n in table.gpu_counts if n > 1 and any(table.steps_per_second(model, g, n) > 0 for g in types)
                     and _efficiency(table, model, types, n) >= self.min_efficiency]
            cap = max([1] + multi)
            d = (rho, batch, cap, _comm_per_step(table, model, types))
            self._per_model[key] = d
        return d

    def _share_limit(self, K, n_jobs):
        """Most GPUs a job may get under ``share_cap`` equal shares of the ``K`` GPUs among ``n_jobs`` (at least 1)."""
        share = self.share_cap * K / max(n_jobs, 1)
        return K if math.isinf(share) else max(1, int(share))

    def _bounds(self, job, cap):
        hi = max(1, min(self.max_gpus, cap, self._share))
        return 1, hi

    def _order(self, state, jobs):
        if self.admission == "fifo":
            key = lambda s: (s.job.arrival, s.job.job_id)
        elif self.admission == "las-log":
            prog = state.progress
            key = lambda s: (_service_class(s, prog, state.round_s), s.job.arrival, s.job.job_id)
        elif self.admission == "las":
            key = lambda s: (s.attained_service, s.job.arrival, s.job.job_id)
        else:
            prog = state.progress
            key = lambda s: (self._left(state, s) / max(prog.bound(s.job.model, s.job.scale_factor), 1e-300),
                             s.job.arrival, s.job.job_id)
        return sorted(jobs, key=key)

    def _admit(self, state, n_gpus):
        """Jobs of this round's Problem, in priority order (first fit of their minimum sizes)."""
        jobs = state.jobs
        need = [self._bounds(s.job, self._model_data(state.table, self._types, s.job.model)[2])[0] for s in jobs]
        if sum(need) <= n_gpus:
            return list(jobs)
        out, room = [], n_gpus
        lo = dict(zip((s.job.job_id for s in jobs), need))
        for s in self._order(state, jobs):
            if lo[s.job.job_id] <= room:
                out.append(s)
                room -= lo[s.job.job_id]
                if room == 0:
                    break
        return out

    # ------------------------------------------------------------ marginal sizes
    def _late(self, state, jobs):
        """Job ids whose estimated finish-time fairness is at least ``fairness`` (empty without the setting).

        Estimate: ``(age + remaining / iso) / (total / iso)``, ``iso`` the job's steps/s on an
        isolated ``1 / n`` share of the cluster (``n`` = active jobs now; Gavel's definition,
        docs/online.md §4), i.e. the FTF it would end with if it ran at its fair share from now.
        """
        if self.fairness is None or not jobs:
            return set()
        out = set()
        for s in jobs:
            iso = state.progress.isolated_rate(s.job.model, s.job.scale_factor, state.cluster, len(jobs))
            if iso > 0:
                age = max(state.time - s.job.arrival, 0.0)
                left = self._left(state, s)
                total = s.job.total_steps if self.oracle else s.done_steps + left
                if (age + left / iso) >= self.fairness * (total / iso):
                    out.add(s.job.job_id)
        return out

    def _counts(self, table, types, model, limit, spread=None):
        """``([(count, steps/s)], best steps/s per GPU)`` of ``model`` for the marginal sizing (cached per model).

        The measured counts ``<= limit`` with a figure on some type of ``types`` (at
        least ``min_efficiency`` per GPU), each faster than every smaller one (a larger
        count that is not faster is never worth it); the rate is the fastest type's.
        With ``spread = (largest node per type, racks per type, inter-node bytes/s)`` (a
        cluster given node by node; each type's racks as ``(GPUs of the type in the rack,
        its bandwidth)`` pairs, empty without racks) a count above a type's largest node
        is that type's rate slowed by the progress model's ring term between nodes, at
        the best bandwidth of a rack that holds that many GPUs of the type, else between
        racks.
        """
        key = (id(table), types, model, limit, spread)
        d = self._count_cache.get(key)
        if d is None:
            o = []

            def at(g, c):
                r = table.steps_per_second(model, g, c)
                t = None if spread is None else types.index(g)
                if t is not None and c > spread[0][t]:
                    bw = max((b for cap, b in spread[1][t] if cap >= c), default=spread[2])
                    r = spread_rate(r, c, default_grad_bytes(model), bw)
                return r

            for c in table.gpu_counts:
                if not 1 <= c <= limit:
                    continue
                rate = max(at(g, c) for g in types)
                if rate <= 0 or (c > 1 and _efficiency(table, model, types, c) < self.min_efficiency):
                    continue
                if not o or rate > o[-1][1]:
                    o.append((c, rate))
            d = (o, max((r / c for c, r in o), default=0.0))
            self._count_cache[key] = d
        return d

    def _sizes_marginal(self, state, types, K):
        """``[(job state, n GPUs)]`` by greedy marginal gain (sizing="marginal"); sets ``self._weight``.

        Job i's value on n GPUs is ``T_i(n) / X_i * t_i**-priority``: ``T_i(n)`` the table's
        steps/s on n GPUs of its fastest type, ``X_i`` its best steps/s per GPU over the counts
        (so the value per GPU is at most 1), ``t_i`` = remaining steps / ``X_i``.  GPUs go one
        step at a time to the move (a job from its count to a larger measured count) of the
        largest value gained per GPU added; ties to the admission order.
        """
        table = state.table
        limit = min(self.max_gpus, self._share_limit(K, len(state.jobs)))
        late = self._late(state, state.jobs)
        jobs = self._order(state, state.jobs)
        if late:  # jobs behind their fair share first, in the same order among themselves
            jobs = [s for s in jobs if s.job.job_id in late] + [s for s in jobs if s.job.job_id not in late]
        # per job: [(count, steps/s)] by count; best steps/s per GPU; remaining-time weight (times the boost)
        opts, per, value = [], [], []
        spread = None
        if state.nodes:
            largest, in_rack = {}, {}
            net = state.network
            for v, nd in enumerate(state.nodes):
                largest[nd.gpu_type] = max(largest.get(nd.gpu_type, 0), len(nd.gpus))
                if net.rack is not None:
                    key = (nd.gpu_type, net.rack[v])
                    in_rack[key] = in_rack.get(key, 0) + len(nd.gpus)
            racks = tuple(tuple((c, net.rack_bandwidth[r]) for (g2, r), c in sorted(in_rack.items()) if g2 == g)
                          for g in types)
            spread = (tuple(largest.get(g, 0) for g in types), racks, net.inter)
        for s in jobs:
            o, x = self._counts(table, types, s.job.model, limit, spread)
            opts.append(o)
            t = max(self._left(state, s), 1e-9) / x if x > 0 else 1.0
            w = t ** -self.priority if x > 0 else 0.0
            per.append(x if x > 0 else 1.0)
            value.append(w * (_LATE_BOOST if s.job.job_id in late else 1.0))
        level = [-1] * len(jobs)  # index into opts[i] of the job's count, -1 = no GPUs
        room = K

        def best(i):
            n0, r0 = (opts[i][level[i]] if level[i] >= 0 else (0, 0.0))
            top = None
            for k in range(level[i] + 1, len(opts[i])):
                c, r = opts[i][k]
                if c - n0 > room:
                    break
                gain = _tie((r - r0) / per[i] * value[i] / (c - n0))
                if top is None or gain > top[0]:
                    top = (gain, k)
            return top

        heap = []
        for i in range(len(jobs)):
            b = best(i)
            if b is not None and b[0] > 0:
                heap.append((-b[0], i, b[1]))
        heapq.heapify(heap)
        while heap and room > 0:
            g, i, k = heapq.heappop(heap)
            b = best(i)  # the room may have shrunk since this move was pushed
            if b is None or b[0] <= 0:
                continue
            if (-b[0], b[1]) != (g, k):
                heapq.heappush(heap, (-b[0], i, b[1]))
                continue
            room -= opts[i][k][0] - (opts[i][level[i]][0] if level[i] >= 0 else 0)
            level[i] = k
            b = best(i)
            if b is not None and b[0] > 0:
                heapq.heappush(heap, (-b[0], i, b[1]))
        # SMP's objective for the types: with iterations w_i * R_i**2 (R_i the sized rate), SMP's sum of
        # iterations / rate changes near R by -sum_i w_i dX_i, minus the value gained; a job behind its fair
        # share keeps its boost here too, so it gets the fast types (the sizing alone gives it GPUs, not speed)
        self._weight = {}
        out = []
        for i, s in enumerate(jobs):
            if level[i] >= 0:
                c, r = opts[i][level[i]]
                out.append((s, c))
                self._weight[s.job.job_id] = value[i] / per[i] * r * r / max(self._left(state, s), 1e-9)
        return out

    # ------------------------------------------------------------ measured sizes
    def _sizes(self, state, types, K):
        """``[(job state, n GPUs)]`` for this round, in admission order (sizing="measured")."""
        table = state.table
        limit = min(self.max_gpus, self._share_limit(K, len(state.jobs)))
        counts = [c for c in table.gpu_counts if c >= 1]
        out, room = [], K
        for s in self._order(state, state.jobs):
            if room == 0:
                break
            best, best_rate = 1, -1.0
            for c in counts:
                if c > min(limit, room):
                    continue
                rate = max(table.steps_per_second(s.job.model, g, c) for g in types)
                if c > 1 and _efficiency(table, s.job.model, types[:1], c) < self.min_efficiency:
                    continue
                if rate > best_rate * (1 + 1e-9):
                    best, best_rate = c, rate
            out.append((s, best))
            room -= best
        return out

    # ------------------------------------------------------------ decide
    def decide(self, state):
        from ..api import place
        from ..bound import lower_bound
        from ..problem import Problem

        if not self.oracle:
            self.estimate.observe(state)
        types = tuple(g for g in state.cluster if state.cluster[g] > 0)
        self._types = types
        counts = [state.cluster[g] for g in types]
        K = sum(counts)
        # no job above share_cap equal shares of the cluster among the active jobs
        self._share = self._share_limit(K, len(state.jobs))
        self._weight = None
        if self.sizing != "range" and not self.rigid:
            sized = (self._sizes_marginal if self.sizing == "marginal" else self._sizes)(state, types, K)
            admitted = [s for s, _ in sized]
        else:
            sized = None
            admitted = self._admit(state, K)
        if not admitted:
            return {}
        S = len(admitted)
        rho = np.empty((S, len(types)))
        batch = np.empty(S)
        iters = np.empty(S)
        grad = np.empty(S)
        lo = np.empty(S, dtype=np.int64)
        hi = np.empty(S, dtype=np.int64)
        rt = np.empty(S)
        offset = dict(zip(types, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)))
        current = np.full(K, -1, dtype=np.int64)
        if self._weight is not None:
            wts = np.array([self._weight[s.job.job_id] for s in admitted])
            wts /= wts.mean()  # SMP sees the weighted objective at the scale of the real one
        # a cluster given node by node: SMP's Problem gets the nodes, and a sized job the ring all-reduce of its
        # gradient between nodes (the progress model's network term, docs/online.md §2.2); inside a node the
        # table's rate at n already carries the communication, so the links inside a node are free here
        topo = bool(state.nodes) and sized is not None
        for i, s in enumerate(admitted):
            r, b, cap, comm = self._model_data(state.table, types, s.job.model)
            if sized is not None:
                # a fixed measured size n: each type's per-GPU rate at n from the table, no communication
                # term (the table's figure at n carries it), so SMP's model is the progress model's
                n = sized[i][1]
                lo[i] = hi[i] = n
                batch[i] = n * b
                rho[i] = [batch[i] * state.table.steps_per_second(s.job.model, g, n) / n for g in types]
                grad[i] = default_grad_bytes(s.job.model) if topo else 0.0
            else:
                lo[i], hi[i] = self._bounds(s.job, cap)
                # a Problem job uses at most `batch` workers: the batch (and with it the samples/s, so that
                # the JCTs stay steps / steps-per-second) is scaled to the largest size allowed
                scale = max(1, -(-int(hi[i]) // int(b)))
                rho[i], batch[i], grad[i] = r * scale, b * scale, comm * _BANDWIDTH
            iters[i] = max(self._left(state, s), 1e-9)
            rt[i] = max(state.progress.restart_time(s.job.model), self.restart_floor)
            if self._weight is not None:  # the job's JCT and its restart weighted alike
                iters[i] *= wts[i]
                rt[i] *= wts[i]
            for g, idx in s.gpus.items():
                # a GPU the job cannot use at this round's size (no table figure there) is not kept
                if g in offset and rho[i, types.index(g)] > 0:
                    current[offset[g] + np.asarray(idx, dtype=np.int64)] = i
        net = {}
        if topo:
            node = np.empty(K, dtype=np.int64)
            for v, nd in enumerate(state.nodes):
                node[offset[nd.gpu_type] + np.asarray(nd.gpus, dtype=np.int64)] = v
            net = {"node": node, "node_bandwidth": math.inf}
            if state.network.rack is not None:  # a job inside one rack all-reduces at its rack's bandwidth
                net.update(rack=np.asarray(state.network.rack, dtype=np.int64),
                           rack_bandwidth=np.asarray(state.network.rack_bandwidth, dtype=np.float64))
        problem = Problem(rho, counts, batch, iters, grad_bytes=grad,
                          bandwidth=state.network.inter if topo else _BANDWIDTH, min_workers=lo, max_workers=hi,
                          current=current, restart_time=rt, **net)
        seed = (self.seed * 1_000_003 + state.round_index) % 2**64
        pl = place(problem, method="smp", seed=seed, threads=1, samples=self.samples,
                   restart_candidates=self.restart_candidates)
        if topo:
            # SMP prices the nodes itself (docs/model.md §3.13); the topology-aware keep-greedy, priced exactly
            # like SMP's result, stays as a safety net and is taken when it is better
            alt = place(problem, method="keep-greedy")
            if alt.mean_jct < pl.mean_jct:
                pl = alt
        if self.certify:
            bound = lower_bound(problem, time_limit=CERTIFY_TIME_LIMIT).bound
            self.bound_log.append((state.round_index, pl.mean_jct, bound, pl.gap_to_bound(bound)))
        wj = pl.worker_job
        wt = problem.worker_type
        out = {}
        busy = wj >= 0
        cnt = np.zeros((S, len(types)), dtype=np.int64)
        np.add.at(cnt, (wj[busy], wt[busy]), 1)
        for i, s in enumerate(admitted):
            if topo and self.physical:  # the GPUs of SMP's priced placement, not counts for the simulator to map
                mine = np.flatnonzero(wj == i)
                alloc = {types[g]: tuple(int(w) - offset[types[g]] for w in mine[wt[mine] == g])
                         for g in range(len(types)) if cnt[i, g]}
            else:
                alloc = {types[g]: int(cnt[i, g]) for g in range(len(types)) if cnt[i, g]}
            if alloc:
                out[s.job.job_id] = alloc
        self.decision_log.append((len(state.jobs), S))
        return out


class SMPRigidPolicy(SMPPolicy):
    """SMP with the trace's GPU counts: every job gets exactly its ``scale_factor`` GPUs; SMP picks types and GPUs.

    Same parameters as :class:`SMPPolicy` (``max_gpus`` unused).  Admission:
    jobs in the ``admission`` order, first fit while their scale factors fit
    the cluster (a smaller job further down the order may fill what is left).
    """

    name = "smp-rigid"
    label = "SMP, trace sizes (ours)"
    rigid = True

    def _share_limit(self, K, n_jobs):
        """Most GPUs a job may get under ``share_cap`` equal shares of the ``K`` GPUs among ``n_jobs`` (at least 1)."""
        share = self.share_cap * K / max(n_jobs, 1)
        return K if math.isinf(share) else max(1, int(share))

    def _bounds(self, job, cap):
        return job.scale_factor, job.scale_factor


def _service_class(s, progress, round_s):
    """Job state ``s``'s class of attained work: 0 below one round of work at its best rate, then
    ``k`` for ``[2**(k-1), 2**k)`` rounds (Tiresias-like discretised least attained service:
    a job changes class when its work doubles, so classes reorder jobs rarely)."""
    b = progress.bound(s.job.model, s.job.scale_factor)
    a = s.done_steps / b / round_s if b > 0 else 0.0
    return 0 if a < 1 else int(math.floor(math.log2(a))) + 1


def _tie(gain):
    """``gain`` rounded to 40 significant bits: moves of equal value in exact arithmetic (a first GPU at the
    job's best per-GPU rate is worth 1; so is each GPU of a jump to the count that rate is measured at)
    tie, and ties go by the admission order instead of by the last bits of a division."""
    if gain <= 0:
        return gain
    m, e = math.frexp(gain)
    return math.ldexp(round(m * 1099511627776.0), e - 40)


def _efficiency(table, model, types, n):
    """Per-GPU efficiency ``T(n) / (n T(1))`` of ``model`` on ``n`` GPUs, the best over ``types`` (0 without figures)."""
    best = 0.0
    for g in types:
        t1, tn = table.steps_per_second(model, g, 1), table.steps_per_second(model, g, n)
        if t1 > 0 and tn > 0:
            best = max(best, tn / (n * t1))
    return best


def _comm_per_step(table, model, types):
    """Seconds of communication per step, fitted to the table's multi-GPU scaling (0 when none is measured).

    On the fastest type with multi-GPU figures, least squares of
    ``1/T(n) - 1/(n T(1))`` against ``2 (n - 1) / n`` over the measured
    ``n > 1``, clipped at 0 (a table that scales super-linearly gets none).
    """
    best, fit = -1.0, 0.0
    for g in types:
        t1 = table.steps_per_second(model, g, 1)
        xs, ys = [], []
        for n in table.gpu_counts:
            tn = table.steps_per_second(model, g, n) if n > 1 else 0.0
            if n > 1 and tn > 0 and t1 > 0:
                xs.append(float(ring_fraction(n)))
                ys.append(1.0 / tn - 1.0 / (n * t1))
        if xs and t1 > best:
            x, y = np.array(xs), np.array(ys)
            best, fit = t1, max(0.0, float(x @ y / (x @ x)))
    return fit if math.isfinite(fit) else 0.0


class SMPFairPolicy(SMPPolicy):
    """``"smp"`` with its fairness setting on: ``fairness=1.5`` by default.

    A job whose estimated finish-time fairness reaches ``fairness`` (the FTF it
    would end with if it ran at an isolated ``1 / n`` share of the cluster from
    now on) is served before every other job; the rest is :class:`SMPPolicy`.
    """

    name = "smp-fair"
    label = "SMP + fairness (ours)"

    def __init__(self, fairness=1.5, **options):
        super().__init__(fairness=fairness, **options)


class SMPOraclePolicy(SMPPolicy):
    """``"smp"`` told every job's true remaining steps (an oracle; for comparison, not a scheduler).

    The same parameters and rules as :class:`SMPPolicy`, with the true remaining steps
    where ``"smp"`` uses :class:`RemainingEstimate`: the admission order (``"srpt"`` is
    then true shortest remaining time first), the value weights and the Problem's
    iterations.  It reproduces ``"smp"`` as it was before policies were made
    non-oracle by default, bit for bit.
    """

    name = "smp-oracle"
    label = "SMP (ours, oracle lengths)"
    oracle = True
    _default_admission = "srpt"


OUR_POLICIES = {"smp": SMPPolicy, "smp-oracle": SMPOraclePolicy, "smp-fair": SMPFairPolicy,
                "smp-rigid": SMPRigidPolicy}
