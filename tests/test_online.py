"""hetplace.online: traces, progress model, simulator invariants, policies' contract, errors."""

import json
import math

import numpy as np
import pytest

from hetplace.data import load_gavel
from hetplace.errors import HetplaceError, InvalidOptionError, InvalidProblemError
from hetplace.online import (
    ClusterState, Job, JobState, ProgressModel, gavel_trace, lower_bound, make_policy, read_trace, simulate, write_trace,
)
from hetplace.online.simulator import _map_gpus, _Run

TABLE = load_gavel()
CLUSTER = {"v100": 8, "p100": 8, "k80": 8}


class FIFO:
    """Trivial test policy: arrival order, each job on its scale factor of the fastest type with room."""

    name = "test-fifo"

    def decide(self, state):
        free, out = dict(state.cluster), {}
        for s in state.jobs:
            for g in ("v100", "p100", "k80"):
                if free.get(g, 0) >= s.job.scale_factor:
                    out[s.job.job_id] = {g: s.job.scale_factor}
                    free[g] -= s.job.scale_factor
                    break
        return out


class Recording:
    """Wraps a policy; checks every decision against the state (no GPU double-booked) and records it."""

    def __init__(self, inner):
        self.inner, self.name, self.log = inner, inner.name, []

    def reset(self, seed=None):
        if hasattr(self.inner, "reset"):
            self.inner.reset(seed=seed) if seed is not None else self.inner.reset()

    def decide(self, state):
        out = self.inner.decide(state)
        self.log.append((state, out))
        return out


def _short_trace(n=25, rate=20.0, seed=3, multi_gpu=True):
    # shortened jobs keep the test fast: steps scaled down 20x
    return tuple(Job(j.job_id, j.model, j.arrival, j.total_steps / 20, j.scale_factor, j.duration / 20)
                 for j in gavel_trace(n, rate, seed, multi_gpu=multi_gpu))


# ------------------------------------------------------------------ traces
def test_gavel_trace_statistics_match_the_recipe():
    n = 4000
    trace = gavel_trace(n, 4.8, 0, multi_gpu=True)
    arr = np.array([j.arrival for j in trace])
    assert arr[0] == 0.0 and np.all(np.diff(arr) >= 0)
    gaps = np.diff(arr) / 3600
    # mean inter-arrival 1/4.8 h, standard error 1/4.8/sqrt(n)
    assert abs(gaps.mean() - 1 / 4.8) < 4 * (1 / 4.8) / math.sqrt(n)
    minutes = np.array([j.duration for j in trace]) / 60
    assert minutes.min() >= 10**1.5 * (1 - 1e-9) and minutes.max() <= 10**4 * (1 + 1e-9)
    long_share = np.mean(minutes > 10**3)
    assert abs(long_share - 0.2) < 4 * math.sqrt(0.2 * 0.8 / n)
    sf = np.array([j.scale_factor for j in trace])
    for v, p in zip((1, 2, 4, 8), (0.7, 0.1, 0.15, 0.05)):
        assert abs(np.mean(sf == v) - p) < 4 * math.sqrt(p * (1 - p) / n)
    for j in trace[:200]:
        rate = TABLE.steps_per_second(j.model, "v100", j.scale_factor)
        assert rate > 0 and j.total_steps == pytest.approx(j.duration * rate)
    single = gavel_trace(500, 4.8, 0)
    assert {j.scale_factor for j in single} == {1}
    assert len({j.model for j in single}) > 15  # uniform over the 26 models


def test_gavel_generator_keeps_gavels_draw_order():
    # Gavel's streams: jobs from Random(seed + 2), arrivals from Random(seed + 3); the first jobs of seed 0
    trace = gavel_trace(3, 4.8, 0, multi_gpu=True)
    assert [(j.model, j.scale_factor) for j in trace] == [
        ("ResNet-18 (batch size 64)", 8), ("Transformer (batch size 16)", 1), ("Recommendation (batch size 2048)", 1)]
    assert [round(j.duration, 3) for j in trace] == [68344.35, 31016.609, 2146.609]
    assert [round(j.arrival, 3) for j in trace] == [0.0, 203.822, 793.146]
    # a single-GPU trace draws the same durations and arrivals (the scale factor is drawn, then set to 1)
    single = gavel_trace(3, 4.8, 0)
    assert [j.duration for j in single] == [j.duration for j in trace]
    assert [j.scale_factor for j in single] == [1, 1, 1]


def test_gavel_generator_job_table_of_the_published_figures():
    # same draws, A3C at index 14: a template index lands on another model from index 14 on
    figs = gavel_trace(3, 4.8, 0, multi_gpu=True, job_table="figures")
    assert [(j.model, j.scale_factor) for j in figs] == [
        ("ResNet-18 (batch size 64)", 8), ("Transformer (batch size 16)", 1), ("Recommendation (batch size 1024)", 1)]
    cur = gavel_trace(3, 4.8, 0, multi_gpu=True)
    assert [j.duration for j in figs] == [j.duration for j in cur]
    # single-GPU: arrivals and durations kept, models relabelled; multi-GPU: redraws diverge
    a, b = gavel_trace(400, 2.6, 0, job_table="figures"), gavel_trace(400, 2.6, 0)
    assert [(j.arrival, j.duration) for j in a] == [(j.arrival, j.duration) for j in b]
    a, b = gavel_trace(400, 2.6, 0, multi_gpu=True, job_table="figures"), gavel_trace(400, 2.6, 0, multi_gpu=True)
    assert [j.duration for j in a] != [j.duration for j in b]
    assert {j.model for j in a} == {j.model for j in b}
    with pytest.raises(InvalidOptionError, match="job_table"):
        gavel_trace(3, 4.8, 0, job_table="2019")


def test_numpy_generator_draws_the_same_recipe_and_other_jobs():
    a, b = gavel_trace(300, 4.8, 0, generator="numpy"), gavel_trace(300, 4.8, 0)
    assert a != b and a == gavel_trace(300, 4.8, 0, generator="numpy")
    with pytest.raises(InvalidOptionError, match="generator"):
        gavel_trace(3, 4.8, 0, generator="python")


def test_gavel_trace_is_seeded():
    assert gavel_trace(50, 3.0, 7) == gavel_trace(50, 3.0, 7)
    assert gavel_trace(50, 3.0, 7) != gavel_trace(50, 3.0, 8)


@pytest.mark.parametrize("rate", [0, -1.0, math.inf, math.nan, "4.8", None, True])
def test_gavel_trace_rejects_a_bad_rate(rate):
    with pytest.raises(InvalidOptionError, match="rate"):
        gavel_trace(10, rate, 0)


def test_read_trace_round_trip(tmp_path):
    trace = gavel_trace(30, 4.8, 1, multi_gpu=True)
    p = tmp_path / "t.trace"
    write_trace(trace, p)
    back = read_trace(p)
    assert [(j.model, j.arrival, j.total_steps, j.scale_factor) for j in back] == \
        [(j.model, j.arrival, j.total_steps, j.scale_factor) for j in trace]
    assert np.allclose([j.duration for j in back], [j.duration for j in trace])


def test_read_trace_reads_gavels_format(tmp_path):
    line = ("Transformer (batch size 128)\tpython3 train.py -batch_size 128\ttranslation\t-step\t1\t346\t2\t1\t"
            "-1.000000\t0\n")
    p = tmp_path / "g.trace"
    p.write_text(line + line.replace("\t0\n", "\t12.5\n"), encoding="utf-8")
    jobs = read_trace(p)
    assert [(j.job_id, j.total_steps, j.scale_factor, j.arrival) for j in jobs] == [(0, 346.0, 2, 0.0), (1, 346.0, 2, 12.5)]


@pytest.mark.parametrize("text, match", [
    ("a\tb\n", "fields"),
    ("NoSuchModel\t-\t-\t-\t0\t10\t1\t1\t-1\t0\n", "not in the throughput table"),
    ("A3C\t-\t-\t-\t0\tten\t1\t1\t-1\t0\n", "must be numbers"),
    ("A3C\t-\t-\t-\t0\t10\t0\t1\t-1\t0\n", "scale_factor >= 1"),
    ("\n", "holds no job"),
])
def test_read_trace_rejects_bad_lines(tmp_path, text, match):
    p = tmp_path / "bad.trace"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidProblemError, match=match):
        read_trace(p)


# ------------------------------------------------------------------ progress model
def test_progress_model_uses_the_table_at_measured_counts():
    pm = ProgressModel(TABLE)
    for model in TABLE.models:
        for g in TABLE.types:
            for n in (1, 2, 4, 8):
                t = TABLE.steps_per_second(model, g, n)
                if t > 0:
                    assert pm.steps_per_second(model, {g: n}) == t


def test_progress_model_is_never_faster_than_the_table_allows():
    pm = ProgressModel(TABLE)
    rng = np.random.default_rng(0)
    for _ in range(400):
        model = TABLE.models[rng.integers(len(TABLE.models))]
        alloc = {g: int(rng.integers(0, 6)) for g in ("v100", "p100", "k80")}
        N = sum(alloc.values())
        if N == 0:
            assert pm.steps_per_second(model, alloc) == 0.0
            continue
        # the smallest measured count >= N (8 past the table): no N GPUs beat the table's best job of that size
        up = min([c for c in (1, 2, 4, 8) if c >= N] or [8])
        best = max(TABLE.steps_per_second(model, g, c) for g in TABLE.types for c in (1, 2, 4, 8) if c <= up)
        rate = pm.steps_per_second(model, alloc)
        assert 0 < rate <= best * (1 + 1e-12)
        # never slower than its fastest single-type part alone
        assert rate >= max(pm.steps_per_second(model, {g: n}) for g, n in alloc.items() if n) * (1 - 1e-12)


def test_progress_fill_between_measured_counts():
    pm = ProgressModel(TABLE)
    m = "ResNet-50 (batch size 64)"
    t2, t4 = (TABLE.steps_per_second(m, "v100", n) for n in (2, 4))
    assert pm.steps_per_second(m, {"v100": 3}) == pytest.approx(max(t2, min(t2 * 3 / 2, t4)))
    t8 = TABLE.steps_per_second(m, "v100", 8)
    assert pm.steps_per_second(m, {"v100": 12}) == t8  # past the largest count: extra GPUs idle
    assert pm.steps_per_second("A3C", {"v100": 4}) == TABLE.steps_per_second("A3C", "v100", 1)


@pytest.mark.parametrize("restart, match", [("sometimes", "restart"), (-1.0, "restart"), ({"NoModel": 3}, "neither"),
                                            ({"ResNet-50": 10}, "no entry"), ([1, 2], "restart")])
def test_progress_model_rejects_bad_restart_models(restart, match):
    with pytest.raises(InvalidOptionError, match=match):
        ProgressModel(TABLE, restart)


def test_restart_model_by_family_and_default():
    pm = ProgressModel(TABLE, {"ResNet-50": 100.0, "default": 20.0})
    assert pm.restart_time("ResNet-50 (batch size 64)") == 100.0 and pm.restart_time("A3C") == 20.0


# ------------------------------------------------------------------ simulator invariants
@pytest.fixture(scope="module")
def fifo_run():
    pol = Recording(FIFO())
    return simulate(_short_trace(), CLUSTER, pol, progress=False), pol


def test_no_gpu_is_double_booked_and_every_job_completes(fifo_run):
    result, pol = fifo_run
    assert result.status == "complete" and result.n_finished == result.n_jobs
    for state, out in pol.log:
        for g in CLUSTER:
            assert sum(a.get(g, 0) for a in out.values()) <= CLUSTER[g]
        # physical GPUs of the previous round: each owned by at most one job
        seen = {g: set() for g in CLUSTER}
        for s in state.jobs:
            for g, idx in s.gpus.items():
                assert not seen[g] & set(idx) and all(0 <= k < CLUSTER[g] for k in idx)
                seen[g] |= set(idx)
                assert len(idx) == s.allocation[g]


def test_progress_sums_to_total_steps_and_never_beats_the_table(fifo_run):
    result, pol = fifo_run
    assert np.array_equal(result.jobs["done_steps"], result.jobs["total_steps"])
    pm = ProgressModel(TABLE)
    # replay: the steps a job made between two observations never exceed the table's best rate on its GPUs
    prev = {}
    for state, _ in pol.log:
        for s in state.jobs:
            if s.job.job_id in prev:  # s.allocation is what it ran on since the previous observation
                gained = s.done_steps - prev[s.job.job_id]
                rate = pm.steps_per_second(s.job.model, s.allocation)
                assert gained <= rate * state.round_s * (1 + 1e-9) + 1e-9
            prev[s.job.job_id] = s.done_steps
    jct = result.jobs["jct"]
    fastest = np.array([j / max(pm.bound(m, 8), 1e-300) for j, m in zip(result.jobs["total_steps"], result.jobs["model"])])
    assert np.all(jct >= fastest * (1 - 1e-9))


def test_same_seed_same_result():
    trace = _short_trace(12)
    a = simulate(trace, CLUSTER, "smp", seed=5, progress=False)
    b = simulate(trace, CLUSTER, "smp", seed=5, progress=False)
    for c in ("finish", "restarts", "gpu_seconds", "done_steps"):
        assert np.array_equal(a.jobs[c], b.jobs[c])
    assert a.summary()["avg_jct"] == b.summary()["avg_jct"]


def test_gpus_stay_put_when_counts_are_unchanged():
    runs = {0: _Run(Job(0, "A3C", 0.0, 10.0, 1, 1.0)), 1: _Run(Job(1, "A3C", 0.0, 10.0, 2, 1.0))}
    owner = {"v100": np.full(4, -1), "k80": np.full(2, -1)}
    costs = {"A3C": 5.0}
    _map_gpus({0: {"v100": 1}, 1: {"v100": 2}}, runs, owner, 0.0, costs)
    before = {j: dict(r.gpus) for j, r in runs.items()}
    for r in runs.values():
        r.time_run = 360.0
    _map_gpus({0: {"v100": 1}, 1: {"v100": 1, "k80": 1}}, runs, owner, 360.0, costs)
    assert runs[0].gpus == before[0] and runs[0].restarts == 0
    assert runs[1].restarts == 1 and runs[1].restart_left == 5.0
    assert set(runs[1].gpus["v100"]) <= set(before[1]["v100"])  # it keeps one of its own GPUs
    assert (owner["v100"] >= 0).sum() == 2 and (owner["k80"] >= 0).sum() == 1


def test_restarts_hold_gpus_without_progress():
    job = Job(0, "ResNet-50 (batch size 64)", 0.0, 5000.0, 1, math.nan)

    class Flip:
        name = "flip"

        def decide(self, state):  # another type every round: a restart every round after the first
            return {0: {("v100", "p100")[state.round_index % 2]: 1}}

    free = simulate([job], {"v100": 1, "p100": 1}, Flip(), progress=False)
    paid = simulate([job], {"v100": 1, "p100": 1}, Flip(), restart=60.0, progress=False)
    assert paid.jobs["restarts"][0] >= 1 and paid.jobs["restarts"][0] == free.jobs["restarts"][0] or \
        paid.jobs["finish"][0] > free.jobs["finish"][0]
    assert paid.jobs["finish"][0] > free.jobs["finish"][0]
    # exactly the lost time: every restart costs 60 s of GPU time that made no steps
    assert paid.jobs["gpu_seconds"][0] > free.jobs["gpu_seconds"][0]


def test_measure_window_and_summary_json(tmp_path):
    trace = _short_trace(20)
    r = simulate(trace, CLUSTER, FIFO(), measure=(5, 15), progress=False)
    assert r.n_measured == 10 and r.n_finished == 10
    jct = r.jobs["jct"][(r.jobs["job_id"] >= 5) & (r.jobs["job_id"] < 15)]
    assert r.avg_jct == pytest.approx(jct.mean())
    paths = r.write(tmp_path)
    doc = json.loads(paths["summary"].read_text())
    assert doc["window"] == [5, 15] and doc["n_finished"] == 10
    lines = paths["jobs"].read_text().splitlines()
    assert lines[0].startswith("job_id,model") and len(lines) == 21
    assert 0 < r.utilization <= 1 and r.ftf_worst >= r.ftf_mean > 0


def test_smp_policies_keep_their_bounds():
    trace = _short_trace(15)
    free = Recording(make_policy("smp", max_gpus=4))
    rigid = Recording(make_policy("smp-rigid"))
    simulate(trace, CLUSTER, free, progress=False)
    res = simulate(trace, CLUSTER, rigid, progress=False)
    assert res.status == "complete"
    for state, out in free.log:
        assert all(1 <= sum(a.values()) <= 4 for a in out.values())
    sf = {j.job_id: j.scale_factor for j in trace}
    for state, out in rigid.log:
        assert all(sum(a.values()) == sf[j] for j, a in out.items())


def test_smp_measured_sizing_uses_only_measured_counts_within_the_share():
    trace = _short_trace(15)
    counts = set(TABLE.gpu_counts)
    for opts in ({}, {"share_cap": 1.0}, {"max_gpus": 2}):
        pol = Recording(make_policy("smp", **opts))
        res = simulate(trace, CLUSTER, pol, progress=False)
        assert res.status == "complete"
        for state, out in pol.log:
            cap = opts.get("max_gpus", 8)
            if "share_cap" in opts:  # at most share_cap equal shares of the 24 GPUs
                cap = min(cap, max(1, int(opts["share_cap"] * 24 / len(state.jobs))))
            for jid, a in out.items():
                assert sum(a.values()) in counts and sum(a.values()) <= cap, (opts, a)


def test_smp_measured_size_is_the_fastest_measured_count_on_an_empty_cluster():
    # LM (batch size 5) on V100s: 109 steps/s on 1, 186 on 2, 127 on 4, 699 on 8; ResNet-50 (batch 64): 8 is fastest
    lm = Job(0, "LM (batch size 5)", 0.0, 1e7, 1, math.nan)
    pol = Recording(make_policy("smp"))
    simulate([lm], {"v100": 8}, pol, progress=False)
    assert pol.log[0][1] == {0: {"v100": 8}}
    pol = Recording(make_policy("smp"))
    simulate([lm], {"v100": 4}, pol, progress=False)
    assert pol.log[0][1] == {0: {"v100": 2}}  # 2 GPUs run it faster than 4
    pol = Recording(make_policy("smp", sizing="range"))
    simulate([lm], {"v100": 4}, pol, progress=False)
    assert sum(pol.log[0][1][0].values()) >= 1


def test_smp_resizes_a_job_off_a_type_without_a_figure_at_its_new_size():
    # ResNet-50 (batch size 128) has a K80 figure on 1 GPU only: running on a K80, then sized up, the
    # K80 is not offered to SMP as a GPU the job could keep (regression: Problem rejected `current`)
    job = Job(0, "ResNet-50 (batch size 128)", 0.0, 1e6, 1, math.nan)
    running = JobState(job, 10.0, {"k80": 1}, 360.0, 360.0, {"k80": 1}, 0, {"k80": (0,)}, 0.0)
    cluster = {"v100": 2, "k80": 1}
    state = ClusterState(360.0, 360.0, cluster, (running,), ProgressModel(TABLE), TABLE, 1)
    out = make_policy("smp").decide(state)
    assert out == {0: {"v100": 2}}  # 2 V100s run it faster than its K80, which has no 2-GPU figure


@pytest.mark.parametrize("options, match", [
    ({"sizing": "free"}, "sizing"), ({"share_cap": 0}, "share_cap"), ({"min_efficiency": 1.5}, "min_efficiency"),
])
def test_smp_rejects_bad_sizing_options(options, match):
    with pytest.raises(InvalidOptionError, match=match):
        make_policy("smp", **options)


def test_smp_admission_when_jobs_outnumber_gpus():
    trace = [Job(i, "A3C", 0.0, 1e4, 1, math.nan) for i in range(10)]
    pol = Recording(make_policy("smp"))
    r = simulate(trace, {"v100": 2, "k80": 1}, pol, progress=False)
    assert r.status == "complete"
    state, out = pol.log[0]
    assert len(out) == 3 and len(state.jobs) == 10
    assert sorted(out) == [0, 1, 2]  # equal remaining time: arrival order, then job id


# ------------------------------------------------------------------ errors
def test_unknown_gpu_type_in_cluster():
    with pytest.raises(InvalidOptionError, match="a100"):
        simulate(_short_trace(3), {"a100": 4}, FIFO(), progress=False)
    with pytest.raises(InvalidOptionError, match="TYPE=COUNT"):
        simulate(_short_trace(3), "v100:4", FIFO(), progress=False)


@pytest.mark.parametrize("output, match", [
    ({99: {"v100": 1}}, "not active"),
    ({0: {"a100": 1}}, "does not have"),
    ({0: {"v100": -1}}, "non-negative"),
    ({0: {"v100": 1.5}}, "non-negative"),
    ({0: {"v100": 9}}, "more than"),
    ([0], "must return a dict"),
])
def test_bad_policy_output_names_the_policy(output, match):
    class Bad:
        name = "bad-policy"

        def decide(self, state):
            return output

    with pytest.raises(InvalidOptionError, match=match) as info:
        simulate(_short_trace(3), CLUSTER, Bad(), progress=False)
    assert "bad-policy" in str(info.value)


@pytest.mark.parametrize("kw, match", [
    (dict(round_s=0), "round_s"), (dict(measure=(5, 2)), "measure"), (dict(measure=(100, 200)), "no job"),
    (dict(policy="no-such-policy"), "policy"), (dict(policy=object()), "decide"), (dict(restart="x"), "restart"),
])
def test_bad_simulate_options(kw, match):
    args = dict(trace=_short_trace(3), cluster=CLUSTER, policy=FIFO(), progress=False)
    args.update(kw)
    with pytest.raises(HetplaceError, match=match):
        simulate(**args)


def test_cluster_state_is_frozen(fifo_run):
    _, pol = fifo_run
    state = pol.log[0][0]
    assert isinstance(state, ClusterState)
    with pytest.raises(AttributeError):
        state.time = 1.0


# ------------------------------------------------------------------ command line
def test_cli_simulate_writes_csv_json_and_plots(tmp_path, capsys):
    from hetplace.cli import main

    out = tmp_path / "sim"
    code = main(["simulate", "--policy", "smp", "smp-rigid", "--rate", "30", "60", "--jobs", "12", "--cluster",
                 "v100=8,p100=8,k80=8", "--executor", "serial", "--no-progress", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "| smp-rigid | 60 |" in text
    rows = (out / "summary.csv").read_text().splitlines()
    assert len(rows) == 5 and rows[0].startswith("policy,rate,seed")
    assert (out / "smp_rate30_seed0_jobs.csv").is_file()
    doc = json.loads((out / "summary.json").read_text())
    assert {r["policy"] for r in doc["rows"]} == {"smp", "smp-rigid"}
    pytest.importorskip("matplotlib")
    for name in ("jct_cdf.png", "avg_jct_vs_rate.png", "utilization.png"):
        assert (out / name).stat().st_size > 0


@pytest.mark.parametrize("argv, match", [
    (["--cluster", "a100=4"], "a100"), (["--restart", "often"], "restart"), (["--policy", "nope"], "policy"),
    (["--measure", "50:60", "--jobs", "10"], "measure"),
])
def test_cli_simulate_bad_input_is_one_line(tmp_path, capsys, argv, match):
    from hetplace.cli import main

    code = main(["simulate", "--jobs", "5", "--no-progress", "--out", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("hetplace: error:") and match in err and len(err.strip().splitlines()) == 1


def test_smp_rigid_places_a_job_whose_batch_is_below_its_scale_factor():
    # LM (batch size 5) on 8 GPUs: a Problem job uses at most `batch` workers, so the policy scales the batch
    trace = [Job(0, "LM (batch size 5)", 0.0, 1e4, 8, math.nan)]
    r = simulate(trace, {"v100": 8, "p100": 8}, "smp-rigid", progress=False)
    assert r.status == "complete" and r.jobs["max_gpus"][0] == 8


# ------------------------------------------------------------------ lower bound
@pytest.mark.parametrize("multi", [False, True])
def test_lower_bound_is_below_every_policys_jcts(multi):
    trace = _short_trace(n=20, rate=20.0, seed=5, multi_gpu=multi)
    free = lower_bound(trace, CLUSTER)
    rigid = lower_bound(trace, CLUSTER, rigid=True)
    assert np.all(free.jct <= rigid.jct * (1 + 1e-12))
    for name in ("smp", "smp-rigid", "fifo-aware", "las-aware", "sia"):
        res = simulate(trace, CLUSTER, name, progress=False)
        jct = {r["job_id"]: r["jct"] for r in res.job_rows()}
        assert all(jct[j] >= b * (1 - 1e-9) for j, b in zip(free.job_ids, free.jct)), name
        assert res.avg_jct >= free.avg_jct
        if name not in ("smp", "sia"):  # the others keep the trace's GPU counts
            assert all(jct[j] >= b * (1 - 1e-9) for j, b in zip(rigid.job_ids, rigid.jct)), name


def test_lower_bound_by_hand_and_its_window():
    job = Job(0, "ResNet-50 (batch size 64)", 100.0, 1000.0, 1, math.nan)
    lb = lower_bound([job], {"v100": 8}, round_s=360)
    best = max(TABLE.steps_per_second(job.model, "v100", n) for n in (1, 2, 4, 8))
    assert lb.avg_jct == pytest.approx(260.0 + 1000.0 / best)
    rigid = lower_bound([job], {"v100": 8}, rigid=True)
    assert rigid.avg_jct == pytest.approx(260.0 + 1000.0 / TABLE.steps_per_second(job.model, "v100", 1))
    trace = _short_trace(n=10)
    assert list(lower_bound(trace, CLUSTER, measure=(2, 5)).job_ids) == [2, 3, 4]
    with pytest.raises(InvalidOptionError, match="rigid"):
        lower_bound(trace, CLUSTER, rigid=1)


# ------------------------------------------------------------------ restart models and the decision cap
def test_named_restart_models_charge_the_first_start_and_report_the_gpu_time_lost():
    from hetplace.data import load_gavel
    from hetplace.online import ProgressModel
    from hetplace.online.progress import SIA_RESTART_S

    table = load_gavel()
    pm = ProgressModel(table, "sia")
    assert pm.first_start and not ProgressModel(table, 30.0).first_start
    assert pm.restart_time("ResNet-50 (batch size 64)") == 250.0 == SIA_RESTART_S["ResNet-50"]
    assert ProgressModel(table, "flat30").restart_time("A3C") == 30.0
    trace = gavel_trace(8, 4.0, seed=3)
    free = simulate(trace, CLUSTER, "fifo", progress=False)
    flat = simulate(trace, CLUSTER, "fifo", restart="flat30", progress=False)
    # FIFO never moves a job: no restarts, but each job pays one first start of 30 s on its GPUs
    assert free.restart_gpu_hours == 0.0 and flat.restarts_per_job == 0.0
    expect = sum(30.0 * j.scale_factor for j in trace) / 3600.0
    assert flat.restart_gpu_hours == pytest.approx(expect)
    assert np.all(flat.jobs["jct"] >= free.jobs["jct"] + 30.0 - 1e-6)
    old = simulate(trace, CLUSTER, "fifo", restart=30.0, progress=False)  # a number: restarts only, as before
    assert np.array_equal(old.jobs["finish"], free.jobs["finish"])
    assert flat.summary()["restart"] == "flat30" and "restart_gpu_hours" in flat.summary()


def test_a_slow_decision_is_reported_not_silently_waited_for():
    import time as _time

    from hetplace.errors import HetplaceWarning

    class Slow:
        name = "slow"

        def decide(self, state):
            _time.sleep(0.002)
            return {s.job.job_id: {"v100": 1} for s in state.jobs[:8]}

    trace = gavel_trace(3, 4.0, seed=0)
    with pytest.warns(HetplaceWarning, match="over the decision_limit"):
        res = simulate(trace, CLUSTER, Slow(), progress=False, decision_limit=0.001)
    assert res.slow_decisions == res.rounds["time"].size > 0
    assert res.summary()["slow_decisions"] == res.slow_decisions and res.decision_time_max >= 0.002
    assert simulate(trace, CLUSTER, Slow(), progress=False).slow_decisions == 0  # default limit: 10 s


def test_cli_restart_takes_the_named_models():
    from hetplace.cli import _restart_arg

    assert _restart_arg("sia") == "sia" and _restart_arg("FLAT30") == "flat30" and _restart_arg("none") == "none"
    with pytest.raises(InvalidOptionError, match="'flat30', 'sia'"):
        _restart_arg("pollux")
