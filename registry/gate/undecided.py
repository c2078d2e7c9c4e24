"""The gate could not decide, and stored nothing: what its reports say then.

An unreachable registry or server, a plan or manifest that cannot be read, a policy
release that is not the one in force: the check ends with exit 2 before any decision
exists. The reports a pipeline asked for still say why it stopped, so `Undecided` reads
as a decision (`DecisionLike`) with outcome error, the error's one line and nothing else:
no id, no digests, no findings. Standard library only (the thin `--server` client).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from registry.gate.outcome import DecisionLike, Outcome

NO_DECISION = "no decision stored"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Undecided:
    plan: str  # the reference as asked: it may name no plan at all
    error: str
    created_at: datetime = field(default_factory=_now)
    id: str = ""
    outcome: Outcome = Outcome.error
    engine: str = ""
    bundle_revision: str = ""
    policy_release: str | None = None
    input_digest: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    violations: list[dict[str, Any]] = field(default_factory=list)
    waived: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def verdict(self) -> str:
        return f"ERROR {self.plan}: {self.error} ({NO_DECISION})"

    def as_json(self) -> dict[str, Any]:
        """The `--format json` report: a decision's fields, with a null id (none stored)."""
        return {
            "id": None,
            "plan": self.plan,
            "outcome": self.outcome.value,
            "error": self.error,
            "violations": [],
            "waived": [],
            "warnings": [],
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
        }


def decision_ref(decision: DecisionLike) -> str:
    """How a report names the decision: ``decision ID``, or that none was stored."""
    return f"decision {decision.id}" if decision.id else NO_DECISION
