"""hetplace as a service: ``hetplace serve`` (docs/service.md).

HTTP/JSON for schedulers written in any language: stateless placements
(``POST /v1/place``) and sessions a scheduler holds (``/v1/sessions``: events in,
decisions out), every accepted event batch journaled (SQLite, WAL) before its
reply, a bearer token on every request but ``/healthz``, Prometheus metrics at
``/metrics`` and the OpenAPI schema at ``/openapi.json``.  The client is
:class:`hetplace.client.Client`.

Needs the ``service`` extra: ``pip install "hetplace[service]"``.
"""

from ..errors import MissingDependencyError

try:
    import fastapi  # noqa: F401
    import prometheus_client  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise MissingDependencyError(
        f"hetplace.service needs FastAPI, uvicorn and prometheus-client ({exc.name} is missing); install them "
        'with: pip install "hetplace[service]"') from None

from ._app import DECIDE_CAP_S, MAX_BODY, MAX_SESSIONS, create_app  # noqa: E402
from ._serve import ServerThread, serve, serve_in_thread  # noqa: E402

__all__ = ["create_app", "serve", "serve_in_thread", "ServerThread", "MAX_BODY", "MAX_SESSIONS", "DECIDE_CAP_S"]
