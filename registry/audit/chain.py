"""Append-only, hash-chained audit events.

Each event's hash is sha256 over the previous hash and the event's canonical JSON, so
rewriting or dropping any past event breaks every hash after it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.digest import canonical_json, sha256_digest
from registry.storage.models import AuditEventRow

GENESIS = "sha256:" + "0" * 64


def event_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return sha256_digest((prev_hash + canonical_json(body)).encode("utf-8"))


def as_utc(at: datetime) -> datetime:
    """SQLite hands back naive datetimes and PostgreSQL ones in the session's zone."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _body(
    seq: int, at: datetime, principal: str, action: str, payload: dict[str, Any]
) -> dict[str, Any]:
    return {
        "seq": seq,
        "at": as_utc(at).isoformat(),
        "principal": principal,
        "action": action,
        "payload": payload,
    }


def append_event(
    session: Session, *, principal: str, action: str, payload: dict[str, Any], at: datetime
) -> AuditEventRow:
    last = session.execute(
        select(AuditEventRow.seq, AuditEventRow.hash).order_by(AuditEventRow.seq.desc()).limit(1)
    ).first()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    row = AuditEventRow(
        seq=seq,
        at=at,
        principal=principal,
        action=action,
        payload=canonical_json(payload),
        prev_hash=prev,
        hash=event_hash(prev, _body(seq, at, principal, action, payload)),
    )
    session.add(row)
    session.flush()
    return row


def verify_chain(session: Session) -> list[str]:
    """Problems found walking the chain from the start; empty when it is intact."""
    problems: list[str] = []
    prev = GENESIS
    expected_seq = 1
    for row in session.scalars(select(AuditEventRow).order_by(AuditEventRow.seq)):
        if row.seq != expected_seq:
            problems.append(f"event {expected_seq} is missing (next is {row.seq})")
        if row.prev_hash != prev:
            problems.append(f"event {row.seq} does not follow its predecessor's hash")
        body = _body(row.seq, row.at, row.principal, row.action, json.loads(row.payload))
        if event_hash(row.prev_hash, body) != row.hash:
            problems.append(f"event {row.seq} was altered: its hash does not match its content")
        prev = row.hash
        expected_seq = row.seq + 1
    return problems
