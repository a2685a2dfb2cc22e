"""The ASGI application of ``hetplace serve`` (docs/service.md).

Handlers are plain functions that FastAPI runs in its thread pool: requests to
different sessions run at the same time, requests to one session one after the
other (each session has its lock).  Every accepted event batch and every applied
decision is in the journal before the reply.
"""

import hmac
import json
import logging
import math
import secrets
import threading
import time

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import HetplaceError, SessionError
from ..io import InputFileError, cluster_from_dict
from ..session import Session
from . import _schemas as S
from ._journal import SNAPSHOT_EVERY, Journal

log = logging.getLogger("hetplace.service")

#: Largest request body, in bytes (a bigger one gets 413).
MAX_BODY = 16 * 2**20
#: Most sessions a server holds (one more gets 429).
MAX_SESSIONS = 10_000
#: Default longest decision, in seconds (``hetplace serve --decide-cap``).
DECIDE_CAP_S = 30.0
#: Paths that need no token.
OPEN_PATHS = ("/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")


class ServiceFailure(Exception):
    """A request the service refuses: its HTTP status, the field at fault and the message."""

    def __init__(self, status, message, field=None, headers=None):
        super().__init__(message)
        self.status, self.message, self.field, self.headers = status, message, field, headers


def _finite(x):
    """``x`` with numpy scalars as Python numbers and non-finite floats as "inf", "-inf" or None (JSON has none)."""
    if isinstance(x, dict):
        return {(k if isinstance(k, str) else str(k)): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isfinite(x):
            return x
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


class _Json(JSONResponse):
    def render(self, content):
        return json.dumps(_finite(content), allow_nan=False, separators=(",", ":")).encode()


def _error(status, message, field=None, headers=None):
    return _Json({"error": {"field": field, "message": message}}, status_code=status, headers=headers)


class _Gate:
    """ASGI middleware in front of everything: a request without the token gets 401 and one with a
    body over ``limit`` bytes gets 413, before the application reads a byte of either."""

    def __init__(self, app, secret, limit, count):
        self.app, self.secret, self.limit, self.count = app, secret, limit, count

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        if scope.get("path") not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            scheme, _, cred = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(cred.strip(), self.secret):
                reply = _unauthorised(bool(given))
                self.count(401)
                return await _error(401, reply.message, reply.field, reply.headers)(scope, receive, send)
        length = headers.get(b"content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                self.count(400)
                return await _error(400, f"Content-Length must be a whole number; got {length[:40]!r}.",
                                    "Content-Length")(scope, receive, send)
            if n > self.limit:
                return await self._too_large(scope, receive, send)
        chunks, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":  # the client went away
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return await self._too_large(scope, receive, send)
            chunks.append(chunk)
            if not msg.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def _too_large(self, scope, receive, send):
        self.count(413)
        await _error(413, f"the request body is over {self.limit:,} bytes; send fewer jobs or events per "
                          "request.")(scope, receive, send)


def _unauthorised(given):
    return ServiceFailure(401, "the bearer token is not the server's; send the token the server was started with."
                          if given else "a valid bearer token is required: send 'Authorization: Bearer <token>' "
                          "with the server's token.", "Authorization", {"WWW-Authenticate": "Bearer"})


class _Entry:
    """A session held by the server, its lock and its count of accepted batches."""

    __slots__ = ("session", "lock", "seq", "since_snapshot", "created", "deleted")

    def __init__(self, session, seq=0, created=None):
        self.session = session
        self.lock = threading.Lock()
        self.seq = seq
        self.since_snapshot = 0
        self.created = time.time() if created is None else created
        self.deleted = False


class _Metrics:
    def __init__(self):
        self.registry = r = CollectorRegistry()
        buckets = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60)
        self.decision = Histogram("hetplace_decision_seconds", "Seconds a session decision took in the server",
                                  registry=r, buckets=buckets)
        self.place = Histogram("hetplace_place_seconds", "Seconds a stateless /v1/place took in the server",
                               registry=r, buckets=buckets)
        self.events = Counter("hetplace_events", "Session events applied, by type", ["type"], registry=r)
        self.errors = Counter("hetplace_errors", "Error replies, by HTTP status", ["status"], registry=r)
        self.sessions = Gauge("hetplace_sessions", "Sessions held", registry=r)
        self.budget = Counter("hetplace_decisions_cut", "Decisions cut by their budget or the server's cap",
                              registry=r)


class Service:
    """The sessions of a server, its journal and its metrics (one per application)."""

    def __init__(self, state_dir=None, *, sync="normal", decide_cap_s=DECIDE_CAP_S, max_sessions=MAX_SESSIONS):
        self.journal = None if state_dir is None else Journal(state_dir, sync=sync)
        self.decide_cap_s = decide_cap_s
        self.max_sessions = max_sessions
        self.metrics = _Metrics()
        self._sessions = {}
        self._reserved = 0  # sessions being created (their journal entry written)
        self._lock = threading.Lock()
        if self.journal is not None:
            self._restore()

    # -------------------------------------------------------------- the journal
    def _restore(self):
        for sid, created, seq, state, batches in self.journal.load():
            try:
                entry = self._rebuild(state, seq, batches, created)
            except Exception:  # one damaged session must not keep the others from coming back
                log.exception("session %s could not be restored from the journal; it is left out", sid)
                continue
            self._sessions[sid] = entry
        self.metrics.sessions.set(len(self._sessions))

    @staticmethod
    def _rebuild(state, seq, batches, created):
        s = Session.from_json(state)
        for _, events in batches:
            s.apply(json.loads(events))
        entry = _Entry(s, seq + len(batches), created)
        entry.since_snapshot = len(batches)
        return entry

    def _reload(self, sid, entry):
        """After a failed journal write: the session as the journal has it (what was acknowledged)."""
        for _, created, seq, state, batches in self.journal.load(sid):
            fresh = self._rebuild(state, seq, batches, created)
            entry.session, entry.seq, entry.since_snapshot = fresh.session, fresh.seq, fresh.since_snapshot

    def _journal(self, sid, entry, write):
        if self.journal is None:
            return
        try:
            write()
        except Exception as exc:
            log.exception("journal write failed for session %s", sid)
            try:
                self._reload(sid, entry)
            except Exception:
                log.exception("session %s could not be reloaded from the journal", sid)
            raise ServiceFailure(503, f"the journal could not be written ({type(exc).__name__}: {exc}); nothing "
                                      "was applied. Retry once the server's state directory is writable.") from None

    # -------------------------------------------------------------- sessions
    def entry(self, sid):
        with self._lock:
            e = self._sessions.get(sid)
        if e is None:
            raise ServiceFailure(404, f"no session {sid[:80]!r}; create one with POST /v1/sessions (a session "
                                      "deleted, or never created, is not there).", "session")
        return e

    def create(self, req):
        spec = _cluster(req.cluster)
        s = Session(spec, req.policy, quotas=req.quotas, seed=req.seed, budget_s=req.budget_s, options=req.options)
        sid, entry = secrets.token_urlsafe(12), _Entry(s)
        with self._lock:  # a place is reserved; the journal is written without holding up other requests
            if len(self._sessions) + self._reserved >= self.max_sessions:
                raise ServiceFailure(429, f"the server holds {self.max_sessions:,} sessions, its limit; delete "
                                          "sessions you no longer need (DELETE /v1/sessions/{id}).")
            self._reserved += 1
        try:
            if self.journal is not None:
                try:
                    self.journal.create(sid, s.to_json(), entry.created)
                except Exception as exc:
                    log.exception("journal write failed creating a session")
                    raise ServiceFailure(503, f"the journal could not be written ({type(exc).__name__}: {exc}); "
                                              "no session was created.") from None
            with self._lock:
                self._sessions[sid] = entry
                self.metrics.sessions.set(len(self._sessions))
        finally:
            with self._lock:
                self._reserved -= 1
        return sid

    def delete(self, sid):
        entry = self.entry(sid)
        with entry.lock:  # after the session's running request; not holding up the other sessions
            self._check(sid, entry)
            if self.journal is not None:
                try:
                    self.journal.delete(sid)
                except Exception as exc:
                    raise ServiceFailure(503, f"the journal could not be written ({exc}); the session is "
                                              "kept.") from None
            entry.deleted = True
            with self._lock:
                del self._sessions[sid]
                self.metrics.sessions.set(len(self._sessions))

    @staticmethod
    def _check(sid, entry):
        """404 for a request that waited on the lock of a session deleted meanwhile (lock held)."""
        if entry.deleted:
            raise ServiceFailure(404, f"no session {sid[:80]!r} (deleted while this request waited).", "session")

    def ids(self):
        with self._lock:
            return list(self._sessions)

    def events(self, sid, batch):
        entry = self.entry(sid)
        events = [e.model_dump() for e in batch.events]
        with entry.lock:
            self._check(sid, entry)
            if batch.expect_seq is not None and batch.expect_seq != entry.seq:
                raise ServiceFailure(409, f"expect_seq = {batch.expect_seq} but the session has accepted "
                                          f"{entry.seq} batches; nothing was applied. GET the session to see "
                                          "its state, then send what it lacks.", "expect_seq")
            if not events:  # nothing to apply, journal or count
                return {"seq": entry.seq, "applied": 0, "stopped": {}}
            out = entry.session.apply(events)
            seq = entry.seq + 1
            self._journal(sid, entry, lambda: self.journal.append(sid, seq, json.dumps(events)))
            entry.seq = seq
            entry.since_snapshot += 1
            if self.journal is not None and entry.since_snapshot >= SNAPSHOT_EVERY:
                try:
                    self.journal.snapshot(sid, seq, entry.session.to_json())
                    entry.since_snapshot = 0
                except Exception:  # the batches are journaled: a late snapshot loses nothing
                    log.exception("snapshot of session %s failed", sid)
        for e in events:
            self.metrics.events.labels(e["type"]).inc()
        return {"seq": seq, "applied": len(events),
                "stopped": {str(i): r for i, r in enumerate(out) if r is not None}}

    def decide(self, sid, apply):
        entry = self.entry(sid)
        with entry.lock:
            self._check(sid, entry)
            d = entry.session.decide(apply=apply, time_cap=self.decide_cap_s)
            if apply:
                state = entry.session.to_json()
                self._journal(sid, entry, lambda: self.journal.snapshot(sid, entry.seq, state))
                entry.since_snapshot = 0
            seq = entry.seq
        self.metrics.decision.observe(d.wall_time)
        if d.status == "budget":
            self.metrics.budget.inc()
        out = d.to_dict()
        out["seq"] = seq
        return out

    def state(self, sid):
        entry = self.entry(sid)
        with entry.lock:
            self._check(sid, entry)
            doc = json.loads(entry.session.to_json())
            seq = entry.seq
        return {"session": sid, "seq": seq, "created": entry.created, **doc}

    def place(self, req):
        spec = _cluster(req.cluster)
        s = Session(spec, req.method, quotas=req.quotas, seed=req.seed, budget_s=req.budget_s, options=req.options)
        events = [{"type": "submit", **j.model_dump()} for j in req.jobs]
        try:
            s.apply(events)
        except SessionError as exc:  # name the field as the request does
            raise SessionError(str(exc).replace("events[", "jobs[", 1),
                               field=None if exc.field is None else exc.field.replace("events[", "jobs[", 1)) from None
        d = s.decide(apply=False, time_cap=self.decide_cap_s)
        self.metrics.place.observe(d.wall_time)
        placement = None
        if d.placement is not None:
            from ..io import _placement_doc

            placement = _placement_doc(d.placement)
            ids = dict(zip(d.problem.job_names, d.jobs))
            for job in placement["jobs"]:
                job["job"] = ids[job["job"]]
            for w in placement["workers"]:
                if w["job"] is not None:
                    w["job"] = ids[w["job"]]
        out = d.to_dict()
        return {"placement": placement, "assignment": out["assignment"], "pending": out["pending"],
                "status": d.status, "wall_time": d.wall_time}


def _cluster(model):
    """The ClusterSpec of a request's cluster; its errors name the field from the request's root."""
    try:
        return cluster_from_dict(model.model_dump(exclude_none=True))
    except InputFileError as exc:
        raise ServiceFailure(422, str(exc), "cluster" if exc.field is None else f"cluster.{exc.field}") from None


# ------------------------------------------------------------------ errors
_UNION_TAGS = ("int", "str", "float", "bool", "none")


def _field(loc):
    """``('body', 'events', 2, 'submit', 'batch')`` -> ``'events[2].batch'``."""
    parts = [p for p in loc if p != "body"]
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p in ("submit", "progress", "finish", "node_down", "node_up") and out.endswith("]"):
            continue  # the tag of the event union
        elif p in _UNION_TAGS or p.startswith(("literal[", "function-", "constrained-", "json-or-python[")):
            continue  # the member of a union a value failed
        else:
            out += ("." if out else "") + str(p)
    return out or None


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _validation_reply(exc):
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
    if first.get("type") == "json_invalid":
        return _error(400, f"the body is not valid JSON ({first.get('msg')}); send a JSON object.", None)
    field = _field(first.get("loc", ()))
    if first.get("type") in ("union_tag_invalid", "union_tag_not_found") and field:
        field += ".type"  # the discriminator of an event
    msg = first.get("msg", "invalid")
    got = f"; got {_short(first['input'])}" if "input" in first and first.get("type") != "missing" else ""
    more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in the request)" if len(errors) > 1 else ""
    return _error(422, f"{field or 'the body'}: {msg}{got}. Fix it as docs/service.md §3 and /openapi.json "
                       f"describe{more}.", field)


def create_app(token, state_dir=None, *, sync="normal", decide_cap_s=DECIDE_CAP_S, max_body=MAX_BODY,
               max_sessions=MAX_SESSIONS):
    """The service as an ASGI application (what ``hetplace serve`` runs; docs/service.md).

    Parameters
    ----------
    token : str
        The bearer token every request but ``/healthz`` and ``/openapi.json`` must carry.
    state_dir : path-like, optional
        Directory of the journal (None: sessions live in memory only).
    sync : {"normal", "full"}
        The journal's durability: through a process crash, or a machine crash too.
    decide_cap_s : float or None
        Longest decision in seconds (None: none).
    max_body : int
        Largest request body in bytes.
    max_sessions : int
        Most sessions held at once.

    Returns
    -------
    fastapi.FastAPI
    """
    if not isinstance(token, str) or not token or token != token.strip() or any(c.isspace() for c in token):
        raise ValueError("token must be a non-empty string without spaces (the bearer token clients send).")
    if sync not in ("normal", "full"):
        raise ValueError(f"sync must be 'normal' or 'full'; got {sync!r}.")
    service = Service(state_dir, sync=sync, decide_cap_s=decide_cap_s, max_sessions=max_sessions)
    secret = token.encode()
    bearer = HTTPBearer(auto_error=False, description="The server's token (--token-file or HETPLACE_TOKEN).")

    def authorised(cred: HTTPAuthorizationCredentials = Depends(bearer)):
        # the gate (_Gate) has checked already; this declares the scheme in /openapi.json and checks again
        if cred is None or not hmac.compare_digest(cred.credentials.encode(), secret):
            raise _unauthorised(cred is not None)

    errors = {code: {"model": S.ErrorReply} for code in (400, 401, 404, 409, 413, 422, 429, 503)}
    app = FastAPI(title="hetplace", version=__version__, default_response_class=_Json,
                  description="Placement of data-parallel jobs on heterogeneous GPU clusters, as a service: "
                              "stateless placements and sessions a scheduler holds (docs/service.md).")
    app.state.service = service
    auth = [Depends(authorised)]

    @app.exception_handler(ServiceFailure)
    def _failure(request: Request, exc: ServiceFailure):
        service.metrics.errors.labels(str(exc.status)).inc()
        return _error(exc.status, exc.message, exc.field, exc.headers)

    @app.exception_handler(HetplaceError)
    def _bad_input(request: Request, exc: HetplaceError):
        service.metrics.errors.labels("422").inc()
        return _error(422, str(exc), getattr(exc, "field", None))

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError):
        reply = _validation_reply(exc)
        service.metrics.errors.labels(str(reply.status_code)).inc()
        return reply

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException):
        service.metrics.errors.labels(str(exc.status_code)).inc()
        message = {400: "the body cannot be parsed as JSON (nested too deep, or a number too long); send a "
                        "JSON object as docs/service.md §3 describes.",
                   404: f"no route {request.url.path[:80]!r}; see /openapi.json.",
                   405: f"{request.method} is not allowed on {request.url.path[:80]!r}; see /openapi.json."}.get(
            exc.status_code, str(exc.detail))
        return _error(exc.status_code, message, None, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    def _crash(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        service.metrics.errors.labels("500").inc()
        return _error(500, f"internal error ({type(exc).__name__}); the session is unchanged. Please report it.")

    @app.get("/healthz", tags=["server"])
    def healthz():
        """Liveness: no token needed."""
        return {"status": "ok", "version": __version__, "sessions": len(service.ids())}

    @app.get("/metrics", tags=["server"], dependencies=auth, response_class=Response,
             responses={200: {"content": {"text/plain": {}}}, **errors})
    def metrics():
        """Prometheus text: decision latency, events, errors, sessions."""
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/place", tags=["place"], dependencies=auth,
              responses={200: {"model": S.PlaceReply}, **errors})
    def place(req: S.PlaceRequest):
        """Place jobs on a cluster, statelessly (the CLI's JSON placement, jobs named by id)."""
        return service.place(req)

    @app.get("/v1/sessions", tags=["sessions"], dependencies=auth, responses=errors)
    def list_sessions() -> dict[str, list[str]]:
        """The ids of the sessions held."""
        return {"sessions": service.ids()}

    @app.post("/v1/sessions", tags=["sessions"], dependencies=auth, status_code=201,
              responses={201: {"model": S.Created}, **errors})
    def create_session(req: S.SessionCreate):
        """Create a session (the arguments of hetplace.Session)."""
        return {"session": service.create(req)}

    @app.post("/v1/sessions/{session_id}/events", tags=["sessions"], dependencies=auth,
              responses={200: {"model": S.EventsReply}, **errors})
    def post_events(session_id: str, batch: S.EventBatch):
        """Apply events in order, all or none; journaled before the reply."""
        return service.events(session_id, batch)

    @app.post("/v1/sessions/{session_id}/decide", tags=["sessions"], dependencies=auth,
              responses={200: {"model": S.DecisionReply}, **errors})
    def decide(session_id: str, req: S.Decide | None = None):
        """The session's decision: assignment, changes, pending jobs with reasons, status, wall time."""
        return service.decide(session_id, True if req is None else req.apply)

    @app.get("/v1/sessions/{session_id}", tags=["sessions"], dependencies=auth,
             responses={200: {"model": S.SessionState}, **errors})
    def get_session(session_id: str):
        """The session's whole state (hetplace.Session.to_json) with its id and accepted batches."""
        return service.state(session_id)

    @app.delete("/v1/sessions/{session_id}", tags=["sessions"], dependencies=auth, status_code=204,
                response_class=Response, responses=errors)
    def delete_session(session_id: str):
        """Delete a session (and its journal)."""
        service.delete(session_id)
        return Response(status_code=204)

    app.add_middleware(_Gate, secret=secret, limit=max_body,
                       count=lambda status: service.metrics.errors.labels(str(status)).inc())
    return app
