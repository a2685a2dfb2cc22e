"""A fixed reference workload: how fast is this machine against the one behind docs/results.md?

Run (from the repository root)::

    python benchmarks/bench_calibration.py          # or: pytest benchmarks/bench_calibration.py -s
    python benchmarks/bench_calibration.py --per-seed   # K = 64 decisions per instance and backend

Every speed figure in ``docs/results.md`` was measured on one machine (its
description is :data:`REFERENCE_MACHINE`).  This script runs four fixed
workloads that stand for the parts a figure is made of, and prints each one's
CPU and wall time beside the reference machine's:

``python``
    a plain Python loop (the interpreter's speed: argument checks, result objects);
``numpy``
    many numpy calls on arrays of a few dozen elements (numpy's per-call cost, which
    dominates the Python side of a small decision);
``smp-64``
    SMP decisions at K = 64, S = 8 on five Gavel instances, Cython backend, one thread
    (the decision an embedding scheduler makes every round);
``smp-4096``
    one SMP decision at K = 4,096, S = 256, Cython backend, one thread (the compiled
    kernels' throughput).

The ratio ``here / reference`` of ``smp-64`` scales the small-decision figures, that of
``smp-4096`` the large ones.  Each workload is timed ``REPS`` times after a warm-up and
the median is reported; CPU time (``time.process_time``) is the steadier clock on a shared
machine, but on a virtual machine even CPU time moves with the host's load (measured:
the same K = 64 decision took 0.7-2.3 ms of CPU time within a few minutes on the
reference machine while other processes ran), so run it twice and on an idle machine
before you compare.
"""

import os
import platform
import statistics
import sys
import time

import numpy as np

import hetplace as hp
from hetplace.data import gavel_path
from hetplace.instances import gavel_instance

CI = os.environ.get("CI", "") not in ("", "0", "false")
REPS = int(os.environ.get("HETPLACE_CALIBRATION_REPS", "3" if CI else "15"))

#: The machine behind docs/results.md's speed figures (``lscpu``, ``python -V``).
REFERENCE_MACHINE = ("2-core KVM guest, AMD EPYC (family 26), 2.6 GHz, 2 MiB L2 per core; Python 3.11.7, "
                     "numpy 2.4.6, Cython 3.3.1, numba 0.68.1")
#: Median seconds on :data:`REFERENCE_MACHINE`, idle: ``(cpu, wall)`` per workload
#: (``python benchmarks/bench_calibration.py`` there, 2026-12-02).
REFERENCE = {
    "python": (0.04022, 0.04022),
    "numpy": (0.01938, 0.01938),
    "smp-64": (0.00472, 0.00472),
    "smp-4096": (0.05619, 0.05641),
}


def _python_loop():
    total = 0
    for i in range(1_000_000):
        total += (i * i) % 7
    return total


def _numpy_calls(a=np.arange(64, dtype=np.float64), j=np.arange(64) % 8):
    total = 0.0
    for _ in range(5_000):
        x = np.bincount(j, weights=a, minlength=8)
        total += float(np.sum(a[j >= 0] / (x[j] + 1.0)))
    return total


def workloads():
    """The four workloads, each a callable that takes no argument.

    Returns
    -------
    dict of str to callable
        Name -> workload; the instances are built here, outside the timed calls.
    """
    table = gavel_path()
    small = [gavel_instance(seed, 64, 8, table) for seed in (123, 1, 2, 3, 4)]
    large = gavel_instance(123, 4096, 256, table)

    def smp_small():
        for p in small:
            hp.place(p, method="smp", seed=1, backend="cython", threads=1)

    def smp_large():
        hp.place(large, method="smp", seed=1, backend="cython", threads=1)

    return {"python": _python_loop, "numpy": _numpy_calls, "smp-64": smp_small, "smp-4096": smp_large}


def measure(reps=REPS):
    """Median CPU and wall seconds of every workload.

    Parameters
    ----------
    reps : int
        Timed runs per workload, after one warm-up run.

    Returns
    -------
    dict of str to (float, float)
        Name -> ``(cpu, wall)`` medians in seconds.
    """
    out = {}
    for name, work in workloads().items():
        work()  # warm-up: caches, first-call costs
        cpu, wall = [], []
        for _ in range(reps):
            c, w = time.process_time(), time.perf_counter()
            work()
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
        out[name] = (statistics.median(cpu), statistics.median(wall))
    return out


def report(results):
    """The table printed by the script: each workload here, on the reference machine, and the ratio."""
    lines = [f"this machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, numpy {np.__version__}",
             f"reference:    {REFERENCE_MACHINE}",
             f"{'workload':<10} {'CPU here':>10} {'wall here':>10} {'CPU ref':>10} {'ratio (CPU)':>12}"]
    for name, (cpu, wall) in results.items():
        ref = REFERENCE[name][0]
        ratio = f"{cpu / ref:.2f}x" if ref else "-"
        ref_text = f"{1e3 * ref:.2f} ms" if ref else "-"
        lines.append(f"{name:<10} {1e3 * cpu:>7.2f} ms {1e3 * wall:>7.2f} ms {ref_text:>10} {ratio:>12}")
    return "\n".join(lines)


def test_calibration(capsys):
    """Run the workloads once (a smoke test in CI); the table is printed with ``-s``."""
    results = measure()
    assert all(cpu > 0 and wall > 0 for cpu, wall in results.values())
    with capsys.disabled():
        print("\n" + report(results))


def per_seed(reps=30):
    """Median CPU and wall ms of one K = 64, S = 8 decision per Gavel seed and backend (one thread).

    Returns
    -------
    list of str
        One line per backend: ``seed: cpu / wall`` for seeds 123, 1, 2, 3, 4.
    """
    table, lines = gavel_path(), []
    problems = {seed: gavel_instance(seed, 64, 8, table) for seed in (123, 1, 2, 3, 4)}
    for backend in ("cython", "numba"):
        cells = []
        for seed, p in problems.items():
            hp.place(p, method="smp", seed=1, backend=backend, threads=1)  # warm-up
            cpu, wall = [], []
            for _ in range(reps):
                c, w = time.process_time(), time.perf_counter()
                hp.place(p, method="smp", seed=1, backend=backend, threads=1)
                cpu.append(time.process_time() - c)
                wall.append(time.perf_counter() - w)
            cells.append(f"{seed}: {1e3 * statistics.median(cpu):.2f} / {1e3 * statistics.median(wall):.2f} ms")
        lines.append(f"{backend:<7} " + ", ".join(cells))
    return lines


if __name__ == "__main__":
    if "--per-seed" in sys.argv[1:]:
        sys.exit(print("K = 64, S = 8, one thread, CPU / wall per decision\n" + "\n".join(per_seed())))
    sys.exit(print(report(measure())))
