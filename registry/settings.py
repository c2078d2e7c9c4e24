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

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            database_url=env.get("CAPGATE_DATABASE_URL") or default_database_url(),
            server=env.get("CAPGATE_SERVER") or None,
            principal=env.get("CAPGATE_PRINCIPAL") or default_principal(),
            policy_engine=env.get("CAPGATE_POLICY_ENGINE", "embedded"),
            opa_url=env.get("CAPGATE_OPA_URL") or None,
        )
