"""Who owns a record series, and an admin's transfer of it (registry.auth.ownership)."""

from __future__ import annotations

from fastapi import APIRouter, status
from pydantic import BaseModel, ConfigDict, Field

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.api.limits import PathText
from registry.auth.ownership import SeriesOwner, owner_of, transfer
from registry.records.kinds import RecordKind


class TransferRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    team: str = Field(min_length=1, max_length=128, description="The team that owns it next.")
    reason: str = Field(min_length=1, max_length=2000, description="Kept in the audit trail.")


def owners_router() -> APIRouter:
    router = APIRouter(tags=["owners"])

    @router.get(
        "/owners/{kind}/{name}",
        response_model=SeriesOwner,
        operation_id="get_series_owner",
        summary="The team that owns a record series, and every assignment of it",
    )
    def get_owner(kind: RecordKind, name: PathText, database: DatabaseDep) -> SeriesOwner:
        with database.reading() as session:
            return owner_of(session, kind, name)

    @router.post(
        "/owners/{kind}/{name}/transfers",
        response_model=SeriesOwner,
        status_code=status.HTTP_201_CREATED,
        operation_id="transfer_series",
        summary="Give a series (published or not yet) to a team (admin; audited)",
    )
    def transfer_series(
        kind: RecordKind,
        name: PathText,
        body: TransferRequest,
        database: DatabaseDep,
        principal: PrincipalDep,
    ) -> SeriesOwner:
        return database.write(
            lambda ctx: transfer(ctx, kind=kind, name=name, team=body.team, reason=body.reason),
            principal=principal,
        )

    return router
