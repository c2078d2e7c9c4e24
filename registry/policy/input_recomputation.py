"""The gate input's recomputation section: the planner's result as the policies read it.

Its predictions per failure scenario with their pessimistic ends and uncertainty, memory
and KV cache per scenario, each class's fit in the context length, the calibration and
whether it changed since the plan's previous decision, the claims checked against the
predictions, and the plan's tensor parallelism against one GPU per replica. Part of the
document in registry.policy.input_document.
"""

from __future__ import annotations

from pydantic import Field

from registry.policy.input_model import InputModel


class PredictedClass(InputModel):
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


class UncertaintyInput(InputModel):
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


class Scenario(InputModel):
    ready_replicas: int
    slo_met: bool
    per_class: dict[str, PredictedClass]


class ClaimCheck(InputModel):
    claimed: float
    predicted: float
    relative_error: float = Field(description="|claimed - predicted| / predicted.")


class ContextFitInput(InputModel):
    max_model_len: int = Field(description="The plan's serving.max_model_len.")
    p99_context_tokens: float = Field(
        ge=0, description="The class's p99 prompt + p99 output tokens."
    )
    rejected_share: float = Field(
        description="Share of the class's requests longer than max_model_len: vLLM rejects them."
    )


class KvScenarioInput(InputModel):
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


class MemoryInput(InputModel):
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


class CalibrationInput(InputModel):
    """The step-time model's efficiencies the recomputation used."""

    fitted: bool = Field(description="Fitted to fresh evidence on this accelerator and runtime.")
    source_evidence: list[str] = Field(description="Evidence refs the fit used.")
    mbu: float = Field(description="Memory-bandwidth utilisation of decode steps.")
    mfu: float = Field(description="Compute utilisation of prefill steps.")
    fit_error: float | None = Field(description="RMS log error of the fit; null when not fitted.")


class CalibrationChange(InputModel):
    decision: str = Field(description="The plan's previous decision (id).")
    previous: CalibrationInput


class RecomputationInput(InputModel):
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
