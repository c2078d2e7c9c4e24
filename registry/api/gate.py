"""Gate checks, decisions (the audit trail) and plan recomputations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import AwareDatetime, BaseModel, Field

from registry.api.deps import DatabaseDep, PrincipalDep, token_confirmation
from registry.api.limits import NO_NUL, PathText, Seed
from registry.api.paging import Cursor, TrailOffset, WithTotal
from registry.errors import NotFound
from registry.gate.recheck import RecheckReport, recheck_all
from registry.gate.service import Engine, check, get_decision, list_decisions
from registry.gate.views import DecisionView, Outcome
from registry.manifests.consistency import StatedManifests
from registry.planner import PlanRecomputation
from registry.records.views import TrailPage
from registry.sizing.draft import size_draft
from registry.sizing.service import RecomputationView, size_plan
from registry.staleness.thresholds import load_thresholds


class CheckRequest(BaseModel):
    plan: str
    manifests: StatedManifests | None = Field(
        default=None,
        description="The plan fields the manifests that ship state, each with its file, "
        "document and line (`capgate gate check --manifests` reads them). Compared with "
        "the plan version decided on: a field they contradict is a violation of "
        "manifests_consistent.",
    )
    policy_release: str | None = Field(
        default=None,
        description="A policy release (NAME@vN) the pipeline pins: the check is a 503 "
        "unless it is the approved release in force.",
    )


class DecisionInput(BaseModel):
    decision_id: str
    input_digest: str
    bundle_revision: str
    recomputation_digest: str | None
    input: dict[str, Any]


class DsseSignature(BaseModel):
    keyid: str = Field(description="sha256 (hex) of the raw Ed25519 public key.")
    sig: str = Field(description="Base64 Ed25519 signature over the DSSE PAE.")


class DsseEnvelope(BaseModel):
    """A DSSE envelope whose payload is an in-toto Statement v1 about one decision."""

    payload: str = Field(description="Base64 of the statement's canonical JSON.")
    payloadType: str = Field(description="application/vnd.in-toto+json")
    signatures: list[DsseSignature]


def request_engine(request: Request) -> Engine:
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
    ) -> Response:
        # The registry first: an unknown plan is a 404, not an engine error.
        database.ensure_schema()
        view = check(
            database,
            request_engine(request),
            plan_ref=body.plan,
            principal=principal,
            limits=load_thresholds(),
            now=datetime.now(UTC),
            manifests=body.manifests,
            policy_release=body.policy_release,
            confirm=token_confirmation(request),
        )
        # The view is built and validated already: serialised once, not validated again
        # against the response model (which still documents the answer).
        return Response(view.model_dump_json(), media_type="application/json")

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
            request_engine(request),
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
    def decision(decision_id: PathText, request: Request, database: DatabaseDep) -> DecisionView:
        with database.reading() as session:
            return get_decision(session, decision_id, current_revision=_current_revision(request))

    @router.get(
        "/decisions/{decision_id}/input",
        response_model=DecisionInput,
        operation_id="get_decision_input",
        summary="The exact input document the policies evaluated (with the recomputation)",
        description="Re-run the policies on it offline: `opa eval -d policies/ -i input.json "
        "data.capgate.gate.decision` with the bundle at `bundle_revision`.",
    )
    def decision_input(decision_id: PathText, database: DatabaseDep) -> DecisionInput:
        import json

        from registry.digest import content_digest
        from registry.errors import Tampered
        from registry.storage.repository import GateRepository

        with database.reading() as session:
            get_decision(session, decision_id, current_revision=None)  # 422 or 404 first
            row = GateRepository(session).decision(decision_id)
            assert row is not None  # get_decision found it in this same session
            stored = json.loads(row.input or "{}")
            input_digest, revision = row.input_digest, row.bundle_revision
        # The row keeps the recomputation's digest beside the document the policies saw.
        recomputation_digest = stored.pop("recomputation_digest", None)
        document = stored
        # What is handed to an auditor must be what was decided on: re-hash it.
        if document and content_digest(document) != input_digest:
            raise Tampered(
                f"decision {decision_id}: its stored input does not hash to its input digest "
                f"{input_digest}"
            )
        return DecisionInput(
            decision_id=decision_id,
            input_digest=input_digest,
            bundle_revision=revision,
            recomputation_digest=recomputation_digest,
            input=document,
        )

    @router.get(
        "/decisions/{decision_id}/attestation",
        response_model=DsseEnvelope,
        operation_id="get_decision_attestation",
        summary="The decision as a signed in-toto statement (DSSE envelope)",
        description="Verify it offline with the key at /v1/attestation/public-key "
        "(`capgate gate verify`).",
    )
    def decision_attestation(decision_id: PathText, database: DatabaseDep) -> dict[str, Any]:
        from registry.attestation.store import envelope_of, get_attestation

        with database.reading() as session:
            get_decision(session, decision_id, current_revision=None)  # 422 or 404 first
            row = get_attestation(session, decision_id)
            if row is None:
                raise NotFound(f"decision {decision_id} has no attestation")
            return envelope_of(row)

    @router.get(
        "/attestation/public-key",
        response_class=PlainTextResponse,
        operation_id="get_attestation_public_key",
        summary="The public key (PEM) decision attestations are signed with",
        responses={200: {"content": {"text/plain": {}}}},
    )
    def attestation_public_key() -> PlainTextResponse:
        from registry.keys import signing_key

        key = signing_key()
        return PlainTextResponse(key.public_pem(), headers={"X-Capgate-Key-Id": key.key_id})

    @router.get(
        "/decisions",
        response_model=TrailPage[DecisionView],
        operation_id="list_decisions",
        summary="The audit trail of decisions, newest first, with filters",
    )
    def decisions(
        request: Request,
        database: DatabaseDep,
        plan: Annotated[str | None, Query(description="Plan name.", pattern=NO_NUL)] = None,
        outcome: Outcome | None = None,
        principal: Annotated[str | None, Query(pattern=NO_NUL)] = None,
        since: Annotated[
            AwareDatetime | None, Query(description="Decisions at or after this instant.")
        ] = None,
        until: Annotated[
            AwareDatetime | None, Query(description="Decisions before this instant.")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: TrailOffset = 0,
        cursor: Cursor = None,
        total: WithTotal = False,
    ) -> TrailPage[DecisionView]:
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
                cursor=cursor,
                total=total,
                current_revision=_current_revision(request),
            )

    @router.post(
        "/plans/{ref}/recomputations",
        response_model=RecomputationView,
        operation_id="recompute_plan",
        summary="Recompute a registered plan (stored; reused while inputs are unchanged)",
    )
    def recompute_plan(
        ref: PathText, database: DatabaseDep, principal: PrincipalDep, seed: Seed = 0
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
        body: Annotated[dict[str, Any], Body()], database: DatabaseDep, seed: Seed = 0
    ) -> PlanRecomputation:
        return size_draft(
            database, body, now=datetime.now(UTC), limits=load_thresholds(), seed=seed
        )

    return router
