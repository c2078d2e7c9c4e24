"""Run throwaway OPA servers (and a capgate server for them to pull from) in tests.

Usage::

    # OPA holding capgate's bundle, loaded from a signed tarball it verifies at start:
    with running_opa(Path(opa_binary)) as base_url:
        OpaServerEngine(base_url).decide(...)

    # capgate on loopback and an OPA sidecar that pulls its bundle and reports decisions:
    with running_capgate(database_url, settings) as capgate_url:
        with running_opa_sidecar(opa_binary, capgate_url, token, key) as opa_url:
            ...

The binary is the one ``scripts/ci/opa.sh`` builds and prints.
"""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.opa_bundle import BUNDLE_NAME, BundleSigningKey, build_opa_bundle

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 20.0
ACTIVATION_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
# An auto-picked port can be taken by someone else between picking and binding.
_AUTO_PORT_ATTEMPTS = 3


class OpaStartError(RuntimeError):
    """The OPA server did not come up."""


def free_port(host: str = HOST) -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@lru_cache(maxsize=1)
def signing_key_for_tests() -> BundleSigningKey:
    """One RSA bundle signing key per test process (generating one takes a while)."""
    return BundleSigningKey.generate()


def health_status(
    base_url: str,
    path: str = "/health",
    timeout: float = 1.0,
    client: tuple[Path, Path] | None = None,
) -> int | None:
    """The HTTP status of an OPA health endpoint, None when nothing answers.

    Liveness only: an https server's certificate is not checked here; ``client`` is the
    certificate and key to present to an OPA that asks for one (mutual TLS)."""
    context = ssl._create_unverified_context() if base_url.startswith("https:") else None
    if context is not None and client is not None:
        context.load_cert_chain(str(client[0]), str(client[1]))
    try:
        with urllib.request.urlopen(f"{base_url}{path}", timeout=timeout, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def wait_for_bundle(base_url: str, timeout: float = ACTIVATION_TIMEOUT_S) -> None:
    """Wait until OPA's bundles are activated (``/health?bundles`` answers 200)."""
    deadline = time.monotonic() + timeout
    while health_status(base_url, "/health?bundles") != 200:
        if time.monotonic() >= deadline:
            raise OpaStartError(f"OPA at {base_url} did not activate its bundles in {timeout:g} s")
        time.sleep(0.05)


def _read_log(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", errors="replace").strip()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _start(
    binary: Path,
    port: int,
    args: Sequence[str],
    log: IO[bytes],
    timeout: float,
    scheme: str,
    client: tuple[Path, Path] | None = None,
) -> subprocess.Popen[bytes]:
    """Start OPA and wait for /health; on failure stop it and raise OpaStartError."""
    cmd = [
        str(binary),
        "run",
        "--server",
        "--addr",
        f"{HOST}:{port}",
        "--log-level",
        "error",
        "--skip-version-check",
        *args,
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    base_url = f"{scheme}://{HOST}:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise OpaStartError(
                f"OPA exited with code {proc.returncode} before answering on {base_url}:\n"
                + _read_log(log)
            )
        if health_status(base_url, client=client) == 200:
            return proc
        if time.monotonic() >= deadline:
            _stop(proc)
            raise OpaStartError(
                f"OPA did not answer {base_url}/health within {timeout:g} s:\n" + _read_log(log)
            )
        time.sleep(0.05)


@contextmanager
def _running(
    binary: Path,
    port: int | None,
    args: Sequence[str],
    timeout: float,
    scheme: str = "http",
    client: tuple[Path, Path] | None = None,
) -> Iterator[tuple[str, IO[bytes]]]:
    if not binary.is_file():
        raise FileNotFoundError(f"OPA binary not found: {binary} (run scripts/ci/opa.sh)")
    with tempfile.TemporaryFile(prefix="opa-server-", suffix=".log") as log:
        attempts = 1 if port is not None else _AUTO_PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            chosen = port if port is not None else free_port()
            log.seek(0)
            log.truncate()
            try:
                proc = _start(binary, chosen, args, log, timeout, scheme, client)
            except OpaStartError as exc:
                # A lost port race is worth another try; anything else is final.
                if attempt == attempts or "address already in use" not in str(exc):
                    raise
                continue
            break
        try:
            yield f"{scheme}://{HOST}:{chosen}", log
        finally:
            _stop(proc)


def verification_args(directory: Path, key: BundleSigningKey) -> list[str]:
    """``opa run`` flags that make OPA verify bundle signatures with `key`."""
    public = directory / "bundle-key.pub.pem"
    public.write_text(key.public_pem())
    return [
        "--verification-key",
        str(public),
        "--verification-key-id",
        key.key_id,
        "--signing-alg",
        key.algorithm,
    ]


@contextmanager
def running_opa(
    binary: Path,
    port: int | None = None,
    *,
    args: Sequence[str] = (),
    timeout: float = STARTUP_TIMEOUT_S,
    bundle: PolicyBundle | None = None,
    key: BundleSigningKey | None = None,
    empty: bool = False,
    tls: tuple[Path, Path] | None = None,
    client_ca: Path | None = None,
    client: tuple[Path, Path] | None = None,
) -> Iterator[str]:
    """Run ``opa run --server`` on 127.0.0.1 holding a signed capgate bundle; yield its URL.

    The bundle (capgate's own unless `bundle` is given) is written as a tarball signed
    with `key` (the tests' key by default) and loaded with ``--bundle``; OPA verifies
    its signature before it answers at all. ``empty=True`` starts OPA with no bundle.
    ``tls=(certificate, private key)`` (PEM files) serves https only; with ``client_ca``
    too, OPA answers only clients whose certificate chains to it (``--authentication=tls``,
    mutual TLS), and ``client`` is the certificate the readiness probe presents. ``port=None``
    picks a free port; ``args`` are extra ``opa run`` arguments. The server is
    terminated (then killed, if need be) on exit.
    """
    with tempfile.TemporaryDirectory(prefix="opa-bundle-") as scratch:
        directory = Path(scratch)
        extra: list[str] = []
        if not empty:
            signing = key or signing_key_for_tests()
            tarball = directory / f"{BUNDLE_NAME}.tar.gz"
            tarball.write_bytes(build_opa_bundle(bundle or load_bundle(), signing).tarball)
            extra = [*verification_args(directory, signing), "--bundle", str(tarball)]
        scheme = "http"
        if tls is not None:
            scheme = "https"
            extra += ["--tls-cert-file", str(tls[0]), "--tls-private-key-file", str(tls[1])]
            if client_ca is not None:
                extra += ["--tls-ca-cert-file", str(client_ca), "--authentication=tls"]
        with _running(binary, port, [*extra, *args], timeout, scheme, client) as (url, _log):
            yield url


# ---- OPA pulling its bundle from a service --------------------------------------------


def sidecar_config(
    service_url: str,
    token: str | None,
    key: BundleSigningKey | None,
    *,
    decision_logs: bool = True,
    resource: str = f"bundles/{BUNDLE_NAME}.tar.gz",
) -> dict[str, Any]:
    """An OPA configuration: pull capgate's bundle (verified with `key`), send decisions.

    ``service_url`` is capgate's API base (``http://host:port/v1``); ``token`` is the
    API token OPA presents to it. The same shape as docs/opa.md.
    """
    service: dict[str, Any] = {"url": service_url, "response_header_timeout_seconds": 5}
    if token is not None:
        service["credentials"] = {"bearer": {"token": token}}
    bundle: dict[str, Any] = {
        "service": "capgate",
        "resource": resource,
        "polling": {"min_delay_seconds": 1, "max_delay_seconds": 2},
    }
    config: dict[str, Any] = {"services": {"capgate": service}, "bundles": {BUNDLE_NAME: bundle}}
    if key is not None:
        bundle["signing"] = {"keyid": key.key_id}
        config["keys"] = key.opa_key_config()
    if decision_logs:
        config["decision_logs"] = {
            "service": "capgate",
            "resource": "/decision-logs",
            "reporting": {"min_delay_seconds": 1, "max_delay_seconds": 1},
        }
    return config


@dataclass
class Sidecar:
    """A running OPA sidecar: its URL and its log so far."""

    url: str
    _log: IO[bytes] = field(repr=False)

    def log(self) -> str:
        position = self._log.tell()
        text = _read_log(self._log)
        self._log.seek(position)
        return text


@contextmanager
def running_opa_sidecar(
    binary: Path,
    config: dict[str, Any],
    *,
    args: Sequence[str] = (),
    wait_for_activation: bool = True,
    timeout: float = STARTUP_TIMEOUT_S,
) -> Iterator[Sidecar]:
    """Run OPA with `config` (see sidecar_config); by default wait until its bundles are
    activated. The log level is ``info`` so that a refused bundle says why."""
    with tempfile.TemporaryDirectory(prefix="opa-sidecar-") as scratch:
        config_file = Path(scratch) / "config.json"
        config_file.write_text(json.dumps(config))
        with _running(
            binary, None, ["--config-file", str(config_file), *args, "--log-level", "info"], timeout
        ) as (url, log):
            sidecar = Sidecar(url, log)
            if wait_for_activation:
                try:
                    wait_for_bundle(url)
                except OpaStartError as exc:
                    raise OpaStartError(f"{exc}:\n{sidecar.log()[-4000:]}") from None
            yield sidecar


# ---- a static bundle server (for bundles capgate would never serve) --------------------


class BundleServer:
    """Serves one tarball at any path (ETag = a counter); swap it with `serve`."""

    def __init__(self) -> None:
        self._tarball = b""
        self._etag = '"0"'
        self._lock = threading.Lock()
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server._lock:
                    tarball, etag = server._tarball, server._etag
                    server.requests.append(self.path)
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("ETag", etag)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(tarball)))
                self.end_headers()
                self.wfile.write(tarball)

            def do_POST(self) -> None:  # decision logs: accepted and dropped
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self._httpd.server_address[1]}"

    def serve(self, tarball: bytes) -> None:
        with self._lock:
            self._tarball = tarball
            self._etag = f'"{int(self._etag.strip(chr(34))) + 1}"'

    def __enter__(self) -> BundleServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# ---- capgate itself on loopback --------------------------------------------------------


@contextmanager
def running_capgate(app: Any) -> Iterator[str]:
    """A real uvicorn server for `app` on loopback (a thread); yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("capgate did not start")
        time.sleep(0.02)
    try:
        yield f"http://{HOST}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
