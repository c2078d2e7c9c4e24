"""The input document a gate decision evaluates: the contract between registry and Rego.

The registry assembles it (plan, workload, provider, evidence with freshness, the
planner's recomputation); the policies read only this. Everything time-dependent
(ages, staleness) is computed here in Python, so the policies do no clock or date
parsing and both engines see exactly the same numbers. It is validated against these
models before evaluation: a malformed input is an error, never an allow.

The recomputation section is registry.policy.input_recomputation; the base every part
builds on (strict, frozen) is registry.policy.input_model.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from registry.policy.input_model import InputModel, RecordIdentity
from registry.policy.input_recomputation import RecomputationInput

# ---- plan -----------------------------------------------------------------------


class PlanInput(RecordIdentity):
    tensor_parallel: int
    gpus_per_replica: int
    replicas_per_zone: dict[str, int]
    total_replicas: int = Field(description="Sum of replicas_per_zone.")
    serving: dict[str, Any] = Field(description="The plan's serving config, as submitted.")
    admission: dict[str, Any] = Field(description="{classes: {name: {...}}, retry: {...}}.")
    autoscaling: dict[str, Any] | None
    drain: dict[str, Any] | None
    warmup: dict[str, Any] | None
    reserve: dict[str, Any] | None
    claims: dict[str, Any]


# ---- workload -------------------------------------------------------------------


class MeasuredFlags(InputModel):
    """Which of a class's distributions were measured (with samples) rather than assumed."""

    prompt_tokens: bool
    output_tokens: bool
    concurrency: bool = Field(description="False when absent or assumed.")
    arrival: bool


class WorkloadClassInput(InputModel):
    priority: int
    mean_rps: float
    peak_rps: float
    interarrival_cv: float
    max_output_tokens: int | None
    cancellation_rate: float | None = Field(
        description="Share of requests the clients cancel; null when the profile does not "
        "know it (see cancellation_rate_unknown)."
    )
    cancellation_rate_unknown: str | None = Field(
        description="Why the cancellation rate is unknown; null when it is stated."
    )
    slo: dict[str, float] = Field(
        description="ttft_p99_ms, tpot_p99_ms, e2e_p99_ms, queue_deadline_ms."
    )
    measured: MeasuredFlags
    prompt_tokens_samples: int | None
    output_tokens_samples: int | None
    prompt_tokens_p50: float = Field(description="Median prompt tokens (stated or interpolated).")
    prompt_tokens_p99: float = Field(description="p99 prompt tokens (stated or interpolated).")
    output_tokens_p50: float
    output_tokens_p99: float


class WorkloadInput(RecordIdentity):
    classes: dict[str, WorkloadClassInput]
    peak_rps: float = Field(description="Sum of the classes' peak rates.")
    trace_digest: str | None = Field(description="Digest of the trace measured numbers came from.")


# ---- provider -------------------------------------------------------------------


class ProviderInput(RecordIdentity):
    model: str
    accelerator: str
    accelerator_memory_gib: float
    interconnect: str = Field(description="nvlink, pcie or infinity_fabric.")
    interconnect_bandwidth_gb_s: float
    zones: list[str]
    warmup_s: float = Field(description="Measured cold start to ready, seconds.")
    runtime: str
    runtime_version: str


# ---- evidence -------------------------------------------------------------------


class EvidenceClassInput(InputModel):
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    e2e_p99_ms: float | None
    queue_p99_ms: float | None
    error_rate: float | None = Field(
        description="failed / (completed + failed) for this class; null when not stated."
    )
    prompt_tokens_p99: float | None = Field(
        description="p99 of the prompt lengths the test offered this class; null when unknown."
    )
    cancellation_rate: float | None = Field(
        default=None,
        description="Share of this class's requests the test cancelled: cancelled / "
        "(completed + failed + cancelled), or the rate the tool was configured with when "
        "a single-class file counts no cancellations; null when unknown.",
    )


class EvidenceFindings(InputModel):
    """Computed at import or submission: is the test realistic?"""

    prompt_tokens_cv: float | None = Field(description="Coefficient of variation of prompts.")
    output_tokens_cv: float | None
    cancellation_exercised: bool
    priority_classes: int = Field(description="Distinct priorities among the offered classes.")


class EvidenceInput(RecordIdentity):
    tool: str
    entry: str = Field(
        description="imported (read by capgate from the raw file's bytes) or declared (by hand)."
    )
    fresh: bool = Field(description="False when stale for any reason below, or too old.")
    stale_reasons: list[str]
    age_days: float
    measured_against: dict[str, str | None] = Field(
        description="workload, provider and plan refs (plan may be null)."
    )
    replicas: int
    offered_rps_per_replica: float | None = Field(
        description="The load the test really put on each replica: the offered rate, or the "
        "achieved rate when the client fell behind (null if the achieved rate is unknown)."
    )
    client_behind: bool = Field(
        description="The load generator could not keep the offered schedule."
    )
    completed: int | None = Field(description="Completed requests over all classes.")
    failed: int | None = Field(description="Failed requests over all classes.")
    error_rate: float | None = Field(
        description="failed / (completed + failed) over all classes; null when not stated."
    )
    classes: list[str]
    per_class: dict[str, EvidenceClassInput]
    findings: EvidenceFindings
    arrival_cv: float | None = Field(
        description="Coefficient of variation of the test's inter-arrival gaps: 1 Poisson, "
        "above 1 bursty, 0 evenly spaced (a constant-rate test: each generator's arrivals "
        "evenly spaced); null when the file does not say."
    )
    warmup_s: float | None = Field(
        description="Cold start to ready measured during the test, seconds; null if not measured."
    )
    prefix_cache_hit_rate: float | None = Field(
        default=None,
        description="Share of prompt tokens the server's prefix cache served during the test "
        "(from its Prometheus series at import, else as the record states it); null when "
        "nothing states it.",
    )
    workload_prefix_cache_share: float | None = Field(
        default=None,
        description="The workload's prefix-cache share over the classes the test offered, "
        "weighted by the prompt tokens each brought (the test's requests of the class, else "
        "its peak rate, x the workload's mean prompt); null when a class's share is unknown.",
    )
    tp_degree: int = Field(description="Tensor-parallel degree of the serving config tested.")
    interconnect: str = Field(description="Interconnect of the provider the test ran on.")


# ---- manifests ------------------------------------------------------------------


class ManifestDiscrepancyInput(InputModel):
    """A plan field the manifests state with another value than the plan's."""

    field: str = Field(description="Dotted plan field (drain.termination_grace_period_s).")
    plan: Any = Field(description="The plan version's value (null when it has none).")
    manifests: Any = Field(description="The value the manifests state.")
    file: str = Field(description="The manifest file, as the client named it.")
    document: int = Field(description="The YAML document within the file (0-based).")
    line: int = Field(description="The line the value is written on (1-based).")


class ManifestProviderDiscrepancyInput(InputModel):
    """A provider field the manifests serve something else than (another model, vLLM
    minor version, accelerator family or vendor, dtype)."""

    field: str = Field(description="The provider's field (model.name, runtime.version...).")
    provider: Any = Field(description="The provider version's value.")
    manifests: Any = Field(description="What the manifests serve, as the registry read it.")
    read: str = Field(
        description="What the manifests say, as written (an image, a flag, a node label), "
        "when it is not the value itself; empty otherwise."
    )
    file: str = Field(description="The manifest file, as the client named it.")
    document: int = Field(description="The YAML document within the file (0-based).")
    line: int = Field(description="The line it is written on (1-based).")


class ManifestsInput(InputModel):
    checked: bool = Field(description="Manifests were given with the check.")
    discrepancies: list[ManifestDiscrepancyInput] = Field(
        description="Fields the manifests state that disagree with the plan; empty when "
        "not checked."
    )
    # Defaults, so inputs stored before the notes and the provider were carried validate.
    notes: list[str] = Field(
        default_factory=list,
        description="What the manifests leave uncompared although they run the plan (its "
        "zones, when they state only the total replica count; what they serve that cannot "
        "be compared with the provider, and why; the spot capacity they place pods on); "
        "empty when not checked.",
    )
    provider_discrepancies: list[ManifestProviderDiscrepancyInput] = Field(
        default_factory=list,
        description="What the manifests serve that the provider the plan pins does not "
        "describe; empty when not checked.",
    )
    compared_fields: int = Field(
        default=0, ge=0, description="How many fields the manifests state that were compared."
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Each manifest file read (as the client named it, from the repository's "
        "root or the working directory) and the sha256 of its bytes; stdin has none.",
    )


class DriftChangeInput(InputModel):
    field: str = Field(
        description="The workload field that moved, e.g. classes.chat.prompt_tokens.p99."
    )
    planned: Any = Field(description="The value the workload version states.")
    observed: Any = Field(description="What production showed (see rule for how it was read).")
    threshold: float | None
    rule: str


class ProductionInput(InputModel):
    observed: bool = Field(
        description="An observation of this plan against the workload version it pins exists."
    )
    observation: str | None = Field(
        default=None, description="The latest such observation (name@vN)."
    )
    window_end: str | None = None
    drift: list[DriftChangeInput] = Field(
        default_factory=list, description="Material changes from the workload version."
    )
    slo_misses: list[DriftChangeInput] = Field(
        default_factory=list, description="SLOs the observed buckets show were missed."
    )


class GateInput(InputModel):
    plan: PlanInput
    workload: WorkloadInput
    provider: ProviderInput
    evidence: list[EvidenceInput]
    recomputation: RecomputationInput
    # A default, so decisions stored before manifests were compared still validate.
    manifests: ManifestsInput = Field(
        default_factory=lambda: ManifestsInput(checked=False, discrepancies=[]),
        description="The manifests given with the check, compared with the plan.",
    )
    # A default, so decisions stored before production was observed still validate.
    production: ProductionInput = Field(
        default_factory=lambda: ProductionInput(observed=False),
        description="What the latest observation of production says against the workload.",
    )


def input_json_schema() -> dict[str, Any]:
    return GateInput.model_json_schema()


if __name__ == "__main__":  # regenerate docs/gate-input.schema.json
    import json
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / "docs" / "gate-input.schema.json"
    target.write_text(json.dumps(input_json_schema(), indent=2) + "\n", encoding="utf-8")
