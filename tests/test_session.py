"""hetplace.Session: state, decisions, reasons, changes, quotas, restarts and threads (docs/session.md)."""

import json
import math
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import hetplace as hp
from hetplace.session import ACTIONS, REASON_CODES, Session, SessionError
from hetplace._quota import hall_fits, quota_counts, quota_flow

TYPES = ("k80", "p100", "v100")


# ------------------------------------------------------------------ a model of the session, kept by the test
class Model:
    """What the test knows of a session: every job's arguments, the running assignment, the down nodes."""

    def __init__(self, node_workers, quotas):
        self.jobs = {}
        self.running = {}
        self.down = set()
        self.node_workers = node_workers
        self.quotas = quotas

    def problem(self, decision_jobs, type_counts, bandwidth, topology):
        """The Problem of ``decision_jobs`` built directly (not through the session)."""
        ids = list(decision_jobs)
        K = sum(type_counts)
        avail = np.ones(K, dtype=bool)
        for v in self.down:
            avail[list(self.node_workers[v])] = False
        current = np.full(K, -1, dtype=np.int64)
        for i, j in enumerate(ids):
            for k in self.running.get(j, ()):
                current[k] = i
        rows = [self.jobs[j] for j in ids]
        thr = [[r["throughput"].get(t, 0.0) if (r["types"] is None or t in r["types"]) else 0.0
                for t in TYPES[:len(type_counts)]] for r in rows]
        kw = {}
        if self.quotas is not None:
            names = list(self.quotas)
            kw["tenant"] = [names.index(r["tenant"]) if r["tenant"] in names else -1 for r in rows]
            kw["quota"] = [[self.quotas[t].get(g, math.inf) for g in TYPES[:len(type_counts)]] for t in names]
        if topology is not None:
            kw.update(topology)
        weights = [r["weight"] for r in rows]
        names = [str(j) for j in ids]
        names = names if len(set(names)) == len(names) else [repr(j) for j in ids]
        return hp.Problem(
            thr, type_counts, [r["batch"] for r in rows], [r["iterations"] for r in rows],
            grad_bytes=[r["grad_bytes"] for r in rows], bandwidth=bandwidth,
            job_names=names, type_names=list(TYPES[:len(type_counts)]),
            min_workers=[r["min_workers"] for r in rows],
            max_workers=[r["max_workers"] or r["batch"] for r in rows],
            available=None if avail.all() else avail,
            current=current if (current >= 0).any() else None,
            restart_time=[r["restart_time"] for r in rows] if (current >= 0).any() else None,
            weight=None if all(w == 1.0 for w in weights) else weights, **kw,
        )


def _problem_of(self, other, ids, counts, topology):
    """``other``'s Problem of ``ids`` under this model's quotas (None: without quotas), nobody running."""
    self.jobs, self.down = other.jobs, other.down
    return self.problem(ids, counts, 1.25e9, topology)


Model.problem_of = _problem_of


def _job_args(draw, G, tenants):
    types = TYPES[:G]
    thr = {}
    for t in types:
        if draw(st.booleans()) or not thr:
            thr[t] = draw(st.sampled_from([10.0, 25.0, 40.0, 100.0]))
    lo = draw(st.integers(1, 3))
    return dict(
        throughput=thr, batch=draw(st.sampled_from([4, 8, 64])), iterations=float(draw(st.integers(10, 2000))),
        grad_bytes=draw(st.sampled_from([0.0, 1e7, 1e8])), min_workers=lo,
        max_workers=draw(st.sampled_from([None, lo, lo + 2])),
        types=None if draw(st.booleans()) else list(draw(st.sets(st.sampled_from(types), min_size=1))),
        tenant=draw(st.sampled_from([None] + 2 * list(tenants))),
        weight=draw(st.sampled_from([1.0, 1.0, 0.5, 3.0])),
        restart_time=draw(st.sampled_from([0.0, 30.0])),
    )


@st.composite
def scenarios(draw):
    G = draw(st.integers(1, 3))
    nodes = draw(st.booleans())
    if nodes:
        cluster = {t: draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)) for t in TYPES[:G]}
    else:
        cluster = {t: draw(st.integers(1, 5)) for t in TYPES[:G]}
    quotas = None
    if draw(st.booleans()):
        quotas = {"a": {t: draw(st.integers(0, 3)) for t in TYPES[:G] if draw(st.booleans())},
                  "b": {t: draw(st.integers(1, 4)) for t in TYPES[:G] if draw(st.booleans())}}
    events = draw(st.lists(st.tuples(st.sampled_from(["submit", "submit", "submit", "progress", "finish", "down",
                                                      "up", "decide", "decide"]), st.integers(0, 10**6)),
                           min_size=4, max_size=30))
    args = [_job_args(draw, G, () if quotas is None else ("a", "b")) for _ in events]
    return cluster, quotas, events, args


def _session(cluster, quotas, policy="smp"):
    return Session(cluster, policy, quotas=quotas, seed=7, bandwidth=1.25e9,
                   node_bandwidth=1e11 if isinstance(next(iter(cluster.values())), list) else None)


def _topology(cluster):
    if not isinstance(next(iter(cluster.values())), list):
        return None, [(k,) for k in range(sum(cluster.values()))]
    sizes = [c for t in cluster for c in cluster[t]]
    node = np.repeat(np.arange(len(sizes)), sizes)
    out, start = [], 0
    for c in sizes:
        out.append(tuple(range(start, start + c)))
        start += c
    return {"node": node, "node_bandwidth": np.full(len(sizes), 1e11)}, out


def _check_decision(s, model, d, cluster, topology):
    live = set(model.jobs)
    assert set(d.assignment) | set(d.pending) == live
    assert not set(d.assignment) & set(d.pending)
    for r in d.pending.values():
        assert r.code in REASON_CODES and r.message
    for c in d.changes:
        assert c.action in ACTIONS
    counts = [sum(v) if isinstance(v, list) else v for v in cluster.values()]
    for r in d.pending.values():
        event(f"pending {r.code}")
    for c in d.changes:
        event(f"change {c.action}")
    for j, r in d.pending.items():  # each reason is true: the job does not fit beside the admitted ones
        if r.code in ("capacity", "quota"):
            with pytest.raises(hp.InvalidProblemError):
                model.problem(list(d.jobs) + [j], counts, 1.25e9, topology)
        if r.code == "capacity" and model.quotas is not None:
            # capacity: the job does not fit even with its own tenant's quotas lifted (a "quota" job did fit so
            # when admission reached it, before jobs after it in priority took GPUs: tests of that code below)
            tenant = model.jobs[j]["tenant"]
            lifted = {t: ({} if t == tenant else q) for t, q in model.quotas.items()}
            with pytest.raises(hp.InvalidProblemError):
                Model(model.node_workers, lifted).problem_of(model, list(d.jobs) + [j], counts, topology)
        if r.code == "infeasible":
            with pytest.raises(hp.InvalidProblemError):
                Model(model.node_workers, None).problem_of(model, [j], counts, topology)
    if d.problem is None:
        assert not d.assignment
        return
    direct = model.problem(d.jobs, counts, 1.25e9, topology)
    assert d.problem.to_dict() == direct.to_dict()
    ref = hp.place(direct, method="smp", seed=s.seed)
    np.testing.assert_array_equal(d.placement.worker_job, ref.worker_job)
    assert hp.is_feasible(direct, d.placement.worker_job)
    if model.quotas is not None:  # quotas, counted from the assignment by the test
        used = {}
        wt = np.repeat(np.arange(len(counts)), counts)
        for j, ws in d.assignment.items():
            t = model.jobs[j]["tenant"]
            for k in ws:
                used[(t, wt[k])] = used.get((t, wt[k]), 0) + 1
        for (t, g), n in used.items():
            if t in model.quotas:
                assert n <= model.quotas[t].get(TYPES[g], math.inf)


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=100, deadline=None, suppress_health_check=_HEALTH)
@given(scenarios())
def test_state_equals_direct_problem_and_place(sc):
    """After any event sequence: problem() is the Problem built directly, decide() is place(problem(), 'smp'),
    quotas hold, each pending job has one true reason, and a restored session decides bit for bit the same."""
    _run_scenario(sc)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=_HEALTH)
@given(scenarios())
def test_state_campaign(sc):
    """The same property on 1,500 event sequences (python -m pytest -m slow)."""
    _run_scenario(sc)


def _run_scenario(sc):
    cluster, quotas, events, args = sc
    topology, node_workers = _topology(cluster)
    s = _session(cluster, quotas)
    model = Model(node_workers, quotas)
    nid = 0
    for (kind, x), a in zip(events, args):
        live = list(model.jobs)
        if kind == "submit":
            try:
                s.submit(nid, **a)
            except SessionError:
                usable = [t for t, r in a["throughput"].items() if r > 0 and (a["types"] is None or t in a["types"])]
                assert a["min_workers"] > a["batch"] or not usable
                continue
            model.jobs[nid] = a
            nid += 1
        elif kind == "progress" and live:
            j = live[x % len(live)]
            s.progress(j, 1.0 + x % 97)
            model.jobs[j] = dict(model.jobs[j], iterations=1.0 + x % 97)
        elif kind == "finish" and live:
            j = live[x % len(live)]
            s.finish(j)
            del model.jobs[j]
            model.running.pop(j, None)
        elif kind in ("down", "up"):
            v = x % s.n_nodes
            if kind == "down":
                hit = s.node_down(v)
                model.down.add(v)
                for j in hit:
                    assert set(model.running.pop(j)) & set(node_workers[v])
                assert not any(set(ws) & set(node_workers[v]) for ws in model.running.values())
            else:
                s.node_up(v)
                model.down.discard(v)
        elif kind == "decide":
            d = s.decide()
            _check_decision(s, model, d, cluster, topology)
            model.running = dict(d.assignment)
        assert s.running == model.running
    restored = Session.from_json(s.to_json())
    a, b = s.decide(apply=False), restored.decide(apply=False)
    _check_decision(s, model, a, cluster, topology)
    assert a.assignment == b.assignment and a.changes == b.changes and a.pending == b.pending
    assert restored.to_json() == s.to_json()


# ------------------------------------------------------------------ reasons
def test_reason_infeasible():
    s = Session({"k80": 2, "v100": 4})
    s.submit("big", throughput={"k80": 10}, batch=64, iterations=100, min_workers=3)
    s.submit("ok", throughput={"k80": 10, "v100": 40}, batch=64, iterations=100)
    d = s.decide()
    r = d.pending["big"]
    assert r.code == "infeasible" and r.data["usable_gpus"] == 2 and r.data["min_workers"] == 3
    assert "big" in r.message and "k80" in r.message
    assert set(d.assignment) == {"ok"}


def test_reason_infeasible_after_node_down():
    s = Session({"v100": [2, 2]})
    s.submit("j", throughput={"v100": 10}, batch=64, iterations=100, min_workers=3)
    assert s.decide().assignment["j"]
    assert s.node_down(1) == ["j"]
    d = s.decide()
    assert d.pending["j"].code == "infeasible"
    s.node_up(1)
    assert s.decide().changes[0].action == "start"


def test_reason_quota_static_and_this_round():
    s = Session({"k80": 4, "v100": 4}, quotas={"a": {"v100": 2, "k80": 0}, "b": {}}, policy="greedy")
    s.submit("tight", throughput={"v100": 100}, batch=64, iterations=100, min_workers=3, tenant="a")
    s.submit("a1", throughput={"v100": 100}, batch=64, iterations=100, min_workers=2, tenant="a")
    s.submit("a2", throughput={"v100": 100}, batch=64, iterations=100, min_workers=1, tenant="a")
    s.submit("b1", throughput={"v100": 100, "k80": 10}, batch=64, iterations=100, tenant="b")
    d = s.decide()
    assert d.pending["tight"].code == "quota" and d.pending["tight"].data["usable_gpus"] == 2
    assert d.pending["a2"].code == "quota"  # a1 holds the tenant's two v100s
    assert d.pending["a2"].data["used"] == {"v100": 2}
    assert set(d.assignment) == {"a1", "b1"}


def test_reason_capacity_low_weight_behind_better_uses():
    s = Session({"v100": 4})
    s.submit("low", throughput={"v100": 100}, batch=64, iterations=1000, min_workers=4, weight=0.01)
    s.submit("high", throughput={"v100": 100}, batch=64, iterations=1000, min_workers=4, weight=10.0)
    d = s.decide()
    assert set(d.assignment) == {"high"}
    r = d.pending["low"]
    assert r.code == "capacity" and r.data["free_gpus"] == 0 and r.data["min_workers"] == 4
    assert r.data["best_jct"] > 0
    s.finish("high")
    assert set(s.decide().assignment) == {"low"}


def test_running_jobs_are_not_preempted_by_admission():
    s = Session({"v100": 4})
    s.submit("first", throughput={"v100": 100}, batch=64, iterations=10**5, min_workers=4)
    s.decide()
    s.submit("short", throughput={"v100": 100}, batch=64, iterations=10, min_workers=4)
    d = s.decide()
    assert set(d.assignment) == {"first"} and d.pending["short"].code == "capacity" and not d.changes


# ------------------------------------------------------------------ changes
def test_changes_start_resize_migrate_stop():
    s = Session({"k80": 2, "v100": 2}, bandwidth=math.inf)
    s.submit("a", throughput={"k80": 10, "v100": 40}, batch=64, iterations=1000)
    d = s.decide()
    assert [c.action for c in d.changes] == ["start"] and d.assignment["a"] == (0, 1, 2, 3)
    s.submit("b", throughput={"k80": 10, "v100": 40}, batch=64, iterations=1000)
    d = s.decide()
    acts = {c.job_id: c for c in d.changes}
    assert acts["b"].action == "start" and acts["a"].action == "resize"
    assert acts["a"].before == (0, 1, 2, 3) and set(acts["a"].after) == set(d.assignment["a"])
    # a preview changes nothing
    before = s.to_json()
    assert s.decide(apply=False).changes == []
    assert s.to_json() == before


def test_change_actions_are_classified():
    from hetplace.session import Change

    s = Session({"v100": 4})
    s.submit("a", throughput={"v100": 40}, batch=64, iterations=1000, min_workers=2, max_workers=2)
    s.decide()
    w = s.running["a"]
    s.node_down(w[0])  # a flat cluster: every worker is a node
    d = s.decide()
    assert d.changes == [Change("a", "start", (), d.assignment["a"])]
    assert not set(d.assignment["a"]) & {w[0]}


# ------------------------------------------------------------------ validation
BAD_EVENTS = [
    (dict(job_id=True), "job_id"),
    (dict(throughput={"h100": 1.0}), "h100"),
    (dict(throughput={"v100": -1.0}), "throughput"),
    (dict(throughput={"v100": math.nan}), "throughput"),
    (dict(throughput={}), "throughput"),
    (dict(batch=0), "batch"),
    (dict(batch=2.5), "batch"),
    (dict(iterations=math.inf), "iterations"),
    (dict(iterations=0), "iterations"),
    (dict(grad_bytes=-1), "grad_bytes"),
    (dict(min_workers=3, max_workers=2), "min_workers"),
    (dict(min_workers=100), "batch"),
    (dict(tenant="nobody"), "tenant"),
    (dict(weight=0.0), "weight"),
    (dict(weight=1e9), "weight"),
    (dict(throughput={"v100": 1e31}), "throughput"),
    (dict(throughput={"v100": 1e-31}), "throughput"),
    (dict(grad_bytes=1e40), "grad_bytes"),
    (dict(iterations=1e-20), "iterations"),
    (dict(batch=2**60), "batch"),
    (dict(iterations="10"), "iterations"),
    (dict(min_workers=1.5), "min_workers"),
    (dict(restart_time=-2.0), "restart_time"),
    (dict(types=["h100"]), "types"),
    (dict(types="v100"), "types"),
]


@pytest.mark.parametrize("change,word", BAD_EVENTS)
def test_bad_submit_names_field_and_changes_nothing(change, word):
    s = Session({"v100": 4, "k80": 2}, quotas={"a": {"v100": 2}})
    s.submit("x", throughput={"v100": 10}, batch=64, iterations=10, tenant="a")
    before = s.to_json()
    args = dict(job_id="y", throughput={"v100": 10.0}, batch=64, iterations=10.0)
    args.update(change)
    jid = args.pop("job_id")
    with pytest.raises(SessionError, match=word) as info:
        s.submit(jid, **args)
    assert isinstance(info.value, hp.HetplaceError) and isinstance(info.value, ValueError)
    assert s.to_json() == before


def test_bad_events_name_the_problem():
    s = Session({"v100": [2, 2]})
    s.submit("x", throughput={"v100": 10}, batch=64, iterations=10)
    before = s.to_json()
    with pytest.raises(SessionError, match="already submitted"):
        s.submit("x", throughput={"v100": 10}, batch=64, iterations=10)
    with pytest.raises(SessionError, match="'nope' is not submitted"):
        s.finish("nope")
    with pytest.raises(SessionError, match="not submitted"):
        s.progress("nope", 3)
    with pytest.raises(SessionError, match="iterations_left"):
        s.progress("x", -1)
    with pytest.raises(SessionError, match=r"node must be a node index in \[0, 1\]"):
        s.node_down(2)
    with pytest.raises(SessionError, match="node"):
        s.node_up(True)
    with pytest.raises(SessionError, match="apply"):
        s.decide(apply="yes")
    assert s.to_json() == before


def test_bad_session_arguments():
    with pytest.raises(SessionError, match="policy"):
        Session({"v100": 2}, policy="fastest")
    with pytest.raises(SessionError, match="budget_s"):
        Session({"v100": 2}, budget_s=0)
    with pytest.raises(SessionError, match="h100"):
        Session({"v100": 2}, quotas={"a": {"h100": 1}})
    with pytest.raises(SessionError, match="whole number"):
        Session({"v100": 2}, quotas={"a": {"v100": 1.5}})
    with pytest.raises(SessionError, match="options"):
        Session({"v100": 2}, options={"solver": "scip"})
    with pytest.raises(SessionError, match="cluster"):
        Session([4, 4])
    with pytest.raises(SessionError, match="mixes"):
        Session({"v100": [2], "k80": 2})
    with pytest.raises(SessionError, match="JSON"):
        Session.from_json("{nope")


# ------------------------------------------------------------------ clusters
def test_cluster_forms(tmp_path):
    from hetplace import io

    path = tmp_path / "c.toml"
    path.write_text('[cluster]\nbandwidth = "25Gbit/s"\nrack_bandwidth = "100Gbit/s"\n[[nodes]]\ncount = 2\n'
                    'type = "v100"\ngpus = 4\nbandwidth = "300GB/s"\nrack = "a"\n[[nodes]]\ntype = "k80"\n'
                    'gpus = 2\nbandwidth = "10GB/s"\nrack = "b"\n')
    for cl in (str(path), path, io.read_cluster(path)):
        s = Session(cl)
        assert s.n_nodes == 3 and s.n_workers == 10 and s.type_names == ["v100", "k80"]
        s.submit(1, throughput={"v100": 100, "k80": 20}, batch=64, iterations=100, grad_bytes=1e8)
        p = s.problem()
        assert p.topology is not None and p.topology.rack is not None
        assert s.decide().assignment[1]
    s = Session({"v100": [4, 4], "k80": [2]}, bandwidth=1e9, node_bandwidth=1e11)
    assert s.n_nodes == 3 and [s.node_of(k) for k in (0, 4, 8)] == [0, 1, 2]


def test_json_is_plain_and_keeps_id_types():
    s = Session({"v100": 4}, quotas={"a": {"v100": math.inf}})
    s.submit(1, throughput={"v100": 10}, batch=64, iterations=10, tenant="a")
    with pytest.raises(SessionError, match="same key '1'"):  # a decision's JSON could not tell the two apart
        s.submit("1", throughput={"v100": 10}, batch=64, iterations=10)
    s.submit("01", throughput={"v100": 10}, batch=64, iterations=10)
    s.decide()
    text = s.to_json()
    json.loads(text)  # standard JSON: no NaN or Infinity
    assert "Infinity" not in text
    r = Session.from_json(text)
    assert r.jobs == [1, "01"] and r.running == s.running and r.quotas == s.quotas


# ------------------------------------------------------------------ policies and budget
@pytest.mark.parametrize("policy", ["greedy", "exact", "keep-greedy", "equal", "random", "auto"])
def test_other_policies(policy):
    s = Session({"k80": 2, "v100": 2}, policy=policy)
    s.submit("a", throughput={"k80": 10, "v100": 40}, batch=64, iterations=1000)
    s.submit("b", throughput={"k80": 30, "v100": 40}, batch=64, iterations=500)
    d = s.decide()
    assert set(d.assignment) == {"a", "b"} and d.status == "ok"
    assert hp.is_feasible(d.problem, d.placement.worker_job)


def test_budget_never_worse_than_keeping():
    s = Session({"k80": 8, "v100": 8}, budget_s=1e-6)  # too short for SMP: the fallback
    for i in range(6):
        s.submit(i, throughput={"k80": 10 + i, "v100": 40}, batch=64, iterations=1000 * (i + 1), restart_time=10)
    d = s.decide()
    assert d.status == "budget" and hp.is_feasible(d.problem, d.placement.worker_job)
    keep = s.decide(apply=False)
    assert keep.status == "budget" and keep.changes == []  # keeping what runs is the fallback
    full = Session.from_json(s.to_json().replace('"budget_s": 1e-06', '"budget_s": null'))
    assert full.decide(apply=False).mean_jct <= keep.mean_jct + 1e-9


# ------------------------------------------------------------------ threads
def test_events_from_threads_while_deciding():
    s = Session({"k80": 16, "v100": 16}, bandwidth=1.25e9)
    errors = []

    def submitter(base):
        try:
            for i in range(40):
                s.submit(base + i, throughput={"k80": 10, "v100": 40}, batch=64, iterations=100 + i)
                if i % 3 == 0:
                    s.finish(base + i)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def decider():
        try:
            for _ in range(5):
                d = s.decide()
                assert set(d.assignment) <= set(d.jobs)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=submitter, args=(b,)) for b in (0, 1000)] + [threading.Thread(target=decider)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(s.jobs) == 2 * (40 - 14)
    for j, ws in s.running.items():
        assert j in s.jobs
    d = s.decide()
    assert set(d.assignment) | set(d.pending) == set(s.jobs)


# ------------------------------------------------------------------ the flow behind admission and validation
def test_quota_flow_against_linear_programme():
    """Feasibility of minima within capacities and quotas: the max-flow against scipy's LP (integral)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(1)
    for _ in range(400):
        S, G, T = rng.integers(1, 6), rng.integers(1, 4), rng.integers(1, 3)
        allowed = rng.random((S, G)) < 0.7
        cap = rng.integers(0, 5, G)
        dem = rng.integers(1, 4, S)
        ten = rng.integers(-1, T, S)
        q = rng.integers(0, 5, (T, G))
        n = S * G
        eq = np.zeros((S, n))
        for i in range(S):
            eq[i, i * G:(i + 1) * G] = 1
        rows, rhs = [], []
        for g in range(G):
            r = np.zeros(n)
            r[[i * G + g for i in range(S)]] = 1
            rows.append(r)
            rhs.append(cap[g])
        for t in range(T):
            for g in range(G):
                r = np.zeros(n)
                r[[i * G + g for i in range(S) if ten[i] == t]] = 1
                rows.append(r)
                rhs.append(q[t, g])
        bounds = [(0, None if allowed[i, g] else 0) for i in range(S) for g in range(G)]
        lp = linprog(np.zeros(n), A_ub=np.array(rows), b_ub=rhs, A_eq=eq, b_eq=dem, bounds=bounds)
        assert (lp.status == 0) == (quota_flow(allowed, cap, dem, ten, q) is None)


def test_budget_cuts_a_long_decision():
    """A budget far below SMP's time: the decision returns near it, feasible, status "budget"."""
    import time

    s = Session({"k80": 256, "p100": 256, "v100": 512}, bandwidth=1.25e9, budget_s=0.01)
    rng = np.random.default_rng(0)
    for i in range(128):
        r = float(rng.uniform(10, 100))
        s.submit(i, throughput={"k80": r, "p100": 2 * r, "v100": 4 * r}, batch=256, iterations=1e4, grad_bytes=1e8)
    s.decide()
    t = time.perf_counter()
    d = s.decide(apply=False)
    assert time.perf_counter() - t < 5.0  # generous: a timing bound belongs in benchmarks/bench_session.py
    assert hp.is_feasible(d.problem, d.placement.worker_job)


def test_smp_time_limit_returns_a_priced_placement():
    from hetplace.instances import gavel_instance
    from hetplace.data import gavel_path

    p = gavel_instance(7, 4096, 256, gavel_path())
    pl = hp.place(p, method="smp", seed=0, time_limit=0.001)
    assert pl.info["time_limit_hit"] and hp.evaluate(p, pl.worker_job).mean_jct == pl.mean_jct
    with pytest.raises(hp.InvalidOptionError, match="time_limit"):
        hp.place(p, method="smp", time_limit=0)


def test_hall_condition_and_counts_against_the_flow():
    """Admission's fast check (Gale's condition over type subsets) and quota_counts against quota_flow."""
    rng = np.random.default_rng(5)
    none_t = np.zeros((0, 4), dtype=np.int64)
    for _ in range(2000):
        S, G = int(rng.integers(1, 8)), int(rng.integers(1, 5))
        allowed = rng.random((S, G)) < 0.6
        allowed[np.arange(S), rng.integers(0, G, S)] = True
        cap, dem = rng.integers(0, 6, G), rng.integers(1, 5, S)
        mask = allowed.astype(np.int64) @ (np.int64(1) << np.arange(G, dtype=np.int64))
        free = quota_flow(allowed, cap, dem, np.full(S, -1), none_t[:, :G]) is None
        assert hall_fits(mask, dem, cap) == free
        counts = quota_counts(allowed, cap, dem, np.full(S, -1), none_t[:, :G])
        assert (counts is None) == (not free)
        if counts is not None:
            assert (counts.sum(axis=1) == dem).all() and (counts.sum(axis=0) <= cap).all()
            assert not (counts[~allowed]).any()


# ------------------------------------------------------------------ batches of events (Session.apply)
def _event_of(kind, x, args, ids):
    """A dict event of ``apply`` from the scenarios' (kind, number) pairs; may be a bad one."""
    if kind == "submit":
        return {"type": "submit", "job": f"j{x % 12}", **args}
    if kind == "progress":
        return {"type": "progress", "job": f"j{x % 12}", "iterations_left": [5.0, 0.0, -1.0][x % 3]}
    if kind == "finish":
        return {"type": "finish", "job": f"j{x % 12}"}
    return {"type": "node_down" if kind == "down" else "node_up", "node": x % 9}


@settings(max_examples=60, deadline=None, suppress_health_check=_HEALTH)
@given(scenarios(), st.integers(1, 6))
def test_apply_is_all_or_none_and_equals_the_event_methods(sc, size):
    """A batch is applied whole, as the event methods one by one would apply it, or not at all."""
    cluster, quotas, events, args = sc
    batched, single = _session(cluster, quotas), _session(cluster, quotas)
    evs = [(_event_of(k, x, a, None), k) for (k, x), a in zip(events, args) if k != "decide"]
    for start in range(0, len(evs), size):
        batch = [e for e, _ in evs[start:start + size]]
        before = batched.to_json()
        # the reference: the methods, one by one, on a copy; any error means the batch is refused
        trial = Session.from_json(single.to_json())
        ok = True
        for e in batch:
            kw = {k: v for k, v in e.items() if k not in ("type", "job", "node")}
            try:
                if e["type"] == "submit":
                    trial.submit(e["job"], **kw)
                elif e["type"] == "progress":
                    trial.progress(e["job"], **kw)
                elif e["type"] == "finish":
                    trial.finish(e["job"])
                else:
                    getattr(trial, e["type"])(e["node"])
            except SessionError:
                ok = False
                break
        if ok:
            batched.apply(batch)
            single = trial
            event("batch applied")
        else:
            with pytest.raises(SessionError, match=r"^events\[\d+\]") as info:
                batched.apply(batch)
            assert info.value.field.startswith("events[")
            assert batched.to_json() == before  # nothing of it applied
            event("batch refused")
        assert json.loads(batched.to_json()) == json.loads(single.to_json())
        if start % (2 * size) == 0:  # decisions between batches keep the two equal
            a, b = batched.decide(), single.decide()
            assert a.assignment == b.assignment


def test_apply_events_see_the_batch_before_them():
    s = Session({"v100": 4})
    thr = {"v100": 10.0}
    s.apply([{"type": "submit", "job": "a", "throughput": thr, "batch": 8, "iterations": 10},
             {"type": "progress", "job": "a", "iterations_left": 3},
             {"type": "finish", "job": "a"},
             {"type": "submit", "job": "a", "throughput": thr, "batch": 8, "iterations": 7}])
    assert s.jobs == ["a"] and json.loads(s.to_json())["jobs"][0]["iterations"] == 7
    s.decide()
    assert s.apply([{"type": "node_down", "node": s.running["a"][0]}, {"type": "node_up", "node": 0}]) == [["a"], None]
    for bad, field in [([{"type": "finish", "job": "a"}, {"type": "finish", "job": "a"}], "events[1].job"),
                       ([{"type": "submit", "job": "b", "throughput": thr, "batch": 8}], "events[0].iterations"),
                       ([{"type": "progress", "job": "a", "iterations_left": 1, "extra": 1}], "events[0].extra"),
                       ([{"job": "a"}], "events[0].type"), ([3], "events[0]"),
                       ([{"type": "finish", "job": [1]}], "events[0].job"),
                       ([{"type": "node_up", "node": True}], "events[0].node")]:
        before = s.to_json()
        with pytest.raises(SessionError) as info:
            s.apply(bad)
        assert info.value.field == field, (bad, info.value.field)
        assert s.to_json() == before
    with pytest.raises(SessionError, match="list of event dicts"):
        s.apply({"type": "finish", "job": "a"})


def test_time_cap_changes_nothing_in_time_and_falls_back_when_cut():
    """A cap the policy beats gives the decision made without it; a cap it misses gives the fallback."""
    s = Session({"k80": 64, "p100": 64, "v100": 128}, bandwidth=1.25e9)
    rng = np.random.default_rng(3)
    for i in range(24):
        r = float(rng.uniform(10, 100))
        s.submit(i, throughput={"k80": r, "p100": 2 * r, "v100": 4 * r}, batch=256, iterations=1e4, grad_bytes=1e8)
    free = s.decide(apply=False)
    capped = s.decide(apply=False, time_cap=60.0)
    assert capped.status == "ok" and capped.assignment == free.assignment
    cut = s.decide(apply=False, time_cap=1e-9)
    assert cut.status == "budget" and hp.is_feasible(cut.problem, cut.placement.worker_job)
    s.budget_s = 60.0  # with a budget too, the smaller limit applies
    assert s.decide(apply=False, time_cap=1e-9).status == "budget"
    for bad in (0, -1.0, math.inf, "1", True):
        with pytest.raises(SessionError, match="time_cap"):
            s.decide(time_cap=bad)
