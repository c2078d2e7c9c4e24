"""Read-only record lookups on the embedded SQLite registry, without SQLAlchemy.

`capgate plan show` must start in under 0.3 s, and importing SQLAlchemy alone takes
0.16 to 0.24 s on the machines capgate is built on. A single-record read on the local
SQLite file therefore goes through the standard library's sqlite3 with the same
queries as `RecordRepository` (tests/storage/test_sqlite_reads.py holds the two to the
same answers). Everything else, and every write, goes through SQLAlchemy.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from registry.errors import NotFound, Tampered, Unavailable
from registry.records.kinds import RecordKind
from registry.records.references import parse_ref, pinned
from registry.records.views import RecordView
from registry.storage.schema_version import check_revision
from registry.storage.sqlite_reads import read_only_uri

_COLUMNS = "id, name, version, digest, content, created_at, created_by, reverts_version"


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class SqliteReads:
    def __init__(self, path: Path) -> None:
        try:
            # Read-only: this path never writes, and must not create a missing file
            # (nor WAL files beside it: the registry may sit on a read-only filesystem).
            self.connection = sqlite3.connect(read_only_uri(path), uri=True, timeout=30)
        except sqlite3.Error as exc:
            raise Unavailable(
                f"cannot reach the registry database (sqlite:///{path}): {exc}"
            ) from None

    def close(self) -> None:
        self.connection.close()

    def check_schema(self) -> None:
        has_table = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
        ).fetchone()
        revision = None
        if has_table:
            row = self.connection.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = row[0] if row else None
        check_revision(revision)

    def get(self, kind: RecordKind, ref_text: str) -> RecordView:
        self.check_schema()
        ref = parse_ref(ref_text, loc="ref")
        query = f"SELECT {_COLUMNS} FROM records WHERE kind = ?"
        if ref.digest is not None:
            # The earliest version holding the digest, as RecordRepository.by_digest.
            row = self.connection.execute(
                f"{query} AND digest = ? ORDER BY version LIMIT 1", (kind.value, ref.digest)
            )
        elif ref.version is not None:
            row = self.connection.execute(
                f"{query} AND name = ? AND version = ?", (kind.value, ref.name, ref.version)
            )
        else:
            row = self.connection.execute(
                f"{query} AND name = ? ORDER BY version DESC LIMIT 1", (kind.value, ref.name)
            )
        found = row.fetchone()
        if found is None:
            raise NotFound(f"no {kind.value} record {ref}", details={"loc": "ref", "ref": str(ref)})
        record_id, name, version, digest, content, created_at, created_by, reverts = found
        references = {
            role: pinned(target_name, target_version)
            for role, target_name, target_version in self.connection.execute(
                "SELECT r.role, t.name, t.version FROM record_refs r "
                "JOIN records t ON t.id = r.target_id WHERE r.record_id = ? ORDER BY r.role",
                (record_id,),
            )
        }
        # The same re-hash as every other read (registry.records.service.check_intact):
        # content edited in the file is never shown under the digest it was registered with.
        if hashlib.sha256(content.encode("utf-8")).hexdigest() != digest.removeprefix("sha256:"):
            raise Tampered(
                f"stored {kind.value} record {pinned(name, version)} was altered: its content "
                f"does not hash to its digest {digest}"
            )
        try:
            data = json.loads(content)
        except json.JSONDecodeError as exc:
            raise Unavailable(
                f"stored {kind.value} record {pinned(name, version)} cannot be read: {exc.msg}"
            ) from None
        return RecordView(
            kind=kind,
            name=name,
            version=version,
            ref=pinned(name, version),
            digest=digest,
            created_at=_utc(created_at),
            created_by=created_by,
            references=references,
            content=data,
            reverts=None if reverts is None else pinned(name, reverts),
        )
