"""Writers under contention, readers beside writers, and read-only registries.

32 writers on one series must all succeed, with versions 1..32 and an intact audit
chain, on both databases; a reader holding a transaction open must not hold up a
writer; a SQLite registry that cannot be written can still be read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from registry.audit.chain import verify_chain
from registry.errors import Unavailable
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.sqlite_reads import SqliteReads
from registry.records.views import SubmitResult
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import AuditEventRow
from tests.cli.test_cli import capgate
from tests.factories import example

WRITERS = 32


def _submit(database: Database, description: str) -> SubmitResult:
    record = validate_record(RecordKind.workload, example("workload", description=description))
    return database.write(
        lambda ctx: service.submit(ctx, kind=RecordKind.workload, record=record),
        principal=f"writer-{description}",
    )


def test_32_writers_on_one_series_all_succeed(database_url: str) -> None:
    """Each writer has its own engine (as separate processes would) and starts together."""
    barrier = threading.Barrier(WRITERS)

    def writer(index: int) -> SubmitResult:
        database = Database(database_url)
        database.ensure_schema()
        barrier.wait()
        try:
            return _submit(database, f"rev {index}")
        finally:
            database.engine.dispose()

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        results = list(pool.map(writer, range(WRITERS)))  # any error is raised here

    assert sorted(r.record.version for r in results) == list(range(1, WRITERS + 1))
    assert all(r.created for r in results)
    database = Database(database_url)
    try:
        with database.reading() as session:
            assert verify_chain(session) == []
            seqs = session.scalars(select(AuditEventRow.seq).order_by(AuditEventRow.seq)).all()
            page = service.list_versions(
                session, kind=RecordKind.workload, name="chat-assistant", limit=100, offset=0
            )
        assert list(seqs) == list(range(1, len(seqs) + 1))
        assert len(seqs) >= WRITERS
        assert page.total == WRITERS
        assert len({v.digest for v in page.items}) == WRITERS
    finally:
        database.engine.dispose()


def test_an_open_read_does_not_block_a_writer(database: Database) -> None:
    _submit(database, "before the read")
    with database.reading() as session:
        # The read transaction is open (and on SQLite holds its WAL snapshot).
        before = session.scalar(select(func.count()).select_from(AuditEventRow))
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(_submit, database, "during the read").result(timeout=5)
        elapsed = time.monotonic() - started
        assert elapsed < 1.0, f"the writer waited {elapsed:.2f} s for an open read"
        assert before is not None
    with database.reading() as session:
        assert session.scalar(select(func.count()).select_from(AuditEventRow)) == before + 1
        assert verify_chain(session) == []


@pytest.fixture
def sqlite_registry(tmp_path: Path) -> Iterator[Path]:
    """A SQLite registry holding one workload and its audit event, closed cleanly."""
    path = tmp_path / "source" / "registry.db"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    database = Database(url)
    _submit(database, "kept")
    database.engine.dispose()
    yield path


def _assert_readable_not_writable(database: Database) -> None:
    assert database.read_only
    with database.reading() as session:
        assert verify_chain(session) == []
        view = service.get(session, kind=RecordKind.workload, ref="chat-assistant")
    assert view.version == 1
    with pytest.raises(Unavailable, match="read-only"):
        _submit(database, "refused")


def test_mode_ro_url_opens_read_only(sqlite_registry: Path) -> None:
    database = Database(f"sqlite:///{sqlite_registry}?mode=ro")
    try:
        _assert_readable_not_writable(database)
    finally:
        database.engine.dispose()
    forced = Database(f"sqlite:///{sqlite_registry}", read_only=True)
    try:
        _assert_readable_not_writable(forced)
    finally:
        forced.engine.dispose()


@pytest.fixture
def read_only_mount(sqlite_registry: Path, tmp_path: Path) -> Iterator[Path]:
    """The registry's directory bind-mounted read-only: not writable even for root."""
    mount = shutil.which("mount")
    target = tmp_path / "read-only"
    target.mkdir()
    if mount is None:
        pytest.skip("no mount command")
    bound = subprocess.run([mount, "--bind", str(sqlite_registry.parent), str(target)], check=False)
    if bound.returncode != 0:
        pytest.skip("cannot bind-mount here (needs root or CAP_SYS_ADMIN)")
    try:
        remount = [mount, "-o", "remount,bind,ro", str(target)]
        if subprocess.run(remount, check=False).returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield target / sqlite_registry.name
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_registry_on_a_read_only_filesystem_is_read_not_written(read_only_mount: Path) -> None:
    url = f"sqlite:///{read_only_mount}"
    database = Database(url)  # detected: nothing asks for read-only
    try:
        _assert_readable_not_writable(database)
        assert database.read_only_reason == "its filesystem is mounted read-only"
    finally:
        database.engine.dispose()

    reads = SqliteReads(read_only_mount)
    try:
        assert reads.get(RecordKind.workload, "chat-assistant").version == 1
    finally:
        reads.close()

    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=url, CAPGATE_PRINCIPAL="alice")
    shown = capgate("workload", "show", "chat-assistant", env=env)
    assert shown.returncode == 0, shown.stderr
    verified = capgate("audit", "verify", env=env)
    assert verified.returncode == 0, verified.stderr
    listed = capgate("workload", "list", env=env)
    assert listed.returncode == 0, listed.stderr

    workload = read_only_mount.parent.parent / "workload.json"
    workload.write_text(json.dumps(example("workload", description="refused")), encoding="utf-8")
    refused = capgate("workload", "submit", str(workload), env=env)
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    assert "read-only" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
