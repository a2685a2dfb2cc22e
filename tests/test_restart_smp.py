"""Re-placement with a restart cost (docs/model.md §1.4, §3.8): the model, SMP's keep-aware search.

* ``Problem(current=, restart_time=)`` validation and derived attributes;
* ``Placement.restarted`` against a direct comparison of worker sets, and
  ``mean_jct`` with the losses;
* the restart-aware polish kernels: backends agree bit for bit (with exact
  ties), the result is a local optimum of the penalised objective, and
  ``keep_rows`` changes no JCT while keeping every job it can;
* SMP against an independent dynamic programme (written here) on seeded
  "one job arrives" and "one job leaves" re-placements.
"""

import itertools

import numpy as np
import pytest

import hetplace as hp
from hetplace._core._registry import BACKENDS, kernels, unavailable
from hetplace.data import load_gavel
from hetplace.errors import InvalidProblemError, InvalidProblemTypeError
from hetplace.instances import replacement_instance
from hetplace.smp import worker_classes

from methods import rows_for, run

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]

TABLE = load_gavel()
JOB_FIELDS = ("throughput", "batch", "iterations", "grad_bytes")


def _subset(problem, jobs, **extra):
    d = problem.to_dict()
    d.pop("job_names")
    for k in JOB_FIELDS:
        d[k] = np.asarray(d[k])[jobs].tolist()
    d.update(extra)
    return hp.Problem(**d)


def replacement(seed, K, S, kind="arrival", speeds=False, current="exact"):
    """S jobs run, then one arrives or job 0 leaves (restart times 1 % to 30 % of the running JCTs)."""
    return replacement_instance(seed, K, S, TABLE, family="speeds" if speeds else "gavel", event=kind,
                                current=current)


def independent_dp(problem):
    """Smallest mean of JCT + restart loss over type-count matrices (uniform speeds), by plain enumeration."""
    G, m = problem.n_types, problem.available_counts
    options = list(itertools.product(*[range(c + 1) for c in m]))
    held = np.zeros((problem.n_jobs, G), dtype=int)
    for k in np.flatnonzero(problem.current >= 0):
        held[problem.current[k], problem.worker_type[k]] += 1
    best = {(0,) * G: 0.0}
    for i in range(problem.n_jobs):
        nxt = {}
        for state, value in best.items():
            for y in options:
                n = sum(y)
                if n == 0 or any(y[g] and problem.throughput[i, g] <= 0 for g in range(G)):
                    continue
                to = tuple(a + b for a, b in zip(state, y))
                if any(a > c for a, c in zip(to, m)) or not np.isfinite(problem.size_cost[i, n]):
                    continue
                cost = problem.work[i] / sum(y[g] * problem.throughput[i, g] for g in range(G))
                cost += problem.size_cost[i, n]
                if problem.running[i] and not (problem.can_keep[i] and tuple(held[i]) == y):
                    cost += problem.restart_cost[i]
                if value + cost < nxt.get(to, np.inf):
                    nxt[to] = value + cost
        best = nxt
    return min(best.values()) / problem.n_jobs


# ------------------------------------------------------------------ the model
def test_current_and_restart_time_attributes():
    p = hp.Problem([[1, 2], [2, 1], [1, 1]], [2, 2], [8, 8, 8], [10, 10, 10],
                   current=[0, 0, 1, -1], restart_time=[5, 7, 3])
    assert p.replacing
    assert p.running.tolist() == [True, True, False]
    assert p.restart_cost.tolist() == [5.0, 7.0, 0.0]  # a new job never pays
    assert p.can_keep.tolist() == [True, True, False]
    back = hp.Problem.from_dict(p.to_dict())
    assert back.current.tolist() == p.current.tolist() and back.restart_time.tolist() == p.restart_time.tolist()


def test_a_down_current_worker_or_a_bound_stops_a_keep():
    p = hp.Problem([[1, 2], [2, 1]], [2, 2], [8, 8], [10, 10], current=[0, 0, 1, 1], restart_time=1,
                   available=[True, False, True, True], max_workers=[2, 1])
    assert p.can_keep.tolist() == [False, False]  # job 0 lost worker 1, job 1 holds more than max_workers


@pytest.mark.parametrize("current, match", [
    ([0, 0, 2, -1], "current\\[2\\] = 2"),
    ([0, 0.5, 1, -1], "current\\[1\\]"),
    ([0, 0, 1], "shape"),
    ([0, -2, 1, 1], "current\\[1\\] = -2"),
])
def test_bad_current_is_a_clear_error(current, match):
    with pytest.raises(InvalidProblemError, match=match):
        hp.Problem([[1, 2], [2, 1]], [2, 2], [8, 8], [10, 10], current=current)


def test_current_on_a_type_the_job_cannot_use_is_rejected():
    with pytest.raises(InvalidProblemError, match="cannot run on worker 2"):
        hp.Problem([[1, 0], [2, 1]], [2, 2], [8, 8], [10, 10], current=[0, 1, 0, 1])


def test_current_as_text_is_rejected():
    with pytest.raises(InvalidProblemTypeError, match="current"):
        hp.Problem([[1, 2]], [2, 2], [8], [10], current="0011")


@pytest.mark.parametrize("rt", [-1.0, float("nan"), float("inf"), [1.0, 2.0, 3.0]])
def test_bad_restart_time_is_a_clear_error(rt):
    with pytest.raises(InvalidProblemError, match="restart_time"):
        hp.Problem([[1, 2], [2, 1]], [2, 2], [8, 8], [10, 10], current=[0, 0, 1, 1], restart_time=rt)


def test_restart_time_without_current_is_rejected():
    with pytest.raises(InvalidProblemError, match="current"):
        hp.Problem([[1, 2], [2, 1]], [2, 2], [8, 8], [10, 10], restart_time=5.0)


@pytest.mark.parametrize("seed", range(6))
def test_restarted_is_a_direct_set_comparison(seed):
    p = replacement(seed, 10, 3, current="random")
    rng = np.random.default_rng(seed)
    for _ in range(20):
        pl = hp.place(p, method="random", seed=int(rng.integers(1 << 30)))
        for i in range(p.n_jobs):
            now, before = set(np.flatnonzero(pl.worker_job == i)), set(np.flatnonzero(p.current == i))
            assert pl.restarted[i] == (bool(before) and now != before)
        base = p.work / pl.aggregate_throughput + p.comm_time[np.arange(p.n_jobs), pl.sizes]
        assert pl.mean_jct == pytest.approx(float(np.mean(base + p.restart_cost * pl.restarted)), rel=1e-12)
        assert pl.n_restarts == int(pl.restarted.sum())


def test_keeping_everyone_costs_nothing():
    p = replacement(3, 12, 4, kind="departure")
    pl = hp.evaluate(p, np.where(p.current >= 0, p.current, -1))
    assert not pl.restarted.any() and pl.restart_loss.sum() == 0.0
    assert "kept" in pl.format_table()


# ------------------------------------------------------------------ kernels
def _worker_objective(p, wj):
    try:
        return hp.evaluate(p, wj).mean_jct * p.n_jobs
    except hp.errors.InvalidPlacementError:
        return np.inf


@pytest.mark.parametrize("seed", range(4))
def test_worker_polish_with_restarts_ends_in_a_local_optimum_and_backends_agree(seed):
    p = replacement(seed, 9, 3, speeds=True, current="random")
    start = hp.place(p, method="random", seed=seed).worker_job
    outs = []
    for b in AVAILABLE:
        out_wj = start[None, :].copy()
        out_total, out_stats = np.zeros(1), np.zeros((1, 3), dtype=np.int64)
        kernels(b).polish_rows(p.worker_throughput, p.work, p.size_cost, p.worker_type, p.worker_speed, False,
                               np.array([0]), 100_000, out_wj, out_total, out_stats, 1,
                               (p.restart_cost, p.current, None))
        outs.append((out_wj[0].tobytes(), out_total[0]))
    assert len(set(outs)) == 1
    wj = np.frombuffer(outs[0][0], dtype=np.int64).copy()
    value = _worker_objective(p, wj)
    assert outs[0][1] == pytest.approx(value, rel=1e-12)
    K, S = p.n_workers, p.n_jobs
    for k in range(K):  # no move and no swap lowers the penalised objective by more than the kernel's margin
        for b in range(-1, S):
            t = wj.copy()
            t[k] = b
            assert _worker_objective(p, t) >= value * (1 - 1e-9)
        for l in range(k + 1, K):
            t = wj.copy()
            t[k], t[l] = wj[l], wj[k]
            assert _worker_objective(p, t) >= value * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_class_polish_with_restarts_agrees_across_backends_on_ties(seed):
    rng = np.random.default_rng(seed)
    S, G = 4, 3
    rho = rng.integers(1, 4, (S, G)).astype(float)  # small integers: exact ties everywhere
    counts = [3, 3, 2]
    p0 = hp.Problem(rho, counts, [16] * S, rng.integers(1, 3, S) * 10.0)
    cur = hp.place(hp.Problem(rho[:3], counts, [16] * 3, p0.iterations[:3]), method="random", seed=seed).worker_job
    p = hp.Problem(rho, counts, [16] * S, p0.iterations, current=cur, restart_time=rng.integers(0, 3, S) * 5.0)
    rhoC, mc, class_of, members, cls_start = worker_classes(p)
    curC = np.zeros((S, mc.size), dtype=np.int64)
    np.add.at(curC, (cur[cur >= 0], class_of[cur >= 0]), 1)
    starts = np.array([hp.place(p, method="random", seed=s).worker_job for s in range(5)])
    outs = []
    for b in AVAILABLE:
        out_wj = starts.copy()
        out_total, out_stats = np.zeros(5), np.zeros((5, 3), dtype=np.int64)
        kernels(b).polish_rows_classes(rhoC, p.work, p.size_cost, mc, class_of, members, cls_start, np.arange(5),
                                       100_000, out_wj, out_total, out_stats, 1, (p.restart_cost, p.current, curC))
        outs.append((out_wj.tobytes(), out_total.tobytes()))
        for s in range(5):  # totals are the true penalised objective of the expanded rows
            assert out_total[s] == pytest.approx(_worker_objective(p, out_wj[s]), rel=1e-12)
    assert len(set(outs)) == 1


@pytest.mark.parametrize("seed", range(4))
def test_keep_rows_keeps_every_job_it_can_and_changes_no_jct(seed):
    p = replacement(seed, 12, 4, kind="departure", current="random")
    _, mc, class_of, members, cls_start = worker_classes(p)
    curC = np.zeros((p.n_jobs, mc.size), dtype=np.int64)
    busy = p.current >= 0
    np.add.at(curC, (p.current[busy], class_of[busy]), 1)
    rows = np.array([hp.place(p, method=m, seed=seed).worker_job for m in ("random", "greedy", "equal")]
                    + [p.current])  # the last row: everyone where they run now
    before = [hp.evaluate(p, r) for r in rows]
    for b in AVAILABLE:
        out = rows.copy()
        loss = kernels(b).keep_rows(class_of, members, cls_start, p.current, p.restart_cost, curC, out, 1)
        for s, r in enumerate(out):
            after = hp.evaluate(p, r)
            assert np.array_equal(after.sizes, before[s].sizes)
            assert np.allclose(after.aggregate_throughput, before[s].aggregate_throughput, rtol=1e-13, atol=0)
            cnt = np.zeros_like(curC)
            np.add.at(cnt, (r[r >= 0], class_of[r >= 0]), 1)
            assert after.restarted.tolist() == (p.running & (cnt != curC).any(axis=1)).tolist()
            assert loss[s] == pytest.approx(after.restart_loss.sum(), abs=1e-12)
        assert not hp.evaluate(p, out[-1]).restarted.any()


# ------------------------------------------------------------------ SMP
@pytest.mark.parametrize("kind", ["arrival", "departure"])
def test_smp_near_an_independent_dp(kind):
    gaps = []
    for seed in range(12):
        K, S = [8, 10, 12, 14][seed % 4], [2, 3, 4][seed % 3]
        p = replacement(seed, K, S, kind=kind)
        exact = independent_dp(p)
        pl = hp.place(p, method="smp", seed=seed)
        assert pl.mean_jct >= exact * (1 - 1e-9)
        gaps.append(pl.mean_jct / exact - 1)
    assert np.mean(gaps) <= 0.005 and np.max(gaps) <= 0.0204


@pytest.mark.parametrize("seed", range(5))
def test_smp_replacement_backends_agree(seed):
    p = replacement(seed, 16, 4, speeds=seed % 2 == 1, current="random")
    outs = {b: hp.place(p, method="smp", seed=seed, backend=b) for b in AVAILABLE}
    ref = outs[AVAILABLE[0]]
    for b, pl in outs.items():
        assert np.array_equal(pl.worker_job, ref.worker_job), b
        assert pl.mean_jct == ref.mean_jct


def test_smp_keeps_everyone_when_restarts_are_dear():
    p = replacement(7, 16, 4, kind="departure")
    p = _subset(p, list(range(p.n_jobs)), current=p.current.tolist(), restart_time=[1e9] * p.n_jobs)
    pl = hp.place(p, method="smp", seed=0)
    assert not pl.restarted.any()


def test_smp_without_restart_cost_matches_a_from_scratch_placement():
    p = replacement(5, 16, 4, current="random")
    free = _subset(p, list(range(p.n_jobs)), current=p.current.tolist(), restart_time=[0.0] * p.n_jobs)
    scratch = _subset(p, list(range(p.n_jobs)))
    a, b = hp.place(free, method="smp", seed=1), hp.place(scratch, method="smp", seed=1)
    assert a.mean_jct <= b.mean_jct * (1 + 1e-12)  # the keep candidates only add options


@pytest.mark.parametrize("event", ["arrival", "departure"])
def test_smp_near_brute_force_with_per_worker_speeds(event):
    gaps = []
    for seed in range(12):
        K, S = [6, 7][seed % 2], [2, 3][seed % 2] + (event == "departure")
        p = replacement(seed, K, S, kind=event, speeds=True, current="random")
        exact = hp.solve_exact(p, method="brute")
        pl = hp.place(p, method="smp", seed=seed)
        assert pl.mean_jct >= exact.objective * (1 - 1e-9)
        gaps.append(pl.mean_jct / exact.objective - 1)
    assert np.mean(gaps) <= 0.005 and np.max(gaps) <= 0.0204


@pytest.mark.parametrize("event", ["arrival", "departure"])
def test_speed_buckets_leave_kept_jobs_alone_even_when_a_bucket_is_all_kept(event):
    # regression: _sort_buckets indexed an empty bucket (IndexError) once kept jobs' workers were left out
    p = replacement_instance(5, 1024, 64, TABLE, family="speeds", event=event)
    pl = hp.place(p, method="smp", seed=0)
    assert pl.info["speed_buckets"] == 3  # the approximate bucket path ran
    kept = p.running & ~pl.restarted
    assert kept.sum() >= p.running.sum() - 8
    for i in np.flatnonzero(kept):
        assert np.array_equal(np.flatnonzero(pl.worker_job == i), np.flatnonzero(p.current == i))
    assert pl.mean_jct <= hp.place(p, method="keep-greedy").mean_jct * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_replacement_with_down_workers_and_bounds_every_method_agrees_with_brute_force(seed):
    """Re-placement combined with workers that went down and size bounds (rigid jobs too)."""
    rng = np.random.default_rng(seed)
    base = replacement(seed, 7, 2 + seed % 2, speeds=seed % 2 == 0, current="random")
    d = base.to_dict()
    down = rng.choice(base.n_workers, size=1 + seed % 2, replace=False)
    avail = np.ones(base.n_workers, dtype=bool)
    avail[down] = False
    d["available"] = avail.tolist()
    S = base.n_jobs
    lo = np.ones(S, dtype=int)
    hi = np.full(S, base.n_workers)
    lo[0] = hi[0] = 2 if seed % 3 == 0 else 1  # a rigid job in some seeds
    hi[-1] = 3
    d["min_workers"], d["max_workers"] = lo.tolist(), hi.tolist()
    try:
        p = hp.Problem(**d)
    except hp.errors.InvalidProblemError:
        pytest.skip("the draw left too few workers for the bounds")
    opt = hp.solve_exact(p, method="brute")
    assert opt.status == "optimal"
    for m in rows_for(p):  # every row of tests/methods.py
        pl = run(m, p, seed=seed)
        assert not (pl.worker_job[~p.available] >= 0).any()
        assert np.all((pl.sizes >= p.min_workers) & (pl.sizes <= p.max_workers))
        assert pl.mean_jct >= opt.objective * (1 - 1e-9)
        lost = p.running & (np.bincount(p.current[(p.current >= 0) & ~p.available], minlength=S) > 0)
        assert pl.restarted[lost].all()  # a job that lost a worker restarts whatever the method
        if m.exact:
            assert pl.mean_jct == pytest.approx(opt.objective, rel=m.rel), m.name
        if m.method == "smp":
            assert pl.mean_jct <= opt.objective * 1.0204, m.name
