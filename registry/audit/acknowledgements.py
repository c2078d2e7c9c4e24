"""Integrity problems an admin acknowledged: known, repaired as far as they can be.

Some damage cannot be undone (a deleted audit event stays missing: its hash is gone),
so `capgate audit verify` would report it forever and the gate, which refuses to decide
while the registry fails its integrity check, would never decide again. An admin who
has looked into it acknowledges the problems verify reports *now*, with a reason, in an
audit event:

    {"reason": "...", "problems": [...], "keys": [...], "events": N, "head": "sha256:..."}

From then on the gate ignores exactly those problems (by their key: the problem's text
without the figures that grow with the chain); any other problem still quarantines.
`audit verify` keeps reporting them, marked acknowledged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.storage.models import AuditEventRow

ACKNOWLEDGE = "audit.acknowledge"

# "the chain holds 57 events numbered up to 58: 1 were deleted": the counts grow with
# every event appended, the number deleted does not.
_DELETED = re.compile(r"^the chain holds \d+ events numbered up to \d+: (\d+) were deleted$")


def problem_key(problem: str) -> str:
    """What identifies a problem across checks (see the module text)."""
    deleted = _DELETED.match(problem)
    return f"{deleted[1]} events were deleted" if deleted else problem


def acknowledged_keys(session: Session) -> frozenset[str]:
    """The keys of every acknowledged problem (a few indexed rows: one per acknowledgement)."""
    keys: set[str] = set()
    for text in session.scalars(
        select(AuditEventRow.payload).where(AuditEventRow.action == ACKNOWLEDGE)
    ):
        try:
            payload = json.loads(text)
        except (json.JSONDecodeError, TypeError):
            continue  # an altered event: the chain walk reports it
        found = payload.get("keys") if isinstance(payload, dict) else None
        if isinstance(found, list):
            keys |= {key for key in found if isinstance(key, str)}
    return frozenset(keys)


def unacknowledged(problems: Iterable[str], acknowledged: frozenset[str]) -> list[str]:
    return [p for p in problems if problem_key(p) not in acknowledged]
