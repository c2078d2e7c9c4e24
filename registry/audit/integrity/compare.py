"""Stored rows against the ledger: each difference named with its table, key and fields.

A row no event recorded (inserted by hand), a recorded row that is gone (deleted), a
row whose fields differ from what its event recorded (edited, each field named), and a
row that contradicts its own digest (content or result edited in place) are problems.
`verify_registry` (`capgate audit verify`) walks the whole chain and compares every row
of every covered table; the guard (registry.audit.integrity.guard) compares only the
rows it needs, with the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.audit.chain import event_at, parsed_payload
from registry.audit.integrity.ledger import Ledger, is_entry
from registry.digest import content_digest
from registry.storage.models import (
    AuditEventRow,
    DecisionRow,
    PolicyReleaseApprovalRow,
    PolicyReleaseRow,
    RecomputationRow,
    SeriesOwnerRow,
    StalenessRow,
    WaiverApprovalRow,
    WithdrawalRow,
)
from registry.storage.repository import IntegrityRepository


@dataclass(frozen=True)
class Stored:
    """One stored row as its event would have recorded it."""

    fields: dict[str, Any]
    # Set when the row contradicts its own digest (content or result edited in place).
    broken: str | None = None


def _label(table: str, key: str, fields: dict[str, Any] | None) -> str:
    fields = fields or {}
    if table == R.RECORDS and "kind" in fields:
        return f"records id {key} ({fields['kind']} {fields['name']}@v{fields['version']})"
    if table == R.RECORDS:
        return f"records id {key}"
    if table == R.DECISIONS:
        return f"decisions {key}"
    if table == R.WAIVER_APPROVALS:
        return f"waiver_approvals of waiver record {key}"
    if table == R.POLICY_RELEASES:
        named = f" ({fields['name']}@v{fields['version']})" if "name" in fields else ""
        return f"policy_releases id {key}{named}"
    if table == R.POLICY_RELEASE_APPROVALS:
        return f"policy_release_approvals of release {key}"
    if table == R.SERIES_OWNERS:
        named = f" ({fields['kind']} {fields['name']})" if "kind" in fields else ""
        return f"series_owners id {key}{named}"
    about = {
        R.STALENESS: ("evidence record", "evidence_record_id"),
        R.WITHDRAWALS: ("evidence record", "evidence_record_id"),
        R.RECOMPUTATIONS: ("plan record", "plan_record_id"),
    }[table]
    if about[1] in fields:
        return f"{table} id {key} ({about[0]} {fields[about[1]]})"
    return f"{table} id {key}"


def _order(key: str) -> tuple[int, str]:
    return (len(key), key)


class Events:
    """Events read back for messages, each once."""

    def __init__(self, session: Session, ledger: Ledger) -> None:
        self.session = session
        self.ledger = ledger
        self.cache: dict[int, AuditEventRow | None] = {}

    def fields(self, table: str, key: str, seq: int) -> dict[str, Any] | None:
        if seq not in self.cache:
            self.cache[seq] = event_at(self.session, seq)
        event = self.cache[seq]
        payload = parsed_payload(event) if event is not None else None
        if event is None or payload is None:
            return None
        for item in payload.get(R.ROWS_KEY) or []:
            if is_entry(item) and item["table"] == table and item["key"] == key:
                fields: dict[str, Any] = item["fields"]
                return fields
        return None


def _differences(actual: dict[str, Any], recorded: dict[str, Any] | None, seq: int) -> str:
    if recorded is None:
        return f"differs from what event {seq} recorded"
    said = []
    for name in sorted(set(actual) | set(recorded)):
        now, then = actual.get(name), recorded.get(name)
        if now == then:
            continue
        if name.endswith("_sha256"):
            said.append(f"{name.removesuffix('_sha256')} was changed")
        else:
            said.append(f"{name} is {now!r}, the event recorded {then!r}")
    return f"differs from event {seq}: " + "; ".join(said)


def compare(
    events: Events, table: str, stored: dict[str, Stored], expected: Iterable[str]
) -> list[str]:
    """Problems between the stored rows and the ledger's keys expected in that scope."""
    ledger = events.ledger
    problems: list[str] = []
    for key in sorted(stored, key=_order):
        row = stored[key]
        label = _label(table, key, row.fields)
        if row.broken:
            problems.append(f"{label}: {row.broken}")
        recorded = ledger.recorded(table, key)
        if recorded is None:
            problems.append(f"{label}: no audit event recorded this row")
        elif content_digest(row.fields) != recorded.digest:
            said = _differences(row.fields, events.fields(table, key, recorded.seq), recorded.seq)
            problems.append(f"{label}: {said}")
    for key in sorted(set(expected) - set(stored), key=_order):
        recorded = ledger.recorded(table, key)
        if recorded is None:
            continue
        label = _label(table, key, events.fields(table, key, recorded.seq))
        problems.append(f"{label}: recorded by event {recorded.seq} but missing from the table")
    return problems


def stored_records(repo: IntegrityRepository, rows: list[Any]) -> dict[str, Stored]:
    ids = [row.id for row in rows]
    refs, raws = repo.refs(ids), repo.raw_digests(ids)
    out: dict[str, Stored] = {}
    for row in rows:
        fields = R.record_fields(row, refs=refs.get(row.id, {}), raw_digests=raws.get(row.id, []))
        content = getattr(row, "content", None)
        broken = None
        if content is not None and not R.text_intact(content, row.digest):
            broken = f"its content does not hash to its digest {row.digest} (edited in place)"
        out[str(row.id)] = Stored(fields=fields, broken=broken)
    return out


def stored_rows(
    table: str,
    rows: Iterable[Any],
    repo: IntegrityRepository | None = None,
    plan_names: dict[int, str] | None = None,
) -> dict[str, Stored]:
    out: dict[str, Stored] = {}
    rows = list(rows)
    # A decision's plan name is a copy of its plan record's (listing by plan uses it):
    # not in the audit entry, so checked against the record here (`plan_names`, record
    # id -> name, when the caller read them with the rows).
    names = (
        plan_names
        if plan_names is not None
        else {
            r.id: r.name for r in repo.records({row.plan_record_id for row in rows}, content=False)
        }
        if table == R.DECISIONS and repo is not None and rows
        else {}
    )
    for row in rows:
        if table == R.DECISIONS:
            filed = names.get(row.plan_record_id, row.plan_name)
            broken = (
                f"filed under plan {row.plan_name!r} but its plan record is {filed!r} "
                "(edited in place)"
                if filed != row.plan_name
                else None
            )
            out[str(row.id)] = Stored(R.decision_fields(row), broken=broken)
        elif table == R.STALENESS:
            out[str(row.id)] = Stored(R.staleness_fields(row))
        elif table == R.WITHDRAWALS:
            out[str(row.id)] = Stored(R.withdrawal_fields(row))
        elif table == R.WAIVER_APPROVALS:
            out[str(row.waiver_record_id)] = Stored(R.waiver_approval_fields(row))
        elif table == R.POLICY_RELEASES:
            # files_sha256 against the event: edited files are named as any edited column.
            out[str(row.id)] = Stored(R.policy_release_fields(row))
        elif table == R.POLICY_RELEASE_APPROVALS:
            out[str(row.release_id)] = Stored(R.policy_release_approval_fields(row))
        elif table == R.SERIES_OWNERS:
            out[str(row.id)] = Stored(R.series_owner_fields(row))
        else:
            broken = None
            if not R.text_intact(row.result, row.digest):
                broken = f"its result does not hash to its digest {row.digest} (edited in place)"
            out[str(row.id)] = Stored(R.recomputation_fields(row), broken=broken)
    return out


MODELS: dict[str, Any] = {
    R.DECISIONS: DecisionRow,
    R.STALENESS: StalenessRow,
    R.WITHDRAWALS: WithdrawalRow,
    R.WAIVER_APPROVALS: WaiverApprovalRow,
    R.RECOMPUTATIONS: RecomputationRow,
    R.POLICY_RELEASES: PolicyReleaseRow,
    R.POLICY_RELEASE_APPROVALS: PolicyReleaseApprovalRow,
    R.SERIES_OWNERS: SeriesOwnerRow,
}


def settled(session: Session, ledger: Ledger, find: Callable[[], list[str]]) -> list[str]:
    """`find()`, and once more after walking any events committed meanwhile if it named
    a row no event recorded (that row's event may have committed after the walk)."""
    found = find()
    if any(p.endswith("no audit event recorded this row") for p in found):
        seq = ledger.chain.seq
        ledger.advance(session)
        if ledger.chain.seq != seq:
            found = ledger.all_problems + find()
    return found


def verify_registry(session: Session) -> tuple[Ledger, list[str]]:
    """The whole chain, then every row of every covered table against it (in one
    snapshot when the session is one: Database.reading(snapshot=True))."""
    ledger = Ledger()
    ledger.advance(session)
    found = ledger.all_problems
    return ledger, found + settled(session, ledger, lambda: table_problems(session, ledger))


def table_problems(session: Session, ledger: Ledger) -> list[str]:
    """Every row of every covered table against the ledger, both ways."""
    events = Events(session, ledger)
    repo = IntegrityRepository(session)
    records = stored_records(repo, repo.records(content=True))
    problems = compare(events, R.RECORDS, records, ledger.rows[R.RECORDS])
    for table, model in MODELS.items():
        stored = stored_rows(table, repo.rows(model), repo)
        problems += compare(events, table, stored, ledger.rows[table])
    return problems
