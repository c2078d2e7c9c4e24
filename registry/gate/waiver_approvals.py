"""Four eyes on waivers: requested by one principal, effective once another approves.

The request is the waiver record (its version's `created_by`); the approval is a row
of its own, inserted once. Approving your own request is refused, whatever your roles:
an exception to a policy needs a second person to agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.audit.rows import ROWS_KEY, settle, waiver_approval_entry
from registry.errors import Conflict, Forbidden
from registry.records.kinds import RecordKind
from registry.records.references import pinned
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow, WaiverApprovalRow
from registry.storage.repository import RecordRepository


class WaiverApproval(BaseModel):
    waiver: str  # name@vN
    digest: str
    requested_by: str
    approved_by: str
    approved_at: datetime
    comment: str | None


def _view(row: WaiverApprovalRow, waiver: RecordRow) -> WaiverApproval:
    return WaiverApproval(
        waiver=pinned(waiver.name, waiver.version),
        digest=waiver.digest,
        requested_by=waiver.created_by,
        approved_by=row.approved_by,
        approved_at=as_utc(row.approved_at),
        comment=row.comment,
    )


def approvals_of(session: Session, waiver_ids: Sequence[int]) -> dict[int, WaiverApprovalRow]:
    if not waiver_ids:
        return {}
    rows = session.scalars(
        select(WaiverApprovalRow).where(WaiverApprovalRow.waiver_record_id.in_(waiver_ids))
    )
    return {row.waiver_record_id: row for row in rows}


def approve(ctx: WriteContext, *, ref: str, comment: str | None) -> WaiverApproval:
    from registry.records.service import resolve

    waiver = resolve(RecordRepository(ctx.session), RecordKind.waiver, ref, loc="ref")
    earlier = approvals_of(ctx.session, [waiver.id]).get(waiver.id)
    if earlier is not None:
        raise Conflict(
            f"waiver {pinned(waiver.name, waiver.version)} was already approved by "
            f"{earlier.approved_by}"
        )
    if waiver.created_by == ctx.principal:
        raise Forbidden(
            f"{ctx.principal} requested waiver {pinned(waiver.name, waiver.version)} and may "
            "not approve it too: a different approver must"
        )
    row = WaiverApprovalRow(
        waiver_record_id=waiver.id,
        approved_by=ctx.principal,
        approved_at=ctx.now,
        comment=comment,
    )
    ctx.session.add(row)
    settle(ctx.session, row)
    done = _view(row, waiver)
    ctx.record_event(
        "waiver.approve",
        {
            "kind": "waiver",
            "ref": done.waiver,
            "digest": done.digest,
            "requested_by": done.requested_by,
            "comment": comment,
            ROWS_KEY: [waiver_approval_entry(row)],
        },
    )
    return done


def approval_of(session: Session, *, ref: str) -> WaiverApproval | None:
    from registry.records.service import resolve

    waiver = resolve(RecordRepository(session), RecordKind.waiver, ref, loc="ref")
    row = approvals_of(session, [waiver.id]).get(waiver.id)
    return None if row is None else _view(row, waiver)


def pending(session: Session) -> list[str]:
    """The latest version of each waiver series that nobody has approved yet."""
    rows = RecordRepository(session).latest_of_series(RecordKind.waiver.value)
    approved = approvals_of(session, [row.id for row in rows])
    return [pinned(row.name, row.version) for row in rows if row.id not in approved]
