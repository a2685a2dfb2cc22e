"""Re-placement after one arrival and after one departure: restarts and objective, three ways.

Run (from the repository root)::

    pytest benchmarks/bench_replace.py -s                 # K = 64 and K = 4,096, table printed
    HETPLACE_REPLACE_SEEDS=10 pytest benchmarks/bench_replace.py -s

Instances: :func:`hetplace.instances.replacement_instance` (Gavel family; the
running placement is SMP's, or the exact one where that is fast; restart times
1 % to 30 % of each running job's JCT).  For each, three placements are
compared on the same re-placement problem (objective = mean of JCT plus
restart losses, docs/model.md §1.4):

* ``smp``: ``place(method="smp")`` on the problem with ``current`` (keep-aware);
* ``scratch``: SMP on the same jobs without ``current`` (what a scheduler
  that ignores the running placement does), charged its restarts;
* ``keep-greedy``: every running job keeps its workers, the new job is placed
  greedily (``place(method="keep-greedy")``).

Printed per case: objective relative to ``smp``, restarts, decision time.
Checked: ``smp`` is never worse than ``keep-greedy`` (it is one of its
candidates) and, over the seeds, not worse than ``scratch`` on average.
pytest-benchmark times the ``smp`` re-placement decision.
"""

import os
import time

import numpy as np
import pytest

import hetplace as hp
from hetplace.instances import replacement_instance

CI = os.environ.get("CI", "") not in ("", "0", "false")
SEEDS = int(os.environ.get("HETPLACE_REPLACE_SEEDS", "1" if CI else "3"))
CASES = [(64, 8), (4096, 256)]


def _scratch(problem):
    d = problem.to_dict()
    d.pop("current")
    d.pop("restart_time")
    return hp.Problem(**d)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


@pytest.mark.parametrize("event", ["arrival", "departure"])
@pytest.mark.parametrize("K, S", CASES, ids=[f"K{k}-S{s}" for k, s in CASES])
def test_replacement(benchmark, K, S, event):
    rows = []
    for seed in range(SEEDS):
        p = replacement_instance(seed, K, S, event=event, current="auto" if K <= 64 else "smp")
        hp.place(p, method="smp", seed=seed)  # warm-up (JIT cache, first-call costs)
        smp, t_smp = _timed(lambda: hp.place(p, method="smp", seed=seed))
        scratch_pl, t_scr = _timed(lambda: hp.place(_scratch(p), method="smp", seed=seed))
        scratch = hp.evaluate(p, scratch_pl.worker_job)  # the same workers, charged their restarts
        keep, t_keep = _timed(lambda: hp.place(p, method="keep-greedy"))
        assert smp.mean_jct <= keep.mean_jct * (1 + 1e-12)
        rows.append((seed, smp, scratch, keep, t_smp, t_scr, t_keep, int(p.running.sum())))
    print(f"\nre-placement after one {event}, K = {K}, S = {S} running (+ the event)")
    print(f"{'seed':>4} {'running':>7} | {'smp obj':>12} {'restarts':>8} {'ms':>8} | "
          f"{'scratch/smp':>11} {'restarts':>8} {'ms':>8} | {'keep/smp':>8} {'restarts':>8} {'ms':>7}")
    for seed, a, b, c, ta, tb, tc, run in rows:
        print(f"{seed:>4} {run:>7} | {a.mean_jct:>12.1f} {a.n_restarts:>8} {1e3 * ta:>8.2f} | "
              f"{b.mean_jct / a.mean_jct:>11.4f} {b.n_restarts:>8} {1e3 * tb:>8.2f} | "
              f"{c.mean_jct / a.mean_jct:>8.4f} {c.n_restarts:>8} {1e3 * tc:>7.2f}")
    ratio = np.mean([b.mean_jct / a.mean_jct for _, a, b, *_ in rows])
    assert ratio >= 1 - 1e-3, "keep-aware SMP did worse than ignoring the running placement"
    p = replacement_instance(0, K, S, event=event, current="auto" if K <= 64 else "smp")
    benchmark.pedantic(lambda: hp.place(p, method="smp", seed=0), rounds=3 if K > 64 else 20, warmup_rounds=1)
