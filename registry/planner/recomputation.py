"""The full recomputation of a capacity plan, independent of what the plan claims."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from registry.errors import FieldProblem, InvalidInput
from registry.planner.backends import unmodelled_backend
from registry.planner.calibration import EvidenceItem, calibrate
from registry.planner.claims import check_claims
from registry.planner.class_prediction import MAX_SHED_RATE
from registry.planner.context_fit import context_fit as fit_context
from registry.planner.kv_layout import hybrid_manager, kv_groups
from registry.planner.model_shape import resolve_model
from registry.planner.progress import Progress, current
from registry.planner.result import (
    AutoscalingAdvice,
    Cost,
    LoadPoint,
    ModelSummary,
    PlanRecomputation,
    Scenario,
    Sizing,
    StepFigures,
)
from registry.planner.runtime_features import (
    async_finding,
    async_scheduling,
    compilation_fusions,
    fusion_findings,
    static_fp8_activations,
)
from registry.planner.scenarios import (
    context_moments,
    group_note,
    memory_summary,
    scenario,
)
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency
from registry.planner.tp_choice import compare_tp
from registry.planner.uncertainty import uncertainty, with_intervals
from registry.planner.unknowns import unknown_notes
from registry.planner.version import PLANNER_VERSION
from registry.records.evidence import LoadTestEvidence
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile

# Requests one simulation draws at most: FLEET_GROUP x REQUESTS_PER_REPLICA (search.py),
# whatever the fleet's size. The chart's points are shorter runs, except the peak's, which
# is the peak scenario itself.
SIM_REQUESTS = 8000
CURVE_REQUESTS = 3000
CURVE_LOADS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5)


def _curve_limit(load: float) -> int:
    """Requests a load curve point simulates: the peak's point is the peak scenario itself."""
    return 0 if load == 1.0 else CURVE_REQUESTS


def replicas_per_zone_required(r_min: int, n_zones: int, headroom: int, disruption: int = 0) -> int:
    """Replicas per zone the gate requires of a plan that needs ``r_min`` ready at peak.

    One computation for the planner's recommendation and the policies it must pass:
    reserve_explicit (the largest zone or one worker lost still leaves ``r_min`` ready),
    warm_replica_exclusion (``r_min`` plus the warm-up headroom in total) and
    drain_configured (a node drain of ``disruption`` replicas, the plan's disruption
    budget, while the largest zone is lost still leaves ``r_min``). One zone cannot
    survive its own loss; it keeps one spare worker.
    """
    if n_zones <= 1:
        return r_min + max(1, headroom)
    per_zone = math.ceil(r_min / (n_zones - 1))
    while (
        n_zones * per_zone - 1 < r_min
        or n_zones * per_zone < r_min + headroom
        or (n_zones - 1) * per_zone - disruption < r_min
    ):
        per_zone += 1
    return per_zone


def recompute(
    plan: CapacityPlan,
    workload: WorkloadProfile,
    provider: ProviderProfile,
    *,
    evidence: Sequence[LoadTestEvidence | tuple[LoadTestEvidence, ProviderProfile]] = (),
    seed: int = 0,
    progress: Progress | None = None,
) -> PlanRecomputation:
    """Recompute what ``plan`` needs from the workload and provider, whatever it claims.

    ``evidence`` items are load tests, optionally paired with the provider profile they ran
    against (a bare record is taken to have run against ``provider`` when its reference
    names it); those on the same accelerator and runtime calibrate the step-time model.
    ``progress`` (or the reporter installed with ``progress.reporting``) hears of each
    stage, TP degree and candidate replica count; the recomputation never prints.
    """
    report = progress if progress is not None else current()
    backend = unmodelled_backend(provider.accelerator.name)
    if backend is not None:
        raise InvalidInput(
            f"the planner cannot price {provider.accelerator.name}",
            problems=[
                FieldProblem(
                    "accelerator.name",
                    f"provider {provider.name}: {provider.accelerator.name} is {backend}; "
                    "the planner models vLLM's GPU engine (CUDA, ROCm), so this plan is "
                    "refused rather than priced with a GPU's numbers",
                )
            ],
        )
    shape = resolve_model(provider)
    items: list[EvidenceItem] = list(evidence)
    # vLLM from 0.14.0 (or a profile passing --async-scheduling) schedules ahead of the GPU.
    scheduling = async_scheduling(provider.runtime)
    # --compilation-config's fusions fold the fp8 quantisations into the kernels before them.
    compiled = compilation_fusions(provider.runtime, provider.model)
    base = Efficiency(
        async_scheduling=scheduling.enabled,
        fusions=compiled.fusions,
        static_fp8_scales=static_fp8_activations(provider.model),
    )
    if items:
        report.report("calibrating")
    efficiency, calibration = calibrate(
        items,
        plan=plan,
        workload=workload,
        provider=provider,
        shape=shape,
        base=base,
        seed=seed,
    )
    ev = Evaluator(
        plan,
        workload,
        provider,
        shape,
        efficiency,
        seed=seed,
        requests=SIM_REQUESTS,
        progress=report,
        frontend_ms=calibration.frontend_ms,
    )
    findings: list[str] = list(shape.notes)
    plan_tp = plan.parallelism.tensor_parallel
    if scheduling.enabled:
        findings.append(async_finding(scheduling.reason, ev.step_model(plan_tp)))
    findings.extend(fusion_findings(compiled, ev.step_model(plan_tp)))
    zones = list(plan.replicas_per_zone)
    price = provider.price_per_accelerator_hour_usd
    peak = ev.peak_rps
    mean = sum(c.arrival.mean_rps for c in workload.classes)

    # --- tensor parallelism: replication versus partitioning ------------------------------
    options, mins, chosen_tp, tp_reason = compare_tp(ev, plan_tp, plan.total_replicas, peak, price)
    if chosen_tp != plan_tp:
        findings.append(f"the plan uses TP={plan_tp}; the recomputation prefers TP={chosen_tp}")

    # --- sizing and reserve for the plan's own TP -----------------------------------------
    plan_mem = ev.memory(plan_tp)
    r_min = mins.get(plan_tp) if plan_tp in mins else ev.min_replicas(plan_tp)
    # Shares the workload leaves unknown are planned conservatively; say so first.
    notes: list[str] = unknown_notes(workload, prefix_caching=plan.serving.enable_prefix_caching)
    warm = provider.warmup.cold_start_to_ready_s
    if plan.warmup is not None and plan.warmup.count_warming_as_capacity:
        findings.append("the plan counts warming replicas as capacity; the planner does not")
    n_zones = len(zones)
    if r_min is not None:
        # Headroom: the load the fleet must carry before new replicas are ready. The fastest
        # observed swing is mean -> peak within one peak window; during one warm-up the load
        # can rise by that slope times the warm-up, capped at the peak.
        per_replica = peak / r_min
        rise_total = sum(
            (c.arrival.peak_rps - c.arrival.mean_rps) * min(1.0, warm / c.arrival.peak_window_s)
            for c in workload.classes
        )
        headroom = math.ceil(rise_total / per_replica - 1e-9)
        budget = plan.drain.disruption_budget if plan.drain is not None else None
        per_zone = replicas_per_zone_required(
            r_min, n_zones, headroom, budget.max_unavailable if budget is not None else 0
        )
        recommended = {z: per_zone for z in zones}
        rec_total = per_zone * n_zones
        reserve = rec_total - r_min
        if n_zones == 1:
            notes.append("one zone only: no replica count survives the loss of the zone")
        r_mean = math.ceil(r_min * mean / peak - 1e-9)
        notes.append(
            f"warm-up {warm:g} s: the load can rise by {rise_total:.1f} req/s before a new "
            f"replica is ready ({headroom} replica(s) at {per_replica:.1f} req/s each)"
        )
    else:
        recommended = {}
        rec_total = None
        reserve = None
        headroom = 0
        r_mean = 0
        notes.append("no replica count met the SLOs for the plan's TP degree")
    plan_total = plan.total_replicas
    largest_zone = max(plan.replicas_per_zone.values())
    meets_reserve = (
        r_min is not None and plan_total - largest_zone >= r_min and (plan_total - 1 >= r_min)
    )

    # --- the plan's failure scenarios at peak ----------------------------------------------
    failures = (
        ("peak", 0, "all of the plan's replicas ready"),
        ("one_worker_lost", 1, "one worker lost; replicas are assumed spread one per worker"),
        ("largest_zone_lost", largest_zone, "the zone with the most replicas lost"),
    )
    if plan_mem.fits:
        # The scenarios, the autoscaling boundary and the load curve below, simulated as one
        # batch (their runs do not depend on one another), then read in order as before.
        ev.prefetch(
            [(plan_tp, plan_total - lost, 1.0, 0) for _, lost, _ in failures if lost < plan_total]
            + ([(plan_tp, r_min, 1.0, 0)] if r_min is not None else [])
            + [(plan_tp, plan_total, load, _curve_limit(load)) for load in CURVE_LOADS]
        )
    scenarios: dict[str, Scenario] = {}
    moments = context_moments(workload, kv_groups(shape, hybrid_manager(provider.runtime.version)))
    for name, lost, note in failures:
        ready = plan_total - lost
        if not plan_mem.fits:
            scenarios[name] = scenario(
                name,
                None,
                ready=ready,
                lost=lost,
                tp=plan_tp,
                offered=peak,
                load=1.0,
                notes=[note],
                workload=workload,
                moments=moments,
                reason=plan_mem.reason,
            )
            continue
        report.report(f"scenario {name}", tp=plan_tp, replicas=ready)
        evaluation = ev.run(plan_tp, ready) if ready > 0 else None
        scenario_notes = [note]
        if evaluation is not None and evaluation.simulated_replicas < ready:
            scenario_notes.append(group_note(evaluation.simulated_replicas, ready))
        scenarios[name] = scenario(
            name,
            evaluation,
            ready=ready,
            lost=lost,
            tp=plan_tp,
            offered=peak,
            load=1.0,
            notes=scenario_notes,
            workload=workload,
            moments=moments,
        )
    slo_met = all(s.slo_met for s in scenarios.values())
    for s in scenarios.values():
        if not s.slo_met:
            findings.append(
                f"scenario {s.name} ({s.ready_replicas} ready): " + "; ".join(s.violations[:3])
            )

    # --- autoscaling ------------------------------------------------------------------------
    boundary = ev.run(plan_tp, r_min) if r_min is not None else None
    waiting_target = max(1.0, round(boundary.sim.waiting_mean_per_replica, 1)) if boundary else 1.0
    kv_target = round(min(0.95, boundary.sim.kv_usage_mean), 2) if boundary else 0.8
    drain_s = 0.0
    for s in scenarios.values():
        for p in s.per_class.values():
            if p.e2e_p99_ms is not None:
                drain_s = max(drain_s, p.e2e_p99_ms / 1e3)
    if plan.drain is not None:
        drain_s = max(drain_s, plan.drain.termination_grace_period_s)
    if r_min is not None:
        # Ready replicas needed at the quietest time: enough for the load reachable within one
        # warm-up, never more than the peak needs; then the zone reserve on top.
        ready_floor = min(r_min, r_mean + headroom)
        floor_per_zone = math.ceil(ready_floor / (n_zones - 1)) if n_zones > 1 else ready_floor + 1
        # The gate's floor (warm_replica_exclusion): a zone can fail at peak, and replicas
        # started then are warming, not ready; so never below the peak plus a whole zone,
        # nor below the peak plus the reserve the recommendation declares.
        largest = max(recommended.values())
        min_replicas = max(floor_per_zone * n_zones, r_min + max(largest, reserve or 0))
    else:
        min_replicas = plan_total
    max_replicas = max(min_replicas, (rec_total or plan_total) + (r_min or 0))
    autoscaling = AutoscalingAdvice(
        metric="vllm:num_requests_waiting",
        target=waiting_target,
        alternative_metric="vllm:kv_cache_usage_perc",
        alternative_target=kv_target,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        scale_up_stabilization_s=0.0,
        scale_down_stabilization_s=float(max(300.0, math.ceil(drain_s))),
        reason=(
            "queue depth (or KV usage), not CPU: the HPA sets aside unready pods only for the "
            "CPU resource, and GPU serving saturates on KV and batch, not CPU; target = mean "
            f"waiting requests per replica at the smallest SLO-meeting fleet at peak; min "
            f"covers the load reachable within one warm-up ({warm:g} s) plus the zone reserve; "
            f"scale-down stabilisation at least the drain time ({drain_s:.0f} s, the longest "
            "p99 request or the grace period)"
        ),
    )

    # --- cost -------------------------------------------------------------------------------
    gpus = plan_total * plan.parallelism.gpus_per_replica
    tokens_per_hour = sum(
        # Rejected requests produce no output tokens.
        c.arrival.mean_rps
        * float(np.mean(np.where(ev.streams[c.name].rejected, 0, ev.streams[c.name].output)))
        * 3600.0
        for c in workload.classes
    )
    cost = Cost(
        gpus=gpus,
        price_per_gpu_hour_usd=price,
        per_hour_usd=None if price is None else round(gpus * price, 2),
        per_million_output_tokens_usd=(
            None
            if price is None or tokens_per_hour == 0
            else round(gpus * price / tokens_per_hour * 1e6, 4)
        ),
        recommended_per_hour_usd=(
            None
            if price is None or rec_total is None
            else round(rec_total * plan.parallelism.gpus_per_replica * price, 2)
        ),
        basis="the plan's replicas around the clock; output tokens at the workload's mean rate",
    )

    # --- claims versus recomputation -------------------------------------------------------
    claims = check_claims(plan, scenarios["peak"], r_min, peak)
    findings.extend(claims.findings)
    if not meets_reserve and r_min is not None:
        findings.append(
            f"the plan's {plan_total} replicas do not keep {r_min} ready with its largest zone "
            f"({largest_zone}) or one worker lost"
        )

    # --- latency against load, for the chart ------------------------------------------------
    curve: list[LoadPoint] = []
    if plan_mem.fits:
        for load in CURVE_LOADS:
            report.report(f"load curve at {load:g} x peak", tp=plan_tp, replicas=plan_total)
            e = ev.run(plan_tp, plan_total, load, limit=_curve_limit(load))
            curve.append(
                LoadPoint(
                    load_factor=load,
                    offered_rps=round(peak * load, 3),
                    ready_replicas=plan_total,
                    per_class_ttft_p99_ms={k: p.ttft_p99_ms for k, p in e.per_class.items()},
                    per_class_tpot_p99_ms={k: p.tpot_p99_ms for k, p in e.per_class.items()},
                    per_class_e2e_p99_ms={k: p.e2e_p99_ms for k, p in e.per_class.items()},
                    slo_met=e.slo_met,
                )
            )

    step = ev.step_model(plan_tp)
    full = max(1, min(plan.serving.max_num_seqs, plan_mem.max_concurrency_at_p99_context))
    figures = StepFigures(
        decode_batch1_ms=round(step.step(0, 0.0, 1, step.kv_context(1024.0)) * 1e3, 3),
        decode_batch_full_ms=round(
            step.step(0, 0.0, full, full * step.kv_context(1024.0)) * 1e3, 3
        ),
        decode_batch_full=full,
        prefill_2k_ms=round(step.step(2048, step.prefill_pairs(0.0, 2048.0), 0, 0.0) * 1e3, 3),
    )
    sizing = Sizing(
        min_ready_replicas_at_peak=r_min,
        recommended_replicas_per_zone=recommended,
        recommended_total_replicas=rec_total,
        reserve_replicas=reserve,
        warmup_headroom_replicas=headroom,
        tensor_parallel=chosen_tp,
        tp_reason=tp_reason,
        tp_options=options,
        plan_total_replicas=plan_total,
        plan_meets_reserve=meets_reserve,
        notes=notes,
    )
    context_fit = fit_context(plan, workload, provider, seed=seed)
    for cname, fit in context_fit.items():
        if fit.rejected_share > MAX_SHED_RATE:
            findings.append(
                f"{cname}: {fit.rejected_share:.1%} of requests need more than "
                f"serving.max_model_len = {fit.max_model_len} tokens (p99 prompt + output "
                f"{fit.p99_context_tokens:.0f}); vLLM rejects them"
            )
    if calibration.rejected:
        findings.append(f"calibration rejected: {calibration.rejected}")
    if calibration.fitted and calibration.worst_group is not None:
        w = calibration.worst_group
        share = (
            "the whole fit"
            if calibration.shrinkage == 1.0
            else f"{calibration.shrinkage:g} of the fit, shrunk toward the defaults"
        )
        findings.append(
            f"calibration used {share} (no held-out group worse "
            f"than the defaults): leave-one-out RMS log error {calibration.held_out_error} "
            f"against the defaults' {calibration.default_error}; worst group: "
            f"{w.evidence} {w.traffic_class} {w.metric}, {w.held_out_error} against "
            f"{w.default_error}"
        )
    if calibration.fitted and calibration.fit_error is not None and calibration.fit_error > 0.25:
        findings.append(
            f"the step-time model disagrees with the evidence (RMS log error "
            f"{calibration.fit_error:.2f} after calibration)"
        )
    # Every predicted latency carries the planner's held-out error for the accelerator family.
    spread = uncertainty(
        provider.accelerator.name, shape.weight_bytes, calibrated=calibration.fitted
    )
    scenarios = {
        name: sc.model_copy(
            update={"per_class": {c: with_intervals(p, spread) for c, p in sc.per_class.items()}}
        )
        for name, sc in scenarios.items()
    }
    findings.append(f"intervals on predicted latencies: {spread.basis}")
    return PlanRecomputation(
        planner_version=PLANNER_VERSION,
        seed=seed,
        plan=plan.name,
        workload=workload.name,
        provider=provider.name,
        model=ModelSummary(
            name=shape.name,
            layers=shape.layers,
            kv_heads=shape.kv_heads,
            head_dim=shape.head_dim,
            total_params_b=round(shape.total_params / 1e9, 3),
            active_params_b=round(shape.active_params / 1e9, 3),
            sources=list(shape.sources),
            notes=list(shape.notes),
        ),
        memory=memory_summary(plan_mem, moments),
        step_time=figures,
        sizing=sizing,
        slos={c.name: c.slo.model_dump() for c in workload.classes},
        scenarios=scenarios,
        slo_met=slo_met,
        autoscaling=autoscaling,
        cost=cost,
        claims_check=claims,
        calibration=calibration,
        load_curve=curve,
        context_fit=context_fit,
        findings=findings,
        uncertainty=spread,
    )
