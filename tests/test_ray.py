"""hetplace.ray on a real local Ray cluster (docs/ray.md).

One cluster per module (``ray.cluster_utils.Cluster``): a head without GPUs and six
nodes of three GPU types, four fake GPUs each (``num_gpus=4`` and a ``gpu_type``
label), every process bound to 127.0.0.1 (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
before Ray starts, loopback addresses passed).  Fault tests add their own nodes
and remove them.  The pure parts (the cluster view, the predicted JCT, the
emulated job's clock, argument checks) have fast tests that need no cluster;
the import without Ray is checked in a subprocess.

Run: ``python -m pytest tests/test_ray.py -m ray -x -q`` (the tests on the cluster: their own CI step;
the default run takes the pure parts), the PyTorch example: ``-m slow``.
"""

import math
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# before Ray is imported: a local cluster then binds the loopback address only (Ray reads it at import)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray")

from hetplace.errors import InvalidOptionError, SessionError  # noqa: E402
from instances import ray_trace  # noqa: E402
from hetplace.ray import (  # noqa: E402
    JOB_STATUSES, RayScheduler, RunResult, Segment, emulated_job, predicted_jct,
)
from hetplace.ray._cluster import ClusterView, gpu_nodes, node_type, untyped_gpu_nodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the fns defined here travel by value: Ray's workers cannot import this test module
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
TYPES = ("k80", "p100", "v100")
LOOPBACK = "127.0.0.1"


# ---------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def cluster():
    """A head (no GPUs) and 2 nodes of each of k80, p100, v100 with 4 fake GPUs, all on 127.0.0.1."""
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    # Ray was imported before this module set the variable (another test module imported it):
    # the constant it read then is what makes a local cluster bind 127.0.0.1, so set it as the variable says
    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False

    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=1, num_gpus=0, node_ip_address=LOOPBACK, include_dashboard=False))
    try:
        # num_cpus=8 is a logical count (the tasks ask for none): a node's pool keeps that many idle
        # worker processes, so each GPU has a warm one even while a job's old tasks hand theirs back
        for t in TYPES:
            for _ in range(2):
                c.add_node(num_cpus=8, num_gpus=4, node_ip_address=LOOPBACK, labels={"gpu_type": t}, wait=False)
        c.wait_for_nodes()
        ray.init(address=c.address, logging_level="WARNING", log_to_driver=False)
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        ray_constants.ENABLE_RAY_CLUSTER = saved


def _resources_free(timeout=15.0):
    """Wait until every GPU and CPU of the cluster is free again; returns (available, total)."""
    end = time.monotonic() + timeout
    while True:
        avail, total = ray.available_resources(), ray.cluster_resources()
        if all(avail.get(r, 0.0) >= total.get(r, 0.0) - 1e-9 for r in ("GPU", "CPU")) or time.monotonic() > end:
            return avail, total
        time.sleep(0.1)


def _no_live_groups():
    return [pg for pg in ray.util.placement_group_table().values() if pg["state"] != "REMOVED"]


def _check_loopback(c):
    assert c.address.startswith(LOOPBACK + ":"), c.address
    for n in ray.nodes():
        if n["Alive"]:
            assert n["NodeManagerAddress"] == LOOPBACK, n["NodeManagerAddress"]


# ---------------------------------------------------------------- pure parts (no cluster)
def _node(nid, gpus=4, label=None, accel=None, alive=True):
    res = {"CPU": 4.0}
    if gpus:
        res["GPU"] = float(gpus)
    if accel:
        res[f"accelerator_type:{accel}"] = 1.0
    return {"NodeID": nid, "Alive": alive, "Resources": res, "Labels": {} if label is None else {"gpu_type": label}}


@pytest.mark.timeout(30)
def test_cluster_view_reads_types_from_labels_or_accelerators_and_numbers_nodes_type_by_type():
    nodes = [_node("a", label="v100"), _node("b", accel="K80"), _node("c", label="v100", gpus=2),
             _node("head", gpus=0), _node("dead", label="k80", alive=False), _node("untyped"),
             _node("both", label="p100", accel="V100")]
    assert node_type(nodes[1], "gpu_type") == "K80" and node_type(nodes[6], "gpu_type") == "p100"
    view = ClusterView(gpu_nodes(nodes, "gpu_type"))
    assert view.type_names == ["v100", "K80", "p100"]
    assert view.node_ids == ["a", "c", "b", "both"]
    assert view.session_cluster() == {"v100": [4, 2], "K80": [4], "p100": [4]}
    assert view.n_workers == 14
    assert view.worker_slot(5) == ("c", 1) and view.worker_of("b", 0) == 6
    assert untyped_gpu_nodes(nodes, "gpu_type") == ["untyped"]
    grown = view.with_nodes([("z", "K80", 4), ("a", "v100", 4)])
    assert grown.node_ids == ["a", "c", "b", "z", "both"]
    assert grown.worker_of(*view.worker_slot(13)) == 17  # the p100 node's last GPU, after the new K80s


@pytest.mark.timeout(30)
def test_cluster_without_typed_gpu_nodes_says_how_to_label_them():
    with pytest.raises(InvalidOptionError, match="labels"):
        ClusterView(gpu_nodes([_node("x"), _node("h", gpus=0)], "gpu_type"))


def _seg(decided, iterations, step, ended=None, restore=False, restart=0.0, launched=0.0):
    return Segment(decided=decided, workers=(0,), types={"v100": 1}, nodes=("a",), step_time=step, restore=restore,
                   restart_time=restart, start_iteration=0, launched=launched, ended=ended, iterations=iterations)


@pytest.mark.timeout(30)
def test_predicted_jct_is_the_waiting_as_it_happened_plus_each_segment_at_the_models_rate():
    # waits 10 s, runs 100 iterations at 0.5 s, is moved (no wait), restores 30 s and runs 40 at 0.25 s
    segs = [_seg(10.0, 100, 0.5, ended=70.0), _seg(70.0, 40, 0.25, restore=True, restart=30.0)]
    assert predicted_jct(0.0, segs) == pytest.approx(10 + 50 + 30 + 10)
    # stopped at 70 (pending), started again at 100: 30 s more waiting
    segs = [_seg(10.0, 100, 0.5, ended=70.0), _seg(100.0, 40, 0.25, restore=True, restart=30.0)]
    assert predicted_jct(0.0, segs) == pytest.approx(10 + 50 + 30 + 30 + 10)
    # a group replaced before it launched costs nothing; one replaced while restoring, what it paid
    never = Segment(decided=5.0, workers=(0,), types={}, nodes=("a",), step_time=1.0, restore=False, restart_time=0,
                    start_iteration=0, launched=None, ended=6.0, iterations=0)
    restoring = _seg(6.0, 0, 1.0, ended=16.0, restore=True, restart=30.0)
    assert never.predicted == 0.0 and restoring.predicted == 10.0
    assert math.isnan(predicted_jct(3.0, []))


class _FakeCtx:
    def __init__(self, **kw):
        self.time_scale, self.restore, self.restart_time, self.step_time = 100.0, False, 0.0, 0.5
        self.report_s, self.iterations, self.start_iteration = 0.05, 120, 20
        self.__dict__.update(kw)
        self.reports, self.stop_after = [], None

    def should_stop(self):
        return self.stop_after is not None and len(self.reports) >= self.stop_after

    def wait_stop(self, timeout):
        if self.should_stop():
            return True
        time.sleep(max(0.0, timeout))
        return False

    def report(self, i):
        self.reports.append(i)


@pytest.mark.timeout(30)
def test_emulated_job_sleeps_the_models_time_scaled_and_stops_at_a_boundary():
    ctx = _FakeCtx(restore=True, restart_time=20.0)
    t = time.monotonic()
    assert emulated_job(ctx) == 120
    took = time.monotonic() - t
    assert took == pytest.approx((20.0 + 100 * 0.5) / 100.0, rel=0.1, abs=0.03)
    assert ctx.reports[-1] == 120 and ctx.reports == sorted(ctx.reports)
    assert all(b - a == 10 for a, b in zip(ctx.reports, ctx.reports[1:]))  # blocks of one report period
    ctx = _FakeCtx()
    ctx.stop_after = 3
    assert emulated_job(ctx) == 50  # asked after its third report: it stops at the iteration its clock is at
    assert ctx.reports[:3] == [30, 40, 50] and ctx.reports[-1] == 50


@pytest.mark.timeout(30)
def test_bad_arguments_name_the_parameter_and_the_fix():
    with pytest.raises(InvalidOptionError, match="policy must be one of"):
        RayScheduler(policy="fastest")
    with pytest.raises(InvalidOptionError, match="time_scale must be a positive"):
        RayScheduler(time_scale=0)
    with pytest.raises(InvalidOptionError, match="round_s"):
        RayScheduler(round_s=float("inf"))
    with pytest.raises(InvalidOptionError, match="seed"):
        RayScheduler(seed="x")
    s = RayScheduler()
    with pytest.raises(SessionError, match="fn must be a callable"):
        s.submit("a", "emulated_job", throughput={"v100": 1.0}, batch=8, iterations=10)
    with pytest.raises(SessionError, match="iterations must be a whole number"):
        s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10.5)
    with pytest.raises(SessionError, match="arrival"):
        s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10, arrival=-1)
    with pytest.raises(SessionError, match="min_workers"):
        s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10, min_workers=9)
    s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10)
    with pytest.raises(SessionError, match="already submitted"):
        s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10)
    assert set(JOB_STATUSES) >= {"finished", "failed", "infeasible"}


@pytest.mark.timeout(30)
def test_run_without_a_connected_ray_says_to_call_ray_init():
    if ray.is_initialized():
        pytest.skip("Ray is connected in this process (the module's cluster)")
    s = RayScheduler()
    s.submit("a", emulated_job, throughput={"v100": 1.0}, batch=8, iterations=10)
    with pytest.raises(InvalidOptionError, match=r"ray\.init"):
        s.run()


@pytest.mark.timeout(60)
def test_without_ray_hetplace_imports_and_hetplace_ray_says_how_to_install():
    code = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import hetplace\n"
        "assert 'ray' not in [m.split('.')[0] for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    import hetplace.ray\n"
        "except hetplace.errors.MissingDependencyError as exc:\n"
        "    print('MSG', exc)\n"
        "else:\n"
        "    raise SystemExit('imported')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, out.stderr
    assert 'pip install "hetplace[ray]"' in out.stdout


@pytest.mark.timeout(60)
def test_import_hetplace_does_not_import_ray():
    code = "import sys, hetplace, hetplace.session\nprint('ray' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the 20-job trace
@pytest.mark.ray
@pytest.mark.timeout(240)
def test_trace_of_20_jobs_runs_as_the_model_predicts(cluster):
    _check_loopback(cluster)
    sched = RayScheduler(round_s=120.0, time_scale=40.0, bandwidth=1.25e9, node_bandwidth=1e10, seed=0)
    trace = ray_trace(seed=0)
    for job in trace:
        sched.submit(job.pop("job_id"), emulated_job, **job)
    t0 = time.monotonic()
    result = sched.run(timeout_s=150)
    wall = time.monotonic() - t0
    print(result.summary())
    print(f"run: {wall:.1f} s wall")
    assert isinstance(result, RunResult) and result.status == "ok"
    # every job finishes
    assert [j.status for j in result.jobs.values()] == ["finished"] * 20, result.summary()
    # every placement group became ready, or a later decision replaced it (its job then has the newer one)
    for d in result.decisions:
        if d.placement_groups:
            assert d.ready_s is not None or d.superseded, d
    for j in result.jobs.values():
        assert sum(s.iterations for s in j.segments) == j.iterations
        assert all(s.launched is not None for s in j.segments if s.iterations > 0)
    # the realised JCT of each job within 10 % of the model's prediction, the median within 5 %
    diffs = [j.jct / j.predicted_jct - 1.0 for j in result.jobs.values()]
    worst = max(diffs, key=abs)
    assert all(abs(x) <= 0.10 for x in diffs), f"worst {worst:+.3f}\n{result.summary()}"
    assert abs(statistics.median(diffs)) <= 0.05, result.summary()
    # restarts as the session counts them: resizes and moves of running jobs
    for jid, j in result.jobs.items():
        changed = sum(1 for d in result.decisions for c in d.changes
                      if c.job_id == jid and c.action in ("resize", "migrate"))
        assert j.restarts == changed
        assert len(j.segments) >= 1 + j.restarts - sum(1 for s in j.segments if s.launched is None)
    # nothing is left behind
    assert _no_live_groups() == []
    avail, total = _resources_free()
    assert avail.get("GPU") == total.get("GPU") == 24.0


# ---------------------------------------------------------------- faults
@pytest.mark.ray
@pytest.mark.timeout(150)
def test_a_node_removed_mid_run_loses_no_job(cluster):
    # a fast node of its own type draws the jobs; it is removed while they run there
    extra = cluster.add_node(num_cpus=8, num_gpus=4, node_ip_address=LOOPBACK, labels={"gpu_type": "a100"})
    try:
        sched = RayScheduler(round_s=60.0, time_scale=40.0, seed=1)
        for i in range(3):
            sched.submit(f"n{i}", emulated_job, throughput={"a100": 400.0, "v100": 100.0, "k80": 30.0}, batch=64,
                         iterations=600, restart_time=10.0, max_workers=2, arrival=5.0 * i)
        extra_id = extra.node_id
        removed = threading.Event()

        def remove_when_used():
            # a second after a job's placement group holds GPUs there (the run is under way), the node goes
            end = time.monotonic() + 60
            while time.monotonic() < end:
                groups = ray.util.placement_group_table().values()
                if any(g["state"] == "CREATED" and g["name"].split(":")[2:3] in (["n0"], ["n1"], ["n2"])  # a job's
                       # group ("hetplace:<run>:<job>:<epoch>"), not the warm-up's
                       and extra_id in g["bundles_to_node_id"].values() for g in groups):
                    time.sleep(1.0)
                    cluster.remove_node(extra, allow_graceful=False)  # it dies, it does not leave
                    removed.set()
                    return
                time.sleep(0.05)

        remover = threading.Thread(target=remove_when_used, daemon=True)
        remover.start()
        try:
            result = sched.run(timeout_s=100)
        finally:
            remover.join(timeout=70)
        assert removed.is_set()
        print(result.summary())
        print("\n".join(result.log))
        for j in result.jobs.values():
            print(j.job_id, [(round(s.decided, 1), s.launched and round(s.launched - s.decided, 1), s.startup and
                              round(s.startup, 1), round(s.ended, 1), s.end_cause, s.iterations) for s in j.segments])
        assert result.status == "ok"
        assert all(j.status == "finished" for j in result.jobs.values())
        lost = [j for j in result.jobs.values() if any(s.end_cause == "node_lost" for s in j.segments)]
        assert lost, "no job ran on the removed node"
        for j in result.jobs.values():
            assert sum(s.iterations for s in j.segments) == 600  # no progress lost or double-counted
        assert any(s.end_cause == "node_lost" and s.launched is not None for j in lost for s in j.segments)
        for j in lost:
            after = j.segments[-1]
            assert after.end_cause == "finish" and "a100" not in after.types
            assert j.recoveries >= 1
        assert any("is gone" in line for line in result.log)
    finally:
        if extra in cluster.worker_nodes:
            cluster.remove_node(extra, allow_graceful=False)
    assert _no_live_groups() == []


def _raises_after(ctx):
    """An fn that fails on rank 0 after a few iterations (the others stop when asked)."""
    step = 0.01
    i = ctx.start_iteration
    while i < ctx.iterations:
        if ctx.should_stop():
            return
        time.sleep(step)
        i += 1
        ctx.report(i)
        if i == 20 and ctx.rank == 0:
            raise RuntimeError("boom: the loss went NaN")


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_a_job_whose_fn_raises_fails_and_the_others_finish(cluster):
    sched = RayScheduler(round_s=60.0, time_scale=40.0)
    sched.submit("bad", _raises_after, throughput={"v100": 100.0}, batch=64, iterations=10_000, min_workers=2)
    for i in range(2):
        sched.submit(f"ok{i}", emulated_job, throughput={"k80": 30.0, "p100": 60.0, "v100": 100.0}, batch=64,
                     iterations=300, arrival=2.0 * i)
    result = sched.run(timeout_s=90)
    bad = result.jobs["bad"]
    assert bad.status == "failed"
    assert "boom: the loss went NaN" in bad.error and "in _raises_after" in bad.error and "\x1b" not in bad.error
    assert bad.jct is None and bad.finish is not None
    assert [result.jobs[f"ok{i}"].status for i in range(2)] == ["finished", "finished"]
    assert not result.success
    assert any("'bad' failed" in line for line in result.log)
    assert _no_live_groups() == []


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_an_infeasible_job_carries_the_sessions_reason_and_the_others_finish(cluster):
    sched = RayScheduler(round_s=60.0, time_scale=40.0)
    sched.submit("huge", emulated_job, throughput={"k80": 30.0}, batch=64, iterations=100, min_workers=9)
    sched.submit("small", emulated_job, throughput={"k80": 30.0, "v100": 100.0}, batch=64, iterations=300,
                 arrival=1.0)
    result = sched.run(timeout_s=60)
    huge = result.jobs["huge"]
    assert huge.status == "infeasible"
    assert huge.reason.code == "infeasible" and huge.reason.data["usable_gpus"] == 8
    assert "9 GPUs" in huge.reason.message
    assert any("'huge' waits (infeasible)" in line for line in result.log)  # never a silent PENDING
    assert huge.segments == [] and huge.jct is None
    assert result.jobs["small"].status == "finished"
    assert result.status == "ok"


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_ctrl_c_in_the_driver_leaves_no_placement_group_or_actor(cluster):
    import _thread

    sched = RayScheduler(round_s=60.0, time_scale=10.0)
    for i in range(4):
        sched.submit(f"long{i}", emulated_job, throughput={"k80": 30.0, "p100": 60.0, "v100": 100.0}, batch=64,
                     iterations=100_000, min_workers=2)
    timer = threading.Timer(3.0, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        sched.run(timeout_s=60)
    timer.join()
    assert sched.coordinator_name is not None
    with pytest.raises(ValueError):
        ray.get_actor(sched.coordinator_name)
    assert _no_live_groups() == []
    avail, total = _resources_free()
    for r in ("GPU", "CPU"):
        assert avail.get(r, 0.0) == total.get(r, 0.0), (r, avail, total)


@pytest.mark.ray
@pytest.mark.timeout(120)
def test_an_exception_in_the_driver_cleans_up_too(cluster, monkeypatch):
    import hetplace

    calls = {"n": 0}
    real = hetplace.Session.decide

    def failing(self, apply=True):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("driver bug")
        return real(self, apply)

    monkeypatch.setattr(hetplace.Session, "decide", failing)
    sched = RayScheduler(round_s=30.0, time_scale=20.0)
    for i in range(3):
        sched.submit(f"x{i}", emulated_job, throughput={"p100": 60.0, "v100": 100.0}, batch=64, iterations=50_000,
                     arrival=10.0 * i)
    with pytest.raises(RuntimeError, match="driver bug"):
        sched.run(timeout_s=60)
    with pytest.raises(ValueError):
        ray.get_actor(sched.coordinator_name)
    assert _no_live_groups() == []
    avail, total = _resources_free()
    assert avail.get("GPU") == total.get("GPU")


# ---------------------------------------------------------------- the PyTorch example
@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.timeout(300)
def test_pytorch_gloo_example_trains_with_the_batch_split_by_hetplace(cluster):
    pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("ray_torch_example", ROOT / "examples" / "ray_torch.py")
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example
    spec.loader.exec_module(example)
    result = example.run(iterations=30, time_scale=1.0)
    job = result.jobs["mlp"]
    assert job.status == "finished", result.summary()
    losses = example.LOSSES
    assert losses and losses[-1] < losses[0]
