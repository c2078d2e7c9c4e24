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

from registry.audit.integrity.guard import guard_for
from registry.errors import InvalidInput, Tampered
from registry.gate.views import DecisionView
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import BuiltInput
from registry.storage.database import Database
from tests.audit.conftest import (
    NOW,
    PLAN,
    HouseRule,
    decisions,
    gate,
    record_id,
    sql,
    submit,
)
from tests.audit.test_rows import _waiver
from tests.factories import approve_waiver, example

# The profile (benchmarks/gate/check_profile.py) counts 13 on a repeated check (its plan
# context cached, its sweep passing) and 42 before both; the margin absorbs a query added
# for a good reason (and SQLite's BEGIN), not a query per decision nor the context read
# again on every check.
MAX_STATEMENTS = 22


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


def test_a_repeated_check_reads_no_record_until_one_is_added(
    registered: Database, denied: DecisionView, engine: EmbeddedEngine
) -> None:
    """The plan's context is kept per process (registry.gate.context_cache): a repeated
    check reads no record, and a waiver added and approved since is in the next one."""
    house = HouseRule(engine)
    gate(registered, house)  # reads the context and keeps it
    with counted(registered) as repeated:
        assert gate(registered, house).outcome.value == "deny"
    assert [s for s in repeated if "records.content" in s] == [], "\n".join(repeated)
    submit(registered, "waiver", _waiver())
    approve_waiver(registered, "freeze-exception@v1", at=NOW)
    waived = gate(registered, house)  # the cached context had no waiver
    assert waived.outcome.value == "allow"
    assert [w["policy"] for w in waived.waived] == ["change_freeze"]
    with counted(registered) as again:
        assert gate(registered, house).outcome.value == "allow"
    assert [s for s in again if "records.content" in s] == [], "\n".join(again)


def test_a_passing_sweep_stands_for_the_decisions_own_rows(
    registered: Database, engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep that passed in the check's snapshot has verified every row, so the rows the
    decision rests on are not read again; between spaced sweeps they are, and an edit of
    one is refused at once (the sweep would see it later)."""
    from registry.audit.integrity.sweep import SWEEP_ENV

    gate(registered, engine)
    with counted(registered) as swept:
        gate(registered, engine)
    # The decision's rows, with their records' refs and raw digests, are read only
    # between sweeps.
    assert not [s for s in swept if "evidence_raw_digests.sha256" in s], swept
    monkeypatch.setenv(SWEEP_ENV, "3600")
    with counted(registered) as spaced:
        gate(registered, engine)
    assert [s for s in spaced if "evidence_raw_digests.sha256" in s], spaced
    plan = record_id(registered, "plan", PLAN, 1)
    sql(registered, "UPDATE records SET created_by = 'mallory' WHERE id = :r", r=plan)
    with pytest.raises(Tampered) as refused:
        gate(registered, engine)
    assert f"records id {plan}" in refused.value.message, refused.value.message
    assert "created_by is 'mallory'" in refused.value.message


def test_a_row_written_again_unchanged_does_not_quarantine(
    registered: Database, allowed: DecisionView, engine: EmbeddedEngine
) -> None:
    """On PostgreSQL the sweep sees each row's version: a row written again with the same
    values differs from the baseline, every row is then checked, none differs, and the
    check decides (the baseline moves on)."""
    sql(registered, "UPDATE decisions SET outcome = outcome WHERE id = :d", d=allowed.id)
    assert gate(registered, engine).outcome.value == "allow"
    assert gate(registered, engine).outcome.value == "allow"


@pytest.mark.parametrize("hashed", ["versions", "content"])
def test_a_flipped_decision_quarantines_whatever_the_sweep_hashes(
    registered: Database,
    denied: DecisionView,
    engine: EmbeddedEngine,
    monkeypatch: pytest.MonkeyPatch,
    hashed: str,
) -> None:
    from registry.storage.fingerprints import SWEEP_HASH_ENV

    monkeypatch.setenv(SWEEP_HASH_ENV, hashed)
    gate(registered, engine)  # the baseline, hashed this way
    sql(registered, "UPDATE decisions SET outcome = 'allow' WHERE id = :d", d=denied.id)
    with pytest.raises(Tampered) as refused:
        gate(registered, engine)
    assert refused.value.message.startswith("the registry is quarantined: ")
    assert f"decisions {denied.id}" in refused.value.message


def test_the_write_leaves_counting_the_events_to_the_checks_own_quarantine(
    registered: Database, engine: EmbeddedEngine
) -> None:
    # Counting every event under the write lock costs tens of milliseconds at a million;
    # a gate check's quarantine counted them moments before (check_append(counted=True)).
    gate(registered, engine)
    gate(registered, engine)
    sql(registered, "DELETE FROM audit_events WHERE seq = 2")  # older than any anchor
    guard = guard_for(registered)
    with registered.reading() as session:
        with pytest.raises(Tampered, match="1 were deleted"):
            guard.check_append(session)  # any other write counts them itself
        assert guard.check_append(session, counted=True) is not None
    # The deletion is the next check's quarantine, as one just after a write would be.
    with pytest.raises(Tampered, match=r"event 2 is missing|1 were deleted"):
        gate(registered, engine)


def test_the_gate_validates_the_input_it_built_for_range_only(engine: EmbeddedEngine) -> None:
    # A document the gate built as a GateInput was validated as it was built; what any
    # other caller hands an engine is validated in full, and a number beyond the gate's
    # range is refused either way.
    with pytest.raises(InvalidInput, match="does not match the contract"):
        engine.decide({"plan": {}})
    with pytest.raises(InvalidInput) as beyond:
        engine.decide(BuiltInput({"plan": {"total_replicas": 1e13}}))
    assert beyond.value.problems[0].loc == "plan.total_replicas"


def test_a_new_decision_edited_before_this_process_verified_it_is_a_quarantine(
    registered: Database, engine: EmbeddedEngine
) -> None:
    """Another process's decision, edited in SQL between its write and this process's
    next check, is found by this check's verification of the rows added since (on
    PostgreSQL the database hashes the stored input: IntegrityRepository.decisions_named)."""
    gate(registered, engine)  # this process's baseline
    other = Database(registered.url)  # another process: its own guard and ledger
    try:
        written = gate(other, engine)
    finally:
        other.engine.dispose()
    sql(
        registered,
        "UPDATE decisions SET input = replace(input, '\"peak_rps\"', '\"peak_rps_\"') "
        "WHERE id = :d",
        d=written.id,
    )
    with pytest.raises(Tampered) as caught:
        gate(registered, engine)
    assert written.id in caught.value.message
    assert "quarantined" in caught.value.message
