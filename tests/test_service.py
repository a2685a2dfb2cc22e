"""hetplace serve, in process: routes, the JSON of docs/service.md, errors, the journal, the client's forms.

The real server (a process, kill -9, many clients) is tests/test_service_live.py; the fuzzing of the
OpenAPI schema is tests/test_service_fuzz.py.
"""

import json
import sqlite3
import tomllib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

import hetplace as hp  # noqa: E402
from hetplace import io  # noqa: E402
from hetplace.data import example_path  # noqa: E402
from hetplace.service import create_app  # noqa: E402

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NODES = {"cluster": {"bandwidth": "25Gbit/s"},
         "nodes": [{"type": "v100", "gpus": 4, "bandwidth": "300GB/s", "count": 2},
                   {"type": "k80", "gpus": 4, "bandwidth": "30GB/s"}]}
THR = {"v100": 40.0, "k80": 10.0}


def _client(tmp_path=None, **kw):
    return TestClient(create_app(TOKEN, tmp_path, **kw), raise_server_exceptions=False)


def _submit(job, it=1000.0, **kw):
    return {"type": "submit", "job": job, "throughput": THR, "batch": 64, "iterations": it, "grad_bytes": 1e8, **kw}


def _session(c, cluster=NODES, **kw):
    r = c.post("/v1/sessions", json={"cluster": cluster, **kw}, headers=AUTH)
    assert r.status_code == 201, r.text
    return r.json()["session"]


def _events(c, sid, events, **kw):
    return c.post(f"/v1/sessions/{sid}/events", json={"events": events, **kw}, headers=AUTH)


def _error(r, status):
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"field", "message"}
    assert body["error"]["message"]
    return body["error"]


# ------------------------------------------------------------------ the contract
@pytest.mark.timeout(120)
def test_session_round_trip_matches_an_in_process_session(tmp_path):
    """Every route of a session; the decision is the one the same Session makes in process."""
    c = _client(tmp_path)
    sid = _session(c, seed=3)
    local = hp.Session(io.cluster_from_dict(NODES), seed=3)
    batches = [[_submit("a"), _submit(7, 500.0)], [_submit("b", 200.0, tenant=None, weight=2.0)],
               [{"type": "progress", "job": "a", "iterations_left": 800.0}]]
    for n, batch in enumerate(batches, 1):
        r = _events(c, sid, batch)
        assert r.status_code == 200 and r.json() == {"seq": n, "applied": len(batch), "stopped": {}}
        local.apply(batch)
    r = c.post(f"/v1/sessions/{sid}/decide", headers=AUTH)
    assert r.status_code == 200
    d, ref = r.json(), local.decide()
    assert d["assignment"] == {str(k): list(v) for k, v in ref.assignment.items()}
    assert d["changes"] == [ch.to_dict() for ch in ref.changes]
    assert d["status"] == "ok" and d["seq"] == 3 and d["mean_jct"] == pytest.approx(ref.mean_jct)
    assert {ch["job"] for ch in d["changes"]} == {"a", 7, "b"}  # an int id stays an int where JSON allows
    node = ref.assignment["a"][0] // 4
    r = _events(c, sid, [{"type": "node_down", "node": node}])
    assert r.json()["stopped"] == {"0": [j for j in local.node_down(node)]}
    state = c.get(f"/v1/sessions/{sid}", headers=AUTH).json()
    assert state["session"] == sid and state["seq"] == 4
    assert {k: v for k, v in state.items() if k not in ("session", "seq", "created")} == json.loads(local.to_json())
    assert c.get("/v1/sessions", headers=AUTH).json() == {"sessions": [sid]}
    r = c.post(f"/v1/sessions/{sid}/decide", json={"apply": False}, headers=AUTH)
    assert r.json()["assignment"] == {str(k): list(v) for k, v in local.decide(apply=False).assignment.items()}
    assert c.delete(f"/v1/sessions/{sid}", headers=AUTH).status_code == 204
    _error(c.get(f"/v1/sessions/{sid}", headers=AUTH), 404)
    assert c.get("/v1/sessions", headers=AUTH).json() == {"sessions": []}


def test_pending_jobs_carry_their_reasons():
    c = _client()
    sid = _session(c, {"types": [{"name": "v100", "count": 2}, {"name": "k80", "count": 2}]},
                   quotas={"t": {"v100": 0, "k80": 0}})
    assert _events(c, sid, [{"type": "submit", "job": "big", "throughput": {"v100": 1.0}, "batch": 8,
                             "iterations": 10, "min_workers": 3},
                            {"type": "submit", "job": "q", "throughput": {"v100": 1.0}, "batch": 8,
                             "iterations": 10, "tenant": "t"}]).status_code == 200
    d = c.post(f"/v1/sessions/{sid}/decide", headers=AUTH).json()
    assert d["pending"]["big"]["code"] == "infeasible" and d["pending"]["q"]["code"] == "quota"
    assert all(set(r) == {"code", "message", "data"} for r in d["pending"].values())


def test_place_is_the_cli_placement_named_by_id():
    c = _client()
    jobs = [{"job": "x", "throughput": THR, "batch": 64, "iterations": 100.0},
            {"job": 2, "throughput": {"v100": 40.0}, "batch": 32, "iterations": 50.0, "grad_bytes": 1e7}]
    r = c.post("/v1/place", json={"cluster": NODES, "jobs": jobs, "method": "smp", "seed": 0}, headers=AUTH)
    assert r.status_code == 200, r.text
    out = r.json()
    local = hp.Session(io.cluster_from_dict(NODES))
    local.apply([{"type": "submit", **j} for j in jobs])
    ref = local.decide(apply=False)
    assert out["assignment"] == {str(k): list(v) for k, v in ref.assignment.items()}
    doc = ref.placement.to_dict()
    assert [j["job"] for j in out["placement"]["jobs"]] == ["x", 2]
    assert out["placement"]["mean_jct"] == pytest.approx(doc["mean_jct"])
    assert [w["job"] for w in out["placement"]["workers"]] == [
        None if w["job"] is None else {"x": "x", "2": 2}[w["job"]] for w in doc["workers"]]
    # a bad job is named as the request names it
    jobs[1]["batch"] = 0
    err = _error(c.post("/v1/place", json={"cluster": NODES, "jobs": jobs}, headers=AUTH), 422)
    assert err["field"] == "jobs[1].batch" and "batch" in err["message"] and "got 0" in err["message"]


@pytest.mark.parametrize("name", ["cluster.toml", "cluster_nodes.toml", "quotas.toml"])
def test_cluster_json_is_the_toml_document(name):
    """The cluster of a request is the cluster TOML document as JSON: the same cluster either way."""
    path = example_path(name)
    doc = tomllib.loads(Path(path).read_text())
    doc.pop("gavel", None)
    doc.get("cluster", {}).pop("gavel", None)
    a, b = io.cluster_from_dict(doc), io.read_cluster(path)
    assert (a.type_names, a.type_counts, a.bandwidth, a.quotas) == (b.type_names, b.type_counts, b.bandwidth,
                                                                   b.quotas)
    assert (a.topology is None) == (b.topology is None)
    if a.topology is not None:
        for k in a.topology:
            np.testing.assert_array_equal(a.topology[k], b.topology[k])
    assert _client().post("/v1/sessions", json={"cluster": json.loads(json.dumps(doc))},
                          headers=AUTH).status_code == 201


# ------------------------------------------------------------------ errors: every code, a field, never a 5xx
def test_every_error_names_field_and_fix(tmp_path):
    c = _client(tmp_path, max_body=4096, max_sessions=2)
    sid = _session(c)
    assert _events(c, sid, [_submit("a")]).status_code == 200
    before = c.get(f"/v1/sessions/{sid}", headers=AUTH).json()
    # 401: no token, a wrong one, another scheme; nothing changes
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {TOKEN}"}):
        e = _error(c.post(f"/v1/sessions/{sid}/events", json={"events": [_submit("z")]}, headers=headers), 401)
        assert e["field"] == "Authorization"
        _error(c.post(f"/v1/sessions/{sid}/decide", headers=headers), 401)
        _error(c.delete(f"/v1/sessions/{sid}", headers=headers), 401)
        _error(c.get("/metrics", headers=headers), 401)
    assert c.get("/healthz").status_code == 200 and c.get("/openapi.json").status_code == 200
    # 400: not JSON
    _error(c.post(f"/v1/sessions/{sid}/events", content=b"{nope", headers={**AUTH, "Content-Type": "application/json"}),
           400)
    # 404: session, route; 405: method
    assert _error(c.post("/v1/sessions/none/decide", headers=AUTH), 404)["field"] == "session"
    _error(c.get("/v2/nothing", headers=AUTH), 404)
    _error(c.put(f"/v1/sessions/{sid}", headers=AUTH), 405)
    # 409: expect_seq
    e = _error(_events(c, sid, [_submit("z")], expect_seq=0), 409)
    assert e["field"] == "expect_seq" and "1 batches" in e["message"]
    # 413: body over the limit
    _error(_events(c, sid, [_submit(f"j{i}") for i in range(100)]), 413)
    # 422: the schema (a string for a number; an unknown key; an unknown event) and the meaning
    for events, field in [([_submit("z", batch="8")], "events[0].batch"),
                          ([{**_submit("z"), "colour": 1}], "events[0].colour"),
                          ([{"type": "explode", "job": "z"}], "events[0].type"),
                          ([_submit("z", batch=0)], "events[0].batch"),
                          ([_submit("z"), _submit("z")], "events[1].job"),
                          ([_submit("z", throughput={"a100": 1.0})], "events[0].throughput"),
                          ([{"type": "node_down", "node": 99}], "events[0].node")]:
        e = _error(_events(c, sid, events), 422)
        assert e["field"] == field, (events, e)
    e = _error(c.post("/v1/sessions", json={"cluster": {"types": [{"name": "v100", "count": -1}]}}, headers=AUTH),
               422)
    assert "count" in e["field"] and "-1" in e["message"] and "Fix" in e["message"]
    e = _error(c.post("/v1/sessions", json={"cluster": {"gavel": "/etc/passwd"}}, headers=AUTH), 422)
    assert e["field"] == "cluster.gavel"
    _error(c.post("/v1/sessions", json={"cluster": NODES, "policy": "magic"}, headers=AUTH), 422)
    _error(c.post("/v1/sessions", json={"cluster": NODES, "options": {"colour": 1}}, headers=AUTH), 422)
    # 429: the session limit
    _session(c)
    _error(c.post("/v1/sessions", json={"cluster": NODES}, headers=AUTH), 429)
    # nothing above changed the session
    after = c.get(f"/v1/sessions/{sid}", headers=AUTH).json()
    assert after == before
    text = c.get("/metrics", headers=AUTH).text
    for code in ("400", "401", "404", "405", "409", "413", "422", "429"):
        assert f'hetplace_errors_total{{status="{code}"}}' in text
    assert "hetplace_sessions 2.0" in text


def test_a_failing_journal_is_503_and_applies_nothing(tmp_path, monkeypatch):
    c = _client(tmp_path)
    sid = _session(c)
    assert _events(c, sid, [_submit("a")]).status_code == 200
    service = c.app.state.service
    before = c.get(f"/v1/sessions/{sid}", headers=AUTH).json()

    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(service.journal, "append", broken)
    monkeypatch.setattr(service.journal, "snapshot", broken)
    _error(_events(c, sid, [_submit("b")]), 503)
    _error(c.post(f"/v1/sessions/{sid}/decide", headers=AUTH), 503)
    assert c.get(f"/v1/sessions/{sid}", headers=AUTH).json() == before  # as the journal has it
    monkeypatch.undo()
    assert _events(c, sid, [_submit("b")]).json()["seq"] == 2


# ------------------------------------------------------------------ the journal
def test_a_restarted_server_has_every_session_and_decides_the_same(tmp_path):
    """The journal (snapshots and batches since) rebuilds each session; its next decision is the same."""
    c = _client(tmp_path)
    sids = [_session(c, seed=s) for s in range(3)]
    rng = np.random.default_rng(0)
    for r in range(6):
        for n, sid in enumerate(sids):
            batch = [_submit(f"{n}-{r}-{i}", float(rng.uniform(100, 1000))) for i in range(2)]
            if r:
                batch.append({"type": "progress", "job": f"{n}-{r - 1}-0", "iterations_left": 50.0})
            assert _events(c, sid, batch).status_code == 200
            if r % 2 == 0:
                assert c.post(f"/v1/sessions/{sid}/decide", headers=AUTH).status_code == 200
    states = {sid: c.get(f"/v1/sessions/{sid}", headers=AUTH).json() for sid in sids}
    nexts = {sid: c.post(f"/v1/sessions/{sid}/decide", json={"apply": False}, headers=AUTH).json() for sid in sids}
    again = _client(tmp_path)  # a new server on the same directory
    for sid in sids:
        assert again.get(f"/v1/sessions/{sid}", headers=AUTH).json() == states[sid]
        d = again.post(f"/v1/sessions/{sid}/decide", json={"apply": False}, headers=AUTH).json()
        assert (d["assignment"], d["changes"], d["pending"]) == (nexts[sid]["assignment"], nexts[sid]["changes"],
                                                                nexts[sid]["pending"])
    assert again.delete(f"/v1/sessions/{sids[0]}", headers=AUTH).status_code == 204
    assert set(_client(tmp_path).get("/v1/sessions", headers=AUTH).json()["sessions"]) == set(sids[1:])


def test_snapshots_bound_the_replay(tmp_path, monkeypatch):
    from hetplace.service import _app

    monkeypatch.setattr(_app, "SNAPSHOT_EVERY", 4)
    c = _client(tmp_path)
    sid = _session(c)
    for i in range(10):
        assert _events(c, sid, [_submit(i)]).status_code == 200
    db = sqlite3.connect(Path(tmp_path) / "hetplace-journal.sqlite3")
    assert db.execute("SELECT seq FROM sessions").fetchone()[0] == 8
    assert [r[0] for r in db.execute("SELECT seq FROM batches ORDER BY seq")] == [9, 10]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(_client(tmp_path).get(f"/v1/sessions/{sid}", headers=AUTH).json()["jobs"]) == 10


def test_a_damaged_session_does_not_keep_the_others_out(tmp_path):
    c = _client(tmp_path)
    good, bad = _session(c), _session(c)
    db = sqlite3.connect(Path(tmp_path) / "hetplace-journal.sqlite3")
    with db:
        db.execute("UPDATE sessions SET state = 'not json' WHERE id = ?", (bad,))
    assert _client(tmp_path).get("/v1/sessions", headers=AUTH).json() == {"sessions": [good]}


# ------------------------------------------------------------------ the server's settings and the client
def test_create_app_and_token_arguments(tmp_path):
    from hetplace.errors import InvalidOptionError
    from hetplace.service._serve import is_loopback, resolve_token

    for bad in ("", " x", None, "two words"):
        with pytest.raises(ValueError, match="token"):
            create_app(bad)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.invalid")
    said = []
    with pytest.raises(InvalidOptionError, match="token is required"):
        resolve_token("0.0.0.0", environ={})
    assert resolve_token("0.0.0.0", environ={"HETPLACE_TOKEN": "abc"}) == "abc"
    f = tmp_path / "tok"
    f.write_text("from-file\n")
    assert resolve_token("0.0.0.0", f, environ={"HETPLACE_TOKEN": "abc"}) == "from-file"
    token = resolve_token("127.0.0.1", None, tmp_path / "state", environ={}, announce=lambda *a, **k: said.append(a))
    assert (tmp_path / "state" / "token").read_text().strip() == token and token not in said[0][0]
    assert (tmp_path / "state" / "token").stat().st_mode & 0o077 == 0


def test_cli_serve_refuses_an_open_address_without_a_token(monkeypatch, capsys):
    from hetplace.cli import main

    monkeypatch.delenv("HETPLACE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "token is required" in capsys.readouterr().err


def _shape(schema):
    """What a client is written from, and no more: the operations and each model's fields (a newer FastAPI
    may write the same schema with other details)."""
    ops = {(path, m) for path, item in schema["paths"].items() for m in item}
    models = {name: (sorted(m.get("properties", {})), sorted(m.get("required", [])))
              for name, m in schema["components"]["schemas"].items()}
    return ops, models


def test_openapi_schema_in_docs_is_current():
    """docs/openapi.json is the schema the server serves (regenerate: hetplace serve --openapi > docs/openapi.json)."""
    shipped = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"
    served = _client().get("/openapi.json").json()
    assert _shape(json.loads(shipped.read_text())) == _shape(served)
    for path in ("/v1/place", "/v1/sessions", "/v1/sessions/{session_id}/events", "/v1/sessions/{session_id}/decide",
                 "/v1/sessions/{session_id}", "/healthz", "/metrics"):
        assert path in served["paths"]
    assert "HTTPBearer" in served["components"]["securitySchemes"]


def test_client_against_the_app(tmp_path, monkeypatch):
    """hetplace.client.Client speaks the same JSON (over the in-process app through httpx's transport)."""
    from hetplace import client as hc

    app_client = _client(tmp_path)

    class Reply:
        def __init__(self, r):
            self.status, self._r = r.status_code, r

        def read(self):
            return self._r.content

        def getheader(self, name, default=None):
            return self._r.headers.get(name, default)

    class Conn:  # http.client's interface, carried by the TestClient
        def request(self, method, path, body=None, headers=None):
            self.reply = Reply(app_client.request(method, path, content=body, headers=headers))

        def getresponse(self):
            return self.reply

        def close(self):
            pass

    cl = hc.Client("http://127.0.0.1:1", token=TOKEN)
    monkeypatch.setattr(cl, "_connection", lambda: Conn())
    s = cl.session(NODES, seed=1)
    s.submit("a", throughput=THR, batch=64, iterations=100.0)
    with s.batch() as b:
        b.submit("b", throughput=THR, batch=32, iterations=50.0)
        b.progress("a", 90.0)
    assert s.seq == 2 and b.reply["applied"] == 2
    d = s.decide()
    assert set(d["assignment"]) == {"a", "b"}
    assert s.node_down(d["assignment"]["a"][0] // 4) == ["a"]
    with pytest.raises(hc.ServiceError) as info:
        s.submit("a", throughput=THR, batch=64, iterations=1.0)
    assert info.value.status == 422 and info.value.field == "events[0].job"
    assert cl.attach(s.id).state()["seq"] == 3
    assert cl.place({"types": [{"name": "v100", "count": 4}]},
                    [{"job": 1, "throughput": {"v100": 1.0}, "batch": 8, "iterations": 1.0}])["assignment"] == {
        "1": [0, 1, 2, 3]}
    with pytest.raises(hc.ServiceError, match="finite"):
        s.progress("a", float("inf"))
    s.delete()
    assert cl.sessions() == []
