"""The server's auth configuration: which OIDC issuers to trust and what they grant.

A YAML (or JSON) file, named by `capgate serve --auth-config` or CAPGATE_AUTH_CONFIG:

    issuers:
      - issuer: https://token.actions.githubusercontent.com
        audience: capgate
        subject_prefix: "github:"
        grants:
          - match: {repository: acme/serving, ref: refs/heads/main}
            roles: [pipeline]
            teams: [serving]

Static API tokens need no configuration: they live (hashed) in the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from registry.auth.identity import Role
from registry.errors import FieldProblem, InvalidInput

ClaimValue = Annotated[str, Field(min_length=1, max_length=512)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Grant(_Strict):
    """Roles and teams for every token whose claims equal `match` (values may be globs)."""

    match: dict[str, ClaimValue] = Field(min_length=1)
    roles: list[Role] = Field(default_factory=list)
    teams: list[str] = Field(default_factory=list)


class Issuer(_Strict):
    issuer: str = Field(pattern=r"^https?://", description="The `iss` claim, exactly.")
    audience: str = Field(min_length=1, description="The `aud` capgate's tokens must carry.")
    jwks_uri: str | None = Field(
        default=None, description="Else discovered from /.well-known/openid-configuration."
    )
    algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256"], min_length=1)
    subject_claim: str = "sub"
    subject_prefix: str = ""
    roles_claim: str | None = Field(
        default=None, description="A claim holding a list of capgate role names."
    )
    teams_claim: str | None = Field(default=None, description="A claim listing the teams.")
    grants: list[Grant] = Field(default_factory=list)
    leeway_s: float = Field(default=30.0, ge=0, le=300)
    jwks_cache_s: float = Field(default=300.0, gt=0, le=86400)
    # A token naming an unknown key refetches the key set (rotation), at most this often.
    jwks_refresh_cooldown_s: float = Field(default=30.0, ge=0, le=3600)
    timeout_s: float = Field(default=5.0, gt=0, le=60)


class AuthConfig(_Strict):
    issuers: list[Issuer] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> AuthConfig:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidInput(
                "unreadable auth configuration",
                problems=[FieldProblem("", str(exc))],
                source=str(path),
            ) from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = [
                FieldProblem(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.errors()
            ]
            raise InvalidInput(
                "invalid auth configuration", problems=problems, source=str(path)
            ) from None
