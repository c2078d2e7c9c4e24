"""What a gate decision looks like to the CLI, the API and an auditor."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from registry.gate.outcome import Outcome, verdict_line

__all__ = ["DecisionView", "Outcome"]


class DecisionView(BaseModel):
    id: str
    plan: str
    outcome: Outcome
    engine: str
    bundle_revision: str
    policy_release: str | None = Field(
        default=None,
        description="The approved policy release decided under (name@vN); null before any.",
    )
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
        return verdict_line(self)
