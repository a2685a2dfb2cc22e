"""The MILP with a network topology (docs/model.md §4.3): time to a proven optimum at K = 16-64.

Run (from the repository root; ``PYTHONPATH=.`` makes it import this checkout's hetplace)::

    PYTHONPATH=. python benchmarks/bench_milp_topology.py                  # the table of docs/model.md §4.3
    PYTHONPATH=. python benchmarks/bench_milp_topology.py 64 12 0,1 60     # K S seeds [time_limit]
    pytest benchmarks/bench_milp_topology.py                              # the small cases, timed

Instances (:func:`topology_instance`, built here until ``hetplace.instances``
has a topology family): Gavel throughputs (k80, p100, v100), nodes of 4 or 8
GPUs of one type each, links inside a node 10-40x the 10 Gbit/s between nodes,
racks of 2-4 nodes half of the time (2-5x); per-worker speeds 1.  Each
instance is solved once by ``solve_exact(method="milp")`` (SCIP) with a time
limit; the script prints each solve and the median / worst wall time and how
many ended optimal.
"""
import math
import sys
import time

import numpy as np
import pytest

from hetplace import Problem
from hetplace.data import DEFAULT_GRAD_BYTES, gavel_path, load_gavel
from hetplace.exact import solve_exact

TYPES = ("k80", "p100", "v100")
#: Inter-node links: 10 Gbit/s.
BANDWIDTH = 1.25e9
#: (K, S, seed) of the table: ten instances, K = 16-64, S = 2-12.
TABLE = [(16, 2, 0), (16, 4, 1), (24, 6, 2), (32, 4, 3), (32, 8, 4), (40, 6, 5), (48, 8, 6), (48, 10, 7),
         (64, 8, 8), (64, 12, 9)]


def topology_instance(seed, n_workers, n_jobs, table=None, p_exclude=0.15):
    """A Gavel-based problem on nodes of 4 and 8 GPUs (one type each), seeded (see the module docstring)."""
    table = load_gavel(gavel_path()) if table is None else table
    rng = np.random.default_rng([seed, n_workers, n_jobs, 24])
    sizes = []
    while sum(sizes) < n_workers:
        left = n_workers - sum(sizes)
        sizes.append(8 if left >= 8 and rng.random() < 0.5 else min(4, left))
    node_type = np.sort(rng.integers(0, len(TYPES), len(sizes)))
    node = np.concatenate([np.full(s, v) for v, s in enumerate(sizes)])  # nodes sorted by type
    counts = np.bincount(node_type, weights=sizes, minlength=len(TYPES)).astype(np.int64)
    models = [m for m in table.models if all(table.samples_per_second(m, t) > 0 for t in TYPES)]
    chosen = [models[j] for j in rng.integers(len(models), size=n_jobs)]
    rho = np.array([[table.samples_per_second(m, t) for t in TYPES] for m in chosen])
    for i in range(n_jobs):
        g = int(rng.integers(len(TYPES)))
        if rng.random() < p_exclude and (counts[np.arange(len(TYPES)) != g] > 0).any():
            rho[i, g] = 0.0  # the model does not fit this type, and another type has GPUs
    batch = [table.per_gpu_batch(m) * int(rng.integers(1, 9)) for m in chosen]
    iters = np.round(10 ** rng.uniform(3, 5, size=n_jobs))
    grad = [DEFAULT_GRAD_BYTES.get(table.family(m).split(" ")[0], 50e6) for m in chosen]
    kw = dict(node=node, node_bandwidth=rng.uniform(10, 40, len(sizes)) * BANDWIDTH)
    if len(sizes) >= 4 and rng.random() < 0.5:
        per = int(rng.integers(2, 5))
        kw.update(rack=np.arange(len(sizes)) // per, rack_bandwidth=rng.uniform(2, 5) * BANDWIDTH)
    return Problem(rho, counts, batch, iters, grad_bytes=grad, bandwidth=BANDWIDTH, type_names=list(TYPES),
                   **kw)


@pytest.mark.parametrize("K, S, seed", TABLE[:4])
def test_milp_topology(benchmark, K, S, seed):
    problem = topology_instance(seed, K, S)
    res = benchmark.pedantic(solve_exact, args=(problem,), kwargs={"method": "milp", "time_limit": 60.0},
                             rounds=1, iterations=1)
    assert res.status == "optimal" and abs(res.gap) < 1e-6
    benchmark.extra_info.update(nodes=res.info.get("nodes"), variables=res.info["n_variables"])


def run(rows, time_limit=120.0, solver="scip"):
    """Solve every (K, S, seed) of ``rows``; print each and the summary; return the results."""
    table = load_gavel(gavel_path())
    solve_exact(topology_instance(99, 8, 2, table), method="milp", solver=solver)  # warm-up (imports)
    out = []
    for K, S, seed in rows:
        P = topology_instance(seed, K, S, table)
        t = time.perf_counter()
        res = solve_exact(P, method="milp", solver=solver, time_limit=time_limit)
        wall = time.perf_counter() - t
        assert res.placement is not None and res.objective >= res.bound * (1 - 1e-6), (res, res.message)
        out.append((K, S, seed, res.status, wall, res.gap))
        start = res.info.get("incumbent_objective", math.nan) / res.objective - 1
        print(f"K={K:3d} S={S:2d} seed={seed} nodes={P.topology.n_nodes:2d} racks={P.topology.n_racks} "
              f"{res.status:9s} {wall:7.2f} s gap={res.gap:.2e} variables={res.info.get('n_variables')} "
              f"B&B nodes={res.info.get('nodes')} incumbent {start:+.2%}", flush=True)
    times = np.array([r[4] for r in out])
    print(f"optimal {sum(r[3] == 'optimal' for r in out)}/{len(out)}; wall time median {np.median(times):.2f} s, "
          f"worst {times.max():.2f} s (time_limit {time_limit} s, {solver})")
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1:
        K, S = int(sys.argv[1]), int(sys.argv[2])
        seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0]
        limit = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
        run([(K, S, s) for s in seeds], limit)
    else:
        run(TABLE)
