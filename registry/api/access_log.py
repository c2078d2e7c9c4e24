"""One structured line per request: who, what, the answer and how long it took.

A plain ASGI middleware, not `@app.middleware("http")`: Starlette's BaseHTTPMiddleware
runs every request through an extra task and a memory stream, about a millisecond of
CPU a request (docs/production.md, *Gate throughput*), for a line that needs only the
status and the identity the request left in its state.
"""

from __future__ import annotations

import json
import logging
import time

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("capgate.access")


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            _log_line(scope, status, started)


def _log_line(scope: Scope, status: int, started: float) -> None:
    # get_identity leaves the verified identity in the request's state (scope["state"]).
    identity = scope.get("state", {}).get("identity")
    route = scope.get("route")
    client = scope.get("client")
    log.info(
        json.dumps(
            {
                "principal": identity.subject if identity else None,
                "via": identity.via if identity else None,
                "method": scope.get("method"),
                "route": getattr(route, "path_format", None),
                "path": scope.get("path"),
                "status": status,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                "client": client[0] if client else None,
            },
            separators=(",", ":"),
        )
    )


def install_access_log(app: FastAPI) -> None:
    app.add_middleware(AccessLogMiddleware)
