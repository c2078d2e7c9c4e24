"""Where the audit trail recorded what a report shows: the event of a decision, of a
recomputation and of each record version.

Each lookup is one range scan on the (action, at, seq) index (migration 0008): the event
was appended in the transaction that stored the row, at the row's own instant or, when
the writer's clock was behind the chain, the previous event's (never earlier). Its payload
is read back and must name the row; the event's hash is recomputed from its content and
the previous hash (the chain as a whole is `capgate audit verify`'s business).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc, hash_matches, parsed_payload
from registry.digest import canonical_json
from registry.storage.models import AuditEventRow


@dataclass(frozen=True)
class TrailEvent:
    seq: int
    at: datetime
    principal: str
    action: str
    hash: str
    prev_hash: str
    hash_matches: bool  # the event's hash recomputed from its content and prev_hash


def _find(
    session: Session, *, action: str, since: datetime, key: str, value: str
) -> TrailEvent | None:
    """The first `action` event at or after `since` whose payload has ``key: value``."""
    needle = canonical_json({key: value})[1:-1]  # "key":"value", as the payload stores it
    rows = session.scalars(
        select(AuditEventRow)
        .where(
            AuditEventRow.action == action,
            AuditEventRow.at >= as_utc(since),
            AuditEventRow.payload.contains(needle, autoescape=True),
        )
        .order_by(AuditEventRow.at, AuditEventRow.seq)
        .limit(5)
    )
    for row in rows:
        payload = parsed_payload(row)
        if payload is not None and payload.get(key) == value:
            return TrailEvent(
                seq=row.seq,
                at=as_utc(row.at),
                principal=row.principal,
                action=row.action,
                hash=row.hash,
                prev_hash=row.prev_hash,
                hash_matches=hash_matches(row, payload),
            )
    return None


def decision_event(session: Session, decision_id: str, created_at: datetime) -> TrailEvent | None:
    return _find(session, action="gate.check", since=created_at, key="decision", value=decision_id)


def recomputation_event(session: Session, digest: str, created_at: datetime) -> TrailEvent | None:
    return _find(session, action="plan.recompute", since=created_at, key="digest", value=digest)


def record_event(session: Session, kind: str, ref: str, created_at: datetime) -> TrailEvent | None:
    """The `<kind>.submit` event that stored record version ``ref`` (name@vN)."""
    return _find(session, action=f"{kind}.submit", since=created_at, key="ref", value=ref)
