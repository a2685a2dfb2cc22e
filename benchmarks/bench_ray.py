"""hetplace.ray on a local Ray cluster: what the runtime costs (docs/ray.md §5, docs/results.md).

Run (from the repository root)::

    python benchmarks/bench_ray.py                 # the figures: 6 nodes x 4 fake GPUs, the 20-job trace
    pytest benchmarks/bench_ray.py -s -p no:cacheprovider --benchmark-disable   # a small smoke run

Figures, per run of the seeded 20-job trace of tests/test_ray.py (3 GPU types, p100 ~2x and
v100 ~3-4x a k80, ``emulated_job``) on a head and 6 nodes of 4 fake GPUs, all on 127.0.0.1:

* decision -> placement groups ready: wall seconds from the call to ``Session.decide`` to
  every placement group the decision created being ready (median, p95), split into the
  decisions that only start jobs and those that also stop or move running ones (which
  wait for the old tasks to stop at an iteration boundary and their groups to go);
* the driver's CPU per decision round (``time.process_time`` of the driver: the progress
  read, ``decide``, creating/removing placement groups, signalling stops), median and p95,
  and ``decide`` alone;
* the realised JCT against ``predicted_jct`` (median and worst relative difference).

The machine's load average is printed beside them: the figures depend on it (2 shared
cores here).  Without Ray the module is skipped.
"""

import os
import statistics
import sys
import time

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray is imported: 127.0.0.1 only

import pytest  # noqa: E402

ray = pytest.importorskip("ray")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))  # run as a script too
from instances import ray_trace  # noqa: E402

LOOPBACK = "127.0.0.1"


def _quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def measure(nodes_per_type=2, types=("k80", "p100", "v100"), n_jobs=20, horizon=1500.0, time_scale=50.0, seed=0):
    """Start a local cluster, run the trace, shut everything down; returns the figures (a dict)."""
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    from hetplace.ray import RayScheduler, emulated_job

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False  # the variable's meaning, even if Ray was imported before it was set
    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=1, num_gpus=0, node_ip_address=LOOPBACK, include_dashboard=False))
    try:
        for t in types:
            for _ in range(nodes_per_type):
                cluster.add_node(num_cpus=8, num_gpus=4, node_ip_address=LOOPBACK, labels={"gpu_type": t},
                                 wait=False)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
        sched = RayScheduler(round_s=120.0, time_scale=time_scale, bandwidth=1.25e9, node_bandwidth=1e10, seed=seed)
        for job in ray_trace(seed, n_jobs, horizon, types):
            sched.submit(job.pop("job_id"), emulated_job, **job)
        load0 = os.getloadavg()[0]
        result = sched.run(timeout_s=600)
        load1 = os.getloadavg()[0]
    finally:
        ray.shutdown()
        cluster.shutdown()
        ray_constants.ENABLE_RAY_CLUSTER = saved
    moves = [d.ready_s for d in result.decisions if d.ready_s is not None
             and any(c.action != "start" for c in d.changes)]
    starts = [d.ready_s for d in result.decisions if d.ready_s is not None
              and all(c.action == "start" for c in d.changes)]
    ready = result.ready_times()
    cpu = [d.cpu_s for d in result.decisions]
    dec = [d.decide_s for d in result.decisions]
    diffs = [j.overhead for j in result.jobs.values() if j.overhead is not None]
    return {
        "nodes": nodes_per_type * len(types), "gpus": 4 * nodes_per_type * len(types), "jobs": n_jobs,
        "time_scale": time_scale, "finished": sum(j.status == "finished" for j in result.jobs.values()),
        "wall_s": result.wall_time, "decisions": len(result.decisions),
        "ready_median_s": _quantile(ready, 0.5), "ready_p95_s": _quantile(ready, 0.95), "ready_n": len(ready),
        "ready_start_median_s": _quantile(starts, 0.5), "ready_move_median_s": _quantile(moves, 0.5),
        "cpu_median_ms": 1e3 * _quantile(cpu, 0.5), "cpu_p95_ms": 1e3 * _quantile(cpu, 0.95),
        "decide_median_ms": 1e3 * _quantile(dec, 0.5), "decide_p95_ms": 1e3 * _quantile(dec, 0.95),
        "jct_diff_median": statistics.median(diffs) if diffs else float("nan"),
        "jct_diff_worst": max(diffs, key=abs) if diffs else float("nan"),
        "restarts": sum(j.restarts for j in result.jobs.values()),
        "load_before": load0, "load_after": load1, "summary": result.summary(),
    }


def report(fig):
    print(f"cluster: {fig['nodes']} nodes, {fig['gpus']} fake GPUs; {fig['jobs']} jobs, "
          f"time_scale {fig['time_scale']:g}; load average {fig['load_before']:.2f} before, "
          f"{fig['load_after']:.2f} after")
    print(f"finished {fig['finished']}/{fig['jobs']} in {fig['wall_s']:.1f} s wall, {fig['decisions']} decisions, "
          f"{fig['restarts']} restarts")
    print(f"decide -> placement groups ready: median {fig['ready_median_s'] * 1e3:.0f} ms, p95 "
          f"{fig['ready_p95_s'] * 1e3:.0f} ms over {fig['ready_n']} decisions (starts only: median "
          f"{fig['ready_start_median_s'] * 1e3:.0f} ms; with stops or moves: "
          f"{fig['ready_move_median_s'] * 1e3:.0f} ms)")
    print(f"driver CPU per decision round: median {fig['cpu_median_ms']:.1f} ms, p95 {fig['cpu_p95_ms']:.1f} ms; "
          f"decide alone (wall): median {fig['decide_median_ms']:.1f} ms, p95 {fig['decide_p95_ms']:.1f} ms")
    print(f"realised / predicted JCT - 1: median {100 * fig['jct_diff_median']:+.1f} %, worst "
          f"{100 * fig['jct_diff_worst']:+.1f} %")


@pytest.mark.timeout(300)
def test_overhead_smoke():
    # a small run (one node per type, 5 jobs, 4x faster clock): the code path of the figures, quickly
    fig = measure(nodes_per_type=1, n_jobs=5, horizon=300.0, time_scale=200.0)
    report(fig)
    assert fig["finished"] == 5
    assert fig["ready_n"] >= 1 and fig["ready_median_s"] < 5.0
    assert fig["cpu_median_ms"] > 0


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    for r in range(runs):
        t = time.time()
        report(measure())
        print(f"(run {r + 1} of {runs}: {time.time() - t:.0f} s in all)\n")
