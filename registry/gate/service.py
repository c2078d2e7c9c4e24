"""The gate: evaluate a plan's policies on evidence and recomputation, keep the decision.

It fails closed. Anything that prevents a sound evaluation (an unreadable record, an
input that breaks its schema, a policy engine that is down, errors or answers nothing)
ends in the outcome `error`, which release pipelines treat like a denial (exit 2),
never in `allow`. Where the registry itself is reachable, the error decision is kept
too, so an auditor sees failed checks as well as passed ones.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.digest import canonical_json, content_digest
from registry.errors import CapgateError, FieldProblem, InvalidInput, NotFound
from registry.gate.assemble import gate_input
from registry.gate.input_document import CalibrationInput
from registry.gate.views import DecisionView, Outcome
from registry.gate.waivers import apply_waivers
from registry.records.references import pinned
from registry.records.views import Page
from registry.sizing.service import size_plan
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database, WriteContext
from registry.storage.models import DecisionRow, RecordRow
from registry.storage.repository import GateRepository


class Violation(Protocol):
    def model_dump(self) -> dict[str, Any]: ...


class EngineDecision(Protocol):
    @property
    def allow(self) -> bool: ...

    @property
    def violations(self) -> list[Any]: ...

    @property
    def notes(self) -> list[Any]: ...


class Engine(Protocol):
    """What the gate needs of a policy engine (see registry.policy.engine)."""

    @property
    def name(self) -> str: ...

    @property
    def revision(self) -> str: ...

    def decide(self, input_document: dict[str, Any]) -> EngineDecision: ...


def _violation_dicts(decision: EngineDecision) -> list[dict[str, Any]]:
    out = []
    for violation in decision.violations:
        data = violation.model_dump() if hasattr(violation, "model_dump") else dict(violation)
        out.append(data)
    return sorted(
        out,
        key=lambda v: (str(v.get("policy")), str(v.get("rule")), canonical_json(v.get("details"))),
    )


def _to_view(row: DecisionRow, plan: RecordRow, current_revision: str | None) -> DecisionView:
    document = json.loads(row.input)
    return DecisionView(
        id=row.id,
        plan=pinned(plan.name, plan.version),
        outcome=Outcome(row.outcome),
        engine=row.engine,
        bundle_revision=row.bundle_revision,
        input_digest=row.input_digest,
        inputs=_input_digests(document),
        violations=json.loads(row.violations),
        waived=json.loads(row.waivers)["waived"],
        waivers_used=json.loads(row.waivers)["used"],
        warnings=json.loads(row.warnings),
        error=row.error,
        principal=row.principal,
        created_at=as_utc(row.created_at),
        needs_recheck=(
            None
            if current_revision is None
            else row.outcome == Outcome.allow.value and row.bundle_revision != current_revision
        ),
    )


def _input_digests(document: dict[str, Any]) -> dict[str, Any]:
    """The refs and digests of every input a decision rests on, for auditors."""
    if not document:
        return {}
    out: dict[str, Any] = {
        role: {"ref": document[role]["ref"], "digest": document[role]["digest"]}
        for role in ("plan", "workload", "provider")
        if role in document
    }
    out["evidence"] = [
        {"ref": e["ref"], "digest": e["digest"], "fresh": e["fresh"]}
        for e in document.get("evidence", [])
    ]
    if "recomputation_digest" in document:
        out["recomputation"] = document["recomputation_digest"]
    return out


def _previous_calibration(
    database: Database, plan_name: str
) -> tuple[str, CalibrationInput] | None:
    """The calibration the plan's last decision (any version) was taken with, if any."""
    with database.reading() as session:
        rows, _ = GateRepository(session).decisions(
            plan_name=plan_name,
            outcome=None,
            principal=None,
            since=None,
            until=None,
            limit=1,
            offset=0,
        )
        if not rows:
            return None
        decision_id, stored_input = rows[0][0].id, rows[0][0].input
    stored = json.loads(stored_input or "{}").get("recomputation", {}).get("calibration")
    if not isinstance(stored, dict):
        return None  # decided before calibration was part of the input, or an error
    try:
        return decision_id, CalibrationInput.model_validate(stored)
    except ValidationError:
        return None


def check(
    database: Database,
    engine: Engine,
    *,
    plan_ref: str,
    principal: str,
    limits: StalenessThresholds,
    now: datetime | None = None,
) -> DecisionView:
    """Evaluate the gate for `plan_ref` and store the decision (allow, deny or error)."""
    moment = now or datetime.now(UTC)
    sized = size_plan(database, plan_ref=plan_ref, principal=principal, now=moment, limits=limits)
    context = sized.context
    document: dict[str, Any] = {}
    violations: list[dict[str, Any]] = []
    outcome, error = Outcome.error, None
    revision = "unknown"
    notes: list[str] = []
    try:
        previous = _previous_calibration(database, context.plan.name)
        document = gate_input(context, sized.view.result, previous).model_dump(mode="json")
    except ValidationError as exc:
        error = f"the gate input does not match its schema: {exc.errors()[0]['msg']}"
    if error is None:
        try:
            revision = engine.revision
            decision = engine.decide(document)
            violations = _violation_dicts(decision)
            notes = [f"{n.policy}.{n.rule}: {n.message}" for n in decision.notes]
            outcome = Outcome.allow if decision.allow and not violations else Outcome.deny
            if decision.allow and violations:
                error = "the policy engine allowed a plan it reported violations for"
                outcome = Outcome.error
        except CapgateError as exc:
            error = exc.message

    waived: dict[str, Any] = {"waived": [], "used": []}
    warnings: list[str] = []
    if outcome is Outcome.deny:
        applied = apply_waivers(
            violations,
            context.waivers,
            plan_name=context.plan.name,
            plan_ref=context.plan_view.ref,
            now=moment,
        )
        violations = applied.remaining
        waived = {"waived": applied.waived, "used": applied.used}
        warnings = applied.warnings
        if not violations:
            outcome = Outcome.allow
    # Stale evidence reaches the reader through evidence_fresh (a note beside fresh
    # evidence, a violation without it), never twice.
    warnings += notes

    stored_input = dict(document, recomputation_digest=sized.view.digest) if document else {}

    def store(ctx: WriteContext) -> DecisionRow:
        row = DecisionRow(
            id=str(uuid.uuid4()),
            plan_record_id=context.plan_row_id,
            outcome=outcome.value,
            engine=engine.name,
            bundle_revision=revision,
            input_digest=content_digest(document) if document else "none",
            input=canonical_json(stored_input),
            violations=canonical_json(violations),
            waivers=canonical_json(waived),
            warnings=canonical_json(warnings),
            error=error,
            principal=ctx.principal,
            created_at=ctx.now,
        )
        GateRepository(ctx.session).add(row)
        ctx.record_event(
            "gate.check",
            {
                "decision": row.id,
                "plan": context.plan_view.ref,
                "outcome": outcome.value,
                "engine": engine.name,
                "bundle_revision": revision,
                "input_digest": row.input_digest,
            },
        )
        return row

    row = database.write(store, principal=principal, now=lambda: moment)
    with database.reading() as session:
        plan_row = session.get(RecordRow, context.plan_row_id)
        assert plan_row is not None  # written above in the same registry
        return _to_view(row, plan_row, revision if revision != "unknown" else None)


def get_decision(
    session: Session, decision_id: str, *, current_revision: str | None
) -> DecisionView:
    try:
        uuid.UUID(decision_id)
    except ValueError:
        raise InvalidInput(
            "invalid decision id",
            problems=[
                FieldProblem("decision_id", f"{decision_id!r} is not a decision id (a UUID)")
            ],
        ) from None
    repo = GateRepository(session)
    row = repo.decision(decision_id)
    if row is None:
        raise NotFound(f"no decision {decision_id}")
    plan = session.get(RecordRow, row.plan_record_id)
    assert plan is not None  # foreign key
    return _to_view(row, plan, current_revision)


def list_decisions(
    session: Session,
    *,
    plan: str | None = None,
    outcome: Outcome | None = None,
    principal: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    current_revision: str | None = None,
) -> Page[DecisionView]:
    rows, total = GateRepository(session).decisions(
        plan_name=plan,
        outcome=outcome.value if outcome else None,
        principal=principal,
        since=since,
        until=until,
        limit=limit,
        offset=offset,
    )
    return Page[DecisionView](
        items=[_to_view(d, p, current_revision) for d, p in rows],
        total=total,
        limit=limit,
        offset=offset,
    )
