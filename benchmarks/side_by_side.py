"""SMP decision time of two source trees side by side (e.g. a branch against the commit before it).

Run::

    python benchmarks/side_by_side.py /path/to/before /path/to/after \\
        --cases gavel:64:8:cython,gavel:1024:64:numba,gavel:16384:1024:cython --reps 7

Each tree gets one long-lived process (cwd and ``PYTHONPATH`` = the tree, so
its own hetplace and compiled kernels are imported) that times
``place(method="smp", seed=1, threads=1)`` on a seeded instance
(``family:K:S:backend[:seed]``, family ``gavel``, ``speeds`` or ``topology`` of
:mod:`hetplace.instances`, instance seed 123 unless given, built outside the timer).  After one warm-up call
per tree (JIT / cache load), the two processes are asked in turn, the order
flipping every repetition, so both see the same machine load.  Reported:
medians and the after/before ratio, of CPU time (``--clock cpu``, default:
steadier on a shared machine) or wall time, whether the placements agree, and
whether the after tree's problem has a job whose batch allows fewer workers than
the cluster has (``Problem.max_workers`` below K): such a job is a different
problem for trees from before the batch bound, whose categories then do other
work (docs/results.md §2.3).
"""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time


def serve(clock):
    """Answer ``family K S backend seed`` lines with ``seconds placement-digest bound`` (the worker process)."""
    import hetplace as hp
    from hetplace.data import load_gavel
    from hetplace.instances import gavel_instance, speeds_instance

    timer = time.process_time if clock == "cpu" else time.perf_counter
    # the table of the tree that runs this script: trees older than the shipped table
    # (before hetplace.data.gavel_path) read the same file
    table, problems = load_gavel(os.environ["SIDE_BY_SIDE_TABLE"]), {}
    print("ready", hp.__file__, flush=True)
    for line in sys.stdin:
        family, K, S, backend, seed = line.split()
        key = (family, int(K), int(S), int(seed))
        if key not in problems:
            if family == "topology":  # nodes and racks (trees from the topology issue on)
                from hetplace.instances import topology_instance as make
            else:
                make = {"gavel": gavel_instance, "speeds": speeds_instance}[family]
            problems[key] = make(key[3], key[1], key[2], table)
        t = timer()
        placement = hp.place(problems[key], method="smp", seed=1, backend=backend, threads=1)
        elapsed = timer() - t
        bound = getattr(problems[key], "max_workers", None)  # None in trees before the batch bound
        bound = "-" if bound is None else int((bound < key[1]).any())
        print(elapsed, hashlib.sha1(placement.worker_job.tobytes()).hexdigest(), bound, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="two source trees: before, after")
    parser.add_argument("--cases", default="gavel:64:8:cython,gavel:64:8:numba,gavel:1024:64:cython,"
                        "gavel:1024:64:numba,gavel:16384:1024:cython,gavel:16384:1024:numba")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.clock)
    if len(args.trees) != 2:
        parser.error("give two source trees")
    from hetplace.data import gavel_path

    procs = {}
    for tree in args.trees:
        tree = os.path.abspath(tree)
        procs[tree] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve", "--clock", args.clock], cwd=tree,
            env={**os.environ, "PYTHONPATH": tree, "SIDE_BY_SIDE_TABLE": str(gavel_path())}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print(tree, procs[tree].stdout.readline().strip(), flush=True)
    trees = list(procs)

    def ask(tree, case):
        procs[tree].stdin.write(" ".join(case) + "\n")
        procs[tree].stdin.flush()
        seconds, digest, bound = procs[tree].stdout.readline().split()
        return float(seconds), digest, bound

    for case in (tuple((c + ":123").split(":")[:5]) for c in args.cases.split(",")):
        for tree in trees:
            ask(tree, case)  # warm-up
        times, digests = {t: [] for t in trees}, {t: set() for t in trees}
        for r in range(args.reps):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                seconds, digest, bound = ask(tree, case)
                times[tree].append(seconds)
                digests[tree].add(digest)
        before, after = (statistics.median(times[t]) for t in trees)
        same = len(digests[trees[0]] | digests[trees[1]]) == 1
        print(f"{':'.join(case):24s} before {before * 1e3:9.2f} ms  after {after * 1e3:9.2f} ms  "
              f"ratio {after / before:.3f}  ({args.clock}, median of {args.reps})  same placement: {same}  "
              f"batch bound binds: {dict(zip('01-', ('no', 'yes', '?')))[bound]}", flush=True)
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    main()
