"""A gate decision's outcome and shape, in the standard library only.

The renderers (text, junit, github, sarif, gitlab) read a decision through
`DecisionLike`, so the thin `--server` client can render the server's JSON without
importing pydantic (registry.gate.views) or anything else heavy: a gate check is a step
in every release pipeline and should cost what `opa eval` costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class Outcome(StrEnum):
    allow = "allow"
    deny = "deny"
    error = "error"

    @property
    def exit_code(self) -> int:
        return {Outcome.allow: 0, Outcome.deny: 1, Outcome.error: 2}[self]


class DecisionLike(Protocol):
    """What the renderers read of a decision (DecisionView and WireDecision have it)."""

    @property
    def id(self) -> str: ...
    @property
    def plan(self) -> str: ...
    @property
    def outcome(self) -> Outcome: ...
    @property
    def engine(self) -> str: ...
    @property
    def bundle_revision(self) -> str: ...
    @property
    def policy_release(self) -> str | None: ...
    @property
    def input_digest(self) -> str: ...
    @property
    def inputs(self) -> dict[str, Any]: ...
    @property
    def violations(self) -> list[dict[str, Any]]: ...
    @property
    def waived(self) -> list[dict[str, Any]]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def error(self) -> str | None: ...
    @property
    def created_at(self) -> datetime: ...

    def verdict(self) -> str: ...


def verdict_line(decision: DecisionLike) -> str:
    """One line for a release log."""
    head = f"{decision.outcome.value.upper()} {decision.plan}"
    if decision.outcome is Outcome.error:
        return f"{head}: {decision.error} (decision {decision.id})"
    policies = sorted({str(v.get("policy")) for v in decision.violations})
    detail = (
        f": {len(decision.violations)} violation(s) of {', '.join(policies)}" if policies else ""
    )
    waived = f", {len(decision.waived)} waived" if decision.waived else ""
    return f"{head}{detail}{waived} (decision {decision.id}, engine {decision.engine})"


def _of_type(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"{type(value).__name__} is not {kind.__name__}")
    return value


def _list_of(value: Any, kind: type) -> list[Any]:
    items = _of_type(value, list)
    for item in items:
        _of_type(item, kind)
    return list(items)


@dataclass(frozen=True)
class WireDecision:
    """A decision as the server's JSON states it (`POST /v1/gate/checks`), read without
    pydantic. `raw` is that JSON, printed as it came for `--format json`."""

    id: str
    plan: str
    outcome: Outcome
    engine: str
    bundle_revision: str
    policy_release: str | None
    input_digest: str
    inputs: dict[str, Any]
    violations: list[dict[str, Any]]
    waived: list[dict[str, Any]]
    waivers_used: list[str]
    warnings: list[str]
    error: str | None
    principal: str
    created_at: datetime
    needs_recheck: bool | None
    raw: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WireDecision:
        """Raises KeyError/ValueError/TypeError on a body that is not a decision (the
        caller says the server's answer was unreadable). The renderers read violations as
        objects and warnings as strings: other shapes are refused here, not met there."""
        return cls(
            id=str(data["id"]),
            plan=str(data["plan"]),
            outcome=Outcome(data["outcome"]),
            engine=str(data["engine"]),
            bundle_revision=str(data["bundle_revision"]),
            policy_release=_optional_text(data.get("policy_release")),
            input_digest=str(data["input_digest"]),
            inputs=_of_type(data["inputs"], dict),
            violations=_list_of(data["violations"], dict),
            waived=_list_of(data["waived"], dict),
            waivers_used=_list_of(data["waivers_used"], str),
            warnings=_list_of(data["warnings"], str),
            error=data["error"],
            principal=str(data["principal"]),
            created_at=datetime.fromisoformat(str(data["created_at"]).replace("Z", "+00:00")),
            needs_recheck=data.get("needs_recheck"),
            raw=data,
        )

    def verdict(self) -> str:
        return verdict_line(self)


def _optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string or null, got {type(value).__name__}")
    return value
