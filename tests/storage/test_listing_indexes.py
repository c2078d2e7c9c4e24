"""Every filter combination the audit listings offer is answered from an index in the
listing's order: no sort, no scan of the whole table (issue 12's p99 at a million
rows depends on it; benchmarks/registry/bench_audit_queries.py measures the times).

The statements are the ones the listing really runs, captured as they execute, and
each is EXPLAINed by the database itself. PostgreSQL is told to avoid sequential
scans and sorts so that on a small table its plan shows whether an index *can* serve
the query (a sort that remains means no index gives the order)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Connection

from registry.audit.service import list_events
from registry.gate.service import list_decisions
from registry.gate.views import Outcome
from registry.storage.database import Database
from registry.storage.keyset import encode

SINCE, UNTIL = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
CURSOR_EVENT = encode(UNTIL, 10)
CURSOR_DECISION = encode(UNTIL, "6f1c7a52-3c1e-4a57-9d0c-0d2f5b7b1c11")


@contextmanager
def captured(database: Database, table: str) -> Iterator[list[tuple[str, Any]]]:
    """The SELECTs on `table` (with their parameters) executed inside the block."""
    seen: list[tuple[str, Any]] = []

    def listen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and f"FROM {table}" in statement:
            seen.append((statement, parameters))

    event.listen(database.engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", listen)


def explain(connection: Connection, statement: str, parameters: Any) -> str:
    dialect = connection.dialect.name
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    if dialect == "postgresql":
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        cursor.execute("EXPLAIN " + statement, parameters)
    else:
        cursor.execute("EXPLAIN QUERY PLAN " + statement, parameters)
    return "\n".join(str(row) for row in cursor.fetchall())


def decision_combinations() -> Iterator[dict[str, Any]]:
    for plan, outcome, principal, since, until, cursor in itertools.product(
        (None, "chat-assistant-prod", "chat-assistant-prod@v1"),
        (None, Outcome.deny),
        (None, "release-bot"),
        (None, SINCE),
        (None, UNTIL),
        (None, CURSOR_DECISION),
    ):
        yield {
            "plan": plan,
            "outcome": outcome,
            "principal": principal,
            "since": since,
            "until": until,
            "cursor": cursor,
        }


def event_combinations() -> Iterator[dict[str, Any]]:
    for action, principal, since, until, cursor in itertools.product(
        (None, "gate.check"),
        (None, "release-bot"),
        (None, SINCE),
        (None, UNTIL),
        (None, CURSOR_EVENT),
    ):
        yield {
            "action": action,
            "principal": principal,
            "since": since,
            "until": until,
            "cursor": cursor,
        }


def plans_of(database: Database, table: str, lister: Any, combinations: Any) -> list[str]:
    """For each combination, the plan of the one listing statement on `table`."""
    out = []
    for filters in combinations:
        with captured(database, table) as seen, database.reading() as session:
            lister(session, limit=50, **filters)
        listing = [s for s in seen if "ORDER BY" in s[0]]
        assert len(listing) == 1, (filters, seen)
        with database.engine.connect() as connection:
            out.append((filters, explain(connection, *listing[0])))
    return out


@pytest.mark.parametrize(
    ("table", "lister", "combinations", "indexes"),
    [
        ("decisions", list_decisions, decision_combinations, "ix_decisions_"),
        ("audit_events", list_events, event_combinations, "ix_audit_events_"),
    ],
)
def test_every_filter_combination_reads_one_index_in_order(
    database: Database, table: str, lister: Any, combinations: Any, indexes: str
) -> None:
    if database.engine.dialect.name == "postgresql":
        with database.engine.begin() as connection:
            connection.execute(text(f"ANALYZE {table}"))
    postgres = database.engine.dialect.name == "postgresql"
    for filters, plan in plans_of(database, table, lister, combinations()):
        used = sorted(f for f in filters if filters[f] is not None) or ["no filter"]
        assert indexes in plan, f"{used}: no listing index in\n{plan}"
        for sign in ("TEMP B-TREE", "Sort", "Seq Scan", "Filter:"):
            assert sign not in plan, f"{used}: {sign} in\n{plan}"
        # Each equality filter is a condition of the index itself, not a row filter.
        for column in equality_columns(filters):
            if postgres:
                conditions = [line for line in plan.splitlines() if "Index Cond:" in line]
                inside = any(re.search(rf"\(?{column}\)?(::\w+)? = ", c) for c in conditions)
            else:
                inside = f"{column}=?" in plan
            assert inside, f"{used}: {column} is not an index condition in\n{plan}"


def equality_columns(filters: dict[str, Any]) -> list[str]:
    columns = [c for c in ("outcome", "principal", "action") if filters.get(c) is not None]
    if filters.get("plan"):
        columns.append("plan_record_id" if "@v" in filters["plan"] else "plan_name")
    return columns
