"""The guard's whole-registry check between two gate checks (the quarantine), made cheap.

Every row of every covered table was verified once, at a *baseline*: the fingerprint of
each table (registry.storage.fingerprints) and the last event walked then. A later check
verifies only the rows the events added since (`new_keys`, `new_row_problems`) and, when
a sweep is due (`sweep_interval`), scans each table once inside the database: the scan
must equal the baseline plus the new rows' fingerprints (`expected_fingerprints`), or a
row verified earlier changed. registry.audit.integrity.guard decides when and what then.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.audit.integrity.compare import MODELS, Events, compare, stored_records, stored_rows
from registry.audit.integrity.ledger import Ledger
from registry.storage.fingerprints import Fingerprint
from registry.storage.models import (
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
class Baseline:
    """The fingerprints of every covered table when its rows last verified, and the
    last event walked then: the rows recorded after it are the only ones to check."""

    seq: int
    tables: dict[str, Fingerprint]


def new_keys(ledger: Ledger, after: int) -> dict[str, list[str]]:
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


def new_row_problems(session: Session, ledger: Ledger, new: dict[str, list[str]]) -> list[str]:
    """The rows recorded since the baseline, each against its event (both ways)."""
    repo = IntegrityRepository(session)
    events = Events(session, ledger)
    problems: list[str] = []
    for table, keys in new.items():
        ids = _typed(table, keys)
        if table == R.RECORDS:
            stored = stored_records(repo, repo.records([int(i) for i in ids], content=True))
        elif table == R.DECISIONS:
            named = repo.decisions_named([str(i) for i in ids])
            names = {row.plan_record_id: name for row, name in named if name is not None}
            stored = stored_rows(table, [row for row, _ in named], plan_names=names)
        else:
            model = MODELS[table]
            stored = stored_rows(table, repo.rows(model, _KEY_ATTRIBUTES[table], ids), repo)
        problems += compare(events, table, stored, keys)
    return problems


def added_rows(new: dict[str, list[str]]) -> dict[str, list[int | str]]:
    """The keys, per fingerprinted table, of the rows recorded since the baseline (a
    record's recorded fields include its refs and raw digests, kept beside it)."""
    out: dict[str, list[int | str]] = {}
    for table, keys in new.items():
        tables = (
            (R.RECORDS, "record_refs", "evidence_raw_digests") if table == R.RECORDS else (table,)
        )
        for name in tables:
            out.setdefault(name, []).extend(_typed(table, keys))
    return out


def expected_fingerprints(
    baseline: Baseline, added: dict[str, Fingerprint]
) -> dict[str, Fingerprint]:
    """The baseline plus the fingerprints of the rows (and events) added since."""
    out = dict(baseline.tables)
    for table, print_ in added.items():
        out[table] = plus(out[table], print_)
    return out


# The audit events' own fingerprint, kept beside the covered tables'.
EVENTS = "audit_events"


def plus(a: Fingerprint, b: Fingerprint) -> Fingerprint:
    return a[0] + b[0], a[1] + b[1]
