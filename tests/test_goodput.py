"""The goodput world's progress model (hetplace.online.goodput) on synthetic files in Sia's artifact formats.

Sia's artifact has no licence: none of its files enter the project, so every test writes its own
profiles, made up here, in the same formats.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetplace.errors import InvalidOptionError, InvalidProblemError
from hetplace.online.goodput import (
    BATCH_CANDIDATES,
    AppProfile,
    GoodputModel,
    read_sia_workload,
    sia_workloads,
)

pytest.importorskip("scipy")

from goodput_fixtures import EPOCHS, LOCAL, PLACEMENTS, step as _step, sync as _sync  # noqa: E402
from goodput_fixtures import write_app as _write_app, write_artifact as _artifact  # noqa: E402

@pytest.fixture
def app(tmp_path):
    return AppProfile.read(_write_app(tmp_path / "toy"), "gpu", "g1", slowdown=1.5, restart_s=20.0)


# -- reading ----------------------------------------------------------------------------------------------

def test_read_keeps_the_rows_and_canonical_placements(app):
    assert app.app == "toy" and app.gpu_type == "g1"
    assert set(app.placements) == {(1,), (2,), (4,), (1, 1), (1, 2), (2, 2), (4, 4), (2, 2, 2)}
    b, t, s = app.placements[(2, 2)]
    assert list(b) == list(LOCAL)
    assert np.allclose(t, [_step(2, 4, x) for x in LOCAL]) and np.allclose(s, [_sync(2, 4, x) for x in LOCAL])
    assert app.max_epochs == EPOCHS and app.init_batch == 32 and app.max_batch == 256
    assert app.min_local_bsz == 8 and app.max_local_bsz == 64
    assert app.restart_s == 20.0 and app.slowdown == 1.5


def test_rotations_of_one_placement_are_pooled(tmp_path):
    d = _write_app(tmp_path / "toy", placements=((1, 2),))
    extra = "\n".join(f"21,{b},{_step(2, 3, b) + 0.01},{_sync(2, 3, b)}" for b in LOCAL)
    (d / "placements-gpu.csv").write_text((d / "placements-gpu.csv").read_text() + extra + "\n")
    prof = AppProfile.read(d, "gpu")
    assert set(prof.placements) == {(1, 2)}
    assert np.allclose(prof.placements[(1, 2)][1], [_step(2, 3, b) + 0.005 for b in LOCAL])  # the mean of both
    assert prof.step_time((2, 1), 8) == prof.step_time((1, 2), 8) == prof.step_time((0, 1, 0, 2), 8)


def test_columns_may_come_in_any_order(tmp_path):
    a = AppProfile.read(_write_app(tmp_path / "a"), "gpu")
    b = AppProfile.read(_write_app(tmp_path / "b", column_order=("local_bsz", "step_time", "sync_time",
                                                                   "placement")), "gpu")
    assert a.step_time((2, 2), 20) == b.step_time((2, 2), 20)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: (d / "placements-gpu.csv").unlink(), r"placements-gpu\.csv: no such file; expected a placement"),
    (lambda d: (d / "scalability-gpu.csv").write_text("num_nodes,local_bsz\n1,2\n"),
     r"scalability-gpu\.csv: missing column\(s\) num_replicas, step_time, sync_time"),
    (lambda d: (d / "placements-gpu.csv").write_text("placement,local_bsz,step_time,sync_time\n1,8,abc,0\n"),
     r"placements-gpu\.csv, line 2: expected numbers"),
    (lambda d: (d / "placements-gpu.csv").write_text("placement,local_bsz,step_time,sync_time\n1,8,0.1,0.2\n"),
     r"placements-gpu\.csv: data row 1: sync_time must be in \[0, step_time\]"),
    (lambda d: (d / "placements-gpu.csv").write_text("placement,local_bsz,step_time,sync_time\n1,8,-1,0\n"),
     r"step_time must be > 0"),
    (lambda d: (d / "placements-gpu.csv").write_text("placement,local_bsz,step_time,sync_time\n"),
     r"placements-gpu\.csv: no data rows"),
    (lambda d: (d / "validation-32.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n5,1,0,1,nan\n"),
     r"validation-32\.csv, line 2: a value is not finite"),
    (lambda d: (d / "validation-big.csv").write_text("progress\n1\n"), r"validation-big\.csv: expected validation-"),
    (lambda d: [p.unlink() for p in d.glob("validation-*.csv")], r"no validation-<batch>\.csv files"),
    (lambda d: (d / "validation-32.csv").write_text("progress,iteration,metric,grad_sqr,grad_var\n5,1,0,1,1\n"
                                                    "4,2,0,1,1\n3,3,0,1,1\n2,4,0,1,1\n"),
     r"progress column must increase"),
])
def test_malformed_files_name_the_file_and_what_is_expected(tmp_path, mutate, match):
    d = _write_app(tmp_path / "toy")
    mutate(d)
    with pytest.raises(InvalidProblemError, match=match):
        AppProfile.read(d, "gpu")


def test_from_sia_reads_a_checkout_and_names_what_is_missing(tmp_path):
    root = _artifact(tmp_path)
    m = GoodputModel.from_sia(root, types={"t4": "aws", "rtx": "rtx"}, apps=("toy", "other"),
                              slowdown={"toy": 2.0}, restart={"toy": 40.0, "default": 10.0})
    assert m.gpu_types == ("rtx", "t4")
    assert m.profile("toy", "t4").slowdown == 2.0 and m.profile("other", "rtx").slowdown == 1.0
    assert m.profile("toy", "rtx").restart_s == 40.0 and m.profile("other", "t4").restart_s == 10.0
    # the sia-simulator folder itself works too
    assert GoodputModel.from_sia(root / "sia-simulator", types={"t4": "aws"}, apps=("toy",)).gpu_types == ("t4",)
    with pytest.raises(InvalidProblemError, match=r"traces[/\\]missing: no such folder"):
        GoodputModel.from_sia(root, types={"t4": "aws"}, apps=("missing",))
    with pytest.raises(InvalidProblemError, match=r"placements-dgx\.csv: no such file"):
        GoodputModel.from_sia(root, types={"a100": "dgx"}, apps=("toy",))
    with pytest.raises(InvalidProblemError, match="expected a checkout of Sia's artifact"):
        GoodputModel.from_sia(tmp_path / "nowhere")
    with pytest.raises(InvalidOptionError, match="no profile of application 'toy' on GPU type 'v100'"):
        m.profile("toy", "v100")


# -- step times -------------------------------------------------------------------------------------------

@given(p=st.sampled_from(PLACEMENTS), b=st.floats(8, 64))
@settings(max_examples=60, deadline=None)
def test_step_time_of_a_profiled_placement_interpolates_its_rows(p, b):
    prof = _PROF
    t, s = prof.step_time(p, b)
    n, r = len(p), sum(p)
    assert t == pytest.approx(_step(n, r, b), rel=1e-12) and s == pytest.approx(_sync(n, r, b), rel=1e-12, abs=1e-15)


def test_step_time_outside_the_rows_cannot_run(app):
    assert all(math.isnan(x) for x in app.step_time((2, 2), 4))
    assert all(math.isnan(x) for x in app.step_time((2, 2), 65))


@pytest.mark.parametrize("p, b", [((3,), 20), ((2, 1, 1), 30), ((4, 4, 4), 10), ((2, 2, 2, 2), 50), ((3, 3), 8)])
def test_an_unprofiled_placement_is_interpolated_linearly_over_the_profiled_points(app, p, b):
    # the toy step time is affine, so linear interpolation over any triangulation is exact inside the hull
    t, s = app.step_time(p, b)
    n, r = len(p), sum(p)
    assert t == pytest.approx(_step(n, r, b), rel=1e-9)
    assert (3,) not in app.placements



def test_unprofiled_step_times_are_shared_by_placements_of_equal_nodes_and_replicas(app):
    # (3, 1, 1) and (2, 2, 1), both unprofiled, differ but agree on nodes and replicas, which is all the
    # interpolation sees: one cached result, handed out as copies
    b = np.array([10.0, 20.0, 30.0])
    t1, s1 = app._step_times((3, 1, 1), b)
    t1[:] = -1.0  # a caller that writes into the result does not change the cache
    t2, s2 = app._step_times((2, 2, 1), b)
    direct = app._nd()(np.column_stack([np.full(3, 3.0), np.full(3, 5.0), b]))
    assert np.array_equal(t2, direct[:, 0]) and np.array_equal(s2, direct[:, 1]) and np.array_equal(s1, s2)
    # the rate cache stores step times per placement; every epoch then reuses them
    assert np.isfinite(t2).all() and app.rate((3, 2, 1), 0) == app.rate((3, 2, 1), 0)
    assert app.rate((3, 2, 1), 1)[0] > 0


def test_single_blas_thread_limits_blas_inside_the_block_only():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from hetplace._blas import single_blas_thread

    def blas_threads():
        return {d["filepath"]: d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"}

    before = blas_threads()
    with single_blas_thread():
        assert all(n == 1 for n in blas_threads().values())
    assert blas_threads() == before

def test_an_unprofiled_placement_outside_the_hull_cannot_run(app):
    assert all(math.isnan(x) for x in app.step_time((8, 8, 8, 8, 8), 16))  # 40 replicas: never profiled
    assert app.rate((8, 8, 8, 8, 8), 0) == (0.0, 0, 0)


# -- statistical efficiency and the executor ----------------------------------------------------------------

def test_gain_is_pollux_efficiency_times_scale(app):
    for e in range(EPOCHS):
        assert app.gain(app.init_batch, e) == pytest.approx(1.0)
        for m in (40.0, 64.0, 100.0, 256.0):
            q, v = app.grad_stats(m, e)
            scale = m / 32.0
            assert app.gain(m, e) == pytest.approx((v + q) / (v / scale + q))
            assert 1.0 <= app.gain(m, e) <= scale
    # the statistics are linear in the batch between validated batches (here equal at every batch)
    assert app.grad_stats(48, 2) == pytest.approx((1 / 3, 4.0))


def _reference_rate(prof, p, e):
    """The executor written out slowly: every candidate of the grid, priced from the formulas."""
    r = sum(p)
    lim = prof.memory_limit(p)
    best = 0.0
    lo = max(prof.init_batch, prof.min_local_bsz * r)
    for m in np.exp(np.linspace(math.log(lo), math.log(prof.max_batch), BATCH_CANDIDATES)):
        local = m / r
        s = 0
        while math.ceil(local / (s + 1) - 1e-8) > lim:
            s += 1
        if r == 1 and local > prof.init_batch + 1e-8:
            s = max(s, 1)
        atomic = min(math.ceil(local / (s + 1) - 1e-8), int(lim), int(prof.max_batch / (r * (s + 1))))
        if atomic < prof.min_local_bsz:
            continue
        t, sync = prof.step_time(p, atomic)
        if not t > 0:
            continue
        batch = r * atomic * (s + 1)
        q, v = prof.grad_stats(batch, e)
        gain = (v + q) / (v / (batch / prof.init_batch) + q)
        best = max(best, gain / (t + s * (t - sync)) / prof.slowdown)
    return best


@pytest.mark.parametrize("p", PLACEMENTS + ((3,), (2, 1, 1), (4, 4, 4)))
def test_the_executor_picks_the_best_candidate(app, p):
    for e in range(EPOCHS):
        g, atomic, s = app.rate(p, e)
        assert g == pytest.approx(_reference_rate(app, p, e), rel=1e-12)
        assert app.min_local_bsz <= atomic <= app.memory_limit(p)
        assert sum(p) * atomic * (s + 1) <= app.max_batch


def test_later_epochs_prefer_larger_batches_and_the_calibration_divides(app, tmp_path):
    first, last = app.rate((2, 2), 0), app.rate((2, 2), EPOCHS - 1)
    assert last[1] * (last[2] + 1) >= first[1] * (first[2] + 1)
    fast = AppProfile.read(tmp_path / "toy", "gpu", slowdown=1.0)
    assert fast.rate((2, 2), 1)[0] == pytest.approx(1.5 * app.rate((2, 2), 1)[0])


@pytest.mark.parametrize("p", [(1,), (2,), (1, 1), (2, 2), (3,)])
def test_goodput_of_a_given_batch(app, p):
    n, r = len(p), sum(p)
    for atomic, s in ((8, 0), (16, 1), (33, 2), (64, 1)):
        for e in range(EPOCHS):
            t, sync = _step(n, r, atomic), _sync(n, r, atomic)
            batch = r * atomic * (s + 1)
            q, v = app.grad_stats(batch, e)
            ref = (v + q) / (v / (batch / 32.0) + q) / (t + s * (t - sync)) / 1.5
            assert app.goodput(p, atomic, s, e) == pytest.approx(ref, rel=1e-9)
    assert app.goodput(p, 65, 0, 0) == 0.0  # beyond the profiled local batches


@pytest.mark.parametrize("p, batch, want", [
    ((1,), 32, (32, 0)),      # the initial batch on one GPU: no accumulation
    ((1,), 64, (32, 1)),      # above it on one GPU: at least one accumulation step
    ((1,), 256, (64, 3)),     # 256 on one GPU of limit 64: 4 micro-batches of 64
    ((2,), 200, (50, 1)),     # 100 per GPU > 64: two of 50
    ((2, 2), 100, (25, 0)),
    ((4, 4), 256, (32, 0)),
])
def test_split_batch(app, p, batch, want):
    assert app.split_batch(p, batch) == want


def test_a_single_gpu_above_the_initial_batch_accumulates(app):
    for atomic, s in app.candidates((1,)):
        if atomic * (s + 1) > app.init_batch:
            assert s >= 1


def test_memory_limit(app, tmp_path):
    assert app.memory_limit((2, 2)) == 64
    assert app.memory_limit((3,)) == 64  # scalability rows with >= nodes and replicas
    small = AppProfile.read(_write_app(tmp_path / "small", local=(8, 16)), "gpu")
    assert small.memory_limit((4, 4)) == 16


def test_too_many_gpus_for_the_largest_batch_cannot_run(app):
    # 2 * 2 * 2 = 8 replicas * 8 (smallest local batch) = 64 <= 256: runs; 40 replicas * 8 > 256: cannot
    assert app.rate((2, 2, 2), 0)[0] > 0
    assert app.candidates((8, 8, 8, 8, 8)) == []


# -- progress over time -------------------------------------------------------------------------------------

def test_time_alone_sums_the_epochs(app):
    p = (2, 2)
    ref = sum((app.epoch_end[e] - (app.epoch_end[e - 1] if e else 0.0)) / app.rate(p, e)[0] for e in range(EPOCHS))
    assert app.time_alone(p) == pytest.approx(ref)
    done, used = app.advance(p, 0.0, ref * 2)
    assert done == app.total_progress and used == pytest.approx(ref)
    assert app.time_alone((8, 8, 8, 8, 8)) == math.inf
    assert app.advance((8, 8, 8, 8, 8), 0.0, 100.0) == (0.0, 0.0)


@given(cuts=st.lists(st.floats(0.5, 400.0), min_size=1, max_size=12), p=st.sampled_from(PLACEMENTS))
@settings(max_examples=60, deadline=None)
def test_advancing_in_pieces_is_advancing_at_once(cuts, p):
    prof = _PROF
    done, used_total = 0.0, 0.0
    for c in cuts:
        done, used = prof.advance(p, done, c)
        used_total += used
    once, used_once = prof.advance(p, 0.0, sum(cuts))
    assert done == pytest.approx(once, rel=1e-9, abs=1e-9)
    assert used_total == pytest.approx(used_once, rel=1e-9)
    assert 0.0 <= done <= prof.total_progress


def test_epochs_end_at_the_smallest_progress_any_run_reports(app):
    # validation-<k-th batch> reports 100 (e + 1) + k: the smallest is the first batch's
    assert list(app.epoch_end) == [100.0, 200.0, 300.0, 400.0]
    assert app.epoch_of(0.0) == 0 and app.epoch_of(99.9) == 0 and app.epoch_of(100.0) == 1
    assert app.epoch_of(400.0) == EPOCHS


# -- workloads ----------------------------------------------------------------------------------------------

def test_read_sia_workload(tmp_path):
    f = tmp_path / "workload-1.csv"
    f.write_text("name,time,application,num_replicas,batch_size\nb-1,30,cifar10,2,256\na-0,10,bert,1,12\n")
    jobs = read_sia_workload(f)
    assert [(j.job_id, j.name, j.arrival, j.app, j.num_replicas, j.batch_size) for j in jobs] == [
        (1, "a-0", 10.0, "bert", 1, 12), (0, "b-1", 30.0, "cifar10", 2, 256)]


@pytest.mark.parametrize("text, match", [
    ("name,time,application\n", r"missing column\(s\) num_replicas, batch_size"),
    ("name,time,application,num_replicas,batch_size\na,x,cifar10,1,2\n", r"line 2: time, num_replicas"),
    ("name,time,application,num_replicas,batch_size\na,-1,cifar10,1,2\n", r"line 2: time must be seconds >= 0"),
    ("name,time,application,num_replicas,batch_size\na,1,cifar10,0,2\n", r"num_replicas must be a whole number"),
    ("name,time,application,num_replicas,batch_size\na,1,cifar10,1,2.5\n", r"batch_size must be a whole number"),
    ("name,time,application,num_replicas,batch_size\na,1,,1,2\n", r"application is empty"),
    ("name,time,application,num_replicas,batch_size\n", r"no jobs"),
])
def test_bad_workloads_name_the_file_and_line(tmp_path, text, match):
    f = tmp_path / "w.csv"
    f.write_text(text)
    with pytest.raises(InvalidProblemError, match=match):
        read_sia_workload(f)
    with pytest.raises(InvalidProblemError, match="no such file"):
        read_sia_workload(tmp_path / "missing.csv")


def test_sia_workloads_lists_a_trace_set_in_number_order(tmp_path):
    root = _artifact(tmp_path, apps=("toy",), suffixes=("aws",))
    folder = root / "sia-simulator" / "workloads" / "saturn"
    folder.mkdir(parents=True)
    for k in (1, 2, 10):
        (folder / f"workload-{k}.csv").write_text("name,time,application,num_replicas,batch_size\n")
    assert [p.name for p in sia_workloads(root, "helios")] == ["workload-1.csv", "workload-2.csv", "workload-10.csv"]
    with pytest.raises(InvalidProblemError, match="no workload-N.csv files"):
        sia_workloads(root, "philly")
    with pytest.raises(InvalidOptionError, match="trace_set must be one of philly, helios, newtrace"):
        sia_workloads(root, "alibaba")


def test_bad_placements_are_refused_with_the_parameter_named(tmp_path):
    m = GoodputModel.from_sia(_artifact(tmp_path, apps=("toy",), suffixes=("aws",)), types={"t4": "aws"},
                              apps=("toy",))
    for bad in ((), (0, 0), (1.5,), "22", (-1,), (True,), 4):
        with pytest.raises(InvalidOptionError, match="placement must"):
            m.rate("toy", "t4", bad, 0)
    assert m.rate("toy", "t4", [2, 2], 0) == m.profile("toy", "t4").rate((2, 2), 0)


def _make_prof():
    import tempfile
    from pathlib import Path

    return AppProfile.read(_write_app(Path(tempfile.mkdtemp()) / "toy"), "gpu", "g1", slowdown=1.5)


_PROF = _make_prof()


def test_pollux_artifact_layout_one_type_and_a_batch_cap(tmp_path):
    from hetplace.online.goodput import POLLUX_MODEL

    sim = tmp_path / "adaptdl" / "simulator"
    for a in ("cifar10", "yolov3"):
        _write_app(sim / "traces" / a, "")
    assert (sim / "traces" / "yolov3" / "placements.csv").is_file()
    (sim / "workloads").mkdir()
    (sim / "workloads" / "workload-1.csv").write_text("name,time,application,num_replicas,batch_size\n")
    m = GoodputModel.from_sia(tmp_path / "adaptdl", **POLLUX_MODEL)
    assert m.gpu_types == ("t4",) and sorted(m.profiles) == ["cifar10", "yolov3"]
    assert m.profile("yolov3", "t4").memory_limit((2, 2)) == 8 and m.profile("cifar10", "t4").memory_limit((2, 2)) == 64
    assert m.profile("cifar10", "t4").restart_s == 30.0 and m.profile("cifar10", "t4").slowdown == 1.0
    assert [p.name for p in sia_workloads(tmp_path / "adaptdl", "pollux")] == ["workload-1.csv"]
