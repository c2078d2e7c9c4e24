"""The gate input's recomputation section: the planner's result as the policies read it.

Memory and KV cache per failure scenario, the calibration (and whether it changed since
the plan's previous decision), the prediction intervals, each scenario's predicted p99s
with their pessimistic ends, the claims checked against the predictions, and the plan's
tensor parallelism against one GPU per replica.
"""

from __future__ import annotations

from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.gate.context import PlanContext
from registry.gate.kv_tail import kv_scenarios
from registry.planner.result import SCENARIO_NAMES, PlanRecomputation
from registry.policy.input_recomputation import (
    CalibrationChange,
    CalibrationInput,
    ClaimCheck,
    ContextFitInput,
    MemoryInput,
    PredictedClass,
    RecomputationInput,
    Scenario,
    UncertaintyInput,
)
from registry.records.workload import WorkloadProfile

# The predicted p99s the tail SLO policy judges, whose pessimistic ends the input carries.
PESSIMISTIC_METRICS = ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_p99_ms")


def _scenario(result: PlanRecomputation, name: str) -> Scenario:
    scenario = result.scenarios[name]
    return Scenario(
        ready_replicas=scenario.ready_replicas,
        slo_met=scenario.slo_met,
        per_class={
            cls: PredictedClass(
                ttft_p99_ms=p.ttft_p99_ms,
                tpot_p99_ms=p.tpot_p99_ms,
                e2e_p99_ms=p.e2e_p99_ms,
                queue_p99_ms=p.queue_p99_ms,
                shed_rate=p.shed_rate,
                slo_met=p.slo_met,
                pessimistic_ms={
                    metric: bounds[1]
                    for metric, bounds in p.interval_ms.items()
                    if metric in PESSIMISTIC_METRICS
                },
            )
            for cls, p in scenario.per_class.items()
        },
    )


def _longest_stream_s(result: PlanRecomputation, workload: WorkloadProfile) -> float:
    """TTFT p99 plus the longest allowed output at the p99 time per token, at peak."""
    peak = result.scenarios["peak"].per_class
    longest = 0.0
    for traffic_class in workload.classes:
        predicted = peak.get(traffic_class.name)
        if predicted is None:
            continue
        tokens = (
            traffic_class.max_output_tokens
            or traffic_class.output_tokens.max
            or (traffic_class.output_tokens.quantile(99) or 0.0)
        )
        stream_ms = (predicted.ttft_p99_ms or 0.0) + tokens * (predicted.tpot_p99_ms or 0.0)
        longest = max(longest, stream_ms / 1000.0)
    return longest


def _gain(single: float | None, partitioned: float | None) -> float | None:
    """Relative gain of the plan's TP over TP=1 (positive: TP is faster)."""
    if not single or partitioned is None:
        return None
    return round((single - partitioned) / single, 4)


def _tp_latency_gain(result: PlanRecomputation, tensor_parallel: int) -> dict[str, Any]:
    """The plan's TP against TP=1, as the partitioning_justified policy reads it.

    Latency gains are taken at equal GPUs and equal offered load (the planner runs both on
    the plan TP's GPUs at peak), not between fleets each sized to just meet the SLOs: those
    sit at the SLO whatever the TP, so their gain is about zero by construction.
    """
    options = {o.tensor_parallel: o for o in result.sizing.tp_options}
    single, chosen = options.get(1), options.get(tensor_parallel)
    fits_single = single is not None and single.fits
    fields: dict[str, Any] = {
        "tp_latency_gain": None,
        "single_gpu_kv_concurrency": (
            single.kv_concurrency_at_p99_context if single and fits_single else None
        ),
    }
    if tensor_parallel == 1:
        return fields
    fields["fits_single_gpu_with_useful_kv"] = (
        single.fits_with_useful_kv if single is not None and fits_single else False
    )
    if chosen is None:
        return fields
    fields["tp_gpus_at_peak"] = chosen.gpus_at_peak
    if single is None or not fits_single:
        return fields
    tpot = _gain(single.equal_gpus_tpot_p99_ms, chosen.equal_gpus_tpot_p99_ms)
    ttft = _gain(single.equal_gpus_ttft_p99_ms, chosen.equal_gpus_ttft_p99_ms)
    saving = (
        None
        if single.gpus_at_peak is None or chosen.gpus_at_peak is None
        else single.gpus_at_peak - chosen.gpus_at_peak
    )
    fields.update(
        tp_latency_gain=None if tpot is None or ttft is None else min(tpot, ttft),
        tp_tpot_gain=tpot,
        tp_ttft_gain=ttft,
        tp_equal_gpus=chosen.equal_gpus,
        single_gpu_gpus_at_peak=single.gpus_at_peak,
        tp_gpu_saving=saving,
        single_gpu_concurrency_needed=single.concurrency_needed_per_replica,
    )
    return fields


def _memory(result: PlanRecomputation, context: PlanContext) -> MemoryInput:
    memory = result.memory
    scenarios = kv_scenarios(result, context.workload)
    peak = scenarios.get("peak")
    in_service = peak.in_service_per_replica if peak is not None else None
    return MemoryInput(
        fits=memory.fits,
        reason=memory.reason,
        total_gib=round(memory.total_gib, 3),
        gpu_memory_utilization=context.plan.serving.gpu_memory_utilization,
        usable_gib=round(memory.usable_gib, 3),
        weights_gib=round(memory.weights_gib, 3),
        activation_peak_gib=round(memory.activation_peak_gib, 3),
        runtime_overhead_gib=round(memory.runtime_overhead_gib, 3),
        kv_cache_gib=round(memory.kv_cache_gib, 3),
        kv_tokens=memory.kv_tokens,
        kv_concurrency_at_p99_context=memory.max_concurrency_at_p99_context,
        concurrency_needed_at_peak=in_service or 0.0,
        scenarios=scenarios,
    )


def uncertainty_input(result: PlanRecomputation) -> UncertaintyInput:
    u = result.uncertainty
    if u is None:
        # Fail closed: without intervals the gate cannot judge an uncalibrated prediction.
        raise InvalidInput(
            "the recomputation states no uncertainty",
            problems=[
                FieldProblem(
                    "recomputation.uncertainty",
                    f"recomputed by {result.planner_version}, before predictions carried "
                    "intervals: recompute the plan",
                )
            ],
        )
    return UncertaintyInput(
        family=u.family,
        measured_efficiencies=u.measured_efficiencies,
        held_out_cases=u.held_out_cases,
        error_low=u.error_low,
        error_high=u.error_high,
        widened=u.widened,
    )


def calibration_input(result: PlanRecomputation) -> CalibrationInput:
    calibration = result.calibration
    return CalibrationInput(
        fitted=calibration.fitted,
        source_evidence=list(calibration.source_evidence),
        mbu=round(calibration.mbu, 4),
        mfu=round(calibration.mfu, 4),
        fit_error=None if calibration.fit_error is None else round(calibration.fit_error, 4),
    )


def recomputation_input(
    result: PlanRecomputation,
    context: PlanContext,
    previous_calibration: tuple[str, CalibrationInput] | None = None,
) -> RecomputationInput:
    options = {o.tensor_parallel: o for o in result.sizing.tp_options}
    single = options.get(1)
    peak_rps = sum(c.arrival.peak_rps for c in context.workload.classes)
    claims: dict[str, dict[str, ClaimCheck]] = {}
    for cls, metrics in result.claims_check.per_class.items():
        for metric, check in metrics.items():
            if check.claimed is None or check.predicted is None or check.relative_error is None:
                continue
            claims.setdefault(cls, {})[metric] = ClaimCheck(
                claimed=check.claimed,
                predicted=check.predicted,
                relative_error=abs(check.relative_error),
            )
    e2e = [p.e2e_p99_ms for p in result.scenarios["peak"].per_class.values() if p.e2e_p99_ms]
    calibration = calibration_input(result)
    changed = None
    if previous_calibration is not None and previous_calibration[1] != calibration:
        changed = CalibrationChange(
            decision=previous_calibration[0], previous=previous_calibration[1]
        )
    return RecomputationInput(
        planner_version=result.planner_version,
        fits=result.memory.fits,
        memory=_memory(result, context),
        calibration=calibration,
        uncertainty=uncertainty_input(result),
        calibration_changed=changed,
        context_fit={
            name: ContextFitInput(
                max_model_len=fit.max_model_len,
                p99_context_tokens=fit.p99_context_tokens,
                rejected_share=fit.rejected_share,
            )
            for name, fit in result.context_fit.items()
        },
        fits_single_gpu=bool(single and single.fits),
        min_ready_replicas_at_peak=result.sizing.min_ready_replicas_at_peak,
        warmup_headroom_replicas=result.sizing.warmup_headroom_replicas,
        peak_rps_per_replica=peak_rps / max(context.plan.total_replicas, 1),
        peak_rps_per_replica_zone_lost=peak_rps
        / max(result.scenarios["largest_zone_lost"].ready_replicas, 1),
        longest_stream_s=round(_longest_stream_s(result, context.workload), 3),
        e2e_p99_ms_max=max(e2e, default=0.0),
        scenarios={name: _scenario(result, name) for name in SCENARIO_NAMES},
        claims_check=claims,
        **_tp_latency_gain(result, context.plan.parallelism.tensor_parallel),
    )
