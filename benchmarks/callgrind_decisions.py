"""SMP decisions to count with callgrind: instructions are deterministic where the clock is not.

Run (per tree, from its root; N = 0 gives the run to subtract)::

    valgrind --tool=callgrind --callgrind-out-file=out.N python benchmarks/callgrind_decisions.py K S N

It builds ``INSTANCES`` seeded Gavel instances (:func:`hetplace.instances.gavel_instance`,
seeds 123, 124, ...), makes one warm-up decision on each, then ``N`` rounds of one decision on
each (``place(method="smp", seed=1, backend=..., threads=1)``).  The instructions of
``N * INSTANCES`` decisions are the ``Collected`` count of run N less that of run 0;
``callgrind_annotate --inclusive=no`` on both splits them by function (docs/results.md §0.2).
The table is the tree's own (:func:`hetplace.data.gavel_path`), or the file named by
``SIDE_BY_SIDE_TABLE`` for trees older than it.
"""

import os
import sys

import hetplace as hp
from hetplace.data import load_gavel
from hetplace.instances import gavel_instance

INSTANCES = 10


def main():
    K, S, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    backend = sys.argv[4] if len(sys.argv) > 4 else "cython"
    path = os.environ.get("SIDE_BY_SIDE_TABLE")
    if path is None:
        from hetplace.data import gavel_path

        path = gavel_path()
    table = load_gavel(path)
    problems = [gavel_instance(123 + s, K, S, table) for s in range(INSTANCES)]
    for p in problems:
        hp.place(p, method="smp", seed=1, backend=backend, threads=1)
    for _ in range(n):
        for p in problems:
            hp.place(p, method="smp", seed=1, backend=backend, threads=1)


if __name__ == "__main__":
    main()
