"""The audit trail: every write, hash-chained, and a check that the chain and the rows it
recorded are intact. Checkpoints are signed and checked by the client (`capgate audit
checkpoint`, `capgate audit verify --checkpoint`): the signing key never reaches the
server, and a client checks what the server says against what it signed before."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AwareDatetime, BaseModel, Field

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.api.limits import MAX_INT32, NO_NUL
from registry.api.paging import Cursor, TrailOffset, WithTotal
from registry.audit.quarantine import MAX_REASON, Acknowledgement, acknowledge
from registry.audit.service import AuditEventView, ChainReport, list_events, verify
from registry.records.views import TrailPage


class AcknowledgeRequest(BaseModel):
    reason: str = Field(max_length=MAX_REASON, description="Why the failure is known and repaired.")


def audit_router() -> APIRouter:
    router = APIRouter(tags=["audit"])

    @router.get(
        "/audit/events",
        response_model=TrailPage[AuditEventView],
        operation_id="audit_events",
        summary="Audit events, newest first",
    )
    def events(
        database: DatabaseDep,
        action: Annotated[str | None, Query(max_length=64, pattern=NO_NUL)] = None,
        principal: Annotated[str | None, Query(max_length=256, pattern=NO_NUL)] = None,
        seq: Annotated[
            int | None,
            Query(ge=1, le=MAX_INT32, description="Only the event with this sequence number."),
        ] = None,
        since: Annotated[
            AwareDatetime | None, Query(description="Events at or after this instant.")
        ] = None,
        until: Annotated[
            AwareDatetime | None, Query(description="Events before this instant.")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: TrailOffset = 0,
        cursor: Cursor = None,
        total: WithTotal = False,
    ) -> TrailPage[AuditEventView]:
        with database.reading() as session:
            return list_events(
                session,
                action=action,
                principal=principal,
                seq=seq,
                since=since,
                until=until,
                limit=limit,
                offset=offset,
                cursor=cursor,
                total=total,
            )

    @router.get(
        "/audit/verify",
        response_model=ChainReport,
        operation_id="audit_verify",
        summary="Walk the hash chain from the first event and check every row against "
        "the event that recorded it; report any break",
    )
    def verify_chain(database: DatabaseDep) -> ChainReport:
        with database.reading(snapshot=True) as session:
            return verify(session)

    @router.post(
        "/audit/acknowledgements",
        response_model=Acknowledgement,
        status_code=201,
        operation_id="audit_acknowledge",
        summary="Acknowledge every problem the integrity check reports now (admin): lifts "
        "the quarantine of a known, repaired failure; 409 when the registry verifies",
    )
    def acknowledge_problems(
        body: AcknowledgeRequest, database: DatabaseDep, principal: PrincipalDep
    ) -> Acknowledgement:
        return acknowledge(database, principal=principal, reason=body.reason)

    return router
