"""From a request's credential to a verified identity, or a refusal."""

from __future__ import annotations

from datetime import UTC, datetime

from registry.auth.config import AuthConfig
from registry.auth.identity import Identity, local_identity
from registry.auth.oidc import OidcVerifier, looks_like_jwt
from registry.auth.tokens import authenticate_token
from registry.errors import Unauthenticated
from registry.storage.database import Database


class Authenticator:
    """Bearer tokens only: OIDC JWTs from configured issuers, or capgate API tokens.

    `local_subject` is set only by `capgate serve --insecure-local` (loopback): a request
    without a credential then acts as that local user, as the CLI does on the database.
    """

    def __init__(self, config: AuthConfig | None = None, *, local_subject: str | None = None):
        self.config = config or AuthConfig()
        self.local_subject = local_subject
        self._oidc = OidcVerifier(self.config)

    def authenticate(self, authorization: str | None, database: Database) -> Identity:
        if not authorization:
            if self.local_subject is not None:
                return local_identity(self.local_subject)
            raise Unauthenticated("authentication required: send Authorization: Bearer <token>")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("the Authorization header must read: Bearer <token>")
        if looks_like_jwt(token):
            return self._oidc.authenticate(token)
        database.ensure_schema()  # an unmigrated registry is a 503, not "unknown token"
        with database.reading() as session:
            return authenticate_token(session, token, now=datetime.now(UTC))
