"""What a gate decision looks like to the CLI, the API and an auditor."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Outcome(StrEnum):
    allow = "allow"
    deny = "deny"
    error = "error"

    @property
    def exit_code(self) -> int:
        return {Outcome.allow: 0, Outcome.deny: 1, Outcome.error: 2}[self]


class DecisionView(BaseModel):
    id: str
    plan: str
    outcome: Outcome
    engine: str
    bundle_revision: str
    input_digest: str
    inputs: dict[str, Any] = Field(description="Refs and digests of everything decided on.")
    violations: list[dict[str, Any]] = Field(description="Unwaived violations.")
    waived: list[dict[str, Any]] = Field(description="Violations a waiver answers for.")
    waivers_used: list[str]
    warnings: list[str]
    error: str | None
    principal: str
    created_at: datetime
    needs_recheck: bool | None = Field(
        description="An allow taken under another policy bundle revision than the current one."
    )

    def verdict(self) -> str:
        """One line for a release log."""
        head = f"{self.outcome.value.upper()} {self.plan}"
        if self.outcome is Outcome.error:
            return f"{head}: {self.error} (decision {self.id})"
        policies = sorted({str(v.get("policy")) for v in self.violations})
        detail = (
            f": {len(self.violations)} violation(s) of {', '.join(policies)}" if policies else ""
        )
        waived = f", {len(self.waived)} waived" if self.waived else ""
        return f"{head}{detail}{waived} (decision {self.id}, engine {self.engine})"
