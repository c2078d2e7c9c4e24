"""The embedded engine: the bundle evaluated in-process by regopy (rego-cpp).

The bundle is compiled once per revision (regopy's ``Interpreter.build``) and each
decision runs the compiled plan with its input. Traps of regopy 1.5.2 handled here:

* built-in errors are silently undefined unless ``strict_built_in_errors`` is on: on;
* ``Input(value)`` keeps only about six significant digits of floats: the input is
  passed as JSON text (``set_input_term``) instead;
* test modules (``with ... as ...``) crash the process: the bundle never holds them;
* an undefined or erroring decision comes back as an "undefined" or error output, not
  an exception: both are a :class:`PolicyError`.
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

_BINDING = "decision"
_ERROR_MESSAGE_KIND = 1801  # regopy NodeKind.ErrorMessage


class _Compiled:
    """One bundle revision compiled by regopy, queried under a lock."""

    def __init__(self, bundle: PolicyBundle) -> None:
        from regopy import Interpreter

        builder = Interpreter()
        builder.strict_built_in_errors = True
        try:
            for path, source in bundle.modules.items():
                builder.add_module(path, source)
            builder.add_data_json(json.dumps(bundle.data))
            self._plan = builder.build(f"{_BINDING} = {DECISION_QUERY}")
        except Exception as exc:  # regopy raises RegoError with the compiler's messages
            raise PolicyError(
                f"embedded engine: policy bundle {bundle.revision} does not compile: {exc}"
            ) from exc
        if not self._plan.ok():
            raise PolicyError(f"embedded engine: policy bundle {bundle.revision} does not compile")
        self._runner = Interpreter()
        self._runner.strict_built_in_errors = True
        self._lock = threading.Lock()

    def query(self, input_json: str) -> Any:
        with self._lock:
            try:
                self._runner.set_input_term(input_json)
                output = self._runner.query_bundle(self._plan)
            except Exception as exc:  # RegoError, or regopy failing to parse its own output
                raise PolicyError(
                    f"embedded engine: evaluating {DECISION_QUERY} failed: {exc}"
                ) from exc
            if not output.ok():
                raise PolicyError(
                    f"embedded engine: evaluating {DECISION_QUERY} failed: "
                    + "; ".join(_error_messages(output.node()) or ["unknown error"])
                )
            results = output.results
        bindings = [result.bindings for result in results if _BINDING in result.bindings]
        if not bindings:
            raise PolicyError(
                f"embedded engine: {DECISION_QUERY} is undefined for this input "
                "(a policy or the gate is missing, or the input lacks a top-level document)"
            )
        if len(bindings) > 1:
            raise PolicyError(f"embedded engine: {DECISION_QUERY} has {len(bindings)} values")
        return bindings[0][_BINDING]


def _error_messages(node: Any) -> list[str]:
    """The messages in a regopy error node (rego-errorseq / error / errormsg)."""
    from regopy.rego_shared import rego_node_get, rego_node_size, rego_node_type, rego_node_value

    messages: list[str] = []

    def walk(impl: Any) -> None:
        if rego_node_type(impl) == _ERROR_MESSAGE_KIND:
            messages.append(rego_node_value(impl))
        for index in range(rego_node_size(impl)):
            walk(rego_node_get(impl, index))

    walk(node._impl)
    return messages


_compiled_cache: dict[str, _Compiled] = {}
_cache_lock = threading.Lock()


def _compiled(bundle: PolicyBundle) -> _Compiled:
    with _cache_lock:
        compiled = _compiled_cache.get(bundle.revision)
        if compiled is None:
            compiled = _Compiled(bundle)
            _compiled_cache[bundle.revision] = compiled
        return compiled


class EmbeddedEngine:
    """regopy in-process; the default engine."""

    name = "embedded"

    def __init__(self, bundle: PolicyBundle | None = None) -> None:
        self._bundle = bundle or load_bundle()
        self._compiled = _compiled(self._bundle)

    @property
    def revision(self) -> str:
        return self._bundle.revision

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        validate_input(input)
        try:
            input_json = json.dumps(input, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"embedded engine: the input is not JSON: {exc}") from exc
        return decision_from_result(self._compiled.query(input_json), engine=self.name)
