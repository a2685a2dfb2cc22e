"""Benchmarks of the file readers (hetplace.io): job CSV and cluster TOML of growing size.

Run (from the repository root)::

    pytest benchmarks/bench_io.py --benchmark-only --benchmark-group-by=group
    pytest benchmarks/bench_io.py --benchmark-only -k "jobs and 50000"   # the 50,000-job file

Timed: ``read_jobs`` of a job file with S rows and one ``throughput_<type>``
column per GPU type (S in 1,000 / 10,000 / 50,000 / 100,000: the reader must
stay linear in S; the duplicate-name check was O(S^2) and took 32 s at
100,000 rows), and ``read_cluster`` of a cluster with K workers and a speed per
worker (K up to the 1,000,000-worker limit).  The files are written once per
size outside the timed call, and every timed result is checked after timing.
With ``--benchmark-disable`` (the CI smoke run) each case runs once, plus its check.
"""

import numpy as np
import pytest

from hetplace.io import read_cluster, read_jobs

TYPES = ("k80", "p100", "v100")
JOB_ROWS = [1_000, 10_000, 50_000, 100_000]
CLUSTER_WORKERS = [1_000, 100_000, 1_000_000]


def write_job_file(path, S, seed=0):
    """A seeded job CSV of ``S`` rows (names, three throughputs, batch, iterations, grad_bytes)."""
    rng = np.random.default_rng([seed, S])
    thr = rng.uniform(1.0, 500.0, (S, len(TYPES)))
    batch = rng.integers(1, 4096, S)
    iters = rng.uniform(1e3, 1e5, S)
    lines = ["name," + ",".join(f"throughput_{t}" for t in TYPES) + ",batch,iterations,grad_bytes"]
    lines += [
        f"job{i},{t[0]!r},{t[1]!r},{t[2]!r},{b},{it!r},{(i % 300) + 1}MB"
        for i, (t, b, it) in enumerate(zip(thr.tolist(), batch.tolist(), iters.tolist()))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return thr, batch


def write_cluster_file(path, K):
    """A cluster TOML of ``K`` workers over three types, with a speed per worker."""
    counts = [K // 3, K // 3, K - 2 * (K // 3)]
    parts = ['[cluster]\nbandwidth = "10Gbit/s"\n']
    for t, c in zip(TYPES, counts):
        speeds = ", ".join("0.75" if k % 2 else "1.0" for k in range(c))
        parts.append(f'[[types]]\nname = "{t}"\ncount = {c}\nspeeds = [{speeds}]\n')
    path.write_text("\n".join(parts), encoding="utf-8")
    return counts


@pytest.fixture(scope="module")
def cluster_spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("io") / "cluster.toml"
    path.write_text("".join(f'[[types]]\nname = "{t}"\ncount = 100\n' for t in TYPES), encoding="utf-8")
    return read_cluster(path)


@pytest.mark.benchmark(group="read_jobs")
@pytest.mark.parametrize("S", JOB_ROWS)
def test_read_jobs(benchmark, tmp_path, cluster_spec, S):
    path = tmp_path / "jobs.csv"
    thr, batch = write_job_file(path, S)
    data = benchmark(read_jobs, path, cluster_spec)
    assert data["throughput"].shape == (S, len(TYPES))
    assert np.array_equal(data["throughput"], thr) and np.array_equal(data["batch"], batch)
    assert data["job_names"][-1] == f"job{S - 1}"


@pytest.mark.benchmark(group="read_cluster")
@pytest.mark.parametrize("K", CLUSTER_WORKERS)
def test_read_cluster(benchmark, tmp_path, K):
    path = tmp_path / "cluster.toml"
    counts = write_cluster_file(path, K)
    spec = benchmark(read_cluster, path)
    assert spec.type_counts == counts and spec.n_workers == K
    assert spec.worker_speed.shape == (K,) and spec.worker_speed[1] == 0.75
