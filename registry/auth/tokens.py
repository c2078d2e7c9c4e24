"""Static API tokens: random secrets shown once, stored as a hash, scoped and revocable.

A token reads `cgt_<id>_<secret>`. The id finds the row; the secret is compared by its
SHA-256 hash in constant time. A plain hash is enough here (no password stretching):
the secret is 256 random bits, so there is nothing to guess from the stored hash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.auth.identity import Identity, Role
from registry.digest import canonical_json
from registry.errors import Conflict, FieldProblem, InvalidInput, NotFound, Unauthenticated
from registry.storage.database import WriteContext
from registry.storage.models import ApiTokenRow

PREFIX = "cgt_"
TOKEN_PATTERN = re.compile(r"^cgt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
MAX_LIFETIME = timedelta(days=366)
TEAM_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")


class TokenView(BaseModel):
    """Everything about a token except its secret."""

    id: str
    subject: str
    roles: list[str]
    teams: list[str]
    description: str | None
    created_by: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None
    revoked_by: str | None


class IssuedToken(BaseModel):
    token: str  # shown once, never stored
    info: TokenView


@dataclass(frozen=True)
class TokenRequest:
    subject: str
    roles: frozenset[Role]
    teams: frozenset[str]
    lifetime: timedelta
    description: str | None = None

    def check(self) -> None:
        problems = []
        if not self.subject.strip() or len(self.subject) > 256:
            problems.append(FieldProblem("subject", "must be 1 to 256 characters"))
        if not self.roles:
            problems.append(FieldProblem("roles", "a token needs at least one role"))
        for team in sorted(self.teams):
            if not TEAM_PATTERN.match(team):
                problems.append(FieldProblem("teams", f"{team!r} is not a team name"))
        if not timedelta(0) < self.lifetime <= MAX_LIFETIME:
            problems.append(
                FieldProblem(
                    "expires_in", "must be more than 0 and at most 366 days: tokens expire"
                )
            )
        if problems:
            raise InvalidInput("invalid token request", problems=problems)


def _hash(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode("ascii")).hexdigest()


def _view(row: ApiTokenRow) -> TokenView:
    return TokenView(
        id=row.id,
        subject=row.subject,
        roles=json.loads(row.roles),
        teams=json.loads(row.teams),
        description=row.description,
        created_by=row.created_by,
        created_at=as_utc(row.created_at),
        expires_at=as_utc(row.expires_at),
        revoked_at=as_utc(row.revoked_at) if row.revoked_at else None,
        revoked_by=row.revoked_by,
    )


def create_token(ctx: WriteContext, request: TokenRequest) -> IssuedToken:
    request.check()
    token_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    row = ApiTokenRow(
        id=token_id,
        secret_hash=_hash(secret),
        subject=request.subject,
        roles=canonical_json(sorted(r.value for r in request.roles)),
        teams=canonical_json(sorted(request.teams)),
        description=request.description,
        created_by=ctx.principal,
        created_at=ctx.now,
        expires_at=ctx.now + request.lifetime,
    )
    ctx.session.add(row)
    ctx.session.flush()
    view = _view(row)
    ctx.record_event(
        "token.created",
        {
            "id": token_id,
            "subject": view.subject,
            "roles": view.roles,
            "teams": view.teams,
            "expires_at": view.expires_at.isoformat(),
        },
    )
    return IssuedToken(token=f"{PREFIX}{token_id}_{secret}", info=view)


def list_tokens(session: Session, *, include_revoked: bool = False) -> list[TokenView]:
    query = select(ApiTokenRow).order_by(ApiTokenRow.created_at, ApiTokenRow.id)
    if not include_revoked:
        query = query.where(ApiTokenRow.revoked_at.is_(None))
    return [_view(row) for row in session.scalars(query)]


def revoke_token(ctx: WriteContext, token_id: str) -> TokenView:
    row = ctx.session.get(ApiTokenRow, token_id)
    if row is None:
        raise NotFound(f"no API token {token_id}")
    if row.revoked_at is not None:
        raise Conflict(f"API token {token_id} was already revoked by {row.revoked_by}")
    row.revoked_at = ctx.now
    row.revoked_by = ctx.principal
    ctx.session.flush()
    ctx.record_event("token.revoked", {"id": token_id, "subject": row.subject})
    return _view(row)


def authenticate_token(session: Session, presented: str, *, now: datetime) -> Identity:
    match = TOKEN_PATTERN.match(presented)
    if match is None:
        raise Unauthenticated("the bearer token is neither a capgate API token nor a JWT")
    token_id, secret = match.groups()
    row = session.get(ApiTokenRow, token_id)
    # One message for unknown id and wrong secret: do not tell which half was right.
    if row is None or not hmac.compare_digest(row.secret_hash, _hash(secret)):
        raise Unauthenticated("unknown API token")
    if row.revoked_at is not None:
        raise Unauthenticated(f"API token {token_id} was revoked")
    if as_utc(row.expires_at) <= now:
        raise Unauthenticated(
            f"API token {token_id} expired at {as_utc(row.expires_at):%Y-%m-%dT%H:%M:%SZ}"
        )
    return Identity(
        subject=row.subject,
        roles=frozenset(Role(r) for r in json.loads(row.roles)),
        teams=frozenset(json.loads(row.teams)),
        via=f"token:{token_id}",
    )
