"""hetplace.Session (docs/session.md): events, a decision against hp.place, the time budget.

Run (from the repository root)::

    pytest benchmarks/bench_session.py -s -p no:cacheprovider

* ``test_events``: 10,000 submits and 10,000 finishes at K = 4,096 without deciding
  (the issue's target: under 0.2 s in all);
* ``test_decide_side_by_side``: ``s.decide(apply=False)`` against ``hp.place`` of the same
  ``Problem`` (a fresh copy per run, unpickled outside the timer, so both start with cold
  caches), interleaved, at K = 64, S = 8 and K = 4,096, S = 256, from scratch and in a
  steady state (a decision applied, then every job's progress reported: a re-placement);
  the ratio of medians (target: at most 1.10);
* ``test_budget``: at K = 16,384, S = 1,024, a steady state with ten finishes and ten
  submits, then ``decide`` with ``budget_s=0.02`` (target: under 0.04 s idle).

Instances: Gavel instances (``hetplace.instances.gavel_instance``) submitted job by job.
Timings depend on the machine's load: run it idle, and beside a busy machine
(``for i in 1 2 3; do python -c "while 1: pass" & done``) for the second half of the figure.
"""

import os
import pickle
import time

import numpy as np

import hetplace as hp
from hetplace.data import gavel_path
from hetplace.instances import gavel_instance

CI = os.environ.get("CI", "") not in ("", "0", "false")


def session_of(seed, K, S, **kw):
    """A Session holding the jobs of a Gavel instance (each job's types are those with a positive rate)."""
    p = gavel_instance(seed, K, S, gavel_path())
    s = hp.Session(dict(zip(p.type_names, p.type_counts.tolist())), bandwidth=p.bandwidth, **kw)
    for i in range(S):
        s.submit(i, throughput={t: float(r) for t, r in zip(p.type_names, p.throughput[i]) if r > 0},
                 batch=int(p.batch[i]), iterations=float(p.iterations[i]), grad_bytes=float(p.grad_bytes[i]),
                 restart_time=60.0)
    return s


def test_events():
    s = hp.Session({"k80": 1024, "p100": 1024, "v100": 2048}, bandwidth=1.25e9)
    thr = {"k80": 40.0, "p100": 100.0, "v100": 250.0}
    runs = []
    for r in range(5):
        t = time.perf_counter()
        for i in range(10_000):
            s.submit(i, throughput=thr, batch=256, iterations=1000.0, grad_bytes=1e8)
        for i in range(10_000):
            s.finish(i)
        runs.append(time.perf_counter() - t)
    print(f"\n10,000 submits + 10,000 finishes at K = 4,096: median {np.median(runs):.3f} s, "
          f"min {min(runs):.3f} s, max {max(runs):.3f} s")


def _side_by_side(s, reps):
    p = s.problem()
    blob = pickle.dumps(p)
    hp.place(pickle.loads(blob), method="smp", seed=s.seed)  # warm-up (JIT, caches of the kernels)
    s.decide(apply=False)
    a, b = [], []
    for r in range(reps):
        q = pickle.loads(blob)
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):  # alternate which runs first
            t = time.perf_counter()
            if which == 0:
                d = s.decide(apply=False)
                a.append(time.perf_counter() - t)
            else:
                pl = hp.place(q, method="smp", seed=s.seed)
                b.append(time.perf_counter() - t)
        np.testing.assert_array_equal(d.placement.worker_job, pl.worker_job)
    return np.median(a), np.median(b)


def test_decide_side_by_side():
    print()
    for K, S, reps in ((64, 8, 21 if CI else 401), (4096, 256, 3 if CI else 41)):
        for state in ("scratch", "steady"):
            s = session_of(123, K, S)
            if state == "steady":
                s.decide()
                for j in s.jobs:
                    s.progress(j, 0.5 * s.problem().iterations[0] + 1.0 + j)
            a, b = _side_by_side(s, reps)
            print(f"K = {K:5d}, S = {S:3d}, {state:7s}: decide {1e3 * a:8.3f} ms, place {1e3 * b:8.3f} ms, "
                  f"ratio {a / b:.3f}")


def test_budget():
    K, S = 16_384, 1_024
    s = session_of(7, K, S)
    s.decide()  # the steady state: every job placed
    full, budget = [], []
    for r in range(2 if CI else 5):
        for j in list(s.jobs)[:10]:
            s.finish(j)
        for i in range(10):
            s.submit(f"new{r}-{i}", throughput={"k80": 30.0, "p100": 80.0, "v100": 200.0}, batch=128,
                     iterations=5000.0, grad_bytes=1e8)
        t = time.perf_counter()
        d0 = s.decide(apply=False)
        full.append(time.perf_counter() - t)
        s.budget_s = 0.02
        t = time.perf_counter()
        d = s.decide()
        budget.append(time.perf_counter() - t)
        s.budget_s = None
        assert hp.is_feasible(d.problem, d.placement.worker_job)
        print(f"\nK = {K}, S = {S}: full decision {full[-1]:.3f} s (mean JCT {d0.mean_jct:.1f}); budget 0.02 s: "
              f"{budget[-1]:.4f} s, status {d.status}, mean JCT {d.mean_jct:.1f} "
              f"({d.mean_jct / d0.mean_jct - 1:+.3%})")
    print(f"budget 0.02 s: median {np.median(budget):.4f} s, max {max(budget):.4f} s")
