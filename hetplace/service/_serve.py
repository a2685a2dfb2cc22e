"""Running the service: the token, the address, uvicorn (``hetplace serve``; docs/service.md §2)."""

import ipaddress
import os
import secrets
import sys
from pathlib import Path

from ..errors import InvalidOptionError
from ._app import DECIDE_CAP_S, MAX_BODY, MAX_SESSIONS, create_app

#: Environment variable holding the token when no token file is given.
TOKEN_ENV = "HETPLACE_TOKEN"
#: File under the state directory where a generated token is written.
TOKEN_FILE = "token"


def is_loopback(host):
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(host, token_file=None, state_dir=None, *, environ=None, announce=print):
    """The bearer token: from ``token_file``, else ``$HETPLACE_TOKEN``, else (loopback only) a new one.

    A new token is written to ``<state_dir>/token`` (mode 0600) when there is a
    state directory, and announced either way.  Without a token on an address
    other machines reach, the server refuses to start.

    Raises
    ------
    InvalidOptionError
        With a message naming the fix.
    """
    environ = os.environ if environ is None else environ
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeError) as exc:
            raise InvalidOptionError(f"--token-file {str(token_file)!r} cannot be read ({exc}); give a "
                             "file holding the token.") from None
        if not token or any(c.isspace() for c in token):
            raise InvalidOptionError(f"--token-file {str(token_file)!r} must hold one token (no spaces).")
        return token
    token = environ.get(TOKEN_ENV, "").strip()
    if token:
        if any(c.isspace() for c in token):
            raise InvalidOptionError(f"${TOKEN_ENV} must be one token (no spaces).")
        return token
    if not is_loopback(host):
        raise InvalidOptionError(f"--host {host} is reachable from other machines, so a token is "
                         f"required: give --token-file FILE or set ${TOKEN_ENV}.")
    token = secrets.token_urlsafe(32)
    if state_dir is not None:
        path = Path(state_dir) / TOKEN_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
        announce(f"a new token is in {path} (send it as 'Authorization: Bearer <token>')",
                 file=sys.stderr)
    else:
        announce(f"token {token} (send it as 'Authorization: Bearer <token>')", file=sys.stderr)
    return token


def serve(host="127.0.0.1", port=8787, *, state_dir=None, token_file=None, sync="normal",
          decide_cap_s=DECIDE_CAP_S, max_body=MAX_BODY, max_sessions=MAX_SESSIONS, log_level="warning"):
    """Run the service until interrupted (one process; sessions live in it and in its journal).

    Parameters
    ----------
    host : str
        Address to listen on (default the loopback address only).
    port : int
        TCP port (0: any free one).
    state_dir : path-like, optional
        The journal's directory: sessions survive a restart (even ``kill -9``) there.
    token_file : path-like, optional
        File holding the bearer token (else ``$HETPLACE_TOKEN``, else a new one on loopback).
    sync, decide_cap_s, max_body, max_sessions
        As :func:`hetplace.service.create_app`.
    log_level : str
        uvicorn's log level.
    """
    import uvicorn

    token = resolve_token(host, token_file, state_dir)
    app = create_app(token, state_dir, sync=sync, decide_cap_s=decide_cap_s, max_body=max_body,
                     max_sessions=max_sessions)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)


class ServerThread:
    """A server running in a thread of this process (:func:`serve_in_thread`).

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>``.
    token : str
        Its bearer token.
    app : fastapi.FastAPI
    """

    def __init__(self, app, token, host, port):
        import threading

        import uvicorn

        self.app, self.token = app, token
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                     timeout_graceful_shutdown=5))
        self._thread = threading.Thread(target=self._server.run, name="hetplace-serve", daemon=True)
        self._thread.start()
        import time

        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start on {host}:{port}")
            time.sleep(0.01)
        bound = self._server.servers[0].sockets[0].getsockname()
        self.url = f"http://{host}:{bound[1]}"

    def close(self):
        """Stop the server and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def serve_in_thread(token, state_dir=None, *, host="127.0.0.1", port=0, **options):
    """Run the service in a background thread of this process (tests, notebooks, a scheduler in Python).

    Parameters
    ----------
    token : str
        The bearer token.
    state_dir : path-like, optional
        The journal's directory.
    host, port
        Where to listen (default 127.0.0.1, any free port).
    **options
        ``sync``, ``decide_cap_s``, ``max_body``, ``max_sessions`` of :func:`create_app`.

    Returns
    -------
    ServerThread
        With ``url`` and ``close()`` (also a context manager).
    """
    return ServerThread(create_app(token, state_dir, **options), token, host, port)
