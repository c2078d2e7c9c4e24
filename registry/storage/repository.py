"""All SQL for records and their references."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from registry.storage.models import RecordRefRow, RecordRow


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
        return self.session.scalar(
            select(RecordRow).where(RecordRow.kind == kind, RecordRow.digest == digest)
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
        target = aliased(RecordRow)
        rows = self.session.execute(
            select(RecordRefRow.record_id, RecordRefRow.role, target)
            .join(target, target.id == RecordRefRow.target_id)
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

    def latest_of_series(self, kind: str, *, limit: int, offset: int) -> list[RecordRow]:
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

    def evidence_for(self, workload_name: str, provider_name: str) -> list[RecordRow]:
        """Every evidence version measured against any version of both named records."""
        workload_ref = aliased(RecordRefRow)
        provider_ref = aliased(RecordRefRow)
        workload = aliased(RecordRow)
        provider = aliased(RecordRow)
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    workload_ref,
                    (workload_ref.record_id == RecordRow.id) & (workload_ref.role == "workload"),
                )
                .join(workload, workload.id == workload_ref.target_id)
                .join(
                    provider_ref,
                    (provider_ref.record_id == RecordRow.id) & (provider_ref.role == "provider"),
                )
                .join(provider, provider.id == provider_ref.target_id)
                .where(
                    RecordRow.kind == "evidence",
                    workload.name == workload_name,
                    provider.name == provider_name,
                )
                .order_by(RecordRow.name, RecordRow.version)
            )
        )

    def latest_of_kind(self, kind: str) -> list[RecordRow]:
        """The latest version of every name of one kind."""
        latest = (
            select(RecordRow.name.label("name"), func.max(RecordRow.version).label("version"))
            .where(RecordRow.kind == kind)
            .group_by(RecordRow.name)
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
