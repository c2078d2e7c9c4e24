"""The CLI's SQLite read path answers exactly as the SQLAlchemy repository does."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from registry.errors import InvalidInput, NotFound, SchemaNotCurrent
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.sqlite_reads import SqliteReads
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.sqlite_reads import sqlite_path
from tests.factories import example


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Database:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    for kind, document in (
        ("workload", example("workload")),
        ("provider", example("provider")),
        ("plan", example("plan")),
        ("workload", example("workload", description="second version")),
        ("plan", example("plan", workload="chat-assistant", description="on v2")),
    ):
        record = validate_record(RecordKind(kind), document)
        database.write(
            lambda ctx, k=RecordKind(kind), r=record: service.submit(ctx, kind=k, record=r),
            principal="alice",
        )
    return database


def reads_of(database: Database) -> SqliteReads:
    path = sqlite_path(database.url)
    assert path is not None
    return SqliteReads(path)


def test_same_views_for_every_form_of_reference(sqlite_db: Database) -> None:
    with sqlite_db.reading() as session:
        digest = service.get(session, kind=RecordKind.plan, ref="chat-assistant-prod@v1").digest
    refs = [
        (RecordKind.plan, "chat-assistant-prod"),
        (RecordKind.plan, "chat-assistant-prod@v1"),
        (RecordKind.plan, digest),
        (RecordKind.workload, "chat-assistant"),
        (RecordKind.provider, "llama31-8b-h100-vllm@v1"),
    ]
    reads = reads_of(sqlite_db)
    for kind, ref in refs:
        with sqlite_db.reading() as session:
            expected = service.get(session, kind=kind, ref=ref)
        assert reads.get(kind, ref) == expected, ref
    reads.close()


def test_same_errors(sqlite_db: Database) -> None:
    reads = reads_of(sqlite_db)
    for ref, error in (("missing", NotFound), ("missing@v3", NotFound), ("Bad Ref", InvalidInput)):
        with sqlite_db.reading() as session, pytest.raises(error) as expected:
            service.get(session, kind=RecordKind.plan, ref=ref)
        with pytest.raises(error) as got:
            reads.get(RecordKind.plan, ref)
        assert str(got.value) == str(expected.value)
    reads.close()


def test_refuses_a_database_at_another_schema(sqlite_db: Database) -> None:
    with sqlite_db.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    reads = reads_of(sqlite_db)
    with pytest.raises(SchemaNotCurrent, match="run `capgate db upgrade`"):
        reads.get(RecordKind.plan, "chat-assistant-prod")
    reads.close()


def test_only_plain_sqlite_file_urls() -> None:
    assert sqlite_path("sqlite:////var/lib/capgate/registry.db") == Path(
        "/var/lib/capgate/registry.db"
    )
    assert sqlite_path("postgresql+psycopg://u:p@h/db") is None
    assert sqlite_path("sqlite:///file.db?mode=memory") is None
