"""Reading the audit trail, verifying it and the rows it recorded, and checkpoints."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.audit.acknowledgements import acknowledged_keys, problem_key
from registry.audit.chain import as_utc, event_at
from registry.audit.checkpoint import Checkpoint
from registry.audit.checkpoint import problems as checkpoint_problems
from registry.audit.integrity.compare import verify_registry
from registry.policy.releases import release_problems
from registry.records.views import TrailPage
from registry.storage import keyset
from registry.storage.models import AuditEventRow


class AuditEventView(BaseModel):
    seq: int
    at: datetime
    principal: str
    action: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str


class ChainReport(BaseModel):
    """The chain walked from its first event and every covered row checked against it.

    `events` and `head` are those walked (a checkpoint is taken of them); `problems`
    name the broken links and each row that no event recorded, that its event recorded
    but is gone, or that differs from its event (table, key and what differs).
    """

    events: int
    intact: bool
    problems: list[str]
    head: str | None
    acknowledged: list[str] = Field(
        default=[],
        description="The problems an admin acknowledged (`capgate audit acknowledge`): "
        "still reported, but they no longer quarantine the registry.",
    )
    ungoverned_decisions: int = Field(
        default=0,
        description="Decisions taken before the first approved policy release (not checked "
        "against a release; the registry was not governed yet).",
    )


# Parametrised once: pydantic builds a class per subscription it has not cached.
EventPage = TrailPage[AuditEventView]


def list_events(
    session: Session,
    *,
    action: str | None = None,
    principal: str | None = None,
    seq: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    cursor: str | None = None,
    total: bool = False,
) -> TrailPage[AuditEventView]:
    """Newest first by (at, seq), which is the chain's order: an event's instant never
    precedes its predecessor's (registry.audit.chain.append_event). Every filter
    combination has an index ending in that order (migration 0008)."""
    query = select(AuditEventRow)
    if since is not None:
        query = query.where(AuditEventRow.at >= keyset.bound("since", since))
    before = keyset.bound("until", until) if until is not None else None
    if seq is not None:
        query = query.where(AuditEventRow.seq == seq)
    if action is not None:
        query = query.where(AuditEventRow.action == action)
    if principal is not None:
        query = query.where(AuditEventRow.principal == principal)
    counted = None
    if total:
        whole = query if before is None else query.where(AuditEventRow.at < before)
        counted = int(session.scalar(select(func.count()).select_from(whole.subquery())) or 0)
    # One upper bound, so that the index range ends where the page starts.
    before, position = keyset.upper_bound(before, keyset.decode(cursor, int) if cursor else None)
    if before is not None:
        query = query.where(AuditEventRow.at < before)
    if position is not None:
        query = query.where(keyset.before(AuditEventRow.at, AuditEventRow.seq, position))
    rows = list(
        session.scalars(
            query.order_by(AuditEventRow.at.desc(), AuditEventRow.seq.desc())
            .limit(limit + 1)
            .offset(offset)
        )
    )
    page, next_cursor = keyset.split(rows, limit, lambda row: (row.at, row.seq))
    return EventPage(
        items=[
            AuditEventView(
                seq=row.seq,
                at=as_utc(row.at),
                principal=row.principal,
                action=row.action,
                payload=json.loads(row.payload),
                prev_hash=row.prev_hash,
                hash=row.hash,
            )
            for row in page
        ],
        total=counted,
        limit=limit,
        offset=offset,
        next_cursor=next_cursor,
    )


def verify(session: Session, *, checkpoint: Checkpoint | None = None) -> ChainReport:
    """The whole chain and every covered row; against `checkpoint` too when given (its
    signature already verified: registry.audit.checkpoint.verified)."""
    ledger, problems = verify_registry(session)
    unreleased, ungoverned = release_problems(session)
    problems += unreleased
    if checkpoint is not None:
        at_size = event_at(session, checkpoint.size) if checkpoint.size else None
        problems += checkpoint_problems(
            checkpoint,
            highest=ledger.chain.seq,
            event_at_size=(at_size.seq, at_size.hash) if at_size is not None else None,
        )
    acknowledged = acknowledged_keys(session)
    return ChainReport(
        events=ledger.chain.events,
        intact=not problems,
        problems=problems,
        acknowledged=[p for p in problems if problem_key(p) in acknowledged],
        head=ledger.chain.head if ledger.chain.events else None,
        ungoverned_decisions=ungoverned,
    )
