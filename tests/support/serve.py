"""`capgate serve` in its own process, as an operator starts it, until the test is done."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.opa_server import free_port


@contextmanager
def capgate_serve(
    env: dict[str, str], *args: str, ready: str = "/readyz", cwd: Path | None = None
) -> Iterator[str]:
    """Start `capgate serve --port P ARGS` and yield its URL once `ready` answers 200
    (from ``cwd``: a directory whose ``policies`` package the server then loads)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port), *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + ready, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"capgate serve did not start: {process.communicate()[1][-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)
