"""One structured line per request: who, what, the answer and how long it took."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

log = logging.getLogger("capgate.access")


def install_access_log(app: FastAPI) -> None:
    @app.middleware("http")
    async def _access_log(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            if log.isEnabledFor(logging.INFO):
                identity = getattr(request.state, "identity", None)
                route = request.scope.get("route")
                log.info(
                    json.dumps(
                        {
                            "principal": identity.subject if identity else None,
                            "via": identity.via if identity else None,
                            "method": request.method,
                            "route": getattr(route, "path_format", None),
                            "path": request.url.path,
                            "status": status,
                            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                            "client": request.client.host if request.client else None,
                        },
                        separators=(",", ":"),
                    )
                )
