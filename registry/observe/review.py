"""What storing an observation does: judge drift, stale evidence, call for review.

Runs inside the submitting transaction (registry.records.service.submit), so the
observation, the staleness it causes and the review event commit together or not at all.
Evidence measured against the observed workload version (or an earlier version of it,
still taken as fresh) no longer represents production when the drift is material: each
latest evidence version is staled with the observation as its cause and the drift's
changes as the reason, and shows in `evidence list --stale` like any other staleness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from registry.observe.drift import Drift, drift, plan_claims
from registry.records.observation import Observation
from registry.records.plan import CapacityPlan
from registry.records.references import pinned
from registry.records.workload import WorkloadProfile
from registry.staleness.rules import Change, StalenessThresholds
from registry.staleness.thresholds import load_thresholds
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow, StalenessRow
from registry.storage.repository import StalenessRepository

REVIEW_EVENT = "observation.review"


@dataclass(frozen=True)
class Review:
    drift: Drift
    staled: list[str]

    def event(self, observation_ref: str, plan: str, workload: str) -> dict[str, Any]:
        def rows(changes: list[Change]) -> list[dict[str, Any]]:
            return [
                {
                    "field": c.field,
                    "planned": c.old,
                    "observed": c.new,
                    "threshold": c.threshold,
                    "rule": c.rule,
                }
                for c in changes
            ]

        return {
            "observation": observation_ref,
            "plan": plan,
            "workload": workload,
            "material": self.drift.material,
            "changes": rows(self.drift.changes),
            "slo_misses": rows(self.drift.slo_misses),
            "staled": self.staled,
        }


def review_observation(
    ctx: WriteContext,
    *,
    row: RecordRow,
    targets: dict[str, RecordRow],
    written: list[StalenessRow],
    limits: StalenessThresholds | None = None,
) -> Review:
    from registry.records.service import load_model
    from registry.staleness.service import change_dicts, insert_staleness

    limits = limits or load_thresholds()
    observation = cast(Observation, load_model(row))
    workload_row = targets["workload"]
    workload = cast(WorkloadProfile, load_model(workload_row))
    plan = cast(CapacityPlan, load_model(targets["plan"]))
    found = drift(observation, workload, limits, plan_claims(plan))
    staled: list[str] = []
    if found.material:
        staleness = StalenessRepository(ctx.session)
        changes = change_dicts(found.changes)
        for evidence, measured in staleness.latest_evidence_pinned_before(
            "workload", workload_row, inclusive=True
        ):
            if insert_staleness(
                staleness,
                ctx,
                evidence=evidence,
                cause=row,
                measured=measured,
                changes=changes,
                written=written,
            ):
                staled.append(pinned(evidence.name, evidence.version))
    return Review(drift=found, staled=staled)
