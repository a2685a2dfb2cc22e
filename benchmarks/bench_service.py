"""hetplace serve: what the service adds to a decision (docs/results.md §12, docs/service.md §6).

A real server (``python -m hetplace serve`` with a journal, on 127.0.0.1) and the same session in process:

- **decide**: K = 256 workers (Gavel's three types), S = 32 jobs; each round one progress event, then
  ``POST /v1/sessions/{id}/decide`` over loopback HTTP (kept-alive connection, the journal's snapshot
  included), against ``Session.decide`` of the same state in process.  The overhead is the HTTP time
  minus the in-process time, per round; its p99 and the p99s' difference are reported.
- **place**: ``POST /v1/place`` at K = 64, S = 8 end to end (cluster and jobs sent every time).

Run ``python benchmarks/bench_service.py [--rounds N] [--busy 3]`` for the figures (``--busy 3``: beside
three spinning processes); ``pytest benchmarks/bench_service.py`` runs them briefly under pytest-benchmark.
"""

import argparse
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

TOKEN = "bench-token-0123456789"


def problem_json(problem):
    """A :class:`hetplace.Problem` (no topology) as the service's cluster and jobs."""
    cluster = {"cluster": {"bandwidth": float(problem.bandwidth)},
               "types": [{"name": n, "count": int(c)} for n, c in zip(problem.type_names, problem.type_counts)]}
    jobs = []
    for i in range(problem.n_jobs):
        thr = {n: float(problem.throughput[i, g]) for g, n in enumerate(problem.type_names)
               if problem.throughput[i, g] > 0}
        jobs.append({"job": f"j{i}", "throughput": thr, "batch": int(problem.batch[i]),
                     "iterations": float(problem.iterations[i]), "grad_bytes": float(problem.grad_bytes[i])})
    return cluster, jobs


def instance(K, S, seed=11):
    from hetplace.data import gavel_path
    from hetplace.instances import gavel_instance

    return problem_json(gavel_instance(seed, K, S, gavel_path()))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m hetplace serve`` on a free loopback port, with a journal in a temporary directory."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        token = Path(self.dir.name) / "token"
        token.write_text(TOKEN)
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hetplace", "serve", "--port", str(self.port), "--state-dir",
             str(Path(self.dir.name) / "state"), "--token-file", str(token)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        from hetplace.client import Client, ServiceError

        self.client = Client(f"http://127.0.0.1:{self.port}", token=TOKEN)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.client.health()
                break
            except ServiceError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {self.proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)

    def close(self):
        self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.dir.cleanup()


def _spin(stop):
    while not stop.is_set():
        pass


class Busy:
    """``n`` processes spinning on the CPU (the busy machine of docs/results.md)."""

    def __init__(self, n):
        self.stop = multiprocessing.Event()
        self.procs = [multiprocessing.Process(target=_spin, args=(self.stop,), daemon=True) for _ in range(n)]
        for p in self.procs:
            p.start()

    def close(self):
        self.stop.set()
        for p in self.procs:
            p.join(5)


def decide_overhead(server, rounds, K=256, S=32):
    """Per round, seconds of the same decision: over HTTP, in process, the server's own time, and in a second
    in-process session fed the same events (the noise floor of a pair of runs)."""
    import hetplace as hp
    from hetplace import io

    cluster, jobs = instance(K, S)
    remote = server.client.session(cluster, seed=0)
    local = hp.Session(io.cluster_from_dict(cluster), seed=0)
    twin = hp.Session(io.cluster_from_dict(cluster), seed=0)
    events = [{"type": "submit", **j} for j in jobs]
    for s in (remote, local, twin):
        s.apply(events)
        s.decide()
    http, inproc, served, again = [], [], [], []
    cpu_server, cpu_local = _cpu(server.proc.pid), 0.0
    for r in range(rounds):
        ev = [{"type": "progress", "job": jobs[r % S]["job"], "iterations_left": jobs[r % S]["iterations"] * 0.99}]
        jobs[r % S]["iterations"] *= 0.99
        remote.apply(ev)
        c = time.process_time()
        local.apply(ev)
        cpu_local += time.process_time() - c
        twin.apply(ev)
        t = time.perf_counter()
        d = remote.decide()
        http.append(time.perf_counter() - t)
        served.append(d["wall_time"])
        t, c = time.perf_counter(), time.process_time()
        ref = local.decide()
        inproc.append(time.perf_counter() - t)
        cpu_local += time.process_time() - c
        t = time.perf_counter()
        twin_d = twin.decide()  # the same decision in a second in-process session: the noise floor
        again.append(time.perf_counter() - t)
        assert d["assignment"] == {str(k): list(v) for k, v in ref.assignment.items()} == {
            str(k): list(v) for k, v in twin_d.assignment.items()}, "not the same decision"
    cpu = ((_cpu(server.proc.pid) - cpu_server) - cpu_local) / rounds
    remote.delete()
    return np.array(http), np.array(inproc), np.array(served), np.array(again), cpu


def _cpu(pid):
    """CPU seconds (user + system) process ``pid`` has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def place_latency(server, rounds, K=64, S=8):
    cluster, jobs = instance(K, S)
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        server.client.place(cluster, jobs, seed=0)
        out.append(time.perf_counter() - t)
    return np.array(out)


def _ms(x):
    return f"{1e3 * x:.2f} ms"


def report(rounds, busy):
    server = Server()
    spin = Busy(busy) if busy else None
    try:
        place_latency(server, 5)  # warm both sides' kernels
        http, inproc, served, again, cpu = decide_overhead(server, rounds)
        place = place_latency(server, rounds)
    finally:
        if spin:
            spin.close()
        server.close()
    over = http - inproc
    load = os.getloadavg()[0]
    lines = [f"machine: {os.cpu_count()} cores, load average {load:.2f}, busy processes: {busy}",
             f"decide K=256 S=32, {rounds} rounds: HTTP p50 {_ms(np.median(http))} p99 {_ms(np.quantile(http, .99))};"
             f" in process p50 {_ms(np.median(inproc))} p99 {_ms(np.quantile(inproc, .99))}",
             f"  overhead per round (HTTP - in process): p50 {_ms(np.median(over))} p99 {_ms(np.quantile(over, .99))};"
             f" p99(HTTP) - p99(in process) {_ms(np.quantile(http, .99) - np.quantile(inproc, .99))}",
             f"  noise floor (a second in-process session - the first): p50 {_ms(np.median(again - inproc))} "
             f"p99 {_ms(np.quantile(again - inproc, .99))}",
             f"  server CPU per round (a progress batch and a decision) - the same in process: {_ms(cpu)}",
             f"  HTTP - the server's own decision time: p50 {_ms(np.median(http - served))} "
             f"p99 {_ms(np.quantile(http - served, .99))}",
             f"place K=64 S=8 end to end, {rounds} requests: p50 {_ms(np.median(place))} "
             f"p99 {_ms(np.quantile(place, .99))}"]
    return "\n".join(lines)


# ------------------------------------------------------------------ pytest-benchmark
@pytest.fixture(scope="module")
def server():
    pytest.importorskip("fastapi")
    s = Server()
    yield s
    s.close()


def test_decide_over_http(benchmark, server):
    rounds = 3 if os.environ.get("HETPLACE_BENCH_TIME_LIMIT") else 30
    http, inproc, _, _, _ = benchmark.pedantic(decide_overhead, args=(server, rounds), rounds=1, iterations=1)
    benchmark.extra_info["overhead_p99_ms"] = 1e3 * float(np.quantile(http - inproc, 0.99))


def test_place_over_http(benchmark, server):
    cluster, jobs = instance(64, 8)
    server.client.place(cluster, jobs)
    benchmark(server.client.place, cluster, jobs)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--busy", type=int, default=0, help="spinning processes beside the run")
    a = ap.parse_args()
    print(report(a.rounds, a.busy))
