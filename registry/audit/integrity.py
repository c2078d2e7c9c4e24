"""Integrity beyond the event chain: every stored row against the event that wrote it.

The hash chain proves the events were not altered; it says nothing of the tables beside
it. So every write's event records the rows it stored (registry.audit.rows), and a
*ledger* built by walking the chain says what each covered table must hold. A row no
event recorded (inserted by hand), a recorded row that is gone (deleted), and a row
whose fields differ from its event (edited) are problems, each named with its table,
key and the fields that differ. Record content and recomputation results are also
re-hashed against their digests wherever they are read (registry.records.service,
registry.sizing.service).

`verify_registry` is `capgate audit verify`: the whole chain and every row of every
covered table, O(events + rows).

The gate cannot afford that on every check, so `guard_for(database)` keeps one ledger
per Database object (one per process in the API server and the CLI) and, per check:

1. Chain, incrementally: the event this process verified last must still be there with
   the same hash (a rewrite or truncation behind it changes or removes it); only the
   events after it are walked and hashed; the count of events must equal the highest
   sequence number (a deleted middle event). The first check in a process walks from
   the first event, and so does any check more than FULL_REWALK_S after the last full
   walk, which bounds how long an edit of an old event unrelated to any decision can
   go unseen by a long-running server (`audit verify` sees it at once; so does the
   next sweep of step 2).
2. The whole registry (`Guard.check_registry`, the quarantine: registry.audit.quarantine):
   the rows recorded by the events added since the last check, against the ledger; and
   a *sweep*: one fingerprint scan per covered table inside the database
   (registry.storage.fingerprints; the audit events' too), which must equal the last
   passing sweep's plus the new rows'. A difference means an event or a row verified
   earlier changed: the chain is walked again or every row checked, to name it. The
   scans read every row (seconds at a million events); CAPGATE_QUARANTINE_SWEEP_S may
   space them out, at the price of seeing an edit at the next sweep, not the next check.
3. Rows, for this decision only: every version of each series the decision reads (plan,
   workload, provider, evidence, and every waiver, since any may apply), the staleness,
   withdrawal and approval rows of those evidence and waiver versions, the previous
   decision whose calibration it reuses, and the recomputation it uses, each against
   the ledger in both directions (no forged row, no deleted one), plus the events that
   recorded them re-hashed with their links to the next event. A handful of indexed
   queries, independent of the registry's size.
4. Before its own event is appended, step 1 again inside the writing transaction: the
   gate never extends a chain that does not verify.

A gate check runs steps 1 to 3 in one reading session (`Guard.check_decision`): one
snapshot and one walk of the chain. The event verified last is read in the same query
as the events after it, and the acknowledged problems only when there is a problem.

Any problem raises Tampered: the gate ends in an error (exit 2), never in allow. Problems
an admin acknowledged (registry.audit.acknowledgements) are left out.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.audit.acknowledgements import acknowledged_keys, unacknowledged
from registry.audit.chain import (
    GENESIS,
    ChainWalk,
    event_at,
    events_after,
    events_at,
    extent,
    hash_matches,
    parsed_payload,
    walk,
)
from registry.digest import content_digest
from registry.errors import Tampered
from registry.storage.fingerprints import (
    Fingerprint,
    events_fingerprint,
    fingerprint,
    fingerprints,
)
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

if TYPE_CHECKING:
    from registry.storage.database import Database

# A process re-walks the whole chain at least this often (seconds); see the module text.
FULL_REWALK_S = 600.0

SWEEP_ENV = "CAPGATE_QUARANTINE_SWEEP_S"


def sweep_interval() -> float:
    """Seconds between two fingerprint sweeps of a process (0, the default: every check).

    A sweep reads every covered row inside the database, which grows with the registry
    (docs/production.md, *Quarantine*); a busy server on a large registry may space them
    out, and a row edited in SQL is then seen by the first sweep after it, not the first
    check. A value that is not a number of seconds is 0: the safe side."""
    try:
        return max(0.0, float(os.environ.get(SWEEP_ENV, "0")))
    except ValueError:
        return 0.0


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
            if not _is_entry(item):
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


def _is_entry(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("table") in R.COVERED_TABLES
        and isinstance(item.get("key"), str)
        and isinstance(item.get("digest"), str)
        and isinstance(item.get("fields"), dict)
    )


# ---- stored rows, compared with the ledger ---------------------------------------------


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


class _Events:
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
            if _is_entry(item) and item["table"] == table and item["key"] == key:
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
    events: _Events, table: str, stored: dict[str, Stored], expected: Iterable[str]
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


def _stored_records(repo: IntegrityRepository, rows: list[Any]) -> dict[str, Stored]:
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


def _stored_rows(
    table: str, rows: Iterable[Any], repo: IntegrityRepository | None = None
) -> dict[str, Stored]:
    out: dict[str, Stored] = {}
    rows = list(rows)
    # A decision's plan name is a copy of its plan record's (listing by plan uses it):
    # not in the audit entry, so checked against the record here.
    names = (
        {r.id: r.name for r in repo.records({row.plan_record_id for row in rows}, content=False)}
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


_MODELS: dict[str, Any] = {
    R.DECISIONS: DecisionRow,
    R.STALENESS: StalenessRow,
    R.WITHDRAWALS: WithdrawalRow,
    R.WAIVER_APPROVALS: WaiverApprovalRow,
    R.RECOMPUTATIONS: RecomputationRow,
    R.POLICY_RELEASES: PolicyReleaseRow,
    R.POLICY_RELEASE_APPROVALS: PolicyReleaseApprovalRow,
    R.SERIES_OWNERS: SeriesOwnerRow,
}


def _snapshot(session: Session) -> None:
    """Read the chain and the tables from one snapshot.

    Under PostgreSQL's default READ COMMITTED, a write committing between the walk of
    the events and the read of the rows would show a row whose event was not walked.
    SQLite's reads here already hold the database (BEGIN IMMEDIATE). A session already
    in a transaction keeps its level; `_settled` then covers the race.
    """
    if session.get_bind().dialect.name == "postgresql" and not session.in_transaction():
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def _settled(session: Session, ledger: Ledger, find: Callable[[], list[str]]) -> list[str]:
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
    """The whole chain, then every row of every covered table against it."""
    _snapshot(session)
    ledger = Ledger()
    ledger.advance(session)
    found = ledger.all_problems
    return ledger, found + _settled(session, ledger, lambda: _table_problems(session, ledger))


def _table_problems(session: Session, ledger: Ledger) -> list[str]:
    """Every row of every covered table against the ledger, both ways."""
    events = _Events(session, ledger)
    repo = IntegrityRepository(session)
    records = _stored_records(repo, repo.records(content=True))
    problems = compare(events, R.RECORDS, records, ledger.rows[R.RECORDS])
    for table, model in _MODELS.items():
        stored = _stored_rows(table, repo.rows(model), repo)
        problems += compare(events, table, stored, ledger.rows[table])
    return problems


# ---- the gate's guard --------------------------------------------------------------------


@dataclass(frozen=True)
class Feeds:
    """The rows one decision rests on (see the module text, step 2): every version of
    the series of `record_ids` is checked, and of every waiver series if `every_waiver`."""

    record_ids: frozenset[int]
    decision_ids: frozenset[str] = frozenset()
    recomputation_ids: frozenset[int] = frozenset()
    every_waiver: bool = True


def _one_line(problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return (
        f"the registry failed its integrity check: {problems[0]}{more}; see `capgate audit verify`"
    )


QUARANTINE_HINT = (
    "every gate check is refused until the registry verifies again: repair what is named "
    "and run `capgate audit verify`, or an admin acknowledges a known, repaired failure "
    "(`capgate audit acknowledge --reason ...`)"
)


def _quarantine_line(problems: list[str]) -> str:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"the registry is quarantined: {problems[0]}{more}; {QUARANTINE_HINT}"


@dataclass(frozen=True)
class _Baseline:
    """The fingerprints of every covered table when its rows last verified, and the
    last event walked then: the rows recorded after it are the only ones to check."""

    seq: int
    tables: dict[str, Fingerprint]


def _new_keys(ledger: Ledger, after: int) -> dict[str, list[str]]:
    """The keys each covered table gained in events after `after`."""
    out: dict[str, list[str]] = {}
    for table, key in ledger.added[bisect_right(ledger.added_seqs, after) :]:
        out.setdefault(table, []).append(key)
    return out


_KEY_ATTRIBUTES: dict[str, Any] = {
    R.DECISIONS: DecisionRow.id,
    R.STALENESS: StalenessRow.id,
    R.WITHDRAWALS: WithdrawalRow.id,
    R.WAIVER_APPROVALS: WaiverApprovalRow.waiver_record_id,
    R.RECOMPUTATIONS: RecomputationRow.id,
    R.POLICY_RELEASES: PolicyReleaseRow.id,
    R.POLICY_RELEASE_APPROVALS: PolicyReleaseApprovalRow.release_id,
    R.SERIES_OWNERS: SeriesOwnerRow.id,
}


def _typed(table: str, keys: Iterable[str]) -> list[int | str]:
    return [key if table == R.DECISIONS else int(key) for key in keys]


def _new_row_problems(session: Session, ledger: Ledger, new: dict[str, list[str]]) -> list[str]:
    """The rows recorded since the baseline, each against its event (both ways)."""
    repo = IntegrityRepository(session)
    events = _Events(session, ledger)
    problems: list[str] = []
    for table, keys in new.items():
        ids = _typed(table, keys)
        if table == R.RECORDS:
            stored = _stored_records(repo, repo.records([int(i) for i in ids], content=True))
        else:
            model = _MODELS[table]
            stored = _stored_rows(table, repo.rows(model, _KEY_ATTRIBUTES[table], ids), repo)
        problems += compare(events, table, stored, keys)
    return problems


def _expected(
    session: Session, baseline: _Baseline, new: dict[str, list[str]]
) -> dict[str, Fingerprint]:
    """The baseline plus the fingerprints of the rows recorded since."""
    out = dict(baseline.tables)
    for table, keys in new.items():
        # A record's recorded fields include its refs and raw digests, kept beside it.
        tables = (
            (R.RECORDS, "record_refs", "evidence_raw_digests") if table == R.RECORDS else (table,)
        )
        for name in tables:
            out[name] = _plus(out[name], fingerprint(session, name, _typed(table, keys)))
    return out


EVENTS = "audit_events"


def _plus(a: Fingerprint, b: Fingerprint) -> Fingerprint:
    return a[0] + b[0], a[1] + b[1]


class _Acknowledged:
    """The acknowledged problems, read from the session only when there is a problem to
    filter (a passing check, the usual case, does not query them)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._keys: frozenset[str] | None = None

    def filter(self, problems: list[str]) -> list[str]:
        if not problems:
            return []
        if self._keys is None:
            self._keys = acknowledged_keys(self._session)
        return unacknowledged(problems, self._keys)


def _repeatable_read(session: Session) -> None:
    """One snapshot for the walk and the fingerprints (else a write committing between
    them would show rows whose events were not walked). Before the session's first query."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))


class Guard:
    """One Database's ledger, advanced incrementally by the gate (module text).

    The lock guards the ledger; the methods open their own reading sessions inside it,
    so no caller holds a database lock (SQLite's reads take one) while waiting for it.
    `check_append` runs inside a write and takes no lock at all. Problems an admin
    acknowledged (registry.audit.acknowledgements) are not raised.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ledger: Ledger | None = None
        self._walked_at = 0.0
        # (seq, hash) of the last event verified; replaced whole, so read without the lock.
        self._verified: tuple[int, str] = (0, GENESIS)
        self._baseline: _Baseline | None = None
        self._swept_from = 0.0  # when the last passing sweep's reads began (monotonic)
        self._checked_seq = 0  # the rows recorded up to this event were verified

    def _chain(self, session: Session, acknowledged: _Acknowledged) -> Ledger:
        ledger = self._ledger
        problems: list[str] = []
        if ledger is None or time.monotonic() - self._walked_at > FULL_REWALK_S:
            ledger, self._walked_at = Ledger(), time.monotonic()
            ledger.advance(session)
        else:
            problems += _advance_anchored(session, ledger.chain, ledger.take)
        if not problems:
            problems += ledger.all_problems + extent_problems(session)
        problems = acknowledged.filter(problems)
        if problems:
            self._ledger, self._verified = None, (0, GENESIS)  # walk from the start next time
            raise Tampered(_one_line(problems), details={"problems": problems})
        self._ledger, self._verified = ledger, (ledger.chain.seq, ledger.chain.head)
        return ledger

    def check_chain(self, database: Database) -> None:
        """Raise Tampered unless the chain verifies (incrementally)."""
        with self._lock, database.reading() as session:
            _snapshot(session)
            self._chain(session, _Acknowledged(session))

    def check_registry(self, database: Database, *, sweep: bool = True) -> None:
        """Raise Tampered (the registry is quarantined) unless the chain and every row of
        every covered table verify. Incremental: the events and rows recorded since the
        last check are verified in full; then, when a sweep is due (every check unless
        CAPGATE_QUARANTINE_SWEEP_S spaces them out), one fingerprint scan per table in
        the database (the events' included) must equal the baseline plus the new rows',
        or some event or row verified earlier changed: then the whole chain or every
        row is checked again, to name it. A sweep that failed is due again at once.
        `sweep=False`: not this time (a batch of checks sweeps once, at its start)."""
        began = time.monotonic()
        with self._lock, database.reading() as session:
            _repeatable_read(session)
            self._registry(session, _Acknowledged(session), sweep=sweep, began=began)

    def check_decision(self, database: Database, feeds: Feeds, *, sweep: bool = True) -> None:
        """`check_registry`, then `check_feeds`, in one snapshot: one walk of the chain
        for both, so a gate check pays for one reading session, not two."""
        began = time.monotonic()
        with self._lock, database.reading() as session:
            _repeatable_read(session)
            acknowledged = _Acknowledged(session)
            ledger = self._registry(session, acknowledged, sweep=sweep, began=began)
            # The same snapshot: the chain walked above is the chain as of the feeds' rows.
            problems = _settled(session, ledger, lambda: _feed_problems(session, ledger, feeds))
            problems = acknowledged.filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})

    def _registry(
        self, session: Session, acknowledged: _Acknowledged, *, sweep: bool, began: float
    ) -> Ledger:
        """check_registry's work inside its session (the lock held); the ledger walked."""
        snapshot_at = time.monotonic()
        baseline = self._baseline
        if baseline is None:
            self._ledger = None  # a first baseline rests on a walk from the first event
        # Concurrent checks share a sweep: one that read the database after this
        # check began saw everything this one would (so waiting checks do not scan).
        due = baseline is None or (
            sweep
            and self._swept_from < began
            and snapshot_at - self._swept_from >= sweep_interval()
        )
        try:
            ledger = self._chain(session, acknowledged)
            current = fingerprints(session) if due else {}
            if (
                baseline is not None
                and due
                and _plus(baseline.tables[EVENTS], events_fingerprint(session, baseline.seq))
                != current[EVENTS]
            ):
                self._ledger = None  # an event walked earlier changed: walk them all
                ledger = self._chain(session, acknowledged)
        except Tampered as exc:
            problems = list(exc.details.get("problems") or [exc.message])
            raise Tampered(_quarantine_line(problems), details={"problems": problems}) from None
        if baseline is None:
            found = _table_problems(session, ledger)
        else:
            new = _new_keys(ledger, self._checked_seq)
            found = _new_row_problems(session, ledger, new)
            if not found and due:
                expected = _expected(session, baseline, _new_keys(ledger, baseline.seq))
                if any(expected[t] != current[t] for t in expected if t != EVENTS):
                    found = _table_problems(session, ledger)
        found = acknowledged.filter(found)
        if found:
            raise Tampered(_quarantine_line(found), details={"problems": found})
        self._checked_seq = ledger.chain.seq
        if due:
            self._baseline = _Baseline(seq=ledger.chain.seq, tables=current)
            self._swept_from = snapshot_at
        return ledger

    def check_feeds(self, database: Database, feeds: Feeds) -> None:
        """Raise Tampered unless the chain and every row the decision rests on verify."""
        with self._lock, database.reading() as session:
            _snapshot(session)
            acknowledged = _Acknowledged(session)
            ledger = self._chain(session, acknowledged)
            problems = _settled(session, ledger, lambda: _feed_problems(session, ledger, feeds))
            problems = acknowledged.filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})

    def check_append(self, session: Session) -> None:
        """Inside a write, before its event: the chain it extends still verifies from the
        last event this guard verified (no ledger is kept: only hashes and links)."""
        seq, head = self._verified
        state = ChainWalk(seq=seq, head=head)
        problems = _advance_anchored(session, state)
        if not problems:
            problems += state.problems + extent_problems(session)
        problems = _Acknowledged(session).filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})


def _advance_anchored(
    session: Session,
    state: ChainWalk,
    visit: Callable[[AuditEventRow, dict[str, Any]], None] | None = None,
) -> list[str]:
    """The event verified last (`state`) read again with the events after it, in one
    query: problems if it is gone or rewritten, else the events after it walked."""
    if state.seq == 0:
        walk(events_after(session, 0), state, visit)
        return []
    rows = events_after(session, state.seq - 1)
    anchor = next(rows, None)
    problems = _anchor_problems(
        state.seq, state.head, anchor if anchor is not None and anchor.seq == state.seq else None
    )
    if not problems:
        walk(rows, state, visit)
    return problems


def _anchor_problems(seq: int, head: str, anchor: AuditEventRow | None) -> list[str]:
    if anchor is None:
        return [
            f"event {seq}, verified earlier by this process, is gone: the chain was "
            "truncated or rewritten"
        ]
    if anchor.hash != head:
        return [
            f"event {seq} no longer has the hash this process verified: the chain was rewritten"
        ]
    return []


def extent_problems(session: Session) -> list[str]:
    count, highest = extent(session)
    if count != highest:
        return [
            f"the chain holds {count} events numbered up to {highest}: "
            f"{highest - count} were deleted"
        ]
    return []


def _feed_problems(session: Session, ledger: Ledger, feeds: Feeds) -> list[str]:
    repo = IntegrityRepository(session)
    events = _Events(session, ledger)
    named = repo.records(feeds.record_ids, content=False)
    series = {(row.kind, row.name) for row in named}
    if feeds.every_waiver:
        names = repo.series_names("waiver") | ledger.series.get("waiver", set())
        series |= {("waiver", name) for name in names}
    record_rows = repo.records_of_series(series)
    records = _stored_records(repo, record_rows)
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
        stored = _stored_rows(table, repo.rows(model, column, subjects))
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
        stored = _stored_rows(table, repo.rows(model, column, ids) if ids else [], repo)
        problems += compare(events, table, stored, {str(i) for i in ids})
        checked += [(table, str(i)) for i in ids]
    # Every decision rests on the policy release in force, read from these (few) rows.
    for table, model in (
        (R.POLICY_RELEASES, PolicyReleaseRow),
        (R.POLICY_RELEASE_APPROVALS, PolicyReleaseApprovalRow),
    ):
        stored = _stored_rows(table, repo.rows(model))
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


_GUARDS: weakref.WeakKeyDictionary[Database, Guard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(database: Database) -> Guard:
    with _GUARDS_LOCK:
        guard = _GUARDS.get(database)
        if guard is None:
            guard = _GUARDS[database] = Guard()
        return guard
