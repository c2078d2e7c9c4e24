"""The ledger: what the audit trail says the covered tables hold, built by walking it.

Every write's event records the rows it stored (registry.audit.rows); walking the chain
event by event collects them into one map per covered table, key -> the event that
recorded the row and the digest of its fields. What the events themselves say wrong (an
entry that cannot be read, one key recorded twice with different fields) is a problem of
the ledger; what the tables hold is compared with it in registry.audit.integrity.compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.audit.chain import ChainWalk, events_after, walk
from registry.storage.models import AuditEventRow


@dataclass(frozen=True)
class Recorded:
    """The event that recorded a row, and the digest of the row's fields it recorded."""

    seq: int
    digest: str


@dataclass
class Ledger:
    """What the audit trail says the covered tables hold, built by walking it."""

    chain: ChainWalk = field(default_factory=ChainWalk)
    rows: dict[str, dict[str, Recorded]] = field(
        default_factory=lambda: {table: {} for table in R.COVERED_TABLES}
    )
    # (table, subject) -> keys: records by "kind/name", the others by SUBJECT_FIELDS.
    subjects: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    series: dict[str, set[str]] = field(default_factory=dict)  # kind -> names
    # Every (table, key) in the order the events recorded them, and those events' numbers
    # (ascending): the rows recorded after a given event are a bisection away.
    added: list[tuple[str, str]] = field(default_factory=list)
    added_seqs: list[int] = field(default_factory=list)
    # Problems in what the events say (not in their hashes): see `take`.
    problems: list[str] = field(default_factory=list)

    def advance(self, session: Session) -> None:
        """Walk (and hash) the events after the last one taken."""
        walk(events_after(session, self.chain.seq), self.chain, self.take)

    @property
    def all_problems(self) -> list[str]:
        return [*self.chain.problems, *self.problems]

    def recorded(self, table: str, key: str) -> Recorded | None:
        return self.rows[table].get(key)

    def subject_keys(self, table: str, subject: str) -> set[str]:
        return self.subjects.get((table, subject), set())

    def take(self, event: AuditEventRow, payload: dict[str, Any]) -> None:
        entries = payload.get(R.ROWS_KEY)
        if entries is not None and not isinstance(entries, list):
            self.problems.append(f"event {event.seq}: its row entries cannot be read")
            entries = None
        for item in entries or []:
            if not is_entry(item):
                self.problems.append(f"event {event.seq}: a row entry cannot be read")
                continue
            self._add(event.seq, item["table"], item["key"], item["digest"], item["fields"])

    def _add(self, seq: int, table: str, key: str, digest: str, fields: dict[str, Any]) -> None:
        earlier = self.rows[table].get(key)
        if earlier is not None:
            if earlier.digest != digest:
                self.problems.append(
                    f"{table} {key} is recorded by events {earlier.seq} and {seq} with "
                    "different fields"
                )
            return
        self.rows[table][key] = Recorded(seq=seq, digest=digest)
        self.added.append((table, key))
        self.added_seqs.append(seq)
        if table == R.RECORDS:
            kind, name = fields.get("kind"), fields.get("name")
            if isinstance(kind, str) and isinstance(name, str):
                self.subjects.setdefault((table, f"{kind}/{name}"), set()).add(key)
                self.series.setdefault(kind, set()).add(name)
        elif table in R.SUBJECT_FIELDS:
            subject = fields.get(R.SUBJECT_FIELDS[table])
            self.subjects.setdefault((table, str(subject)), set()).add(key)


def is_entry(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("table") in R.COVERED_TABLES
        and isinstance(item.get("key"), str)
        and isinstance(item.get("digest"), str)
        and isinstance(item.get("fields"), dict)
    )
