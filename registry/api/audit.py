"""The audit trail: every write, hash-chained, and a check that the chain is intact."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from registry.api.deps import DatabaseDep
from registry.audit.service import AuditEventView, ChainReport, list_events, verify
from registry.records.views import Page


def audit_router() -> APIRouter:
    router = APIRouter(tags=["audit"])

    @router.get(
        "/audit/events",
        response_model=Page[AuditEventView],
        operation_id="audit_events",
        summary="Audit events, newest first",
    )
    def events(
        database: DatabaseDep,
        action: str | None = None,
        principal: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Page[AuditEventView]:
        with database.reading() as session:
            return list_events(
                session, action=action, principal=principal, limit=limit, offset=offset
            )

    @router.get(
        "/audit/verify",
        response_model=ChainReport,
        operation_id="audit_verify",
        summary="Walk the hash chain from the first event; report any break",
    )
    def verify_chain(database: DatabaseDep) -> ChainReport:
        with database.reading() as session:
            return verify(session)

    return router
