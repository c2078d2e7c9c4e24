"""Evidence withdrawal: retire one evidence version, audited, never deleted.

Included before the generic records router, so ``/v1/evidence/withdrawals`` is not read
as a record reference:

- ``POST /v1/evidence/{ref}/withdrawals`` with ``{"reason": ...}``: 201 and the
  withdrawal; 409 when that version is already withdrawn, 404 for an unknown ref, 422
  for an empty reason;
- ``GET /v1/evidence/{ref}/withdrawals``: that version's withdrawal (an empty list when
  it was not withdrawn);
- ``GET /v1/evidence/withdrawals``: every withdrawal, newest first.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.api.limits import Offset
from registry.evidence_lifecycle import MAX_PAGE, Withdrawal
from registry.records.views import Page

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE)]


class WithdrawRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(description="Why the evidence is withdrawn (kept in the audit trail).")


def evidence_lifecycle_router() -> APIRouter:
    router = APIRouter(tags=["evidence"])

    @router.get(
        "/evidence/withdrawals",
        response_model=Page[Withdrawal],
        summary="List evidence withdrawals, newest first",
        operation_id="list_evidence_withdrawals",
    )
    def list_withdrawals(
        database: DatabaseDep, limit: Limit = 50, offset: Offset = 0
    ) -> Page[Withdrawal]:
        from registry.evidence_lifecycle import list_withdrawals

        with database.reading() as session:
            return list_withdrawals(session, limit=limit, offset=offset)

    @router.post(
        "/evidence/{ref}/withdrawals",
        response_model=Withdrawal,
        status_code=status.HTTP_201_CREATED,
        summary="Withdraw one evidence version: it then supports and blocks nothing",
        operation_id="withdraw_evidence",
        responses={
            404: {"description": "No such evidence"},
            409: {"description": "That evidence version is already withdrawn"},
            422: {"description": "Empty reason or malformed reference"},
        },
    )
    def withdraw(
        ref: str, body: WithdrawRequest, database: DatabaseDep, principal: PrincipalDep
    ) -> Withdrawal:
        from registry.evidence_lifecycle import withdraw

        return database.write(
            lambda ctx: withdraw(ctx, ref=ref, reason=body.reason), principal=principal
        )

    @router.get(
        "/evidence/{ref}/withdrawals",
        response_model=list[Withdrawal],
        summary="The withdrawal of one evidence version (empty when not withdrawn)",
        operation_id="get_evidence_withdrawals",
    )
    def withdrawals_of(ref: str, database: DatabaseDep) -> list[Withdrawal]:
        from registry.evidence_lifecycle import withdrawal_of
        from registry.records.kinds import RecordKind
        from registry.records.service import resolve
        from registry.storage.repository import RecordRepository

        with database.reading() as session:
            row = resolve(RecordRepository(session), RecordKind.evidence, ref, loc="ref")
            found = withdrawal_of(session, row)
        return [] if found is None else [found]

    return router
