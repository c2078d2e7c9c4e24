"""The planner's output: plain, JSON-serialisable pydantic models fed to Rego policies.

Keep field names stable: policies read them. Times are milliseconds (``_ms``), rates per
second (``_rps``), shares in [0, 1]. Percentiles are None when a class completed nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The failure scenarios every recomputation runs at peak, in this order.
SCENARIO_NAMES = ("peak", "one_worker_lost", "largest_zone_lost")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClassPrediction(_Out):
    requests: int
    completed: int
    cancelled: int
    shed: int
    retries: int
    shed_rate: float
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p90_ms: float | None
    tpot_p99_ms: float | None
    e2e_p50_ms: float | None
    e2e_p90_ms: float | None
    e2e_p99_ms: float | None
    queue_p99_ms: float | None
    slo_met: bool
    violations: list[str] = Field(default_factory=list)
    interval_ms: dict[str, list[float]] = Field(
        default_factory=dict,
        description="Per predicted latency (ttft_p99_ms, ...), [optimistic, pessimistic]: "
        "the range the planner's held-out error for the accelerator family puts the "
        "measured value in (registry/planner/uncertainty.py; the recomputation's "
        "`uncertainty` says on what basis).",
    )


class Scenario(_Out):
    name: str
    ready_replicas: int
    lost_replicas: int
    tensor_parallel: int
    offered_rps: float
    load_factor: float
    per_class: dict[str, ClassPrediction]
    slo_met: bool
    violations: list[str] = Field(default_factory=list)
    completed_rps: float
    sustained_rps: float = Field(
        default=0.0,
        description="Requests finished within the measured window per second: the "
        "throughput a load test sees; below the offered rate when the replicas saturate.",
    )
    goodput_rps: float = Field(
        default=0.0,
        description="Requests sent within the measured window that finished inside it "
        "within every SLO of their class (TTFT, TPOT, end to end), per second.",
    )
    output_tokens_per_s: float
    preemptions: int
    kv_usage_peak: float
    kv_usage_mean: float
    waiting_mean_per_replica: float
    retry_amplification: float = Field(description="Attempts per original request.")
    simulated_requests: int
    in_service_per_replica: float | None = Field(
        default=None,
        description="Requests holding KV cache on one ready replica (Little's law: each "
        "class's rate per replica x its mean time in service, e2e minus queue wait); null "
        "when a class completed nothing or no replica is ready.",
    )
    in_service_kv_tokens: int | None = Field(
        default=None,
        description="KV tokens those requests hold on one replica at the p99 of the sum of "
        "their contexts (registry/planner/kv_need.py).",
    )
    notes: list[str] = Field(default_factory=list)


class ContextMoments(_Out):
    """Mean and standard deviation of one request's context (prompt + full output)."""

    mean: float
    sd: float


class Memory(_Out):
    tensor_parallel: int
    total_gib: float
    usable_gib: float
    weights_gib: float
    activation_peak_gib: float
    runtime_overhead_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: float
    kv_bytes_per_token_per_gpu: float
    block_size: int
    kv_blocks: int
    kv_tokens: int
    max_concurrency_at_p99_context: int
    concurrency_by_class: dict[str, int]
    fits: bool
    reason: str
    context_tokens: dict[str, ContextMoments] = Field(
        default_factory=dict,
        description="Per class, the mean and spread of one request's context, from the "
        "workload's (joint) length distributions: what requests in flight hold in KV, in the "
        "tokens kv_tokens counts (with sliding-window layers, the context's share in the full "
        "groups plus the window's in the sliding ones).",
    )


class TPOption(_Out):
    tensor_parallel: int
    gpus_per_replica: int
    fits: bool
    memory_reason: str
    kv_tokens: int
    min_ready_replicas_at_peak: int | None
    gpus_at_peak: int | None
    worst_ttft_p99_ms: float | None
    worst_tpot_p99_ms: float | None
    throughput_per_gpu_rps: float | None
    cost_per_hour_at_peak_usd: float | None
    slo_met: bool
    reason: str
    kv_concurrency_at_p99_context: int | None = Field(
        default=None,
        description="Requests one replica's KV cache holds at once at the p99 context.",
    )
    # Replication versus partitioning at equal GPUs: filled on TP=1 and the plan's TP when the
    # plan uses TP > 1 and both fit; null otherwise.
    equal_gpus: int | None = Field(
        default=None,
        description="GPUs both options get in the equal-GPU comparison: the plan's TP "
        "option's gpus_at_peak (the plan's GPUs when no count met the SLOs).",
    )
    equal_gpus_replicas: int | None = Field(
        default=None, description="equal_gpus / tensor_parallel replicas, all at the peak."
    )
    equal_gpus_ttft_p99_ms: float | None = Field(
        default=None, description="Worst class's p99 TTFT on equal_gpus at peak."
    )
    equal_gpus_tpot_p99_ms: float | None = Field(
        default=None, description="Worst class's p99 TPOT on equal_gpus at peak."
    )
    equal_gpus_slo_met: bool | None = None
    concurrency_needed_per_replica: float | None = Field(
        default=None,
        description="Requests in service per replica on equal_gpus at peak (Little's law: "
        "each class's peak rate per replica x its mean time in service).",
    )
    fits_with_useful_kv: bool | None = Field(
        default=None,
        description="Fits, and kv_concurrency_at_p99_context >= concurrency_needed_per_replica "
        "(false when it does not fit; null when not compared).",
    )


class Sizing(_Out):
    min_ready_replicas_at_peak: int | None
    recommended_replicas_per_zone: dict[str, int]
    recommended_total_replicas: int | None
    reserve_replicas: int | None
    warmup_headroom_replicas: int
    tensor_parallel: int
    tp_reason: str
    tp_options: list[TPOption]
    plan_total_replicas: int
    plan_meets_reserve: bool
    notes: list[str] = Field(default_factory=list)


class AutoscalingAdvice(_Out):
    metric: str
    target: float
    alternative_metric: str
    alternative_target: float
    min_replicas: int
    max_replicas: int
    scale_up_stabilization_s: float
    scale_down_stabilization_s: float
    reason: str


class Cost(_Out):
    gpus: int
    price_per_gpu_hour_usd: float | None
    per_hour_usd: float | None
    per_million_output_tokens_usd: float | None
    recommended_per_hour_usd: float | None
    basis: str


class ClaimCheck(_Out):
    claimed: float | None
    predicted: float | None
    relative_error: float | None = Field(description="(claimed - predicted) / predicted.")
    optimistic: bool = Field(description="The claim is better than the recomputation.")
    within_tolerance: bool


class ClaimsCheck(_Out):
    tolerance: float
    per_class: dict[str, dict[str, ClaimCheck]]
    ready_replicas_needed_at_peak: ClaimCheck | None
    peak_rps: ClaimCheck | None
    findings: list[str] = Field(default_factory=list)


class CalibrationResidual(_Out):
    evidence: str
    traffic_class: str
    metric: str
    measured_ms: float
    predicted_ms: float | None
    relative_error: float | None


class CalibrationGroup(_Out):
    """One held-out group of figures (one metric of one class of one test)."""

    evidence: str
    traffic_class: str
    metric: str
    held_out_error: float = Field(
        description="RMS log error of the group predicted by the fit to the other groups, "
        "shrunk toward the defaults as far as the calibration's shrinkage."
    )
    default_error: float = Field(description="RMS log error of the defaults on the group.")


class Calibration(_Out):
    source_evidence: list[str]
    ignored_evidence: dict[str, str] = Field(default_factory=dict)
    fitted: bool
    mbu: float
    mfu: float
    step_overhead_ms: float
    fit_error: float | None = Field(
        description="Root mean square of log(predicted / measured) over the fitted points."
    )
    residuals: list[CalibrationResidual] = Field(default_factory=list)
    sources: dict[str, str] = Field(default_factory=dict)
    rejected: str | None = Field(
        default=None,
        description="Why a fit was rejected (fractions no GPU reaches); the defaults stay.",
    )
    frontend_ms: float | None = Field(
        default=None,
        description="The API server's time per request added to TTFT and end-to-end "
        "latency: fitted with the fractions when the evidence measured TTFT, else the "
        "runtime's default (registry/planner/efficiency.py FRONTEND).",
    )
    held_out_error: float | None = Field(
        default=None,
        description="Leave-one-out RMS log error of the fit: each group of figures (one "
        "metric of one class of one test) predicted by the fit to the others, shrunk as "
        "far as `shrinkage` (the full fit's when it was rejected). None when nothing was "
        "fitted or one group cannot be held out.",
    )
    default_error: float | None = Field(
        default=None,
        description="RMS log error of the default efficiencies on the same figures; a fit "
        "whose held-out error is not below it is not used.",
    )
    shrinkage: float | None = Field(
        default=None,
        description="The share of the fit used (alpha): the fractions move this far from the "
        "defaults toward the fit in log space, the API server time linearly. The largest of "
        "1, 0.75, 0.5 and 0.25 at which no held-out group does worse than the defaults; "
        "None when the fit is not used.",
    )
    held_out_groups: list[CalibrationGroup] = Field(
        default_factory=list,
        description="Every held-out group's error at `shrinkage` (at the full fit when "
        "rejected) against the defaults' on the same group.",
    )
    worst_group: CalibrationGroup | None = Field(
        default=None,
        description="The held-out group nearest to (or furthest into) doing worse than the "
        "defaults.",
    )


class LoadPoint(_Out):
    load_factor: float
    offered_rps: float
    ready_replicas: int
    per_class_ttft_p99_ms: dict[str, float | None]
    per_class_tpot_p99_ms: dict[str, float | None]
    per_class_e2e_p99_ms: dict[str, float | None]
    slo_met: bool


class ModelSummary(_Out):
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    total_params_b: float
    active_params_b: float
    sources: list[str]
    notes: list[str]


class StepFigures(_Out):
    """Reference step times of the chosen configuration, for people reading the report."""

    decode_batch1_ms: float
    decode_batch_full_ms: float
    decode_batch_full: int
    prefill_2k_ms: float


class ContextFit(_Out):
    """Whether a class's requests fit the plan's max_model_len (vLLM rejects longer ones)."""

    max_model_len: int
    p99_prompt_tokens: float
    p99_output_tokens: float
    p99_context_tokens: float = Field(description="p99 prompt + p99 output tokens.")
    rejected_share: float = Field(
        description="Share of requests longer than max_model_len: vLLM rejects them."
    )


class Uncertainty(_Out):
    """Where the intervals on predicted latencies come from."""

    family: str = Field(description="The accelerator card's family.")
    dtype: str = Field(description="The weights' dtype the kernels run (bf16 or fp8).")
    measured_efficiencies: bool = Field(
        description="Whether the card's kernel efficiencies for that dtype were measured."
    )
    held_out_cases: int = Field(
        description="Published vLLM latency figures of the family none of the defaults "
        "was read from (docs/planner-validation.md)."
    )
    error_low: float = Field(
        description="Lowest error (planner / published - 1) the interval allows for."
    )
    error_high: float = Field(description="Highest error the interval allows for.")
    widened: bool = Field(
        description="True when the family lacks measured efficiencies or enough held-out "
        "figures: the interval is the planner's widest, not the family's own."
    )
    calibrated: bool = Field(
        description="Fresh load tests calibrated the model: the gate judges the point "
        "prediction; otherwise the pessimistic end."
    )
    basis: str


class PlanRecomputation(_Out):
    planner_version: str
    seed: int
    plan: str
    workload: str
    provider: str
    model: ModelSummary
    memory: Memory
    step_time: StepFigures
    sizing: Sizing
    slos: dict[str, dict[str, float]] = Field(
        description="Per class, the workload's objectives the predictions are checked against."
    )
    scenarios: dict[str, Scenario]
    slo_met: bool
    autoscaling: AutoscalingAdvice
    cost: Cost
    claims_check: ClaimsCheck
    calibration: Calibration
    load_curve: list[LoadPoint]
    context_fit: dict[str, ContextFit] = Field(
        default_factory=dict, description="Per class, requests against serving.max_model_len."
    )
    findings: list[str] = Field(default_factory=list)
    uncertainty: Uncertainty | None = Field(
        default=None,
        description="The basis of every interval_ms; null only in recomputations stored by "
        "a planner before 0.4, which the gate does not decide on.",
    )
