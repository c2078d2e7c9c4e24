"""Gate checks, decisions (the audit trail) and plan recomputations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.gate.recheck import RecheckReport, recheck_all
from registry.gate.service import Engine, check, get_decision, list_decisions
from registry.gate.views import DecisionView, Outcome
from registry.planner import PlanRecomputation
from registry.records.views import Page
from registry.sizing.draft import size_draft
from registry.sizing.service import RecomputationView, size_plan
from registry.staleness.thresholds import load_thresholds


class CheckRequest(BaseModel):
    plan: str


def _engine(request: Request) -> Engine:
    """One engine per application: it caches the built bundle (embedded) or the server link."""
    engine: Engine | None = getattr(request.app.state, "engine", None)
    if engine is None:
        from registry.gate.engine_factory import engine_for

        engine = engine_for(request.app.state.settings)
        request.app.state.engine = engine
    return engine


def _current_revision(request: Request) -> str | None:
    from registry.policy.bundle import load_bundle

    return load_bundle().revision


def gate_router() -> APIRouter:
    router = APIRouter(tags=["gate"])

    @router.post(
        "/gate/checks",
        response_model=DecisionView,
        operation_id="gate_check",
        summary="Evaluate every policy on a plan and store the decision",
    )
    def gate_check(
        body: CheckRequest, request: Request, database: DatabaseDep, principal: PrincipalDep
    ) -> DecisionView:
        # The registry first: an unknown plan is a 404, not an engine error.
        database.ensure_schema()
        return check(
            database,
            _engine(request),
            plan_ref=body.plan,
            principal=principal,
            limits=load_thresholds(),
            now=datetime.now(UTC),
        )

    @router.post(
        "/gate/rechecks",
        response_model=RecheckReport,
        operation_id="gate_recheck",
        summary="Re-evaluate allow decisions taken under an earlier policy bundle",
    )
    def gate_recheck(
        request: Request, database: DatabaseDep, principal: PrincipalDep
    ) -> RecheckReport:
        return recheck_all(
            database,
            _engine(request),
            principal=principal,
            limits=load_thresholds(),
            now=datetime.now(UTC),
        )

    @router.get(
        "/decisions/{decision_id}",
        response_model=DecisionView,
        operation_id="get_decision",
        summary="One decision with its inputs' digests",
    )
    def decision(decision_id: str, request: Request, database: DatabaseDep) -> DecisionView:
        with database.reading() as session:
            return get_decision(session, decision_id, current_revision=_current_revision(request))

    @router.get(
        "/decisions",
        response_model=Page[DecisionView],
        operation_id="list_decisions",
        summary="The audit trail of decisions, newest first, with filters",
    )
    def decisions(
        request: Request,
        database: DatabaseDep,
        plan: Annotated[str | None, Query(description="Plan name.")] = None,
        outcome: Outcome | None = None,
        principal: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Page[DecisionView]:
        with database.reading() as session:
            return list_decisions(
                session,
                plan=plan,
                outcome=outcome,
                principal=principal,
                since=since,
                until=until,
                limit=limit,
                offset=offset,
                current_revision=_current_revision(request),
            )

    @router.post(
        "/plans/{ref}/recomputations",
        response_model=RecomputationView,
        operation_id="recompute_plan",
        summary="Recompute a registered plan (stored; reused while inputs are unchanged)",
    )
    def recompute_plan(
        ref: str, database: DatabaseDep, principal: PrincipalDep, seed: int = 0
    ) -> RecomputationView:
        return size_plan(
            database,
            plan_ref=ref,
            principal=principal,
            now=datetime.now(UTC),
            limits=load_thresholds(),
            seed=seed,
        ).view

    @router.post(
        "/sizing",
        response_model=PlanRecomputation,
        operation_id="size_draft",
        summary="Recompute a plan document that is not registered (nothing stored)",
    )
    def size(
        body: Annotated[dict[str, Any], Body()], database: DatabaseDep, seed: int = 0
    ) -> PlanRecomputation:
        return size_draft(
            database, body, now=datetime.now(UTC), limits=load_thresholds(), seed=seed
        )

    return router
