"""The ASGI application uvicorn serves: configured from the environment."""

from __future__ import annotations

from registry.api.app import create_app
from registry.settings import Settings
from registry.storage.database import Database

_settings = Settings.from_env()
app = create_app(Database(_settings.database_url), _settings)
