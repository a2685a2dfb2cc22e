"""Problem(tenant=, quota=): validation, feasibility, the checker and round trips (docs/model.md §1.7)."""

import copy
import math
import pickle

import numpy as np
import pytest

import hetplace as hp
from hetplace._quota import quota_usage, quota_violation


def _problem(**kw):
    args = dict(throughput=[[1, 2], [2, 1], [3, 3]], type_counts=[2, 2], batch=[8, 8, 8], iterations=[100, 100, 100])
    args.update(kw)
    return hp.Problem(**args)


def test_attributes_and_binding():
    p = _problem(tenant=[0, 0, 1], quota=[[1, 5], [2, 0]])
    assert p.n_tenants == 2 and p.has_quota
    np.testing.assert_array_equal(p.quota_cap, [[1, 2], [2, 0]])
    assert p.tenant.tolist() == [0, 0, 1]
    assert not p.tenant.flags.writeable and not p.quota.flags.writeable
    loose = _problem(tenant=[0, 0, 1], quota=[[2, math.inf], [5, 2]])
    assert not loose.has_quota  # no quota below what the tenant's jobs could take
    assert not _problem(tenant=[0, -1, 0]).has_quota and _problem(tenant=[0, -1, 0]).n_tenants == 1
    assert _problem().tenant is None and not _problem().has_quota
    # a quota on a type none of the tenant's jobs can use does not bind
    assert not _problem(throughput=[[1, 0], [2, 1], [3, 3]], tenant=[0, 1, 1], quota=[[2, 0], [math.inf] * 2]).has_quota


def test_checker_rejects_over_quota():
    p = _problem(tenant=[0, 0, 1], quota=[[1, 5], [2, 0]])
    assert hp.is_feasible(p, [2, 0, 1, -1])
    assert not hp.is_feasible(p, [1, 2, 0, 2])  # tenant 1 holds a type-1 worker, quota 0
    with pytest.raises(hp.InvalidPlacementError, match=r"tenant 1's jobs hold 1 workers of type type1.*quota\[1, 1\] = 0"):
        hp.evaluate(p, [1, 2, 0, 2])
    assert quota_violation(p, np.array([1, 2, 0, 2])) == (1, 1, 1, 0.0)
    assert quota_violation(p, np.array([0, 1, 2, 2]))[:3] == (0, 0, 2)
    np.testing.assert_array_equal(quota_usage(p.tenant, 2, np.array([2, 0, 1, -1]), p.worker_type, 2), [[1, 1], [1, 0]])


@pytest.mark.parametrize("kw,match", [
    (dict(quota=[[1, 1]]), "quota is given but tenant is not"),
    (dict(tenant=[0, 0, 2], quota=[[1, 1], [1, 1]]), r"tenant\[2\] = 2"),
    (dict(tenant=[0, 0, -2], quota=[[1, 1]]), r"tenant\[2\] = -2"),
    (dict(tenant=[0, 0, 0.5], quota=[[1, 1]]), r"tenant\[2\] = 0.5"),
    (dict(tenant=[0, 0], quota=[[1, 1]]), r"one entry per job, shape \(3,\)"),
    (dict(tenant=[0, 0, 0], quota=[[1, 1, 1]]), r"shape \(n_tenants, 2\)"),
    (dict(tenant=[0, 0, 0], quota=[[-1, 1]]), r"quota\[0, 0\] = -1"),
    (dict(tenant=[0, 0, 0], quota=[[1.5, 1]]), r"quota\[0, 0\] = 1.5"),
    (dict(tenant=[0, 0, 0], quota=[[math.nan, 1]]), r"quota\[0, 0\] = nan"),
    (dict(tenant=[0, 0, 0], quota=[[1, 1]]), "no placement gives every job its min_workers within the quotas"),
    (dict(tenant=[0, 0, 0], quota=[[0, 0]]), "leaves it only 0 usable workers"),
    (dict(tenant=[0, 0, 1], quota=[[2, 2], [1, 0]], min_workers=[1, 1, 2]), "leaves it only 1 usable"),
])
def test_validation_names_the_problem(kw, match):
    with pytest.raises(hp.InvalidProblemError, match=match):
        _problem(**kw)


def test_round_trips_keep_quotas():
    p = _problem(tenant=[0, -1, 1], quota=[[1, math.inf], [2, 0]], weight=[1, 2, 3], current=[0, 1, 2, -1],
                 restart_time=[5, 5, 5])
    d = p.to_dict()
    assert d["quota"] == [[1.0, "inf"], [2.0, 0.0]]
    q = hp.Problem.from_dict(d)
    assert q.to_dict() == d and q.has_quota == p.has_quota
    for r in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), p.with_worker_speed([1, 0.5, 1, 1])):
        assert r.tenant.tolist() == p.tenant.tolist() and r.quota.tolist() == p.quota.tolist()
    twin = p.objective_problem
    assert twin.tenant.tolist() == p.tenant.tolist() and twin.has_quota
    sub = p._restrict([0, 2], np.array([0, 1, 2]), quota=np.array([[1, 1], [1, 0]], dtype=float))
    assert sub.tenant.tolist() == [0, 1] and sub.quota.tolist() == [[1, 1], [1, 0]]


def test_trusted_equals_constructor():
    from hetplace._problem_iv import _problem_iv, _topology_iv

    args = ([[1, 2], [2, 1], [3, 3]], [2, 2], [8, 8, 8], [100, 100, 100])
    kw = dict(grad_bytes=[1e6, 0, 2e6], bandwidth=1e9, min_workers=[1, 1, 1], max_workers=[2, 8, 3],
              current=[0, -1, 2, 1], restart_time=[1.0, 2.0, 3.0])
    iv = _problem_iv(*args, kw["grad_bytes"], kw["bandwidth"], None, None, None, kw["min_workers"],
                     kw["max_workers"], None, kw["current"], kw["restart_time"])
    topo = _topology_iv([0, 0, 1, 1], 1e11, None, None, 4)
    direct = hp.Problem(*args, **kw, node=[0, 0, 1, 1], node_bandwidth=1e11, tenant=[0, 0, 1], quota=[[3, 1], [4, 4]])
    trusted = hp.Problem._trusted(iv, topo, tenant=np.array([0, 0, 1]), quota=np.array([[3, 1], [4, 4]], float))
    assert trusted.to_dict() == direct.to_dict() and trusted.has_quota == direct.has_quota
    assert repr(trusted) == repr(direct)
