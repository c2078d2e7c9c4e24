"""The warm-up timeline at the workload's fastest growth, as the planner reasons about it.

The planner's warm-up headroom (registry.planner.recomputation) assumes the load can rise
from each class's mean to its peak within the class's peak window, linearly, and that a
replica started when the rise begins is ready one provider warm-up later (warming replicas
are never counted as capacity). The timeline lays that out in seconds: the offered load,
what the replicas ready at the start carry within the SLOs (the recomputation's peak rate
per ready replica at its smallest SLO-meeting fleet), when the autoscaler can have asked
for a replica (its scale-up stabilisation), when that replica is ready, and when the
plan's startup probe would give up on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.planner.result import PlanRecomputation
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile


@dataclass(frozen=True)
class WarmupTimeline:
    mean_rps: float
    peak_rps: float
    rise_s: float  # when the last class reaches its peak
    load: list[tuple[float, float]]  # (seconds, offered req/s)
    warmup_s: float  # the provider's cold start to ready
    warmup_basis: str  # measured (N cold starts) or assumed (reason)
    scale_up_at_s: float  # the autoscaler's scale-up stabilisation (0 without autoscaling)
    ready_at_s: float  # scale_up_at_s + warmup_s: the first replica started is ready
    probe_gives_up_at_s: float | None  # scale_up_at_s + the startup probe's budget
    start_replicas: int  # ready when the rise begins
    start_basis: str
    zone_lost_replicas: int  # of those, left with the plan's largest zone lost
    per_replica_rps: float | None  # peak req/s one ready replica carries within the SLOs
    load_at_ready_rps: float
    headroom_replicas: int  # the recomputation's warm-up headroom

    @property
    def start_capacity_rps(self) -> float | None:
        if self.per_replica_rps is None:
            return None
        return self.start_replicas * self.per_replica_rps

    @property
    def zone_lost_capacity_rps(self) -> float | None:
        if self.per_replica_rps is None:
            return None
        return self.zone_lost_replicas * self.per_replica_rps

    @property
    def probe_too_short(self) -> bool:
        return self.probe_gives_up_at_s is not None and self.probe_gives_up_at_s < self.ready_at_s


def offered_at(workload: WorkloadProfile, t: float) -> float:
    """Offered req/s ``t`` seconds into the fastest rise: each class from mean to peak
    over its peak window."""
    return sum(
        c.arrival.mean_rps
        + (c.arrival.peak_rps - c.arrival.mean_rps) * min(1.0, t / c.arrival.peak_window_s)
        for c in workload.classes
    )


def timeline(
    plan: CapacityPlan,
    workload: WorkloadProfile,
    provider: ProviderProfile,
    result: PlanRecomputation | None,
) -> WarmupTimeline:
    warm = provider.warmup
    basis = (
        f"measured over {warm.samples} cold starts"
        if warm.basis.value == "measured"
        else f"assumed: {warm.reason}"
    )
    scale_up = plan.autoscaling.scale_up_stabilization_s if plan.autoscaling else 0.0
    ready_at = scale_up + warm.cold_start_to_ready_s
    probe = scale_up + plan.warmup.startup_probe_budget_s if plan.warmup is not None else None
    if plan.autoscaling is not None:
        start = plan.autoscaling.min_replicas
        start_basis = f"the autoscaler's floor (min_replicas {start})"
    else:
        start = plan.total_replicas
        start_basis = f"the plan's {start} replicas (no autoscaling)"
    largest_zone = max(plan.replicas_per_zone.values())
    rise = max(c.arrival.peak_window_s for c in workload.classes)
    end = max(rise, ready_at, probe or 0.0) * 1.15
    knots = sorted(
        {0.0, end, *(c.arrival.peak_window_s for c in workload.classes), ready_at}
        | ({probe} if probe is not None else set())
    )
    per_replica = None
    headroom = 0
    if result is not None:
        headroom = result.sizing.warmup_headroom_replicas
        needed = result.sizing.min_ready_replicas_at_peak
        peak = result.scenarios.get("peak")
        if needed and peak is not None:
            per_replica = peak.offered_rps / needed
    return WarmupTimeline(
        mean_rps=offered_at(workload, 0.0),
        peak_rps=offered_at(workload, rise),
        rise_s=rise,
        load=[(t, round(offered_at(workload, t), 3)) for t in knots if t <= end],
        warmup_s=warm.cold_start_to_ready_s,
        warmup_basis=basis,
        scale_up_at_s=scale_up,
        ready_at_s=ready_at,
        probe_gives_up_at_s=probe,
        start_replicas=start,
        start_basis=start_basis,
        zone_lost_replicas=max(0, start - largest_zone),
        per_replica_rps=per_replica,
        load_at_ready_rps=offered_at(workload, ready_at),
        headroom_replicas=headroom,
    )
