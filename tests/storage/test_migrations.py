"""Alembic is the only schema path; the app refuses a database at any other revision."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from registry.errors import SchemaNotCurrent
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import Base
from registry.storage.schema_version import KNOWN_REVISIONS, SCHEMA_HEAD


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
    assert {"uq_records_kind_name_version", "uq_records_kind_digest"} <= uniques
