"""The ASGI application uvicorn serves: configured from the environment.

Authentication comes from CAPGATE_AUTH_CONFIG (OIDC issuers; API tokens always work).
There is no insecure mode here: `capgate serve --insecure-local` builds its own app and
binds it to loopback.
"""

from __future__ import annotations

from pathlib import Path

from registry.api.app import create_app, settle_heap
from registry.auth.authenticator import Authenticator
from registry.auth.config import AuthConfig
from registry.settings import Settings
from registry.storage.database import Database

_settings = Settings.from_env()
_auth = AuthConfig.load(Path(_settings.auth_config)) if _settings.auth_config else None
app = create_app(Database(_settings.database_url), _settings, Authenticator(_auth))
settle_heap()
