"""Settings from the environment (prefix CAPGATE_), with embedded defaults."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path


def default_database_url() -> str:
    """A SQLite file in the user's data directory: the embedded default."""
    from platformdirs import user_data_dir

    path = Path(user_data_dir("capgate", appauthor=False)) / "registry.db"
    return f"sqlite:///{path}"


def default_principal() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, e.g. in a bare container
        return "unknown"


@dataclass(frozen=True)
class Settings:
    """Read once per process; plain dataclass so that the CLI starts fast."""

    database_url: str
    server: str | None
    principal: str
    policy_engine: str
    opa_url: str | None
    # The CLI's credential for a server: CAPGATE_TOKEN, else the file CAPGATE_TOKEN_FILE.
    token_value: str | None = None
    token_file: str | None = None
    auth_config: str | None = None
    # OPA: the PEM private key that signs the policy bundle OPA sidecars pull
    # (CAPGATE_BUNDLE_SIGNING_KEY) and the key id OPA knows it by; the CA that the OPA
    # engine's server certificate must chain to (CAPGATE_OPA_CA_FILE; https only then).
    bundle_signing_key: str | None = None
    bundle_signing_key_id: str | None = None
    opa_ca_file: str | None = None
    # The client certificate and key capgate presents to OPA (mutual TLS, for an OPA
    # started with --authentication=tls): CAPGATE_OPA_CLIENT_CERT, CAPGATE_OPA_CLIENT_KEY.
    opa_client_cert: str | None = None
    opa_client_key: str | None = None
    # CAPGATE_REQUIRE_POLICY_RELEASE=1: a registry with no approved policy release
    # decides nothing (an error), instead of deciding under the installed bundle.
    require_policy_release: bool = False
    # CAPGATE_PROMETHEUS_URLS: the Prometheus base URLs the server may read for an evidence
    # import (comma-separated). None by default: an API that fetched any URL a caller names
    # would let anyone allowed to import probe the server's network.
    prometheus_urls: tuple[str, ...] = ()
    # CAPGATE_PUBLIC_API_DOCS=1: /docs and /openapi.json answer without a credential. By
    # default they need one, as every route but /healthz and /readyz does: the schema names
    # every route and field, which is reconnaissance a registry owes nobody unasked.
    public_api_docs: bool = False

    def token(self) -> str | None:
        if self.token_value:
            return self.token_value.strip()
        if self.token_file:
            from registry.errors import Unavailable

            try:
                return Path(self.token_file).expanduser().read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise Unavailable(f"cannot read the token file {self.token_file}: {exc}") from None
        return None

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            database_url=env.get("CAPGATE_DATABASE_URL") or default_database_url(),
            server=env.get("CAPGATE_SERVER") or None,
            principal=env.get("CAPGATE_PRINCIPAL") or default_principal(),
            policy_engine=env.get("CAPGATE_POLICY_ENGINE", "embedded"),
            opa_url=env.get("CAPGATE_OPA_URL") or None,
            token_value=env.get("CAPGATE_TOKEN") or None,
            token_file=env.get("CAPGATE_TOKEN_FILE") or None,
            auth_config=env.get("CAPGATE_AUTH_CONFIG") or None,
            bundle_signing_key=env.get("CAPGATE_BUNDLE_SIGNING_KEY") or None,
            bundle_signing_key_id=env.get("CAPGATE_BUNDLE_SIGNING_KEY_ID") or None,
            opa_ca_file=env.get("CAPGATE_OPA_CA_FILE") or None,
            opa_client_cert=env.get("CAPGATE_OPA_CLIENT_CERT") or None,
            opa_client_key=env.get("CAPGATE_OPA_CLIENT_KEY") or None,
            require_policy_release=_flag(env.get("CAPGATE_REQUIRE_POLICY_RELEASE")),
            public_api_docs=_flag(env.get("CAPGATE_PUBLIC_API_DOCS")),
            prometheus_urls=tuple(
                url.strip().rstrip("/")
                for url in (env.get("CAPGATE_PROMETHEUS_URLS") or "").split(",")
                if url.strip()
            ),
        )


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes"}
