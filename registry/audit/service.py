"""Reading the audit trail and verifying its hash chain."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc, verify_chain
from registry.records.views import Page
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
    events: int
    intact: bool
    problems: list[str]
    head: str | None


def list_events(
    session: Session,
    *,
    action: str | None = None,
    principal: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Page[AuditEventView]:
    query = select(AuditEventRow)
    if action is not None:
        query = query.where(AuditEventRow.action == action)
    if principal is not None:
        query = query.where(AuditEventRow.principal == principal)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(query.order_by(AuditEventRow.seq.desc()).limit(limit).offset(offset))
    return Page[AuditEventView](
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
            for row in rows
        ],
        total=int(total),
        limit=limit,
        offset=offset,
    )


def verify(session: Session) -> ChainReport:
    problems = verify_chain(session)
    count = session.scalar(select(func.count()).select_from(AuditEventRow)) or 0
    head = session.scalar(select(AuditEventRow.hash).order_by(AuditEventRow.seq.desc()).limit(1))
    return ChainReport(events=int(count), intact=not problems, problems=problems, head=head)
