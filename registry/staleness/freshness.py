"""Is a piece of evidence still valid for a plan? Material changes and age decide.

Evidence pins the workload, provider (and possibly plan) versions it was measured
against; a plan pins its own. Evidence is stale for the plan when any material change
separates the two, when it measured another serving runtime (or runtime major.minor
version) than the plan's provider runs, when a newer version of the evidence replaced it,
or when it is older than the maximum age. The reasons are sentences a person can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from registry.records.evidence import LoadTestEvidence, RuntimeInfo
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile, RuntimeSpec
from registry.records.workload import WorkloadProfile
from registry.staleness.rules import Change, StalenessThresholds, material_changes, minor_version

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Versioned:
    """A record version with its pinned reference, as freshness needs it."""

    ref: str
    model: WorkloadProfile | ProviderProfile | CapacityPlan


@dataclass(frozen=True)
class Freshness:
    fresh: bool
    age_days: float
    reasons: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)


def assess(
    evidence: LoadTestEvidence,
    *,
    measured_workload: Versioned,
    measured_provider: Versioned,
    measured_plan: Versioned | None,
    workload: Versioned,
    provider: Versioned,
    plan: Versioned,
    replaced_by: str | None,
    now: datetime,
    limits: StalenessThresholds,
) -> Freshness:
    """Freshness of `evidence` for `plan` (which pins `workload` and `provider`)."""
    reasons: list[str] = []
    changes: list[Change] = []
    pairs = [(measured_workload, workload), (measured_provider, provider)]
    if measured_plan is not None:
        pairs.append((measured_plan, plan))
    for measured, current in pairs:
        if measured.ref == current.ref:
            continue
        found = material_changes(measured.model, current.model, limits)
        changes.extend(found)
        reasons.extend(f"{measured.ref} -> {current.ref}: {change.describe()}" for change in found)
    runtime = _runtime_change(evidence, measured_provider=measured_provider, provider=provider)
    if runtime is not None:
        changes.append(runtime)
        reasons.append(
            f"measured on {runtime.old}; the plan's provider {provider.ref} runs {runtime.new} "
            f"({runtime.rule})"
        )
    if replaced_by is not None:
        reasons.append(f"replaced by {replaced_by}")
    age_days = (now - evidence.measured_at).total_seconds() / SECONDS_PER_DAY
    if age_days > limits.max_evidence_age_days:
        reasons.append(
            f"measured {age_days:.0f} days ago, past the maximum age of "
            f"{limits.max_evidence_age_days:g} days"
        )
    return Freshness(fresh=not reasons, age_days=age_days, reasons=reasons, changes=changes)


def _runtime_difference(measured: RuntimeInfo | RuntimeSpec, current: RuntimeSpec) -> str | None:
    """How two runtimes differ where it matters (name, major.minor version); None if not."""
    if measured.name.casefold() != current.name.casefold():
        return "a different runtime"
    if minor_version(measured.version) == minor_version(current.version):
        return None
    if measured.version.split(".")[0] != current.version.split(".")[0]:
        return "major version differs"
    return "minor version differs"


def _runtime_change(
    evidence: LoadTestEvidence, *, measured_provider: Versioned, provider: Versioned
) -> Change | None:
    """The evidence's own runtime against the one the plan's provider version runs.

    Evidence that states no runtime is taken to have run the runtime of the provider
    version it was measured against; the provider rules judge that (runtime.name,
    runtime.version). So does evidence whose stated runtime is that one: the change is
    then the provider's, and named once, as the provider rules name it.
    """
    stated = evidence.runtime
    current, pinned = provider.model, measured_provider.model
    if stated is None or not isinstance(current, ProviderProfile):
        return None
    difference = _runtime_difference(stated, current.runtime)
    if difference is None:
        return None
    if isinstance(pinned, ProviderProfile) and _runtime_difference(stated, pinned.runtime) is None:
        return None
    return Change(
        "runtime",
        stated.describe(),
        f"{current.runtime.name} {current.runtime.version}",
        difference,
    )
