"""The "smp" online policy's marginal sizing, its priority and fairness settings, against slow references.

The references read the true remaining steps, so the policy under test is "smp-oracle" (the same rules
as "smp" with true lengths instead of estimated ones); tests/test_online_parity.py checks that "smp"
itself never reads them."""

import math

import numpy as np
import pytest

from hetplace.data import load_gavel
from hetplace.errors import InvalidOptionError
from hetplace.online import ClusterState, Job, JobState, ProgressModel, gavel_trace, make_policy, simulate

TABLE = load_gavel()
PROGRESS = ProgressModel(TABLE)
TYPES = ("v100", "p100", "k80")


def _state(jobs, cluster, time=0.0, done=None):
    done = done or {}
    states = tuple(JobState(j, done.get(j.job_id, 0.0), {}, 0.0, 0.0, {}, 0) for j in jobs)
    return ClusterState(time, 360.0, dict(cluster), states, PROGRESS, TABLE, 0)


def _sizes(policy, state):
    types = tuple(g for g in state.cluster if state.cluster[g] > 0)
    return {s.job.job_id: n for s, n in policy._sizes_marginal(state, types, sum(state.cluster[g] for g in types))}


def _reference_sizes(state, priority=0.0, max_gpus=8):
    """The marginal rule written out slowly: every step, scan every (job, larger count) move; best gain per GPU.

    Ties: the earlier job in shortest-remaining-time order, then the smaller count.
    """
    types = tuple(g for g in state.cluster if state.cluster[g] > 0)
    K = sum(state.cluster[g] for g in types)
    order = sorted(state.jobs, key=lambda s: (s.remaining_steps / max(PROGRESS.bound(s.job.model, s.job.scale_factor),
                                                                       1e-300), s.job.arrival, s.job.job_id))
    rate = {}
    for s in order:
        best_prev = 0.0
        for c in (c for c in TABLE.gpu_counts if 1 <= c <= min(max_gpus, K)):
            r = max(TABLE.steps_per_second(s.job.model, g, c) for g in types)
            if r > best_prev:  # only counts that run faster than every smaller one
                rate[s.job.job_id, c] = r
                best_prev = r
    size = {s.job.job_id: 0 for s in order}
    room = K
    while True:
        best = None
        for pos, s in enumerate(order):
            j = s.job.job_id
            cs = sorted(c for (jj, c) in rate if jj == j)
            if not cs:
                continue
            x = max(rate[j, c] / c for c in cs)
            weight = (max(s.remaining_steps, 1e-9) / x) ** -priority
            n0 = size[j]
            r0 = rate[j, n0] if n0 else 0.0
            for c in cs:
                if c <= n0 or c - n0 > room:
                    continue
                gain = (rate[j, c] - r0) / x * weight / (c - n0)
                if gain > 0:  # ties within 40 significant bits
                    e = math.floor(math.log2(gain)) + 1
                    gain = round(gain / 2.0 ** e * 2.0 ** 40) * 2.0 ** (e - 40)
                key = (gain, -pos, -c)
                if gain > 0 and (best is None or key > best[0]):
                    best = (key, j, c)
        if best is None:
            break
        _, j, c = best
        room -= c - size[j]
        size[j] = c
    return {j: n for j, n in size.items() if n}


def _random_state(rng):
    cluster = {g: int(rng.integers(0, 6)) for g in TYPES}
    if sum(cluster.values()) == 0:
        cluster["k80"] = 1
    models = [m for m in TABLE.models if any(TABLE.steps_per_second(m, g, 1) > 0 for g in TYPES)]
    n = int(rng.integers(1, 12))
    jobs, done = [], {}
    for i in range(n):
        if i and rng.random() < 0.3:  # an exact copy of an earlier job: ties
            src = jobs[int(rng.integers(0, i))]
            jobs.append(Job(i, src.model, src.arrival, src.total_steps, 1, math.nan))
            continue
        jobs.append(Job(i, models[int(rng.integers(0, len(models)))], float(rng.integers(0, 3)) * 60.0,
                        float(10 ** rng.uniform(3, 7)), 1, math.nan))
    return _state(jobs, cluster, time=400.0)


@pytest.mark.parametrize("priority", [0.0, 0.5, 2.0])
def test_marginal_sizing_equals_a_slow_reference(priority):
    rng = np.random.default_rng(7)
    for _ in range(60):
        state = _random_state(rng)
        pol = make_policy("smp-oracle", priority=priority)
        assert _sizes(pol, state) == _reference_sizes(state, priority=priority)


@pytest.mark.parametrize("model", ["LM (batch size 5)", "Recommendation (batch size 8192)",
                                   "Transformer (batch size 256)"])
def test_first_gpus_tie_exactly_so_jobs_enter_in_shortest_remaining_time_order(model):
    # a first GPU at the job's best per-GPU rate is worth 1 in exact arithmetic; for these models the
    # division rounds to 1 - 2**-53, which must not put a longer A3C job ahead of the shorter one
    short = Job(0, model, 0.0, 1e3, 1, math.nan)
    long_ = Job(1, "A3C", 0.0, 1e7, 1, math.nan)
    state = _state([short, long_], {"v100": 1})
    assert _sizes(make_policy("smp-oracle"), state) == {0: 1}


def test_marginal_sizing_admits_before_it_upgrades_when_jobs_outnumber_gpus():
    # ResNet-50 scales sub-linearly: with priority 0 a second GPU on one job is worth less than a first on another
    jobs = [Job(i, "ResNet-50 (batch size 64)", 0.0, 1e5 * (i + 1), 1, math.nan) for i in range(6)]
    sizes = _sizes(make_policy("smp-oracle"), _state(jobs, {"v100": 4}))
    assert sizes == {0: 1, 1: 1, 2: 1, 3: 1}  # the four shortest, one GPU each


def test_priority_gives_short_jobs_more_gpus():
    m = "ResNet-18 (batch size 64)"
    jobs = [Job(0, m, 0.0, 1e5, 1, math.nan), Job(1, m, 0.0, 1e8, 1, math.nan)]
    even = _sizes(make_policy("smp-oracle", priority=0.0), _state(jobs, {"v100": 8}))
    short_first = _sizes(make_policy("smp-oracle", priority=1.0), _state(jobs, {"v100": 8}))
    assert even == {0: 4, 1: 4}  # identical jobs, identical value per GPU
    assert short_first == {0: 8}


def test_marginal_size_is_the_fastest_measured_count_alone():
    lm = Job(0, "LM (batch size 5)", 0.0, 1e7, 1, math.nan)  # 109 / 186 / 127 / 699 steps/s on 1 / 2 / 4 / 8 V100s
    assert _sizes(make_policy("smp-oracle"), _state([lm], {"v100": 8})) == {0: 8}
    assert _sizes(make_policy("smp-oracle"), _state([lm], {"v100": 4})) == {0: 2}
    assert _sizes(make_policy("smp-oracle", max_gpus=1), _state([lm], {"v100": 8})) == {0: 1}


def test_fairness_serves_a_job_behind_its_fair_share_first():
    m = "ResNet-50 (batch size 64)"
    iso = TABLE.steps_per_second(m, "v100", 1) / 2  # its isolated share: half the one V100, two jobs active
    now = 3 * 1e6 / iso  # the old job has waited three times its isolated JCT
    old = Job(0, m, 0.0, 1e6, 1, math.nan)  # long, arrived long ago, nothing done yet
    new = Job(1, m, now, 1e4, 1, math.nan)  # short, just arrived
    state = _state([old, new], {"v100": 1}, time=now)
    assert _sizes(make_policy("smp-oracle"), state) == {1: 1}  # shortest remaining time first
    assert make_policy("smp-oracle", fairness=2.0)._late(state, state.jobs) == {0}  # estimated FTF 4
    assert _sizes(make_policy("smp-oracle", fairness=2.0), state) == {0: 1}
    assert make_policy("smp-fair")._late(state, state.jobs) == {0}  # its 1.5
    assert _sizes(make_policy("smp-fair"), state) == {0: 1}
    # at 1.0 a job that just arrived has reached it too (its estimate is exactly 1), so both count
    assert make_policy("smp-oracle", fairness=1.0)._late(state, state.jobs) == {0, 1}
    assert _sizes(make_policy("smp-oracle", fairness=5.0), state) == {1: 1}  # not that far behind


@pytest.mark.parametrize("options, match", [
    ({"priority": -1}, "priority"), ({"priority": 5}, "priority"), ({"priority": "x"}, "priority"),
    ({"priority": math.nan}, "priority"), ({"fairness": 0.5}, "fairness"), ({"fairness": math.inf}, "fairness"),
    ({"fairness": "x"}, "fairness"), ({"fairness": True}, "fairness"),
])
def test_smp_rejects_bad_priority_and_fairness(options, match):
    with pytest.raises(InvalidOptionError, match=match):
        make_policy("smp-oracle", **options)


@pytest.mark.parametrize("name, options", [("smp", {}), pytest.param("smp", {"priority": 1.0}, marks=pytest.mark.slow),
                                           pytest.param("smp-fair", {}, marks=pytest.mark.slow)])
def test_marginal_policy_simulates_within_the_invariants(name, options):
    trace = gavel_trace(60, 30.0, 3, multi_gpu=True)
    cluster = {"v100": 6, "p100": 6, "k80": 6}
    a = simulate(trace, cluster, make_policy(name, **options), progress=False)
    b = simulate(trace, cluster, make_policy(name, **options), progress=False)
    assert a.status == "complete"
    assert np.array_equal(a.jobs["finish"], b.jobs["finish"])  # same seed, same result
    assert np.allclose(a.jobs["done_steps"], a.jobs["total_steps"])


def test_gains_equal_up_to_rounding_tie_and_distinct_gains_keep_their_order():
    from hetplace.online.policies_ours import _tie

    assert _tie(1.0) == _tie(1.0 - 2.0 ** -53) == _tie(1.0 + 2.0 ** -52) == 1.0
    assert _tie(0.1 * 3) == _tie(0.3)
    assert _tie(1e-30 * (1 + 2.0 ** -50)) == _tie(1e-30)
    rng = np.random.default_rng(0)
    g = np.sort(rng.uniform(0, 10, 1000))
    t = [_tie(float(x)) for x in g]
    assert t == sorted(t) and len(set(t)) == len(set(g.tolist()))  # monotone; distinct random gains stay distinct
    assert _tie(0.0) == 0.0 and _tie(-1.0) == -1.0


@pytest.mark.parametrize("name", ["smp", "smp-rigid"])
def test_certify_records_a_valid_bound_per_round_and_changes_no_decision(name):
    trace = gavel_trace(12, 30.0, 5, multi_gpu=True)
    cluster = {"v100": 4, "p100": 4, "k80": 4}
    plain = make_policy(name)
    certified = make_policy(name, certify=True)
    a = simulate(trace, cluster, plain, progress=False)
    b = simulate(trace, cluster, certified, progress=False)
    assert np.array_equal(a.jobs["finish"], b.jobs["finish"])  # the bound only watches
    assert plain.bound_log == [] and len(certified.bound_log) == len(certified.decision_log) > 0
    for round_index, mean_jct, bound, gap in certified.bound_log:
        assert 0 < bound <= mean_jct * (1 + 1e-9)  # a lower bound of that round's optimum
        assert gap == pytest.approx(mean_jct / bound - 1)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_certify_must_be_a_bool(value):
    with pytest.raises(InvalidOptionError, match="certify must be True or False"):
        make_policy("smp-oracle", certify=value)
