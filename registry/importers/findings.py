"""Uniformity and coverage findings computed when a load-test file is imported.

These models are written to move as they are into ``registry.records.evidence`` (as the
``findings`` field of ``LoadTestEvidence``); until then the importers return them beside the
evidence. They say what the test exercised, with the basis of every figure, so a policy can
tell "uniform prompts" from "the file does not say".
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from registry.records.common import NonNegativeFloat, NonNegativeInt, Record, Text


class CvBasis(StrEnum):
    """Where a coefficient of variation came from."""

    per_request = "per_request"  # computed from every request's value
    stated_std = "stated_std"  # std / mean as the file states them
    estimated_from_percentiles = "estimated_from_percentiles"  # quantile spread, normal shape
    unavailable = "unavailable"  # the file gives neither


class LengthUniformity(Record):
    """How varied the offered token lengths were: CV = std / mean."""

    cv: NonNegativeFloat | None = None
    basis: CvBasis = CvBasis.unavailable
    samples: NonNegativeInt | None = None
    note: Text | None = None


class ImportFindings(Record):
    """What a load test exercised, as far as its result file can say."""

    prompt_tokens: LengthUniformity = Field(default_factory=LengthUniformity)
    output_tokens: LengthUniformity = Field(default_factory=LengthUniformity)
    cancellations_exercised: bool | None = Field(
        default=None, description="True if requests were cancelled; None if the file cannot say."
    )
    cancelled_requests: NonNegativeInt | None = None
    cancellation_basis: Text | None = Field(
        default=None, description="Where the cancellation figure comes from, and what it means."
    )
    priority_classes: NonNegativeInt | None = Field(
        default=None, description="Distinct priority classes in the test; None if unknown."
    )
    mixed_priorities: bool | None = None
    priority_basis: Text | None = None
    notes: list[Text] = Field(
        default_factory=list,
        description="Import notes: unit conversions, definitions, figures dropped and why.",
    )
