"""Append-only, hash-chained audit events.

Each event's hash is sha256 over the previous hash and the event's canonical JSON, so
rewriting or dropping any past event breaks every hash after it. What the chain alone
cannot see (a row edited, inserted or deleted beside it, its tail cut, the whole chain
recomputed) is registry.audit.integrity's and registry.audit.checkpoint's business.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.digest import canonical_json, sha256_digest
from registry.storage.models import AuditEventRow

GENESIS = "sha256:" + "0" * 64


def event_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return sha256_digest((prev_hash + canonical_json(body)).encode("utf-8"))


def as_utc(at: datetime) -> datetime:
    """SQLite hands back naive datetimes and PostgreSQL ones in the session's zone."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def event_body(
    seq: int, at: datetime, principal: str, action: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """What an event's hash covers (besides the previous hash)."""
    return {
        "seq": seq,
        "at": as_utc(at).isoformat(),
        "principal": principal,
        "action": action,
        "payload": payload,
    }


class ChainHead(NamedTuple):
    """The chain's last event, as a write read it under the write lock."""

    seq: int
    hash: str
    at: datetime


def append_event(
    session: Session,
    *,
    principal: str,
    action: str,
    payload: dict[str, Any],
    at: datetime,
    head: ChainHead | None = None,
) -> AuditEventRow:
    """Append one event after the chain's last one: `head` when the write has already
    read it in this transaction (under the write lock, so it is still the last), else
    read here."""
    last = (
        head
        or session.execute(
            select(AuditEventRow.seq, AuditEventRow.hash, AuditEventRow.at)
            .order_by(AuditEventRow.seq.desc())
            .limit(1)
        ).first()
    )
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    # The chain's order is its instants' order too (listings sort by (at, seq) on an
    # index): a writer whose clock is behind the last event's stamps that event's instant.
    if last is not None and as_utc(at) < as_utc(last[2]):
        at = as_utc(last[2])
    row = AuditEventRow(
        seq=seq,
        at=at,
        principal=principal,
        action=action,
        payload=canonical_json(payload),
        prev_hash=prev,
        hash=event_hash(prev, event_body(seq, at, principal, action, payload)),
    )
    session.add(row)
    session.flush()
    return row


def parsed_payload(row: AuditEventRow) -> dict[str, Any] | None:
    """The event's payload, or None when it is not a JSON object (it was altered)."""
    try:
        payload = json.loads(row.payload)
    except (json.JSONDecodeError, TypeError):
        return None
    return payload if isinstance(payload, dict) else None


def hash_matches(row: AuditEventRow, payload: dict[str, Any] | None) -> bool:
    if payload is None:
        return False
    body = event_body(row.seq, row.at, row.principal, row.action, payload)
    return event_hash(row.prev_hash, body) == row.hash


@dataclass
class ChainWalk:
    """Where a walk along the chain stands: the last event taken and what was wrong."""

    seq: int = 0
    head: str = GENESIS
    events: int = 0
    problems: list[str] = field(default_factory=list)


Visitor = Callable[[AuditEventRow, dict[str, Any]], None]


def walk(rows: Iterable[AuditEventRow], state: ChainWalk, visit: Visitor | None = None) -> None:
    """Check each event follows `state` (number, predecessor's hash, own hash); advance.

    A broken link is reported and the walk goes on from the event as found, so one
    alteration is one problem, not one per later event. `visit` sees every event whose
    payload is readable (the integrity ledger collects the rows it records).
    """
    for row in rows:
        expected_seq = state.seq + 1
        if row.seq != expected_seq:
            state.problems.append(f"event {expected_seq} is missing (next is {row.seq})")
        if row.prev_hash != state.head:
            state.problems.append(f"event {row.seq} does not follow its predecessor's hash")
        payload = parsed_payload(row)
        if not hash_matches(row, payload):
            state.problems.append(
                f"event {row.seq} was altered: its hash does not match its content"
            )
        if payload is not None and visit is not None:
            visit(row, payload)
        state.seq, state.head = row.seq, row.hash
        state.events += 1


PAGE = 1000


def events_after(session: Session, seq: int) -> Iterator[AuditEventRow]:
    """Events after `seq`, in order, a page of PAGE at a time (a long chain is not held
    in memory). Pages by sequence number, not a server-side cursor: the gate's walk of
    the few events since its last check is one round trip, not a cursor's three."""
    while True:
        page = list(
            session.scalars(
                select(AuditEventRow)
                .where(AuditEventRow.seq > seq)
                .order_by(AuditEventRow.seq)
                .limit(PAGE)
            )
        )
        yield from page
        if len(page) < PAGE:
            return
        # The session's identity map holds rows weakly: a walked page is let go.
        seq = page[-1].seq


def events_at(session: Session, seqs: Iterable[int]) -> dict[int, AuditEventRow]:
    wanted = sorted(set(seqs))
    found: dict[int, AuditEventRow] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        for row in session.scalars(select(AuditEventRow).where(AuditEventRow.seq.in_(chunk))):
            found[row.seq] = row
    return found


def event_at(session: Session, seq: int) -> AuditEventRow | None:
    return session.get(AuditEventRow, seq)


def extent(session: Session) -> tuple[int, int]:
    """(number of events, highest sequence number): equal unless events were deleted."""
    count, highest = session.execute(
        select(func.count(), func.coalesce(func.max(AuditEventRow.seq), 0))
    ).one()
    return int(count), int(highest)


def verify_chain(session: Session) -> list[str]:
    """Problems found walking the chain from the start; empty when it is intact."""
    state = ChainWalk()
    walk(events_after(session, 0), state)
    return state.problems
