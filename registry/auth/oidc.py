"""OIDC bearer tokens: JWTs verified against the issuer's published keys (JWKS).

PyJWT does the verifying (signature, `iss`, `aud`, `exp`, `nbf`); its JWKS client
caches a bounded number of keys, refetches the key set when a token names an unknown
key id (key rotation) and cools down between refetches, so random key ids cannot make
capgate hammer the issuer. An issuer that cannot be reached is a 503, never an accept.
"""

from __future__ import annotations

import threading
from fnmatch import fnmatchcase
from typing import Any

import httpx
import jwt

from registry.auth.config import AuthConfig, Issuer
from registry.auth.identity import Identity, Role
from registry.errors import Unauthenticated, Unavailable


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token.startswith("eyJ")


class _IssuerKeys:
    def __init__(self, issuer: Issuer) -> None:
        self.issuer = issuer
        self._client: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def _jwks_uri(self) -> str:
        if self.issuer.jwks_uri:
            return self.issuer.jwks_uri
        url = self.issuer.issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            response = httpx.get(url, timeout=self.issuer.timeout_s)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise Unavailable(f"cannot read the OIDC discovery document {url}: {exc}") from None
        # The discovery document must name the issuer it was fetched for (OIDC Discovery 4.3).
        if document.get("issuer") != self.issuer.issuer or not document.get("jwks_uri"):
            raise Unavailable(f"the OIDC discovery document {url} does not describe this issuer")
        return str(document["jwks_uri"])

    def client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._client is None:
                self._client = jwt.PyJWKClient(
                    self._jwks_uri(),
                    cache_keys=True,
                    max_cached_keys=16,
                    lifespan=self.issuer.jwks_cache_s,
                    timeout=self.issuer.timeout_s,
                    cooldown_duration=self.issuer.jwks_refresh_cooldown_s,
                )
            return self._client


def _claim_list(claims: dict[str, Any], name: str | None) -> list[str]:
    if not name:
        return []
    value = claims.get(name)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _granted(issuer: Issuer, claims: dict[str, Any]) -> tuple[set[Role], set[str]]:
    roles = {Role(r) for r in _claim_list(claims, issuer.roles_claim) if r in Role.__members__}
    teams = set(_claim_list(claims, issuer.teams_claim))
    for grant in issuer.grants:
        if all(
            isinstance(claims.get(k), str) and fnmatchcase(claims[k], pattern)
            for k, pattern in grant.match.items()
        ):
            roles.update(grant.roles)
            teams.update(grant.teams)
    return roles, teams


class OidcVerifier:
    def __init__(self, config: AuthConfig) -> None:
        self._issuers = {i.issuer: _IssuerKeys(i) for i in config.issuers}

    def authenticate(self, token: str) -> Identity:
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise Unauthenticated("the bearer token is not a well-formed JWT") from None
        keys = self._issuers.get(str(unverified.get("iss")))
        if keys is None:
            raise Unauthenticated(f"tokens from issuer {unverified.get('iss')!r} are not trusted")
        issuer = keys.issuer
        try:
            signing_key = keys.client().get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise Unavailable(f"cannot fetch the signing keys of {issuer.issuer}: {exc}") from None
        except jwt.PyJWKClientError as exc:
            raise Unauthenticated(
                f"no signing key of {issuer.issuer} verifies the token: {exc}"
            ) from None
        try:
            claims = jwt.decode(
                token,
                signing_key.key,
                algorithms=issuer.algorithms,
                audience=issuer.audience,
                issuer=issuer.issuer,
                leeway=issuer.leeway_s,
                options={"require": ["exp", "iss", "aud", issuer.subject_claim]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated("the token is not valid yet (nbf)") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated(f"the token's audience is not {issuer.audience!r}") from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated("the token's signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"the token does not verify: {exc}") from None
        roles, teams = _granted(issuer, claims)
        return Identity(
            subject=f"{issuer.subject_prefix}{claims[issuer.subject_claim]}"[:256],
            roles=frozenset(roles),
            teams=frozenset(teams),
            via=f"oidc:{issuer.issuer}",
        )
