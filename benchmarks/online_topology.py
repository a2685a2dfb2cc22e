"""The online table's topology run: Gavel's 108 GPUs as 4-GPU servers, 10 Gbit/s between them.

    PYTHONPATH=. nice -n 10 python benchmarks/online_topology.py --jobs 600 --measure 150:450

Gavel's multi-GPU trace (``job_table="figures"``, trace seed 0) at a light (1.0 jobs/hour) and a
near-saturation (2.6) rate, on 36 V100 + 36 P100 + 36 K80 as 9 + 9 + 9 servers of 4 GPUs with
1.25e9 B/s between servers (docs/online.md §3.2), ``smp`` against LAS-aware, FTF-aware, Gavel's
max-sum-throughput and the Sia-like programme; the same runs on the flat 36:36:36 cluster beside
them (``--no-flat`` skips those).  Prints one markdown row per (rate, policy): average JCT over
the measured jobs (hours) with nodes and flat, restarts per job, and the decision time per round
(median and p95, milliseconds) with nodes.

``--rack-size R --rack-bandwidth B``: the servers of each type in racks of ``R`` (consecutive
servers of one type), ``B`` bytes/s between the servers of a rack, 10 Gbit/s between racks
(docs/online.md §8.1).
"""

import argparse
import time

import numpy as np

POLICIES = ("smp", "las-aware", "ftf-aware", "gavel-mst", "sia")
NODES = {"v100": [4] * 9, "p100": [4] * 9, "k80": [4] * 9}
FLAT = {"v100": 36, "p100": 36, "k80": 36}
INTER = 1.25e9  # 10 Gbit/s


def main(argv=None):
    from hetplace.online import gavel_trace, simulate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=600)
    ap.add_argument("--measure", default="150:450", help="first:last job ids measured")
    ap.add_argument("--rates", nargs="+", type=float, default=[1.0, 2.6])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-flat", action="store_true")
    ap.add_argument("--rack-size", type=int, default=None, help="servers per rack (one type each)")
    ap.add_argument("--rack-bandwidth", type=float, default=5e9, help="bytes/s between the servers of a rack")
    a = ap.parse_args(argv)
    network = INTER
    if a.rack_size:
        from hetplace.online.nodes import Network

        rack, r = [], 0
        for sizes in NODES.values():  # nodes are numbered type by type
            rack += [r + v // a.rack_size for v in range(len(sizes))]
            r = rack[-1] + 1
        network = Network(INTER, rack=tuple(rack), rack_bandwidth=a.rack_bandwidth)
    first, last = (int(v) for v in a.measure.split(":"))
    print("| jobs/h | policy | avg JCT nodes (h) | avg JCT flat (h) | restarts/job | decision median / p95 (ms) "
          "| wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for rate in a.rates:
        trace = gavel_trace(a.jobs, rate, a.seed, multi_gpu=True, job_table="figures")
        for pol in a.policies:
            t0 = time.perf_counter()
            r = simulate(trace, NODES, pol, network=network, measure=(first, last), progress=False)
            wall = time.perf_counter() - t0
            flat = "-"
            if not a.no_flat:
                flat = f"{simulate(trace, FLAT, pol, measure=(first, last), progress=False).avg_jct / 3600:.2f}"
            dt = np.asarray(r.rounds["decision_time"]) * 1e3
            print(f"| {rate:g} | {pol} | {r.avg_jct / 3600:.2f} | {flat} | {r.restarts_per_job:.2f} | "
                  f"{np.median(dt):.2f} / {np.percentile(dt, 95):.2f} | {wall:.0f} |", flush=True)


if __name__ == "__main__":
    main()
