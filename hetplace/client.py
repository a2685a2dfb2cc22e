"""A Python client of ``hetplace serve`` (docs/service.md §4).

Standard library only (``http.client``, one kept-alive connection per thread),
so a scheduler can use it without the service's dependencies::

    from hetplace.client import Client

    client = Client("http://127.0.0.1:8787", token="...")   # or $HETPLACE_TOKEN
    s = client.session({"types": [{"name": "v100", "count": 8}]})
    s.submit("a", throughput={"v100": 120.0}, batch=256, iterations=5000)
    d = s.decide()            # {"assignment": ..., "changes": ..., "pending": ..., ...}

A :class:`RemoteSession` has the methods of :class:`hetplace.Session`
(``submit``, ``progress``, ``finish``, ``node_down``, ``node_up``, ``apply``,
``decide``), each one request; :meth:`RemoteSession.batch` sends several events
as one all-or-none batch.  A refused request raises :class:`ServiceError` with
the HTTP status, the field and the server's message.
"""

import http.client
import json
import math
import os
import threading
import time
import urllib.parse
from pathlib import Path

from .errors import HetplaceError

__all__ = ["Client", "RemoteSession", "ServiceError"]

#: Seconds after which an unused connection is replaced before a request (uvicorn closes idle ones at 5 s).
IDLE_S = 2.0


class ServiceError(HetplaceError, RuntimeError):
    """A request the service refused (4xx) or failed (5xx), or a server that cannot be reached.

    Attributes
    ----------
    status : int or None
        The HTTP status (None: no reply).
    field : str or None
        The field at fault, as the server names it (``events[2].batch``).
    message : str
        The server's message: what is wrong, the value and the fix.
    """

    def __init__(self, status, message, field=None):
        self.status, self.message, self.field = status, message, field
        where = "" if field is None else f" [{field}]"
        super().__init__(f"HTTP {status}{where}: {message}" if status is not None else message)


def _cluster_doc(cluster):
    """A cluster for the service: a dict as is, or a cluster TOML file read into one."""
    if isinstance(cluster, dict):
        return cluster
    if isinstance(cluster, (str, os.PathLike)):
        import tomllib

        try:
            return tomllib.loads(Path(cluster).read_text(encoding="utf-8"))
        except (OSError, UnicodeError, tomllib.TOMLDecodeError) as exc:
            raise ServiceError(None, f"cluster {str(cluster)!r} cannot be read as a cluster TOML file ({exc}).",
                               "cluster") from None
    raise ServiceError(None, f"cluster must be a dict (the cluster TOML document as JSON) or a TOML path; got "
                             f"{type(cluster).__name__}.", "cluster")


def _json_ready(x):
    if isinstance(x, float) and not math.isfinite(x):
        raise ServiceError(None, f"{x!r} cannot be sent as JSON; give a finite number (or null / \"inf\" where "
                                 "the field allows it).")
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    return x


class Client:
    """A connection to a hetplace service.

    Parameters
    ----------
    url : str
        The server's base URL (default ``http://127.0.0.1:8787``).
    token : str, optional
        The bearer token (default ``$HETPLACE_TOKEN``).
    timeout : float
        Seconds to wait for a reply.
    """

    def __init__(self, url="http://127.0.0.1:8787", token=None, timeout=60.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServiceError(None, f"url must be http://host:port or https://host:port; got {url!r}.", "url")
        self.url = url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._prefix = parts.path.rstrip("/")
        self.token = os.environ.get("HETPLACE_TOKEN") if token is None else token
        self.timeout = float(timeout)
        self._local = threading.local()

    def _connection(self):
        """This thread's connection; a new one after ``IDLE_S`` unused (before the server may close it)."""
        conn = getattr(self._local, "conn", None)
        now = time.monotonic()
        if conn is not None and now - self._local.used > IDLE_S:
            conn.close()
            conn = None
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = cls(self._host, self._port, timeout=self.timeout)
        self._local.used = now
        return conn

    def _drop(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def request(self, method, path, body=None):
        """Send one request; the reply's JSON (None for 204), or :class:`ServiceError`.

        A request that could not be sent whole is sent once more on a new connection (the server
        cannot have acted on it); a GET whose reply is lost is asked again.  A POST or DELETE whose
        reply is lost is not: it may have been applied, and :class:`ServiceError` says so (send
        event batches with ``expect_seq`` to retry them safely, docs/service.md §3.3).
        """
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(_json_ready(body), allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        where = f"{method} {self.url}{path}"
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt:
                    raise ServiceError(None, f"{where}: cannot be sent ({type(exc).__name__}: {exc}).") from None
                continue
            try:
                reply = conn.getresponse()
                raw = reply.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt or method != "GET":
                    maybe = "" if method == "GET" else " It may or may not have been applied."
                    raise ServiceError(None, f"{where}: no reply ({type(exc).__name__}: {exc}).{maybe}") from None
        self._local.used = time.monotonic()
        if reply.status == 204:
            return None
        ctype = reply.getheader("Content-Type", "")
        doc = json.loads(raw) if raw and "json" in ctype else raw.decode("utf-8", "replace")
        if reply.status >= 400:
            err = doc.get("error", {}) if isinstance(doc, dict) else {}
            raise ServiceError(reply.status, err.get("message", str(doc)[:500]), err.get("field"))
        return doc

    def close(self):
        """Close this thread's connection."""
        self._drop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -------------------------------------------------------------- the API
    def health(self):
        """``GET /healthz``: ``{"status": "ok", "version", "sessions"}``."""
        return self.request("GET", "/healthz")

    def metrics(self):
        """``GET /metrics``: Prometheus text."""
        return self.request("GET", "/metrics")

    def place(self, cluster, jobs, *, method="smp", quotas=None, seed=0, budget_s=None, options=None):
        """``POST /v1/place``: a placement of ``jobs`` (dicts of :meth:`RemoteSession.submit`'s fields with
        ``"job"``) on ``cluster``; the reply's ``placement`` is the CLI's JSON placement."""
        return self.request("POST", "/v1/place", {"cluster": _cluster_doc(cluster), "jobs": list(jobs),
                                                  "method": method, "quotas": quotas, "seed": seed,
                                                  "budget_s": budget_s, "options": options})

    def session(self, cluster, policy="smp", *, quotas=None, seed=0, budget_s=None, options=None):
        """``POST /v1/sessions``: a new :class:`RemoteSession` (the arguments of :class:`hetplace.Session`)."""
        reply = self.request("POST", "/v1/sessions", {"cluster": _cluster_doc(cluster), "policy": policy,
                                                      "quotas": quotas, "seed": seed, "budget_s": budget_s,
                                                      "options": options})
        return RemoteSession(self, reply["session"])

    def sessions(self):
        """``GET /v1/sessions``: the ids of the sessions the server holds."""
        return self.request("GET", "/v1/sessions")["sessions"]

    def attach(self, session_id):
        """A :class:`RemoteSession` for an existing session (e.g. after the scheduler restarted)."""
        return RemoteSession(self, str(session_id))


class RemoteSession:
    """A session held by the server; the methods of :class:`hetplace.Session`, each one request."""

    def __init__(self, client, session_id):
        self.client = client
        self.id = session_id
        self.seq = None  # batches the server has accepted, as of the last reply

    def _path(self, tail=""):
        return f"/v1/sessions/{urllib.parse.quote(self.id, safe='')}{tail}"

    def apply(self, events, expect_seq=None):
        """``POST /v1/sessions/{id}/events``: the events, all or none.

        With ``expect_seq`` the server applies them only if it has accepted exactly
        that many batches (else :class:`ServiceError` 409): a batch retried after a
        lost reply is then never applied twice.  Returns the reply (``seq``,
        ``applied``, ``stopped``).
        """
        body = {"events": list(events)}
        if expect_seq is not None:
            body["expect_seq"] = expect_seq
        reply = self.client.request("POST", self._path("/events"), body)
        self.seq = reply["seq"]
        return reply

    def batch(self):
        """A context that collects events and sends them as one batch on exit (none if it raised)."""
        return _Batch(self)

    def submit(self, job_id, *, throughput, batch, iterations, **fields):
        """Submit a job (the keyword arguments of :meth:`hetplace.Session.submit`)."""
        self.apply([{"type": "submit", "job": job_id, "throughput": throughput, "batch": batch,
                     "iterations": iterations, **fields}])

    def progress(self, job_id, iterations_left):
        self.apply([{"type": "progress", "job": job_id, "iterations_left": iterations_left}])

    def finish(self, job_id):
        self.apply([{"type": "finish", "job": job_id}])

    def node_down(self, node):
        """Mark a node down; returns the ids of the jobs that ran on it."""
        return self.apply([{"type": "node_down", "node": node}])["stopped"].get("0", [])

    def node_up(self, node):
        self.apply([{"type": "node_up", "node": node}])

    def decide(self, apply=True):
        """``POST /v1/sessions/{id}/decide``: ``assignment``, ``changes``, ``pending``, ``status``, ``wall_time``."""
        reply = self.client.request("POST", self._path("/decide"), {"apply": bool(apply)})
        self.seq = reply["seq"]
        return reply

    def state(self):
        """``GET /v1/sessions/{id}``: the whole state (:meth:`hetplace.Session.to_json`'s) with ``seq``."""
        reply = self.client.request("GET", self._path())
        self.seq = reply["seq"]
        return reply

    def delete(self):
        """``DELETE /v1/sessions/{id}``."""
        self.client.request("DELETE", self._path())

    def __repr__(self):
        return f"RemoteSession({self.id!r}, url={self.client.url!r})"


class _Batch:
    def __init__(self, session):
        self.session = session
        self.events = []

    def __getattr__(self, kind):
        if kind not in ("submit", "progress", "finish", "node_down", "node_up"):
            raise AttributeError(kind)

        def add(*args, **fields):
            key = "node" if kind.startswith("node") else "job"
            ev = {"type": kind}
            if args:
                ev[key] = args[0]
                if kind == "progress" and len(args) > 1:
                    ev["iterations_left"] = args[1]
            ev.update(fields)
            self.events.append(ev)

        return add

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None and self.events:
            self.reply = self.session.apply(self.events)
        return False
