"""Evidence lifecycle: withdrawals and raw-file digests."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.storage.models import (
    EvidenceRawDigestRow,
    RecordRow,
    WithdrawalRow,
)


class EvidenceLifecycleRepository:
    """SQL for the raw-file digests evidence claims and for evidence withdrawals."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add_raw_digests(self, record_id: int, digests: Sequence[str]) -> None:
        for digest in sorted(set(digests)):
            self.session.add(EvidenceRawDigestRow(record_id=record_id, sha256=digest))
        self.session.flush()

    def measured_from(self, digests: Sequence[str]) -> list[tuple[str, RecordRow]]:
        """(digest, evidence) for every evidence version claiming one of `digests`, oldest
        first. Withdrawn versions count too: withdrawing a record does not change what its
        raw file was measured against."""
        if not digests:
            return []
        query = (
            select(EvidenceRawDigestRow.sha256, RecordRow)
            .join(RecordRow, RecordRow.id == EvidenceRawDigestRow.record_id)
            .where(EvidenceRawDigestRow.sha256.in_(sorted(set(digests))))
            .order_by(RecordRow.id, EvidenceRawDigestRow.sha256)
        )
        return [(row[0], row[1]) for row in self.session.execute(query).all()]

    def add_withdrawal(self, row: WithdrawalRow) -> WithdrawalRow:
        self.session.add(row)
        # Flush now: a concurrent withdrawal of the same version fails here, inside the unit.
        self.session.flush()
        return row

    def withdrawals_of(self, record_ids: Sequence[int]) -> dict[int, WithdrawalRow]:
        """The withdrawal of each given evidence id that has one."""
        if not record_ids:
            return {}
        rows = self.session.scalars(
            select(WithdrawalRow).where(WithdrawalRow.evidence_record_id.in_(record_ids))
        )
        return {row.evidence_record_id: row for row in rows}

    def withdrawals(
        self, *, limit: int, offset: int
    ) -> tuple[list[tuple[WithdrawalRow, RecordRow]], int]:
        """Withdrawals, newest first, with the evidence version each withdrew."""
        total = self.session.scalar(select(func.count()).select_from(WithdrawalRow)) or 0
        rows = self.session.execute(
            select(WithdrawalRow, RecordRow)
            .join(RecordRow, RecordRow.id == WithdrawalRow.evidence_record_id)
            .order_by(WithdrawalRow.withdrawn_at.desc(), WithdrawalRow.id.desc())
            .limit(limit)
            .offset(offset)
        ).all()
        return [(w, r) for w, r in rows], int(total)


# ---- integrity: the stored rows the audit trail is checked against ----------------------
