"""Real ``hetplace serve`` servers for the tests: a subprocess on a free loopback port, or uvicorn in a thread.

:class:`LiveServer` runs ``python -m hetplace serve --host 127.0.0.1 --port <free> --state-dir DIR
--token-file FILE`` and waits on ``/healthz``; :meth:`LiveServer.kill9` is ``kill -9``.  Every server
started here is killed when its test ends (the fixtures call :func:`stop_all`), when the test process
exits (``atexit``) and, on Linux, when the test process dies (``PR_SET_PDEATHSIG``): a test never
leaves a server behind.  :class:`ThreadServer` serves an application built in the test
(:func:`hetplace.service.create_app` with its own limits) on a socket bound to 127.0.0.1:0.
Nothing listens anywhere but the loopback address.
"""

import atexit
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"

_LIVE = []  # every LiveServer process started and not yet reaped


def free_port():
    """A TCP port free on the loopback address right now (the server may lose a race for it: see start())."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


try:  # looked up here, not in the child between fork and exec (no import there)
    import ctypes

    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (ImportError, OSError, AttributeError):
    _PRCTL = None


def _die_with_parent():  # runs in the child between fork and exec: killed when the test process dies
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def raw_request(port, method, path, body=b"", headers=None, timeout=30.0):
    """One request on a fresh connection: ``(status, headers, parsed JSON or text)``; no retry."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        raw = r.read()
        ctype = r.getheader("Content-Type", "")
        doc = json.loads(raw) if raw and "json" in ctype else raw.decode("utf-8", "replace")
        return r.status, dict(r.getheaders()), doc
    finally:
        conn.close()


def wait_healthy(port, timeout=60.0, proc=None):
    """Poll ``GET /healthz`` until it answers 200; False if ``proc`` exits or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            status, _, doc = raw_request(port, "GET", "/healthz", timeout=2.0)
            if status == 200 and isinstance(doc, dict) and doc.get("status") == "ok":
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


class LiveServer:
    """``hetplace serve`` as a subprocess on 127.0.0.1.

    Parameters
    ----------
    state_dir : path-like
        ``--state-dir`` (the journal): a server started again on it has its sessions back.
    token : str
        Written to ``<state_dir>/../<name>.token`` and given as ``--token-file``.
    args : sequence of str
        More options (``--max-body``, ``--decide-cap``, ``--sync``).
    """

    def __init__(self, state_dir, token, args=(), log_dir=None):
        self.state_dir = Path(state_dir)
        self.token = token
        self.args = list(args)
        where = Path(log_dir) if log_dir is not None else self.state_dir.parent
        where.mkdir(parents=True, exist_ok=True)
        self.token_file = where / f"{self.state_dir.name}.token"
        self.token_file.write_text(token + "\n", encoding="utf-8")
        self.log = where / f"{self.state_dir.name}.log"
        self.proc = None
        self.port = None
        self.starts = 0

    @property
    def url(self):
        return f"http://{HOST}:{self.port}"

    def start(self, timeout=60.0):
        """Start the server (again: on the same port, so clients keep their URL) and wait on /healthz; a port
        lost to a race is replaced by another free one (3 tries)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        env = dict(os.environ)
        env.pop("HETPLACE_TOKEN", None)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        for attempt in range(3):
            if self.port is None or attempt:
                self.port = free_port()
            cmd = [sys.executable, "-m", "hetplace", "serve", "--host", HOST, "--port", str(self.port),
                   "--state-dir", str(self.state_dir), "--token-file", str(self.token_file), *self.args]
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT,
                                             preexec_fn=_die_with_parent if _PRCTL is not None else None)
            _LIVE.append(self.proc)
            if wait_healthy(self.port, timeout, self.proc):
                self.starts += 1
                return self
            self._reap(signal.SIGKILL)
        raise RuntimeError(f"hetplace serve did not come up; its log:\n{self.log.read_text(errors='replace')[-3000:]}")

    def client(self, token=None, timeout=60.0):
        from hetplace.client import Client

        return Client(self.url, token=self.token if token is None else token, timeout=timeout)

    def request(self, method, path, body=None, token=None, headers=None):
        """A raw request (fresh connection); ``body`` a dict is sent as JSON, bytes as they are."""
        h = {"Authorization": f"Bearer {self.token if token is None else token}"} if token is not False else {}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        return raw_request(self.port, method, path, body or b"", h)

    def kill9(self):
        """``kill -9`` the server and reap it."""
        self._reap(signal.SIGKILL)

    def stop(self):
        """SIGTERM (uvicorn's graceful stop), SIGKILL after 10 s."""
        self._reap(signal.SIGTERM, grace=10.0)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _reap(self, sig, grace=0.0):
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=grace if grace else 10.0)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        if p in _LIVE:
            _LIVE.remove(p)


def stop_all():
    """Kill every LiveServer process still running (fixture teardown, atexit)."""
    while _LIVE:
        p = _LIVE.pop()
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


atexit.register(stop_all)


class ThreadServer:
    """uvicorn serving ``app`` in a thread of the test process, on a socket bound to 127.0.0.1:0.

    For the limits ``hetplace serve`` has no option for (``max_sessions``) and for faults injected
    into the application's own objects, over real HTTP.
    """

    def __init__(self, app):
        import uvicorn

        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="hetplace-test-uvicorn")

    @property
    def url(self):
        return f"http://{HOST}:{self.port}"

    def __enter__(self):
        self.thread.start()
        if not wait_healthy(self.port, 30.0):
            self.__exit__()
            raise RuntimeError("uvicorn in a thread did not come up")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(15.0)
        self.sock.close()

    def client(self, token, timeout=60.0):
        from hetplace.client import Client

        return Client(self.url, token=token, timeout=timeout)

    def request(self, method, path, body=None, token=None, headers=None):
        h = {} if token is None else {"Authorization": f"Bearer {token}"}
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        return raw_request(self.port, method, path, body or b"", h)
