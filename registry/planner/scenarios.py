"""One scenario of a recomputation (peak, one worker lost, largest zone lost) as the
result reports it, with what its requests hold in service, and the memory summary."""

from __future__ import annotations

import numpy as np

from registry.planner.class_prediction import Evaluation
from registry.planner.kv_layout import KVGroups
from registry.planner.kv_need import p99_kv_tokens
from registry.planner.memory import MemoryFit
from registry.planner.result import (
    ContextMoments,
    Memory,
    Scenario,
)
from registry.planner.sampling import draw_lengths
from registry.records.workload import WorkloadProfile

# Requests drawn per class to estimate the mean and spread of its context; seeded.
CONTEXT_DRAWS = 20_000


def memory_summary(m: MemoryFit, moments: dict[str, ContextMoments]) -> Memory:
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


def scenario(
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
    by_class = in_service_by_class(workload, ev, ready)
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


def group_note(simulated: int, ready: int) -> str:
    return (
        f"simulated as {simulated} of the {ready} replicas, fed their {simulated}/{ready} "
        "share of the fleet's arrivals (fleet-scale reduction); fleet totals scaled back"
    )


def in_service_by_class(
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


def in_service_per_replica(
    workload: WorkloadProfile, at: Evaluation, replicas: int
) -> float | None:
    by_class = in_service_by_class(workload, at, replicas)
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
