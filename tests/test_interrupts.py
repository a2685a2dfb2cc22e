"""Ctrl-C and bounded work (issue 20): every method stops on SIGINT, the DP honours time_limit.

Each interrupt case runs in its own process (tests/interrupt_cases.py): SIGINT
is sent while the long call runs; ``KeyboardInterrupt`` must reach the caller
within a few seconds, leave no worker thread behind, and the next call in the
same process must work.  A fast representative set runs by default; the rest
is marked slow.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from hetplace import solve_exact
from hetplace.errors import InvalidOptionError
from hetplace.exact import DP_MAX_WORK, dp_size

from interrupt_cases import CASES, _gavel, run_case

#: Seconds from SIGINT to KeyboardInterrupt that a case may take (measured: under 1 s; the
#: margin is for a busy machine and a first Numba cache load).
LATENCY = 5.0
#: The DP's time-limit tests time the compiled DP: with the JIT off it runs as plain Python,
#: about 100x slower between two checks of its stop flag.
_COMPILED_DP = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                                  reason="times the compiled DP; Numba's JIT is off")
FAST = ("dp", "milp-scip", "smp-cython")


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in CASES])
def test_ctrl_c_raises_keyboard_interrupt(name):
    answer = run_case(name)
    assert answer["raised"], answer
    assert answer["latency"] < LATENCY, answer
    assert answer["after"], answer  # the process is usable: the next call gives the same placement
    assert not any(t.startswith("hetplace") for t in answer["threads"]), answer


def _cli_files(tmp_path):
    """A cluster with per-worker speeds (so `place --method exact` runs the MILP) that SCIP takes minutes on."""
    speeds = ", ".join(f"{0.4 + 0.6 * ((7 * k) % 32) / 31:.3f}" for k in range(32))
    types = "".join(f'\n[[types]]\nname = "{t}"\ncount = 32\nspeeds = [{speeds}]\n' for t in ("k80", "p100", "v100"))
    (tmp_path / "cluster.toml").write_text('[cluster]\nbandwidth = "10Gbit/s"\n' + types)
    rows = "".join(f"job{i},{40 + 7 * i},{130 + 11 * i},{250 + 13 * i},128,{20000 + 1000 * i},100MB\n"
                   for i in range(8))
    (tmp_path / "jobs.csv").write_text("name,throughput_k80,throughput_p100,throughput_v100,batch,iterations,"
                                       "grad_bytes\n" + rows)


def test_cli_interrupted_exits_130(tmp_path):
    _cli_files(tmp_path)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.Popen([sys.executable, "-m", "hetplace", "place", "--cluster", str(tmp_path / "cluster.toml"),
                             "--jobs", str(tmp_path / "jobs.csv"), "--method", "exact"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=env)
    time.sleep(4.0)  # imports, files, the model build: the solver is running by now
    assert proc.poll() is None, proc.communicate()
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.perf_counter() - sent < LATENCY
    assert proc.returncode == 130, (out, err)
    assert err == "hetplace: interrupted\n", err


@_COMPILED_DP
def test_dp_time_limit_bounds_the_call():
    p = _gavel(1, 300, 3)  # 1e11 transitions: about 9 minutes
    solve_exact(_gavel(1, 16, 4), method="dp")  # the Numba cache is loaded outside the timer
    t = time.perf_counter()
    res = solve_exact(p, method="dp", time_limit=1.0)
    assert time.perf_counter() - t < 1.0 + 1.0
    assert res.status == "feasible" and not res.success and res.method == "dp"
    assert res.info["dp_jobs_done"] < p.n_jobs and res.info["incumbent"] == "greedy"
    assert res.bound <= res.objective and res.gap >= 0
    # a bound that is valid: no placement beats it (the optimum of a smaller prefix is a relaxation)
    assert res.bound >= float(p.jct_alone.mean()) - 1e-9 * res.objective


@_COMPILED_DP
def test_dp_time_limit_partial_bound_is_valid():
    p = _gavel(2, 90, 40)  # 40 DP stages of ~0.5 s each
    solve_exact(_gavel(1, 16, 4), method="dp")  # the Numba cache is loaded outside the time limit
    res = solve_exact(p, method="dp", time_limit=2.0)
    assert res.status == "feasible" and 0 < res.info["dp_jobs_done"] < p.n_jobs
    assert res.bound > float(p.jct_alone.mean())  # the finished stages tighten mean(jct_alone)
    assert res.bound <= res.objective


def test_dp_without_time_limit_refuses_huge_work():
    p = _gavel(1, 300, 3)
    work = dp_size(p)[1]
    assert work > DP_MAX_WORK
    with pytest.raises(InvalidOptionError, match=(
            rf"method='dp' would make n_jobs \* prod_g \(m_g\+1\)\(m_g\+2\)/2 = {work:,} transitions "
            rf"\(about \d+ minutes at ~5 ns each\), above DP_MAX_WORK = 20,000,000,000\. Pass time_limit= "
            r"\(the DP then returns the greedy baseline with a lower bound if it has not finished\), or use "
            r"method='milp' \(or method='auto'\)\.")):
        solve_exact(p, method="dp")


def test_brute_time_limit_returns_the_best_found():
    p = _gavel(1, 8, 7)  # 1.7e7 assignments: about a second
    res = solve_exact(p, method="brute", time_limit=0.1)
    assert res.wall_time < 1.0
    assert res.status in ("feasible", "optimal") and res.placement is not None
    assert res.bound <= res.objective
