"""The CLI environment the import tests run `capgate evidence import` in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from registry.records.kinds import RecordKind
from registry.storage.database import Database
from tests.cli.test_cli import running_server
from tests.importers.helpers import local_cli_env, register_providers
from tests.importers.test_import_service import submit_example


@pytest.fixture(params=["local", "server"])
def env(request: pytest.FixtureRequest, database_url: str) -> Iterator[dict[str, str]]:
    """The example's workload, provider and plan registered, and providers serving the
    other models the files measured (``helpers.provider_for``); the CLI on the registry
    itself, or against a server on it (which also drives the REST form fields)."""
    database = Database(database_url)
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)
    register_providers(database)
    database.engine.dispose()
    if request.param == "local":
        yield local_cli_env(database_url)
        return
    with running_server(database_url) as remote:
        yield remote
