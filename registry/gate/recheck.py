"""Re-evaluating earlier decisions after the policy bundle changed.

Every plan whose latest allow or deny was taken under another bundle revision than the
engine's is decided again (a new policy release is a material change: a stricter one can
deny what was allowed, a looser one allow what was denied). Each plan whose outcome
changed is flagged for review with a `gate.outcome_changed` audit event.

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

from registry.gate.service import Engine, check, stored_input
from registry.gate.views import DecisionView, Outcome
from registry.policy.input_document import ManifestsInput
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


DECIDED = frozenset({Outcome.allow.value, Outcome.deny.value})


def _stale(decision: DecisionRow, revision: str) -> bool:
    """An allow or deny taken under another bundle revision: what a recheck re-runs."""
    return decision.outcome in DECIDED and decision.bundle_revision != revision


def recheck_all(
    database: Database,
    engine: Engine,
    *,
    principal: str,
    limits: StalenessThresholds,
    now: datetime | None = None,
) -> RecheckReport:
    """Re-run the latest decision of every plan decided under another bundle revision."""
    revision = engine.revision
    with database.reading() as session:
        latest = [
            (
                decision.id,
                Outcome(decision.outcome),
                decision.bundle_revision,
                decision.violations,
                pinned(plan.name, plan.version),
                stale := _stale(decision, revision),
                _checked_manifests(decision) if stale else None,
            )
            for decision, plan in GateRepository(session).latest_decision_per_plan()
        ]
    report = RecheckReport(bundle_revision=revision, rechecked=[], up_to_date=[])
    swept = False  # the registry-wide scans once per recheck, not once per plan
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
            sweep=not swept,
        )
        swept = True
        before = _keys(json.loads(violations_text))
        after = _keys(new.violations)
        item = RecheckItem(
            plan=plan_ref,
            previous_decision=decision_id,
            previous_outcome=outcome,
            previous_bundle_revision=bundle,
            decision=new,
            changed=new.outcome is not outcome or before != after,
            new_violations=sorted(after - before),
            resolved_violations=sorted(before - after),
        )
        if new.outcome is not outcome:
            _flag_for_review(database, item, principal=principal, now=now)
        report.rechecked.append(item)
    return report


def _flag_for_review(
    database: Database, item: RecheckItem, *, principal: str, now: datetime | None
) -> None:
    """The audit trail's record that a plan's outcome changed under a new bundle."""
    payload = {
        "plan": item.plan,
        "previous_decision": item.previous_decision,
        "previous_outcome": item.previous_outcome.value,
        "previous_bundle_revision": item.previous_bundle_revision,
        "decision": item.decision.id,
        "outcome": item.decision.outcome.value,
        "bundle_revision": item.decision.bundle_revision,
        "policy_release": item.decision.policy_release,
        "new_violations": item.new_violations,
        "resolved_violations": item.resolved_violations,
    }
    database.write(
        lambda ctx: ctx.record_event("gate.outcome_changed", payload),
        principal=principal,
        now=(lambda: now) if now is not None else None,
    )
