"""Re-evaluating earlier allow decisions after the policy bundle changed.

A recheck decides on the same plan version with the registry as it is now (evidence,
staleness, waivers) under the new policies. Manifests checked with the earlier decision
are not at hand, so their comparison with that plan version, kept in the decision's input,
is carried over: a recheck never drops the manifests_consistent check a decision had.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from registry.gate.input_document import ManifestsInput
from registry.gate.service import Engine, check, stored_input
from registry.gate.views import DecisionView, Outcome
from registry.records.references import pinned
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from registry.storage.models import DecisionRow
from registry.storage.repository import GateRepository


class RecheckItem(BaseModel):
    plan: str
    previous_decision: str
    previous_outcome: Outcome
    previous_bundle_revision: str
    decision: DecisionView
    changed: bool
    new_violations: list[str]
    resolved_violations: list[str]


class RecheckReport(BaseModel):
    bundle_revision: str
    rechecked: list[RecheckItem]
    up_to_date: list[str]


def _keys(violations: list[dict[str, object]]) -> set[str]:
    return {f"{v.get('policy')}.{v.get('rule')}" for v in violations}


def _checked_manifests(decision: DecisionRow) -> ManifestsInput | None:
    """The manifests comparison an earlier decision made, if manifests were checked (its
    input re-hashed against its digest first: a carried section is one that was decided)."""
    section: Any = stored_input(decision).get("manifests")
    if not isinstance(section, dict) or section.get("checked") is not True:
        return None
    try:
        return ManifestsInput.model_validate(section)
    except ValidationError:
        return None  # decided before the section had this shape


def _stale_allow(decision: DecisionRow, revision: str) -> bool:
    """An allow taken under another bundle revision: what a recheck re-runs."""
    return decision.outcome == Outcome.allow.value and decision.bundle_revision != revision


def recheck_all(
    database: Database,
    engine: Engine,
    *,
    principal: str,
    limits: StalenessThresholds,
    now: datetime | None = None,
) -> RecheckReport:
    """Re-run the latest decision of every plan whose allow predates the current bundle."""
    revision = engine.revision
    with database.reading() as session:
        latest = [
            (
                decision.id,
                Outcome(decision.outcome),
                decision.bundle_revision,
                decision.violations,
                pinned(plan.name, plan.version),
                stale := _stale_allow(decision, revision),
                _checked_manifests(decision) if stale else None,
            )
            for decision, plan in GateRepository(session).latest_decision_per_plan()
        ]
    report = RecheckReport(bundle_revision=revision, rechecked=[], up_to_date=[])
    for decision_id, outcome, bundle, violations_text, plan_ref, stale, manifests in latest:
        if not stale:
            report.up_to_date.append(plan_ref)
            continue
        new = check(
            database,
            engine,
            plan_ref=plan_ref,
            principal=principal,
            limits=limits,
            now=now,
            manifests=manifests,
        )
        before = _keys(json.loads(violations_text))
        after = _keys(new.violations)
        report.rechecked.append(
            RecheckItem(
                plan=plan_ref,
                previous_decision=decision_id,
                previous_outcome=outcome,
                previous_bundle_revision=bundle,
                decision=new,
                changed=new.outcome is not outcome or before != after,
                new_violations=sorted(after - before),
                resolved_violations=sorted(before - after),
            )
        )
    return report
