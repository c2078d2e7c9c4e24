"""Per-table fingerprints of the rows the audit trail covers, computed by the database.

A fingerprint is (row count, sum of a hash of each whole row): any row edited,
inserted or deleted changes it (but for a hash collision), and it is additive, so the
fingerprint of the rows added since an earlier one is the difference of the two. The
integrity guard (registry.audit.integrity) compares them to tell, in one scan inside
the database per table, that no row it verified earlier has changed since.

PostgreSQL hashes the whole row (`hash_record_extended`, 14 and later; before, `md5` of
the row's text), seeded per process; SQLite has no hash function, so one is registered
on the connection (`capgate_fp`: Python's keyed hash of the columns' values). Either way
a scan reads every row: its cost grows with the table (see the quarantine benchmark),
which is why the guard may space them out.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from registry.storage.models import Base

# The tables whose rows audit events record (registry.audit.rows), plus the two that
# hold parts of a record's recorded fields, each with the column its key is in.
KEY_COLUMNS: Mapping[str, str] = {
    "audit_events": "seq",
    "records": "id",
    "record_refs": "record_id",
    "evidence_raw_digests": "record_id",
    "decisions": "id",
    "staleness": "id",
    "evidence_withdrawals": "id",
    "waiver_approvals": "waiver_record_id",
    "recomputations": "id",
    "policy_releases": "id",
    "policy_release_approvals": "release_id",
    "series_owners": "id",
}

Fingerprint = tuple[int, int]  # (rows, sum of row hashes)


def _row_hash(*values: Any) -> int:
    # Python's own hash: keyed per process (SipHash, PYTHONHASHSEED), so no one can make
    # an edit that keeps the sum; a fingerprint is only compared within one process.
    # A third of the cost of hashing the row's text with hashlib (one call per row).
    return hash(values) & 0xFF_FFFF_FFFF


# PostgreSQL's record hash, seeded per process like Python's (nine times the speed of
# md5 over the row's text on PostgreSQL 15).
_SEED = secrets.randbits(62)


def _expression(session: Session, table: str) -> str:
    dialect = session.get_bind().dialect
    if dialect.name == "postgresql":
        if (dialect.server_version_info or (0,)) >= (14,):
            return f"hash_record_extended(t, {_SEED})"
        return "('x' || substr(md5(CAST(t AS text)), 1, 10))::bit(40)::bigint"
    raw = session.connection().connection.dbapi_connection
    assert raw is not None
    # Registered per connection (cheap; a pooled connection may be new).
    raw.create_function("capgate_fp", -1, _row_hash, deterministic=True)
    columns = ", ".join(f't."{c.name}"' for c in Base.metadata.tables[table].columns)
    return f"capgate_fp({columns})"


def fingerprint(
    session: Session, table: str, keys: Iterable[int | str] | None = None
) -> Fingerprint:
    """The fingerprint of every row of `table`, or of the rows whose key is in `keys`."""
    expression = _expression(session, table)
    statement = f"SELECT count(*), coalesce(sum({expression}), 0) FROM {table} t"
    if keys is None:
        rows, total = session.execute(text(statement)).one()
        return int(rows), int(total)
    wanted = sorted(set(keys), key=str)
    if not wanted:
        return 0, 0
    query = text(statement + f" WHERE t.{KEY_COLUMNS[table]} IN :keys").bindparams(
        bindparam("keys", expanding=True)
    )
    rows_sum, hash_sum = 0, 0
    for start in range(0, len(wanted), 500):
        rows, total = session.execute(query, {"keys": wanted[start : start + 500]}).one()
        rows_sum, hash_sum = rows_sum + int(rows), hash_sum + int(total)
    return rows_sum, hash_sum


def events_fingerprint(session: Session, after: int) -> Fingerprint:
    """The fingerprint of the audit events after event `after` (an index range)."""
    expression = _expression(session, "audit_events")
    rows, total = session.execute(
        text(f"SELECT count(*), coalesce(sum({expression}), 0) FROM audit_events t WHERE seq > :s"),
        {"s": after},
    ).one()
    return int(rows), int(total)


def fingerprints(session: Session) -> dict[str, Fingerprint]:
    """Every covered table's fingerprint: one scan of each, in the database, sent as one
    statement (one round trip, not one per table)."""
    parts = [
        f"SELECT '{table}', count(*), coalesce(sum({_expression(session, table)}), 0) "
        f"FROM {table} t"
        for table in KEY_COLUMNS
    ]
    found = {
        str(table): (int(rows), int(total))
        for table, rows, total in session.execute(text(" UNION ALL ".join(parts)))
    }
    return {table: found[table] for table in KEY_COLUMNS}
