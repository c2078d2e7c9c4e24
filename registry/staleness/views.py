"""What the staleness service returns and the API serialises (the CLI prints the same)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from registry.evidence_lifecycle import Withdrawal
from registry.records.kinds import RecordKind

REPLACED_RULE = "evidence data replaced"


class ChangeView(BaseModel):
    """One material change: the field, both values and the threshold that judged it."""

    field: str
    old: Any = None
    new: Any = None
    rule: str
    threshold: float | None = None

    def describe(self) -> str:
        limit = f" (threshold {self.threshold:g})" if self.threshold is not None else ""
        return f"{self.field}: {self.old!r} -> {self.new!r}, {self.rule}{limit}"


class StalenessEntry(BaseModel):
    """A staleness record: evidence made stale by a new version of something it rests on."""

    evidence: str = Field(description="The stale evidence version, name@vN.")
    cause_kind: RecordKind
    cause: str = Field(description="The new version that made it stale, name@vN.")
    measured_kind: RecordKind
    measured: str = Field(
        description="The version the evidence was measured against (or itself, when replaced)."
    )
    changes: list[ChangeView]
    detected_at: datetime
    reason: str = Field(description="The same, as one sentence a person can act on.")


def entry_reason(
    cause_kind: RecordKind, cause: str, measured: str, changes: list[ChangeView]
) -> str:
    if cause_kind is RecordKind.evidence:
        return f"{REPLACED_RULE}: {measured} replaced by {cause}"
    if cause_kind is RecordKind.observation:
        described = "; ".join(change.describe() for change in changes)
        return f"production drift: observation {cause} of workload {measured}: {described}"
    described = "; ".join(change.describe() for change in changes)
    return f"{cause_kind.value} {measured} -> {cause}: {described}"


class StaleEvidence(BaseModel):
    """One stale piece of evidence and every reason it is stale."""

    ref: str
    name: str
    version: int
    digest: str
    measured_at: datetime | None
    age_days: float | None
    expired: bool = Field(description="Older than the maximum evidence age.")
    reasons: list[str]
    staleness: list[StalenessEntry]


class StalenessHistory(BaseModel):
    """The staleness history of one evidence version, and whether it is stale now."""

    ref: str
    digest: str
    measured_at: datetime | None
    age_days: float | None
    max_age_days: float
    stale: bool
    reasons: list[str]
    entries: list[StalenessEntry]
    withdrawn: Withdrawal | None = Field(
        default=None,
        description="Set when this version was withdrawn (who, when, why): it then supports "
        "and blocks nothing at the gate, stale or not.",
    )
