"""Everything a report shows, read from the registry in one read transaction.

A report is read-only: it never runs a gate check and never stores a recomputation. It is
about one plan version and, when there is one, one decision on it (the one asked for, else
the latest by the principal asked for, else the latest by a release pipeline's principal
where the registry knows roles, else the latest: registry.report.choice, which also says
why and names a newer decision):

- with a decision, the evidence is listed as the gate saw it (the decision's stored input,
  re-hashed against its digest) beside what it is now, and the recomputation is the one
  the decision names by digest;
- without one, the evidence is judged now, and the recomputation is the stored one for
  the plan's current inputs, else computed here and not stored (said so in the report).

Every input's digest comes with the audit event that stored it (registry.report.trail).

This module picks the decision and gathers the report's inputs and recomputation; the evidence
rows are built in ``registry.report.evidence_entries`` and what the decision weighed is put
in words in ``registry.report.weighed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.auth.config import AuthConfig
from registry.errors import FieldProblem, InvalidInput
from registry.gate.context import PlanContext, load_plan_context
from registry.gate.service import get_decision_with_input
from registry.gate.views import DecisionView
from registry.planner.result import PlanRecomputation
from registry.records import service
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.references import parse_ref, pinned
from registry.records.workload import WorkloadProfile
from registry.report.choice import DecisionChoice, choose, refuse_both
from registry.report.evidence_entries import (
    EvidenceEntry,
    calibration_use,
    evidence_at_decision,
    evidence_now,
)
from registry.report.trail import TrailEvent, decision_event, recomputation_event, record_event
from registry.report.weighed import weighed_in_words
from registry.sizing.service import (
    DEFAULT_SEED,
    RecomputationView,
    calibration_key,
    current_recomputation,
    recompute_cached,
    stored_recomputation,
)
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from registry.storage.repository import RecordRepository


@dataclass(frozen=True)
class InputRecord:
    """One input of the report (and of its decision) with its digest and audit event."""

    role: str
    ref: str
    digest: str
    event: TrailEvent | None
    note: str = ""


@dataclass(frozen=True)
class Recomputed:
    result: PlanRecomputation
    digest: str | None
    created_at: datetime | None
    created_by: str | None
    basis: str  # where it comes from, for the reader
    event: TrailEvent | None


@dataclass(frozen=True)
class ReportData:
    generated_at: datetime
    plan_ref: str
    plan_digest: str
    plan: CapacityPlan
    workload_ref: str
    workload: WorkloadProfile
    provider_ref: str
    provider: ProviderProfile
    decision: DecisionView | None
    decision_event: TrailEvent | None
    recomputation: Recomputed | None
    evidence: list[EvidenceEntry]
    evidence_basis: str
    inputs: list[InputRecord]
    notes: list[str] = field(default_factory=list)
    # What else the decision weighed, as (what, in words): manifests, production.
    weighed: list[tuple[str, str]] = field(default_factory=list)
    # Which decision this is and why, and a newer one by another principal (None: no decision).
    choice: DecisionChoice | None = None

    @property
    def verdict(self) -> str:
        """The verdict in words (never only a colour): ALLOW, DENY, ERROR or NO DECISION."""
        return "NO DECISION YET" if self.decision is None else self.decision.outcome.value.upper()


def _pick_decision(
    session: Session,
    plan_ref: str,
    decision_id: str | None,
    current_revision: str | None,
    principal: str | None,
    auth_config: AuthConfig | None,
) -> tuple[DecisionView, dict[str, Any], DecisionChoice] | None:
    """The decision the report is about (registry.report.choice): ``decision_id`` (which
    must be about ``plan_ref``), else ``principal``'s latest on the plan version, else the
    latest by a pipeline principal where roles are known, else the latest; None without
    any."""
    refuse_both(decision_id, principal)
    repo = RecordRepository(session)
    plan_row = service.resolve(repo, RecordKind.plan, plan_ref, loc="plan")
    plan_pinned = pinned(plan_row.name, plan_row.version)
    asked: DecisionView | None = None
    document: dict[str, Any] = {}
    if decision_id is not None:
        asked, document = get_decision_with_input(
            session, decision_id, current_revision=current_revision
        )
        ref = parse_ref(plan_ref, loc="plan")
        name = asked.plan.rsplit("@v", 1)[0]
        pinned_only = ref.version is not None or ref.digest is not None
        if (pinned_only and asked.plan != plan_pinned) or name != plan_row.name:
            raise InvalidInput(
                "decision is about another plan",
                problems=[
                    FieldProblem(
                        "decision",
                        f"decision {decision_id} is about {asked.plan}, not {plan_ref}",
                    )
                ],
            )
    chosen_id, choice = choose(
        session,
        plan_pinned=plan_pinned,
        asked=asked,
        principal=principal,
        auth_config=auth_config,
        current_revision=current_revision,
    )
    if chosen_id is None or choice is None:
        return None
    if asked is not None:
        return asked, document, choice
    view, document = get_decision_with_input(session, chosen_id, current_revision=current_revision)
    return view, document, choice


def _recomputed(view: RecomputationView, basis: str, event: TrailEvent | None) -> Recomputed:
    return Recomputed(
        result=view.result,
        digest=view.digest,
        created_at=view.created_at,
        created_by=view.created_by,
        basis=basis,
        event=event,
    )


def gather(
    database: Database,
    *,
    plan_ref: str,
    decision_id: str | None = None,
    now: datetime,
    limits: StalenessThresholds,
    current_revision: str | None = None,
    compute_missing: bool = True,
    principal: str | None = None,
    auth_config: AuthConfig | None = None,
) -> ReportData:
    """Read what the report on ``plan_ref`` (and ``decision_id``) shows.

    Without ``decision_id``: ``principal``'s latest decision on the plan version, else the
    latest by a principal holding the pipeline role (API tokens, ``auth_config``), else the
    latest (registry.report.choice); ReportData.choice says which and why.

    Raises NotFound for an unknown plan or decision (or a principal without a decision on
    the plan version) and InvalidInput for a decision about another plan, or for both a
    decision and a principal. ``compute_missing``: without a decision or a stored
    recomputation for the plan's current inputs, run the planner here (nothing is
    stored); else report none.
    """
    recomputed: Recomputed | None = None
    notes: list[str] = []
    with database.reading() as session:
        picked = _pick_decision(
            session, plan_ref, decision_id, current_revision, principal, auth_config
        )
        decision, document, choice = picked if picked is not None else (None, {}, None)
        context = load_plan_context(
            session, plan_ref=decision.plan if decision else plan_ref, now=now, limits=limits
        )
        if decision is not None:
            digest = document.get("recomputation_digest")
            stored = (
                stored_recomputation(
                    session,
                    plan_row_id=context.plan_row_id,
                    plan_ref=context.plan_view.ref,
                    digest=digest,
                )
                if isinstance(digest, str)
                else None
            )
            if stored is not None:
                view = stored[0]
                recomputed = _recomputed(
                    view,
                    "The recomputation this decision was taken on",
                    recomputation_event(session, view.digest, view.created_at),
                )
            else:
                notes.append("the decision names no stored recomputation")
        else:
            current = current_recomputation(session, context)
            if current is not None:
                view = current[0]
                recomputed = _recomputed(
                    view,
                    "The stored recomputation of the plan's current inputs and evidence",
                    recomputation_event(session, view.digest, view.created_at),
                )
        decision_trail = (
            decision_event(session, decision.id, decision.created_at) if decision else None
        )
        result = recomputed.result if recomputed else None
        if decision is not None and document.get("evidence") is not None:
            evidence = evidence_at_decision(session, context, document, result)
            basis = f"as the gate saw it at the decision ({decision.created_at:%Y-%m-%d %H:%M} UTC)"
        else:
            evidence = evidence_now(context, result)
            basis = f"judged now ({now:%Y-%m-%d %H:%M} UTC)"
        inputs = _inputs(session, context, evidence)
    if recomputed is None and decision is None and compute_missing:
        # No stored result for the current inputs: computed here, never stored.
        result = recompute_cached(context, calibration_key(context), DEFAULT_SEED)
        recomputed = Recomputed(
            result=result,
            digest=None,
            created_at=None,
            created_by=None,
            basis="Computed for this report and not stored: no stored recomputation "
            "matches the plan's current inputs and evidence",
            event=None,
        )
        evidence = [
            replace(e, calibration=calibration_use(e.name, e.fresh, result)) for e in evidence
        ]
    if recomputed is not None and recomputed.digest is not None:
        inputs.append(
            InputRecord(
                role="recomputation",
                ref=recomputed.result.planner_version,
                digest=recomputed.digest,
                event=recomputed.event,
            )
        )
    if decision is not None:
        inputs.append(
            InputRecord(
                role="gate input document",
                ref=f"decision {decision.id}",
                digest=decision.input_digest,
                event=decision_trail,
            )
        )
        inputs.append(
            InputRecord(
                role="policy bundle",
                ref=decision.engine,
                digest=decision.bundle_revision,
                event=None,
                note="the bundle revision the policies were evaluated under",
            )
        )
    return ReportData(
        generated_at=now,
        plan_ref=context.plan_view.ref,
        plan_digest=context.plan_view.digest,
        plan=context.plan,
        workload_ref=context.workload_view.ref,
        workload=context.workload,
        provider_ref=context.provider_view.ref,
        provider=context.provider,
        decision=decision,
        decision_event=decision_trail,
        recomputation=recomputed,
        evidence=evidence,
        evidence_basis=basis,
        inputs=inputs,
        notes=notes,
        weighed=weighed_in_words(document),
        choice=choice,
    )


def _inputs(
    session: Session, context: PlanContext, evidence: list[EvidenceEntry]
) -> list[InputRecord]:
    """The plan, workload, provider and evidence versions with the events that stored them."""
    out = []
    for role, view in (
        ("plan", context.plan_view),
        ("workload", context.workload_view),
        ("provider", context.provider_view),
    ):
        out.append(
            InputRecord(
                role=role,
                ref=view.ref,
                digest=view.digest,
                event=record_event(session, view.kind.value, view.ref, view.created_at),
            )
        )
    created = {item.view.ref: item.view.created_at for item in context.evidence}
    repo = RecordRepository(session)
    for entry in evidence:
        at = created.get(entry.ref)
        if at is None:
            at = as_utc(
                service.resolve(repo, RecordKind.evidence, entry.ref, loc="evidence").created_at
            )
        out.append(
            InputRecord(
                role="evidence",
                ref=entry.ref,
                digest=entry.digest,
                event=record_event(session, RecordKind.evidence.value, entry.ref, at),
                note="fresh" if entry.fresh else "stale",
            )
        )
    return out
