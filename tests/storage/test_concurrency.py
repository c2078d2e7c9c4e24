"""Parallel writers: the database constraint, not luck, keeps versions unique."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from registry.audit.chain import verify_chain
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database
from tests.factories import example

WRITERS = 8


def _race(database_url: str, descriptions: list[str]) -> list[SubmitResult]:
    """Each writer has its own engine (as separate processes would) and starts together."""
    barrier = threading.Barrier(len(descriptions))

    def writer(description: str) -> SubmitResult:
        database = Database(database_url)
        record = validate_record(RecordKind.workload, example("workload", description=description))
        database.ensure_schema()
        barrier.wait()
        try:
            return database.write(
                lambda ctx: service.submit(ctx, kind=RecordKind.workload, record=record),
                principal=f"writer-{description}",
            )
        finally:
            database.engine.dispose()

    with ThreadPoolExecutor(max_workers=len(descriptions)) as pool:
        return list(pool.map(writer, descriptions))


def test_parallel_writers_never_share_a_version(database_url: str) -> None:
    results = _race(database_url, [f"rev {i}" for i in range(WRITERS)])
    versions = sorted(r.record.version for r in results)
    assert versions == list(range(1, WRITERS + 1))
    assert all(r.created for r in results)
    database = Database(database_url)
    with database.reading() as session:
        assert verify_chain(session) == []
        page = service.list_versions(session, kind=RecordKind.workload, name="chat-assistant")
    assert page.total == WRITERS
    assert len({v.digest for v in page.items}) == WRITERS
    database.engine.dispose()


def test_parallel_identical_submissions_make_one_version(database_url: str) -> None:
    results = _race(database_url, ["same"] * WRITERS)
    assert {r.record.ref for r in results} == {"chat-assistant@v1"}
    assert sum(r.created for r in results) == 1
