"""The ASGI application uvicorn serves: configured from the environment."""

from __future__ import annotations

from registry.api.app import create_app
from registry.settings import Settings
from registry.storage.database import Database

app = create_app(Database(Settings.from_env().database_url))
