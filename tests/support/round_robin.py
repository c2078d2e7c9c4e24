"""One address in front of several capgate servers: a round-robin HTTP proxy on loopback.

What a Kubernetes Service or a load balancer does for replicas, small enough to read:
each request goes to the next backend, bytes and headers passed through unchanged.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


@contextmanager
def round_robin(backends: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """Yield the proxy's URL and the list of backends each request went to, in order.

    `backends` may grow after the proxy starts (it is read per request); until it has
    one, the proxy answers 502, as a load balancer with no ready endpoint does."""
    turn = itertools.count()
    lock = threading.Lock()
    served: list[str] = []
    client = httpx.Client(timeout=120)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with lock:
                if not backends:
                    self.send_error(502, "no backend is ready")
                    return
                backend = backends[next(turn) % len(backends)]
                served.append(backend)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            response = client.request(
                self.command, backend + self.path, content=body, headers=headers
            )
            data = response.content
            self.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in HOP_BY_HOP | {"content-encoding"}:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

        def log_message(self, *_: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()
        client.close()
