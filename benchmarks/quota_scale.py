"""SMP under tenant quotas at scale against the lower bound (docs/model.md §3.14, "At scale").

Gavel instance seed 3 (``hetplace.instances.gavel_instance``), a random tenant per job, each
tenant capped at 80 % of an equal share of the fastest type; SMP with and without the quotas,
the quota-aware greedy, and ``lower_bound`` of the quota problem (SMP's certified gap).
Run from the repository root::

    PYTHONPATH=. python benchmarks/quota_scale.py
"""

import time

import numpy as np

import hetplace as hp
from hetplace.data import gavel_path
from hetplace.instances import gavel_instance


def quota_problem(K, S, T, seed=3):
    """The Gavel instance with T tenants, each capped at 80 % of an equal share of the fastest type."""
    p = gavel_instance(seed, K, S, gavel_path())
    tenant = np.random.default_rng(1).integers(0, T, S)
    quota = np.full((T, p.n_types), np.inf)
    quota[:, -1] = np.floor(p.type_counts[-1] / T * 0.8)
    q = hp.Problem(p.throughput, p.type_counts, p.batch, p.iterations, p.grad_bytes, p.bandwidth,
                   tenant=tenant, quota=quota)
    return p, q


def main():
    hp.place(gavel_instance(8, 64, 8, gavel_path()), method="smp", seed=0)  # warm the kernels up
    for K, S, T in ((1024, 64, 4), (4096, 256, 4), (4096, 256, 32)):
        free, q = quota_problem(K, S, T)
        t = time.perf_counter()
        pl = hp.place(q, method="smp", seed=0)
        a = time.perf_counter() - t
        t = time.perf_counter()
        hp.place(free, method="smp", seed=0)
        b = time.perf_counter() - t
        g = hp.place(q, method="greedy")
        lb = hp.lower_bound(q, time_limit=60)
        print(f"K = {K}, S = {S}, {T} tenants: SMP {a:.2f} s (without quotas {b:.3f} s), "
              f"{pl.gap_to_bound(lb):.3%} above the bound; greedy {g.gap_to_bound(lb):.3%}")


if __name__ == "__main__":
    main()
