"""Which schema revision this code needs, and the check that refuses any other.

The head is a constant so that every command can check the database without loading
Alembic; tests assert it equals the head of migrations/versions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.errors import SchemaNotCurrent

if TYPE_CHECKING:
    from sqlalchemy import Connection

SCHEMA_HEAD = "0010"
# Every revision this code knows, oldest first: a database at one of them is older.
KNOWN_REVISIONS = ("0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009", "0010")


def current_revision(connection: Connection) -> str | None:
    from sqlalchemy import inspect, text

    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def ensure_current(connection: Connection) -> None:
    check_revision(current_revision(connection))


def check_revision(revision: str | None) -> None:
    """Raise with one actionable line unless `revision` is exactly this code's schema."""
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
