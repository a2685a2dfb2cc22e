"""Compile the Numba kernels into their on-disk cache, in a process of its own (test-suite helper).

The first run of the suite on a fresh checkout compiles every Numba kernel it
reaches (about two minutes of CPU on the project's 2-core machine), one after
the other in the test process.  ``tests/conftest.py`` starts this script in
the background when the cache is cold, so the compilation runs on the second
core while the first runs the tests that need no Numba kernel (the suite is
single-threaded); a test that reaches a kernel the script has cached loads it
instead of compiling it.  Numba writes its cache files atomically, so the two
processes never see half a file.  It only warms a cache: its results are not
checked, and a failure here shows up in the tests themselves.
"""

import warnings


def main():
    warnings.simplefilter("ignore")
    import hetplace as hp
    from hetplace.data import gavel_path
    from hetplace.instances import gavel_instance, replacement_instance, speeds_instance

    table = gavel_path()
    problems = [gavel_instance(1, 24, 4, table), speeds_instance(2, 16, 3, table),
                replacement_instance(3, 24, 3, table)]
    for p in problems:
        for threads in (1, 2):
            for matching in ("price", "ordinal"):
                hp.place(p, method="smp", backend="numba", threads=threads, matching=matching, seed=0)
    hp.place(problems[0], method="smp", backend="numba", sampling="weighted", seed=0)
    hp.solve_exact(problems[0], method="dp")
    for method in ("uniform", "weighted"):
        hp.sample_categories(24, 4, 8, seed=0, method=method, backend="numba")
    hp.enumerate_categories(8, 3, backend="numba")


if __name__ == "__main__":
    main()
