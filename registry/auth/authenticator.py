"""From a request's credential to a verified identity, or a refusal."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from registry.auth.config import AuthConfig
from registry.auth.identity import Identity, local_identity
from registry.auth.oidc import OidcVerifier, looks_like_jwt
from registry.auth.token_cache import Confirmation, TokenCache
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
        self._tokens = TokenCache()

    def authenticate(self, authorization: str | None, database: Database) -> Identity:
        return self._authenticate(authorization, database, provisional=False)[0]

    def authenticate_provisionally(
        self, authorization: str | None, database: Database
    ) -> tuple[Identity, Confirmation | None]:
        """As `authenticate`, except that an API token this process verified moments
        ago (registry.auth.token_cache) is not looked up now: then the confirmation is
        returned too, and the caller must run it in its first reading session, before
        reading anything else (it raises Unauthenticated unless the token still
        verifies to the same identity: a revocation is honoured at once)."""
        return self._authenticate(authorization, database, provisional=True)

    def _authenticate(
        self, authorization: str | None, database: Database, *, provisional: bool
    ) -> tuple[Identity, Confirmation | None]:
        if not authorization:
            if self.local_subject is not None:
                return local_identity(self.local_subject), None
            raise Unauthenticated("authentication required: send Authorization: Bearer <token>")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("the Authorization header must read: Bearer <token>")
        if looks_like_jwt(token):
            return self._oidc.authenticate(token), None
        if provisional and (pending := self._tokens.get(token)) is not None:
            return pending.identity, self._confirmation(pending.confirm, token)
        database.ensure_schema()  # an unmigrated registry is a 503, not "unknown token"
        with database.reading() as session:
            identity = authenticate_token(session, token, now=datetime.now(UTC))
        self._tokens.keep(token, identity)
        return identity, None

    def _confirmation(self, confirm: Callable[..., None], token: str) -> Callable[[Session], None]:
        def confirmation(session: Session) -> None:
            try:
                confirm(session, now=datetime.now(UTC))
            except Unauthenticated:
                self._tokens.forget(token)
                raise

        return confirmation
