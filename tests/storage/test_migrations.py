"""Alembic is the only schema path; the app refuses a database at any other revision."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from registry.errors import SchemaNotCurrent
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import Base
from registry.storage.schema_version import KNOWN_REVISIONS, SCHEMA_HEAD, current_revision


def test_code_head_matches_migrations_head() -> None:
    assert migrate.script_head() == SCHEMA_HEAD == KNOWN_REVISIONS[-1]


def test_fail_unmigrated_database_is_refused(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(SchemaNotCurrent, match=r"not initialised: run `capgate db upgrade`"):
        database.ensure_schema()


def test_fail_newer_schema_is_refused(database: Database) -> None:
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    try:
        with pytest.raises(SchemaNotCurrent, match="newer than this capgate"):
            Database(database.url).ensure_schema()
    finally:  # the PostgreSQL database is shared by the session's tests
        with database.engine.begin() as connection:
            connection.execute(text(f"UPDATE alembic_version SET version_num = '{SCHEMA_HEAD}'"))


def test_downgrade_and_upgrade_round_trip(database: Database) -> None:
    migrate.downgrade(database.url, "base")
    with pytest.raises(SchemaNotCurrent):
        Database(database.url).ensure_schema()
    migrate.upgrade(database.url)
    Database(database.url).ensure_schema()


def test_migrations_create_what_the_models_describe(database: Database) -> None:
    from sqlalchemy import inspect

    inspector = inspect(database.engine)
    for table in Base.metadata.sorted_tables:
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        assert columns == {c.name for c in table.columns}, table.name
    uniques = {u["name"] for u in inspector.get_unique_constraints("records")}
    assert "uq_records_kind_name_version" in uniques
    # A revert repeats an earlier version's digest: indexed, not unique (0004).
    assert "uq_records_kind_digest" not in uniques
    indexes = {i["name"]: i for i in inspector.get_indexes("records")}
    assert indexes["ix_records_kind_digest"]["column_names"] == ["kind", "digest"]
    assert not indexes["ix_records_kind_digest"]["unique"]


def _insert_record(
    connection: Any, record_id: int, version: int, digest: str, **extra: Any
) -> None:
    """A bare workload row in SQL: the ORM model describes the newest schema only."""
    row = {
        "id": record_id,
        "kind": "workload",
        "name": "w",
        "version": version,
        "digest": digest,
        "content": "{}",
        "created_at": datetime(2026, 11, 30, tzinfo=UTC),
        "created_by": "alice",
        **extra,
    }
    connection.execute(
        text(f"INSERT INTO records ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"),
        row,
    )


def test_reverts_migration_keeps_records_their_references_and_refuses_a_lossy_downgrade(
    database: Database,
) -> None:
    """0003 -> 0004 with rows that other tables reference (SQLite copies the table), and
    back down only while no two versions share a digest."""
    first, second = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    migrate.downgrade(database.url, "0003")
    try:
        with database.engine.begin() as connection:
            _insert_record(connection, 1, 1, first)
            _insert_record(connection, 2, 2, second)
            connection.execute(
                text("INSERT INTO record_refs (record_id, role, target_id) VALUES (2, 'w', 1)")
            )
        migrate.upgrade(database.url)
        with database.engine.begin() as connection:
            rows = connection.execute(
                text("SELECT id, version, digest, reverts_version FROM records ORDER BY id")
            ).all()
            refs = connection.execute(text("SELECT record_id, role, target_id FROM record_refs"))
            assert [tuple(r) for r in rows] == [(1, 1, first, None), (2, 2, second, None)]
            assert [tuple(r) for r in refs] == [(2, "w", 1)]
            _insert_record(connection, 3, 3, first, reverts_version=1)
        migrate.downgrade(database.url, "0004")  # later schemas drop only their own tables
        with pytest.raises(RuntimeError, match="1 record version\\(s\\) are reverts"):
            migrate.downgrade(database.url, "0003")
        with database.engine.connect() as connection:  # the refused downgrade changed nothing
            assert current_revision(connection) == "0004"
        with database.engine.begin() as connection:
            connection.execute(text("DELETE FROM records WHERE id = 3"))
        migrate.downgrade(database.url, "0003")
        with database.engine.begin() as connection, pytest.raises(IntegrityError):
            _insert_record(connection, 3, 3, first)  # 0003's unique digest is back
    finally:
        migrate.upgrade(database.url)
        with database.engine.begin() as connection:  # the PostgreSQL database is shared
            connection.execute(text("DELETE FROM record_refs"))
            connection.execute(text("DELETE FROM records"))
