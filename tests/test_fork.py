"""Fork safety (issue 20): a child forked after a parallel decision decides, serially, exactly as its parent.

Each case runs in its own process with time limits: before the fix a child's parallel decision never
returned (Cython: GNU OpenMP's pool does not survive fork) or was killed by Numba ("fork() called from
a process already using GNU OpenMP").  The instance is small; ``threads=2`` forces the parallel path.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hetplace.smp import _cython_available

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

# argv: backend, the parent's threads.  Prints one line per check; a child that hangs or dies is a failure line.
_SCRIPT = r"""
import multiprocessing, os, signal, sys, time
import numpy as np
import hetplace as hp
from hetplace.instances import synthetic_instance

backend, parent_threads = sys.argv[1], int(sys.argv[2])
problem = synthetic_instance(1, 64, 8)
CHILD_S = 60  # a cold Numba cache compiles the serial kernels in the child (a few seconds)


def decide():
    r = hp.place(problem, method="smp", seed=3, backend=backend, threads=2, samples=16)
    return r.worker_job.tobytes() + bytes([r.info["threads"]])


def in_fork(fn, limit=CHILD_S):
    # fn() in an os.fork child, through a pipe; 'dead <status>' or 'hang' when it never answers
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            os.write(wr, fn())
        finally:
            os._exit(0)
    os.close(wr)
    deadline = time.monotonic() + limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return b"hang"
        time.sleep(0.01)
    chunks = []
    while True:
        chunk = os.read(rd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(rd)
    out = b"".join(chunks)
    return out if out else b"dead %d" % status


def in_process(fn):
    # fn() in a process of multiprocessing's fork context; 'dead <exitcode>' or 'hang' when it never answers
    ctx = multiprocessing.get_context("fork")
    rx, tx = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=lambda: tx.send_bytes(fn()))
    proc.start()
    deadline, out = time.monotonic() + CHILD_S, None
    while out is None and time.monotonic() < deadline:
        if rx.poll(0.05):
            out = rx.recv_bytes()
        elif not proc.is_alive() and not rx.poll(0.05):
            out = b"dead %d" % proc.exitcode
    if proc.is_alive():
        proc.kill()
    proc.join()
    return b"hang" if out is None else out


def report(name, out):
    if out == expected_wj + bytes([1]):
        print(name, "same serial")
    elif out[:-1] == expected_wj:
        print(name, "same threads=%d" % out[-1])
    else:
        print(name, "FAILED", out[:40])


parent = hp.place(problem, method="smp", seed=3, backend=backend, threads=parent_threads, samples=16)
expected_wj = parent.worker_job.tobytes()
print("parent threads=%d" % parent.info["threads"])
report("os.fork", in_fork(decide))
report("grandchild", in_fork(lambda: in_fork(decide), 2 * CHILD_S))  # the child reaps a hung grandchild
report("multiprocessing", in_process(decide))
report("parent again", decide())
"""


def _run(backend, parent_threads):
    # its own session, so that every process it forks is killed at the end, whatever hung
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, backend, str(parent_threads)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"timed out; output so far: {out!r} {err[-2000:]!r}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, err[-2000:]
    return out.splitlines()


@pytest.mark.parametrize("backend", ["numba", pytest.param("cython", marks=pytest.mark.skipif(
    not _cython_available(), reason="Cython extension not built (pip install .)"))])
def test_child_after_a_parallel_decision_decides_serially_and_identically(backend):
    lines = _run(backend, 2)
    assert lines == ["parent threads=2", "os.fork same serial", "grandchild same serial",
                     "multiprocessing same serial", "parent again same threads=2"], lines


@pytest.mark.skipif(not _cython_available(), reason="Cython extension not built (pip install .)")
def test_child_of_a_parent_without_a_pool_keeps_its_threads():
    """A serial parent started no OpenMP pool (Cython): its children may still decide in parallel."""
    lines = _run("cython", 1)
    assert lines == ["parent threads=1", "os.fork same threads=2", "grandchild same threads=2",
                     "multiprocessing same threads=2", "parent again same threads=2"], lines
