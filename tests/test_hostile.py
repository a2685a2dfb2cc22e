"""Fuzzing the top-level entry points with hostile numbers (see ``tests/hostile.py``).

Property, for every case: ``Problem(...)`` either raises a ``HetplaceError`` or
builds a problem on which every method returns a placement that passes the
project's own certificates -- feasible (``is_feasible``), finite JCT equal to a
re-evaluation, integer shares summing to each batch -- and, on instances small
enough for brute force, never better than the optimum and, for exact methods
that say ``optimal``, equal to it.  Any other exception fails the test; a hang
is ended by the per-test timeout.

Budget: :func:`hostile.fuzz_given` -- ``HETPLACE_FUZZ_FAST`` examples per test in the default run
(default 10), ``HETPLACE_FUZZ_EXAMPLES`` under ``-m fuzz`` (default 100).
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import strategies as st

import hetplace as hp
from hetplace import HetplaceError

from hostile import DEEP_STRUCTURES, fuzz_given, hostile_matrix, hostile_scalar, hostile_vector, mostly_ordinary
from methods import CPSAT_REL, rows_for
from reference import brute_force_reference

pytestmark = pytest.mark.timeout(600)

BASE = dict(
    throughput=[[10.0, 20.0], [5.0, 8.0]],
    type_counts=[2, 2],
    batch=[64, 32],
    iterations=[100.0, 50.0],
    grad_bytes=[1e6, 2e6],
    bandwidth=1e8,
)


def _build(kw):
    """``Problem(**kw)`` or None when it is rejected with a HetplaceError."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow inside validation is a bug
        try:
            return hp.Problem(**kw)
        except HetplaceError as exc:
            assert str(exc), "a HetplaceError must say what is wrong"
            return None


def _certify(problem, pl):
    """The project's own certificate checks for a placement of ``problem``."""
    wj = np.asarray(pl.worker_job)
    assert hp.is_feasible(problem, wj), "a returned placement must be feasible"
    assert math.isfinite(pl.mean_jct) and pl.mean_jct > 0
    again = hp.evaluate(problem, wj)
    assert again.mean_jct == pytest.approx(pl.mean_jct, rel=1e-12)
    sizes = np.bincount(wj[wj >= 0], minlength=problem.n_jobs)
    assert np.all(sizes >= 1) and np.all(sizes <= problem.max_workers)
    shares = np.asarray(pl.shares)
    for i in range(problem.n_jobs):
        assert shares[wj == i].sum() == problem.batch[i]
        assert np.all(shares[wj == i] >= 0)


#: A MILP solver on a hostile (numerically extreme) instance may search for long: the exact rows
#: run under this limit, and a result stopped by it must still be a certified placement.
EXACT_TIME_LIMIT = 20.0


def _methods(problem):
    """Every row of tests/methods.py that accepts ``problem`` (SMP with 8 samples, exact rows timed)."""
    for m in rows_for(problem):
        extra = {"smp": {"samples": 8}, "exact": {"time_limit": EXACT_TIME_LIMIT}}.get(m.method, {})
        yield m.method, dict(m.options, **extra)


def _check_all_methods(problem):
    small = problem.n_workers <= 6 and problem.n_jobs <= 3
    opt = brute_force_reference(problem)[0] if small else None
    for method, opts in _methods(problem):
        try:
            pl = hp.place(problem, method=method, seed=3, **opts)
        except HetplaceError:
            continue  # e.g. an option outside its range, or a solver limit: said clearly
        _certify(problem, pl)
        if opt is not None:
            assert pl.mean_jct >= opt * (1 - 1e-9), f"{method} beats the brute-force optimum"
            if method == "exact" and pl.info.get("status") == "optimal":
                # the DP and brute force are exact to rounding; a MILP "optimal" is verified to the
                # relative tolerance solve_exact documents (1e-6; its verification refutes anything worse)
                rel = 1e-9 if pl.info.get("exact_method") in ("dp", "brute") else 1e-6
                rel = CPSAT_REL if opts.get("solver") == "cp-sat" else rel  # its optimum lives on a grid
                assert pl.mean_jct == pytest.approx(opt, rel=rel), "exact says optimal but brute force disagrees"


PARAMS = {
    "throughput": hostile_matrix(2, 2),
    "type_counts": hostile_vector(2, st.one_of(st.integers(0, 4), hostile_scalar)),
    "batch": hostile_vector(2),
    "iterations": hostile_vector(2),
    "grad_bytes": hostile_vector(2),
    "bandwidth": st.one_of(mostly_ordinary, hostile_scalar),
    "worker_speed": hostile_vector(4, st.one_of(st.floats(0.01, 1.0), hostile_scalar)),
    "current": hostile_vector(4, st.one_of(st.integers(-3, 3), hostile_scalar)),
    "restart_time": hostile_vector(2, st.one_of(mostly_ordinary, hostile_scalar)),
}
#: Parameters that need others to mean anything: restart_time needs a running placement.
NEEDS = {"restart_time": {"current": [0, 1, -1, 1]}}


@pytest.mark.parametrize("param", sorted(PARAMS))
@fuzz_given(data=st.data())
def test_problem_with_one_hostile_parameter_is_rejected_or_placed_right(param, data):
    kw = dict(BASE, **NEEDS.get(param, {}))
    kw[param] = data.draw(PARAMS[param], label=param)
    problem = _build(kw)
    if problem is not None:
        _check_all_methods(problem)


@fuzz_given(
    scale_rho=st.sampled_from([1e-25, 1e-10, 1.0, 1e10, 1e25]),
    scale_iter=st.sampled_from([1e-20, 1.0, 1e20]),
    grad=st.sampled_from([0.0, 1e-20, 1.0, 1e12, 1e25]),
    bandwidth=st.sampled_from([1e-25, 1.0, 1e9, 1e25, math.inf]),
    speed=st.sampled_from([None, [1.0, 1e-20, 0.5, 1e-6]]),
)
def test_extreme_but_supported_scales_give_certified_placements(scale_rho, scale_iter, grad, bandwidth, speed):
    kw = dict(BASE)
    kw["throughput"] = (np.array(BASE["throughput"]) * scale_rho).tolist()
    kw["iterations"] = (np.array(BASE["iterations"]) * scale_iter).tolist()
    kw["grad_bytes"] = [grad, grad * 3]
    kw["bandwidth"] = bandwidth
    kw["worker_speed"] = speed
    problem = _build(kw)
    if problem is not None:
        _check_all_methods(problem)


@fuzz_given(worker_job=st.one_of(
    st.lists(st.sampled_from([-1, 0, 1, 2, -2, 2**63 - 1, 2**64 - 1, 1.0, 0.5, True, None, "0", 1j]), min_size=0, max_size=6),
    st.sampled_from([np.array([2**64 - 1, 0, 1, 1], dtype=np.uint64), np.array([0, 1, 0, 1], dtype=np.float32),
                     np.array([0, 1, -1, 1], dtype=np.int8), np.array(["0", "1", "0", "1"])]),
    hostile_scalar,
))
def test_evaluate_hostile_assignment_is_rejected_or_scored_right(worker_job):
    problem = hp.Problem(**BASE)
    try:
        feasible = hp.is_feasible(problem, worker_job)
    except HetplaceError:
        feasible = False
    try:
        pl = hp.evaluate(problem, worker_job)
    except HetplaceError:
        assert not feasible, "is_feasible says True but evaluate rejects the assignment"
        return
    assert feasible, "evaluate accepted an assignment that is_feasible rejects"
    _certify(problem, pl)
    wj = [int(v) for v in np.asarray(worker_job).tolist()]
    assert wj == pl.worker_job.tolist(), "the assignment was changed on the way in"


@fuzz_given(
    option=st.sampled_from(["samples", "polish_top", "fairness_tol", "max_rounds", "threads", "speed_buckets",
                            "latency_budget", "time_limit", "seed"]),
    value=hostile_scalar,
)
def test_hostile_option_values_are_rejected_or_honoured(option, value):
    problem = hp.Problem(**BASE)
    if option == "seed":
        method, kw = "smp", {"seed": value}
    elif option == "latency_budget":
        method, kw = "auto", {option: value}
    elif option == "time_limit":
        method, kw = "exact", {option: value, "exact_method": "milp"}
    else:
        method, kw = "smp", {option: value}
    try:
        pl = hp.place(problem, method=method, **kw)
    except HetplaceError as exc:
        assert str(exc)
        return
    _certify(problem, pl)


@pytest.mark.parametrize("param", ["throughput", "type_counts", "batch", "iterations", "worker_speed", "available",
                                   "current", "restart_time"])
@pytest.mark.parametrize("value", DEEP_STRUCTURES, ids=["5k", "100k", "5k-bool", "self", "ragged-3k", "70"])
def test_problem_rejects_structures_nested_thousands_deep(param, value):
    # one class of the issue-20 campaign: no walk over user input may recurse
    kw = dict(BASE, **NEEDS.get(param, {}))
    kw[param] = value
    with pytest.raises(HetplaceError):
        hp.Problem(**kw)


# ------------------------------------------------------------ arrival times (issue 20)
def _simulate_with_arrival(arrival):
    import dataclasses

    import hetplace.online as on

    trace = on.gavel_trace(2, 4.8, 0)
    trace = [trace[0], dataclasses.replace(trace[1], arrival=arrival)]
    return on.simulate(trace, {"v100": 2, "p100": 2, "k80": 2}, "fifo", progress=False)


@pytest.mark.parametrize("arrival", [1.7976931348623157e308, 1.7e308, 1e31, 1e30, 1e17, -1.0, -0.5, math.nan, math.inf,
                                     True, "5", 1 + 0j, None, 2**1100])
def test_simulate_rejects_arrivals_its_clock_cannot_resolve(arrival):
    # arrival was only checked finite and >= 0: at 1.7e308 (and at 1e30) a job's JCT came out as 0
    with pytest.raises(HetplaceError, match="arrival"):
        _simulate_with_arrival(arrival)


@pytest.mark.parametrize("arrival", [0.0, 1.0, 3600.0, np.float64(7.5), np.int64(10)])
def test_simulate_keeps_arrivals_in_range(arrival):
    assert _simulate_with_arrival(arrival).status == "complete"
