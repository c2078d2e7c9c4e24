"""The full recomputation of a capacity plan, independent of what the plan claims."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from registry.errors import FieldProblem, InvalidInput
from registry.planner.backends import unmodelled_backend
from registry.planner.calibration import EvidenceItem, calibrate
from registry.planner.catalog import resolve_model
from registry.planner.kv_need import p99_kv_tokens
from registry.planner.memory import KVGroups, MemoryFit, hybrid_manager, kv_groups
from registry.planner.progress import Progress, current
from registry.planner.result import (
    AutoscalingAdvice,
    ClaimCheck,
    ClaimsCheck,
    ContextFit,
    ContextMoments,
    Cost,
    LoadPoint,
    Memory,
    ModelSummary,
    PlanRecomputation,
    Scenario,
    Sizing,
    StepFigures,
    TPOption,
)
from registry.planner.sampling import context_overflow_share, draw_lengths, p99_of
from registry.planner.search import MAX_SHED_RATE, Evaluation, Evaluator
from registry.planner.step_time import Efficiency
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
# The report's judgement of claims; the gate decides with the policy data's
# claims_max_relative_error, which a test keeps equal to this.
CLAIM_TOLERANCE = 0.2
# Requests drawn per class to estimate the mean and spread of its context; seeded.
CONTEXT_DRAWS = 20_000


def _memory(m: MemoryFit, moments: dict[str, ContextMoments]) -> Memory:
    return Memory(
        tensor_parallel=m.tensor_parallel,
        total_gib=m.total_gib,
        usable_gib=round(m.requested_gib, 3),
        weights_gib=round(m.weights_gib, 3),
        activation_peak_gib=round(m.activation_peak_gib, 3),
        runtime_overhead_gib=round(m.runtime_overhead_gib, 3),
        kv_cache_gib=round(m.kv_cache_gib, 3),
        kv_bytes_per_token=m.kv_bytes_per_token,
        kv_bytes_per_token_per_gpu=m.kv_bytes_per_token_per_gpu,
        block_size=m.block_size,
        kv_blocks=m.kv_blocks,
        kv_tokens=m.kv_tokens,
        max_concurrency_at_p99_context=m.max_concurrency_at_p99_context,
        concurrency_by_class=dict(m.concurrency_by_class),
        fits=m.fits,
        reason=m.reason,
        context_tokens=moments,
    )


def _scenario(
    name: str,
    ev: Evaluation | None,
    *,
    ready: int,
    lost: int,
    tp: int,
    offered: float,
    load: float,
    notes: list[str],
    workload: WorkloadProfile,
    moments: dict[str, ContextMoments],
    reason: str = "",
) -> Scenario:
    if ev is None:
        why = reason or "no ready replica"
        return Scenario(
            name=name,
            ready_replicas=ready,
            lost_replicas=lost,
            tensor_parallel=tp,
            offered_rps=offered,
            load_factor=load,
            per_class={},
            slo_met=False,
            violations=[why],
            completed_rps=0.0,
            output_tokens_per_s=0.0,
            preemptions=0,
            kv_usage_peak=0.0,
            kv_usage_mean=0.0,
            waiting_mean_per_replica=0.0,
            retry_amplification=0.0,
            simulated_requests=0,
            notes=notes,
        )
    sim = ev.sim
    by_class = _in_service_by_class(workload, ev, ready)
    in_service = None if by_class is None else sum(by_class.values())
    tokens = None if by_class is None else p99_kv_tokens(by_class, moments)
    return Scenario(
        name=name,
        ready_replicas=ready,
        lost_replicas=lost,
        tensor_parallel=tp,
        offered_rps=round(offered, 4),
        load_factor=load,
        per_class=ev.per_class,
        slo_met=ev.slo_met,
        violations=ev.violations,
        completed_rps=round(sim.completed_rps, 3),
        sustained_rps=round(sim.sustained_rps, 3),
        goodput_rps=round(sim.goodput_rps, 3),
        output_tokens_per_s=round(sim.output_tokens_per_s, 1),
        preemptions=sim.preemptions,
        kv_usage_peak=round(sim.kv_usage_peak, 4),
        kv_usage_mean=round(sim.kv_usage_mean, 4),
        waiting_mean_per_replica=round(sim.waiting_mean_per_replica, 3),
        retry_amplification=round(sim.attempts / max(1, sim.originals), 4),
        simulated_requests=sim.simulated_requests,
        in_service_per_replica=None if in_service is None else round(in_service, 2),
        in_service_kv_tokens=tokens,
        notes=notes,
    )


def _group_note(simulated: int, ready: int) -> str:
    return (
        f"simulated as {simulated} of the {ready} replicas, fed their {simulated}/{ready} "
        "share of the fleet's arrivals (fleet-scale reduction); fleet totals scaled back"
    )


def _worst(ev: Evaluation, key: str) -> float | None:
    values = [getattr(p, key) for p in ev.per_class.values() if getattr(p, key) is not None]
    return max(values) if values else None


def _tp_candidates(ev: Evaluator, plan_tp: int) -> list[int]:
    shape = ev.shape
    per_node = ev.provider.accelerator.per_node
    options = [tp for tp in (1, 2, 4, 8) if tp <= per_node and shape.attention_heads % tp == 0]
    fitting = [tp for tp in options if ev.memory(tp).fits]
    # The smallest TP that fits and the next two degrees: wider partitioning only adds
    # all-reduce cost once the model fits with room for KV.
    chosen = fitting[:3]
    if plan_tp in options and plan_tp not in chosen:
        chosen.append(plan_tp)
    return sorted(set(chosen)) or [plan_tp]


def _in_service_by_class(
    workload: WorkloadProfile, at: Evaluation, replicas: int
) -> dict[str, float] | None:
    """Requests of each class holding KV blocks on one replica at peak, by Little's law.

    Each class adds its peak rate per replica times its mean time in service: end-to-end
    minus queue wait, since a queued request holds no KV. The mean, not the median: a
    long-tailed e2e has its mean well above its median, and Little's law needs the mean.
    None when a class completed nothing (its time in service is unbounded).
    """
    if replicas <= 0:
        return None
    out: dict[str, float] = {}
    for cls in workload.classes:
        st = at.sim.per_class[cls.name]
        if st.completed == 0:
            return None
        if not st.e2e:  # every completion was a cancellation: no full request to time
            out[cls.name] = 0.0
            continue
        service = float(np.mean(st.e2e)) - (float(np.mean(st.queue)) if st.queue else 0.0)
        out[cls.name] = cls.arrival.peak_rps / replicas * max(service, 0.0)
    return out


def _in_service_per_replica(
    workload: WorkloadProfile, at: Evaluation, replicas: int
) -> float | None:
    by_class = _in_service_by_class(workload, at, replicas)
    return None if by_class is None else sum(by_class.values())


def context_moments(
    workload: WorkloadProfile, groups: KVGroups | None = None
) -> dict[str, ContextMoments]:
    """Each class's context mean and spread, from a seeded draw of its (joint) lengths: the
    KV tokens one request holds as ``MemoryFit.kv_tokens`` counts them. With sliding-window
    layers (``groups`` with a window) that is not the context: vLLM's logged tokens are the
    pool over its groups, and a request holds ``(full_groups x context + sliding_groups x
    min(context, window)) / groups`` of them."""
    out: dict[str, ContextMoments] = {}
    for cls in workload.classes:
        prompt, output = draw_lengths(cls, CONTEXT_DRAWS, np.random.default_rng(99))
        context = prompt.astype(float) + output.astype(float)
        if groups is not None and groups.window is not None:
            local = np.minimum(context, float(groups.window))
            context = (groups.full_groups * context + groups.sliding_groups * local) / groups.groups
        out[cls.name] = ContextMoments(
            mean=round(float(context.mean()), 1), sd=round(float(context.std()), 1)
        )
    return out


def _ms_or_unknown(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0f} ms"


def _equal_gpu_comparison(
    ev: Evaluator, options: list[TPOption], plan_tp: int, plan_gpus: int
) -> tuple[list[TPOption], str]:
    """TP=1 against the plan's TP k on the same GPUs at the same offered load (the peak).

    Each option above is sized to just meet the SLOs, so its p99s sit at the SLO whatever
    its TP: comparing those shows no gain by construction. Here both get G GPUs, G = TP=k's
    GPUs at peak (where it just meets the SLOs; the plan's GPUs when no count did): G / k
    replicas of TP=k against G replicas of TP=1, both at the peak. Two memoised runs; the
    TP=k one is the run its sizing already made.

    "Fits with useful KV": the KV cache holds, at the p99 context, the requests one replica
    has in service at that load (Little's law on the TP=1 run). It is judged at equal GPUs,
    not at TP=1's own minimum fleet, because that fleet is sized around TP=1's KV shortage
    (replicas are added until each one's requests fit) and would always pass. Little's law
    gives the mean count, which bursts exceed, while most requests are shorter than the p99
    context: the two approximations lean opposite ways. max_num_seqs is no yardstick: it is
    a cap the operator chose, not what the load needs.
    """
    index = {o.tensor_parallel: i for i, o in enumerate(options)}
    if plan_tp == 1 or 1 not in index or plan_tp not in index:
        return options, ""
    single, chosen = options[index[1]], options[index[plan_tp]]
    out = list(options)
    if not single.fits:
        out[index[1]] = single.model_copy(update={"fits_with_useful_kv": False})
        return out, ""
    if not chosen.fits:
        return options, ""
    gpus = chosen.gpus_at_peak or plan_gpus
    for option in (chosen, single):
        replicas = gpus // option.tensor_parallel
        at = ev.run(option.tensor_parallel, replicas)
        need = _in_service_per_replica(ev.workload, at, replicas)
        kv = option.kv_concurrency_at_p99_context or 0
        out[index[option.tensor_parallel]] = option.model_copy(
            update={
                "equal_gpus": gpus,
                "equal_gpus_replicas": replicas,
                "equal_gpus_ttft_p99_ms": _worst(at, "ttft_p99_ms"),
                "equal_gpus_tpot_p99_ms": _worst(at, "tpot_p99_ms"),
                "equal_gpus_slo_met": at.slo_met,
                "concurrency_needed_per_replica": None if need is None else round(need, 2),
                "fits_with_useful_kv": need is not None and kv >= need,
            }
        )
    one, k = out[index[1]], out[index[plan_tp]]
    needed = (
        "unknown"
        if one.concurrency_needed_per_replica is None
        else f"{one.concurrency_needed_per_replica:.1f}"
    )
    sentence = (
        f"on the same {gpus} GPUs at peak, the plan's TP={plan_tp} ({k.equal_gpus_replicas} "
        f"replicas) against TP=1 ({gpus}): p99 TPOT {_ms_or_unknown(k.equal_gpus_tpot_p99_ms)} "
        f"vs {_ms_or_unknown(one.equal_gpus_tpot_p99_ms)}, p99 TTFT "
        f"{_ms_or_unknown(k.equal_gpus_ttft_p99_ms)} vs "
        f"{_ms_or_unknown(one.equal_gpus_ttft_p99_ms)}; TP=1's KV cache holds "
        f"{one.kv_concurrency_at_p99_context} requests at the p99 context against {needed} in "
        f"service per replica ({'enough' if one.fits_with_useful_kv else 'not enough'})"
    )
    return out, sentence


def _claim(claimed: float | None, predicted: float | None) -> ClaimCheck:
    if claimed is None or predicted is None or predicted == 0:
        return ClaimCheck(
            claimed=claimed,
            predicted=predicted,
            relative_error=None,
            optimistic=False,
            within_tolerance=claimed is None,
        )
    rel = (claimed - predicted) / predicted
    return ClaimCheck(
        claimed=claimed,
        predicted=round(predicted, 3),
        relative_error=round(rel, 4),
        optimistic=claimed < predicted,
        within_tolerance=abs(rel) <= CLAIM_TOLERANCE,
    )


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
    base = Efficiency()
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
    zones = list(plan.replicas_per_zone)
    price = provider.price_per_accelerator_hour_usd
    peak = ev.peak_rps
    mean = sum(c.arrival.mean_rps for c in workload.classes)

    # --- tensor parallelism: replication versus partitioning ------------------------------
    options: list[TPOption] = []
    mins: dict[int, int | None] = {}
    for tp in _tp_candidates(ev, plan_tp):
        mem = ev.memory(tp)
        r = ev.min_replicas(tp) if mem.fits else None
        mins[tp] = r
        if r is None:
            options.append(
                TPOption(
                    tensor_parallel=tp,
                    gpus_per_replica=tp,
                    fits=mem.fits,
                    memory_reason=mem.reason,
                    kv_tokens=mem.kv_tokens,
                    kv_concurrency_at_p99_context=mem.max_concurrency_at_p99_context,
                    min_ready_replicas_at_peak=None,
                    gpus_at_peak=None,
                    worst_ttft_p99_ms=None,
                    worst_tpot_p99_ms=None,
                    throughput_per_gpu_rps=None,
                    cost_per_hour_at_peak_usd=None,
                    slo_met=False,
                    reason="does not fit in memory"
                    if not mem.fits
                    else "no replica count met the SLOs",
                )
            )
            continue
        at = ev.run(tp, r)
        gpus = r * tp
        options.append(
            TPOption(
                tensor_parallel=tp,
                gpus_per_replica=tp,
                fits=True,
                memory_reason=mem.reason,
                kv_tokens=mem.kv_tokens,
                kv_concurrency_at_p99_context=mem.max_concurrency_at_p99_context,
                min_ready_replicas_at_peak=r,
                gpus_at_peak=gpus,
                worst_ttft_p99_ms=_worst(at, "ttft_p99_ms"),
                worst_tpot_p99_ms=_worst(at, "tpot_p99_ms"),
                throughput_per_gpu_rps=round(peak / gpus, 3),
                cost_per_hour_at_peak_usd=None if price is None else round(gpus * price, 2),
                slo_met=True,
                reason=f"{r} replica(s) x {tp} GPU(s) = {gpus} GPUs meet every p99 SLO",
            )
        )
    options, equal_gpus = _equal_gpu_comparison(ev, options, plan_tp, plan.total_replicas * plan_tp)
    viable = [o for o in options if o.slo_met and o.gpus_at_peak is not None]
    if viable:
        best = min(viable, key=lambda o: (o.gpus_at_peak or 0, o.tensor_parallel))
        chosen_tp = best.tensor_parallel
        others = [
            f"TP={o.tensor_parallel} needs {o.gpus_at_peak} GPUs "
            f"(p99 TPOT {o.worst_tpot_p99_ms:.0f} ms)"
            for o in viable
            if o is not best
        ]
        tp_reason = (
            f"TP={chosen_tp}: {best.min_ready_replicas_at_peak} x {chosen_tp} = "
            f"{best.gpus_at_peak} GPUs at peak, p99 TPOT {best.worst_tpot_p99_ms:.0f} ms, "
            f"{best.throughput_per_gpu_rps:.2f} req/s per GPU, the fewest GPUs"
            + (f"; {'; '.join(others)}" if others else "")
            + (
                "; replication is chosen over partitioning: the model fits one GPU and more "
                "GPUs per replica only add all-reduce time"
                if chosen_tp == 1
                else "; the smallest degree at which the model fits with room for KV"
            )
        )
    else:
        chosen_tp = plan_tp
        tp_reason = "no tensor-parallel degree met the SLOs at any replica count searched"
    if equal_gpus:
        tp_reason += f"; {equal_gpus}"
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
    scenarios: dict[str, Scenario] = {}
    moments = context_moments(workload, kv_groups(shape, hybrid_manager(provider.runtime.version)))
    for name, lost, note in (
        ("peak", 0, "all of the plan's replicas ready"),
        ("one_worker_lost", 1, "one worker lost; replicas are assumed spread one per worker"),
        ("largest_zone_lost", largest_zone, "the zone with the most replicas lost"),
    ):
        ready = plan_total - lost
        if not plan_mem.fits:
            scenarios[name] = _scenario(
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
            scenario_notes.append(_group_note(evaluation.simulated_replicas, ready))
        scenarios[name] = _scenario(
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
    peak_sc = scenarios["peak"]
    per_class_claims: dict[str, dict[str, ClaimCheck]] = {}
    claim_findings: list[str] = []
    for cname, claim in plan.claims.per_class.items():
        pred = peak_sc.per_class.get(cname)
        checks: dict[str, ClaimCheck] = {}
        for key in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms"):
            claimed = getattr(claim, key)
            if claimed is None:
                continue
            check = _claim(claimed, getattr(pred, key) if pred else None)
            checks[key] = check
            if check.relative_error is not None and not check.within_tolerance:
                claim_findings.append(
                    f"{cname}.{key}: claimed {claimed:g} ms, recomputed {check.predicted:g} ms "
                    f"({check.relative_error:+.0%})"
                )
        per_class_claims[cname] = checks
    need = plan.claims.ready_replicas_needed_at_peak
    need_check = None
    if need is not None:
        need_check = _claim(float(need), None if r_min is None else float(r_min))
        if r_min is not None and need < r_min:
            claim_findings.append(
                f"claims {need} ready replicas suffice at peak; the recomputation needs {r_min}"
            )
    peak_check = None
    if plan.claims.peak_rps is not None:
        peak_check = _claim(plan.claims.peak_rps, peak)
        if plan.claims.peak_rps < peak * (1 - 1e-9):
            claim_findings.append(
                f"claims a peak of {plan.claims.peak_rps:g} req/s; the "
                f"workload's class peaks sum to {peak:g}"
            )
    claims = ClaimsCheck(
        tolerance=CLAIM_TOLERANCE,
        per_class=per_class_claims,
        ready_replicas_needed_at_peak=need_check,
        peak_rps=peak_check,
        findings=claim_findings,
    )
    findings.extend(claim_findings)
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
            e = ev.run(plan_tp, plan_total, load, limit=0 if load == 1.0 else CURVE_REQUESTS)
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
    context_fit = _context_fit(plan, workload, provider, seed=seed)
    for cname, fit in context_fit.items():
        if fit.rejected_share > MAX_SHED_RATE:
            findings.append(
                f"{cname}: {fit.rejected_share:.1%} of requests need more than "
                f"serving.max_model_len = {fit.max_model_len} tokens (p99 prompt + output "
                f"{fit.p99_context_tokens:.0f}); vLLM rejects them"
            )
    if calibration.rejected:
        findings.append(f"calibration rejected: {calibration.rejected}")
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
        memory=_memory(plan_mem, moments),
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


def _context_fit(
    plan: CapacityPlan, workload: WorkloadProfile, provider: ProviderProfile, *, seed: int
) -> dict[str, ContextFit]:
    limit = plan.serving.max_model_len
    out: dict[str, ContextFit] = {}
    for cls in workload.classes:
        prompt = p99_of(cls.prompt_tokens)
        output = p99_of(cls.output_tokens)
        if cls.max_output_tokens is not None:
            output = min(output, float(cls.max_output_tokens))
        out[cls.name] = ContextFit(
            max_model_len=limit,
            p99_prompt_tokens=round(prompt, 1),
            p99_output_tokens=round(output, 1),
            p99_context_tokens=round(prompt + output, 1),
            rejected_share=round(context_overflow_share(cls, limit, seed=seed), 5),
        )
    return out
