"""SMP with a network topology (docs/model.md §3.13): quality, what topology buys, speed.

Run (from the repository root)::

    pytest benchmarks/bench_topology.py -k quality -s        # gap table + topology vs flat (not timed)
    pytest benchmarks/bench_topology.py -k latency --benchmark-columns=median,min,max -s
    pytest benchmarks/bench_topology.py -k scale -s          # K = 100,000 in 8-GPU nodes, 5,000 jobs

Instances (:func:`topology_problem`): a seeded Gavel instance (3 GPU types,
``hetplace.instances.gavel_instance``) whose GPUs fill nodes of 4 or 8 (drawn
per node; one type per node), intra-node bandwidth 10-40x the 10 Gbit/s between
nodes, and half of the time racks of 2-4 nodes at 2-8x it.  The quality table
runs held-out seeds (``HETPLACE_TOPO_SEEDS``, default 1000-1059; the defaults of
``hetplace._smp_topology`` were tuned on seeds 0-39) with default options:

* K <= 8: the gap to ``solve_exact(method="brute")`` (exact, topology priced);
* K = 16-64, S = 2-12: the gap to a strong reference: the best of SMP itself
  with far more effort (512 samples, 32 searched candidates, 256 kicks, three
  seeds) and of the default run.  An upper bound of the optimum, so these gaps
  are lower bounds of the true ones; the topology MILP replaces it when it lands.

"What topology buys": the same instances without ``node=`` (today's flat
model), placed by SMP, that placement priced in the topology model, against SMP
with the topology: the mean JCT ratio (below 1 = topology helps).
Results go to ``bench-out/topology_quality.json``.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import hetplace as hp
from hetplace._cost import price
from hetplace.data import gavel_path
from hetplace.exact import solve_exact
from hetplace.instances import gavel_instance
from hetplace.problem import Problem

CI = os.environ.get("CI", "") not in ("", "0", "false")
#: Seeds of the quality table (a smoke run of 6 in CI; the table of docs/model.md §3.13 used 1000:1060 and 2000:2060).
SEEDS = range(*(int(x) for x in os.environ.get("HETPLACE_TOPO_SEEDS", "1000:1006" if CI else "1000:1060").split(":")))
SIZES = (16, 24, 32, 48, 64)


def topology_problem(seed, n_workers, n_jobs, racks=None, inter=1.25e9):
    """A Gavel instance on nodes of 4 or 8 GPUs (one type each), intra-node 10-40x ``inter``; optional racks."""
    p = gavel_instance(seed, n_workers, n_jobs, gavel_path())
    rng = np.random.default_rng([seed, n_workers, n_jobs, 24])
    node, v = [], 0
    for m in p.type_counts:  # workers are listed type by type
        left = int(m)
        while left > 0:
            take = min(int(rng.choice([4, 8])), left)
            node += [v] * take
            v, left = v + 1, left - take
    kw = dict(node=np.array(node), node_bandwidth=rng.uniform(10, 40, v) * inter)
    racks = bool(rng.random() < 0.5) if racks is None else racks
    if racks and v >= 2:
        rack = np.empty(v, dtype=np.int64)
        rack[rng.permutation(v)] = np.arange(v) // int(rng.integers(2, 5))
        kw.update(rack=rack, rack_bandwidth=rng.uniform(2, 8) * inter)
    return Problem(p.throughput, p.type_counts, p.batch, p.iterations, p.grad_bytes, inter,
                   job_names=p.job_names, type_names=p.type_names, **kw)


def flat_twin(p):
    """``p`` without its topology: every link at the top-level bandwidth (today's flat model)."""
    return Problem(p.throughput, p.type_counts, p.batch, p.iterations, p.grad_bytes, p.bandwidth,
                   job_names=p.job_names, type_names=p.type_names)


def strong_reference(p, seeds=3):
    """Mean JCT of the best of SMP with far more effort (an upper bound of the optimum)."""
    import hetplace._smp_topology as topo
    from hetplace.smp import smp_place

    saved = topo.SEARCH_ROWS, topo.KICKS
    topo.SEARCH_ROWS, topo.KICKS = 32, 256
    try:
        return min(price(p, smp_place(p, seed=10_000 + s, samples=512, polish_top=64)[0]).total
                   for s in range(seeds)) / p.n_jobs
    finally:
        topo.SEARCH_ROWS, topo.KICKS = saved


def _instance(seed, small):
    rng = np.random.default_rng(seed)
    if small:
        K = int(rng.integers(4, 9))
        return topology_problem(seed, K, int(rng.integers(2, min(K, 4) + 1)))
    return topology_problem(seed, int(rng.choice(SIZES)), int(rng.integers(2, 13)))


def test_quality_table():
    rows = []
    for small in (True, False):
        for seed in SEEDS:
            p = _instance(seed, small)
            t = time.perf_counter()
            pl = hp.place(p, method="smp", seed=seed)
            dt = time.perf_counter() - t
            if small:
                ref, kind = solve_exact(p, method="brute").objective, "brute"
            else:
                ref, kind = min(strong_reference(p), pl.mean_jct), "strong-reference"
            flat = price(p, hp.place(flat_twin(p), method="smp", seed=seed).worker_job).total / p.n_jobs
            rows.append(dict(seed=seed, K=p.n_workers, S=p.n_jobs, nodes=p.topology.n_nodes,
                             racks=p.topology.rack is not None, reference=kind, gap=pl.mean_jct / ref - 1,
                             topology_vs_flat=pl.mean_jct / flat, decide_s=dt))
    out = {}
    for kind in ("brute", "strong-reference"):
        g = np.array([r["gap"] for r in rows if r["reference"] == kind])
        ratio = np.array([r["topology_vs_flat"] for r in rows if r["reference"] == kind])
        out[kind] = dict(n=int(g.size), mean_gap=float(g.mean()), worst_gap=float(g.max()),
                         over_1pct=int((g > 0.01).sum()), mean_ratio=float(ratio.mean()),
                         worst_ratio=float(ratio.max()))
        print(f"\n{kind:17s} n={g.size:3d}  gap mean {100 * g.mean():.3f} %  worst {100 * g.max():.3f} %  "
              f">1 %: {int((g > 0.01).sum())}   topology/flat mean JCT {ratio.mean():.3f} (worst {ratio.max():.3f})")
    Path("bench-out").mkdir(exist_ok=True)
    Path("bench-out/topology_quality.json").write_text(json.dumps(dict(summary=out, rows=rows), indent=1))
    assert all(r["gap"] > -1e-9 for r in rows if r["reference"] == "brute")


@pytest.fixture(scope="module")
def k64():
    p = topology_problem(123, 64, 8)
    f = flat_twin(p)
    hp.place(p, method="smp", seed=0)  # warm-up (JIT / first calls)
    hp.place(f, method="smp", seed=0)
    return p, f


@pytest.mark.benchmark(group="decision K=64 S=8: topology vs flat")
def test_topology_latency(benchmark, k64):
    p, _ = k64
    pl = benchmark(hp.place, p, method="smp", seed=1)
    benchmark.extra_info.update(mean_jct=pl.mean_jct, **{k: v for k, v in pl.info.items() if k.endswith("_time")})


@pytest.mark.benchmark(group="decision K=64 S=8: topology vs flat")
def test_flat_latency(benchmark, k64):
    _, f = k64
    benchmark(hp.place, f, method="smp", seed=1)


def test_side_by_side(k64):
    """Interleaved runs (the same load for both): medians and minima, and their ratio."""
    p, f = k64
    a, b = [], []
    for r in range(40):
        t = time.perf_counter()
        hp.place(p, method="smp", seed=r)
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        hp.place(f, method="smp", seed=r)
        b.append(time.perf_counter() - t)
    print(f"\nK=64 S=8  topology median {1e3 * np.median(a):.2f} ms (min {1e3 * min(a):.2f})  flat median "
          f"{1e3 * np.median(b):.2f} ms (min {1e3 * min(b):.2f})  ratio of medians {np.median(a) / np.median(b):.2f}"
          f", of minima {min(a) / min(b):.2f}")


_SCALE = """
import json, sys, time
import numpy as np
import hetplace as hp
from hetplace.instances import gavel_instance
from hetplace.data import gavel_path
from hetplace.problem import Problem
K, S = int(sys.argv[1]), int(sys.argv[2])
def build(seed):
    base = gavel_instance(seed, K, S, gavel_path())
    node = np.arange(K) // 8  # 8-GPU nodes (a node straddles two types where a count is not a multiple of 8)
    bw = np.array([10.0, 20.0, 40.0])[base.worker_type[::8]] * base.bandwidth  # PCIe to NVLink by type
    return Problem(base.throughput, base.type_counts, base.batch, base.iterations, base.grad_bytes, base.bandwidth,
                   node=node, node_bandwidth=bw)
hp.place(build(6), method="smp", seed=0)  # warm-up on another instance
runs = []
for seed in (1, 2):
    t = time.perf_counter()
    p = build(seed)
    t1 = time.perf_counter()
    pl = hp.place(p, method="smp", seed=1)
    t2 = time.perf_counter()
    runs.append(dict(seed=seed, build=t1 - t, decide=t2 - t1, total=t2 - t, mean_jct=pl.mean_jct,
                     nodes_spanned=float(np.mean(pl.nodes_spanned)), feasible=bool(hp.is_feasible(p, pl.worker_job))))
peak = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps(dict(runs=runs, peak_bytes=peak)))
"""


def test_scale():
    K, S = (int(x) for x in os.environ.get("HETPLACE_SCALE", "100000:5000").split(":"))
    res = subprocess.run([sys.executable, "-c", _SCALE, str(K), str(S)], capture_output=True, text=True, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for r in out["runs"]:
        print(f"\nK={K} S={S} seed {r['seed']}: build {r['build']:.2f} s, decide {r['decide']:.2f} s, "
              f"total {r['total']:.2f} s, mean nodes spanned {r['nodes_spanned']:.2f}")
    print(f"peak memory {out['peak_bytes'] / 2**30:.2f} GiB")
    assert all(r["feasible"] for r in out["runs"])
    assert out["peak_bytes"] < 2 * 2**30
