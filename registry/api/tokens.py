"""Static API tokens, managed by admins: create (the secret is shown once), list, revoke."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.auth.identity import Role
from registry.auth.tokens import (
    IssuedToken,
    TokenRequest,
    TokenView,
    create_token,
    list_tokens,
    revoke_token,
)


class CreateTokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, max_length=256)
    roles: list[Role] = Field(min_length=1)
    teams: list[str] = Field(default_factory=list, max_length=64)
    expires_in_days: float = Field(default=90, gt=0, le=366)
    description: str | None = Field(default=None, max_length=1000)


def tokens_router() -> APIRouter:
    router = APIRouter(tags=["tokens"])

    @router.post(
        "/tokens",
        response_model=IssuedToken,
        status_code=status.HTTP_201_CREATED,
        operation_id="create_token",
        summary="Create an API token (its secret is in this response only)",
    )
    def create(
        body: CreateTokenRequest, database: DatabaseDep, principal: PrincipalDep
    ) -> IssuedToken:
        request = TokenRequest(
            subject=body.subject,
            roles=frozenset(body.roles),
            teams=frozenset(body.teams),
            lifetime=timedelta(days=body.expires_in_days),
            description=body.description,
        )
        return database.write(lambda ctx: create_token(ctx, request), principal=principal)

    @router.get(
        "/tokens",
        response_model=list[TokenView],
        operation_id="list_tokens",
        summary="List API tokens (never their secrets)",
    )
    def listing(
        database: DatabaseDep,
        include_revoked: Annotated[bool, Query()] = False,
    ) -> list[TokenView]:
        with database.reading() as session:
            return list_tokens(session, include_revoked=include_revoked)

    @router.post(
        "/tokens/{token_id}/revocation",
        response_model=TokenView,
        operation_id="revoke_token",
        summary="Revoke an API token: it stops working at once",
    )
    def revoke(token_id: str, database: DatabaseDep, principal: PrincipalDep) -> TokenView:
        return database.write(lambda ctx: revoke_token(ctx, token_id), principal=principal)

    return router
