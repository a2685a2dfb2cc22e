"""The seeded random-instance generators of the test suite (never global RNG): one module.

Every test builds its instances here (or through :mod:`hetplace.instances`, the
library's own generators), so a family is defined once and the same seed gives
the same instance in every test that uses it (the expected values of the tests
depend on that).  Slow, obviously correct references are in ``tests/reference.py``.

- :func:`tiny_random`: small random problems (K <= 7) for brute-force checks,
  with/without communication and per-worker speeds.
- :func:`idle_optimal`: small problems where communication makes leaving a slow
  worker idle optimal.
- :func:`gavel_problem`: type-homogeneous problems (speeds 1) from the Gavel
  throughput table shipped with hetplace (:func:`hetplace.data.gavel_path`, docs/model.md §7.1).
- :func:`random_problem`: SMP's differential family (K up to 16, G up to 4, some
  zero throughputs, speeds and communication drawn).
- :func:`with_bounds` / :func:`bounded_instances`: the same with random size bounds.
- :func:`with_down` / :func:`down_instances`: the same with some workers down.
- :func:`with_weights`: the same problem with seeded job weights (``Problem(weight=)``).
- :func:`arrival`, :func:`departure`, :func:`plain`, :func:`gavel_arrival`:
  re-placement problems (``current``, ``restart_time``) where one job arrives or
  leaves, built on :func:`tiny_random` and :func:`gavel_problem`.
"""
import functools
import math

import numpy as np
import pytest

from hetplace import Problem, evaluate, solve_exact
from hetplace.baselines import random_placement
from hetplace.data import DEFAULT_GRAD_BYTES, gavel_path
from hetplace.data import load_gavel as load_gavel_table
from hetplace.errors import InvalidProblemError

__all__ = [
    "tiny_random",
    "idle_optimal",
    "gavel_path",
    "load_gavel",
    "gavel_problem",
    "random_problem",
    "with_bounds",
    "bounded_instances",
    "with_down",
    "down_instances",
    "with_weights",
    "arrival",
    "departure",
    "plain",
    "gavel_arrival",
    "seeds",
    "GAVEL_TYPES",
    "GRAD_BYTES",
    "BANDWIDTH",
]

GAVEL_TYPES = ("k80", "p100", "v100")
#: plausible gradient sizes per model family (bytes; from parameter counts)
GRAD_BYTES = DEFAULT_GRAD_BYTES
#: ~10 Gbit/s per worker link
BANDWIDTH = 1.25e9


def seeds(total, fast, start=0):
    """Seeds ``start .. start+total-1`` for ``parametrize``: the first ``fast`` in the default run.

    The rest are marked ``slow`` (``python -m pytest -m slow`` runs them), so the
    fast run keeps a seeded sample of a differential campaign and the slow run
    its full range, with the same instance for the same seed in both.
    """
    return [s if s < start + fast else pytest.param(s, marks=pytest.mark.slow)
            for s in range(start, start + total)]


def _split(rng, total, parts, minimum=1):
    """Random composition of ``total`` into ``parts`` integers >= ``minimum``."""
    cuts = np.sort(rng.choice(np.arange(1, total - parts * (minimum - 1)), parts - 1, replace=False))
    sizes = np.diff(np.concatenate(([0], cuts, [total - parts * (minimum - 1)])))
    return sizes + (minimum - 1)


def tiny_random(seed, n_workers=None, n_jobs=None, n_types=None, comm=None, speeds=None, zeros=True):
    """A small random problem (K <= 7 by default).

    Parameters
    ----------
    seed : int
    n_workers, n_jobs, n_types : int, optional
        Default: K in 2..7, S in 1..min(K, 5), G in 1..min(K, 3), drawn from ``seed``.
    comm : bool, optional
        Communication on (finite bandwidth, comparable to compute) or off.
        Default: drawn from ``seed``.
    speeds : bool, optional
        Per-worker speeds in (0, 1] (half the time from a small discrete set,
        so some workers share a speed).  Default: drawn from ``seed``.
    zeros : bool, default True
        Sometimes give a job throughput 0 on a type (kept only when the problem
        stays feasible).

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng([seed, 101])
    K = int(n_workers if n_workers is not None else rng.integers(2, 8))
    S = int(n_jobs if n_jobs is not None else rng.integers(1, min(K, 5) + 1))
    G = int(n_types if n_types is not None else rng.integers(1, min(K, 3) + 1))
    comm = bool(rng.random() < 0.5) if comm is None else bool(comm)
    speeds = bool(rng.random() < 0.5) if speeds is None else bool(speeds)
    counts = _split(rng, K, G)
    rho = rng.uniform(1.0, 10.0, (S, G))
    batch = rng.integers(8, 257, S)
    iters = rng.integers(100, 2001, S).astype(float)
    speed = None
    if speeds:
        if rng.random() < 0.5:
            speed = rng.choice([0.25, 0.5, 0.75, 1.0], K)
        else:
            speed = rng.uniform(0.1, 1.0, K)
    grad, bw = None, math.inf
    if comm:
        bw = 1e9
        # per-iteration all-reduce time comparable to one worker's compute time
        grad = rng.uniform(0.05, 1.5, S) * batch / rho.mean(axis=1) * bw
    base = Problem(rho, counts, batch, iters, grad, bw, speed)
    if zeros and G > 1 and rng.random() < 0.5:
        rho2 = rho.copy()
        for i in range(S):
            if rng.random() < 0.4:
                rho2[i, rng.integers(G)] = 0.0
        try:
            return Problem(rho2, counts, batch, iters, grad, bw, speed)
        except InvalidProblemError:
            pass
    return base


def tiny_topology(seed, n_workers=None, n_jobs=None, racks=None, speeds=None, bounds=False, restarts=False,
                  weights=False):
    """A small random problem with a network topology: 2-3 nodes, 1-2 racks (docs/model.md §1.6).

    Nodes hold one type each (mostly) or two; the links inside a node are
    10-40x faster than between nodes, a rack's links between the two; the
    all-reduce of a job spread over nodes is comparable to its compute.

    Parameters
    ----------
    seed : int
    n_workers, n_jobs : int, optional
        Default: K in 3..7, S in 1..min(K, 3).
    racks : bool, optional
        Give a rack level (two racks when there are 3 nodes). Default: drawn.
    speeds, bounds, restarts, weights : bool
        Per-worker speeds; random ``min_workers``/``max_workers``; a running
        placement with restart times; job weights.

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng([seed, 707])
    K = int(n_workers if n_workers is not None else rng.integers(3, 8))
    S = int(n_jobs if n_jobs is not None else rng.integers(1, min(K, 3) + 1))
    racks = bool(rng.random() < 0.5) if racks is None else bool(racks)
    n_nodes = int(rng.integers(2, min(3, K) + 1))
    sizes = _split(rng, K, n_nodes)
    G = int(rng.integers(1, min(n_nodes, 2) + 1))
    node_type = np.sort(rng.integers(0, G, n_nodes)) if G > 1 else np.zeros(n_nodes, dtype=int)
    node_type[-1] = G - 1
    node_type[0] = 0
    # workers are listed type by type: nodes of type 0 first
    order = np.argsort(node_type, kind="stable")
    node = np.concatenate([np.full(sizes[v], v) for v in order])
    counts = np.bincount(node_type, weights=sizes, minlength=G).astype(int)
    rho = rng.uniform(1.0, 10.0, (S, G))
    batch = rng.integers(8, 257, S)
    iters = rng.integers(100, 2001, S).astype(float)
    bw = 1e9
    grad = rng.uniform(0.05, 1.5, S) * batch / rho.mean(axis=1) * bw
    kw = {"node": node, "node_bandwidth": rng.uniform(10, 40, n_nodes) * bw}
    if racks:
        kw["rack"] = (np.arange(n_nodes) >= 2).astype(int) if n_nodes == 3 else np.zeros(n_nodes, dtype=int)
        kw["rack_bandwidth"] = rng.uniform(2, 8) * bw
    speed = rng.choice([0.5, 1.0], K) if speeds else None
    if bounds:
        lo = rng.integers(1, 3, S)
        kw["min_workers"] = np.minimum(lo, max(1, K // max(S, 1)))
        kw["max_workers"] = kw["min_workers"] + rng.integers(0, 3, S)
    if weights:
        kw["weight"] = rng.uniform(0.2, 3.0, S)
    if restarts:
        cur = np.full(K, -1)
        perm = rng.permutation(K)
        for t, k in enumerate(perm[: min(K, 2 * S)]):
            if rng.random() < 0.7:
                cur[k] = t % S
        kw["current"] = cur
        kw["restart_time"] = rng.uniform(0.0, 0.3, S) * iters * batch / rho.mean(axis=1)
    try:
        return Problem(rho, counts, batch, iters, grad, bw, speed, **kw)
    except InvalidProblemError:  # bounds or a running placement that cannot fit: drop them
        for key in ("min_workers", "max_workers", "current", "restart_time"):
            kw.pop(key, None)
        return Problem(rho, counts, batch, iters, grad, bw, speed, **kw)


def idle_optimal(seed, n_workers=None):
    """A small problem where communication makes idle workers worthwhile.

    A few fast workers and several slow ones; every job's per-iteration
    all-reduce time is 20-100 % of its compute time on one fast worker, so a
    slow worker (3-12 % of a fast one) saves less than it costs.

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng([seed, 202])
    K = int(n_workers if n_workers is not None else rng.integers(4, 8))
    S = int(rng.integers(1, 3))
    n_fast = int(rng.integers(S, min(K - 1, S + 2) + 1))
    counts = np.array([n_fast, K - n_fast])
    fast = rng.uniform(5.0, 10.0, S)
    rho = np.column_stack([fast, fast * rng.uniform(0.03, 0.12, S)])
    batch = rng.integers(16, 257, S)
    iters = rng.integers(100, 2001, S).astype(float)
    bw = 1e9
    grad = rng.uniform(0.2, 1.0, S) * batch / fast * bw
    speed = None
    if rng.random() < 0.5:
        speed = rng.uniform(0.5, 1.0, K)
    return Problem(rho, counts, batch, iters, grad, bw, speed)


# ------------------------------------------------------------------ Gavel
@functools.lru_cache(maxsize=4)
def load_gavel(path=None):
    """Single-GPU throughputs from the Gavel table (default: the one shipped with hetplace).

    Returns
    -------
    models : tuple of str
        The 26 model/batch configurations, sorted.
    samples_per_s : ndarray of float64, shape (26, 3)
        Samples/s on one k80, p100, v100 GPU (steps/s alone x per-GPU batch).
    per_gpu_batch : ndarray of int64, shape (26,)
        Batch size in the model string (A3C and CycleGAN: 1).
    """
    table = load_gavel_table(path)
    models = tuple(table.models)
    per_gpu = np.array([table.per_gpu_batch(m) for m in models], dtype=np.int64)
    rates = np.array([[table.samples_per_second(m, t) for t in GAVEL_TYPES] for m in models])
    return models, rates, per_gpu


def _family(model):
    return model.split(" (")[0]


def gavel_problem(seed, n_workers, n_jobs, comm=True, zero_prob=0.15, type_counts=None, path=None):
    """A type-homogeneous problem (speeds 1) built from the Gavel table.

    Parameters
    ----------
    seed : int
    n_workers, n_jobs : int
        K (split over k80/p100/v100, each type at least one worker when K >= 3)
        and S.
    comm : bool, default True
        Ring all-reduce over 10 Gbit/s links (1.25e9 B/s); gradient sizes from
        :data:`GRAD_BYTES`.  False: bandwidth ``inf``.
    zero_prob : float, default 0.15
        Probability that a job cannot run on one (random) GPU type -- a model
        that does not fit it -- kept only when the problem stays feasible.
    type_counts : sequence of 3 int, optional
        Fix the cluster instead of drawing it.

    Returns
    -------
    Problem
        Global batch = per-GPU batch x a multiplier in 1..8; iterations
        log-uniform in [1e3, 1e5].
    """
    models, rates, per_gpu = load_gavel(path)
    rng = np.random.default_rng([seed, 303, n_workers, n_jobs])
    K, S = int(n_workers), int(n_jobs)
    if type_counts is None:
        counts = _split(rng, K, 3) if K >= 3 else np.array([0] * (3 - K) + [1] * K)
    else:
        counts = np.asarray(type_counts, dtype=np.int64)
    pick = rng.integers(len(models), size=S)
    rho = rates[pick].copy()
    batch = per_gpu[pick] * rng.integers(1, 9, S)
    iters = np.round(10.0 ** rng.uniform(3.0, 5.0, S))
    grad = np.array([GRAD_BYTES[_family(models[j])] for j in pick])
    bw = BANDWIDTH if comm else math.inf
    names = [f"{models[j]}#{i}" for i, j in enumerate(pick)]
    drop = rng.random(S) < zero_prob
    drop_type = rng.integers(3, size=S)
    args = dict(grad_bytes=grad, bandwidth=bw, job_names=names, type_names=GAVEL_TYPES)
    if drop.any():
        rho2 = rho.copy()
        rho2[drop, drop_type[drop]] = 0.0
        try:
            return Problem(rho2, counts, batch, iters, **args)
        except InvalidProblemError:
            pass
    return Problem(rho, counts, batch, iters, **args)


# ------------------------------------------------------------------ random_problem
def random_problem(seed, K_max=16, S_max=5):
    """A random problem of up to ``K_max`` workers and ``S_max`` jobs (SMP's differential family).

    G in 1..4 types; 20 % of throughputs 0; per-worker speeds 30 % of the time;
    finite bandwidth 70 % of the time.  Drawn from ``default_rng(seed)``.

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, S_max + 1))
    K = int(rng.integers(max(S, 2), K_max + 1))
    G = int(rng.integers(1, 5))
    counts = rng.multinomial(K, np.ones(G) / G)
    rho = rng.uniform(1, 100, (S, G)) * (rng.random((S, G)) > 0.2)
    speeds = rng.uniform(0.3, 1.0, K) if rng.random() < 0.3 else None
    bw = 1e8 if rng.random() < 0.7 else np.inf
    for _ in range(20):
        try:
            return Problem(rho, counts, rng.integers(1, 512, S), rng.uniform(10, 1000, S),
                              grad_bytes=rng.uniform(0, 5e7, S), bandwidth=bw, worker_speed=speeds)
        except InvalidProblemError:
            rho = np.where(rho == 0, 1.0, rho)
    raise AssertionError("no feasible instance")


# ------------------------------------------------------------------ size bounds
def with_bounds(problem, rng, tight=False, rigid=0.3, tries=50):
    """``problem`` with random size bounds drawn from ``rng`` (None when no draw is feasible).

    ``tight``: the minima sum to K.  ``rigid``: the share of jobs with
    ``min_workers == max_workers``.
    """
    S, K = problem.n_jobs, problem.n_workers
    cap = np.minimum(problem.batch, K).astype(np.int64)
    for _ in range(tries):
        spare = K - S if tight else int(rng.integers(0, K - S + 1))
        lo = np.minimum(1 + rng.multinomial(spare, np.ones(S) / S), cap)
        hi = np.array([rng.integers(a, b + 1) for a, b in zip(lo, cap)])
        fixed = rng.random(S) < rigid
        hi[fixed] = lo[fixed]
        data = problem.to_dict()
        data.update(min_workers=lo.tolist(), max_workers=hi.tolist())
        try:
            return Problem.from_dict(data)
        except InvalidProblemError:
            continue
    return None


def bounded_instances(count, seed0, K_max=10, S_max=4):
    """``count`` problems of :func:`random_problem` (seeds from ``seed0``) with bounds of :func:`with_bounds`."""
    rng = np.random.default_rng(seed0)
    out, seed = [], seed0
    while len(out) < count:
        p = with_bounds(random_problem(seed, K_max=K_max, S_max=S_max), rng, tight=len(out) % 3 == 0)
        seed += 1
        if p is not None:
            out.append(p)
    return out


# ------------------------------------------------------------------ down workers
def with_down(problem, seed, frac=0.3):
    """``problem`` with a seeded random set of its workers down (None when no such set is valid)."""
    rng = np.random.default_rng([seed, 1010])
    data = problem.to_dict()
    for _ in range(20):
        mask = rng.random(problem.n_workers) >= frac
        if mask.all():
            mask[rng.integers(problem.n_workers)] = False
        try:
            return Problem.from_dict({**data, "available": mask.tolist()})
        except InvalidProblemError:
            continue
    return None


def down_instances(make, seeds, frac=0.3):
    """``(seed, with_down(make(seed), seed, frac))`` for each seed where that exists."""
    out = []
    for seed in seeds:
        p = with_down(make(seed), seed, frac)
        if p is not None:
            out.append((seed, p))
    return out


# ------------------------------------------------------------------ job weights
def with_weights(problem, seed, spread=10.0):
    """``problem`` with seeded job weights, log-uniform in ``[1/spread, spread]`` (docs/model.md §1.5)."""
    rng = np.random.default_rng([seed, 2424])
    w = np.exp(rng.uniform(-math.log(spread), math.log(spread), problem.n_jobs))
    return Problem.from_dict({**problem.to_dict(), "weight": w.tolist()})


# ------------------------------------------------------------------ re-placement (current, restart_time)
_PER_JOB = ("throughput", "batch", "iterations", "grad_bytes", "job_names", "min_workers", "max_workers",
            "restart_time")


def _jobs_subset(data, jobs):
    """``Problem.to_dict()`` data restricted to ``jobs`` (per-job lists only)."""
    out = dict(data)
    for key in _PER_JOB:
        if isinstance(out.get(key), list):
            out[key] = [out[key][i] for i in jobs]
    return out


def _base(seed, speeds, bounds, large=False):
    """A tiny problem (K 3..6, S 2..4; ``large``: K 7..8, S 3..5), with random size bounds when ``bounds``."""
    rng = np.random.default_rng([seed, 5151, speeds])
    K = int(rng.integers(7, 9) if large else rng.integers(3, 7))
    S = int(rng.integers(3, 6) if large else rng.integers(2, min(K, 4) + 1))
    p = tiny_random(seed, n_workers=K, n_jobs=S, comm=seed % 2 == 0, speeds=speeds)
    if bounds:
        data = p.to_dict()
        for _ in range(10):
            lo = rng.integers(1, 3, S)
            hi = lo + rng.integers(0, 3, S)
            try:
                return Problem.from_dict({**data, "min_workers": lo.tolist(), "max_workers": hi.tolist()})
            except InvalidProblemError:
                continue
    return p


def _running_placement(problem, rng, optimal):
    """An optimal (brute force) or a random feasible placement of ``problem``."""
    if optimal:
        return solve_exact(problem, method="brute").placement.worker_job
    return np.asarray(random_placement(problem, rng), dtype=np.int64)


def _with_down(data, rng, current):
    """``data`` with one or two workers down (a current one half the time), or None."""
    K = len(current)
    for _ in range(20):
        down = rng.choice(K, size=int(rng.integers(1, 3)), replace=False)
        if rng.random() < 0.5 and (current >= 0).any():
            down[0] = rng.choice(np.flatnonzero(current >= 0))
        avail = np.ones(K, dtype=bool)
        avail[down] = False
        try:
            return Problem.from_dict({**data, "available": avail.tolist()})
        except InvalidProblemError:
            continue
    return None


@functools.lru_cache(maxsize=None)
def arrival(seed, speeds, large=False):
    """One job arrives while the others run (seeded; see the module docstring)."""
    rng = np.random.default_rng([seed, 6161, speeds])
    base = _base(seed, speeds, bounds=seed % 4 == 1, large=large)
    data, S = base.to_dict(), base.n_jobs
    new = int(rng.integers(S))
    others = [j for j in range(S) if j != new]
    sub = Problem.from_dict(_jobs_subset(data, others))
    wj = _running_placement(sub, rng, optimal=seed % 2 == 0)
    current = np.full(base.n_workers, -1, dtype=np.int64)
    current[wj >= 0] = np.asarray(others)[wj[wj >= 0]]
    restart = np.zeros(S)
    restart[others] = rng.uniform(0.01, 0.30, S - 1) * evaluate(sub, wj).jct
    data = {**data, "current": current.tolist(), "restart_time": restart.tolist()}
    if seed % 3 == 0:
        down = _with_down(data, rng, current)
        if down is not None:
            return down
    return Problem.from_dict(data)


@functools.lru_cache(maxsize=None)
def departure(seed, speeds):
    """One running job has left: its workers are idle in ``current``."""
    rng = np.random.default_rng([seed, 7171, speeds])
    base = _base(seed, speeds, bounds=seed % 4 == 1)
    data, S = base.to_dict(), base.n_jobs
    wj = _running_placement(base, rng, optimal=seed % 2 == 0)
    restart = rng.uniform(0.01, 0.30, S) * evaluate(base, wj).jct
    gone = int(rng.integers(S))
    stay = [j for j in range(S) if j != gone]
    renumber = np.full(S + 1, -1, dtype=np.int64)  # index S + 1 - 1 = -1 stays -1
    renumber[stay] = np.arange(S - 1)
    current = renumber[wj]
    data = {**data, "restart_time": restart.tolist()}
    return Problem.from_dict({**_jobs_subset(data, stay), "current": current.tolist()})


@functools.lru_cache(maxsize=None)
def plain(seed):
    """No job running: half with per-worker speeds, some with down workers and bounds."""
    rng = np.random.default_rng([seed, 8181])
    p = _base(seed, speeds=seed % 2 == 1, bounds=seed % 4 == 1)
    if seed % 3 == 0:
        down = _with_down(p.to_dict(), rng, np.full(p.n_workers, -1))
        if down is not None:
            return down
    return p


@functools.lru_cache(maxsize=None)
def gavel_arrival(seed, K, S):
    """A Gavel problem (speeds 1) where job 0 arrives and the others run on the DP optimum without it."""
    rng = np.random.default_rng([seed, 9292, K, S])
    data = gavel_problem(seed, K, S).to_dict()
    sub = Problem.from_dict(_jobs_subset(data, list(range(1, S))))
    wj = solve_exact(sub, method="dp").placement.worker_job
    current = np.where(wj >= 0, wj + 1, -1)
    restart = np.zeros(S)
    restart[1:] = rng.uniform(0.01, 0.30, S - 1) * evaluate(sub, wj).jct
    return Problem.from_dict({**data, "current": current.tolist(), "restart_time": restart.tolist()})


def ray_trace(seed=0, n_jobs=20, horizon=1500.0, types=("k80", "p100", "v100")):
    """Jobs arriving over ``horizon`` model seconds for a Ray cluster (tests/test_ray.py, benchmarks/bench_ray.py).

    Per job a k80 throughput in [20, 60] samples/s, a p100 1.8-2.5x and a v100 3-4x that; batch 32, 64
    or 128; 600-1,500 s alone on one worker of its fastest type; restart_time 30 s, at most 4 workers.
    The first job arrives at 0.  Returns the keyword arguments of ``RayScheduler.submit`` (with ``job_id``).
    """
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0.0, horizon, n_jobs))
    arrivals[0] = 0.0
    jobs = []
    for i in range(n_jobs):
        k80 = float(rng.uniform(20, 60))
        batch = int(rng.choice([32, 64, 128]))
        speed = {"k80": 1.0, "p100": float(rng.uniform(1.8, 2.5)), "v100": float(rng.uniform(3.0, 4.0))}
        thr = {t: k80 * speed[t] for t in types}
        alone = batch / max(thr.values())  # seconds per iteration on one worker of the fastest type
        jobs.append(dict(job_id=f"j{i:02d}", throughput=thr, batch=batch,
                         iterations=int(rng.uniform(600.0, 1500.0) / alone), grad_bytes=float(rng.choice([2e7, 1e8])),
                         restart_time=30.0, max_workers=4, arrival=float(arrivals[i])))
    return jobs
