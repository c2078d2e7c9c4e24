"""Real sockets between capgate and its OPA: a proxy that delays, a server that lies.

`DelayingProxy` forwards loopback TCP to a real OPA and holds each answer back for
`delay` seconds (0: a plain proxy). `GarbageServer` answers every request the way a
misconfigured endpoint might: 200 with a body that is not OPA's, or a cut connection.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

HOST = "127.0.0.1"


class DelayingProxy:
    def __init__(self, upstream: str, delay: float = 0.0) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or HOST, parts.port or 80)
        self.delay = delay
        self._listener = socket.create_server((HOST, 0))
        self.url = f"http://{HOST}:{self._listener.getsockname()[1]}"
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> DelayingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a pump blocked in recv
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            asked = threading.Event()  # a request went up: hold its answer back
            for source, sink, answers in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(
                    target=self._pump, args=(source, sink, asked, answers), daemon=True
                ).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, asked: threading.Event, answers: bool
    ) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if not answers:
                    asked.set()
                elif asked.is_set():
                    asked.clear()
                    if self.delay:  # read per answer: keep-alive connections slow down too
                        time.sleep(self.delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class GarbageServer:
    """Answers every request with `status`, `content_type` and `body`; `body=None` cuts
    the connection without an answer; `short=True` promises more bytes than it sends."""

    def __init__(
        self,
        body: bytes | None,
        *,
        status: int = 200,
        content_type: str = "application/json",
        short: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.requests.append(f"{self.command} {self.path}")
                if body is None:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body) + (100 if short else 0)))
                self.end_headers()
                self.wfile.write(body)
                if short:
                    self.wfile.flush()
                    self.close_connection = True

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://{HOST}:{self._httpd.server_address[1]}"

    def __enter__(self) -> GarbageServer:
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
