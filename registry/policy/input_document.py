"""The input document a gate decision evaluates: the contract between registry and Rego.

The registry assembles it (plan, workload, provider, evidence with freshness, the
planner's recomputation); the policies read only this. Everything time-dependent
(ages, staleness) is computed here in Python, so the policies do no clock or date
parsing and both engines see exactly the same numbers. It is validated against these
models before evaluation: a malformed input is an error, never an allow.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RecordIdentity(_Doc):
    ref: str = Field(description="name@vN")
    digest: str


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


class MeasuredFlags(_Doc):
    """Which of a class's distributions were measured (with samples) rather than assumed."""

    prompt_tokens: bool
    output_tokens: bool
    concurrency: bool = Field(description="False when absent or assumed.")
    arrival: bool


class WorkloadClassInput(_Doc):
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


class EvidenceClassInput(_Doc):
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


class EvidenceFindings(_Doc):
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


# ---- recomputation --------------------------------------------------------------


class PredictedClass(_Doc):
    """Null percentiles mean the class completed nothing in the simulation (slo_met false)."""

    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    e2e_p99_ms: float | None
    queue_p99_ms: float | None
    shed_rate: float
    slo_met: bool
    pessimistic_ms: dict[str, float] = Field(
        description="The pessimistic end of the interval on each predicted p99 above "
        "(ttft_p99_ms, tpot_p99_ms, e2e_p99_ms, queue_p99_ms): the prediction over (1 + the "
        "lowest held-out error of the accelerator family); see recomputation.uncertainty."
    )


class UncertaintyInput(_Doc):
    """The basis of the intervals on predicted latencies (registry/planner/uncertainty.py)."""

    family: str = Field(description="The accelerator card's family.")
    measured_efficiencies: bool = Field(
        description="The card's kernel efficiencies for the weights' dtype were measured."
    )
    held_out_cases: int = Field(description="Held-out published latency figures of the family.")
    error_low: float = Field(description="Lowest error (planner / published - 1) allowed for.")
    error_high: float = Field(description="Highest error allowed for.")
    widened: bool = Field(
        description="The interval is the planner's widest: no measured efficiencies or too "
        "few held-out figures."
    )


class Scenario(_Doc):
    ready_replicas: int
    slo_met: bool
    per_class: dict[str, PredictedClass]


class ClaimCheck(_Doc):
    claimed: float
    predicted: float
    relative_error: float = Field(description="|claimed - predicted| / predicted.")


class ContextFitInput(_Doc):
    max_model_len: int = Field(description="The plan's serving.max_model_len.")
    p99_context_tokens: float = Field(
        ge=0, description="The class's p99 prompt + p99 output tokens."
    )
    rejected_share: float = Field(
        description="Share of the class's requests longer than max_model_len: vLLM rejects them."
    )


class KvScenarioInput(_Doc):
    """What one replica's KV cache must hold in one failure scenario at peak."""

    ready_replicas: int
    in_service_per_replica: float | None = Field(
        description="Requests holding KV per ready replica (Little's law on the scenario's "
        "simulation: rate per replica x mean time in service); null when unknown."
    )
    in_service_kv_tokens: int | None = Field(
        default=None,
        description="KV tokens those requests hold at the p99 of their summed contexts "
        "(N x mean context + 2.326 x sqrt(N) x its standard deviation, per class).",
    )
    p99_concurrency_per_replica: float | None = Field(
        description="The workload's measured p99 requests in flight (summed over classes) per "
        "ready replica; null when the workload measures no concurrency."
    )
    p99_concurrency_kv_tokens: int | None = Field(
        description="KV tokens those requests hold at the p99 of their summed contexts "
        "(N x mean context + 2.326 x sqrt(N) x its standard deviation)."
    )
    preemptions: int = Field(ge=0, description="Preemptions in the scenario's simulation.")
    preemption_rate: float = Field(
        ge=0, description="Preemptions per simulated request in the scenario."
    )


class MemoryInput(_Doc):
    """One replica's memory as vLLM sizes it at start-up (per GPU), and what peak needs."""

    fits: bool = Field(description="Weights, activations and runtime leave KV for one request.")
    reason: str = Field(description="The planner's sentence: the breakdown and the verdict.")
    total_gib: float
    gpu_memory_utilization: float
    usable_gib: float = Field(description="total_gib x gpu_memory_utilization.")
    weights_gib: float
    activation_peak_gib: float
    runtime_overhead_gib: float
    kv_cache_gib: float
    kv_tokens: int
    kv_concurrency_at_p99_context: int = Field(
        description="Requests the KV cache holds at once when each has its class's p99 context "
        "(the smallest over classes)."
    )
    concurrency_needed_at_peak: float = Field(
        description="Requests in service per ready replica at peak with every replica ready "
        "(Little's law: each class's peak rate per replica x its mean time in service)."
    )
    scenarios: dict[str, KvScenarioInput] = Field(
        default_factory=dict,
        description="The same need in each failure scenario (peak, one_worker_lost, "
        "largest_zone_lost), with the workload's measured concurrency and the simulation's "
        "preemptions.",
    )


class CalibrationInput(_Doc):
    """The step-time model's efficiencies the recomputation used."""

    fitted: bool = Field(description="Fitted to fresh evidence on this accelerator and runtime.")
    source_evidence: list[str] = Field(description="Evidence refs the fit used.")
    mbu: float = Field(description="Memory-bandwidth utilisation of decode steps.")
    mfu: float = Field(description="Compute utilisation of prefill steps.")
    fit_error: float | None = Field(description="RMS log error of the fit; null when not fitted.")


class CalibrationChange(_Doc):
    decision: str = Field(description="The plan's previous decision (id).")
    previous: CalibrationInput


class RecomputationInput(_Doc):
    planner_version: str
    fits: bool = Field(description="The model and one max-length request fit a replica.")
    memory: MemoryInput
    context_fit: dict[str, ContextFitInput] = Field(
        description="Per class: do its requests fit serving.max_model_len?"
    )
    fits_single_gpu: bool = Field(description="The model fits one accelerator at TP=1.")
    min_ready_replicas_at_peak: int | None = Field(
        description="Fewest ready replicas meeting every SLO at peak; null when none found."
    )
    warmup_headroom_replicas: int = Field(
        description="Extra ready replicas to absorb the peak's growth during one warm-up."
    )
    peak_rps_per_replica: float = Field(description="Workload peak over the plan's ready replicas.")
    peak_rps_per_replica_zone_lost: float = Field(
        description="Workload peak over the replicas left ready after losing the largest zone: "
        "the load each survivor must carry, and so the load a test must have shown."
    )
    longest_stream_s: float = Field(
        description="Longest allowed stream: TTFT p99 + max_output_tokens x TPOT p99, seconds."
    )
    e2e_p99_ms_max: float = Field(description="Largest predicted p99 end-to-end across classes.")
    scenarios: dict[str, Scenario] = Field(description="peak, one_worker_lost, largest_zone_lost.")
    claims_check: dict[str, dict[str, ClaimCheck]] = Field(
        description="class -> metric (ttft_p99_ms, ...) -> claimed vs predicted."
    )
    # Replication versus partitioning: the plan's TP against TP=1. Null at TP=1, when TP=1 or
    # the plan's TP was not evaluated, and in documents from before these fields existed.
    calibration: CalibrationInput
    uncertainty: UncertaintyInput = Field(
        description="How far the planner's predictions may be off. While no fresh load "
        "test calibrates the model (calibration.fitted false), the tail SLO is judged "
        "against each prediction's pessimistic end."
    )
    calibration_changed: CalibrationChange | None = Field(
        default=None,
        description="Set when the calibration differs from the one the plan's previous "
        "decision was taken with: predictions moved without the plan changing.",
    )
    tp_latency_gain: float | None = Field(
        description="Relative p99 latency gain of the plan's TP over TP=1 on the same GPUs at "
        "the peak (tp_equal_gpus): the smaller of tp_tpot_gain and tp_ttft_gain, so TP must "
        "cut both. Negative when TP is slower."
    )
    tp_tpot_gain: float | None = Field(
        default=None,
        description="(TP=1 - plan's TP) / TP=1 of the worst class's p99 TPOT on tp_equal_gpus "
        "GPUs at peak.",
    )
    tp_ttft_gain: float | None = Field(
        default=None,
        description="(TP=1 - plan's TP) / TP=1 of the worst class's p99 TTFT on tp_equal_gpus "
        "GPUs at peak.",
    )
    tp_equal_gpus: int | None = Field(
        default=None,
        description="GPUs of the equal-GPU comparison: the plan's TP's GPUs at peak (the "
        "plan's GPUs when no count met the SLOs), as that many / TP replicas against that "
        "many TP=1 replicas, at the same offered load.",
    )
    tp_gpus_at_peak: int | None = Field(
        default=None,
        description="GPUs the plan's TP needs at peak (fewest replicas meeting every SLO x TP).",
    )
    single_gpu_gpus_at_peak: int | None = Field(
        default=None,
        description="GPUs TP=1 needs at peak; null when it does not fit or no count met the SLOs.",
    )
    tp_gpu_saving: int | None = Field(
        default=None,
        description="single_gpu_gpus_at_peak - tp_gpus_at_peak: GPUs the plan's TP saves at peak "
        "(negative when it costs more).",
    )
    fits_single_gpu_with_useful_kv: bool | None = Field(
        default=None,
        description="TP=1 fits and its KV cache holds, at the p99 context, the requests a "
        "replica has in service on tp_equal_gpus at peak (single_gpu_kv_concurrency >= "
        "single_gpu_concurrency_needed). False when TP=1 does not fit.",
    )
    single_gpu_kv_concurrency: int | None = Field(
        default=None,
        description="Requests TP=1's KV cache holds at once at the p99 context (the smallest "
        "over classes).",
    )
    single_gpu_concurrency_needed: float | None = Field(
        default=None,
        description="Requests in service per TP=1 replica on tp_equal_gpus at peak (Little's "
        "law: each class's peak rate per replica x its mean time in service).",
    )


# ---- manifests ------------------------------------------------------------------


class ManifestDiscrepancyInput(_Doc):
    """A plan field the manifests state with another value than the plan's."""

    field: str = Field(description="Dotted plan field (drain.termination_grace_period_s).")
    plan: Any = Field(description="The plan version's value (null when it has none).")
    manifests: Any = Field(description="The value the manifests state.")
    file: str = Field(description="The manifest file, as the client named it.")
    document: int = Field(description="The YAML document within the file (0-based).")
    line: int = Field(description="The line the value is written on (1-based).")


class ManifestProviderDiscrepancyInput(_Doc):
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


class ManifestsInput(_Doc):
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


class DriftChangeInput(_Doc):
    field: str = Field(
        description="The workload field that moved, e.g. classes.chat.prompt_tokens.p99."
    )
    planned: Any = Field(description="The value the workload version states.")
    observed: Any = Field(description="What production showed (see rule for how it was read).")
    threshold: float | None
    rule: str


class ProductionInput(_Doc):
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


class GateInput(_Doc):
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
