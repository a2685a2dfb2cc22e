"""The peer policies of hetplace.online (policies_peers.py, _lp.py) on small hand-made cluster states.

The simulator is not needed: ``State`` / ``JState`` below carry the contract's fields
and ``Progress`` reads the shipped Gavel table (one type, consolidated), and
``run_rounds`` is a minimal round loop for the static job sets the mechanism tests use.
"""

import itertools
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from scipy.optimize import linprog

from hetplace.data import load_gavel
from hetplace.errors import InvalidOptionError
from hetplace.online import _lp
from hetplace.online.policies_peers import PEER_POLICIES, SIZES, AlloxPolicy, SiaPolicy, _allox_match

TABLE = load_gavel()
CLUSTER = {"v100": 4, "p100": 4, "k80": 4}
MULTI_MODELS = [m for m in TABLE.models if all(TABLE.steps_per_second(m, g, 8) > 0 for g in TABLE.types)]
GAVEL_LIKE = ("fifo", "fifo-aware", "las", "las-aware", "ftf", "ftf-aware", "allox")


@dataclass(frozen=True)
class Job:
    job_id: int
    model: str
    arrival: float
    total_steps: float
    scale_factor: int = 1
    duration: float = 0.0


@dataclass(frozen=True)
class JState:
    job: Job
    done_steps: float = 0.0
    allocation: dict = field(default_factory=dict)
    attained_service: float = 0.0
    time_run: float = 0.0
    rounds_on: dict = field(default_factory=dict)
    restarts: int = 0


class Progress:
    def steps_per_second(self, model, allocation):
        (g, n), = allocation.items()
        return TABLE.steps_per_second(model, g, n, consolidated=True)

    def restart_time(self, model):
        return 0.0  # free restarts (the simulator's "none")


PROGRESS = Progress()


@dataclass(frozen=True)
class State:
    time: float
    round_s: float
    cluster: dict
    jobs: tuple
    progress: object = PROGRESS
    table: object = TABLE


def random_state(seed, n_jobs=10, cluster=CLUSTER, multi=False, steps=(1e4, 1e6)):
    rng = np.random.default_rng(seed)
    models = MULTI_MODELS if multi else TABLE.models
    jobs = []
    for i in range(n_jobs):
        s = int(rng.choice([1, 1, 2, 4, 8])) if multi else 1
        job = Job(i, models[rng.integers(len(models))], float(10 * i), float(rng.uniform(*steps)), s)
        jobs.append(JState(job, done_steps=float(rng.uniform(0, 0.5)) * job.total_steps))
    return State(time=10.0 * n_jobs + 100.0, round_s=360.0, cluster=dict(cluster), jobs=tuple(jobs))


def run_rounds(policy, state, rounds):
    """Apply the policy's decisions round after round on a static job set (no job ever finishes)."""
    counts = {js.job.job_id: {} for js in state.jobs}
    for k in range(rounds):
        alloc = policy.decide(state)
        check_allocation(policy.name, state, alloc)
        jobs = []
        for js in state.jobs:
            a = alloc.get(js.job.job_id, {})
            for g in a:
                counts[js.job.job_id][g] = counts[js.job.job_id].get(g, 0) + 1
            jobs.append(replace(js, allocation=dict(a), rounds_on=dict(counts[js.job.job_id])))
        state = replace(state, time=state.time + state.round_s, jobs=tuple(jobs))
    return counts


def check_allocation(name, state, alloc):
    active = {js.job.job_id: js for js in state.jobs}
    assert set(alloc) <= set(active), name
    used = dict.fromkeys(state.cluster, 0)
    for jid, a in alloc.items():
        assert len(a) == 1, (name, a)  # every peer gives a job GPUs of one type
        (g, n), = a.items()
        assert g in state.cluster and isinstance(n, int) and n > 0, (name, a)
        used[g] += n
        job = active[jid].job
        if name in GAVEL_LIKE:
            assert n == job.scale_factor, (name, jid, a)
        else:
            assert n in SIZES
        assert PROGRESS.steps_per_second(job.model, a) > 0, (name, jid, a)
    for g, n in used.items():
        assert n <= state.cluster[g], (name, used)


# ------------------------------------------------------------------ every policy: valid, deterministic
@pytest.mark.parametrize("name", sorted(PEER_POLICIES))
@pytest.mark.parametrize("multi", [False, True])
def test_policy_allocations_are_valid_and_deterministic(name, multi):
    for seed in range(3):
        cluster = {"v100": 8, "p100": 8, "k80": 8} if multi else CLUSTER
        state = random_state(seed, n_jobs=14, multi=multi, cluster=cluster)
        a1 = PEER_POLICIES[name]().decide(state)
        check_allocation(name, state, a1)
        assert a1, name  # more demand than GPUs: someone runs
        assert PEER_POLICIES[name]().decide(state) == a1
        # over many rounds too (agnostic shuffles are seeded)
        s2 = random_state(seed, n_jobs=6, multi=multi, cluster=cluster)
        assert run_rounds(PEER_POLICIES[name](), s2, 12) == run_rounds(PEER_POLICIES[name](), s2, 12)


@pytest.mark.parametrize("name", sorted(PEER_POLICIES))
def test_policy_with_no_jobs_and_with_a_job_too_big_for_the_cluster(name):
    assert PEER_POLICIES[name]().decide(random_state(0, n_jobs=0)) == {}
    big = Job(0, MULTI_MODELS[0], 0.0, 1e5, 8)
    state = State(10.0, 360.0, {"v100": 4, "k80": 4}, (JState(big),))
    if name == "allox":
        assert AlloxPolicy().decide(state) == {}
    else:
        alloc = PEER_POLICIES[name]().decide(state)
        check_allocation(name, state, alloc)
        if name != "sia":  # Sia may give the job 4 GPUs instead
            assert alloc == {}


def test_registry_names_match_the_policies():
    assert set(PEER_POLICIES) == {"fifo", "fifo-aware", "las", "las-aware", "ftf", "ftf-aware", "allox", "sia",
                                  "gavel-mst"}
    for name, cls in PEER_POLICIES.items():
        assert cls().name == name


@pytest.mark.parametrize("name, options, match", [
    ("las", {"bogus": 1}, "does not take option"),
    ("las", {"min_reset_interval": -1}, "min_reset_interval"),
    ("ftf-aware", {"tol": 0}, "tol"),
    ("fifo", {"type_order": "fastest"}, "type_order"),
    ("fifo", {"seed": -1}, "seed"),
    ("allox", {"multi_gpu": "split"}, "multi_gpu"),
    ("sia", {"p": float("nan")}, "p must be"),
    ("sia", {"lambda_n": 0}, "lambda_n"),
    ("sia", {"rigid": 1}, "rigid"),
    ("sia", {"time_limit": float("nan")}, "time_limit"),
])
def test_bad_options_raise_invalid_option_error(name, options, match):
    with pytest.raises(InvalidOptionError, match=match):
        PEER_POLICIES[name](**options)


def test_positional_options_are_refused():
    with pytest.raises(InvalidOptionError, match="by keyword"):
        PEER_POLICIES["las"](1920.0)


def test_allox_multi_gpu_error_option_names_the_job():
    state = random_state(1, n_jobs=8, multi=True)
    big = next(js.job for js in state.jobs if js.job.scale_factor > 1)
    with pytest.raises(InvalidOptionError, match=f"job {big.job_id} asks for"):
        AlloxPolicy(multi_gpu="error").decide(state)


# ------------------------------------------------------------------ FIFO
def test_fifo_is_non_preemptive_and_stops_at_the_head_of_the_queue():
    m = "ResNet-18 (batch size 64)"
    jobs = (
        JState(Job(0, m, 0.0, 1e5, 1), allocation={"k80": 1}),  # running: keeps its k80
        JState(Job(1, m, 1.0, 1e5, 8)),  # head of the queue: 8 GPUs of one type do not exist
        JState(Job(2, m, 2.0, 1e5, 1)),  # must wait behind job 1
    )
    state = State(10.0, 360.0, {"v100": 4, "k80": 4}, jobs)
    assert PEER_POLICIES["fifo"]().decide(state) == {0: {"k80": 1}}


def test_fifo_aware_takes_the_fastest_free_type_in_arrival_order():
    rec = "Recommendation (batch size 1024)"  # faster on p100 than on v100
    res = "ResNet-50 (batch size 64)"
    jobs = (JState(Job(0, res, 0.0, 1e5)), JState(Job(1, rec, 1.0, 1e5)), JState(Job(2, res, 2.0, 1e5)))
    state = State(10.0, 360.0, {"v100": 1, "p100": 1, "k80": 1}, jobs)
    assert PEER_POLICIES["fifo-aware"]().decide(state) == {0: {"v100": 1}, 1: {"p100": 1}, 2: {"k80": 1}}
    # agnostic: the cluster's type order
    assert PEER_POLICIES["fifo"]().decide(state) == {0: {"v100": 1}, 1: {"p100": 1}, 2: {"k80": 1}}
    flipped = replace(state, cluster={"k80": 1, "p100": 1, "v100": 1})
    assert PEER_POLICIES["fifo"]().decide(flipped) == {0: {"k80": 1}, 1: {"p100": 1}, 2: {"v100": 1}}


# ------------------------------------------------------------------ the max-min LP against linprog
def linprog_max_min(coef, scale, cap):
    """max z s.t. z <= sum_t c X, rows <= 1, capacity; variables [X (row-major), z]."""
    J, T = coef.shape
    n = J * T + 1
    A, b = [], []
    for j in range(J):
        row = np.zeros(n)
        row[j * T:(j + 1) * T] = -coef[j]
        row[-1] = 1.0
        A.append(row), b.append(0.0)
        row = np.zeros(n)
        row[j * T:(j + 1) * T] = 1.0
        A.append(row), b.append(1.0)
    for t in range(T):
        row = np.zeros(n)
        row[t:J * T:T] = scale
        A.append(row), b.append(cap[t])
    bounds = [(0, 1 if (coef[j, t] > 0 and scale[j] <= cap[t]) else 0) for j in range(J) for t in range(T)] + [(0, None)]
    c = np.zeros(n)
    c[-1] = -1.0
    res = linprog(c, A_ub=np.array(A), b_ub=b, bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


def check_shares(X, scale, cap):
    assert np.all(X >= 0) and np.all(X.sum(axis=1) <= 1 + 1e-9)
    assert np.all(scale @ X <= cap + 1e-7)


@pytest.mark.parametrize("seed", range(20))
def test_max_min_shares_match_linprog(seed):
    rng = np.random.default_rng(seed)
    J, T = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    coef = rng.uniform(0.1, 3.0, (J, T)) * (rng.random((J, T)) > 0.2)
    coef[:, 0] = np.maximum(coef[:, 0], 0.05)  # every job usable somewhere
    scale = rng.choice([1, 2, 4], J).astype(float)
    cap = rng.integers(4, 9, T).astype(float)
    res = _lp.max_min_shares(coef, scale, cap)
    check_shares(res.shares, scale, cap)
    z = linprog_max_min(coef, scale, cap)
    assert res.value == pytest.approx(z, rel=1e-7, abs=1e-9)
    assert np.min((coef * res.shares).sum(axis=1)) == pytest.approx(z, rel=1e-6, abs=1e-9)


def test_max_min_by_hand_two_jobs_one_gpu():
    # two single-GPU jobs on one GPU: half the time each; the second-stage LP keeps that
    res = _lp.max_min_shares(np.array([[1.0], [2.0]]), np.array([1.0, 1.0]), np.array([1.0]))
    assert res.value == pytest.approx(2 / 3)  # z = X0 = 2 X1, X0 + X1 = 1
    np.testing.assert_allclose(res.shares[:, 0], [2 / 3, 1 / 3], atol=1e-6)


@pytest.mark.parametrize("point", ["center", "efficient", "vertex"])
def test_las_aware_shares_are_the_lp_with_gavels_normalisation(point):
    state = random_state(3, n_jobs=9, multi=True)
    policy = PEER_POLICIES["las-aware"](point=point)
    policy.decide(state)
    types = list(state.cluster)
    jobs = sorted(state.jobs, key=lambda js: js.job.job_id)
    scale = np.array([js.job.scale_factor for js in jobs], float)
    cap = np.array([state.cluster[g] for g in types], float)
    R = np.array([[PROGRESS.steps_per_second(js.job.model, {g: js.job.scale_factor}) if js.job.scale_factor <= state.cluster[g]
                   else 0.0 for g in types] for js in jobs])
    prop = R @ (cap / cap.sum())  # Gavel's proportional rate
    ok = prop > 0  # jobs that can run somewhere
    coef = scale[ok, None] * R[ok] / prop[ok, None]
    X = np.array([[policy.shares()[js.job.job_id][g] for g in types] for js in jobs])
    assert np.all(X[~ok] == 0)
    X, scale = X[ok], scale[ok]
    check_shares(X, scale, cap)
    assert np.min((coef * X).sum(axis=1)) == pytest.approx(linprog_max_min(coef, scale, cap), rel=2e-6)


def test_las_aware_center_is_interior_to_the_optimal_face():
    # the analytic centre keeps every job at the max-min value and leaves slack wherever the face allows it,
    # unlike a vertex (zeros) and unlike the most efficient point (the best jobs get the most)
    from hetplace.online import _lp

    rng = np.random.default_rng(1)
    J, cap = 40, np.array([12.0, 12.0, 12.0])
    coef = rng.uniform(0.5, 10, (J, 3))
    scale = np.ones(J)
    z = _lp.max_min_shares(coef, scale, cap, efficient=False).value
    X = _lp.max_min_shares(coef, scale, cap, center=True).shares
    check_shares(X, scale, cap)
    assert (coef * X).sum(axis=1).min() >= z * (1 - 2e-6)
    assert np.all(X > 0)  # strictly inside every x >= 0 of the face


def test_las_agnostic_gives_equal_gpu_time_split_by_type_counts():
    state = random_state(4, n_jobs=20, multi=True, cluster={"v100": 8, "p100": 4, "k80": 4})
    policy = PEER_POLICIES["las"]()
    policy.decide(state)
    sh = policy.shares()
    jobs = {js.job.job_id: js.job for js in state.jobs}
    gpu_time = [jobs[j].scale_factor * sum(row.values()) for j, row in sh.items()]
    assert min(gpu_time) == pytest.approx(16 / 20 if min(j.scale_factor for j in jobs.values()) >= 16 / 20 else 1, rel=1e-6) \
        or min(gpu_time) > 0
    for row in sh.values():  # split 2:1:1 as the counts
        assert row["v100"] == pytest.approx(2 * row["p100"]) and row["p100"] == pytest.approx(row["k80"])
    scale = np.array([jobs[j].scale_factor for j in sh], float)
    assert min(gpu_time) == pytest.approx(linprog_max_min(scale[:, None], scale, np.array([16.0])), rel=1e-6)


# ------------------------------------------------------------------ FTF against an independent bisection
def linprog_ftf_reachable(rho, tput, scale, cap, left, elapsed, E):
    slack = rho * E - elapsed
    if np.any(slack <= 0):
        return False
    need = left / slack
    return linprog_max_min(tput / need[:, None], scale, cap) >= 1 - 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_ftf_shares_are_optimal_within_tolerance(seed):
    rng = np.random.default_rng(100 + seed)
    J, T = int(rng.integers(2, 7)), 3
    tput = rng.uniform(0.5, 5.0, (J, T))
    scale = rng.choice([1, 2], J).astype(float)
    cap = np.array([2.0, *rng.integers(1, 4, T - 1)])  # every job fits on type 0
    tput[scale[:, None] > cap[None, :]] = 0.0  # as the policies pass it: 0 where the job does not fit
    left = rng.uniform(1e3, 1e5, J)
    elapsed = rng.uniform(0, 1e4, J)
    isolated = rng.uniform(0, 5e3, J)
    tol = 1e-4
    res = _lp.ftf_shares(tput, scale, cap, left, elapsed, isolated, tol=tol)
    check_shares(res.shares, scale, cap)
    iso_rate = (tput * _lp.isolated_share(cap, scale)).sum(axis=1)
    ratios = _lp.ftf_ratios(res.shares, tput, left, elapsed, isolated, iso_rate)
    assert np.max(ratios) == pytest.approx(res.value, rel=1e-9)
    assert res.bound <= res.value * (1 + 1e-12)
    # the reported value is reachable and a ratio 2 tol lower is not (checked with HiGHS)
    E = isolated + left / iso_rate
    assert linprog_ftf_reachable(res.value * (1 + 1e-6), tput, scale, cap, left, elapsed, E)
    assert not linprog_ftf_reachable(res.value * (1 - 2 * tol), tput, scale, cap, left, elapsed, E)


def test_ftf_isolated_share_by_hand():
    cap = np.array([6.0, 3.0])
    scale = np.array([1.0, 2.0, 1.0, 8.0])
    X = _lp.isolated_share(cap, scale)  # m_t / (n s_j), rows above 1 scaled back to 1
    np.testing.assert_allclose(X, [[2 / 3, 1 / 3], [2 / 3, 1 / 3], [2 / 3, 1 / 3], [6 / 32, 3 / 32]])
    assert np.all(scale @ X <= cap + 1e-12)


# ------------------------------------------------------------------ Gavel's round mechanism
@pytest.mark.parametrize("name", ["las-aware", "ftf-aware", "las"])
def test_round_mechanism_converges_to_the_lp_shares(name):
    state = random_state(7, n_jobs=16, cluster={"v100": 3, "p100": 3, "k80": 3}, multi=False)
    policy = PEER_POLICIES[name]()
    rounds = 1500
    counts = run_rounds(policy, state, rounds)
    assert policy.n_solves == 1  # static job set: solved once
    sh = policy.shares()
    worst = 0.0
    for jid, row in sh.items():
        for g, x in row.items():
            worst = max(worst, abs(counts[jid].get(g, 0) / rounds - x))
    assert worst < 0.04, worst


def test_lp_is_resolved_only_when_the_job_set_changes_and_the_interval_has_passed():
    state = random_state(8, n_jobs=6)
    policy = PEER_POLICIES["las-aware"](min_reset_interval=1000.0)
    policy.decide(state)
    policy.decide(replace(state, time=state.time + 360))
    assert policy.n_solves == 1  # same set
    fewer = replace(state, time=state.time + 720, jobs=state.jobs[1:])
    policy.decide(fewer)
    assert policy.n_solves == 1  # changed, but only 720 s since the reset
    assert 0 not in policy.shares()  # the finished job left the allocation
    policy.decide(replace(fewer, time=state.time + 1080))
    assert policy.n_solves == 2
    eager = PEER_POLICIES["las-aware"](min_reset_interval=0.0)
    eager.decide(state)
    eager.decide(replace(fewer, time=state.time + 1.0))
    assert eager.n_solves == 2


def test_new_jobs_wait_for_the_next_solve_but_fill_idle_gpus_with_new_jobs_run():
    state = random_state(9, n_jobs=2, cluster={"v100": 2, "p100": 2, "k80": 2})
    policy = PEER_POLICIES["las-aware"](new_jobs="run")
    policy.decide(state)
    extra = JState(Job(99, TABLE.models[0], state.time, 1e5))
    alloc = policy.decide(replace(state, time=state.time + 360, jobs=state.jobs + (extra,)))
    assert 99 in alloc and 99 not in policy.shares()  # priority 0, yet 4 GPUs are idle


@pytest.mark.parametrize("name", ["las", "las-aware", "ftf", "ftf-aware"])
def test_new_jobs_hold_their_gpus_idle_until_the_next_solve_as_in_gavel(name):
    state = random_state(9, n_jobs=2, cluster={"v100": 2, "p100": 2, "k80": 2})
    policy = PEER_POLICIES[name]()  # new_jobs="idle", Gavel's simulator
    policy.decide(state)
    extra = JState(Job(99, TABLE.models[0], state.time, 1e5))
    later = replace(state, time=state.time + 360, jobs=state.jobs + (extra,))
    assert 99 not in policy.decide(later)  # picked from a queue, yet not run
    assert 99 in policy.decide(replace(later, time=state.time + 2400))  # re-solved after 1920 s: in the shares


# ------------------------------------------------------------------ AlloX against brute force
def brute_force_total_completion(q, free):
    """Least sum of completion times of all jobs on free GPUs (each GPU runs its jobs back to back)."""
    J, T = q.shape
    gpus = [t for t in range(T) for _ in range(int(free[t]))]
    best = np.inf
    for assign in itertools.product(range(len(gpus)), repeat=J):
        total = 0.0
        for k, t in enumerate(gpus):
            times = sorted(q[j, t] for j in range(J) if assign[j] == k)
            total += sum(np.cumsum(times))  # shortest first is optimal on one GPU
        best = min(best, total)
    return best


@pytest.mark.parametrize("seed", range(10))
def test_allox_matching_is_the_least_total_completion_time(seed):
    rng = np.random.default_rng(seed)
    J, T = int(rng.integers(1, 6)), 2
    q = rng.uniform(1.0, 10.0, (J, T))
    free = rng.integers(1, 3, T)
    starts, total = _allox_match(q, free)
    assert total == pytest.approx(brute_force_total_completion(q, free), rel=1e-9)
    assert 0 < len(starts) <= min(J, int(free.sum())) and len({j for j, _ in starts}) == len(starts)
    for t in range(T):  # a GPU may idle when every job does better queued on a faster type
        assert sum(1 for _, u in starts if u == t) <= free[t]


# ------------------------------------------------------------------ Sia against brute force
@pytest.mark.parametrize("seed", range(6))
def test_sia_solution_is_the_brute_force_optimum(seed):
    state = random_state(20 + seed, n_jobs=4, cluster={"v100": 4, "k80": 2}, multi=True)
    policy = SiaPolicy()
    alloc = policy.decide(state)
    check_allocation("sia", state, alloc)
    types = list(state.cluster)
    jobs = sorted(state.jobs, key=lambda js: js.job.job_id)
    options = [[None] + policy._weights(state, js, types) for js in jobs]
    best = -np.inf
    for pick in itertools.product(*options):
        used = np.zeros(len(types))
        for c in pick:
            if c is not None:
                used[c[0]] += c[1]
        if np.all(used <= [state.cluster[g] for g in types]):
            best = max(best, sum(round(c[2] * 1000) for c in pick if c is not None))
    got = 0
    for js in jobs:
        if js.job.job_id in alloc:
            (g, n), = alloc[js.job.job_id].items()
            got += next(round(w * 1000) for t, m, w in policy._weights(state, js, types) if (types[t], m) == (g, n))
    assert got == best


def _sia_rounds(policy, state, rounds):
    """Decisions of ``policy`` fed back as the jobs' allocations, round after round (no job finishes)."""
    out = []
    for _ in range(rounds):
        alloc = policy.decide(state)
        out.append(alloc)
        jobs = tuple(replace(js, allocation=alloc.get(js.job.job_id, {}),
                             restarts=js.restarts + (alloc.get(js.job.job_id, {}) != js.allocation and
                                                     bool(js.allocation)))
                     for js in state.jobs)
        state = replace(state, time=state.time + 60, jobs=jobs)
    return out


def test_sia_keeps_a_running_job_where_it_is_when_nothing_changes():
    state = random_state(30, n_jobs=3, cluster={"v100": 8, "p100": 8}, multi=True)
    out = _sia_rounds(SiaPolicy(restart_penalty=30.0), state, 8)
    assert out[-1] == out[-2] == out[-3]


def test_sia_starts_a_job_on_one_gpu_and_at_most_doubles_it_per_round():
    state = random_state(32, n_jobs=2, cluster={"v100": 8, "p100": 8}, multi=True)
    out = _sia_rounds(SiaPolicy(), state, 6)
    largest = {}
    for alloc in out:
        for jid, a in alloc.items():
            (g, n), = a.items()
            assert n <= max(1, 2 * largest.get((jid, g), 0))
            largest[jid, g] = max(largest.get((jid, g), 0), n)
    assert all(n == 1 for a in out[0].values() for n in a.values())
    assert max(largest.values()) > 1  # the cap lets jobs grow


def test_sia_restart_factor_follows_the_restart_model_and_its_cap_is_3000():
    state = random_state(33, n_jobs=1, cluster={"v100": 8}, multi=True)
    js = replace(state.jobs[0], allocation={"v100": 1}, restarts=50)
    state = replace(state, jobs=(js,))
    free, charged = SiaPolicy(), SiaPolicy(restart_penalty=30.0)
    free.decide(state), charged.decide(state)  # they learn that the job ran on 1 V100
    free = free._weights(state, js, ["v100"])  # "none": factor 1, every measured count is worth it
    charged = charged._weights(state, js, ["v100"])  # 50 restarts: factor 0, moves cost
    assert {n for _, n, _ in free} == {1, 2}  # growth cap: one GPU held, so at most 2
    assert [n for _, n, _ in charged] == [1]  # g = 0 for a move: A = 3000, never worth it
    assert SiaPolicy._CLIP == 3000.0


def test_sia_normalises_rigid_jobs_to_their_gpu_count_on_the_slowest_type():
    job = Job(0, MULTI_MODELS[0], 0.0, 1e5, 4)
    state = State(10.0, 360.0, {"v100": 8, "k80": 8}, (JState(job),))
    w = {t: w for t, _, w in SiaPolicy(rigid=True, p=1.0, lambda_n=0.5)._weights(state, state.jobs[0],
                                                                              ["v100", "k80"])}
    r = {g: PROGRESS.steps_per_second(job.model, {g: 4}) for g in ("v100", "k80")}
    slow = min(r.values())
    assert w[1 if r["k80"] == slow else 0] == pytest.approx(4.0 - 0.5)  # slowest type worth s_j = 4, p = 1
    assert max(w.values()) == pytest.approx(round(4.0 * max(r.values()) / slow, 2) - 0.5)


def test_sia_rigid_keeps_the_trace_scale_factor():
    state = random_state(31, n_jobs=5, multi=True, cluster={"v100": 8, "p100": 8, "k80": 8})
    alloc = SiaPolicy(rigid=True).decide(state)
    jobs = {js.job.job_id: js.job for js in state.jobs}
    for jid, a in alloc.items():
        assert list(a.values()) == [jobs[jid].scale_factor]


def test_allox_starts_the_job_that_runs_first_in_the_optimal_order():
    # one GPU, three jobs: shortest first is optimal, so the shortest starts now
    starts, total = _allox_match(np.array([[3.0], [1.0], [2.0]]), np.array([1]))
    assert starts == [(1, 0)] and total == pytest.approx(1 + 3 + 6)
    # two GPUs of one type, three jobs: the two shortest start, the longest waits
    starts, _ = _allox_match(np.array([[3.0], [1.0], [2.0]]), np.array([2]))
    assert sorted(starts) == [(1, 0), (2, 0)]


# ------------------------------------------------------------------ Gavel's max-sum-throughput
def _mst_brute_force(R, scale, cap, step):
    """Best ``sum R * X`` over a grid of shares (multiples of ``step``) meeting Gavel's constraints.

    A job never gets a share of a type with fewer GPUs than it needs (Gavel could not place it there).
    """
    J, T = R.shape
    grid = np.arange(0.0, 1.0 + 1e-9, step)
    best = -np.inf
    for flat in itertools.product(grid, repeat=J * T):
        X = np.array(flat).reshape(J, T)
        if np.any(X[scale[:, None] > cap[None, :]] > 0):
            continue
        if np.all(X.sum(axis=1) <= 1 + 1e-9) and np.all(scale @ X <= cap + 1e-9):
            best = max(best, float((R * X).sum()))
    return best


def test_gavel_mst_on_a_hand_case():
    from hetplace.online.policies_peers import max_sum_throughput_shares

    # one V100 and one K80; A is 3x faster on the V100, B only 1.33x: A on the V100, B on the K80 (4.5)
    R = np.array([[3.0, 1.0], [2.0, 1.5]])
    X = max_sum_throughput_shares(R, np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    assert np.allclose(X, [[1, 0], [0, 1]]) and (R * X).sum() == pytest.approx(4.5)
    assert (R * X).sum() == pytest.approx(_mst_brute_force(R, np.array([1.0, 1.0]), np.array([1.0, 1.0]), 0.25))


@pytest.mark.parametrize("seed", range(3))
def test_gavel_mst_matches_brute_force_on_small_cases(seed):
    from hetplace.online.policies_peers import max_sum_throughput_shares

    rng = np.random.default_rng(seed)
    R = rng.integers(1, 6, size=(3, 2)).astype(float)
    R[rng.integers(3), rng.integers(2)] = 0.0  # a job that cannot run on a type
    scale = rng.choice([1.0, 2.0], size=3)
    cap = np.array([2.0, 1.0])
    X = max_sum_throughput_shares(R, scale, cap)
    assert np.all(X >= -1e-9) and np.all(X.sum(axis=1) <= 1 + 1e-9) and np.all(scale @ X <= cap + 1e-9)
    assert np.all(X[R == 0] == 0)
    # on these integer data every vertex has shares in multiples of 1/2, so a 1/4 grid holds an optimum
    assert (R * X).sum() == pytest.approx(_mst_brute_force(R, scale, cap, 0.25))



@pytest.mark.parametrize("seed", range(3))
def test_gavel_mst_centre_keeps_the_value_and_splits_ties(seed):
    from hetplace.online.policies_peers import max_sum_throughput_shares

    rng = np.random.default_rng(seed)
    row = rng.integers(1, 6, size=2).astype(float)
    R = np.vstack([row, row, rng.integers(1, 6, size=2).astype(float)])  # jobs 0 and 1 tie
    scale, cap = np.array([1.0, 1.0, 2.0]), np.array([1.0, 2.0])
    V = max_sum_throughput_shares(R, scale, cap)
    C = max_sum_throughput_shares(R, scale, cap, center=True)
    assert (R * C).sum() == pytest.approx((R * V).sum(), rel=1e-5)
    assert np.all(C.sum(axis=1) <= 1 + 1e-9) and np.all(scale @ C <= cap + 1e-9)
    assert np.allclose(C[0], C[1], atol=1e-4)  # tied jobs get the same shares at the centre


def test_gavel_mst_point_option():
    policy = PEER_POLICIES["gavel-mst"](point="center")
    assert policy.point == "center" and PEER_POLICIES["gavel-mst"]().point == "vertex"
    with pytest.raises(InvalidOptionError, match="point='efficient'"):
        PEER_POLICIES["gavel-mst"](point="efficient")
    with pytest.raises(InvalidOptionError, match="point"):
        PEER_POLICIES["gavel-mst"](point="middle")
    state = random_state(41, n_jobs=6, cluster={"v100": 2, "k80": 4})
    counts = run_rounds(policy, state, 40)
    for jid, c in counts.items():
        for g, x in policy.shares()[jid].items():
            assert abs(c.get(g, 0) / 40 - x) < 0.15

def test_gavel_mst_runs_the_shares_through_gavels_rounds():
    state = random_state(40, n_jobs=6, cluster={"v100": 2, "k80": 4})
    policy = PEER_POLICIES["gavel-mst"]()
    counts = run_rounds(policy, state, 40)
    shares = policy.shares()
    for jid, c in counts.items():
        for g, x in shares[jid].items():
            assert abs(c.get(g, 0) / 40 - x) < 0.15  # the round mechanism follows the shares
