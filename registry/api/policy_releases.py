"""Policy releases over the API: submit, approve (four eyes, policy-admin), read."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request, status
from pydantic import BaseModel, ConfigDict, Field

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.gate.release_approval import ReleaseApproval, approve_and_recheck
from registry.policy.releases import (
    MAX_NOTES,
    PolicyReleaseView,
    bundle_from_files,
    get_release,
    list_releases,
    submit,
)
from registry.staleness.thresholds import load_thresholds


class SubmitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=128)
    notes: str = Field(default="", max_length=MAX_NOTES)
    files: dict[str, str] = Field(
        description="The bundle's files by path: .rego modules (no tests) and data.json."
    )


class ApproveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    comment: str | None = Field(default=None, max_length=2000)


def policy_releases_router() -> APIRouter:
    router = APIRouter(tags=["policy releases"])

    @router.post(
        "/policy-releases",
        response_model=PolicyReleaseView,
        status_code=status.HTTP_201_CREATED,
        operation_id="submit_policy_release",
        summary="Submit the next version of a policy release (policy-admin); pending approval",
    )
    def submit_release(
        body: SubmitRequest, database: DatabaseDep, principal: PrincipalDep
    ) -> PolicyReleaseView:
        bundle = bundle_from_files(body.files)
        return database.write(
            lambda ctx: submit(ctx, name=body.name, notes=body.notes, bundle=bundle),
            principal=principal,
        )

    @router.get(
        "/policy-releases",
        response_model=list[PolicyReleaseView],
        operation_id="list_policy_releases",
        summary="Every policy release, and which one is in force",
    )
    def releases(database: DatabaseDep) -> list[PolicyReleaseView]:
        with database.reading() as session:
            return list_releases(session)

    @router.get(
        "/policy-releases/{ref}",
        response_model=PolicyReleaseView,
        operation_id="get_policy_release",
        summary="One policy release (NAME@vN)",
    )
    def release(ref: str, database: DatabaseDep) -> PolicyReleaseView:
        with database.reading() as session:
            return get_release(session, ref)

    @router.post(
        "/policy-releases/{ref}/approvals",
        response_model=ReleaseApproval,
        status_code=status.HTTP_201_CREATED,
        operation_id="approve_policy_release",
        summary="Put a release someone else submitted in force (policy-admin), then recheck",
    )
    def approve_release(
        ref: str,
        body: ApproveRequest,
        request: Request,
        database: DatabaseDep,
        principal: PrincipalDep,
    ) -> ReleaseApproval:
        from registry.api.gate import request_engine

        return approve_and_recheck(
            database,
            lambda: request_engine(request),
            ref=ref,
            comment=body.comment,
            principal=principal,
            limits=load_thresholds(),
            now=datetime.now(UTC),
        )

    return router
