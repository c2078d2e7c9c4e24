"""Load-test evidence: what was offered, what was measured, and against what."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from registry.records.common import (
    Bool,
    Distribution,
    Fraction,
    Metadata,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Record,
    Sha256,
    Text,
    check_non_decreasing,
    quantile_level,
)
from registry.records.provider import RUNTIME_VERSION_PATTERN
from registry.records.server_metrics import ServerMetrics


class MeasuredAgainst(Record):
    """The exact versions the test ran against; references are resolved and pinned on submit."""

    workload: Text
    provider: Text
    plan: Text | None = None
    serving_config_digest: Sha256 | None = None


class ToolInfo(Record):
    name: Text = Field(description="vllm-bench, guidellm, inference-perf, genai-perf, aiperf, ...")
    version: Text | None = None


class RuntimeInfo(Record):
    """The serving runtime the test measured: the server, not the load generator.

    (``ToolInfo.version`` is the load generator's version.) Compared with the runtime of
    the provider version a plan pins: another runtime, or another major.minor version,
    does not support the plan.
    """

    name: Text = Field(description="Serving runtime, as a provider's runtime.name: vllm, ...")
    version: Text = Field(
        pattern=RUNTIME_VERSION_PATTERN,
        description="The runtime's version, as a provider's runtime.version: 0.8.5, ...",
    )

    def describe(self) -> str:
        return f"{self.name} {self.version}"


class RawFile(Record):
    file_name: Text
    sha256: Sha256
    size_bytes: NonNegativeInt | None = None


class Offered(Record):
    request_rate_rps: PositiveFloat | None = Field(
        default=None, description="Offered rate; absent for closed-loop or unbounded runs."
    )
    concurrency: PositiveInt | None = None
    rate_unbounded: Bool = Field(
        default=False,
        description="All requests sent at once (vLLM request_rate 'inf', GuideLLM throughput).",
    )
    burstiness: PositiveFloat | None = Field(
        default=None, description="Gamma shape of arrivals (1.0 Poisson; lower is burstier)."
    )
    constant_arrivals: Bool = Field(
        default=False,
        description="Arrivals evenly spaced at the offered rate (a constant-rate test); "
        "the calibration replays them so, not at the workload's burstiness.",
    )
    requests: NonNegativeInt | None = None
    duration_s: PositiveFloat | None = None
    replicas: PositiveInt = Field(default=1, description="Ready replicas behind the endpoint.")
    achieved_rate_rps: PositiveFloat | None = Field(
        default=None, description="Rate the client actually sent, when the tool states it."
    )
    client_behind: Bool = Field(
        default=False,
        description="The load generator could not keep the offered schedule: the test "
        "measured the achieved rate, not the offered one.",
    )
    client_behind_reason: Text | None = None
    classes: list[Name] = Field(
        default_factory=list, description="Traffic classes mixed into the test."
    )
    cancellation_rate: Fraction | None = None
    prompt_tokens: Distribution | None = None
    output_tokens: Distribution | None = None

    @model_serializer(mode="wrap")
    def _omit_default_arrivals(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Evidence of tests that are not constant-rate dumps exactly as before the field
        # existed, so the canonical JSON (and the digest) of such records is unchanged.
        data: dict[str, Any] = handler(self)
        if not self.constant_arrivals:
            data.pop("constant_arrivals", None)
        return data


class Percentiles(Record):
    """Latency percentiles in milliseconds, keys p0..p100 (p50 is the median)."""

    quantiles: dict[str, NonNegativeFloat] = Field(min_length=1)
    mean: NonNegativeFloat | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        check_non_decreasing(self.quantiles, "percentiles")
        return self

    def at(self, level: float) -> float | None:
        return next((v for k, v in self.quantiles.items() if quantile_level(k) == level), None)


class ClassResult(Record):
    requests: NonNegativeInt | None = None
    completed: NonNegativeInt | None = None
    failed: NonNegativeInt | None = None
    cancelled: NonNegativeInt | None = None
    incomplete: NonNegativeInt | None = Field(
        default=None,
        description="Requests still in flight when the tool stopped measuring (cut off, "
        "neither completed nor failed).",
    )
    shed: NonNegativeInt | None = None
    ttft_ms: Percentiles | None = None
    tpot_ms: Percentiles | None = None
    itl_ms: Percentiles | None = None
    e2e_ms: Percentiles | None = None
    queue_ms: Percentiles | None = None
    prompt_tokens: Distribution | None = Field(
        default=None,
        description="Prompt lengths this class was offered, when a mixed test states them "
        "per class (a single-class test states them in offered.prompt_tokens).",
    )


class Throughput(Record):
    requests_per_s: NonNegativeFloat | None = None
    output_tokens_per_s: NonNegativeFloat | None = None
    total_tokens_per_s: NonNegativeFloat | None = None
    goodput_requests_per_s: NonNegativeFloat | None = None


class Results(Record):
    per_class: dict[Name, ClassResult] = Field(min_length=1)
    throughput: Throughput = Field(default_factory=Throughput)
    preemptions: NonNegativeInt | None = None
    kv_cache_usage_peak: Fraction | None = None
    warmup_s: PositiveFloat | None = None
    prefix_cache_hit_rate: Fraction | None = Field(
        default=None,
        description="Share of prompt tokens the server's prefix cache served during the "
        "test, when the tool or the server states it.",
        # Left out of dumps when unknown, so records without it hash as before it existed.
        exclude_if=lambda rate: rate is None,
    )


# ---- findings: what the test exercised, computed at import ----------------------------


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


class EntryKind(StrEnum):
    """How a piece of evidence entered the registry."""

    imported = "imported"  # parsed by `capgate evidence import` from the raw file's bytes
    declared = "declared"  # written by hand; its raw_file digest is a claim nobody checked


class SourceFile(Record):
    """One raw result file an imported record was read from, with the digest of its bytes."""

    file_name: Text
    sha256: Sha256
    size_bytes: NonNegativeInt
    traffic_class: Name
    tool: Text
    tool_version: Text | None = None


class Provenance(Record):
    """Where the record's figures came from; set by the registry, never by hand."""

    entry: EntryKind = EntryKind.declared
    replicas_source: Literal["file", "flag", "declared"] = Field(
        default="declared",
        description="file: stated in the result file; flag: given at import (--replicas); "
        "declared: written in a hand-made record.",
    )
    files: list[SourceFile] = Field(
        default_factory=list, description="Every raw file an import read (one per class)."
    )


class LoadTestEvidence(Metadata):
    measured_against: MeasuredAgainst
    tool: ToolInfo
    runtime: RuntimeInfo | None = Field(
        default=None,
        description="The serving runtime and version measured (from the result file, or "
        "stated at import); null when unknown: the test is then taken to have run the "
        "runtime of the provider version it was measured against.",
        # Left out of dumps when unknown: evidence that states no runtime dumps (and hashes)
        # exactly as before the field existed.
        exclude_if=lambda runtime: runtime is None,
    )
    measured_model: Text | None = Field(
        default=None,
        description="The model the result file says the test sent its requests to, as the "
        "file names it (a Hugging Face id, a served alias or a local path; several joined by "
        "', '); null when the file does not say. Checked at import against the provider's "
        "model.name.",
        # Left out of dumps when unknown, so records without it hash as before it existed.
        exclude_if=lambda model: model is None,
    )
    measured_accelerators: list[Text] = Field(
        default_factory=list,
        description="The GPU names the tool's telemetry saw during the test (AIPerf's DCGM "
        "telemetry), distinct, in order; empty when the file does not say.",
        exclude_if=lambda names: not names,
    )
    raw_file: RawFile | None = None
    measured_at: datetime
    offered: Offered
    results: Results
    missing: list[Text] = Field(
        default_factory=list, description="Figures the source file did not state."
    )
    findings: ImportFindings | None = Field(
        default=None, description="Uniformity and coverage computed at import, with bases."
    )
    provenance: Provenance = Field(default_factory=Provenance)
    server: ServerMetrics | None = Field(
        default=None,
        description="The serving runtime's own series over the test window, read from "
        "Prometheus at import (--prometheus); null when not read.",
        exclude_if=lambda server: server is None,
    )

    def raw_digests(self) -> set[str]:
        """Every raw file digest this record claims to be measured from."""
        digests = {f.sha256 for f in self.provenance.files}
        if self.raw_file is not None:
            digests.add(self.raw_file.sha256)
        return digests

    @model_validator(mode="after")
    def _classes_measured(self) -> Self:
        if self.measured_at.tzinfo is None:
            raise ValueError("measured_at needs a time zone, e.g. 2026-11-24T14:05:00Z")
        unknown = sorted(set(self.results.per_class) - set(self.offered.classes))
        if self.offered.classes and unknown:
            raise ValueError(f"results name classes that were not offered: {', '.join(unknown)}")
        return self
