"""SMP (defaults) against the topology MILP on seeded topology instances (docs/model.md §3.13).

    PYTHONPATH=. python benchmarks/topology_gap.py FIRST LAST [TIME_LIMIT [smp|milp]] [--cache FILE]

Seeds FIRST..LAST-1; K drawn from {16, 24, 32, 48, 64}, S from 2-12; the instance generator of
``bench_topology.py`` ("smp"), of ``bench_milp_topology.py`` ("milp"), or the public family
``hetplace.instances.topology_instance`` with racks 70 % of the time ("instances"). One JSON line per instance
(SMP's gap to the MILP's optimum, or to its best when not proven; its gap to the MILP's bound; the
flat-model placement's ratio), then the summary over the proven ones.

``--cache FILE``: the MILP's results are read from FILE (JSON lines: generator, seed, K, S, time
limit, status, objective, bound) when it has the instance at this time limit, else solved and
appended: SMP's changes are then measured against the same optima without solving them again.
"""
import os
import sys, time, json
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hetplace as hp
from hetplace.exact import solve_exact
from bench_topology import topology_problem, flat_twin
import bench_milp_topology as BM


def _public_family(seed, K, S):
    """``hetplace.instances.topology_instance`` (8-GPU NVLink and 4-GPU PCIe nodes), racks 70 % of the time."""
    from hetplace.data import gavel_path
    from hetplace.instances import topology_instance

    rng = np.random.default_rng([seed, 98])
    rng.choice([16, 24, 32, 48, 64]), rng.integers(2, 13)  # K and S, drawn by the caller from the same stream
    return topology_instance(seed, K, S, gavel_path(), racks=bool(rng.random() < 0.7))


def _solve(p, gen, seed, K, S, limit, cache):
    """The MILP's (status, objective, bound) on ``p``: from ``cache`` (a path or None) when there, else solved."""
    key = dict(gen=gen, seed=seed, K=K, S=S, limit=limit)
    if cache and os.path.exists(cache):
        with open(cache) as f:
            for line in f:
                r = json.loads(line)
                if all(r.get(k) == v for k, v in key.items()):
                    return r["status"], r["objective"], r["bound"], 0.0
    t = time.perf_counter(); res = solve_exact(p, method="milp", solver="scip", time_limit=limit)
    te = time.perf_counter() - t
    if cache:
        with open(cache, "a") as f:
            f.write(json.dumps(dict(key, status=res.status, objective=res.objective, bound=res.bound)) + "\n")
    return res.status, res.objective, res.bound, te


def main():
    cache = None
    if "--cache" in sys.argv:
        i = sys.argv.index("--cache")
        cache = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    gen = sys.argv[4] if len(sys.argv) > 4 else "smp"
    make = topology_problem if gen == "smp" else (lambda seed, K, S: BM.topology_instance(seed, K, S))
    if gen == "instances":
        make = _public_family

    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    rows = []
    for seed in range(lo, hi):
        rng = np.random.default_rng([seed, 98 if gen == "instances" else 99])
        K = int(rng.choice([16, 24, 32, 48, 64])); S = int(rng.integers(2, 13))
        p = make(seed, K, S)
        t = time.perf_counter(); pl = hp.place(p, "smp", seed=0); ts = time.perf_counter() - t
        flat = hp.evaluate(p, hp.place(flat_twin(p), "smp", seed=0).worker_job)
        status, objective, bound, te = _solve(p, gen, seed, K, S, limit, cache)
        best = min(objective, pl.mean_jct) if objective is not None else pl.mean_jct
        gap = pl.mean_jct / best - 1
        row = dict(seed=seed, K=K, S=S, status=status, gap=gap, smp_ms=ts * 1e3, milp_s=te,
                   bound_gap=pl.mean_jct / bound - 1 if bound else None, topo_vs_flat=pl.mean_jct / flat.mean_jct)
        rows.append(row); print(json.dumps(row), flush=True)
    opt = [r for r in rows if r["status"] == "optimal"]
    g = np.array([r["gap"] for r in opt])
    print(f"optimal {len(opt)}/{len(rows)}; gap mean {g.mean()*100:.3f} % worst {g.max()*100:.3f} %; over 1 %: {(g>0.01).sum()}; topo/flat mean {np.mean([r['topo_vs_flat'] for r in rows]):.3f}")


if __name__ == "__main__":
    main()
