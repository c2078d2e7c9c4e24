"""Which schema revision this code needs, and the check that refuses any other.

The head is a constant so that every command can check the database without loading
Alembic; tests assert it equals the head of migrations/versions.
"""

from __future__ import annotations

from sqlalchemy import Connection, inspect, text

from registry.errors import SchemaNotCurrent

SCHEMA_HEAD = "0002"
# Every revision this code knows, oldest first: a database at one of them is older.
KNOWN_REVISIONS = ("0001", "0002")


def current_revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def ensure_current(connection: Connection) -> None:
    revision = current_revision(connection)
    if revision == SCHEMA_HEAD:
        return
    if revision is None:
        raise SchemaNotCurrent("the registry database is not initialised: run `capgate db upgrade`")
    if revision in KNOWN_REVISIONS:
        raise SchemaNotCurrent(
            f"the registry database is at schema {revision}, this capgate needs {SCHEMA_HEAD}: "
            "run `capgate db upgrade`"
        )
    raise SchemaNotCurrent(
        f"the registry database is at schema {revision}, newer than this capgate "
        f"({SCHEMA_HEAD}): upgrade capgate"
    )
