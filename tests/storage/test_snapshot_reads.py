"""`Database.reading(snapshot=True)`: one snapshot for every statement of the session
(the integrity guard's walk of the chain and its fingerprints of the tables), set with
the BEGIN on PostgreSQL rather than by a statement of its own; other reads keep the
default level, on a connection from the same pool."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from registry.storage.database import Database


def _level(database: Database, snapshot: bool) -> tuple[str, list[str]]:
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(database.engine, "before_cursor_execute", seen)
    try:
        with database.reading(snapshot=snapshot) as session:
            level = str(session.execute(text("SHOW transaction_isolation")).scalar())
    finally:
        event.remove(database.engine, "before_cursor_execute", seen)
    return level, statements


def test_success_a_snapshot_read_is_repeatable_read_without_a_statement_of_its_own(
    database: Database,
) -> None:
    if database.engine.dialect.name != "postgresql":
        # SQLite: one reader holds the database for the session; nothing to set.
        with database.reading(snapshot=True) as session:
            assert session.execute(text("SELECT 1")).scalar() == 1
        return
    database.ensure_schema()  # its own statements, once per Database
    level, statements = _level(database, snapshot=True)
    assert level == "repeatable read"
    assert statements == ["SHOW transaction_isolation"]  # no SET TRANSACTION round trip
    for _ in range(3):  # the pooled connection goes back to the default level
        assert _level(database, snapshot=False)[0] == "read committed"
