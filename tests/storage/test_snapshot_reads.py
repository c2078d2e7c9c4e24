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


def test_success_every_whole_registry_verification_reads_one_snapshot(
    database: Database, monkeypatch: Any
) -> None:
    """`capgate audit verify` (here its local backend) and the guard's walks verify in
    one snapshot: a write committing meanwhile cannot show a row whose event they did not
    walk. (The session used to be asked for it after it had begun, which did nothing.)"""
    import registry.audit.service as service
    from cli.backend import LocalBackend
    from registry.audit.integrity.feeds import Feeds
    from registry.audit.integrity.guard import Guard

    levels: list[str] = []
    real = service.verify_registry

    def noted(session: Any) -> Any:
        noted_level(session)
        return real(session)

    walk = Guard._chain

    def walked(self: Guard, session: Any, *args: Any, **kwargs: Any) -> Any:
        noted_level(session)
        return walk(self, session, *args, **kwargs)

    def noted_level(session: Any) -> None:
        if session.get_bind().dialect.name == "postgresql":
            levels.append(str(session.execute(text("SHOW transaction_isolation")).scalar()))

    monkeypatch.setattr(service, "verify_registry", noted)
    monkeypatch.setattr(Guard, "_chain", walked)
    assert LocalBackend(database.url, "auditor").audit_verify().intact
    guard = Guard()
    guard.check_chain(database)
    guard.check_feeds(database, Feeds(record_ids=frozenset()))
    expected = 3 if database.engine.dialect.name == "postgresql" else 0
    assert levels == ["repeatable read"] * expected
