"""Run a throwaway OPA server for tests.

Usage::

    with running_opa(Path(opa_binary)) as base_url:
        httpx.get(f"{base_url}/health")

The binary is the one ``scripts/ci/opa.sh`` builds and prints.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 20.0
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


def _healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=1.0) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


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
    binary: Path, port: int, args: Sequence[str], log: IO[bytes], timeout: float
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
    base_url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise OpaStartError(
                f"OPA exited with code {proc.returncode} before answering on {base_url}:\n"
                + _read_log(log)
            )
        if _healthy(base_url):
            return proc
        if time.monotonic() >= deadline:
            _stop(proc)
            raise OpaStartError(
                f"OPA did not answer {base_url}/health within {timeout:g} s:\n" + _read_log(log)
            )
        time.sleep(0.1)


@contextmanager
def running_opa(
    binary: Path,
    port: int | None = None,
    *,
    args: Sequence[str] = (),
    timeout: float = STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """Run ``opa run --server`` on 127.0.0.1 and yield its base URL.

    ``port=None`` picks a free port (retrying if it is lost to a race).
    ``args`` are extra arguments for ``opa run``, e.g. policy/data paths.
    The server is terminated (then killed, if need be) on exit.
    """
    if not binary.is_file():
        raise FileNotFoundError(f"OPA binary not found: {binary} (run scripts/ci/opa.sh)")
    with tempfile.TemporaryFile(prefix="opa-server-", suffix=".log") as log:
        attempts = 1 if port is not None else _AUTO_PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            chosen = port if port is not None else free_port()
            log.seek(0)
            log.truncate()
            try:
                proc = _start(binary, chosen, args, log, timeout)
            except OpaStartError:
                if attempt == attempts:
                    raise
                continue
            break
        try:
            yield f"http://{HOST}:{chosen}"
        finally:
            _stop(proc)
