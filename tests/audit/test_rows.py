"""Every write's event records its rows; what else tampering with them looks like."""

from __future__ import annotations

from datetime import timedelta

import pytest

from registry.audit.integrity.compare import verify_registry
from registry.audit.rows import COVERED_TABLES
from registry.errors import Tampered
from registry.evidence_lifecycle import withdraw
from registry.gate.context import load_plan_context
from registry.gate.release_approval import approve_and_recheck
from registry.gate.service import get_decision
from registry.gate.views import DecisionView
from registry.planner import PLANNER_VERSION
from registry.policy.bundle import load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.releases import submit as submit_release
from registry.sizing.service import DEFAULT_SEED, calibration_key, inputs_key
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from registry.storage.repository import GateRepository
from tests.audit.conftest import (
    LIMITS,
    NOW,
    PLAN,
    HouseRule,
    assert_gate_refuses,
    events,
    gate,
    problems,
    record_id,
    seq_of,
    sql,
    submit,
)
from tests.factories import EXAMPLE_EVIDENCE, approve_waiver, example


def _waiver() -> dict[str, object]:
    return {
        "name": "freeze-exception",
        "policy": "change_freeze",
        "plan": PLAN,
        "owner": "sre-lead@example.com",
        "reason": "the release fixes an outage, the freeze must not hold it back",
        "expires_at": (NOW + timedelta(days=10)).isoformat(),
    }


def _withdraw(database: Database) -> None:
    database.write(
        lambda ctx: withdraw(
            ctx, ref=EXAMPLE_EVIDENCE, reason="the load generator was misconfigured"
        ),
        principal="alice",
        now=lambda: NOW,
    )


def _release(database: Database, engine: EmbeddedEngine) -> None:
    """The installed bundle released by one policy-admin and approved by another."""
    database.write(
        lambda ctx: submit_release(ctx, name="policies", notes="", bundle=load_bundle()),
        principal="admin-alice",
        now=lambda: NOW,
    )
    approve_and_recheck(
        database,
        lambda: engine,
        ref="policies@v1",
        comment=None,
        principal="admin-bob",
        limits=StalenessThresholds(),
        now=NOW,
    )


def test_every_covered_table_is_recorded_and_a_busy_registry_verifies(
    registered: Database, denied: DecisionView, engine: EmbeddedEngine
) -> None:
    submit(registered, "waiver", _waiver())
    approve_waiver(registered, "freeze-exception@v1", at=NOW)
    assert gate(registered, HouseRule(engine)).outcome.value == "allow"
    workload = example("workload")
    workload["classes"][0]["arrival"]["peak_rps"] = 60.0  # stales the evidence
    submit(registered, "workload", workload)
    _withdraw(registered)
    _release(registered, engine)
    with registered.reading() as session:
        ledger, found = verify_registry(session)
    assert found == []
    assert {table for table in COVERED_TABLES if ledger.rows[table]} == set(COVERED_TABLES)
    # Every write of these services says which rows it stored, in its own event.
    for event in events(registered):
        if event["action"] != "waiver.approve":  # its rows are read off the event itself
            assert event["payload"]["rows"], event["action"]


def test_deleted_withdrawal_is_named_and_the_gate_refuses(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    _withdraw(registered)
    withdrawal_id, evidence_id = sql(
        registered, "SELECT id, evidence_record_id FROM evidence_withdrawals"
    ).one()
    seq = seq_of(registered, "evidence.withdraw")
    sql(registered, "DELETE FROM evidence_withdrawals")
    assert problems(registered) == [
        f"evidence_withdrawals id {withdrawal_id} (evidence record {evidence_id}): recorded by "
        f"event {seq} but missing from the table"
    ]
    assert_gate_refuses(registered, fresh_process, engine)


def test_approval_given_to_someone_else_is_named(
    registered: Database, denied: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    submit(registered, "waiver", _waiver())
    approve_waiver(registered, "freeze-exception@v1", at=NOW)
    waiver_id = record_id(registered, "waiver", "freeze-exception", 1)
    sql(registered, "UPDATE waiver_approvals SET approved_by = 'mallory'")
    seq = seq_of(registered, "waiver.approve")
    assert problems(registered) == [
        f"waiver_approvals of waiver record {waiver_id}: differs from event {seq}: approved_by "
        "is 'mallory', the event recorded 'approver-carol'"
    ]
    assert_gate_refuses(registered, fresh_process, engine)


def test_decision_input_edited_is_refused_when_shown(
    registered: Database, allowed: DecisionView
) -> None:
    sql(
        registered,
        "UPDATE decisions SET input = replace(input, 'chat-assistant-prod@v1', 'other@v1')",
    )
    seq = seq_of(registered, "gate.check")
    assert problems(registered) == [
        f"decisions {allowed.id}: differs from event {seq}: input was changed"
    ]
    with registered.reading() as session, pytest.raises(Tampered, match="its input does not hash"):
        get_decision(session, allowed.id, current_revision=None)


def _other_version(database: Database) -> tuple[int, int, str]:
    """Plan v1 (recomputed by the gate) and v2 (submitted, never recomputed), and the
    key of v2's inputs."""
    submit(database, "plan", example("plan", description="the same plan, said otherwise"))
    with database.reading() as session:
        context = load_plan_context(session, plan_ref=f"{PLAN}@v2", now=NOW, limits=LIMITS)
    v1, v2 = (record_id(database, "plan", PLAN, v) for v in (1, 2))
    return v1, v2, inputs_key(context)


def test_recomputation_pointed_at_another_plan_serves_nothing(
    registered: Database, allowed: DecisionView
) -> None:
    """Keyed by content: v1's recomputation re-pointed at v2 is not found for v2."""
    v1, v2, key = _other_version(registered)
    sql(registered, "UPDATE recomputations SET plan_record_id = :b", b=v2)
    with registered.reading() as session:
        context = load_plan_context(session, plan_ref=f"{PLAN}@v2", now=NOW, limits=LIMITS)
        found = GateRepository(session).recomputation(
            v2, key, PLANNER_VERSION, calibration_key(context), DEFAULT_SEED
        )
    assert found is None
    seq = seq_of(registered, "plan.recompute")
    assert problems(registered) == [
        f"recomputations id 1 (plan record {v2}): differs from event {seq}: plan_record_id is "
        f"{v2}, the event recorded {v1}"
    ]


def test_recomputation_forged_to_match_is_refused(
    registered: Database, allowed: DecisionView, engine: EmbeddedEngine
) -> None:
    """Re-keyed to v2's inputs too, it is found, and the gate refuses it."""
    _, v2, key = _other_version(registered)
    sql(registered, "UPDATE recomputations SET plan_record_id = :b, inputs_key = :k", b=v2, k=key)
    with pytest.raises(Tampered, match=r"recomputations id 1 .*differs from event"):
        gate(registered, engine, f"{PLAN}@v2")
