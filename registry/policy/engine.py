"""What every policy engine promises: one decision shape, validated, fail closed.

Both engines evaluate ``data.capgate.gate.decision`` of the same bundle. Anything but a
well-formed decision (undefined, an evaluation error, the wrong shape, an allow that
carries violations) is a :class:`PolicyError`, never an allow.
"""

from __future__ import annotations

import json
import math
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, ValidationError

from registry.errors import FieldProblem, InvalidInput, Unavailable

DECISION_PATH = "capgate/gate/decision"
DECISION_QUERY = "data.capgate.gate.decision"
VIOLATION_KEYS = frozenset({"policy", "rule", "severity", "message", "details"})
# Numbers in decisions are kept to this many significant digits: OPA keeps decimals
# where its Wasm computes in doubles, so the last digits of a computed detail can differ.
SIGNIFICANT_DIGITS = 12


class PolicyError(Unavailable):
    """The policy engine did not produce a decision: an error, never an allow (exit 2)."""


class Violation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    policy: StrictStr
    rule: StrictStr
    severity: StrictStr
    message: StrictStr
    details: dict[str, Any]

    def sort_key(self) -> tuple[str, str, str, str]:
        return (
            self.policy,
            self.rule,
            self.message,
            json.dumps(self.details, sort_keys=True, separators=(",", ":")),
        )


class PolicyDecision(BaseModel):
    """allow is true exactly when there is no violation; violations sorted."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    allow: StrictBool
    violations: list[Violation]
    # Findings that do not block (severity "info"): shown as warnings with the decision.
    notes: list[Violation] = []

    @property
    def policies(self) -> list[str]:
        """The ids of the policies that reported a violation, sorted."""
        return sorted({violation.policy for violation in self.violations})


@runtime_checkable
class PolicyEngine(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def revision(self) -> str: ...

    def decide(self, input: dict[str, Any]) -> PolicyDecision: ...


# The largest magnitude a number of the gate input may have. Real plans stay far below
# (the largest in the scenario corpus is 2.2e7 samples); within it both engines compute
# exactly the same text and arithmetic (tests/policy/test_differential.py), beyond it
# OPA's Wasm cannot write a whole number (format_int fails from 2^31 on in parts of
# 10^9, and doubles lose integers from 2^53 on, where OPA's server keeps decimals).
MAX_MAGNITUDE = 1e12


def _magnitude_problems(value: Any, path: str) -> list[FieldProblem]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            return [FieldProblem(path, f"{value!r} is beyond the gate's range of ±1e12")]
        return []
    if isinstance(value, dict):
        return [
            problem
            for key, item in value.items()
            for problem in _magnitude_problems(item, f"{path}.{key}" if path else str(key))
        ]
    if isinstance(value, list):
        return [
            problem
            for index, item in enumerate(value)
            for problem in _magnitude_problems(item, f"{path}.{index}")
        ]
    return []


class BuiltInput(dict[str, Any]):
    """A gate input the gate itself built as a ``GateInput`` and dumped: it was validated
    field by field as it was built, so ``validate_input`` checks only its numbers' range
    (validating the round trip again cost a tenth of a gate check's CPU). Anything else an
    engine is handed (the CLI's ``policy eval``, the API, tests) is validated in full."""


def validate_input(input: dict[str, Any]) -> None:
    """A malformed gate input is an error before any engine sees it."""
    if not isinstance(input, BuiltInput):  # the gate's own input was validated as built
        _validate_contract(input)
    beyond = _magnitude_problems(input, "")
    if beyond:
        raise InvalidInput("the gate input does not match the contract", problems=beyond)


def _validate_contract(input: dict[str, Any]) -> None:
    # Here, not at the top: the package's __init__ imports this module, and
    # `python -m registry.policy.input_document` (regenerating its JSON Schema) must find
    # that module not yet imported.
    from registry.policy.input_document import GateInput

    try:
        GateInput.model_validate(input)
    except ValidationError as exc:
        problems = [
            FieldProblem(".".join(str(part) for part in error["loc"]), error["msg"])
            for error in exc.errors()
        ]
        raise InvalidInput("the gate input does not match the contract", problems=problems) from exc


def canonical_number(value: Any) -> Any:
    """Integral floats as ints, other floats to SIGNIFICANT_DIGITS, recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PolicyError(f"the policy engine returned a non-finite number: {value}")
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(value, list):
        return [canonical_number(item) for item in value]
    if isinstance(value, dict):
        return {key: canonical_number(item) for key, item in value.items()}
    return value


def decision_from_result(result: Any, *, engine: str) -> PolicyDecision:
    """Validate an engine's raw decision value; anything unexpected is a PolicyError."""
    where = f"{engine} engine: {DECISION_QUERY}"
    if not isinstance(result, dict):
        raise PolicyError(f"{where} is not an object (got {type(result).__name__})")
    if set(result) != {"allow", "violations", "notes"}:
        raise PolicyError(
            f"{where} has keys {sorted(result)}, expected ['allow', 'notes', 'violations']"
        )
    for part in ("violations", "notes"):
        raw_items = result[part]
        if not isinstance(raw_items, list):
            raise PolicyError(f"{where}: {part} is not a list")
        for raw in raw_items:
            if not isinstance(raw, dict) or set(raw) != VIOLATION_KEYS:
                keys = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
                raise PolicyError(
                    f"{where}: an item of {part} has {keys}, expected {sorted(VIOLATION_KEYS)}"
                )
    try:
        decision = PolicyDecision.model_validate(canonical_number(result))
    except ValidationError as exc:
        raise PolicyError(f"{where} has the wrong shape: {exc.errors()[0]['msg']}") from exc
    if decision.allow != (not decision.violations):
        raise PolicyError(
            f"{where} is inconsistent: allow={decision.allow} "
            f"with {len(decision.violations)} violations"
        )
    unique = {violation.sort_key(): violation for violation in decision.violations}
    notes = {note.sort_key(): note for note in decision.notes}
    return PolicyDecision(
        allow=decision.allow,
        violations=[unique[key] for key in sorted(unique)],
        notes=[notes[key] for key in sorted(notes)],
    )
