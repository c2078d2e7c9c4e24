"""Fixtures for the policy engines: the corpus, the OPA binary and a running OPA server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registry.policy.embedded import EmbeddedEngine
from registry.policy.opa_server import OpaServerEngine

INPUTS = Path(__file__).resolve().parents[1] / "gate" / "inputs"
EXPECTED: dict[str, dict[str, Any]] = json.loads((INPUTS / "expected.json").read_text())
CASES = sorted(EXPECTED)


def load_case(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((INPUTS / name).read_text())
    return doc


@pytest.fixture(scope="session")
def embedded() -> EmbeddedEngine:
    return EmbeddedEngine()


@pytest.fixture(scope="session")
def opa_engine(opa_url: str) -> Iterator[OpaServerEngine]:
    engine = OpaServerEngine(opa_url)
    yield engine
    engine.close()
