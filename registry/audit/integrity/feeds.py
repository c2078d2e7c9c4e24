"""The rows one decision rests on, each checked against the ledger and its event.

Every version of each series the decision reads (plan, workload, provider, evidence,
and every waiver, since any may apply), the staleness, withdrawal and approval rows of
those evidence and waiver versions, the previous decision whose calibration it reuses,
the recomputation it uses and the policy releases: each against the ledger in both
directions (no forged row, no deleted one), plus the events that recorded them re-hashed
with their links to the next event. A handful of indexed queries, independent of the
registry's size (registry.audit.integrity.guard, step 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.audit.chain import events_at, hash_matches, parsed_payload
from registry.audit.integrity.compare import Events, compare, stored_records, stored_rows
from registry.audit.integrity.ledger import Ledger
from registry.storage.models import (
    DecisionRow,
    PolicyReleaseApprovalRow,
    PolicyReleaseRow,
    RecomputationRow,
    StalenessRow,
    WaiverApprovalRow,
    WithdrawalRow,
)
from registry.storage.repository import IntegrityRepository


@dataclass(frozen=True)
class Feeds:
    """The rows one decision rests on (the module text): every version of
    the series of `record_ids` is checked, and of every waiver series if `every_waiver`."""

    record_ids: frozenset[int]
    decision_ids: frozenset[str] = frozenset()
    recomputation_ids: frozenset[int] = frozenset()
    every_waiver: bool = True


def feed_problems(session: Session, ledger: Ledger, feeds: Feeds) -> list[str]:
    repo = IntegrityRepository(session)
    events = Events(session, ledger)
    named = repo.records(feeds.record_ids, content=False)
    series = {(row.kind, row.name) for row in named}
    if feeds.every_waiver:
        names = repo.series_names("waiver") | ledger.series.get("waiver", set())
        series |= {("waiver", name) for name in names}
    record_rows = repo.records_of_series(series)
    records = stored_records(repo, record_rows)
    expected = {str(i) for i in feeds.record_ids}
    for kind, name in series:
        expected |= ledger.subject_keys(R.RECORDS, f"{kind}/{name}")
    problems = compare(events, R.RECORDS, records, expected)
    checked = [(R.RECORDS, key) for key in set(records) | expected]

    evidence = {row.id for row in record_rows if row.kind == "evidence"}
    waivers = {row.id for row in record_rows if row.kind == "waiver"}
    scoped: list[tuple[str, Any, Any, set[int] | set[str]]] = [
        (R.STALENESS, StalenessRow, StalenessRow.evidence_record_id, evidence),
        (R.WITHDRAWALS, WithdrawalRow, WithdrawalRow.evidence_record_id, evidence),
        (R.WAIVER_APPROVALS, WaiverApprovalRow, WaiverApprovalRow.waiver_record_id, waivers),
    ]
    for table, model, column, subjects in scoped:
        stored = stored_rows(table, repo.rows(model, column, subjects))
        expected = set()
        for subject in subjects:
            expected |= ledger.subject_keys(table, str(subject))
        problems += compare(events, table, stored, expected)
        checked += [(table, key) for key in set(stored) | expected]
    by_id: list[tuple[str, Any, Any, frozenset[Any]]] = [
        (R.DECISIONS, DecisionRow, DecisionRow.id, feeds.decision_ids),
        (R.RECOMPUTATIONS, RecomputationRow, RecomputationRow.id, feeds.recomputation_ids),
    ]
    for table, model, column, ids in by_id:
        stored = stored_rows(table, repo.rows(model, column, ids) if ids else [], repo)
        problems += compare(events, table, stored, {str(i) for i in ids})
        checked += [(table, str(i)) for i in ids]
    # Every decision rests on the policy release in force, read from these (few) rows.
    for table, model in (
        (R.POLICY_RELEASES, PolicyReleaseRow),
        (R.POLICY_RELEASE_APPROVALS, PolicyReleaseApprovalRow),
    ):
        stored = stored_rows(table, repo.rows(model))
        expected = set(ledger.rows[table])
        problems += compare(events, table, stored, expected)
        checked += [(table, key) for key in set(stored) | expected]
    return problems + _event_problems(session, ledger, checked)


def _event_problems(session: Session, ledger: Ledger, checked: list[tuple[str, str]]) -> list[str]:
    """The events that recorded the checked rows, re-hashed and linked to the next one:
    an event edited after this process walked past it is caught where it matters."""
    seqs = {r.seq for t, k in checked if (r := ledger.recorded(t, k)) is not None}
    found = events_at(session, seqs | {s + 1 for s in seqs if s < ledger.chain.seq})
    problems = []
    for seq in sorted(seqs):
        event = found.get(seq)
        if event is None:
            problems.append(f"event {seq} is missing")
        elif not hash_matches(event, parsed_payload(event)):
            problems.append(f"event {seq} was altered: its hash does not match its content")
        elif (after := found.get(seq + 1)) is not None and after.prev_hash != event.hash:
            problems.append(f"event {seq + 1} does not follow its predecessor's hash")
    return problems
