"""SMP's policy in the goodput world (hetplace.online.goodput_smp) on made-up profiles."""

import copy

import numpy as np
import pytest

pytest.importorskip("scipy")

from goodput_fixtures import write_artifact  # noqa: E402

from hetplace.errors import InvalidOptionError  # noqa: E402
from hetplace.online.goodput import GoodputJob, GoodputModel  # noqa: E402
from hetplace.online.goodput_policies import goodput_policy_names, make_goodput_policy, sia_configs  # noqa: E402
from hetplace.online.goodput_sim import simulate_goodput  # noqa: E402
from hetplace.online.goodput_smp import SmpGoodputPolicy  # noqa: E402

CLUSTER = {"fast": (2, 4), "slow": (1, 8)}
RESTART = {"toy": 20.0, "other": 5.0, "default": 30.0}


def _model(root, epochs=4):
    art = write_artifact(root, slower={"aws": 1.0, "rtx": 2.0}, work=20000.0, epochs=epochs)
    return GoodputModel.from_sia(art, types={"fast": "aws", "slow": "rtx"}, apps=("toy", "other"), slowdown={},
                                 restart=RESTART)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return _model(tmp_path_factory.mktemp("art"))


def _job(i, t=0.0, app="toy", n=2, batch=64):
    return GoodputJob(i, f"j{i}", t, app, n, batch)


def _workload(k=12):
    return [_job(i, t=90.0 * i, app=("toy", "other")[i % 2], n=1 + i % 4, batch=64 * (1 + i % 3)) for i in range(k)]


class Spy:
    """Records every state and decision of the policy it wraps."""

    name = "spy"

    def __init__(self, inner):
        self.inner, self.states, self.decisions = inner, [], []

    def reset(self, seed=None):
        if hasattr(self.inner, "reset"):
            self.inner.reset(seed)

    def decide(self, state):
        d = self.inner.decide(state)
        self.states.append(state)
        self.decisions.append({k: ({g: dict(p) for g, p in a.items()} if isinstance(a, dict) else (a[0], dict(a[1])))
                               for k, a in d.items()})
        return d


def test_smp_is_registered_reproducible_and_fits(model):
    assert isinstance(make_goodput_policy("smp"), SmpGoodputPolicy)
    jobs = _workload()
    a = simulate_goodput(jobs, model, "smp", cluster=CLUSTER, seed=3)
    b = simulate_goodput(jobs, model, make_goodput_policy("smp"), cluster=CLUSTER, seed=3)
    assert a.status == "complete" and a.n_finished == len(jobs)
    assert np.array_equal(a.jobs["finish"], b.jobs["finish"])
    assert (a.rounds["busy"] <= 1 + 1e-12).all()


@pytest.fixture(scope="module")
def short_and_long(tmp_path_factory):
    """Two models whose jobs differ only in length (4 or 8 epochs, the first four alike)."""
    root = tmp_path_factory.mktemp("len")
    return _model(root / "a", epochs=4), _model(root / "b", epochs=8)


@pytest.mark.parametrize("name", goodput_policy_names())
def test_no_goodput_policy_reads_a_running_jobs_length(short_and_long, name):
    # the same workload on both models: every decision before the first job finishes is the same
    opts = {"generations": 5, "population": 10} if name == "pollux" else {}
    jobs = _workload(8)
    spies = [Spy(make_goodput_policy(name, **opts)), Spy(make_goodput_policy(name, **opts))]
    for m, spy in zip(short_and_long, spies):
        simulate_goodput(jobs, m, spy, cluster=CLUSTER)
    first = next(k for k, s in enumerate(spies[0].states) if s.finished)
    assert first > 3
    assert spies[0].decisions[:first] == spies[1].decisions[:first]
    if name in ("smp", "smp-mixed"):
        assert spies[0].decisions != spies[1].decisions  # and the lengths do matter once one is known


def test_remaining_is_learnt_from_finished_jobs_of_the_same_model(model):
    spy = Spy(SmpGoodputPolicy())
    simulate_goodput([_job(0), _job(1, t=4000.0)], model, spy, cluster=CLUSTER)
    pol = spy.inner
    total = model.profile("toy", "fast").total_progress
    later = next(s for s in spy.states if any(j.job.job_id == 1 for j in s.jobs) and pol._lengths)
    js = next(j for j in later.jobs if j.job.job_id == 1)
    assert pol._lengths["toy"] == [pytest.approx(total)]
    assert pol.remaining(js, 1.0) == pytest.approx(total - js.progress)
    # before any finished: as much again as done, at least a minute on the best single GPU
    fresh = SmpGoodputPolicy()
    assert fresh.remaining(js, 2.0) == pytest.approx(max(js.progress, 120.0))


def test_what_one_job_of_a_model_ran_on_is_known_for_the_next_when_pooled(model):
    configs = sia_configs(CLUSTER)
    spy = Spy(SmpGoodputPolicy())
    simulate_goodput([_job(0, n=8, batch=256), _job(1, t=3000.0, n=8, batch=256)], model, spy, cluster=CLUSTER)
    st = next(s for s in spy.states if any(j.job.job_id == 1 for j in s.jobs))
    new = next(j for j in st.jobs if j.job.job_id == 1)
    assert not new.max_gpus  # job 1 has never run
    grown = max(n for (g, n), r in zip(configs, spy.inner.rates(new, st, configs)) if r > 0)
    assert grown > 2  # job 0 grew, so job 1 may start larger than one GPU
    alone = SmpGoodputPolicy(pooled=False)
    alone._learn(st)
    r = alone.rates(new, st, configs)
    assert {n for (g, n), x in zip(configs, r) if x > 0} == {1}  # per job, as Sia: one GPU, type-blind
    assert len(set(r[r > 0])) == 1


def test_values_price_the_restart_and_the_preemption(model):
    configs = sia_configs(CLUSTER)
    spy = Spy(SmpGoodputPolicy(age_s=3600.0))
    simulate_goodput([_job(0, n=4)], model, spy, cluster=CLUSTER, max_hours=0.3)
    pol = spy.inner
    st = spy.states[-1]
    js = st.jobs[0]
    assert js.placement and not js.pinned
    v = pol.values(js, st, configs)
    r = pol.rates(js, st, configs)
    cur = configs.index((js.gpu_type, js.n_gpus))
    R = pol.remaining(js, max(r[k] for k, (_, n) in enumerate(configs) if n == 1))
    H = np.minimum(R / np.where(r > 0, r, np.inf), pol.horizon_s)
    D = np.array([0.0 if k == cur else RESTART["toy"] for k in range(len(configs))])
    raw = np.where(r > 0, r * H / (H + D), 0.0)
    raw = raw / raw.max()
    d = RESTART["toy"]
    f = 1.0 if js.age < d else max(js.age - js.restarts * d, 0.0) / (js.age + d)
    want = raw * f
    want[cur] = raw[cur]
    want[want > 0] += raw[cur] * d / (H[cur] + d)
    want *= 1.0 + js.age / pol.age_s  # aging
    assert np.allclose(v, want, rtol=1e-12)
    young = copy.copy(pol)  # what it learnt, without aging
    young.age_s = None
    assert np.allclose(young.values(js, st, configs) * (1.0 + js.age / pol.age_s), v, rtol=1e-12)
    assert v[cur] == v.max()  # alone on the cluster after its growth: staying is best


@pytest.mark.parametrize("kwargs, match", [
    ({"horizon_s": 0}, "horizon_s must be seconds > 0"),
    ({"horizon_s": float("inf")}, "horizon_s must be seconds > 0"),
    ({"age_s": 0}, "age_s must be seconds > 0 or None"),
    ({"age_s": "8h"}, "age_s must be seconds > 0 or None"),
    ({"min_samples": 0}, "min_samples"),
    ({"time_limit": -1.0}, "time_limit must be seconds > 0"),
    ({"seed": -1}, "seed"),
])
def test_smp_options_are_checked(kwargs, match):
    with pytest.raises(InvalidOptionError, match=match):
        make_goodput_policy("smp", **kwargs)


# -- the mixed-type variant (docs/online.md §10.5) -----------------------------------------------------------

def test_mixed_configs_are_sias_then_pairs_on_two_types():
    from hetplace.online.goodput_smp import mixed_configs

    cluster = {"a": (2, 4), "b": (1, 8), "c": (1, 2)}
    single = sia_configs(cluster)
    out = mixed_configs(cluster)
    assert out[: len(single)] == single
    pairs = out[len(single):]
    expect = {tuple(sorted((x, y))) for x in single for y in single if x[0] != y[0] and x[1] + y[1] <= 64}
    assert set(pairs) == expect and len(pairs) == len(expect)
    assert all(p == tuple(sorted(p)) and p[0][0] != p[1][0] for p in pairs)
    assert all(max(n for _, n in p) <= 2 for p in mixed_configs(cluster, max_part=2)[len(single):])


@pytest.mark.parametrize("seed", range(4))
def test_the_programme_over_several_types_matches_brute_force(seed):
    import itertools

    from hetplace.online.goodput_configs import solve_sia_program

    rng = np.random.default_rng(seed)
    configs = [("a", 1), ("a", 2), ("b", 1), (("a", 1), ("b", 1)), (("a", 2), ("b", 2))]
    usage = [{"a": 1}, {"a": 2}, {"b": 1}, {"a": 1, "b": 1}, {"a": 2, "b": 2}]
    cap = {"a": 3, "b": 2}
    coef = np.round(rng.uniform(0, 10, (3, len(configs))) * (rng.random((3, len(configs))) > 0.2), 2)
    pick = solve_sia_program(coef, configs, cap, 0.0, 1.0, usage=usage)

    def value(ch):
        used = {g: sum(usage[k].get(g, 0) for k in ch if k >= 0) for g in cap}
        if any(used[g] > cap[g] for g in cap) or any(k >= 0 and coef[i, k] <= 0 for i, k in enumerate(ch)):
            return -1
        return sum(round(100 * coef[i, k]) for i, k in enumerate(ch) if k >= 0)

    best = max(value(ch) for ch in itertools.product(range(-1, len(configs)), repeat=3))
    assert value(pick) == best


def test_smp_mixed_places_jobs_on_two_types_only_when_known(model, monkeypatch):
    from hetplace.online.goodput_smp import SmpMixedGoodputPolicy

    assert isinstance(make_goodput_policy("smp-mixed"), SmpMixedGoodputPolicy)
    # a world where two types together are worth more than the sum of their parts, so that pairs are taken
    one = model.mixed_rate

    def generous(app, parts, epoch):
        parts = {g: p for g, p in parts.items() if sum(p)}
        return one(app, parts, epoch) if len(parts) < 2 else 1.5 * sum(one(app, {g: p}, epoch)
                                                                      for g, p in parts.items())
    monkeypatch.setattr(model, "mixed_rate", generous)
    monkeypatch.setattr(model, "_mixed_cache", {})
    jobs = _workload()
    spy = Spy(make_goodput_policy("smp-mixed"))
    r = simulate_goodput(jobs, model, spy, cluster=CLUSTER, seed=2)
    again = simulate_goodput(jobs, model, make_goodput_policy("smp-mixed"), cluster=CLUSTER, seed=2)
    assert r.status == "complete" and np.array_equal(r.jobs["finish"], again.jobs["finish"])
    assert (r.rounds["busy"] <= 1 + 1e-12).all()
    for st, d in zip(spy.states, spy.decisions):
        for jid, a in d.items():
            if isinstance(a, dict) and len(a) > 1:
                js = next(j for j in st.jobs if j.job.job_id == jid)
                if not js.pinned:  # a pair is offered only on types some job of its model has run on
                    known = {g for s in spy.states[: spy.states.index(st) + 1] for j in s.jobs + s.finished
                             if j.job.app == js.job.app for g in j.max_gpus}
                    assert set(a) <= known
    assert sum(isinstance(a, dict) and len(a) > 1 for d in spy.decisions for a in d.values()) > 10
    assert any("+" in t for t in r.jobs["types"])


def test_smp_mixed_options_are_checked():
    with pytest.raises(InvalidOptionError, match="max_part"):
        make_goodput_policy("smp-mixed", max_part=0)
