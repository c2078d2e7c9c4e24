"""`capgate db upgrade|current`: the only way the registry's schema changes."""

from __future__ import annotations

from typing import Annotated

import typer

db_app = typer.Typer(
    help="Manage the registry database schema (Alembic migrations).", no_args_is_help=True
)

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        envvar="CAPGATE_DATABASE_URL",
        help="SQLAlchemy URL; default: a SQLite file in your data directory.",
    ),
]


def _url(url: str | None) -> str:
    from registry.settings import default_database_url

    return url or default_database_url()


@db_app.command("upgrade")
def upgrade(database_url: UrlOpt = None, revision: str = "head") -> None:
    """Apply migrations up to REVISION (default: the latest)."""
    from registry.storage import migrate
    from registry.storage.database import Database

    url = _url(database_url)
    # Create the SQLite file's folder and check reachability before Alembic starts.
    Database(url).engine.dispose()
    migrate.upgrade(url, revision)
    typer.echo(f"registry schema at {revision if revision != 'head' else migrate.script_head()}")


@db_app.command("current")
def current(database_url: UrlOpt = None) -> None:
    """Print the schema revision of the database and whether it is current."""
    from registry.storage.database import Database
    from registry.storage.schema_version import SCHEMA_HEAD, current_revision

    database = Database(_url(database_url))
    with database.engine.connect() as connection:
        revision = current_revision(connection)
    state = "current" if revision == SCHEMA_HEAD else f"this capgate needs {SCHEMA_HEAD}"
    typer.echo(f"{revision or 'uninitialised'} ({state})")
