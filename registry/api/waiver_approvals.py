"""Four eyes on waivers: approve a requested waiver, see its approval, list pending ones."""

from __future__ import annotations

from fastapi import APIRouter, status
from pydantic import BaseModel, ConfigDict, Field

from registry.api.deps import DatabaseDep, IdentityDep
from registry.auth.ownership import check_approve
from registry.errors import NotFound
from registry.gate.waiver_approvals import WaiverApproval, approval_of, approve, pending
from registry.records.kinds import RecordKind
from registry.records.service import resolve
from registry.storage.database import WriteContext
from registry.storage.repository import RecordRepository


class ApproveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    comment: str | None = Field(default=None, max_length=2000)


def waiver_approvals_router() -> APIRouter:
    router = APIRouter(tags=["waivers"])

    # Declared before the records router's /waivers/{ref}: "pending" is not a waiver name.
    @router.get(
        "/waivers/pending",
        response_model=list[str],
        operation_id="list_pending_waivers",
        summary="Waivers requested but not approved: they are not applied",
    )
    def pending_waivers(database: DatabaseDep) -> list[str]:
        with database.reading() as session:
            return pending(session)

    @router.post(
        "/waivers/{ref}/approvals",
        response_model=WaiverApproval,
        status_code=status.HTTP_201_CREATED,
        operation_id="approve_waiver",
        summary="Approve a waiver someone else requested (approver role)",
    )
    def approve_waiver(
        ref: str, body: ApproveRequest, database: DatabaseDep, identity: IdentityDep
    ) -> WaiverApproval:
        def work(ctx: WriteContext) -> WaiverApproval:
            # Whose approvers may approve is policy data (registry.auth.ownership).
            waiver = resolve(RecordRepository(ctx.session), RecordKind.waiver, ref, loc="ref")
            check_approve(ctx, identity, waiver)
            return approve(ctx, ref=ref, comment=body.comment)

        return database.write(work, principal=identity.subject)

    @router.get(
        "/waivers/{ref}/approval",
        response_model=WaiverApproval,
        operation_id="get_waiver_approval",
        summary="Who approved a waiver, and when (404 while it is pending)",
    )
    def approval(ref: str, database: DatabaseDep) -> WaiverApproval:
        with database.reading() as session:
            found = approval_of(session, ref=ref)
        if found is None:
            raise NotFound(f"waiver {ref} is pending approval: it is not applied")
        return found

    return router
