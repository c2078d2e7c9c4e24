"""Create, get and list endpoints for every record kind, generated from one template."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Response, status

from registry.api.deps import DatabaseDep, IdentityDep
from registry.api.limits import Offset, PathText
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import Page, RecordView, SeriesView, SubmitResult
from registry.storage.database import WriteContext

Limit = Annotated[int, Query(ge=1, le=service.MAX_PAGE)]


def _routes_for(router: APIRouter, kind: RecordKind) -> None:
    base = f"/{kind.collection}"
    schema_name = kind.schema.__name__

    @router.post(
        base,
        response_model=SubmitResult,
        status_code=status.HTTP_201_CREATED,
        summary=f"Submit a {kind.value} record (content identical to the latest returns it)",
        operation_id=f"submit_{kind.value}",
        openapi_extra={"x-capgate-body-schema": schema_name},
        responses={
            200: {"model": SubmitResult, "description": "The latest version has this content"}
        },
    )
    def submit(
        body: Annotated[dict[str, Any], Body()],
        response: Response,
        database: DatabaseDep,
        identity: IdentityDep,
        team: Annotated[
            str | None,
            Query(max_length=128, description="The owner team of a new series (see ownership)."),
        ] = None,
    ) -> SubmitResult:
        record = validate_record(kind, body)

        def work(ctx: WriteContext) -> SubmitResult:
            # Ownership is checked in the write's transaction (registry.auth.ownership):
            # the owner checked is the owner written after.
            return service.submit(ctx, kind=kind, record=record, identity=identity, team=team)

        result = database.write(work, principal=identity.subject)
        if not result.created:
            response.status_code = status.HTTP_200_OK
        return result

    @router.get(
        base,
        response_model=Page[SeriesView],
        summary=f"List {kind.collection} (latest version of each name)",
        operation_id=f"list_{kind.value}",
    )
    def list_series(
        database: DatabaseDep, limit: Limit = 50, offset: Offset = 0
    ) -> Page[SeriesView]:
        with database.reading() as session:
            return service.list_series(session, kind=kind, limit=limit, offset=offset)

    @router.get(
        base + "/{ref}",
        response_model=RecordView,
        summary=f"Get a {kind.value} by name (latest), name@vN or sha256 digest",
        operation_id=f"get_{kind.value}",
    )
    def get(ref: PathText, database: DatabaseDep) -> RecordView:
        with database.reading() as session:
            return service.get(session, kind=kind, ref=ref)

    @router.get(
        base + "/{name}/versions",
        response_model=Page[RecordView],
        summary=f"List the versions of one {kind.value}",
        operation_id=f"list_{kind.value}_versions",
    )
    def versions(
        name: PathText, database: DatabaseDep, limit: Limit = 50, offset: Offset = 0
    ) -> Page[RecordView]:
        with database.reading() as session:
            return service.list_versions(session, kind=kind, name=name, limit=limit, offset=offset)


def records_router() -> APIRouter:
    router = APIRouter(tags=["records"])
    for kind in RecordKind:
        _routes_for(router, kind)
    return router
