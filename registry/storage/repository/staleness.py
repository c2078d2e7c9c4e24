"""Staleness: the evidence a change makes stale, and the stale marks stored."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from registry.storage.models import (
    RecordRefRow,
    RecordRow,
    StalenessRow,
)
from registry.storage.repository.queries import (
    CAUSE,
    EVIDENCE,
    MEASURED,
    PINNED,
    is_latest,
    measured_at_text,
)


class StalenessRepository:
    """All SQL for staleness records and the evidence they point at."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def latest_evidence_pinned_before(
        self, role: str, target: RecordRow, *, inclusive: bool = False
    ) -> list[tuple[RecordRow, RecordRow]]:
        """(evidence, pinned version) for the latest version of each evidence name whose
        `role` reference points at an older version of `target`'s series (or at `target`
        itself too, when ``inclusive``)."""
        rows = self.session.execute(
            select(EVIDENCE, PINNED)
            .join(
                RecordRefRow, (RecordRefRow.record_id == EVIDENCE.id) & (RecordRefRow.role == role)
            )
            .join(PINNED, PINNED.id == RecordRefRow.target_id)
            .where(
                EVIDENCE.kind == "evidence",
                PINNED.kind == target.kind,
                PINNED.name == target.name,
                PINNED.version <= target.version if inclusive else PINNED.version < target.version,
                is_latest(EVIDENCE),
            )
            .order_by(EVIDENCE.name)
        ).all()
        return [(row[0], row[1]) for row in rows]

    def exists(self, evidence_id: int, cause_id: int) -> bool:
        found = self.session.scalar(
            select(StalenessRow.id).where(
                StalenessRow.evidence_record_id == evidence_id,
                StalenessRow.cause_record_id == cause_id,
            )
        )
        return found is not None

    def add(self, row: StalenessRow) -> StalenessRow:
        self.session.add(row)
        self.session.flush()
        return row

    def history(
        self, evidence_ids: Sequence[int]
    ) -> dict[int, list[tuple[StalenessRow, RecordRow, RecordRow]]]:
        """For each evidence id: (staleness, cause, measured) in the order detected."""
        out: dict[int, list[tuple[StalenessRow, RecordRow, RecordRow]]] = {
            rid: [] for rid in evidence_ids
        }
        if not evidence_ids:
            return out
        rows = self.session.execute(
            select(StalenessRow, CAUSE, MEASURED)
            .join(CAUSE, CAUSE.id == StalenessRow.cause_record_id)
            .join(MEASURED, MEASURED.id == StalenessRow.measured_record_id)
            .where(StalenessRow.evidence_record_id.in_(evidence_ids))
            .order_by(StalenessRow.detected_at, StalenessRow.id)
        ).all()
        for staleness, cause_row, measured_row in rows:
            out[staleness.evidence_record_id].append((staleness, cause_row, measured_row))
        return out

    def staled_evidence(self, *, latest_only: bool) -> list[tuple[int, str, int, str | None]]:
        """(id, name, version, measured_at text) of evidence with staleness records."""
        query = select(
            RecordRow.id,
            RecordRow.name,
            RecordRow.version,
            measured_at_text(self.session, RecordRow),
        ).where(
            RecordRow.kind == "evidence",
            exists().where(StalenessRow.evidence_record_id == RecordRow.id),
        )
        if latest_only:
            query = query.where(is_latest(RecordRow))
        return [(r[0], r[1], r[2], r[3]) for r in self.session.execute(query).all()]

    def latest_evidence_measured_at(self) -> list[tuple[int, str, int, str | None]]:
        """(id, name, version, measured_at text) of the latest version of each evidence."""
        query = select(
            RecordRow.id,
            RecordRow.name,
            RecordRow.version,
            measured_at_text(self.session, RecordRow),
        ).where(RecordRow.kind == "evidence", is_latest(RecordRow))
        return [(r[0], r[1], r[2], r[3]) for r in self.session.execute(query).all()]

    def records_by_id(self, record_ids: Sequence[int]) -> dict[int, RecordRow]:
        if not record_ids:
            return {}
        rows = self.session.scalars(select(RecordRow).where(RecordRow.id.in_(record_ids)))
        return {row.id: row for row in rows}


# ---- evidence lifecycle: raw digests and withdrawals -------------------------------------
