"""hetplace serve fuzzed: its OpenAPI schema (schemathesis), its links (a stateful run), raw bytes on every route,
and hypothesis sequences of event batches checked against an in-process Session (docs/service.md).

The property is the issue's: never a 5xx, never a crash; every reply conforms to /openapi.json (status code,
content type, body schema); a refused request changes nothing, in this session or another; and a session fed
batches, decisions, restarts and journal failures is, reply by reply, the in-process :class:`hetplace.Session`
fed what the server acknowledged.

Budgets (tests/hostile.py): the default run takes ``3 x HETPLACE_FUZZ_FAST`` examples per test (about 30 s on
2 cores in all); ``python -m pytest -m fuzz tests/test_service_fuzz.py`` takes ``10 x HETPLACE_FUZZ_EXAMPLES``
per schema test and ``3 x HETPLACE_FUZZ_EXAMPLES`` per sequence test.  The real server (a process, kill -9, load) is
tests/test_service_live.py.
"""

import copy
import json
import os
import random
import tempfile

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
schemathesis = pytest.importorskip("schemathesis")

# real servers and fuzzing: their own CI step (python -m pytest -m service), out of the fast run
pytestmark = pytest.mark.service

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance, negative_data_rejection, positive_data_acceptance, response_schema_conformance,
    status_code_conformance)

import hetplace as hp  # noqa: E402
from hetplace import io  # noqa: E402
from hetplace.errors import SessionError  # noqa: E402
from hetplace.service import create_app  # noqa: E402
from hetplace.service._schemas import MAX_INT_ID  # noqa: E402
from hetplace.service._app import _finite  # noqa: E402

from hostile import FAST_EXAMPLES, FUZZ_EXAMPLES  # noqa: E402

TOKEN = "fuzz-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NODES = {"cluster": {"bandwidth": "25Gbit/s"},
         "nodes": [{"type": "v100", "gpus": 2, "bandwidth": "300GB/s", "count": 2},
                   {"type": "k80", "gpus": 4, "bandwidth": "30GB/s"}]}  # 3 nodes, 8 GPUs
TYPES = {"types": [{"name": "v100", "count": 3}, {"name": "k80", "count": 2}]}
DECIDE_CAP = 30.0

SCHEMA_FAST, SCHEMA_FUZZ = 3 * FAST_EXAMPLES, 10 * FUZZ_EXAMPLES
SEQ_FAST, SEQ_FUZZ = 3 * FAST_EXAMPLES, 3 * FUZZ_EXAMPLES


def _budgets(fast, fuzz, seconds_per_example):
    return [pytest.param(fast, id="fast"),
            pytest.param(fuzz, id="fuzz", marks=[pytest.mark.fuzz,
                                                 pytest.mark.timeout(max(600, int(seconds_per_example * fuzz)))])]


SETTINGS = dict(deadline=None, database=None, derandomize=os.environ.get("CI") == "true",  # as tests/hostile.py
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
#: What every reply is held to (positive_data_acceptance is left out: a schema-valid request may still be
#: refused with 422 for what it means, e.g. a type the cluster does not have -- documented).
REPLY_CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
OPERATIONS = ["GET /healthz", "GET /metrics", "POST /v1/place", "GET /v1/sessions", "POST /v1/sessions",
              "POST /v1/sessions/{session_id}/events", "POST /v1/sessions/{session_id}/decide",
              "GET /v1/sessions/{session_id}", "DELETE /v1/sessions/{session_id}"]


def _submit(job, it=1000.0, **kw):
    return {"type": "submit", "job": job, "throughput": {"v100": 40.0, "k80": 10.0}, "batch": 64, "iterations": it,
            **kw}


def _test_client(app):
    from fastapi.testclient import TestClient

    return TestClient(app, raise_server_exceptions=False)


_OPENAPI = {}


def _schema(app):
    """schemathesis's schema of ``app``: /openapi.json as the first app served it (from_asgi takes 0.5 s, this
    a millisecond; the document is the same for every app of this version)."""
    if "doc" not in _OPENAPI:
        _OPENAPI["doc"] = _test_client(app).get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(copy.deepcopy(_OPENAPI["doc"]))
    schema.app = app
    schema.location = "/openapi.json"
    return schema


def _no_500_counted(client):
    text = client.get("/metrics", headers=AUTH).text
    assert 'hetplace_errors_total{status="500"}' not in text, "the service answered 500"


def _deeper(case):
    """Most generated clusters have no GPUs and most jobs only types no cluster has, so they stop at the first
    check: give most cases a real cluster and jobs of its types (the generated values otherwise kept)."""
    body = case.body
    if not isinstance(body, dict) or case.path not in ("/v1/place", "/v1/sessions"):
        return
    rng = random.Random(repr(body))
    if rng.random() < 0.25:
        return
    body = dict(body, cluster=rng.choice([NODES, TYPES]))
    for key in ("quotas", "options"):
        if rng.random() < 0.7:
            body.pop(key, None)
    if isinstance(body.get("jobs"), list):
        body["jobs"] = [dict(j, throughput={rng.choice(["v100", "k80"]): v for v in list(j["throughput"].values())
                                            or [rng.uniform(1, 100)]}) if isinstance(j, dict) else j
                        for j in body["jobs"]]
        for j in body["jobs"]:
            if isinstance(j, dict) and rng.random() < 0.7:
                j.pop("types", None)
    case.body = body


# ------------------------------------------------------------------ the OpenAPI schema, operation by operation
@pytest.mark.parametrize("label,mode", [(op, "positive") for op in OPERATIONS]
                         + [(op, "negative") for op in OPERATIONS if "/v1/" in op and op != "GET /v1/sessions"])
@pytest.mark.parametrize("budget", _budgets(SCHEMA_FAST, SCHEMA_FUZZ, 0.5))
@pytest.mark.timeout(300)
def test_openapi_operation_fuzzed(label, mode, budget):
    """schemathesis cases of one operation (schema-valid or not), against a session that exists and ids that
    do not: no 5xx, every reply as /openapi.json declares it, negative data refused; a bystander session and
    the other sessions untouched."""
    from schemathesis import GenerationMode

    with tempfile.TemporaryDirectory() as state:
        app = create_app(TOKEN, state)
        client = _test_client(app)
        ids = []
        for cluster in (NODES, TYPES):
            r = client.post("/v1/sessions", json={"cluster": cluster, "seed": 1}, headers=AUTH)
            ids.append(r.json()["session"])
        target, bystander = ids
        client.post(f"/v1/sessions/{target}/events", json={"events": [_submit("a"), _submit(1)]}, headers=AUTH)
        client.post(f"/v1/sessions/{bystander}/events", json={"events": [_submit("b")]}, headers=AUTH)
        client.post(f"/v1/sessions/{bystander}/decide", json={"apply": True}, headers=AUTH)
        kept = client.get(f"/v1/sessions/{bystander}", headers=AUTH).json()

        schema = _schema(app)
        method, path = label.split(" ")
        op = schema[path][method]
        gen = GenerationMode.POSITIVE if mode == "positive" else GenerationMode.NEGATIVE
        strategy = op.as_strategy(gen)
        if "{session_id}" in path:
            strategy = st.one_of(strategy, op.as_strategy(gen, path_parameters={"session_id": target}))
        statuses = {}

        @settings(max_examples=budget, **SETTINGS)
        @given(case=strategy)
        def run(case):
            if "{session_id}" in path and case.path_parameters.get("session_id") == bystander:
                return
            if method == "DELETE" and case.path_parameters.get("session_id") == target:
                return  # keep the session the other cases aim at
            if mode == "positive":
                _deeper(case)
            response = case.call_and_validate(headers=AUTH, excluded_checks=[positive_data_acceptance])
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        run()
        print(f"{label} ({mode}): {statuses}")
        assert all(code < 500 for code in statuses), statuses
        assert client.get(f"/v1/sessions/{bystander}", headers=AUTH).json() == kept
        _no_500_counted(client)


# ------------------------------------------------------------------ stateful: the links of /openapi.json
CLUSTERS = [NODES, TYPES, {"types": [{"name": "a100", "count": 2}]}]


def _linked_app(state):
    """The app, its /openapi.json given links from POST /v1/sessions (201) to every route of a session."""
    app = create_app(TOKEN, state)
    doc = copy.deepcopy(app.openapi())
    ops = {(p, m): o["operationId"] for p, ms in doc["paths"].items() for m, o in ms.items()}
    sess = "/v1/sessions/{session_id}"
    targets = {"events": (sess + "/events", "post"), "decide": (sess + "/decide", "post"), "get": (sess, "get"),
               "delete": (sess, "delete")}
    doc["paths"]["/v1/sessions"]["post"]["responses"]["201"]["links"] = {
        name: {"operationId": ops[t], "parameters": {"session_id": "$response.body#/session"}}
        for name, t in targets.items()}
    app.openapi_schema = doc  # what GET /openapi.json serves from now on
    return app


@pytest.mark.parametrize("budget", _budgets(SCHEMA_FAST, SCHEMA_FUZZ, 1.0))
@pytest.mark.timeout(300)
def test_stateful_run_over_the_links(budget):
    """schemathesis's state machine: create sessions, then send them events, decisions, reads and deletes
    (and use them after deleting them), with its own checks too (ignored auth, use after free): no 5xx."""
    with tempfile.TemporaryDirectory() as state:
        app = _linked_app(state)
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        statuses = {}

        class Workflow(schema.as_state_machine()):
            def get_call_kwargs(self, case):
                return {"headers": dict(AUTH)}

            def before_call(self, case):
                # most created sessions get a cluster that has GPUs, so the links lead somewhere
                meta = getattr(case, "_meta", None)
                if meta is not None and meta.generation.mode.is_negative:
                    return
                if case.method.upper() == "POST" and case.path == "/v1/sessions" and isinstance(case.body, dict):
                    rng = random.Random(repr(case.body))
                    if rng.random() < 0.8:
                        case.body = {k: v for k, v in case.body.items() if k not in ("quotas", "options", "budget_s")}
                        case.body["cluster"] = rng.choice(CLUSTERS)

            def after_call(self, response, case):
                key = f"{case.method.upper()} {case.path} {response.status_code}"
                statuses[key] = statuses.get(key, 0) + 1

            def validate_response(self, response, case, additional_checks=(), **kwargs):
                # the token (get_call_kwargs) and the clusters (before_call) added here can make a negative case
                # valid: negative data is held to 4xx by test_openapi_operation_fuzzed instead
                case.validate_response(response, excluded_checks=[positive_data_acceptance, negative_data_rejection])

        Workflow.run(settings=settings(max_examples=budget, stateful_step_count=8, **SETTINGS))
        assert not any(k.endswith(" 500") or k.split()[-1].startswith("5") for k in statuses), statuses
        assert any(k.startswith("POST /v1/sessions ") and k.endswith("201") for k in statuses), statuses
        _no_500_counted(_test_client(app))


# ------------------------------------------------------------------ raw bytes on every route
def _nest(inner):
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4))


_JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)), _nest,
                        max_leaves=12)


def _bodies(sid):
    events = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["submit", "progress", "finish", "node_down",
                                                                      "node_up", "reboot", ""])},
                                            optional={"job": _JSONISH, "node": _JSONISH, "throughput": _JSONISH,
                                                      "batch": _JSONISH, "iterations": _JSONISH,
                                                      "iterations_left": _JSONISH}), max_size=4)
    as_json = st.one_of(
        _JSONISH,
        st.fixed_dictionaries({"events": events}, optional={"expect_seq": _JSONISH}),
        st.fixed_dictionaries({"cluster": st.one_of(_JSONISH, st.sampled_from([NODES, TYPES]))},
                              optional={"policy": _JSONISH, "seed": _JSONISH, "quotas": _JSONISH,
                                        "budget_s": _JSONISH, "options": _JSONISH, "jobs": st.lists(_JSONISH)}),
        st.fixed_dictionaries({"apply": _JSONISH}))
    return st.one_of(
        as_json.map(lambda x: json.dumps(x).encode()),  # NaN and Infinity included, as Python writes them
        st.binary(max_size=64),
        st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(1, 3000).map(lambda n: b'{"events":' * n + b"[]" + b"}" * n),
        st.just(b'{"events": [], "expect_seq": 1e999}'),
        st.just(b'{"events": [{"type": "node_down", "node": 123456789012345678901234567890}]}'))


@pytest.mark.parametrize("budget", _budgets(SCHEMA_FAST * 3, SCHEMA_FUZZ * 3, 0.2))
@pytest.mark.timeout(300)
def test_raw_requests_never_5xx(budget):
    """Any method, path, content type, token and bytes: a reply below 500 with the error body of docs/service.md
    (and no change to a bystander session)."""
    with tempfile.TemporaryDirectory() as state:
        app = create_app(TOKEN, state, max_body=64 * 1024)
        client = _test_client(app)
        sid = client.post("/v1/sessions", json={"cluster": NODES}, headers=AUTH).json()["session"]
        other = client.post("/v1/sessions", json={"cluster": TYPES}, headers=AUTH).json()["session"]
        client.post(f"/v1/sessions/{other}/events", json={"events": [_submit("x")]}, headers=AUTH)
        kept = client.get(f"/v1/sessions/{other}", headers=AUTH).json()
        paths = st.one_of(st.sampled_from(["/v1/place", "/v1/sessions", f"/v1/sessions/{sid}",
                                           f"/v1/sessions/{sid}/events", f"/v1/sessions/{sid}/decide",
                                           "/metrics", "/healthz", "/openapi.json", "/v1/sessions/%00/events",
                                           f"/v1/sessions/{sid}/events/", "//v1/sessions", "/v1/sessions/../place"]),
                          st.text("abc/%._-{}", max_size=20).map(lambda t: "/v1/sessions/" + t))

        @settings(max_examples=budget, **SETTINGS)
        @given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]), path=paths,
               body=_bodies(sid), ctype=st.sampled_from(["application/json", "text/plain", None,
                                                         "application/json; charset=latin-1",
                                                         "multipart/form-data; boundary=x"]),
               auth=st.sampled_from([AUTH, AUTH, AUTH, {}, {"Authorization": "Bearer nope"},
                                     {"Authorization": "bearer " + TOKEN}, {"Authorization": TOKEN}]))
        def run(method, path, body, ctype, auth):
            if path.startswith(f"/v1/sessions/{other}"):
                return
            headers = dict(auth)
            if ctype is not None:
                headers["Content-Type"] = ctype
            r = client.request(method, path, content=body, headers=headers)
            assert r.status_code < 500, (r.status_code, r.text[:500])
            if r.status_code >= 400 and path != "/openapi.json":
                doc = r.json()
                assert set(doc) == {"error"} and set(doc["error"]) == {"field", "message"} and doc["error"]["message"]

        run()
        assert client.get(f"/v1/sessions/{other}", headers=AUTH).json() == kept
        _no_500_counted(client)


# ------------------------------------------------------------------ sequences against an in-process Session
# NaN and infinities are not JSON (schemathesis refuses to send them): test_raw_requests_never_5xx sends them
# mostly ordinary values, so that most batches are taken and sessions grow; a hostile one in about five
_NUM = st.one_of(st.floats(0.5, 5000.0), st.floats(0.5, 5000.0), st.integers(1, 5000), st.integers(1, 5000),
                 st.sampled_from([0.0, -1.0, 5e-324, 1e-300, 1e-18, 1e-7, 1e6, 1e30, 1e31, 1.7976931348623157e308]))
_INT = st.one_of(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(-2, 12),
                 st.sampled_from([0, 2**53, 2**53 + 1, 2**63, -(2**63)]))
_JOBS = st.sampled_from(["a", "b", "c", "", 1, 2, 2**70])
_TYPE = st.sampled_from(["v100", "k80", "v100", "k80", "h100"])


def _event():
    ordinary = st.fixed_dictionaries(
        {"type": st.just("submit"), "job": _JOBS,
         "throughput": st.dictionaries(st.sampled_from(["v100", "k80"]), st.floats(1.0, 100.0), min_size=1),
         "batch": st.integers(1, 512), "iterations": st.floats(1.0, 5000.0)},
        optional={"grad_bytes": st.sampled_from([0.0, 1e8]), "min_workers": st.integers(1, 2),
                  "max_workers": st.one_of(st.none(), st.integers(2, 4)), "tenant": st.sampled_from([None, "t1"]),
                  "weight": st.floats(0.5, 2.0), "restart_time": st.floats(0.0, 30.0)})
    submit = st.fixed_dictionaries(
        {"type": st.just("submit"), "job": _JOBS,
         "throughput": st.dictionaries(_TYPE, _NUM, min_size=0, max_size=3), "batch": _INT, "iterations": _NUM},
        optional={"grad_bytes": _NUM, "min_workers": _INT, "max_workers": st.one_of(st.none(), _INT),
                  "types": st.one_of(st.none(), st.lists(_TYPE, max_size=3)),
                  "tenant": st.one_of(st.none(), st.sampled_from(["t1", "t2", 3])), "weight": _NUM,
                  "restart_time": _NUM})
    return st.one_of(
        ordinary, ordinary, submit,
        st.fixed_dictionaries({"type": st.just("progress"), "job": _JOBS, "iterations_left": _NUM}),
        st.fixed_dictionaries({"type": st.just("finish"), "job": _JOBS}),
        st.fixed_dictionaries({"type": st.sampled_from(["node_down", "node_up"]), "node": st.integers(-1, 8)}))


_OPS = st.lists(st.one_of(
    st.tuples(st.just("events"), st.lists(_event(), min_size=0, max_size=4)),
    st.tuples(st.just("events"), st.lists(_event(), min_size=1, max_size=2)),
    st.tuples(st.just("decide"), st.booleans()),
    st.tuples(st.just("restart"), st.none()),
    st.tuples(st.just("fail"), st.sampled_from(["append", "snapshot"])),
), min_size=1, max_size=12)


class _Remote:
    """One session of an app over schemathesis cases: every reply checked against /openapi.json."""

    def __init__(self, state, cluster, args):
        self.state, self.cluster, self.args = state, cluster, args
        self._load(create_app(TOKEN, state))
        r = self.call("POST", "/v1/sessions", {"cluster": cluster, **args})
        assert r.status_code == 201, r.text
        self.sid = r.json()["session"]

    def _load(self, app):
        self.app = app
        self.schema = _schema(app)

    def restart(self):
        """A new app on the same state directory (the process after a crash)."""
        self.app.state.service.journal.close()
        self._load(create_app(TOKEN, self.state))

    def call(self, method, path, body=None):
        template = path.replace(getattr(self, "sid", "\0"), "{session_id}")
        case = self.schema[template][method].Case(
            path_parameters={"session_id": self.sid} if "{session_id}" in template else None,
            body=body, headers=dict(AUTH), media_type="application/json")
        response = case.call()
        # a 503 (an injected journal failure) is documented; the test checks it is expected
        case.validate_response(response, checks=REPLY_CHECKS[1:] if response.status_code == 503 else REPLY_CHECKS)
        return response

    def events(self, events):
        return self.call("POST", f"/v1/sessions/{self.sid}/events", {"events": events})

    def decide(self, apply):
        return self.call("POST", f"/v1/sessions/{self.sid}/decide", {"apply": apply})

    def get(self):
        r = self.call("GET", f"/v1/sessions/{self.sid}")
        assert r.status_code == 200
        return r.json()


def _decision(doc):
    return {k: doc[k] for k in ("assignment", "changes", "pending", "status", "mean_jct", "seed")}


def _local_decision(session, apply):
    return json.loads(json.dumps(_finite(session.decide(apply=apply, time_cap=DECIDE_CAP).to_dict())))


def _same_state(remote, local):
    doc = remote.get()
    assert {k: v for k, v in doc.items() if k not in ("session", "seq", "created")} == json.loads(local.to_json())
    return doc


@pytest.mark.parametrize("cluster,policy", [(NODES, "smp"), (TYPES, "greedy"), (NODES, "keep-greedy")],
                         ids=["nodes-smp", "types-greedy", "nodes-keep-greedy"])
@pytest.mark.parametrize("budget", _budgets(SEQ_FAST, SEQ_FUZZ, 3.0))
@pytest.mark.timeout(600)
def test_event_batch_sequences_match_an_in_process_session(cluster, policy, budget):
    """Hypothesis sequences of event batches (hostile values included), decisions, restarts on the same journal
    and failing journal writes: every batch is 200 exactly when Session.apply takes it (else 422 naming the same
    field), a failing write is 503 and applies nothing, and the state and every decision are the in-process
    Session's, which never restarts."""

    @settings(max_examples=budget, **SETTINGS)
    @given(ops=_OPS, seed=st.integers(0, 3))
    def run(ops, seed):
        with tempfile.TemporaryDirectory() as state:
            remote = _Remote(state, cluster, {"policy": policy, "seed": seed})
            local = hp.Session(io.cluster_from_dict(cluster), policy, seed=seed)
            seq = 0
            fail = None
            for kind, arg in ops:
                if kind == "fail":
                    fail = arg
                    continue
                journal = remote.app.state.service.journal
                real = getattr(journal, fail) if fail else None
                if fail:
                    def broken(*a, **k):
                        raise OSError("injected: disk full")

                    setattr(journal, fail, broken)
                try:
                    if kind == "events":
                        r = remote.events(arg)
                        try:
                            local_error = None
                            trial = hp.Session.from_json(local.to_json())
                            trial.apply(copy.deepcopy(arg))
                        except SessionError as exc:
                            local_error = exc
                        big = [n for n, e in enumerate(arg) if isinstance(e.get("job"), int)
                               and abs(e["job"]) > MAX_INT_ID]  # the schema refuses what JSON's doubles cannot carry
                        if big:
                            assert r.status_code == 422 and r.json()["error"]["field"] == f"events[{big[0]}].job", r.text
                        elif local_error is not None:
                            assert r.status_code == 422, (r.status_code, r.text, str(local_error))
                            assert r.json()["error"]["field"] == local_error.field, (r.text, local_error.field)
                        elif fail == "append" and arg:  # an empty batch writes nothing
                            assert r.status_code == 503, r.text
                        else:
                            assert r.status_code == 200, (r.text, arg)
                            local.apply(copy.deepcopy(arg))
                            seq += bool(arg)  # an empty batch is not counted
                            assert r.json()["seq"] == seq and r.json()["applied"] == len(arg)
                    elif kind == "decide":
                        r = remote.decide(arg)
                        if arg and fail == "snapshot":
                            assert r.status_code == 503, r.text
                        else:
                            assert r.status_code == 200, r.text
                            doc = r.json()
                            assert doc["status"] == "ok" and doc["seq"] == seq
                            assert _decision(doc) == _decision(_local_decision(local, arg))
                            every = set(doc["assignment"]) | set(doc["pending"])
                            assert every == {str(j) for j in local.jobs}  # each job runs or says why not
                    else:
                        remote.restart()
                finally:
                    if fail:
                        setattr(journal, fail, real)
                        fail = None
                _same_state(remote, local)
            remote.restart()  # and once more at the end: the journal holds what was acknowledged
            assert _same_state(remote, local)["seq"] == seq
            r = remote.decide(False)
            assert _decision(r.json()) == _decision(_local_decision(local, False))

    run()


# ------------------------------------------------------------------ found by fuzzing
@pytest.mark.timeout(60)
def test_int_and_str_job_ids_stay_apart_in_a_decision():
    with tempfile.TemporaryDirectory() as state:
        client = _test_client(create_app(TOKEN, state))
        sid = client.post("/v1/sessions", json={"cluster": {"types": [{"name": "v100", "count": 1}]}},
                          headers=AUTH).json()["session"]
        one = {"v100": 1.0}
        r = client.post(f"/v1/sessions/{sid}/events", json={"events": [{**_submit(7), "throughput": one},
                                                                       {**_submit("7"), "throughput": one}]},
                        headers=AUTH)
        # refused: in a decision's JSON both would be "7" (which runs, which waits?)
        assert r.status_code == 422 and r.json()["error"]["field"] == "events[1].job", r.text
        assert "same key" in r.json()["error"]["message"]
