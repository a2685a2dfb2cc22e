"""SMP under tenant quotas against the exact optimum (docs/model.md §3.14).

Seeded tiny instances whose quotas bind (two tenants limited on the fast type, a
tenant with none of a type, jobs of no tenant, min_workers), the optimum by brute
force over every assignment (``(S + 1) ** K`` rows, K <= 8), SMP's gap to it and
its time.  Run from the repository root::

    PYTHONPATH=. python benchmarks/quota_gap.py 0 200            # seeds 0..199, default SMP
    PYTHONPATH=. python benchmarks/quota_gap.py 0 200 --backend numba --topology
    PYTHONPATH=. python benchmarks/quota_gap.py 100 140 --milp gavel   # K = 12-24, the MILP's optimum

Prints one line per instance above 0.01 % and the summary: instances, how many
the quotas changed (the unconstrained optimum breaks a quota), mean / worst gap,
SMP's median time with the quotas and without them (the same instance, tenants
dropped).
"""

import argparse
import itertools
import time

import numpy as np

import hetplace as hp
from hetplace._cost import price
from hetplace._quota import quota_usage
from hetplace.errors import InvalidProblemError


def quota_instance(seed, topology=False, replacing=False):
    """A seeded tiny problem with binding quotas (retries until it validates), or its arguments' dict."""
    rng = np.random.default_rng([seed, 8107])
    while True:
        G = int(rng.integers(2, 4))
        K = int(rng.integers(4, 8))
        S = int(rng.integers(2, 4))
        counts = rng.multinomial(K - G, np.ones(G) / G) + 1
        base = np.sort(rng.uniform(20, 400, G))  # type G - 1 is the fast one
        thr = np.round(base[None, :] * rng.uniform(0.6, 1.4, (S, G)), 1)
        thr[rng.random((S, G)) < 0.15] = 0.0
        thr[np.arange(S), rng.integers(0, G, S)] = np.round(base[rng.integers(0, G, S)], 1)  # never a job of no type
        args = dict(
            throughput=thr.tolist(), type_counts=counts.tolist(),
            batch=rng.choice([8, 32, 128, 256], S).tolist(),
            iterations=rng.integers(1_000, 30_000, S).tolist(),
            grad_bytes=(rng.uniform(0, 4e8, S) * (rng.random(S) < 0.7)).tolist(), bandwidth=1.25e9,
        )
        T = 2
        tenant = rng.integers(-1, T, S)
        tenant[: min(S, 2)] = [0, 1][: min(S, 2)]
        quota = np.full((T, G), np.inf)
        for t in range(T):
            for g in range(G):
                u = rng.random()
                if g == G - 1 or u < 0.4:  # the fast type is always limited
                    quota[t, g] = int(rng.integers(0, counts[g] + 1)) if u < 0.85 else 0
        args.update(tenant=tenant.tolist(), quota=quota.tolist())
        if rng.random() < 0.3:
            args["min_workers"] = rng.integers(1, 3, S).tolist()
        if rng.random() < 0.2:
            args["weight"] = rng.uniform(0.5, 3.0, S).tolist()
        if rng.random() < 0.2:
            args["worker_speed"] = rng.choice([0.5, 0.8, 1.0], K).tolist()
        if topology:
            args["node"] = (np.arange(K) // 2).tolist()
            args["node_bandwidth"] = 40e9
        if replacing:
            cur = rng.integers(-1, S - 1, K)
            args["current"] = cur.tolist()
            args["restart_time"] = rng.uniform(0, 2_000, S).tolist()
        try:
            problem = hp.Problem(**args)
        except InvalidProblemError:
            continue
        if problem.has_quota:
            return problem


def quota_gavel(seed, family="gavel"):
    """A seeded Gavel-family problem (K in 12-24, S in 3-7) with two tenants limited on the fast type."""
    from hetplace.instances import load_gavel, make_instance

    rng = np.random.default_rng(seed)
    K = int(rng.choice([16, 24] if family == "topology" else [12, 16, 24]))
    S = int(rng.integers(3, 8))
    rng = np.random.default_rng([seed, 99])
    while True:
        base = make_instance(family, seed, K, S, load_gavel())
        d = base.to_dict()
        G, counts = base.n_types, base.type_counts
        tenant = rng.integers(-1, 2, S)
        tenant[:2] = [0, 1]
        quota = np.full((2, G), np.inf)
        for t in range(2):
            for g in range(G):
                u = rng.random()
                if g == G - 1 or u < 0.4:
                    quota[t, g] = int(rng.integers(0, counts[g] + 1)) if u < 0.85 else 0
        d.update(tenant=tenant.tolist(), quota=quota.tolist())
        try:
            problem = hp.Problem.from_dict(d)
        except InvalidProblemError:
            seed += 1000
            continue
        if problem.has_quota:
            return problem


def all_rows(S, K):
    """(S + 1) ** K rows: every assignment of K workers to S jobs or idle."""
    return np.array(list(itertools.product(range(-1, S), repeat=K)), dtype=np.int64)


def brute_optimum(problem, rows=None):
    """(objective, worker_job) of the best quota-feasible assignment; also without the quotas.

    Objectives are in the problem's own units (weighted mean JCT), from ``price``
    on the unweighted twin times ``objective_scale``; the winner is checked by
    ``hp.is_feasible`` and ``hp.evaluate``.
    """
    S, K = problem.n_jobs, problem.n_workers
    rows = all_rows(S, K) if rows is None else rows
    target = problem.objective_problem
    busy = rows >= 0
    rate = np.where(busy, target.throughput[np.maximum(rows, 0), target.worker_type[None, :]], 1.0)
    ok = (rate > 0).all(axis=1) & ((rows < 0) | problem.available[None, :]).all(axis=1)
    total = np.where(ok, price(target, rows).total, np.inf)
    used = np.stack([quota_usage(problem.tenant, problem.n_tenants, r, problem.worker_type, problem.n_types)
                     for r in rows]) if len(rows) <= 4096 else None
    if used is None:
        t = np.append(problem.tenant, -1)[rows]  # tenant of each worker's job (-1: none or idle)
        used = np.zeros((len(rows), problem.n_tenants, problem.n_types), dtype=np.int64)
        for tt in range(problem.n_tenants):
            for g in range(problem.n_types):
                used[:, tt, g] = ((t == tt) & (problem.worker_type[None, :] == g)).sum(axis=1)
    fits = (used <= problem.quota[None]).all(axis=(1, 2))
    free_best = int(np.argmin(total))
    q_total = np.where(fits, total, np.inf)
    best = int(np.argmin(q_total))
    wj = rows[best]
    assert hp.is_feasible(problem, wj)
    obj = hp.evaluate(problem, wj).mean_jct
    free_ok = bool(fits[free_best])
    return obj, wj, free_ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("start", type=int)
    ap.add_argument("stop", type=int)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--topology", action="store_true", help="workers in 2-GPU nodes")
    ap.add_argument("--replacing", action="store_true", help="a running placement with restart times")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--milp", metavar="FAMILY", default=None,
                    help="Gavel-family instances (gavel, speeds, topology; K = 12-24) against the quota-aware "
                         "MILP's proven optimum instead of brute force on tiny ones")
    args = ap.parse_args()
    opts = {"backend": args.backend}
    if args.samples:
        opts["samples"] = args.samples
    hp.place(quota_instance(0), method="smp", seed=0, **opts)  # warm the JIT up
    gaps, t_q, t_free, changed = [], [], [], 0
    for seed in range(args.start, args.stop):
        if args.milp:
            problem = quota_gavel(seed, args.milp)
            res = hp.solve_exact(problem, method="milp", time_limit=60)
            if res.status != "optimal":
                print(f"seed {seed}: the MILP stopped ({res.status}); skipped")
                continue
            opt = res.objective
            free = hp.Problem.from_dict({k: v for k, v in problem.to_dict().items() if k not in ("tenant", "quota")})
            free_opt = hp.solve_exact(free, method="milp", time_limit=60).placement
            changed += not hp.is_feasible(problem, free_opt.worker_job)
        else:
            problem = quota_instance(seed, args.topology, args.replacing)
            opt, _, free_ok = brute_optimum(problem)
            changed += not free_ok
        t0 = time.perf_counter()
        pl = hp.place(problem, method="smp", seed=seed, **opts)
        t_q.append(time.perf_counter() - t0)
        assert hp.is_feasible(problem, pl.worker_job), seed
        free = hp.Problem.from_dict({k: v for k, v in problem.to_dict().items() if k not in ("tenant", "quota")})
        t0 = time.perf_counter()
        hp.place(free, method="smp", seed=seed, **opts)
        t_free.append(time.perf_counter() - t0)
        gap = pl.mean_jct / opt - 1
        gaps.append(gap)
        if gap > 1e-4:
            print(f"seed {seed}: K={problem.n_workers} S={problem.n_jobs} gap {gap:.4%}")
    gaps = np.array(gaps)
    print(f"{len(gaps)} instances ({changed} whose quotas change the optimum): mean gap {gaps.mean():.4%}, "
          f"worst {gaps.max():.4%} ; SMP median time {np.median(t_q) * 1e3:.2f} ms with quotas, "
          f"{np.median(t_free) * 1e3:.2f} ms without")


if __name__ == "__main__":
    main()
