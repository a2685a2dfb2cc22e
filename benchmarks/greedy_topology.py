"""The greedy baseline with a network topology against the topology-blind greedy.

Run (from the repository root)::

    python benchmarks/greedy_topology.py

On seeded ``topology`` instances (:func:`hetplace.instances.topology_instance`:
8-GPU NVLink nodes beside 4-GPU PCIe nodes, racks of 4-8 nodes), the greedy
baseline priced in the topology model (``greedy_placement(problem)``) against
the same baseline on the problem without its topology (the flat model at the
top-level bandwidth), whose placement is then priced in the topology model.
Reported per size: how often the topology-aware placement is better, equal
or worse, the ratio of the mean JCTs (aware / blind), and each one's mean time
(single runs, instances built outside the timer; a shared machine's times vary).
"""

import time

import numpy as np

import hetplace as hp
from hetplace import baselines
from hetplace.data import load_gavel
from hetplace.instances import topology_instance

SIZES = ((16, 2, 30), (16, 6, 30), (32, 4, 30), (32, 12, 30), (64, 8, 30), (64, 12, 30), (1024, 64, 5),
         (8192, 512, 2))


def flat(problem):
    """``problem`` without its topology."""
    d = problem.to_dict()
    for key in ("node", "node_bandwidth", "rack", "rack_bandwidth"):
        d.pop(key, None)
    return hp.Problem.from_dict(d)


def main():
    table = load_gavel()
    for K, S, seeds in SIZES:
        better = equal = worse = 0
        ratios, t_aware, t_blind = [], 0.0, 0.0
        for seed in range(seeds):
            p = topology_instance(seed, K, S, table)
            f = flat(p)
            t = time.perf_counter()
            aware = baselines.greedy_placement(p)
            t_aware += time.perf_counter() - t
            t = time.perf_counter()
            blind = baselines.greedy_placement(f)
            t_blind += time.perf_counter() - t
            a, b = hp.evaluate(p, aware).mean_jct, hp.evaluate(p, blind).mean_jct
            ratios.append(a / b)
            better += a < b * (1 - 1e-12)
            worse += a > b * (1 + 1e-12)
            equal += b * (1 - 1e-12) <= a <= b * (1 + 1e-12)
        r = np.array(ratios)
        print(f"K={K:5d} S={S:4d} seeds={seeds:2d}: better {better}, equal {equal}, worse {worse}; "
              f"mean JCT aware/blind: mean {r.mean():.3f}, min {r.min():.3f}, max {r.max():.3f}; "
              f"time {t_aware / seeds * 1e3:.1f} ms (aware) vs {t_blind / seeds * 1e3:.1f} ms (blind)")


if __name__ == "__main__":
    main()
