"""Fixtures for the policy engines: the corpus, the OPA binary and a running OPA server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.policy.embedded import EmbeddedEngine
from registry.policy.opa_server import OpaServerEngine
from tests.support.opa_server import running_opa

INPUTS = Path(__file__).resolve().parents[1] / "gate" / "inputs"
EXPECTED: dict[str, dict[str, Any]] = json.loads((INPUTS / "expected.json").read_text())
CASES = sorted(EXPECTED)
CACHED_OPA = Path.home() / ".cache" / "capgate" / "opa-v1.22.3" / "bin" / "opa"


def load_case(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((INPUTS / name).read_text())
    return doc


@pytest.fixture(scope="session")
def opa_binary() -> Path:
    """CAPGATE_OPA_BINARY, else the cached build; skipped without one, failed on CI."""
    configured = os.environ.get("CAPGATE_OPA_BINARY")
    binary = Path(configured) if configured else CACHED_OPA
    if not binary.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"no OPA binary at {binary}: CI must test the real OPA (scripts/ci/opa.sh)")
        pytest.skip(f"no OPA binary at {binary} (run scripts/ci/opa.sh)")
    return binary


@pytest.fixture(scope="session")
def opa_url(opa_binary: Path) -> Iterator[str]:
    """One OPA server for the session; tests that change its bundle use their own."""
    with running_opa(opa_binary) as url:
        yield url


@pytest.fixture(scope="session")
def embedded() -> EmbeddedEngine:
    return EmbeddedEngine()


@pytest.fixture(scope="session")
def opa_engine(opa_url: str) -> Iterator[OpaServerEngine]:
    engine = OpaServerEngine(opa_url)
    yield engine
    engine.close()
