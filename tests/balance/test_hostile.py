"""Hostile numbers over every public entry point of hetplace.balance (strategies: tests/hostile.py).

Property, for every case: a valid result -- shares that are int64, sum to the
batch and stay within ``[min_batch, cap]``, finite predictions, efficiencies in
[0, 1] -- or a :class:`hetplace.HetplaceError`.  Any other exception fails
the test; a hang is ended by the per-test timeout.

Budget: :func:`hostile.fuzz_given` -- ``HETPLACE_FUZZ_FAST`` examples per test in the default run
(default 10), ``HETPLACE_FUZZ_EXAMPLES`` under ``-m fuzz`` (default 100).
"""

import math

import numpy as np
import pytest
from hypothesis import example
from hypothesis import strategies as st

from hetplace import HetplaceError
from hetplace.balance import POLICIES, EpochPlan, LoadBalancer, largest_remainder, make_scenario, simulate
import hetplace.balance as bl

from hostile import DEEP_STRUCTURES, EDGE_FLOATS, EDGE_INTS, fuzz_given, hostile_scalar, hostile_vector, mostly_ordinary

pytestmark = pytest.mark.timeout(600)

counts = st.one_of(st.integers(1, 50), st.sampled_from(EDGE_INTS), hostile_scalar)
times = st.one_of(st.floats(1e-3, 1e3), st.just(math.inf), st.sampled_from(EDGE_FLOATS), hostile_scalar)


def _check_shares(out, total, lower, upper, n):
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (n,)
    assert sum(int(v) for v in out) == total
    assert (out >= np.asarray(lower)).all() and (out.astype(float) <= np.asarray(upper, dtype=float)).all()


@fuzz_given(hostile_vector(4, st.one_of(st.floats(0, 1e300), st.sampled_from(EDGE_FLOATS), hostile_scalar)),
            counts, st.one_of(st.integers(0, 3), hostile_scalar), st.one_of(st.just(np.inf), counts, hostile_scalar))
def test_largest_remainder_is_valid_or_a_hetplace_error(x, total, lower, upper):
    try:
        out = largest_remainder(x, total, lower=lower, upper=upper)
    except HetplaceError:
        return
    n = len(x)
    _check_shares(out, int(total), np.broadcast_to(float(lower), (n,)), np.broadcast_to(float(upper), (n,)), n)


@fuzz_given(counts, st.integers(1, 5), st.sampled_from(POLICIES), st.one_of(st.none(), hostile_vector(3, counts)),
            st.one_of(st.just(1), counts), st.lists(hostile_vector(3, times), min_size=1, max_size=4),
            st.one_of(st.none(), hostile_vector(3, mostly_ordinary)))
def test_load_balancer_is_valid_or_a_hetplace_error(B, n, policy, caps, min_batch, steps, signal):
    if caps is not None and isinstance(caps, list) and len(caps) == 3:
        caps = caps[:n] + [10**9] * (n - len(caps[:n]))
    try:
        lb = LoadBalancer(B, n, policy=policy, memory_caps=caps, min_batch=min_batch)
    except HetplaceError:
        return
    hi = lb.memory_caps
    for t in steps:
        if isinstance(t, list):
            t = (t + [1.0] * n)[:n]
        kw = {} if signal is None else {"cpu_avail": (signal + [1.0] * n)[:n] if isinstance(signal, list) else signal}
        try:
            out = lb.observe(t, **kw)
        except HetplaceError:
            continue
        _check_shares(out, lb.global_batch, np.full(n, lb.min_batch), hi, n)
        p = lb.predicted_speeds
        assert p is None or (np.isfinite(p).all() and (p >= 0).all())


@fuzz_given(counts, counts, st.one_of(st.integers(0, 5), hostile_scalar), st.one_of(st.integers(0, 3), hostile_scalar),
            st.one_of(st.integers(0, 3), hostile_scalar), hostile_vector(2, counts))
def test_epoch_plan_is_valid_or_a_hetplace_error(N, B, seed, epoch, iteration, sizes):
    try:
        plan = EpochPlan(N, B, seed=seed)
        parts = plan.batches(epoch, iteration, sizes)
    except HetplaceError:
        return
    assert sum(len(p) for p in parts) == plan.total(iteration)
    idx = np.concatenate(parts)
    assert ((idx >= 0) & (idx < plan.n_samples)).all() and np.unique(idx).size == idx.size


@fuzz_given(st.sampled_from(["cpu", "gpu", "fl", "naive", "static", "bsp"]),
            st.fixed_dictionaries({}, optional={
           "n_workers": st.one_of(st.integers(1, 6), hostile_scalar),
           "iterations": st.one_of(st.integers(1, 30), hostile_scalar),
           "jitter": st.one_of(st.floats(0, 0.5), hostile_scalar),
           "dropout_rate": st.one_of(st.floats(0, 1), hostile_scalar),
           "hiccup_factor": st.one_of(st.floats(1, 10), hostile_scalar),
           "step_rate": st.one_of(st.none(), st.floats(0, 1), hostile_scalar),
           "deadline_factor": st.one_of(st.floats(0.1, 10), hostile_scalar),
           "seed": st.one_of(st.integers(0, 10), hostile_scalar),
            }),
            st.one_of(st.just(True), hostile_scalar))
@example("cpu", {"step_rate": 2.225073858507e-311}, True)  # found by the fuzzer: 1 / rate overflowed to inf
def test_simulate_is_valid_or_a_hetplace_error(policy, options, signals):
    options.setdefault("iterations", 20)
    kind = "gpu" if policy == "gpu" else "fl" if policy == "fl" else "cpu"
    try:
        sc = make_scenario(kind, **options)
        r = simulate(policy, sc, signals=signals, compare=False)
    except HetplaceError:
        return
    assert 0.0 <= r.efficiency <= 1.0 + 1e-12, r.efficiency
    assert r.max_over_cap == 0
    B = sc.global_batch
    assert (r.batch_sizes.sum(axis=1) == B).all() and (r.batch_sizes >= 1).all()


# ------------------------------------------------------------------ the public time-model helpers (fuzz/campaign.py)
@pytest.mark.parametrize("call", [
    lambda: bl.equal_finish([1.0, 2.0, 3.0], 12, 1, 12),            # int bounds: AttributeError 'int'.astype
    lambda: bl.optimal_integer_allocation([1.0, 2.0, 3.0], 12, 1, 12),
    lambda: bl.step_time([4, 4, 4], [1.0, 2.0, 3.0]),                # a list of speeds: TypeError list > int
])
def test_time_model_helpers_accept_lists_and_scalar_bounds(call):
    out = call()
    assert np.isfinite(np.asarray(out[1] if isinstance(out, tuple) else out, dtype=float)).all()


@pytest.mark.parametrize("speed", [[0.0, 2.0, 3.0], [math.nan, 2.0, 3.0], [math.inf, 2.0, 3.0], [-1.0, 2.0, 3.0],
                                   [1e-300, 2.0, 3.0], [True, 2.0, 3.0], ["1", 2.0, 3.0], [[1.0, 2.0]], 1.0])
def test_time_model_helpers_reject_bad_speeds(speed):
    # NaN / inf results or numpy errors before; a speed 0 divided by zero in equal_finish
    for call in (lambda: bl.equal_finish(speed, 12, 1, 12), lambda: bl.optimal_integer_allocation(speed, 12, 1, 12)):
        with pytest.raises(HetplaceError, match="speed"):
            call()


@pytest.mark.parametrize("total", [True, -1, 1.5, 2**53 + 1, math.nan, None])
def test_time_model_helpers_reject_bad_totals(total):
    with pytest.raises(HetplaceError, match="total"):
        bl.optimal_integer_allocation([1.0, 2.0, 3.0], total, 1, 12)
    with pytest.raises(HetplaceError, match="total"):
        bl.equal_finish([1.0, 2.0, 3.0], total, 1, 12)


def test_time_model_helpers_keep_their_results():
    b, T = bl.optimal_integer_allocation(np.array([1.0, 2.0, 3.0]), 12, np.ones(3, np.int64), np.full(3, 12, np.int64))
    assert b.tolist() == [2, 4, 6] and T == 2.0
    assert bl.step_time(np.array([4.0, 4.0]), np.array([2.0, 0.0])).tolist() == [2.0, math.inf]


@pytest.mark.parametrize("value", DEEP_STRUCTURES, ids=["5k", "100k", "5k-bool", "self", "ragged-3k", "70"])
@pytest.mark.parametrize("call", [
    lambda v: largest_remainder(v, 10),
    lambda v: LoadBalancer(8, 2).observe(v),
    lambda v: LoadBalancer(8, 2, memory_caps=v),
    lambda v: LoadBalancer(8, 2, policy="gpu", knees=v),
], ids=["largest_remainder", "observe", "memory_caps", "knees"])
def test_lists_nested_thousands_deep_are_rejected_without_recursion(call, value):
    # the hidden-bool check recursed: RecursionError at a few thousand levels (Problem() rejected them cleanly)
    with pytest.raises(HetplaceError, match="numpy cannot convert"):
        call(value)


def test_a_bool_in_a_ragged_list_is_a_hetplace_error():
    # numpy refused the list, then the bool check read raw.dtype of None: AttributeError
    with pytest.raises(HetplaceError, match="numpy cannot convert"):
        largest_remainder([[True], [1, 2]], 3)
    with pytest.raises(HetplaceError, match="real numbers"):  # a bool numpy accepts is still refused
        largest_remainder([[1.0, 2.0], [True, 1.0]], 3)
