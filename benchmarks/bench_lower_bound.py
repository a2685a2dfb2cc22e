"""The proven lower bound (hetplace.lower_bound): its time, and SMP's certified gap to it.

Run (from the repository root)::

    pytest benchmarks/bench_lower_bound.py --benchmark-columns=median,min,max
    pytest benchmarks/bench_lower_bound.py -k "gavel and 64"       # a subset
    python benchmarks/bench_lower_bound.py                         # the table of docs/model.md §4.8
    python benchmarks/bench_lower_bound.py speeds 4096 256 0,1,2     # one row: family K S seeds [time_limit]

Instances (``hetplace.instances.gavel_instance`` / ``speeds_instance``, the
Gavel table) are built outside the timed call; the JIT and OR-Tools are warmed
up first on another instance.  Each result is checked after timing: the bound
is positive and SMP's placement is not below it; the certified gap
``SMP mean JCT / bound - 1``, the status and the iterations go to
``benchmark.extra_info``.  Targets (issue 22): K = 64, S = 8 median gap <= 0.5 %
and under 1 s; K = 4096, S = 256 median <= 1 % and under 10 s; K = 100,000,
S = 5,000 under 60 s and 2 GiB (the script, not the pytest run).
"""
import resource
import sys
import time

import numpy as np
import pytest

import hetplace
from hetplace.data import gavel_path
from hetplace.instances import gavel_instance, speeds_instance

FAMILIES = {"gavel": gavel_instance, "speeds": speeds_instance}
CASES = [("gavel", 64, 8), ("gavel", 4096, 256), ("speeds", 64, 8), ("speeds", 4096, 256)]
#: The rows of docs/model.md §4.8: (family, K, S, seeds, time_limit).
TABLE = [
    ("gavel", 64, 8, range(10), None),
    ("gavel", 4096, 256, range(5), None),
    ("speeds", 64, 8, range(10), None),
    ("speeds", 4096, 256, range(3), 60.0),
    ("gavel", 100_000, 5_000, range(2), 120.0),
    ("speeds", 100_000, 5_000, range(1), 120.0),
]


def _warm_up():
    hetplace.lower_bound(gavel_instance(0, 256, 16, gavel_path()))
    hetplace.lower_bound(speeds_instance(0, 512, 16, gavel_path()))


@pytest.fixture(scope="module", autouse=True)
def _warm():
    _warm_up()


@pytest.mark.parametrize("family,K,S", CASES, ids=[f"{f}-{k}-{s}" for f, k, s in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_lower_bound(benchmark, family, K, S, seed):
    problem = FAMILIES[family](seed, K, S, gavel_path())
    res = benchmark.pedantic(hetplace.lower_bound, args=(problem,), kwargs={"time_limit": 60.0}, rounds=1,
                             iterations=1)
    smp = hetplace.place(problem, method="smp", seed=0)
    gap = smp.gap_to_bound(res)
    assert res.bound > 0 and gap >= -1e-9
    benchmark.extra_info.update(status=res.status, certified_gap=gap, iterations=res.info["iterations"],
                                classes=res.info["classes"], pricing=res.info["pricing"])


def row(family, K, S, seeds, time_limit=None):
    """Measure one row: per-seed lines, then the median and worst gap and time."""
    gaps, times = [], []
    for seed in seeds:
        problem = FAMILIES[family](seed, K, S, gavel_path())
        t = time.perf_counter()
        res = hetplace.lower_bound(problem, time_limit=time_limit)
        elapsed = time.perf_counter() - t
        smp = hetplace.place(problem, method="smp", seed=0)
        gaps.append(smp.gap_to_bound(res))
        times.append(elapsed)
        print(f"  {family} K={K} S={S} seed={seed}: {res.status} bound={res.bound:.7g} smp={smp.mean_jct:.7g} "
              f"gap={gaps[-1]:.3%} t={elapsed:.2f}s iterations={res.info['iterations']} "
              f"classes={res.info['classes']} rounded={res.info['rounded']}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| {family} | {K:,} | {S:,} | {len(gaps)} | {np.median(gaps):.3%} | {max(gaps):.3%} | "
          f"{np.median(times):.2f} s | {max(times):.2f} s | {peak:.0f} MiB |", flush=True)


if __name__ == "__main__":
    _warm_up()
    if len(sys.argv) > 1:
        fam, K, S, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(x) for x in sys.argv[4].split(",")]
        row(fam, K, S, seeds, float(sys.argv[5]) if len(sys.argv) > 5 else None)
    else:
        print("| family | K | S | seeds | median gap | worst gap | median time | worst time | peak RSS |")
        for fam, K, S, seeds, limit in TABLE:
            row(fam, K, S, seeds, limit)
