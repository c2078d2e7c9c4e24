"""Assembling the gate's input document from the registry and the planner's result."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from registry.errors import FieldProblem, InvalidInput
from registry.gate.context import EvidenceItem, PlanContext
from registry.gate.kv_tail import kv_scenarios
from registry.planner.result import SCENARIO_NAMES, PlanRecomputation
from registry.policy.input_document import (
    CalibrationChange,
    CalibrationInput,
    ClaimCheck,
    ContextFitInput,
    DriftChangeInput,
    EvidenceClassInput,
    EvidenceFindings,
    EvidenceInput,
    GateInput,
    ManifestDiscrepancyInput,
    ManifestsInput,
    MeasuredFlags,
    MemoryInput,
    PlanInput,
    PredictedClass,
    ProductionInput,
    ProviderInput,
    RecomputationInput,
    Scenario,
    UncertaintyInput,
    WorkloadClassInput,
    WorkloadInput,
)
from registry.records.common import Basis, Distribution
from registry.records.evidence import ClassResult, ImportFindings, LoadTestEvidence, Offered
from registry.records.workload import TrafficClass, WorkloadProfile
from registry.staleness.rules import Change

# The predicted p99s the tail SLO policy judges, whose pessimistic ends the input carries.
PESSIMISTIC_METRICS = ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_p99_ms")

if TYPE_CHECKING:
    from registry.manifests.consistency import StatedManifests
    from registry.records.provider import ProviderProfile


def _measured(distribution: Distribution | None) -> bool:
    return (
        distribution is not None
        and distribution.basis is Basis.measured
        and bool(distribution.samples)
    )


def _workload_class(traffic_class: TrafficClass) -> WorkloadClassInput:
    return WorkloadClassInput(
        priority=traffic_class.priority,
        mean_rps=traffic_class.arrival.mean_rps,
        peak_rps=traffic_class.arrival.peak_rps,
        interarrival_cv=traffic_class.arrival.interarrival_cv,
        max_output_tokens=traffic_class.max_output_tokens,
        cancellation_rate=traffic_class.cancellation_rate,
        cancellation_rate_unknown=traffic_class.unknown_reason("cancellation_rate"),
        slo=traffic_class.slo.model_dump(),
        measured=MeasuredFlags(
            prompt_tokens=_measured(traffic_class.prompt_tokens),
            output_tokens=_measured(traffic_class.output_tokens),
            concurrency=_measured(traffic_class.concurrency),
            arrival=traffic_class.arrival.basis is Basis.measured,
        ),
        prompt_tokens_samples=traffic_class.prompt_tokens.samples,
        output_tokens_samples=traffic_class.output_tokens.samples,
        prompt_tokens_p50=_q(traffic_class.prompt_tokens, 50),
        prompt_tokens_p99=_q(traffic_class.prompt_tokens, 99),
        output_tokens_p50=_q(traffic_class.output_tokens, 50),
        output_tokens_p99=_q(traffic_class.output_tokens, 99),
    )


def _q(distribution: Distribution, level: float) -> float:
    stated = distribution.quantile(level)
    if stated is not None:
        return round(float(stated), 3)
    # Imported only here: the sampler's inverse CDF brings NumPy, which a check reusing a
    # stored recomputation of a workload with stated quantiles never needs.
    from registry.planner.sampling import quantile_of

    return round(quantile_of(distribution, level), 3)


def _arrival_cv(offered: Offered) -> float | None:
    """Gamma arrivals of shape k have inter-arrival CV 1/sqrt(k) (Poisson: k = 1, CV 1);
    evenly spaced arrivals (a constant-rate test) have CV 0."""
    if offered.constant_arrivals:
        return 0.0
    if offered.burstiness is None:
        return None
    return round(1.0 / math.sqrt(offered.burstiness), 3)


def _length_cv(distribution: Distribution | None) -> float | None:
    """CV of offered lengths stated as a distribution (for evidence without findings)."""
    from registry.importers.stats import cv_from_stated

    if distribution is None or distribution.quantiles is None:
        return None
    from registry.records.common import quantile_level

    levels = {quantile_level(k): v for k, v in distribution.quantiles.items()}
    return cv_from_stated(
        mean=distribution.mean, std=None, levels=levels, samples=distribution.samples
    ).cv


def _findings(evidence: LoadTestEvidence, workload: WorkloadProfile) -> EvidenceFindings:
    """The import's findings, or the same figures derived from a submitted record.

    Priority classes always come from the workload: a result file knows which classes the
    test offered, only the workload knows their priorities.
    """
    stated: ImportFindings | None = evidence.findings
    priorities = {
        c.priority
        for c in workload.classes
        if c.name in (evidence.offered.classes or list(evidence.results.per_class))
    }
    cancelled = sum(r.cancelled or 0 for r in evidence.results.per_class.values())
    derived_cancellation = cancelled > 0 or bool(evidence.offered.cancellation_rate)
    if stated is not None:
        return EvidenceFindings(
            prompt_tokens_cv=stated.prompt_tokens.cv,
            output_tokens_cv=stated.output_tokens.cv,
            cancellation_exercised=bool(stated.cancellations_exercised),
            priority_classes=len(priorities),
        )
    return EvidenceFindings(
        prompt_tokens_cv=_length_cv(evidence.offered.prompt_tokens),
        output_tokens_cv=_length_cv(evidence.offered.output_tokens),
        cancellation_exercised=derived_cancellation,
        priority_classes=len(priorities),
    )


def _error_rate(completed: int | None, failed: int | None) -> float | None:
    if completed is None or failed is None or completed + failed == 0:
        return None
    return round(failed / (completed + failed), 6)


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _rate_per_replica(offered: Offered) -> float | None:
    """The load the test really carried per replica: a client that fell behind sent less."""
    rate = offered.request_rate_rps
    if offered.client_behind:
        rate = offered.achieved_rate_rps  # unknown achieved rate: no rate to claim at all
    return rate / offered.replicas if rate is not None else None


def _offered_prompt_p99(evidence: LoadTestEvidence, traffic_class: str) -> float | None:
    """The p99 prompt length a test offered one class: the class's own lengths when the
    file states them per class, else the whole test's (a mix reaching the class's long
    prompts exercised them)."""
    own = evidence.results.per_class[traffic_class].prompt_tokens
    offered = own if own is not None else evidence.offered.prompt_tokens
    return _q(offered, 99) if offered is not None else None


def _class_cancellation(result: ClassResult, offered: Offered, *, single: bool) -> float | None:
    """The share of a class's requests the test cancelled. Requests cut off when the tool
    stopped measuring are left out: they were neither served nor cancelled by a client."""
    if result.cancelled is not None:
        settled = [result.completed, result.failed]
        if all(n is not None for n in settled):
            total = (result.completed or 0) + (result.failed or 0) + result.cancelled
        else:
            total = (result.requests or 0) - (result.incomplete or 0)
        return round(result.cancelled / total, 6) if total > 0 else None
    # A single-class test whose file counts no cancellations ran at the rate it was given.
    return offered.cancellation_rate if single else None


def _mean_prompt(traffic_class: TrafficClass) -> float:
    stated = traffic_class.prompt_tokens.mean
    return float(stated) if stated is not None else _q(traffic_class.prompt_tokens, 50)


def _workload_prefix_share(evidence: LoadTestEvidence, workload: WorkloadProfile) -> float | None:
    """Production's prefix-cache share for the mix the test offered: each class's share
    weighted by the prompt tokens it brought to the test (its requests there, else its peak
    rate, times its mean prompt). Unknown when any offered class's share is unknown."""
    offered = evidence.offered.classes or list(evidence.results.per_class)
    classes = [c for c in workload.classes if c.name in offered]
    if not classes or any(c.prefix_cache_share is None for c in classes):
        return None
    results = evidence.results.per_class
    counts = {c.name: results[c.name].requests if c.name in results else None for c in classes}
    use_counts = all(n for n in counts.values())
    weights = {
        c.name: float(counts[c.name] or 0 if use_counts else c.arrival.peak_rps) * _mean_prompt(c)
        for c in classes
    }
    total = sum(weights.values())
    if total <= 0:
        return None
    share = sum(weights[c.name] * (c.prefix_cache_share or 0.0) for c in classes) / total
    return round(share, 6)


def _prefix_hit_rate(evidence: LoadTestEvidence) -> float | None:
    server = evidence.server
    if server is not None and server.prefix_cache_hit_rate is not None:
        return server.prefix_cache_hit_rate
    return evidence.results.prefix_cache_hit_rate


def _queue_p99(evidence: LoadTestEvidence, name: str) -> float | None:
    """A class's p99 queue wait: the file's own, else the server's when the test offered
    that class alone (the server's queue histogram does not tell classes apart)."""
    result = evidence.results.per_class[name]
    if result.queue_ms is not None:
        return result.queue_ms.at(99)
    server = evidence.server
    if server is not None and len(evidence.results.per_class) == 1:
        return server.queue_p99_ms
    return None


def _warmup_s(evidence: LoadTestEvidence) -> float | None:
    if evidence.results.warmup_s is not None:
        return evidence.results.warmup_s
    return evidence.server.warmup_s if evidence.server is not None else None


def _evidence(item: EvidenceItem, context: PlanContext) -> EvidenceInput:
    evidence = item.model
    offered = evidence.offered
    measured = evidence.measured_against
    results = evidence.results.per_class
    per_class = {
        name: EvidenceClassInput(
            ttft_p99_ms=result.ttft_ms.at(99) if result.ttft_ms else None,
            tpot_p99_ms=result.tpot_ms.at(99) if result.tpot_ms else None,
            e2e_p99_ms=result.e2e_ms.at(99) if result.e2e_ms else None,
            queue_p99_ms=_queue_p99(evidence, name),
            error_rate=_error_rate(result.completed, result.failed),
            prompt_tokens_p99=_offered_prompt_p99(evidence, name),
            cancellation_rate=_class_cancellation(result, offered, single=len(results) == 1),
        )
        for name, result in results.items()
    }
    completed = _total([r.completed for r in results.values()])
    failed = _total([r.failed for r in results.values()])
    return EvidenceInput(
        ref=item.view.ref,
        digest=item.view.digest,
        tool=evidence.tool.name,
        entry=evidence.provenance.entry.value,
        fresh=item.freshness.fresh,
        stale_reasons=item.freshness.reasons,
        age_days=round(item.freshness.age_days, 3),
        measured_against={
            "workload": measured.workload,
            "provider": measured.provider,
            "plan": measured.plan,
        },
        replicas=offered.replicas,
        offered_rps_per_replica=_rate_per_replica(offered),
        client_behind=offered.client_behind,
        completed=completed,
        failed=failed,
        error_rate=_error_rate(completed, failed),
        classes=list(offered.classes or evidence.results.per_class),
        per_class=per_class,
        findings=_findings(evidence, context.workload),
        # Evidence pinned to a plan ran that plan's serving config; otherwise assume TP=1.
        arrival_cv=_arrival_cv(offered),
        warmup_s=_warmup_s(evidence),
        prefix_cache_hit_rate=_prefix_hit_rate(evidence),
        workload_prefix_cache_share=_workload_prefix_share(evidence, context.workload),
        tp_degree=context.plan.parallelism.tensor_parallel if measured.plan else 1,
        interconnect=context.provider.accelerator.interconnect.kind.value,
    )


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


def _drift_rows(changes: list[Change]) -> list[DriftChangeInput]:
    return [
        DriftChangeInput(
            field=c.field,
            planned=_finite(c.old),
            observed=_finite(c.new),
            threshold=c.threshold,
            rule=c.rule,
        )
        for c in changes
    ]


def _finite(value: Any) -> Any:
    # JSON (and so the policy input) holds no infinities.
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def production_input(context: PlanContext) -> ProductionInput:
    signal = context.production
    if signal is None:
        return ProductionInput(observed=False)
    return ProductionInput(
        observed=True,
        observation=signal.ref,
        window_end=signal.observation.window_end.isoformat(),
        drift=_drift_rows(signal.drift.changes),
        slo_misses=_drift_rows(signal.drift.slo_misses),
    )


def manifests_input(
    plan: dict[str, Any],
    stated: StatedManifests | ManifestsInput | None,
    provider: ProviderProfile | None = None,
) -> ManifestsInput:
    """The manifests section: what the manifests given with the check state against
    ``plan`` (the plan version's content, as validated), and what they serve against
    ``provider`` (the provider version the plan pins). A section already compared (an
    earlier decision's on the same plan version, which a recheck carries over) is kept."""
    if isinstance(stated, ManifestsInput):
        return stated
    if stated is None:
        return ManifestsInput(checked=False, discrepancies=[])
    from registry.manifests.consistency import discrepancies, notes
    from registry.manifests.provider_match import compare_provider
    from registry.policy.input_document import ManifestProviderDiscrepancyInput

    served, not_compared = compare_provider(provider, stated.fields) if provider else ([], [])
    return ManifestsInput(
        checked=True,
        discrepancies=[
            ManifestDiscrepancyInput(**found.model_dump()) for found in discrepancies(plan, stated)
        ],
        notes=[*notes(plan, stated), *not_compared],
        provider_discrepancies=[
            ManifestProviderDiscrepancyInput(**found.model_dump()) for found in served
        ],
        compared_fields=len(stated.fields),
        files=dict(stated.files),
    )


def gate_input(
    context: PlanContext,
    result: PlanRecomputation,
    previous_calibration: tuple[str, CalibrationInput] | None = None,
    manifests: StatedManifests | ManifestsInput | None = None,
) -> GateInput:
    """The input document; ``previous_calibration`` is (decision id, calibration) of the
    plan's previous decision, when it had one; ``manifests`` the fields the manifests
    given with the check state, compared here with the plan version decided on (or the
    comparison an earlier decision on this version made)."""
    plan, workload, provider = context.plan, context.workload, context.provider
    dump: dict[str, Any] = plan.model_dump(mode="json")
    return GateInput(
        plan=PlanInput(
            ref=context.plan_view.ref,
            digest=context.plan_view.digest,
            tensor_parallel=plan.parallelism.tensor_parallel,
            gpus_per_replica=plan.parallelism.gpus_per_replica,
            replicas_per_zone=dict(plan.replicas_per_zone),
            total_replicas=plan.total_replicas,
            serving=dump["serving"],
            admission=dump["admission"],
            autoscaling=dump["autoscaling"],
            drain=dump["drain"],
            warmup=dump["warmup"],
            reserve=dump["reserve"],
            claims=dump["claims"],
        ),
        workload=WorkloadInput(
            ref=context.workload_view.ref,
            digest=context.workload_view.digest,
            classes={c.name: _workload_class(c) for c in workload.classes},
            peak_rps=sum(c.arrival.peak_rps for c in workload.classes),
            trace_digest=workload.measurement.trace_digest if workload.measurement else None,
        ),
        provider=ProviderInput(
            ref=context.provider_view.ref,
            digest=context.provider_view.digest,
            model=provider.model.name,
            accelerator=provider.accelerator.name,
            accelerator_memory_gib=provider.accelerator.memory_gib,
            interconnect=provider.accelerator.interconnect.kind.value,
            interconnect_bandwidth_gb_s=provider.accelerator.interconnect.bandwidth_gb_s,
            zones=list(provider.zones),
            warmup_s=provider.warmup.cold_start_to_ready_s,
            runtime=provider.runtime.name,
            runtime_version=provider.runtime.version,
        ),
        evidence=[_evidence(item, context) for item in context.evidence],
        recomputation=recomputation_input(result, context, previous_calibration),
        manifests=manifests_input(dump, manifests, provider),
        production=production_input(context),
    )
