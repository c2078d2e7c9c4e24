"""Workload profile: token-work distributions per traffic class, with their provenance."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from registry.records.common import (
    Basis,
    Distribution,
    Fraction,
    Metadata,
    Name,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Record,
    Text,
    TraceWindow,
)


class Arrival(Record):
    """The arrival process of one class: rates and how bursty they are."""

    basis: Basis = Basis.measured
    mean_rps: PositiveFloat
    peak_rps: PositiveFloat = Field(description="Highest rate over any peak_window_s window.")
    peak_window_s: PositiveFloat = Field(
        default=60.0, description="Window over which peak_rps was taken."
    )
    interarrival_cv: PositiveFloat = Field(
        default=1.0,
        description="Coefficient of variation of inter-arrival times (1.0 is Poisson; >1 bursty).",
    )
    reason: Text | None = Field(default=None, description="Why assumed numbers were assumed.")

    @model_validator(mode="after")
    def _peak_at_least_mean(self) -> Self:
        if self.peak_rps < self.mean_rps:
            raise ValueError(f"peak_rps ({self.peak_rps:g}) is below mean_rps ({self.mean_rps:g})")
        if self.basis is Basis.assumed and not self.reason:
            raise ValueError("an assumed arrival process must say why in 'reason'")
        return self

    @property
    def peak_to_mean(self) -> float:
        return self.peak_rps / self.mean_rps


class ClassSLO(Record):
    """Per-class p99 objectives. Every field is a ceiling on the class's 99th percentile."""

    ttft_p99_ms: PositiveFloat = Field(description="Time to first token, p99.")
    tpot_p99_ms: PositiveFloat = Field(description="Time per output token after the first, p99.")
    e2e_p99_ms: PositiveFloat = Field(description="End-to-end request latency, p99.")
    queue_deadline_ms: PositiveFloat = Field(
        description="Longest a request may wait for admission before it is shed."
    )

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.e2e_p99_ms < self.ttft_p99_ms:
            raise ValueError(
                f"e2e_p99_ms ({self.e2e_p99_ms:g}) is below ttft_p99_ms ({self.ttft_p99_ms:g})"
            )
        return self


class TrafficClass(Record):
    name: Name
    priority: NonNegativeInt = Field(
        description="Scheduling priority; lower is served first (vLLM's convention)."
    )
    arrival: Arrival
    prompt_tokens: Distribution
    output_tokens: Distribution
    concurrency: Distribution | None = Field(
        default=None, description="Requests in flight for this class."
    )
    max_output_tokens: PositiveInt | None = Field(
        default=None, description="The max_tokens the clients send; bounds the longest stream."
    )
    prefix_cache_share: Fraction = Field(
        default=0.0, description="Share of prompt tokens expected to hit the prefix cache."
    )
    cancellation_rate: Fraction = Field(
        default=0.0, description="Share of requests the client cancels before completion."
    )
    slo: ClassSLO

    @model_validator(mode="after")
    def _tail_coherent(self) -> Self:
        for field in ("prompt_tokens", "output_tokens"):
            dist: Distribution = getattr(self, field)
            p50, p99 = dist.quantile(50), dist.quantile(99)
            if dist.quantiles is not None and (p50 is None or p99 is None):
                raise ValueError(f"{field} quantiles must state at least p50 and p99")
            limit = self.max_output_tokens
            if field == "output_tokens" and limit is not None and p99 is not None and p99 > limit:
                raise ValueError(f"output_tokens p99 ({p99:g}) exceeds max_output_tokens ({limit})")
        return self


class WorkloadProfile(Metadata):
    """What the service must carry: traffic classes and their measured token work."""

    measurement: TraceWindow | None = Field(
        default=None, description="The trace the measured numbers came from."
    )
    classes: list[TrafficClass] = Field(min_length=1)

    @model_validator(mode="after")
    def _classes_and_provenance(self) -> Self:
        names = [c.name for c in self.classes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(
                f"traffic class names must be unique; repeated: {', '.join(duplicates)}"
            )
        measured = any(
            d is not None and d.basis is Basis.measured
            for c in self.classes
            for d in (c.prompt_tokens, c.output_tokens, c.concurrency)
        ) or any(c.arrival.basis is Basis.measured for c in self.classes)
        if measured and self.measurement is None:
            raise ValueError(
                "measured numbers need their provenance: add 'measurement' (trace_ref, "
                "trace_digest, window_start, window_end) or mark the numbers basis: assumed"
            )
        return self

    def traffic_class(self, name: str) -> TrafficClass | None:
        return next((c for c in self.classes if c.name == name), None)
