"""Per-table fingerprints of the rows the audit trail covers, computed by the database.

A fingerprint is (row count, sum of a hash of each row): any row edited, inserted or
deleted changes it (but for a hash collision), and it is additive, so the fingerprint of
the rows added since an earlier one is the difference of the two. The integrity guard
(registry.audit.integrity) compares them to tell, in one scan inside the database per
table, that no row it verified earlier has changed since.

What is hashed (`SWEEP_HASH_ENV`):

- PostgreSQL, by default (`versions`): each row's *version* (`xmin`, the transaction
  that wrote this version of it) with its key, seeded per process. PostgreSQL never
  edits a row in place: an UPDATE, a DELETE and re-INSERT, a `COPY`, from any role,
  superusers included, writes a new version with a new `xmin`, so every edit through
  the database changes the sum, without reading (and decompressing) each row's long
  text columns: a decision's 7 KB input made the content scan 25 us a row, ten times
  this one. What it cannot see is a write to the database's files behind PostgreSQL's
  back, which keeps `xmin`; `capgate audit verify` re-hashes every row's content and
  catches that, and so does `content` here.
- `content` (and SQLite, always): the whole row's content. PostgreSQL hashes the row
  (`hash_record_extended`, 14 and later; before, `md5` of the row's text); SQLite has
  no hash function, so one is registered on the connection (`capgate_fp`: Python's
  keyed hash of the columns' values).

Either way a scan reads every row: its cost grows with the table (see the quarantine
benchmark), which is why the guard may space them out.
"""

from __future__ import annotations

import os
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


SWEEP_HASH_ENV = "CAPGATE_QUARANTINE_SWEEP_HASH"


def content_hashing(session: Session) -> bool:
    """True where the sweep hashes each row's content, not its version (module text)."""
    if session.get_bind().dialect.name != "postgresql":
        return True
    return os.environ.get(SWEEP_HASH_ENV, "versions").strip().lower() == "content"


def _expression(session: Session, table: str) -> str:
    dialect = session.get_bind().dialect
    if dialect.name == "postgresql":
        if not content_hashing(session):
            # The row version and its key: a row's identity, where it is stored, is
            # (key, xmin); the key keeps two rows written by one transaction apart.
            return f"hashtextextended(t.xmin::text || '/' || t.{KEY_COLUMNS[table]}::text, {_SEED})"
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


def fingerprints(
    session: Session,
    added: Mapping[str, Iterable[int | str]] | None = None,
    events_after: int | None = None,
) -> tuple[dict[str, Fingerprint], dict[str, Fingerprint]]:
    """Every covered table's fingerprint (one scan of each, in the database) and, in the
    same statement (one round trip, one snapshot), the fingerprints of the rows `added`
    names (table -> keys) and of the events after `events_after`, keyed by table."""
    parts = [
        f"SELECT '{table}', 0, count(*), coalesce(sum({_expression(session, table)}), 0) "
        f"FROM {table} t"
        for table in KEY_COLUMNS
    ]
    values: dict[str, Any] = {}
    extra: list[tuple[str, list[int | str]]] = []
    budget = _IN_BUDGET
    for table, keys in (added or {}).items():
        wanted = sorted(set(keys), key=str)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            if len(chunk) > budget:  # beyond one statement's parameters: asked apart
                extra.append((table, chunk))
                continue
            budget -= len(chunk)
            name = f"k{len(values)}"
            values[name] = chunk
            parts.append(
                f"SELECT '{table}', 1, count(*), "
                f"coalesce(sum({_expression(session, table)}), 0) FROM {table} t "
                f"WHERE t.{KEY_COLUMNS[table]} IN :{name}"
            )
    if events_after is not None:
        values["after"] = events_after
        parts.append(
            f"SELECT 'audit_events', 1, count(*), "
            f"coalesce(sum({_expression(session, 'audit_events')}), 0) "
            f"FROM audit_events t WHERE t.seq > :after"
        )
    query = text(" UNION ALL ".join(parts)).bindparams(
        *(bindparam(name, expanding=True) for name in values if name != "after")
    )
    whole: dict[str, Fingerprint] = {}
    new: dict[str, Fingerprint] = {}
    for table, is_new, rows, total in session.execute(query, values):
        into = new if is_new else whole
        before = into.get(str(table), (0, 0))
        into[str(table)] = (before[0] + int(rows), before[1] + int(total))
    for table, chunk in extra:
        rows, total = fingerprint(session, table, chunk)
        before = new.get(table, (0, 0))
        new[table] = (before[0] + rows, before[1] + total)
    return {table: whole[table] for table in KEY_COLUMNS}, new


# Keys bound in one sweep statement at most (PostgreSQL takes 65,535 parameters).
_IN_BUDGET = 20_000
