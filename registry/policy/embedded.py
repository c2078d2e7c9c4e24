"""The embedded engine: the bundle compiled by OPA to WebAssembly, evaluated in process.

The default engine must decide exactly as OPA does, so it runs OPA's own compiler
output (registry.policy.wasm_build) on wasmtime through ``opa-py-wasm``: OPA's planner,
OPA's built-ins (numbers compared as numbers in ``max``/``min``/``sort``, OPA's decimal
arithmetic). The host supplies no built-in at all: a module that asks its host for one
(OPA's Wasm leaves ``sprintf``, ``time.*``, ``http.send`` and others to the host) is
refused at load, so nothing that decides is written here. docs/opa.md says why this
engine, tests/policy/test_differential_*.py hold it to OPA on generated inputs and
tests/policy/test_builtin_conformance.py on every built-in the policies call.

Traps handled here:

* opa-py-wasm 1.2.1 gives a module 2 pages (128 KiB) of memory to start with, while
  ``opa build`` declares the minimum its data segments need (3 pages for our bundle):
  wasmtime then refuses to link. The start size is raised to the module's own minimum.
* OPA's Wasm has no strict mode: a built-in error is an undefined value, so a rule
  that needs it does not fire (it can drop a violation). The policies call no built-in
  that can fail on a valid input, and the differential suite compares OPA's strict
  answers, errors included; an undefined or malformed decision is a PolicyError.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.engine import (
    DECISION_QUERY,
    PolicyDecision,
    PolicyError,
    decision_from_result,
    validate_input,
)
from registry.policy.wasm_build import (
    ENTRYPOINT,
    CompiledPolicy,
    WasmBuildError,
    compiled_policy,
)

POOL_SIZE = 2
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
EVAL_TIMEOUT_S = 30.0

_pages_lock = threading.Lock()


def _leb128(data: bytes, at: int) -> tuple[int, int]:
    """An unsigned LEB128 number at ``at``: (value, the offset after it)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def memory_minimum(wasm: bytes) -> int:
    """The minimum pages the module's imported memory declares (its import section).

    Read from the binary, not by compiling it: wasmtime would spend half a second
    compiling the module a second time only to list its imports.
    """
    at = 8  # magic and version
    while at < len(wasm):
        section, at = wasm[at], at + 1
        size, at = _leb128(wasm, at)
        if section != 2:  # not the import section
            at += size
            continue
        count, at = _leb128(wasm, at)
        for _ in range(count):
            names = []
            for _part in range(2):
                length, at = _leb128(wasm, at)
                names.append(wasm[at : at + length].decode("utf-8"))
                at += length
            kind, at = wasm[at], at + 1
            if kind == 0:  # function: a type index
                _index, at = _leb128(wasm, at)
                continue
            if kind == 3:  # global: value type and mutability
                at += 2
                continue
            if kind == 1:  # table: reference type, then limits
                at += 1
            flags, at = wasm[at], at + 1
            minimum, at = _leb128(wasm, at)
            if flags & 1:
                _maximum, at = _leb128(wasm, at)
            if kind == 2 and names == ["env", "memory"]:
                return minimum
        break
    raise PolicyError("embedded engine: the compiled bundle imports no env.memory")


def _ensure_start_pages(wasm: bytes) -> None:
    """Raise opa-py-wasm's start memory to what this module declares it needs."""
    from opapywasm import runtime

    needed = memory_minimum(wasm)
    with _pages_lock:
        runtime._DEFAULT_MEMORY_PAGES = max(runtime._DEFAULT_MEMORY_PAGES, needed)


class WasmPolicy:
    """One compiled module with its data document, evaluated by a small instance pool."""

    def __init__(self, compiled: CompiledPolicy, data: dict[str, Any], entrypoint: str) -> None:
        from opapywasm import OpaWasmError, OpaWasmPolicy, PolicyConfig

        self.compiled = compiled
        _ensure_start_pages(compiled.wasm)
        config = PolicyConfig(
            pool_size=POOL_SIZE,
            default_entrypoint=entrypoint,
            max_input_bytes=MAX_DOCUMENT_BYTES,
            max_data_bytes=MAX_DOCUMENT_BYTES,
            max_result_bytes=MAX_DOCUMENT_BYTES,
            eval_timeout_seconds=EVAL_TIMEOUT_S,
            # Every caller hands it text json.dumps just wrote (`evaluate`'s contract): parsed
            # again to validate it, a 7 KB gate input cost about 1 % of a check's CPU.
            parse_raw_json_input=False,
        )
        try:
            self._policy = OpaWasmPolicy.from_wasm_bytes(compiled.wasm, config=config)
            # Refused at load, not when a decision happens to reach the call.
            host = self.host_builtins
            if host:
                raise PolicyError(
                    f"embedded engine: the policies call {', '.join(host)}, which OPA's "
                    "Wasm leaves to the host; this engine provides no host built-in "
                    "(write the rule with built-ins OPA compiles in, docs/policies.md)"
                )
            self._policy.set_data(data)
        except OpaWasmError as exc:
            raise PolicyError(f"embedded engine: the compiled bundle does not load: {exc}") from exc

    @property
    def host_builtins(self) -> list[str]:
        """The built-ins the module asks its host for (OPA compiled in all the others)."""
        return sorted(self._policy.builtins)

    def evaluate(self, input_json: bytes) -> tuple[bool, Any]:
        """(defined, value) of the entrypoint for an input given as JSON text, which the
        caller serialised (json.dumps): it is not parsed again before the module reads it."""
        from opapywasm import UNDEFINED, OpaWasmError

        try:
            value = self._policy.evaluate(input_json)
        except OpaWasmError as exc:
            raise PolicyError(
                f"embedded engine: evaluating {DECISION_QUERY} failed: {exc}"
            ) from exc
        return value is not UNDEFINED, value


_loaded: dict[tuple[str, str], WasmPolicy] = {}
_loaded_lock = threading.Lock()


def wasm_policy(bundle: PolicyBundle, entrypoint: str = ENTRYPOINT) -> WasmPolicy:
    """The bundle's compiled module with its data, loaded once per process."""
    key = (bundle.revision, entrypoint)
    with _loaded_lock:
        policy = _loaded.get(key)
        if policy is None:
            try:
                compiled = compiled_policy(bundle, entrypoint)
            except WasmBuildError as exc:
                raise PolicyError(f"embedded engine: {exc}") from exc
            policy = WasmPolicy(compiled, bundle.data, entrypoint)
            _loaded[key] = policy
        return policy


class EmbeddedEngine:
    """OPA's compiled bundle in process; the default engine."""

    name = "embedded"

    def __init__(self, bundle: PolicyBundle | None = None) -> None:
        self._bundle = bundle or load_bundle()
        self._policy = wasm_policy(self._bundle)

    @property
    def revision(self) -> str:
        return self._bundle.revision

    @property
    def wasm_digest(self) -> str:
        """The sha256 of the compiled module that decides."""
        return self._policy.compiled.wasm_digest

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        validate_input(input)
        try:
            input_json = json.dumps(input, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"embedded engine: the input is not JSON: {exc}") from exc
        defined, result = self._policy.evaluate(input_json)
        if not defined:
            raise PolicyError(
                f"embedded engine: {DECISION_QUERY} is undefined for this input "
                "(a policy or the gate is missing, or the input lacks a top-level document)"
            )
        return decision_from_result(result, engine=self.name)
