"""Records and their references: versions, lookups by name and digest, listings."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.storage.models import (
    RecordRefRow,
    RecordRow,
)
from registry.storage.repository.queries import (
    PROVIDER,
    PROVIDER_REF,
    TARGET,
    WORKLOAD,
    WORKLOAD_REF,
)


class RecordRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def by_version(self, kind: str, name: str, version: int) -> RecordRow | None:
        return self.session.scalar(
            select(RecordRow).where(
                RecordRow.kind == kind, RecordRow.name == name, RecordRow.version == version
            )
        )

    def latest(self, kind: str, name: str) -> RecordRow | None:
        return self.session.scalar(
            select(RecordRow)
            .where(RecordRow.kind == kind, RecordRow.name == name)
            .order_by(RecordRow.version.desc())
            .limit(1)
        )

    def by_digest(self, kind: str, digest: str) -> RecordRow | None:
        """The EARLIEST version with this digest.

        A digest covers the record's name, so every version holding it belongs to one
        series; several do when a revert repeated an earlier version's content. The
        earliest is the one a `sha256:` reference has always meant (pins and references
        taken before the revert point at it) and the one a revert names, so the answer
        never changes as versions are added. storage/sqlite_reads.py asks the same.
        """
        return self.session.scalar(
            select(RecordRow)
            .where(RecordRow.kind == kind, RecordRow.digest == digest)
            .order_by(RecordRow.version)
            .limit(1)
        )

    def by_id(self, record_id: int) -> RecordRow | None:
        return self.session.get(RecordRow, record_id)

    def max_version(self, kind: str, name: str) -> int:
        value = self.session.scalar(
            select(func.max(RecordRow.version)).where(
                RecordRow.kind == kind, RecordRow.name == name
            )
        )
        return int(value or 0)

    def add(self, row: RecordRow, refs: dict[str, int]) -> RecordRow:
        self.session.add(row)
        # Flush now so that a lost version race surfaces inside the unit of work.
        self.session.flush()
        for role, target_id in refs.items():
            self.session.add(RecordRefRow(record_id=row.id, role=role, target_id=target_id))
        self.session.flush()
        return row

    def references(self, record_ids: Sequence[int]) -> dict[int, dict[str, RecordRow]]:
        """For each record id, its pinned references by role."""
        if not record_ids:
            return {}
        rows = self.session.execute(
            select(RecordRefRow.record_id, RecordRefRow.role, TARGET)
            .join(TARGET, TARGET.id == RecordRefRow.target_id)
            .where(RecordRefRow.record_id.in_(record_ids))
        ).all()
        out: dict[int, dict[str, RecordRow]] = {rid: {} for rid in record_ids}
        for record_id, role, row in rows:
            out[record_id][role] = row
        return out

    def count_series(self, kind: str) -> int:
        return int(
            self.session.scalar(
                select(func.count(func.distinct(RecordRow.name))).where(RecordRow.kind == kind)
            )
            or 0
        )

    def latest_of_series(
        self, kind: str, *, limit: int | None = None, offset: int = 0
    ) -> list[RecordRow]:
        """The latest version of each name, ordered by name (versions are 1..latest)."""
        latest = (
            select(
                RecordRow.name.label("name"),
                func.max(RecordRow.version).label("version"),
            )
            .where(RecordRow.kind == kind)
            .group_by(RecordRow.name)
            .order_by(RecordRow.name)
            .limit(limit)
            .offset(offset)
            .subquery()
        )
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    latest,
                    (RecordRow.name == latest.c.name) & (RecordRow.version == latest.c.version),
                )
                .where(RecordRow.kind == kind)
                .order_by(RecordRow.name)
            )
        )

    def versions(self, kind: str, name: str, *, limit: int, offset: int) -> list[RecordRow]:
        return list(
            self.session.scalars(
                select(RecordRow)
                .where(RecordRow.kind == kind, RecordRow.name == name)
                .order_by(RecordRow.version)
                .limit(limit)
                .offset(offset)
            )
        )

    def referencing(self, kind: str, role: str, target_id: int) -> list[RecordRow]:
        """Every version of ``kind`` whose ``role`` reference is the row ``target_id``,
        oldest first."""
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    RecordRefRow,
                    (RecordRefRow.record_id == RecordRow.id) & (RecordRefRow.role == role),
                )
                .where(RecordRow.kind == kind, RecordRefRow.target_id == target_id)
                .order_by(RecordRow.id)
            )
        )

    def evidence_for(self, workload_name: str, provider_name: str) -> list[RecordRow]:
        """Every evidence version measured against any version of both named records."""
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    WORKLOAD_REF,
                    (WORKLOAD_REF.record_id == RecordRow.id) & (WORKLOAD_REF.role == "workload"),
                )
                .join(WORKLOAD, WORKLOAD.id == WORKLOAD_REF.target_id)
                .join(
                    PROVIDER_REF,
                    (PROVIDER_REF.record_id == RecordRow.id) & (PROVIDER_REF.role == "provider"),
                )
                .join(PROVIDER, PROVIDER.id == PROVIDER_REF.target_id)
                .where(
                    RecordRow.kind == "evidence",
                    WORKLOAD.name == workload_name,
                    PROVIDER.name == provider_name,
                )
                .order_by(RecordRow.name, RecordRow.version)
            )
        )
