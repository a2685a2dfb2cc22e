"""The class polish's three ways of finding a step, timed against each other (LEAF_MIN_JOBS).

Run::

    python benchmarks/polish_modes.py

For S jobs on K = 16 S workers (six seeded Gavel instances each, Cython, one
thread, CPU time), the class polish of the equal placement's counts with
``trees="leaves"`` (the trees' leaves kept up to date and scanned) against
``trees=False`` (a scan computing every entry); both take the same steps.
Prints the time ratio leaves / scan: below 1 the leaves pay
(``hetplace._core._polish.LEAF_MIN_JOBS``, docs/results.md §4).
"""

import time

import numpy as np

import hetplace as hp
from hetplace._core._registry import kernels
from hetplace.data import gavel_path, load_gavel
from hetplace.instances import gavel_instance
from hetplace.smp import worker_classes


def main():
    table = load_gavel(gavel_path())
    k = kernels("cython")
    for S in (8, 12, 16, 24, 32, 48, 64):
        spent = {False: 0.0, "leaves": 0.0}
        for seed in range(6):
            p = gavel_instance(123 + seed, 16 * S, S, table)
            rhoC, mc, class_of, members, cls_start = worker_classes(p)
            wj = hp.place(p, method="equal").worker_job
            start = np.zeros((S, mc.size), dtype=np.int64)
            np.add.at(start, (wj[wj >= 0], class_of[wj >= 0]), 1)
            steps = {}
            for trees in (False, "leaves", False, "leaves"):
                t = time.process_time()
                for _ in range(20):
                    cnt = start.copy()
                    steps[trees] = k.polish_classes(rhoC, p.work, p.size_cost, mc, cnt, 1_000_000, None, trees)
                spent[trees] += time.process_time() - t
            assert steps[False] == steps["leaves"]
        print(f"S = {S:3d}, C = {mc.size}: leaves / scan = {spent['leaves'] / spent[False]:.2f}")


if __name__ == "__main__":
    main()
