"""The simulator and the headline efficiency figures (docs/model.md §6.5).

Seeds 1000+ are not the ones the policies were developed on (0-19, 100-129).
The oracle knows every iteration's true speeds; the policies see only noisy
measurements (5 % jitter on every time, 1 % one-off 3x hiccups) of the past.
"""

import re
import sys

import numpy as np
import pytest

from hetplace.balance import LoadBalancer, Scenario, make_scenario, simulate
from hetplace.errors import InvalidOptionError, MissingDependencyError

SEEDS = (1001, 1002, 1003, 1004)


@pytest.fixture(scope="module")
def cpu_runs():
    out = {}
    for s in SEEDS:
        sc = make_scenario("cpu", seed=s)
        out[s] = {p: simulate(p, sc, compare=False) for p in ("cpu", "naive", "static")}
        out[s]["ewma"] = simulate("cpu", sc, compare=False, policy_options={"predictor": "ewma"})
        out[s]["bsp"] = simulate("bsp", sc, compare=False)
    return out


@pytest.fixture(scope="module")
def gpu_runs():
    out = {}
    for s in SEEDS:
        sc = make_scenario("gpu", seed=s)
        out[s] = {p: simulate(p, sc, compare=False) for p in ("gpu", "naive", "bsp", "static")}
    return out


def test_cpu_policy_reaches_095_of_the_oracle(cpu_runs):
    for s, runs in cpu_runs.items():
        eff = {p: r.efficiency for p, r in runs.items()}
        assert eff["cpu"] >= 0.95, (s, eff)
        # it beats every baseline, and the naive rule is clearly short of 0.95
        assert eff["cpu"] > eff["naive"] + 0.02 > eff["static"] and eff["naive"] < 0.95, (s, eff)
        assert eff["bsp"] < 0.6, (s, eff)


def test_gpu_policy_reaches_095_of_the_oracle_and_respects_caps(gpu_runs):
    for s, runs in gpu_runs.items():
        eff = {p: r.efficiency for p, r in runs.items()}
        assert eff["gpu"] >= 0.95, (s, eff)
        assert eff["gpu"] > eff["naive"] > eff["static"] > eff["bsp"], (s, eff)
        for r in runs.values():
            assert r.max_over_cap == 0


def test_gpu_tuner_converges_within_stated_windows(gpu_runs):
    for runs in gpu_runs.values():
        tuner = runs["gpu"].tuner
        assert tuner["reopens"] >= 1 and len(tuner["converged_after"]) >= 1
        # stated bound: every (re)open closes within 8 monitoring windows; typically 1-2
        assert max(tuner["converged_after"]) <= 8
        assert np.mean(tuner["converged_after"]) <= 2.0


def test_narx_predictor_beats_ewma(cpu_runs):
    for runs in cpu_runs.values():
        narx, ewma = runs["cpu"].prediction_error, runs["ewma"].prediction_error
        assert narx < 0.8 * ewma, (narx, ewma)
        assert runs["cpu"].efficiency > runs["ewma"].efficiency


def test_no_policy_beats_the_oracle_in_any_iteration(cpu_runs, gpu_runs):
    for runs in list(cpu_runs.values()) + list(gpu_runs.values()):
        for r in runs.values():
            assert np.all(r.iteration_time >= r.oracle_time * (1 - 1e-12))
            assert r.efficiency <= 1.0


def test_result_numbers_are_consistent():
    r = simulate("cpu", seed=5, iterations=120)
    assert r.iteration_time.shape == (120,) and r.batch_sizes.shape == (120, 8)
    assert (r.batch_sizes.sum(axis=1) == r.scenario.global_batch).all()
    assert r.efficiency == pytest.approx(r.oracle_time.sum() / r.iteration_time.sum())
    assert r.speedup_vs_bsp == pytest.approx(r.bsp_time.sum() / r.iteration_time.sum())
    assert r.speedup_vs_bsp > 1.5
    d = r.as_dict()
    assert set(d) >= {"efficiency", "bsp_efficiency", "speedup_vs_bsp", "prediction_error"}
    assert "efficiency" in r.summary()


def test_simulation_is_reproducible():
    a = simulate("gpu", seed=9, iterations=80, compare=False)
    b = simulate("gpu", seed=9, iterations=80, compare=False)
    np.testing.assert_array_equal(a.batch_sizes, b.batch_sizes)
    np.testing.assert_array_equal(a.iteration_time, b.iteration_time)
    c = simulate("gpu", seed=10, iterations=80, compare=False)
    assert not np.array_equal(a.iteration_time, c.iteration_time)


def test_scenario_contents():
    sc = make_scenario("gpu", seed=2, iterations=50)
    assert isinstance(sc, Scenario) and sc.speed.shape == (50, 8)
    assert np.all(sc.knee > 0) and np.all(np.isfinite(sc.memory_caps))
    assert sc.memory_caps.sum() >= sc.global_batch
    assert sc.signals["cpu_avail"].shape == (51, 8)
    assert not sc.speed.flags.writeable
    cpu = make_scenario("cpu", seed=2, iterations=50, events=(), jitter=0.0, hiccup_rate=0.0)
    assert np.all(cpu.noise == 1.0) and np.all(cpu.knee == 0)
    assert np.ptp(cpu.speed / cpu.speed[0], axis=0).max() == 0.0  # no events: constant speeds
    fl = make_scenario("fl", seed=2, iterations=50)
    assert fl.upload.shape == (50, 20) and fl.deadline > 0 and not fl.available.all()


def test_fl_policy_beats_the_baselines():
    sc = make_scenario("fl", seed=1003, iterations=250)
    res = {p: simulate(p, sc, compare=False) for p in ("fl", "naive", "bsp")}
    assert res["fl"].efficiency > res["naive"].efficiency + 0.05 > res["bsp"].efficiency
    assert res["fl"].samples_aggregated >= res["bsp"].samples_aggregated
    assert res["fl"].samples_aggregated > 0.95  # only dropped clients' minimum shares are lost


def test_signals_help_the_cpu_policy():
    sc = make_scenario("cpu", seed=1005, iterations=300)
    with_sig = simulate("cpu", sc, compare=False)
    without = simulate("cpu", sc, compare=False, signals=False)
    assert with_sig.efficiency > without.efficiency


def test_plot_needs_matplotlib(monkeypatch, tmp_path):
    r = simulate("cpu", seed=1, iterations=30)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(MissingDependencyError, match=re.escape("pip install matplotlib")):
        r.plot(tmp_path / "x.png")


def test_plot_writes_a_file(tmp_path):
    pytest.importorskip("matplotlib")
    r = simulate("gpu", seed=1, iterations=30)
    path = tmp_path / "sim.png"
    r.plot(path)
    assert path.stat().st_size > 1000


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: simulate("turbo"), "policy must be one of"),
        (lambda: make_scenario("tpu"), "kind must be one of ('cpu', 'gpu', 'fl'); got 'tpu'"),
        (lambda: make_scenario("cpu", events=("steps", "meteor")), "events must be drawn from"),
        (lambda: make_scenario("cpu", jitter=-0.1), "jitter must be a number in [0, 1]; got -0.1"),
        (lambda: simulate("cpu", scenario=make_scenario("cpu", iterations=5), jitter=0.1),
         "scenario options ['jitter'] cannot be combined with a ready scenario"),
        (lambda: simulate("cpu", scenario="mixed"), "scenario must be a hetplace.balance.Scenario"),
    ],
)
def test_simulate_errors(call, message):
    with pytest.raises(InvalidOptionError, match=re.escape(message)):
        call()


def test_balancer_accepts_scenario_caps_directly():
    sc = make_scenario("gpu", seed=3, iterations=5)
    lb = LoadBalancer(sc.global_batch, sc.n_workers, policy="gpu", memory_caps=sc.memory_caps)
    assert (lb.batch_sizes <= sc.memory_caps).all()


def test_fl_efficiency_with_every_client_dropping_is_honest():
    # was 7.0: the oracle waited past the deadline and the policy "won" by losing samples
    r = simulate("fl", dropout_rate=1.0, compare=True)
    assert 0.0 <= r.efficiency <= 1.0
    assert r.samples_aggregated < 0.05 and r.efficiency < 0.2
    assert (r.oracle_time <= r.scenario.deadline + 1e-12).all()
    for d in (0.0, 0.1, 0.3):
        assert 0.0 < simulate("fl", dropout_rate=d, compare=False).efficiency <= 1.0, d
