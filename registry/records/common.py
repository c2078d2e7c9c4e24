"""Schema building blocks shared by every record kind.

Records are strict: unknown fields are rejected and scalars are not coerced from
strings, so a typo in a capacity plan is an error rather than a silently ignored
setting. Units live in field names (``_ms``, ``_tokens``, ``_gib``, ``_rps``, ``_s``).
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from itertools import pairwise
from typing import Annotated, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

# Names are used in references (`name@v3`), URLs and file names.
NAME_PATTERN = r"^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$"
Name = Annotated[StrictStr, Field(pattern=NAME_PATTERN)]
Sha256 = Annotated[StrictStr, Field(pattern=r"^sha256:[0-9a-f]{64}$")]

PositiveFloat = Annotated[StrictFloat, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)]
PositiveInt = Annotated[StrictInt, Field(gt=0)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]

Bool = StrictBool
Text = StrictStr


class Record(BaseModel):
    """Base of every schema: strict, immutable, unknown fields rejected."""

    # Non-finite numbers (NaN, Infinity) cannot be stored as canonical JSON.
    model_config = ConfigDict(
        extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False
    )


class Basis(StrEnum):
    """Whether a number was measured (from a trace or a test) or assumed by a person."""

    measured = "measured"
    assumed = "assumed"


class TraceWindow(Record):
    """Where a profile's measured numbers come from: a trace, its digest and its window."""

    trace_ref: Text = Field(description="Where the trace lives (URI or path), for people.")
    trace_digest: Sha256 = Field(description="sha256 of the trace file the numbers came from.")
    window_start: datetime
    window_end: datetime
    requests: NonNegativeInt | None = Field(
        default=None, description="Requests in the window, if known."
    )

    @model_validator(mode="after")
    def _window_ordered(self) -> Self:
        if self.window_end <= self.window_start:
            raise ValueError("window_end must be after window_start")
        return self


_QUANTILE_KEY = re.compile(r"^p(\d{1,2}(\.\d+)?|100)$")


def check_non_decreasing(quantiles: dict[str, float], what: str = "quantiles") -> None:
    """Raise unless values grow with their percentile level (p50 <= p90 <= p99 ...)."""
    levels = sorted((quantile_level(k), v) for k, v in quantiles.items())
    for (lo_level, lo), (hi_level, hi) in pairwise(levels):
        if hi < lo:
            raise ValueError(
                f"{what} must be non-decreasing: p{hi_level:g}={hi:g} is below p{lo_level:g}={lo:g}"
            )


def quantile_level(key: str) -> float:
    """Percentile level of a quantile key: ``p50`` -> 50.0, ``p99.9`` -> 99.9."""
    match = _QUANTILE_KEY.match(key)
    if match is None:
        raise ValueError(
            f"quantile key {key!r} is not of the form pNN (p0 to p100, e.g. p50, p99.9)"
        )
    return float(key[1:])


class Histogram(Record):
    """Counts of samples between consecutive edges (``edges[i] <= x < edges[i+1]``)."""

    edges: list[NonNegativeFloat] = Field(min_length=2)
    counts: list[NonNegativeInt] = Field(min_length=1)

    @model_validator(mode="after")
    def _shape(self) -> Self:
        if len(self.edges) != len(self.counts) + 1:
            raise ValueError(
                f"histogram has {len(self.edges)} edges and {len(self.counts)} counts; "
                "it needs one more edge than counts"
            )
        if any(b <= a for a, b in pairwise(self.edges)):
            raise ValueError("histogram edges must be strictly increasing")
        if sum(self.counts) == 0:
            raise ValueError("histogram counts are all zero")
        return self


class Distribution(Record):
    """A measured or assumed distribution: quantiles and/or a histogram.

    Token and concurrency distributions are consumed as shapes by the planner, never
    reduced to a mean, so the tail of the distribution drives queueing and KV use.
    """

    basis: Basis = Basis.measured
    samples: NonNegativeInt | None = Field(
        default=None,
        description="Number of observations behind the numbers (required when measured).",
    )
    quantiles: dict[str, NonNegativeFloat] | None = Field(
        default=None, description="Percentile -> value, keys p0..p100, e.g. {p50: 512, p99: 4096}."
    )
    histogram: Histogram | None = None
    mean: NonNegativeFloat | None = None
    min: NonNegativeFloat | None = None
    max: NonNegativeFloat | None = None
    reason: Text | None = Field(default=None, description="Why an assumed number was assumed.")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.quantiles is None and self.histogram is None:
            raise ValueError("a distribution needs quantiles or a histogram")
        if self.quantiles is not None:
            check_non_decreasing(self.quantiles)
            levels = sorted((quantile_level(k), v) for k, v in self.quantiles.items())
            if self.min is not None and levels and levels[0][1] < self.min:
                raise ValueError("a quantile is below min")
            if self.max is not None and levels and levels[-1][1] > self.max:
                raise ValueError("a quantile is above max")
        if self.basis is Basis.measured:
            if not self.samples:
                raise ValueError(
                    "a measured distribution needs its sample count (samples > 0); a number "
                    "nobody measured is marked basis: assumed, with the reason in 'reason'"
                )
            if self.histogram is not None and sum(self.histogram.counts) != self.samples:
                raise ValueError(
                    f"histogram counts sum to {sum(self.histogram.counts)} but samples is "
                    f"{self.samples}"
                )
        elif not self.reason:
            raise ValueError("an assumed distribution must say why in 'reason'")
        return self

    def quantile(self, level: float) -> float | None:
        """The stated quantile at ``level`` (percent), if the distribution states it."""
        if self.quantiles is None:
            return None
        for key, value in self.quantiles.items():
            if quantile_level(key) == level:
                return value
        return None


class Metadata(Record):
    """Descriptive fields every record carries; none of them can move the tail."""

    name: Name
    description: Text | None = None
    owner: Text | None = None
    labels: dict[Name, Text] = Field(default_factory=dict)
