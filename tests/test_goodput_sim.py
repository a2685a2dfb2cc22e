"""The goodput world's simulator and policies (hetplace.online.goodput_sim, goodput_policies) on made-up profiles."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("scipy")

from goodput_fixtures import write_artifact  # noqa: E402

from hetplace.errors import InvalidOptionError  # noqa: E402
from hetplace.online.goodput import GoodputJob, GoodputModel  # noqa: E402
from hetplace.online.goodput_policies import (  # noqa: E402
    SiaGoodputPolicy,
    make_goodput_policy,
    pack,
    place_counts,
    sia_configs,
    solve_sia_program,
)
from hetplace.online.goodput_sim import simulate_goodput  # noqa: E402

CLUSTER = {"fast": (2, 4), "slow": (1, 8)}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    # about 40 minutes of work on 2 fast GPUs: a job lives for tens of rounds
    root = write_artifact(tmp_path_factory.mktemp("art"), slower={"aws": 1.0, "rtx": 2.0}, work=20000.0)
    return GoodputModel.from_sia(root, types={"fast": "aws", "slow": "rtx"}, apps=("toy", "other"),
                                 slowdown={}, restart={"toy": 20.0, "other": 5.0, "default": 30.0})


def _job(i, t=0.0, app="toy", n=2, batch=64):
    return GoodputJob(i, f"j{i}", t, app, n, batch)


class Fixed:
    """Hands out a fixed allocation per round index (a list of decisions), then the last one."""

    name = "fixed"

    def __init__(self, decisions):
        self.decisions = decisions
        self.seen = []

    def decide(self, state):
        self.seen.append(state)
        return self.decisions[min(state.round_index, len(self.decisions) - 1)]


def test_a_job_alone_runs_restart_then_its_epochs(model):
    prof = model.profile("toy", "fast")
    r = simulate_goodput([_job(0, t=30.0)], model, Fixed([{0: ("fast", {1: 2})}]), cluster=CLUSTER)
    # it waits for the round boundary at 60 s, pays its 20 s start, then runs alone on 2 GPUs of one node
    assert r.status == "complete"
    assert r.jobs["jct"][0] == pytest.approx(30.0 + 20.0 + prof.time_alone((2,)), rel=1e-9)
    assert r.jobs["restarts"][0] == 0 and r.jobs["restart_gpu_seconds"][0] == pytest.approx(40.0)
    assert r.jobs["gpu_seconds"][0] == pytest.approx(2 * (20.0 + prof.time_alone((2,))), rel=1e-9)
    assert r.jobs["done_steps"][0] == pytest.approx(prof.total_progress)


def test_fifo_alone_matches_the_model(model):
    r = simulate_goodput([_job(0, n=4)], model, "fifo", cluster=CLUSTER)
    prof = model.profile("toy", "fast")
    assert r.jobs["types"][0] == "fast"
    assert r.jobs["jct"][0] == pytest.approx(20.0 + prof.time_alone((4,)), rel=1e-9)


def test_restarts_are_charged_on_a_change_of_type_or_shape_not_of_nodes(model):
    rounds = [{0: ("fast", {0: 2})}, {0: ("fast", {1: 2})}, {0: ("fast", {1: 1, 0: 1})}, {0: ("slow", {0: 2})},
              {0: ("slow", {0: 2})}]
    pol = Fixed(rounds)
    r = simulate_goodput([_job(0, app="other")], model, pol, cluster=CLUSTER)
    # round 1 moves the same 2-GPU shape to node 1: no restart; round 2 spreads it (1, 1): a restart;
    # round 3 changes the type: another (each restart is 5 s, shorter than a round)
    assert r.jobs["restarts"][0] == 2
    assert r.jobs["restart_gpu_seconds"][0] == pytest.approx(3 * 2 * 5.0)
    assert [s.jobs[0].restarts for s in pol.seen[:5]] == [0, 0, 0, 1, 2]


def test_a_restarting_job_keeps_its_gpus(model):
    # toy restarts take 20 s; with 10 s rounds the job is pinned for two rounds whatever the policy says
    pol = Fixed([{0: ("fast", {0: 2})}, {}, {}, {0: ("fast", {0: 2})}])
    r = simulate_goodput([_job(0)], model, pol, cluster=CLUSTER, round_s=10.0)
    assert [s.jobs[0].pinned for s in pol.seen[:3]] == [False, True, False]
    assert pol.seen[1].free["fast"] == (2, 4)
    # round 2 took it off (no GPUs), round 3 resumed it: a restart
    assert r.jobs["restarts"][0] == 1


@pytest.mark.parametrize("decision, match", [
    ({7: ("fast", {0: 1})}, "job 7, which is not active"),
    ({0: ("tpu", {0: 1})}, "type 'tpu', which the cluster does not have"),
    ({0: ("fast", {2: 1})}, r"node 2 of type 'fast' for job 0; nodes are 0..1"),
    ({0: ("fast", {0: 5})}, "put 5 GPUs of job 0 on node 0 of type 'fast', which has 4 free"),
    ({0: ("fast", {0: -1})}, "counts must be whole numbers"),
    ({0: ("fast", {0: 2.0})}, "counts must be whole numbers"),
    ({0: {"fast": 2}}, r"a job on several types takes \{gpu_type: \{node: n_gpus\}, ...\}"),
    ({0: 3}, r"must be \(gpu_type, \{node: n_gpus\}\) or, on several types"),
    ({0: {"fast": {0: 1}, "tpu": {0: 1}}}, "type 'tpu', which the cluster does not have"),
    ({0: {"fast": {0: 4}, "slow": {0: 9}}}, "put 9 GPUs of job 0 on node 0 of type 'slow'"),
    ({0: ("fast", {0: 3}), 1: ("fast", {0: 2})}, "job 1 on node 0 of type 'fast', which has 1 free"),
    ([], "returned list"),
])
def test_bad_decisions_name_the_policy_and_the_fix(model, decision, match):
    with pytest.raises(InvalidOptionError, match=match):
        simulate_goodput([_job(0), _job(1)], model, Fixed([decision]), cluster=CLUSTER)


@pytest.mark.parametrize("kwargs, match", [
    ({"cluster": {"v100": (1, 4)}}, "type 'v100', which the model does not profile"),
    ({"cluster": {"fast": (0, 4)}}, r"cluster\['fast'\] must be \(nodes, GPUs per node\)"),
    ({"cluster": {"fast": 8}}, r"cluster\['fast'\] must be"),
    ({"round_s": 0.5}, "round_s must be seconds in"),
    ({"decision_limit": 0}, "decision_limit must be seconds > 0"),
    ({"max_hours": -1}, "max_hours must be hours > 0"),
    ({"policy": "lottery"}, "unknown goodput policy 'lottery'; choose one of smp, sia, "),
])
def test_bad_options_are_refused(model, kwargs, match):
    args = {"cluster": CLUSTER, "policy": "fifo", **kwargs}
    with pytest.raises(InvalidOptionError, match=match):
        simulate_goodput([_job(0)], model, **args)


def test_a_workload_of_an_unknown_application_is_refused(model):
    with pytest.raises(InvalidOptionError, match="runs application 'gpt', which the model does not profile"):
        simulate_goodput([_job(0, app="gpt")], model, "fifo", cluster=CLUSTER)
    with pytest.raises(InvalidOptionError, match="job id 0 appears twice"):
        simulate_goodput([_job(0), _job(0)], model, "fifo", cluster=CLUSTER)


@pytest.mark.parametrize("job, match", [
    (GoodputJob(0, "a", -1.0, "toy", 1, 64), "arrival must be seconds"),
    (GoodputJob(0, "a", math.inf, "toy", 1, 64), "arrival must be seconds"),
    (GoodputJob(0, "a", 0.0, "toy", 0, 64), "num_replicas must be a whole number"),
    (GoodputJob(0, "a", 0.0, "toy", 1, 2.5), "batch_size must be a whole number"),
    (GoodputJob(True, "a", 0.0, "toy", 1, 64), "job_id must be an integer"),
])
def test_hand_made_jobs_are_checked(model, job, match):
    with pytest.raises(InvalidOptionError, match=match):
        simulate_goodput([job], model, "fifo", cluster=CLUSTER)


def test_a_policy_that_never_allocates_is_stopped(model):
    r = simulate_goodput([_job(0)], model, Fixed([{}]), cluster=CLUSTER, max_hours=1.0)
    assert r.status == "stalled" and "time limit" in r.message
    assert r.n_finished == 0


# -- placement helpers ----------------------------------------------------------------------------------

def test_pack_prefers_one_node_then_the_fewest():
    assert pack([4, 2, 3], 2) == {1: 2}                 # best fit: the fullest node that holds it
    assert pack([4, 2, 3], 5) == {0: 4, 2: 1}           # most free first
    assert pack([1, 1], 3) is None
    assert pack([4], 0) is None


@given(st.lists(st.sampled_from([1, 2, 4, 8, 16, 24]), min_size=1, max_size=12))
@settings(max_examples=200, deadline=None)
def test_place_counts_packs_powers_of_two_and_whole_nodes_whenever_they_fit(sizes):
    cluster = {"g": (3, 8)}
    free = {"g": (8, 8, 8)}
    counts, total = [], 0
    for i, n in enumerate(sizes):
        if total + n <= 24:
            counts.append((i, "g", n))
            total += n
    got = place_counts(counts, cluster, free)
    assert set(got) == {c[0] for c in counts}  # every job fits
    used = [0, 0, 0]
    for jid, (g, nodes) in got.items():
        n = dict((c[0], c[2]) for c in counts)[jid]
        assert sum(nodes.values()) == n
        if n <= 8:
            assert len(nodes) == 1              # never split below a node
        else:
            assert all(v == 8 for v in nodes.values())  # whole nodes
        for k, v in nodes.items():
            used[k] += v
    assert max(used) <= 8


def test_sia_configs_of_sias_cluster():
    cfg = sia_configs({"t4": (6, 4), "a100": (2, 8), "rtx2080ti": (3, 8)})
    by = {g: [n for h, n in cfg if h == g] for g in ("t4", "a100", "rtx2080ti")}
    assert by == {"t4": [1, 2, 4, 8, 12, 16, 20, 24], "a100": [1, 2, 4, 8, 16], "rtx2080ti": [1, 2, 4, 8, 16, 24]}
    assert len(cfg) == 19


# -- Sia's programme -------------------------------------------------------------------------------------

def _brute(coef, configs, cap, lam, p):
    n, kk = coef.shape
    best = None
    for pick in itertools.product(range(-1, kk), repeat=n):
        use = {g: 0 for g in cap}
        for k in pick:
            if k >= 0:
                use[configs[k][0]] += configs[k][1]
        if any(use[g] > cap[g] for g in cap):
            continue
        val = sum(round(100 * coef[i, k]) for i, k in enumerate(pick) if k >= 0) + round(100 * lam) * sum(
            k < 0 for k in pick)
        val = val if p < 0 else -val
        if best is None or val < best:
            best = val
    return best


@pytest.mark.parametrize("seed", range(12))
def test_the_programme_is_solved_exactly(seed):
    rng = np.random.default_rng(seed)
    configs = [("a", 1), ("a", 2), ("a", 4), ("b", 1), ("b", 2)]
    n = int(rng.integers(1, 4))
    p = -0.5 if seed % 2 == 0 else 0.5
    coef = np.round(rng.choice([0.25, 0.5, 0.71, 1.0, 100.0, 3000.0], size=(n, len(configs))), 2)
    cap = {"a": int(rng.integers(0, 5)), "b": int(rng.integers(0, 3))}
    lam = 1.1 if p < 0 else -1.1
    pick = solve_sia_program(coef, configs, cap, lam, p)
    use = {g: 0 for g in cap}
    for k in pick:
        if k >= 0:
            use[configs[k][0]] += configs[k][1]
    assert all(use[g] <= cap[g] for g in cap)
    val = sum(round(100 * coef[i, k]) for i, k in enumerate(pick) if k >= 0) + round(100 * lam) * sum(
        k < 0 for k in pick)
    assert (val if p < 0 else -val) == _brute(coef, configs, cap, lam, p)


def test_sia_starts_a_new_job_on_one_gpu_and_grows_it_at_most_twofold(model):
    pol = SiaGoodputPolicy()
    r = simulate_goodput([_job(0, n=8, batch=256)], model, pol, cluster=CLUSTER)
    assert r.status == "complete"
    # a lone job grows 1 -> 2 -> 4 -> 8 at most (each step at most twice its largest size so far)
    sizes = []
    pol2 = SiaGoodputPolicy()

    class Spy:
        name = "spy"

        def decide(self, state):
            for js in state.jobs:
                sizes.append(js.n_gpus)
            return pol2.decide(state)

    simulate_goodput([_job(0, n=8, batch=256)], model, Spy(), cluster=CLUSTER)
    assert sizes[0] == 0 and sizes[1] == 1
    for a, b in zip(sizes[1:], sizes[2:]):
        assert b <= 2 * max(sizes[1:sizes.index(a) + 2])
    assert max(sizes) > 1


def test_sia_is_reproducible_and_fits(model):
    jobs = [_job(i, t=120.0 * i, app=("toy", "other")[i % 2], n=1 + i % 4, batch=64 * (1 + i % 3)) for i in range(12)]
    a = simulate_goodput(jobs, model, "sia", cluster=CLUSTER, seed=3)
    b = simulate_goodput(jobs, model, "sia", cluster=CLUSTER, seed=3)
    assert a.status == "complete" and a.n_finished == 12
    assert np.array_equal(a.jobs["finish"], b.jobs["finish"])
    assert (a.rounds["busy"] <= 1 + 1e-12).all()


def test_sia_options_are_checked():
    for kw, match in (({"p": 0}, "p must be a finite number != 0"), ({"lambda_n": math.nan}, "lambda_n"),
                      ({"clip": 0}, "clip must be"), ({"time_limit": -1}, "time_limit")):
        with pytest.raises(InvalidOptionError, match=match):
            make_goodput_policy("sia", **kw)


def test_the_oracle_ablation_knows_every_type_from_the_start(model):
    jobs = [_job(0, n=4, batch=256)]
    state_seen = []

    class Spy:
        name = "spy"

        def __init__(self, inner):
            self.inner = inner

        def decide(self, state):
            state_seen.append(state)
            return self.inner.decide(state)

    simulate_goodput(jobs, model, Spy(SiaGoodputPolicy(bootstrap=False)), cluster=CLUSTER, max_hours=0.05)
    configs, js, coef, cap, pinned = SiaGoodputPolicy(bootstrap=False).program(state_seen[0])
    boot = SiaGoodputPolicy().program(state_seen[0])[2]
    # bootstrap: only the 1-GPU entries are valid for a new job; oracle: larger counts too
    assert (boot[0] < 100).sum() == 2 and (coef[0] < 100).sum() > 2  # an invalid entry costs 1e-4 ** -0.5 = 100


# -- Gavel's max-sum-throughput as Sia ran it ------------------------------------------------------------------

def _dense_center(R, scale, cap, X0, z_low, iters=200):
    """The analytic centre written out slowly: Newton's method with the full Hessian, no Woodbury."""
    usable = (R > 0) & (scale[:, None] <= cap[None, :])
    idx = np.argwhere(usable)
    n = len(idx)
    x = X0[usable].copy()
    J, T = R.shape

    def parts(x):
        X = np.zeros((J, T))
        X[usable] = x
        return X, 1 - X.sum(1), cap - scale @ X, float((R * X).sum()) - z_low

    def phi(x):
        X, a, b, d = parts(x)
        if (x <= 0).any() or (a <= 0).any() or (b <= 0).any() or d <= 0:
            return math.inf
        return -(np.log(x).sum() + np.log(a).sum() + np.log(b).sum() + math.log(d))

    for _ in range(iters):
        X, a, b, d = parts(x)
        g = np.zeros(n)
        H = np.zeros((n, n))
        for k, (j, t) in enumerate(idx):
            g[k] = -1 / x[k] + 1 / a[j] + scale[j] / b[t] - R[j, t] / d
            H[k, k] += 1 / x[k] ** 2
            for m2, (j2, t2) in enumerate(idx):
                H[k, m2] += (j == j2) / a[j] ** 2 + (t == t2) * scale[j] * scale[j2] / b[t] ** 2 + R[j, t] * R[j2, t2] / d ** 2
        step = -np.linalg.solve(H, g)
        dec = -g @ step
        if dec < 1e-12:
            break
        s = 1.0
        while phi(x + s * step) > phi(x) - 0.25 * s * dec:
            s *= 0.5
        x = x + s * step
    return parts(x)[0]


@pytest.mark.parametrize("seed", range(8))
def test_the_max_sum_centre_is_the_analytic_centre_of_the_optimal_face(seed):
    from hetplace.online import _lp
    from hetplace.online.policies_peers import max_sum_throughput_shares

    rng = np.random.default_rng(seed)
    J, T = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    R = rng.choice([0.0, 1.0, 2.0, 3.0], size=(J, T))
    R[:, 0] = np.maximum(R[:, 0], 1.0)
    scale = rng.choice([1.0, 2.0], size=J)
    cap = rng.choice([1.0, 2.0, 4.0], size=T)
    V = max_sum_throughput_shares(R, scale, cap)
    C = max_sum_throughput_shares(R, scale, cap, center=True)
    opt = float((R * V).sum())
    assert float((R * C).sum()) >= opt * (1 - 1.1e-6)
    usable = (R > 0) & (scale[:, None] <= cap[None, :])
    assert (C[usable] > 0).all() and (C[~usable] == 0).all()
    assert (C.sum(1) <= 1 + 1e-12).all() and (scale @ C <= cap + 1e-9).all()
    T_ = T
    theta = 0.5 * min(1.0 / T_, float(np.min(cap / np.maximum((scale[:, None] * usable).sum(axis=0), 1e-300))))
    X0 = (1 - 0.5e-6) * V + 0.5e-6 * theta * usable
    ref = _dense_center(R, scale, cap, X0, opt * (1 - 1e-6))
    assert np.allclose(C, ref, atol=1e-6)
    assert _lp.max_sum_center(V, np.zeros_like(R), scale, cap) is not None  # nothing usable: unchanged


def test_two_identical_jobs_share_two_identical_types_half_and_half():
    from hetplace.online.policies_peers import max_sum_throughput_shares

    C = max_sum_throughput_shares(np.ones((2, 2)), np.ones(2), np.ones(2), center=True)
    assert np.allclose(C, 0.5, atol=1e-5)


def test_gavel_runs_jobs_at_their_trace_size_and_batch(model):
    pol = make_goodput_policy("gavel-mst")
    r = simulate_goodput([_job(0, n=4, batch=128)], model, pol, cluster=CLUSTER, round_s=360.0)
    prof = model.profile("toy", "fast")
    assert r.jobs["types"][0] == "fast" and r.jobs["max_gpus"][0] == 4
    assert r.jobs["jct"][0] == pytest.approx(20.0 + prof.time_alone((4,), batch=128), rel=1e-9)
    assert prof.time_alone((4,), batch=128) > prof.time_alone((4,))  # a fixed batch is no faster than a tuned one


def test_gavel_time_shares_jobs_that_do_not_fit_together(model):
    seen = []
    inner = make_goodput_policy("gavel-mst", center=True)

    class Spy:
        name = "spy"
        tune_batch = False

        def decide(self, state):
            d = inner.decide(state)
            seen.append(sorted(d))
            return d

    # three 4-GPU jobs, room for two on the fast type and one (slowly) on the slow one
    jobs = [_job(i, n=4, batch=128) for i in range(3)]
    r = simulate_goodput(jobs, model, Spy(), cluster={"fast": (1, 4), "slow": (1, 4)}, round_s=360.0)
    assert r.status == "complete" and r.n_finished == 3
    assert all(len(s) <= 2 for s in seen)
    assert len({tuple(s) for s in seen[:4]}) > 1  # the round mechanism rotates who runs


# -- Pollux as Sia ran it ----------------------------------------------------------------------------------

@given(seed=st.integers(0, 2**32 - 1), J=st.integers(1, 6))
@settings(max_examples=60, deadline=None)
def test_pollux_repair_keeps_virtual_nodes_caps_one_distributed_job_and_pins(seed, J):
    from hetplace._core._pollux_nb import offspring, repair

    rng = np.random.default_rng(seed)
    caps = rng.integers(1, 9, size=J)
    base = rng.integers(0, 3, size=(J, 5))
    pinned = rng.random(J) < 0.3
    pop = rng.integers(-1, 6, size=(4, J, 5))
    fit = rng.random(4)
    ctr = np.zeros(1, dtype=np.uint64)
    for k in range(7):
        kid = rng.integers(-2, 6, size=(J, 5)) if k % 2 else np.empty((J, 5), dtype=np.int64)
        if not k % 2:
            offspring(pop, np.zeros(4, dtype=np.int64), fit, base, 4, np.uint64(seed), ctr, kid)
            assert (kid <= np.maximum(pop.max(axis=0), np.maximum(base, 4))).all()  # grown at most to a node
        repair(kid, caps, 4, pinned, base, np.uint64(seed), ctr)
        free = ~pinned
        out = kid[free]
        assert (out >= 0).all() and (kid[:, :].sum(axis=0)[base[pinned].sum(axis=0) == 0] <= 4).all()
        assert (out.sum(axis=1) <= caps[free]).all()                      # the replica cap
        assert np.array_equal(kid[pinned], base[pinned])                  # pinned jobs keep theirs
        dist = (out > 0).sum(axis=1) > 1
        assert (((out > 0) & dist[:, None]).sum(axis=0) <= 1).all()      # one distributed job per node


@given(seed=st.integers(0, 2**32 - 1), J=st.integers(1, 7))
@settings(max_examples=60, deadline=None)
def test_pollux_repair_equals_a_slow_reference_when_caps_do_not_bind(seed, J):
    # with caps above every total the random spread does nothing: the rest is deterministic
    from hetplace._core._pollux_nb import repair

    rng = np.random.default_rng(seed)
    ind = rng.integers(-1, 4, size=(J, 5))
    want = np.maximum(ind, 0)
    dist = [(want[j] > 0).sum() > 1 for j in range(J)]
    for v in range(5):  # from the second distributed job present on v on, every job's replicas there go
        count = 0
        for j in range(J):
            count += bool(dist[j] and want[j, v] > 0)
            if count >= 2:
                want[j, v] = 0
    for v in range(5):  # each virtual node's 4 GPUs, filled in job order
        room = 4
        for j in range(J):
            want[j, v] = min(want[j, v], room)
            room -= want[j, v]
    got = ind.copy()
    repair(got, np.full(J, 100), 4, np.zeros(J, dtype=np.bool_), ind, np.uint64(seed), np.zeros(1, dtype=np.uint64))
    assert np.array_equal(got, want)


def test_pollux_fitness_is_the_power_mean_of_the_discounted_speedups():
    from hetplace._core._pollux_nb import fitness

    rng = np.random.default_rng(1)
    J, nv = 3, 4
    caps = np.array([8, 5, 3])
    stack = rng.random((J, nv + 1, 9)) * 4
    for i in range(J):
        stack[i, :, caps[i] + 1:] = 0.0
    base = rng.integers(0, 3, size=(J, nv))
    fac = np.array([1.0, 0.5, 0.2])
    pop = rng.integers(0, 3, size=(5, J, nv))
    pop[0] = base
    for k in range(5):
        s = []
        for i in range(J):
            n, r = int((pop[k, i] > 0).sum()), min(int(pop[k, i].sum()), caps[i])
            v = stack[i, n, r] / 4
            if (pop[k, i] != base[i]).any():
                v *= fac[i]
            s.append(v + 1e-3)
        assert fitness(pop[k], stack, caps, base, fac, -1.0) == pytest.approx(len(s) / sum(1 / x for x in s))


@pytest.mark.parametrize("seed", [0, 1])
def test_pollux_search_returns_its_last_front_and_runs_the_same_as_plain_python(seed):
    from hetplace._core._pollux_nb import fitness, search, utility

    rng = np.random.default_rng(seed)
    J, nv, size = 4, 6, 4
    caps = rng.integers(1, 9, size=J)
    stack = np.sort(rng.random((J, nv + 1, 9)) * 4, axis=2)
    base = rng.integers(0, 2, size=(J, nv))
    pinned = np.array([False, True, False, False])
    fac = rng.random(J)
    args = (base[None].copy(), base, pinned, caps, stack, fac, size, 12, 8, -1.0, np.uint64(seed))
    front, M = search(*args)
    assert 1 <= len(front) <= 12 and (np.diff(M) <= 0).all()              # the largest power mean first
    assert len({p.tobytes() for p in front}) == len(front)                 # no individual twice
    assert all(fitness(p, stack, caps, base, fac, -1.0) == m for p, m in zip(front, M))
    assert all(np.array_equal(p[pinned], base[pinned]) for p in front)
    U = [utility(p, stack, caps, size) for p in front]
    for a in range(len(front)):                                            # none dominates another
        for b in range(len(front)):
            assert not (M[b] >= M[a] and U[b] >= U[a] and (M[b] > M[a] or U[b] > U[a]))
    front2, M2 = getattr(search, "py_func", search)(*args)  # the same source as plain Python (the driver)
    assert np.array_equal(front, front2) and np.array_equal(M, M2)


@given(pts=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=14))
@settings(max_examples=80, deadline=None)
def test_pollux_fronts_and_crowding_equal_a_slow_reference(pts):
    from hetplace._core._pollux_nb import crowding, fronts

    M = np.array([float(a) for a, _ in pts])
    U = np.array([float(b) for _, b in pts])
    idx = np.arange(len(pts))
    dom = lambda k, i: M[k] >= M[i] and U[k] >= U[i] and (M[k] > M[i] or U[k] > U[i])  # noqa: E731
    left, want, r = set(idx), np.empty(len(pts), dtype=np.int64), 0
    while left:  # peel the non-dominated points off, front by front
        cur = {i for i in left if not any(dom(k, i) for k in left)}
        for i in cur:
            want[i] = r
        left -= cur
        r += 1
    assert np.array_equal(fronts(M, U, idx), want)
    front = idx[want == 0]
    d = crowding(M, U, front)
    n = len(front)
    ref = np.zeros(n)
    if n <= 2:
        ref[:] = np.inf
    else:
        for f in (M[front], U[front]):
            order = np.argsort(f, kind="stable")
            ref[order[0]] = ref[order[-1]] = np.inf
            span = f[order[-1]] - f[order[0]]
            for k in range(1, n - 1):
                if span > 0:
                    ref[order[k]] += (f[order[k + 1]] - f[order[k - 1]]) / span
    assert np.array_equal(d, ref)


def test_pollux_runs_one_type_per_job_and_is_reproducible(model):
    cluster = {"fast": (2, 4), "slow": (2, 4)}
    jobs = [_job(i, t=300.0 * i, app=("toy", "other")[i % 2], n=1 + i % 4) for i in range(6)]
    a = simulate_goodput(jobs, model, make_goodput_policy("pollux", generations=10, population=20), cluster=cluster, seed=2)
    b = simulate_goodput(jobs, model, make_goodput_policy("pollux", generations=10, population=20), cluster=cluster, seed=2)
    assert a.status == "complete" and a.n_finished == 6
    assert np.array_equal(a.jobs["finish"], b.jobs["finish"])
    with pytest.raises(InvalidOptionError, match="population must be an integer"):
        make_goodput_policy("pollux", population=0)


# -- a job on several GPU types (the mixed-rate assumption, docs/online.md §10.5) -----------------------------

def test_a_mixed_job_runs_at_the_models_mixed_rate(model):
    parts = {"fast": (2,), "slow": (2,)}
    r = simulate_goodput([_job(0)], model, Fixed([{0: {"fast": {1: 2}, "slow": {0: 2}}}]), cluster=CLUSTER)
    assert r.status == "complete" and r.jobs["types"][0] == "fast+slow"
    done, used = model.advance_mixed("toy", parts, 0.0, math.inf)
    prof = model.profile("toy", "fast")
    assert done == pytest.approx(prof.total_progress)
    assert r.jobs["jct"][0] == pytest.approx(60.0 * 0 + 20.0 + used, rel=1e-9)  # arrives at 0: start, then runs
    assert r.jobs["gpu_seconds"][0] == pytest.approx(4 * (20.0 + used), rel=1e-9)


def test_a_mixed_allocation_of_one_type_is_the_one_type_allocation(model):
    one = simulate_goodput([_job(0)], model, Fixed([{0: ("fast", {1: 2})}]), cluster=CLUSTER)
    same = simulate_goodput([_job(0)], model, Fixed([{0: {"fast": {1: 2}}}]), cluster=CLUSTER)
    assert same.jobs["jct"][0] == one.jobs["jct"][0] and same.jobs["types"][0] == "fast"


def test_mixed_restarts_follow_each_types_shape_and_the_state_reports_every_type(model):
    rounds = [{0: {"fast": {0: 2}, "slow": {0: 2}}}, {0: {"fast": {1: 2}, "slow": {0: 2}}},
              {0: {"fast": {1: 2}, "slow": {0: 4}}}, {0: ("fast", {1: 2})}, {0: ("fast", {1: 2})}]
    pol = Fixed(rounds)
    r = simulate_goodput([_job(0, app="other")], model, pol, cluster=CLUSTER)
    # round 1 moves the fast part to node 1: no restart; round 2 grows the slow part; round 3 drops it
    assert r.jobs["restarts"][0] == 2
    s1 = pol.seen[1].jobs[0]
    assert s1.gpu_type == ("fast", "slow") and s1.allocation == {"fast": {0: 2}, "slow": {0: 2}}
    assert s1.n_gpus == 4 and s1.max_gpus == {"fast": 2, "slow": 2}
    assert pol.seen[4].jobs[0].allocation == {"fast": {1: 2}} and pol.seen[4].jobs[0].gpu_type == "fast"


def test_a_restarting_mixed_job_keeps_the_gpus_of_every_type(model):
    # 5 s restart, 2 s rounds: pinned for the next two rounds whatever the policy says
    pol = Fixed([{0: {"fast": {0: 2}, "slow": {0: 2}}}, {}, {}, {}])
    simulate_goodput([_job(0, app="other")], model, pol, cluster=CLUSTER, round_s=2.0, max_hours=0.01)
    assert [s.jobs[0].pinned for s in pol.seen[:3]] == [False, True, True]
    assert pol.seen[1].free == {"fast": (2, 4), "slow": (6,)}
    assert pol.seen[3].jobs[0].allocation and pol.seen[4].jobs[0].allocation == {}  # off once the restart is done


def test_a_fixed_batch_policy_may_not_mix_types(model):
    pol = Fixed([{0: {"fast": {0: 2}, "slow": {0: 2}}}])
    pol.tune_batch = False
    with pytest.raises(InvalidOptionError, match="fixed-batch job runs on one type"):
        simulate_goodput([_job(0)], model, pol, cluster=CLUSTER)


def test_mixed_rate_reads_every_profile_for_the_whole_job_and_splits_by_speed(model):
    # one type: exactly that type's rate
    assert model.mixed_rate("toy", {"fast": (2,)}, 0) == model.profile("toy", "fast").rate((2,), 0)[0]
    assert model.mixed_rate("toy", {"fast": (2,), "slow": ()}, 1) == model.profile("toy", "fast").rate((2,), 1)[0]
    assert model.mixed_rate("toy", {}, 0) == 0.0
    mixed = model.mixed_rate("toy", {"fast": (2,), "slow": (2,)}, 0)
    # the slow type's profile is twice as slow: four GPUs with two slow ones beat two fast ones alone only if
    # the extra GPUs pay for the wider all-reduce; either way below four fast GPUs on two nodes
    fast4 = model.profile("toy", "fast").rate((2, 2), 0)[0]
    assert 0 < mixed < fast4
    # the result is the slow part's pace: no faster than the fast type's profile read at the whole shape
    assert mixed == model.mixed_rate("toy", {"slow": (2,), "fast": (2,)}, 0)  # order of the parts is immaterial


@pytest.mark.parametrize("parts, match", [
    ([("fast", (2,))], "parts must be a dict"),
    ({"tpu": (2,)}, "GPU type 'tpu'"),
    ({"fast": 2}, r"parts\['fast'\] must be a sequence"),
    ({"fast": (2.5,)}, r"parts\['fast'\] must hold whole numbers"),
    ({"fast": (-1, 2)}, r"parts\['fast'\] must hold whole numbers"),
])
def test_mixed_rate_names_a_bad_part(model, parts, match):
    with pytest.raises(InvalidOptionError, match=match):
        model.mixed_rate("toy", parts, 0)
    assert model.mixed_rate("toy", {"fast": (0, 0), "slow": ()}, 0) == 0.0
