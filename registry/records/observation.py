"""Observation: what production traffic did over a window, read from Prometheus.

Every distribution here comes from a Prometheus histogram, so each quantile is stated
with the bucket it lies in (``bucket_lower < value <= bucket_upper``): the value is an
interpolation, the bucket is what was measured. Counts come from ``increase()`` over the
window and are rounded to whole requests. The record pins the plan it observed and the
workload version that plan pins (the one drift is judged against).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import Field, model_validator

from registry.records.common import (
    Fraction,
    Metadata,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    Record,
    Text,
)

# A histogram has a few dozen buckets (vLLM's have 12 to 22); classes per plan are few.
MAX_BUCKETS = 256
MAX_CLASSES = 64
MAX_QUERIES = 256

Bound = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class BucketQuantile(Record):
    """A quantile read from buckets: interpolated value and the bucket that holds it."""

    value: NonNegativeFloat
    bucket_lower: NonNegativeFloat
    bucket_upper: NonNegativeFloat | None = Field(
        description="Upper bound of the bucket; null for +Inf (the value is then a floor)."
    )

    @model_validator(mode="after")
    def _inside(self) -> Self:
        upper = self.bucket_upper
        if self.value < self.bucket_lower or (upper is not None and self.value > upper):
            raise ValueError("value lies outside its bucket")
        return self


class ObservedHistogram(Record):
    """One histogram over the window: the series read, its buckets and quantiles."""

    series: Text = Field(description="The metric read, e.g. vllm:request_prompt_tokens.")
    unit: Text
    samples: NonNegativeInt
    mean: NonNegativeFloat | None = Field(default=None, description="_sum / _count.")
    bounds: list[Bound] = Field(
        max_length=MAX_BUCKETS, description="Finite bucket upper bounds (le), ascending."
    )
    cumulative: list[NonNegativeInt] = Field(
        max_length=MAX_BUCKETS + 1,
        description="Cumulative count per bound, then the +Inf bucket (the total).",
    )
    quantiles: dict[str, BucketQuantile] = Field(max_length=16)

    @model_validator(mode="after")
    def _shape(self) -> Self:
        if len(self.cumulative) != len(self.bounds) + 1:
            raise ValueError("cumulative needs one count per bound and one for +Inf")
        if any(b <= a for a, b in zip(self.bounds, self.bounds[1:], strict=False)):
            raise ValueError("bounds must be strictly increasing")
        if any(b < a for a, b in zip(self.cumulative, self.cumulative[1:], strict=False)):
            raise ValueError("cumulative counts must not decrease")
        return self


class SloAttainment(Record):
    """Share of a class's requests within one of its SLO ceilings, as buckets allow.

    With the ceiling between two bucket bounds the share is known only between
    ``share_at_least`` and ``share_at_most``; ``met`` is null when that range straddles
    the objective's 99 %."""

    objective: Text = Field(description="The SLO field, e.g. ttft_p99_ms.")
    limit_ms: PositiveFloat
    share_at_least: Fraction
    share_at_most: Fraction
    target: Fraction = 0.99
    met: bool | None


class ObservedClass(Record):
    """One traffic class (the values of the class label), over the window."""

    name: Name
    requests: NonNegativeInt = Field(description="Finished requests, every reason.")
    mean_rps: NonNegativeFloat
    peak_rps: NonNegativeFloat
    peak_window_s: PositiveFloat
    interarrival_cv: NonNegativeFloat | None = Field(
        default=None,
        description="Estimated from the dispersion of per-step request counts (var/mean "
        "= CV^2 for a renewal process); null with too few steps.",
    )
    finished: dict[Text, NonNegativeInt] = Field(
        default_factory=dict, max_length=16, description="Requests by finished_reason."
    )
    cancellation_share: Fraction | None = Field(
        default=None, description="Share finished with reason abort (client went away)."
    )
    prompt_tokens: ObservedHistogram
    output_tokens: ObservedHistogram
    ttft: ObservedHistogram | None = None
    itl: ObservedHistogram | None = None
    e2e: ObservedHistogram | None = None
    queue: ObservedHistogram | None = None
    slo: list[SloAttainment] = Field(default_factory=list, max_length=8)


class FleetSignals(Record):
    """Pressure signals over every pod of the deployment."""

    kv_cache_usage_mean: Fraction | None = None
    kv_cache_usage_max: Fraction | None = None
    kv_cache_series: Text | None = None
    preemptions: NonNegativeInt = 0
    running_max: NonNegativeFloat | None = None
    waiting_max: NonNegativeFloat | None = None


class PrometheusSource(Record):
    """Where and how the observation was read."""

    url: Text
    selector: Text = Field(description="Label matchers every query carries.")
    class_label: Text | None = None
    runtime_version: Text = Field(description="The vLLM release whose metric names were used.")
    step_s: PositiveFloat
    queries: list[Text] = Field(max_length=MAX_QUERIES)


class Observation(Metadata):
    plan: Text = Field(description="The plan observed; pinned to name@vN on submit.")
    workload: Text = Field(
        description="The workload version the plan pins; drift is judged against it."
    )
    window_start: datetime
    window_end: datetime
    source: PrometheusSource
    classes: list[ObservedClass] = Field(min_length=1, max_length=MAX_CLASSES)
    fleet: FleetSignals = Field(default_factory=FleetSignals)

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.window_end <= self.window_start:
            raise ValueError("window_end must be after window_start")
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("each class is observed once")
        return self
