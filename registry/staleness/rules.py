"""Material-change rules: which differences between two versions can move the tail.

A change is material when it can change what a load test would measure: a length
quantile or the peak rate moving beyond a threshold, a class added or removed, an SLO
tightened, a prefix-cache share or cancellation rate moving beyond a threshold (unknown
counts as 0, what the planner plans with: so unknown -> known, known -> unknown and a
change between two numbers are judged alike), a different model, accelerator, runtime minor
version or batching/memory setting. Descriptions, owners, labels, looser SLOs and small
drifts are not.
Thresholds are policy data (policies/data.json, `capgate.thresholds.staleness`),
versioned with the bundle.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import TrafficClass, WorkloadProfile

QUANTILES_WATCHED = (50.0, 90.0, 99.0)
SERVING_FIELDS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "block_size",
    "enable_prefix_caching",
)


class StalenessThresholds(BaseModel):
    """Defaults match the issue's text; the bundle's data overrides them."""

    length_quantile_change: float = 0.10
    peak_rate_growth: float = 0.20
    burstiness_growth: float = 0.20
    # Absolute moves of a share (0..1): 0.05 is five percentage points either way.
    prefix_cache_share_change: float = 0.05
    cancellation_rate_change: float = 0.05
    # Absolute move of the prompt-output rank correlation a trace's joint lengths give.
    length_correlation_change: float = 0.20
    max_evidence_age_days: float = 90.0
    # Not staleness, but read from the same policy data: how long a waiver may last.
    waiver_max_lifetime_days: float = 90.0


@dataclass(frozen=True)
class Change:
    """One material difference: the field, both values and the rule that judged it."""

    field: str
    old: Any
    new: Any
    rule: str
    threshold: float | None = None

    def describe(self) -> str:
        limit = f" (threshold {self.threshold:g})" if self.threshold is not None else ""
        return f"{self.field}: {self.old!r} -> {self.new!r}, {self.rule}{limit}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "rule": self.rule,
            "threshold": self.threshold,
        }


def _relative(old: float, new: float) -> float:
    return abs(new - old) / old if old else (0.0 if new == old else float("inf"))


def _class_changes(
    name: str, old: TrafficClass, new: TrafficClass, limits: StalenessThresholds
) -> Iterator[Change]:
    prefix = f"classes.{name}"
    if old.priority != new.priority:
        yield Change(f"{prefix}.priority", old.priority, new.priority, "priority changed")
    for field in ("prompt_tokens", "output_tokens"):
        for level in QUANTILES_WATCHED:
            before = getattr(old, field).quantile(level)
            after = getattr(new, field).quantile(level)
            if before is None or after is None:
                continue
            if _relative(before, after) > limits.length_quantile_change:
                yield Change(
                    f"{prefix}.{field}.p{level:g}",
                    before,
                    after,
                    f"moved {_relative(before, after):.0%}",
                    limits.length_quantile_change,
                )
    if new.arrival.peak_rps > old.arrival.peak_rps * (1 + limits.peak_rate_growth):
        yield Change(
            f"{prefix}.arrival.peak_rps",
            old.arrival.peak_rps,
            new.arrival.peak_rps,
            f"grew {new.arrival.peak_rps / old.arrival.peak_rps - 1:.0%}",
            limits.peak_rate_growth,
        )
    if new.arrival.interarrival_cv > old.arrival.interarrival_cv * (1 + limits.burstiness_growth):
        yield Change(
            f"{prefix}.arrival.interarrival_cv",
            old.arrival.interarrival_cv,
            new.arrival.interarrival_cv,
            "burstiness grew",
            limits.burstiness_growth,
        )
    yield from _share_changes(prefix, old, new, limits)
    yield from _correlation_change(prefix, old, new, limits)
    for slo_field, before in old.slo.model_dump().items():
        after = getattr(new.slo, slo_field)
        if after < before:  # a looser SLO asks less of the evidence: not material
            yield Change(f"{prefix}.slo.{slo_field}", before, after, "SLO tightened")


def _correlation_change(
    prefix: str, old: TrafficClass, new: TrafficClass, limits: StalenessThresholds
) -> Iterator[Change]:
    """How prompt and output lengths go together, as the planner draws them.

    A class without joint lengths is drawn independently, so it is compared as rank
    correlation 0: a profile gaining or losing its joint histogram is material exactly when
    the pairing the planner simulates moves beyond the threshold (long prompts that now
    bring long outputs load the KV cache quite differently, with every quantile unchanged).
    """
    before = old.joint_lengths.rank_correlation() if old.joint_lengths else 0.0
    after = new.joint_lengths.rank_correlation() if new.joint_lengths else 0.0
    if abs(after - before) > limits.length_correlation_change:
        yield Change(
            f"{prefix}.joint_lengths",
            round(before, 3),
            round(after, 3),
            f"prompt-output rank correlation moved {after - before:+.2f}",
            limits.length_correlation_change,
        )


def _share_changes(
    prefix: str, old: TrafficClass, new: TrafficClass, limits: StalenessThresholds
) -> Iterator[Change]:
    """Prefix-cache share and cancellation rate, as the planner reads them.

    Unknown (null) is planned as 0 (no prefix-cache benefit, no cancellation relief), so it
    is compared as 0: a share becoming known, or becoming unknown, is material exactly when
    the number the planner uses moves beyond the threshold. Either direction counts: a
    share can lighten the load (more hits, more cancellations) or make it heavier, and
    cancellations also change how the batch turns over. The change records the stated
    values (null for unknown), not the 0 they were read as.
    """
    for field, limit in (
        ("prefix_cache_share", limits.prefix_cache_share_change),
        ("cancellation_rate", limits.cancellation_rate_change),
    ):
        before, after = getattr(old, field), getattr(new, field)
        moved = abs((after or 0.0) - (before or 0.0))
        if moved <= limit:
            continue
        if before is None:
            rule = f"became known ({after:g}; unknown was planned as 0)"
        elif after is None:
            rule = f"became unknown (planned as 0, was {before:g})"
        else:
            rule = f"moved {moved:.2f}"
        yield Change(f"{prefix}.{field}", before, after, rule, limit)


def workload_changes(
    old: WorkloadProfile, new: WorkloadProfile, limits: StalenessThresholds
) -> list[Change]:
    before = {c.name: c for c in old.classes}
    after = {c.name: c for c in new.classes}
    changes = [
        Change(f"classes.{name}", None, name, "traffic class added")
        for name in sorted(after.keys() - before.keys())
    ]
    changes += [
        Change(f"classes.{name}", name, None, "traffic class removed")
        for name in sorted(before.keys() - after.keys())
    ]
    for name in sorted(before.keys() & after.keys()):
        changes.extend(_class_changes(name, before[name], after[name], limits))
    return changes


def minor_version(version: str) -> str:
    """major.minor of a runtime version: 0.8.5 -> 0.8 (the level at which it matters)."""
    return ".".join(version.split(".")[:2])


def provider_changes(old: ProviderProfile, new: ProviderProfile) -> list[Change]:
    changes: list[Change] = []
    for field in ("name", "weights_digest", "weights_dtype", "kv_dtype", "quantization"):
        before, after = getattr(old.model, field), getattr(new.model, field)
        if before != after:
            changes.append(Change(f"model.{field}", before, after, "model changed"))
    if old.accelerator.name != new.accelerator.name:
        changes.append(
            Change(
                "accelerator.name",
                old.accelerator.name,
                new.accelerator.name,
                "accelerator changed",
            )
        )
    if old.runtime.name != new.runtime.name:
        changes.append(
            Change("runtime.name", old.runtime.name, new.runtime.name, "runtime changed")
        )
    if minor_version(old.runtime.version) != minor_version(new.runtime.version):
        changes.append(
            Change(
                "runtime.version",
                old.runtime.version,
                new.runtime.version,
                "runtime major or minor version changed",
            )
        )
    return changes


def plan_changes(old: CapacityPlan, new: CapacityPlan) -> list[Change]:
    """Changes to the serving configuration a load test measured (not replica counts)."""
    changes = [
        Change(
            f"serving.{field}",
            getattr(old.serving, field),
            getattr(new.serving, field),
            "serving config changed",
        )
        for field in SERVING_FIELDS
        if getattr(old.serving, field) != getattr(new.serving, field)
    ]
    for field in ("tensor_parallel", "gpus_per_replica"):
        before, after = getattr(old.parallelism, field), getattr(new.parallelism, field)
        if before != after:
            changes.append(
                Change(f"parallelism.{field}", before, after, "accelerators per replica changed")
            )
    return changes


def material_changes(
    old: BaseModel, new: BaseModel, limits: StalenessThresholds | None = None
) -> list[Change]:
    """Material changes from `old` to `new` (two versions of the same kind)."""
    limits = limits or StalenessThresholds()
    if isinstance(old, WorkloadProfile) and isinstance(new, WorkloadProfile):
        return workload_changes(old, new, limits)
    if isinstance(old, ProviderProfile) and isinstance(new, ProviderProfile):
        return provider_changes(old, new)
    if isinstance(old, CapacityPlan) and isinstance(new, CapacityPlan):
        return plan_changes(old, new)
    raise TypeError(f"no material-change rules for {type(old).__name__} -> {type(new).__name__}")
