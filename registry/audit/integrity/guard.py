"""The gate's integrity guard: one ledger per Database object, advanced incrementally.

`verify_registry` (registry.audit.integrity.compare) is O(events + rows): the gate cannot
afford it on every check, so `guard_for(database)` keeps one ledger per Database object
(one per process in the API server and the CLI) and, per check:

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
   space them out, at the price of seeing an edit at the next sweep, not the next check
   (registry.audit.integrity.sweep).
3. Rows, for this decision only, when no sweep ran in the check's snapshot (a sweep
   that passed there has shown every row of every covered table as verified, the
   decision's among them): every version of each series the decision reads (plan,
   workload, provider, evidence, and every waiver, since any may apply), the staleness,
   withdrawal and approval rows of those evidence and waiver versions, the previous
   decision whose calibration it reuses, and the recomputation it uses, each against
   the ledger in both directions (no forged row, no deleted one), plus the events that
   recorded them re-hashed with their links to the next event. A handful of indexed
   queries, independent of the registry's size (registry.audit.integrity.feeds).
4. Before its own event is appended, step 1 again inside the writing transaction: the
   gate never extends a chain that does not verify.

A gate check runs steps 1 to 3 in one reading session (`Guard.check_decision`): one
snapshot and one walk of the chain. The event verified last is read in the same query
as the events after it; the sweep is one statement, which also fingerprints the rows
and events added since the last sweep and counts the events (a deleted one); the
acknowledged problems are read only when there is a problem. A passing check of the
usual kind (one new decision since the last) is three statements after setting its
isolation level: the walk, the sweep, and the new decision with its plan's name.

Any problem raises Tampered: the gate ends in an error (exit 2), never in allow. Problems
an admin acknowledged (registry.audit.acknowledgements) are left out.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from registry.audit.acknowledgements import acknowledged_keys, unacknowledged
from registry.audit.chain import GENESIS, ChainHead, ChainWalk, events_after, extent, walk
from registry.audit.integrity.compare import settled, table_problems
from registry.audit.integrity.feeds import Feeds, feed_problems
from registry.audit.integrity.ledger import Ledger
from registry.audit.integrity.sweep import (
    EVENTS,
    Baseline,
    added_rows,
    expected_fingerprints,
    new_keys,
    new_row_problems,
    sweep_interval,
)
from registry.errors import Tampered
from registry.storage.fingerprints import Fingerprint, fingerprints
from registry.storage.models import AuditEventRow

if TYPE_CHECKING:
    from registry.storage.database import Database

# A process re-walks the whole chain at least this often (seconds); see the module text.
FULL_REWALK_S = 600.0


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
        self._baseline: Baseline | None = None
        self._swept_from = 0.0  # when the last passing sweep's reads began (monotonic)
        self._checked_seq = 0  # the rows recorded up to this event were verified

    def _chain(
        self,
        session: Session,
        acknowledged: _Acknowledged,
        extent: Callable[[Ledger], list[str]] | None = None,
    ) -> Ledger:
        """The chain walked from the event verified last; `extent` says whether events
        were deleted (by default one count of them; the sweep counts them anyway)."""
        ledger = self._ledger
        problems: list[str] = []
        if ledger is None or time.monotonic() - self._walked_at > FULL_REWALK_S:
            ledger, self._walked_at = Ledger(), time.monotonic()
            ledger.advance(session)
        else:
            problems += _advance_anchored(session, ledger.chain, ledger.take)
        if not problems:
            problems += ledger.all_problems
            problems += extent(ledger) if extent is not None else extent_problems(session)
        problems = acknowledged.filter(problems)
        if problems:
            self._ledger, self._verified = None, (0, GENESIS)  # walk from the start next time
            raise Tampered(_one_line(problems), details={"problems": problems})
        self._ledger, self._verified = ledger, (ledger.chain.seq, ledger.chain.head)
        return ledger

    def check_chain(self, database: Database) -> None:
        """Raise Tampered unless the chain verifies (incrementally)."""
        with self._lock, database.reading(snapshot=True) as session:
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
        # One snapshot for the walk and the fingerprints (else a write committing between
        # them would show rows whose events were not walked).
        with self._lock, database.reading(snapshot=True) as session:
            self._registry(session, _Acknowledged(session), sweep=sweep)

    def check_decision(
        self,
        database: Database,
        feeds: Feeds | Callable[[Session], Feeds],
        *,
        sweep: bool = True,
    ) -> None:
        """`check_registry`, then the rows the decision rests on (`feeds`, or how to
        read them), in one snapshot and one walk of the chain. A sweep that passed in
        this snapshot has verified every row of every covered table, the decision's
        among them: its rows are then not read again (14 statements a check saved)."""
        with self._lock, database.reading(snapshot=True) as session:
            acknowledged = _Acknowledged(session)
            ledger, swept = self._registry(session, acknowledged, sweep=sweep)
            if swept:
                return
            wanted = feeds(session) if callable(feeds) else feeds
            # The same snapshot: the chain walked above is the chain as of the feeds' rows.
            problems = settled(session, ledger, lambda: feed_problems(session, ledger, wanted))
            problems = acknowledged.filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})

    def _registry(
        self, session: Session, acknowledged: _Acknowledged, *, sweep: bool
    ) -> tuple[Ledger, bool]:
        """check_registry's work inside its session (the lock held): the ledger walked,
        and whether a sweep ran (and passed) in this snapshot."""
        snapshot_at = time.monotonic()
        baseline = self._baseline
        if baseline is None:
            self._ledger = None  # a first baseline rests on a walk from the first event
        due = baseline is None or (sweep and snapshot_at - self._swept_from >= sweep_interval())
        current: dict[str, Fingerprint] = {}
        added: dict[str, Fingerprint] = {}

        def swept_extent(ledger: Ledger) -> list[str]:
            # The sweep, in one statement with the fingerprints of the rows and events
            # added since the baseline; its count of events tells a deleted one.
            nonlocal current, added
            if baseline is None:
                current, added = fingerprints(session)
            else:
                rows = added_rows(new_keys(ledger, baseline.seq))
                current, added = fingerprints(session, rows, events_after=baseline.seq)
            return extent_of(current[EVENTS][0], ledger.chain.seq)

        try:
            ledger = self._chain(session, acknowledged, swept_extent if due else None)
            if baseline is not None and due:
                expected = expected_fingerprints(baseline, added)
                if expected[EVENTS] != current[EVENTS]:
                    self._ledger = None  # an event walked earlier changed: walk them all
                    ledger = self._chain(session, acknowledged)
        except Tampered as exc:
            problems = list(exc.details.get("problems") or [exc.message])
            raise Tampered(_quarantine_line(problems), details={"problems": problems}) from None
        if baseline is None:
            found = table_problems(session, ledger)
        else:
            found = new_row_problems(session, ledger, new_keys(ledger, self._checked_seq))
            if not found and due and any(expected[t] != current[t] for t in expected):
                found = table_problems(session, ledger)
        found = acknowledged.filter(found)
        if found:
            raise Tampered(_quarantine_line(found), details={"problems": found})
        self._checked_seq = ledger.chain.seq
        if due:
            self._baseline = Baseline(seq=ledger.chain.seq, tables=current)
            self._swept_from = snapshot_at
        return ledger, due

    def check_feeds(self, database: Database, feeds: Feeds) -> None:
        """Raise Tampered unless the chain and every row the decision rests on verify."""
        with self._lock, database.reading(snapshot=True) as session:
            acknowledged = _Acknowledged(session)
            ledger = self._chain(session, acknowledged)
            problems = settled(session, ledger, lambda: feed_problems(session, ledger, feeds))
            problems = acknowledged.filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})

    def rows_added_since(self, seq: int, tables: frozenset[str]) -> bool:
        """Whether an event after event `seq` recorded a row of `tables`, as far as this
        guard has walked (True when it cannot tell: no ledger, or one that stops short)."""
        with self._lock:
            ledger = self._ledger
            if ledger is None or ledger.chain.seq < seq:
                return True
            start = bisect_right(ledger.added_seqs, seq)
            return any(table in tables for table, _ in ledger.added[start:])

    def check_append(self, session: Session, *, counted: bool = False) -> ChainHead | None:
        """Inside a write, before its event: the chain it extends still verifies from the
        last event this guard verified (no ledger is kept: only hashes and links). Returns
        the chain's last event as read (None: no event yet), which the write's own event
        follows (`WriteContext.head`: not read a second time).

        `counted`: the caller's own integrity check, moments before in the same request,
        counted the events, so they are not counted again under the write lock (a count
        reads every event: tens of milliseconds at a million). An event older than the
        one verified last, deleted in between, is then found by the next check, as one
        deleted just after this write would be; events from the one verified last on are
        walked here either way."""
        seq, head = self._verified
        state = ChainWalk(seq=seq, head=head)
        last: list[AuditEventRow] = []
        problems = _advance_anchored(session, state, last=last)
        if not problems:
            problems += state.problems + ([] if counted else extent_problems(session))
        problems = _Acknowledged(session).filter(problems)
        if problems:
            raise Tampered(_one_line(problems), details={"problems": problems})
        return ChainHead(last[0].seq, last[0].hash, last[0].at) if last else None


def _advance_anchored(
    session: Session,
    state: ChainWalk,
    visit: Callable[[AuditEventRow, dict[str, Any]], None] | None = None,
    last: list[AuditEventRow] | None = None,
) -> list[str]:
    """The event verified last (`state`) read again with the events after it, in one
    query: problems if it is gone or rewritten, else the events after it walked. `last`
    receives the last event read (the chain's head when there are no problems)."""
    rows = _keeping_last(events_after(session, max(state.seq - 1, 0)), last)
    if state.seq == 0:
        walk(rows, state, visit)
        return []
    anchor = next(rows, None)
    problems = _anchor_problems(
        state.seq, state.head, anchor if anchor is not None and anchor.seq == state.seq else None
    )
    if not problems:
        walk(rows, state, visit)
    return problems


def _keeping_last(
    rows: Iterator[AuditEventRow], last: list[AuditEventRow] | None
) -> Iterator[AuditEventRow]:
    for row in rows:
        if last is not None:
            last[:] = [row]
        yield row


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
    return extent_of(*extent(session))


def extent_of(count: int, highest: int) -> list[str]:
    """Problems when the chain holds fewer events than its highest number says."""
    if count != highest:
        return [
            f"the chain holds {count} events numbered up to {highest}: "
            f"{highest - count} were deleted"
        ]
    return []


_GUARDS: weakref.WeakKeyDictionary[Database, Guard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(database: Database) -> Guard:
    with _GUARDS_LOCK:
        guard = _GUARDS.get(database)
        if guard is None:
            guard = _GUARDS[database] = Guard()
        return guard
