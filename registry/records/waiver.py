"""Waiver: an explicit, owned, expiring exception to one policy for one plan."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import Field, model_validator

from registry.records.common import Metadata, Name, Text


class Waiver(Metadata):
    policy: Name = Field(description="The policy id waived, e.g. partitioning_justified.")
    rule: Text | None = Field(default=None, description="Only this rule of the policy, if set.")
    plan: Name = Field(description="The plan name (every version) the waiver applies to.")
    owner: Text = Field(description="Who answers for the exception.")
    reason: Text = Field(min_length=10, description="Why the exception is acceptable.")
    expires_at: datetime = Field(description="After this instant the waiver no longer applies.")

    @model_validator(mode="after")
    def _aware(self) -> Self:
        if self.expires_at.tzinfo is None:
            raise ValueError("expires_at needs a time zone, e.g. 2027-01-31T00:00:00Z")
        return self
