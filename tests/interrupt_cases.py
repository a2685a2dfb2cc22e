"""Ctrl-C cases: one long call per method and backend, interrupted in its own process.

Used by tests/test_interrupts.py, and run directly to measure the latency
from SIGINT to ``KeyboardInterrupt`` (the table in docs/results.md)::

    python tests/interrupt_cases.py --table --runs 5 [CASE ...]

A case runs in a fresh process (``python tests/interrupt_cases.py CASE``):
a small call of the same method first (imports, JIT caches), then the long
call, with a timer thread sending SIGINT to the process ``delay`` seconds
after the long call started; then the small call again, which must still
work.  It prints one JSON line: ``{"raised": bool, "latency": s, "after": bool,
"threads": [names of threads left]}``.
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

__all__ = ["CASES", "run_case"]


def _gavel(seed, K, S):
    from hetplace.data import gavel_path
    from hetplace.instances import gavel_instance

    return gavel_instance(seed, K, S, gavel_path())


def _speeds(seed, K, S):
    from hetplace.data import gavel_path
    from hetplace.instances import speeds_instance

    return speeds_instance(seed, K, S, gavel_path())


def _exact(problem, **kw):
    from hetplace import solve_exact

    return lambda: solve_exact(problem(), **kw)


def _smp(problem, backend, threads=None):
    import hetplace as hp

    return lambda: hp.place(problem(), method="smp", seed=1, backend=backend, threads=threads)


#: case -> (long call, small call, seconds from the long call's start to SIGINT).  The long calls
#: run for many seconds to minutes uninterrupted.
CASES = {
    "dp": (lambda: _exact(lambda: _gavel(1, 300, 3), method="dp", time_limit=3600),
           lambda: _exact(lambda: _gavel(1, 16, 4), method="dp"), 0.5),
    "brute": (lambda: _exact(lambda: _gavel(1, 8, 7), method="brute"),
              lambda: _exact(lambda: _gavel(1, 6, 3), method="brute"), 0.3),
    "milp-scip": (lambda: _exact(lambda: _speeds(1, 96, 8), method="milp", solver="scip", time_limit=600),
                  lambda: _exact(lambda: _gavel(1, 8, 3), method="milp", solver="scip"), 1.0),
    # 0.2 s: inside SCIP's first in-process slice (the case above: in its child process)
    "milp-scip-slice": (lambda: _exact(lambda: _speeds(1, 96, 8), method="milp", solver="scip", time_limit=600),
                        lambda: _exact(lambda: _gavel(1, 8, 3), method="milp", solver="scip"), 0.2),
    "milp-cp-sat": (lambda: _exact(lambda: _speeds(1, 96, 8), method="milp", solver="cp-sat", time_limit=600),
                    lambda: _exact(lambda: _gavel(1, 8, 3), method="milp", solver="cp-sat"), 1.0),
    # 0.3 s: inside HiGHS's first in-process slice; 2 s: in its child process
    "milp-highs": (lambda: _exact(lambda: _speeds(1, 96, 8), method="milp", solver="highs", time_limit=600),
                   lambda: _exact(lambda: _gavel(1, 8, 3), method="milp", solver="highs"), 0.3),
    "milp-highs-child": (lambda: _exact(lambda: _speeds(1, 96, 8), method="milp", solver="highs", time_limit=600),
                         lambda: _exact(lambda: _gavel(1, 8, 3), method="milp", solver="highs"), 2.0),
    # the small call runs the long call's kernels (class market and polish, speed buckets) on 2
    # threads: Numba's parallel kernels are other compilations than the serial ones a small
    # decision runs, and a kernel being compiled (or loaded from the cache) finishes that before
    # it reads the stop flag (CI, cold cache: 5.2 s)
    "smp-cython": (lambda: _smp(lambda: _speeds(123, 16384, 1024), "cython"),
                   lambda: _smp(lambda: _speeds(123, 1024, 64), "cython", threads=2), 0.5),
    "smp-numba": (lambda: _smp(lambda: _speeds(123, 16384, 1024), "numba"),
                  lambda: _smp(lambda: _speeds(123, 1024, 64), "numba", threads=2), 0.5),
    "smp-python": (lambda: _smp(lambda: _speeds(123, 1024, 64), "python"),
                   lambda: _smp(lambda: _gavel(1, 16, 4), "python"), 0.5),
}


def _child(name):
    """Run case ``name`` in this process; print its JSON line."""
    make_long, make_small, delay = CASES[name]
    small, call = make_small(), make_long()
    before = small()
    sent = {}

    def fire():
        sent["t"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    out = {"raised": False}
    timer = threading.Timer(delay, fire)
    try:
        timer.start()
        call()
    except KeyboardInterrupt:
        out = {"raised": True, "latency": time.perf_counter() - sent["t"]}
    timer.join()
    after = small()
    out["after"] = bool(after.placement.worker_job.tolist() == before.placement.worker_job.tolist()
                        if hasattr(after, "success") else after.worker_job.tolist() == before.worker_job.tolist())
    out["threads"] = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    print(json.dumps(out), flush=True)


def run_case(name, timeout=300):
    """Run case ``name`` in a fresh process; return its JSON answer (dict)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), name], capture_output=True, text=True,
                          timeout=timeout, cwd=root, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"case {name} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _table(names, runs):
    print("| method, backend | median (s) | worst (s) | runs |")
    print("|---|---|---|---|")
    for name in names:
        lat = []
        for _ in range(runs):
            answer = run_case(name)
            if not answer["raised"] or not answer["after"]:
                raise AssertionError(f"{name}: {answer}")
            lat.append(answer["latency"])
        print(f"| {name} | {statistics.median(lat):.3f} | {max(lat):.3f} | {runs} |", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--table":
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
        names = [a for a in args[1:] if a in CASES]
        _table(names or list(CASES), runs)
    else:
        _child(args[0])
