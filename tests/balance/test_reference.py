"""hetplace.balance against its slow references (tests/balance/reference.py).

* ``largest_remainder`` against exact rational water filling + Hamilton's
  method, on seeded and extreme inputs (weights spanning 1e-300..1e300, ties,
  zero weights, lower and upper bounds): the VALUES, not only the sum.
* the structured O(n m^2) ``SignalKalman`` against the dense filter it
  replaced.
"""

from fractions import Fraction

import numpy as np
import pytest

from hetplace.balance import largest_remainder

from .reference import largest_remainder_exact

EPS = np.finfo(np.float64).eps


def _check_against_exact(x, total, lower, upper):
    """The shares equal the exact reference, except where float64 cannot tell two remainders apart."""
    got = largest_remainder(x, total, lower=lower, upper=upper)
    up_ref = None if np.ndim(upper) == 0 and upper == np.inf else upper
    want, q = largest_remainder_exact(x, total, lower, up_ref)
    got = got.tolist()
    assert sum(got) == total
    if got == want:
        return
    # Only a near-tie may differ: remainders (or a quota and an integer) closer than float64 can
    # resolve.  The implementation calls remainders within tol equal; anything else is a bug.
    tol = 4 * max(1e-9, 64 * EPS * float(max(q)))
    frac = [float(qi - int(qi)) for qi in q]
    up = [i for i in range(len(x)) if got[i] > int(q[i])]
    down = [i for i in range(len(x)) if got[i] <= int(q[i])]
    for i in range(len(x)):
        assert abs(got[i] - float(q[i])) < 1 + tol, (i, got[i], q[i])
    near_int = [i for i in range(len(x)) if 0 < frac[i] < tol or 1 - tol < frac[i] < 1]
    if up and down and not near_int:
        assert min(frac[i] for i in up) >= max(frac[i] for i in down if got[i] == int(q[i])) - tol, (got, want)
    assert any(0 < abs(frac[i] - frac[j]) <= tol for i in range(len(x)) for j in range(len(x))) or near_int, (
        f"largest_remainder({x}, {total}, lower={lower}, upper={upper}) = {got}, exact {want}"
    )


def test_largest_remainder_tiny_weight_beside_a_large_one_gets_only_its_minimum():
    # the scaled breakpoints overflowed: [5001, 5001] came back, with an overflow warning
    with np.errstate(all="raise"):
        assert largest_remainder([1e-300, 1e6], 10002, lower=1).tolist() == [1, 10001]
    assert largest_remainder([1e6, 1e-300], 10002, lower=1).tolist() == [10001, 1]
    assert largest_remainder([1e300, 1e-300, 1.0], 10, lower=0).tolist() == [10, 0, 0]


def test_largest_remainder_tiny_weights_keep_their_ratio_when_the_large_one_is_capped():
    # scaling by the largest weight flushed 1e-300 / 1e300 to 0 and split the rest equally
    out = largest_remainder([1e-300, 2e-300, 1e300], 35, upper=[np.inf, np.inf, 5])
    assert out.tolist() == [10, 20, 5]
    out = largest_remainder([3e-300, 1e-300, 1e300, 1e300], 1_000_004, upper=[np.inf, np.inf, 2, 2])
    assert out.tolist() == [750_000, 250_000, 2, 2]


def test_largest_remainder_exact_ties_go_to_the_lower_index():
    assert largest_remainder([1, 3], 2, lower=0).tolist() == [1, 1]  # quotas 0.5 / 1.5
    assert largest_remainder([0.1, 0.3], 2, lower=0).tolist() == [1, 1]  # 0.1 and 0.3 are not exact
    assert largest_remainder([1.0, 1.0, 1.0], 10, lower=0).tolist() == [4, 3, 3]
    # quotas 1.5 / 0.5 / 0.5 / 1.5: four equal remainders, two seats, to indices 0 and 1
    assert largest_remainder([3.0, 1.0, 1.0, 3.0], 4, lower=0).tolist() == [2, 1, 0, 1]
    assert largest_remainder([1.0, 3.0, 3.0, 1.0], 4, lower=0).tolist() == [1, 2, 1, 0]


def test_largest_remainder_zero_weights_take_the_rest_equally_when_the_others_are_capped():
    assert largest_remainder([0, 1], 12, upper=[10, 5]).tolist() == [7, 5]
    assert largest_remainder([0, 0, 2.0], 11, upper=[9, 9, 4]).tolist() == [4, 3, 4]


def _seeded_case(rng):
    n = int(rng.integers(1, 16))
    kind = int(rng.integers(0, 6))
    if kind == 0:
        x = rng.uniform(0, 10, n)
    elif kind == 1:  # the whole float range, including denormal-adjacent weights
        x = 10.0 ** rng.uniform(-300, 300, n)
    elif kind == 2:  # small integers: many exact ties
        x = rng.integers(0, 4, n).astype(float)
    elif kind == 3:  # repeated values of mixed scale
        x = rng.choice([1e-300, 1e-30, 0.5, 1.0, 3.0, 1e30, 1e300], n)
    elif kind == 4:
        x = np.exp(rng.normal(0, 5, n)) * (rng.random(n) < 0.8)
    else:
        x = np.round(rng.uniform(0, 100, n), 1)
    lower = int(rng.integers(0, 3)) if rng.random() < 0.5 else rng.integers(0, 4, n)
    lo_sum = n * lower if np.ndim(lower) == 0 else int(np.sum(lower))
    total = lo_sum + int(rng.choice([0, 1, 2, 7, 100, 10_007, 2**31 + 11]))
    upper = np.inf
    if rng.random() < 0.5:
        lo_arr = np.broadcast_to(lower, (n,))
        upper = lo_arr + rng.integers(0, max(2, (total - lo_sum) // max(1, n) + 3), n)
        upper = np.where(rng.random(n) < 0.3, np.inf, upper)
        if np.isfinite(upper).all() and upper.sum() < total:
            upper[int(rng.integers(0, n))] += total - upper.sum()
    return x, total, lower, upper


@pytest.mark.parametrize("seed", range(40))
def test_largest_remainder_equals_the_exact_rational_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        x, total, lower, upper = _seeded_case(rng)
        _check_against_exact(x.tolist(), total, lower, upper)


@pytest.mark.parametrize(
    "x, total, lower, upper",
    [
        ([1e-300, 1e300], 2**53, 1, np.inf),
        ([1e300, 1e300, 1e-300], 2**53, 0, np.inf),
        ([5e-324, 1.0], 3, 1, np.inf),
        ([1.7976931348623157e308] * 4, 10, 0, np.inf),
        ([1.7976931348623157e308, 5e-324], 7, 0, [3, 10]),
        ([1e-300] * 3, 10, 0, np.inf),
        ([2.0, 1.0], 2**53, 0, [2**52, 2.0**300]),
        ([1e-30, 1e30], 1000, [0, 999], np.inf),
    ],
)
def test_largest_remainder_extreme_inputs_equal_the_exact_reference(x, total, lower, upper):
    _check_against_exact(x, total, lower, upper)


def test_exact_reference_is_itself_right_on_hand_examples():
    assert largest_remainder_exact([1, 2, 3], 10)[0] == [2, 3, 5]
    assert largest_remainder_exact([1, 1, 8], 12, 2, [12, 12, 6])[0] == [3, 3, 6]
    shares, q = largest_remainder_exact([1, 3], 2, 0)
    assert shares == [1, 1] and q == [Fraction(1, 2), Fraction(3, 2)]


# ------------------------------------------------------------------ the structured Kalman filter
def _feed(filters, seed, n, m, T=250):
    """Drive every filter with the same seeded measurements (signal steps, outliers, stalls, change points)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, 1.0, n)
    c = rng.normal(0.0, 0.8, m)
    for t in range(T):
        x = rng.normal(0.0, 0.3, (n, m)) * (rng.random((n, m)) < 0.5)
        y = a + x @ c + 0.05 * rng.standard_normal(n)
        y += np.where(rng.random(n) < 0.03, rng.choice([-1.0, 1.0], n), 0.0)  # hiccups
        if t % 60 == 30:
            a[int(rng.integers(0, n))] -= 1.5  # a lasting change: confirmed next iteration
        valid = rng.random(n) > 0.1
        if t % 40 == 11:
            for f in filters:
                f.inflate(t % n)
        outs = [f.update(y, valid, x if m else None, 1e-4, 2e-3) for f in filters]
        yield t, outs


@pytest.mark.parametrize("seed, n, m", [(0, 12, 2), (1, 5, 1), (2, 30, 3), (3, 9, 0), (4, 1, 2)])
def test_structured_kalman_equals_the_dense_filter_without_coefficient_drift(seed, n, m):
    from hetplace.balance._estimators import SignalKalman

    from .reference import DenseSignalKalman

    fast, dense = SignalKalman(n, m, q_coef=0.0), DenseSignalKalman(n, m, q_coef=0.0)
    for t, (o1, o2) in _feed([fast, dense], seed, n, m):
        np.testing.assert_array_equal(o1[0], o2[0], err_msg=f"changed, t={t}")
        np.testing.assert_array_equal(o1[1], o2[1], err_msg=f"outlier, t={t}")
        np.testing.assert_allclose(fast.state, dense.state, rtol=0, atol=1e-9)
        np.testing.assert_allclose(fast.covariance(), dense.P, rtol=0, atol=1e-9)
        np.testing.assert_allclose(fast.level_var(), np.diag(dense.P)[:n], rtol=1e-9)
    assert fast.changes == dense.changes > 0


@pytest.mark.parametrize("seed, n, m", [(0, 12, 2), (2, 30, 3)])
def test_structured_kalman_stays_next_to_the_dense_filter_with_coefficient_drift(seed, n, m):
    # with q_coef > 0 the levels are no longer independent given c; the structured filter keeps
    # every level variance and level-coefficient covariance and drops cross terms of order q_coef
    from hetplace.balance._estimators import SignalKalman

    from .reference import DenseSignalKalman

    fast, dense = SignalKalman(n, m), DenseSignalKalman(n, m)
    for t, (o1, o2) in _feed([fast, dense], seed, n, m):
        np.testing.assert_array_equal(o1[0], o2[0], err_msg=f"changed, t={t}")
        np.testing.assert_allclose(fast.state, dense.state, rtol=0, atol=1e-4)
        np.testing.assert_allclose(fast.covariance(), dense.P, rtol=0, atol=1e-4)


def test_structured_kalman_gives_the_dense_filters_batch_sizes_on_seeded_scenarios(monkeypatch):
    from hetplace.balance import _balancer, make_scenario, simulate

    from .reference import DenseSignalKalman

    figures = {}
    for kind, policy in (("cpu", "cpu"), ("gpu", "gpu"), ("fl", "fl")):
        for seed in (1001, 1002):
            sc = make_scenario(kind, seed=seed, iterations=200)
            fast = simulate(policy, sc, compare=False)
            with monkeypatch.context() as mp:
                mp.setattr(_balancer, "SignalKalman", DenseSignalKalman)
                slow = simulate(policy, sc, compare=False)
            same = np.mean(np.all(fast.batch_sizes == slow.batch_sizes, axis=1))
            figures[kind, seed] = (fast.efficiency, slow.efficiency, same)
            assert same >= 0.9, figures
            assert abs(fast.efficiency - slow.efficiency) < 2e-3, figures
