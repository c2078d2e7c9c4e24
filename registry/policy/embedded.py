"""The embedded engine: the bundle compiled by OPA to WebAssembly, evaluated in process.

The default engine must decide exactly as OPA does, so it runs OPA's own compiler
output (registry.policy.wasm_build) on wasmtime through ``opa-py-wasm``: OPA's planner,
OPA's built-ins (numbers compared as numbers in ``max``/``min``/``sort``, OPA's decimal
arithmetic), with one built-in, ``sprintf``, formatted by the host for the verbs whose
Go output is certain (registry.policy.wasm_builtins). docs/opa.md says why this engine
and not regopy, and tests/policy/test_differential.py holds it to OPA on generated
inputs.

Traps handled here:

* opa-py-wasm 1.2.1 gives a module 2 pages (128 KiB) of memory to start with, while
  ``opa build`` declares the minimum its data segments need (3 pages for our bundle):
  wasmtime then refuses to link. The start size is raised to the module's own minimum.
* the module's built-in errors are undefined values inside OPA's Wasm (no strict mode);
  the gate's decision is then undefined or malformed, and both are a PolicyError.
* the host's ``sprintf`` refuses a format it cannot print as OPA does: an error.
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
from registry.policy.wasm_builtins import sprintf

POOL_SIZE = 2
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
EVAL_TIMEOUT_S = 30.0
# Host built-ins the module may call; a module asking for any other one is refused at
# load, not when a decision happens to reach it.
HOST_BUILTINS = {"sprintf": sprintf}

_pages_lock = threading.Lock()


def _ensure_start_pages(wasm: bytes) -> None:
    """Raise opa-py-wasm's start memory to what this module declares it needs."""
    import wasmtime
    from opapywasm import runtime

    module = wasmtime.Module(wasmtime.Engine(), wasm)
    for item in module.imports:
        if item.module == "env" and item.name == "memory":
            memory = item.type
            assert isinstance(memory, wasmtime.MemoryType)
            with _pages_lock:
                runtime._DEFAULT_MEMORY_PAGES = max(
                    runtime._DEFAULT_MEMORY_PAGES, int(memory.limits.min)
                )


class WasmPolicy:
    """One compiled module with its data document, evaluated by a small instance pool."""

    def __init__(self, compiled: CompiledPolicy, data: dict[str, Any], entrypoint: str) -> None:
        from opapywasm import OpaWasmError, OpaWasmPolicy, PolicyConfig

        self.compiled = compiled
        self._errors: tuple[type[BaseException], ...] = (OpaWasmError,)
        _ensure_start_pages(compiled.wasm)
        config = PolicyConfig(
            pool_size=POOL_SIZE,
            default_entrypoint=entrypoint,
            max_input_bytes=MAX_DOCUMENT_BYTES,
            max_data_bytes=MAX_DOCUMENT_BYTES,
            max_result_bytes=MAX_DOCUMENT_BYTES,
            eval_timeout_seconds=EVAL_TIMEOUT_S,
        )
        try:
            self._policy = OpaWasmPolicy.from_wasm_bytes(compiled.wasm, config=config)
            needed = set(self._policy.builtins)
            unknown = sorted(needed - set(HOST_BUILTINS))
            if unknown:
                raise PolicyError(
                    f"embedded engine: the compiled bundle calls host built-ins {unknown} "
                    f"that only {sorted(HOST_BUILTINS)} are provided for"
                )
            for name in needed:
                self._policy.register_builtin(name, HOST_BUILTINS[name])
            self._policy.set_data(data)
        except self._errors as exc:
            raise PolicyError(f"embedded engine: the compiled bundle does not load: {exc}") from exc

    def evaluate(self, input_json: bytes) -> tuple[bool, Any]:
        """(defined, value) of the entrypoint for an input given as JSON text."""
        from opapywasm import UNDEFINED

        try:
            value = self._policy.evaluate(input_json)
        except self._errors as exc:
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
