"""The embedded engine's build step: OPA compiles the modules once, deterministically."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import wasmtime

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine, memory_minimum, wasm_policy
from registry.policy.engine import PolicyError
from registry.policy.wasm_build import WasmBuildError, compiled_policy, modules_digest
from tests.policy.conftest import load_case


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opa_binary: Path) -> Path:
    monkeypatch.setenv("CAPGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(opa_binary))
    return tmp_path / "cache"


def test_success_build_is_deterministic(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = compiled_policy(load_bundle())
    monkeypatch.setenv("CAPGATE_CACHE", str(cache.parent / "another"))
    second = compiled_policy(load_bundle())
    assert first.wasm == second.wasm
    assert first.wasm_digest == second.wasm_digest


def test_success_cached_module_needs_no_opa(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = compiled_policy(load_bundle())
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(cache / "no-such-opa"))
    assert compiled_policy(load_bundle()).wasm == built.wasm


def test_success_a_data_change_needs_no_build(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Data is loaded into the module, not compiled in: a stricter threshold decides
    differently from the same cached module, with no OPA to build another."""
    shipped = load_bundle()
    compiled_policy(shipped)
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(cache / "no-such-opa"))
    data = copy.deepcopy(shipped.data)
    data["capgate"]["thresholds"]["retry_max_attempts"] = 1
    stricter = PolicyBundle.from_sources(dict(shipped.modules), data)
    assert modules_digest(stricter) == modules_digest(shipped)
    assert stricter.revision != shipped.revision
    decision = EmbeddedEngine(stricter).decide(load_case("compliant.json"))
    assert "retries_bounded" in decision.policies


def test_fail_no_opa_names_how_to_get_it(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(cache / "no-such-opa"))
    changed = PolicyBundle.from_sources(
        {**load_bundle().modules, "extra/extra.rego": "package capgate.extra\n\nx := 1\n"},
        load_bundle().data,
    )
    with pytest.raises(WasmBuildError, match=r"no such OPA was found .*scripts/ci/opa\.sh"):
        compiled_policy(changed)
    with pytest.raises(PolicyError, match="CAPGATE_OPA_BINARY"):
        EmbeddedEngine(changed)


def test_fail_another_opa_version_is_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    impostor = tmp_path / "opa"
    impostor.write_text("#!/bin/sh\necho 'Version: 0.70.0'\n")
    impostor.chmod(0o755)
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(impostor))
    with pytest.raises(WasmBuildError, match=r"version 0\.70\.0"):
        compiled_policy(load_bundle())


def test_success_memory_minimum_is_what_wasmtime_reads(cache: Path) -> None:
    wasm = compiled_policy(load_bundle()).wasm
    module = wasmtime.Module(wasmtime.Engine(), wasm)
    (memory,) = [item.type for item in module.imports if item.name == "memory"]
    assert isinstance(memory, wasmtime.MemoryType)
    assert memory_minimum(wasm) == memory.limits.min


def test_success_shipped_module_asks_its_host_for_nothing(cache: Path) -> None:
    """Every built-in the shipped policies call is compiled into the module by OPA."""
    assert wasm_policy(load_bundle()).host_builtins == []
