"""Waiver: an explicit, owned, expiring exception to one policy for one plan."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import Field, model_validator

from registry.records.common import Metadata, Name, Text


class Waiver(Metadata):
    policy: Name = Field(description="The policy id waived, e.g. partitioning_justified.")
    rule: Text | None = Field(default=None, description="Only this rule of the policy, if set.")
    plan: Name = Field(description="The plan name the waiver applies to.")
    granted_for: Text | None = Field(
        default=None,
        description="The plan version the exception was granted for (name@vN). A bare name, "
        "or nothing, is pinned on submission to the plan's latest version. A later plan "
        "version is not covered until the waiver is granted for it.",
    )
    owner: Text = Field(description="Who answers for the exception.")
    reason: Text = Field(min_length=10, description="Why the exception is acceptable.")
    expires_at: datetime = Field(description="After this instant the waiver no longer applies.")

    @model_validator(mode="before")
    @classmethod
    def _granted_for_the_plan(cls, data: Any) -> Any:
        # Nothing stated means "the plan as it is now": the submission pins its version.
        if isinstance(data, dict) and data.get("granted_for") is None and "plan" in data:
            return {**data, "granted_for": data["plan"]}
        return data

    @model_validator(mode="after")
    def _aware(self) -> Self:
        if self.expires_at.tzinfo is None:
            raise ValueError("expires_at needs a time zone, e.g. 2027-01-31T00:00:00Z")
        return self
