"""What a gate check costs the database, and that reading first does not hide a quarantine.

A check reads everything it decides on in one session, verifies the registry and its own
rows in one snapshot, and writes once (registry.gate.service); its statements must not
grow with the decisions already kept (no query per earlier decision or event).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from registry.errors import Tampered
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from tests.audit.conftest import decisions, gate, record_id, sql, submit
from tests.factories import example

# The profile (benchmarks/gate/check_profile.py) counts about 45; the margin absorbs a
# query added for a good reason, not a query per decision.
MAX_STATEMENTS = 60


@contextmanager
def counted(database: Database) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(database.engine, "before_cursor_execute", count)


def test_a_checks_statements_do_not_grow_with_the_decisions_kept(
    registered: Database, engine: EmbeddedEngine
) -> None:
    for _ in range(2):  # the first walks the whole chain and stores the recomputation
        gate(registered, engine)
    with counted(registered) as early:
        assert gate(registered, engine).outcome.value == "allow"
    for _ in range(12):
        gate(registered, engine)
    with counted(registered) as later:
        assert gate(registered, engine).outcome.value == "allow"
    assert len(later) == len(early), (len(early), len(later))
    assert len(later) <= MAX_STATEMENTS, "\n".join(later)


def test_a_plan_deleted_in_sql_is_a_quarantine_not_an_unknown_plan(
    registered: Database, engine: EmbeddedEngine
) -> None:
    # The plan's records are read before the integrity check: a read that fails must
    # still answer with the quarantine when the registry was tampered with.
    submit(registered, "plan", example("plan", name="chat-assistant-canary"))
    gate(registered, engine)  # this process's guard verifies every row (its baseline)
    canary = record_id(registered, "plan", "chat-assistant-canary", 1)
    sql(registered, "DELETE FROM record_refs WHERE record_id = :r", r=canary)
    sql(registered, "DELETE FROM records WHERE id = :r", r=canary)
    kept = decisions(registered)
    with pytest.raises(Tampered) as refused:
        gate(registered, engine, "chat-assistant-canary")
    message = refused.value.message
    assert message.startswith("the registry is quarantined: "), message
    assert f"records id {canary}" in message and "missing from the table" in message
    assert decisions(registered) == kept
