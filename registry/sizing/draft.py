"""Sizing a plan file before it is submitted: the same recomputation, nothing stored."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from registry.digest import content_digest
from registry.errors import FieldProblem, InvalidInput, NotFound
from registry.gate.context import build_context
from registry.planner import PlanRecomputation
from registry.records import service
from registry.records.checks import cross_check
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.references import pinned
from registry.records.views import RecordView
from registry.sizing.service import calibration_key, recompute_cached
from registry.staleness.freshness import Versioned
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from registry.storage.repository import RecordRepository

DRAFT_ROW_ID = -1  # no registry row: a draft is never stored


def size_draft(
    database: Database,
    document: dict[str, Any],
    *,
    now: datetime,
    limits: StalenessThresholds,
    seed: int = 0,
) -> PlanRecomputation:
    plan = validate_record(RecordKind.plan, document)
    assert isinstance(plan, CapacityPlan)
    with database.reading() as session:
        repo = RecordRepository(session)
        rows = {}
        for role, kind in (("workload", RecordKind.workload), ("provider", RecordKind.provider)):
            try:
                rows[role] = service.resolve(repo, kind, getattr(plan, role), loc=role)
            except NotFound as exc:
                raise InvalidInput(
                    "invalid plan record", problems=[FieldProblem(role, exc.message)]
                ) from None
        refs = {role: pinned(row.name, row.version) for role, row in rows.items()}
        pinned_plan = plan.model_copy(update=refs)
        cross_check(
            RecordKind.plan,
            pinned_plan,
            {role: service.load_model(row) for role, row in rows.items()},
        )
        view = RecordView(
            kind=RecordKind.plan,
            name=plan.name,
            version=0,
            ref=f"{plan.name}@draft",
            digest=content_digest(pinned_plan.model_dump(mode="json")),
            created_at=now,
            created_by="draft",
            references=refs,
            content=pinned_plan.model_dump(mode="json"),
        )
        context = build_context(
            session,
            plan_row_id=DRAFT_ROW_ID,
            plan_view=view,
            plan=Versioned(ref=view.ref, model=pinned_plan),
            workload_row=rows["workload"],
            provider_row=rows["provider"],
            now=now,
            limits=limits,
        )
    return recompute_cached(context, calibration_key(context), seed)
