"""Ten ways to tamper with a registry: `audit verify` names each, the gate fails closed.

Each test builds a registry through the services, tampers with it in raw SQL, then
asserts the exact problem `audit verify` reports and that the gate refuses to decide
(Tampered, exit 2, nothing kept), both in the process that decided before (its guard
warm) and in a new one.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.digest import canonical_json, content_digest
from registry.errors import Tampered
from registry.gate.views import DecisionView
from registry.policy.embedded import EmbeddedEngine
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.storage.database import Database
from tests.audit.conftest import (
    NOW,
    PLAN,
    HouseRule,
    assert_gate_refuses,
    checked,
    edit_event_payload,
    events,
    gate,
    problems,
    rechain,
    record_id,
    seq_of,
    sql,
    submit,
    take_checkpoint,
)
from tests.factories import example


def test_intact_registry_verifies(registered: Database, allowed: DecisionView) -> None:
    assert problems(registered) == []
    assert [e["action"] for e in events(registered)][-2:] == ["plan.recompute", "gate.check"]


# ---- the chain ---------------------------------------------------------------------------


def test_1_edited_event_payload(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    seq = seq_of(registered, "plan.submit")
    edit_event_payload(registered, seq, ref=f"{PLAN}@v7")
    assert problems(registered) == [f"event {seq} was altered: its hash does not match its content"]
    messages = assert_gate_refuses(registered, fresh_process, engine)
    assert all(f"event {seq} was altered" in m for m in messages)


def test_2_deleted_middle_event(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    seq = seq_of(registered, "provider.submit")
    provider = record_id(registered, "provider", "llama31-8b-h100-vllm", 1)
    owner = sql(
        registered, "SELECT id FROM series_owners WHERE kind = 'provider'"
    ).scalar_one()  # claimed in the same event (migration 0010)
    sql(registered, "DELETE FROM audit_events WHERE seq = :s", s=seq)
    assert problems(registered) == [
        f"event {seq} is missing (next is {seq + 1})",
        f"event {seq + 1} does not follow its predecessor's hash",
        f"records id {provider} (provider llama31-8b-h100-vllm@v1): no audit event recorded "
        "this row",
        f"series_owners id {owner} (provider llama31-8b-h100-vllm): no audit event recorded "
        "this row",
    ]
    warm, cold = assert_gate_refuses(registered, fresh_process, engine)
    assert "1 were deleted" in warm and f"event {seq} is missing" in cold


def test_3_deleted_tail_against_a_checkpoint(
    registered: Database,
    allowed: DecisionView,
    fresh_process: Database,
    engine: EmbeddedEngine,
    signing_key: Ed25519PrivateKey,
) -> None:
    signed = take_checkpoint(registered, signing_key)
    cut = seq_of(registered, "plan.recompute")
    plan = record_id(registered, "plan", PLAN, 1)
    sql(registered, "DELETE FROM audit_events WHERE seq >= :s", s=cut)
    rows = [
        f"decisions {allowed.id}: no audit event recorded this row",
        f"recomputations id 1 (plan record {plan}): no audit event recorded this row",
    ]
    assert problems(registered) == rows
    assert problems(registered, checked(signed, signing_key)) == [
        *rows,
        f"the chain ends at event {cut - 1}, before event {signed.checkpoint.size} of the "
        f"checkpoint of {NOW.isoformat()}: its tail was removed",
    ]
    assert_gate_refuses(registered, fresh_process, engine)


def test_3b_tail_cut_with_its_rows_shows_against_a_checkpoint(
    registered: Database,
    allowed: DecisionView,
    engine: EmbeddedEngine,
    signing_key: Ed25519PrivateKey,
) -> None:
    """Cut with the rows its events recorded, the registry is consistent again: only a
    checkpoint (and a guard that saw the longer chain) can tell."""
    signed = take_checkpoint(registered, signing_key)
    cut = seq_of(registered, "plan.recompute")
    sql(registered, "DELETE FROM decision_attestations WHERE decision_id = :d", d=allowed.id)
    sql(registered, "DELETE FROM decisions WHERE id = :d", d=allowed.id)
    sql(registered, "DELETE FROM recomputations")
    sql(registered, "DELETE FROM audit_events WHERE seq >= :s", s=cut)
    assert problems(registered) == []
    assert problems(registered, checked(signed, signing_key)) == [
        f"the chain ends at event {cut - 1}, before event {signed.checkpoint.size} of the "
        f"checkpoint of {NOW.isoformat()}: its tail was removed"
    ]
    with pytest.raises(Tampered, match=f"event {cut - 1}, verified earlier|is gone"):
        gate(registered, engine)


def test_4_whole_chain_rewritten(
    registered: Database,
    denied: DecisionView,
    fresh_process: Database,
    engine: EmbeddedEngine,
    signing_key: Ed25519PrivateKey,
) -> None:
    """Deny made allow, its event edited to match and every hash recomputed: the chain
    verifies, but the row differs from the event's row entry, and event N from what the
    checkpoint signed."""
    signed = take_checkpoint(registered, signing_key)
    seq = seq_of(registered, "gate.check", decision=denied.id)
    sql(
        registered,
        "UPDATE decisions SET outcome = 'allow', violations = '[]' WHERE id = :d",
        d=denied.id,
    )
    edit_event_payload(registered, seq, outcome="allow")
    rechain(registered)
    row = (
        f"decisions {denied.id}: differs from event {seq}: outcome is 'allow', the event "
        "recorded 'deny'; violations was changed"
    )
    assert problems(registered) == [row]
    size = signed.checkpoint.size
    head = next(e["hash"] for e in events(registered) if e["seq"] == size)
    assert problems(registered, checked(signed, signing_key)) == [
        row,
        f"event {size} has hash {head}, but the checkpoint of {NOW.isoformat()} signed "
        f"{signed.checkpoint.head}: the chain was rewritten",
    ]
    messages = assert_gate_refuses(registered, fresh_process, engine)
    assert all(f"decisions {denied.id}: differs from event {seq}" in m for m in messages)


def test_4b_rewritten_history_without_a_row_to_show_for_it(
    registered: Database,
    allowed: DecisionView,
    engine: EmbeddedEngine,
    signing_key: Ed25519PrivateKey,
) -> None:
    """An old event's payload rewritten (who submitted the plan) and every hash after it
    recomputed, no row touched: only the checkpoint and a guard that saw the chain before
    can tell."""
    signed = take_checkpoint(registered, signing_key)
    seq = seq_of(registered, "plan.submit")
    edit_event_payload(registered, seq, staled=["nothing-to-see@v1"])
    rechain(registered)
    assert problems(registered) == []
    assert problems(registered, checked(signed, signing_key)) == [
        f"event {signed.checkpoint.size} has hash "
        f"{events(registered)[-1]['hash']}, but the checkpoint of {NOW.isoformat()} signed "
        f"{signed.checkpoint.head}: the chain was rewritten"
    ]
    with pytest.raises(Tampered, match="no longer has the hash this process verified"):
        gate(registered, engine)


# ---- records -----------------------------------------------------------------------------


def _plan_row(database: Database) -> tuple[int, str, dict[str, object]]:
    row = sql(
        database,
        "SELECT id, digest, content FROM records WHERE kind = 'plan' AND version = 1",
    ).one()
    return int(row[0]), str(row[1]), json.loads(row[2])


def test_5_record_content_edited_without_its_digest(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    plan_id, digest, content = _plan_row(registered)
    content["replicas_per_zone"] = {"us-east1-b": 1}
    sql(
        registered,
        "UPDATE records SET content = :c WHERE id = :i",
        c=canonical_json(content),
        i=plan_id,
    )
    assert problems(registered) == [
        f"records id {plan_id} (plan {PLAN}@v1): its content does not hash to its digest "
        f"{digest} (edited in place)"
    ]
    messages = assert_gate_refuses(registered, fresh_process, engine)
    # The registry-wide check (the quarantine) names the row before the plan is read.
    assert all(
        f"records id {plan_id}" in m and "its content does not hash to its digest" in m
        for m in messages
    )
    # Re-hashed on every read: `plan show` and GET refuse it too.
    with registered.reading() as session, pytest.raises(Tampered, match=f"{PLAN}@v1 was altered"):
        service.get(session, kind=RecordKind.plan, ref=PLAN)


def test_6_record_content_and_digest_edited(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    plan_id, digest, content = _plan_row(registered)
    content["replicas_per_zone"] = {"us-east1-b": 1}
    forged = content_digest(content)
    sql(
        registered,
        "UPDATE records SET content = :c, digest = :d WHERE id = :i",
        c=canonical_json(content),
        d=forged,
        i=plan_id,
    )
    seq = seq_of(registered, "plan.submit")
    assert problems(registered) == [
        f"records id {plan_id} (plan {PLAN}@v1): differs from event {seq}: digest is "
        f"'{forged}', the event recorded '{digest}'"
    ]
    messages = assert_gate_refuses(registered, fresh_process, engine)
    assert all(f"records id {plan_id}" in m for m in messages)


def test_7_forged_plan_version_inserted(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    plan_id, _, content = _plan_row(registered)
    content["description"] = "looks like an ordinary new version"
    sql(
        registered,
        "INSERT INTO records (kind, name, version, digest, content, created_at, created_by) "
        "VALUES ('plan', :n, 2, :d, :c, :t, 'alice')",
        n=PLAN,
        d=content_digest(content),
        c=canonical_json(content),
        t=NOW,
    )
    forged = record_id(registered, "plan", PLAN, 2)
    sql(
        registered,
        "INSERT INTO record_refs (record_id, role, target_id) "
        "SELECT :f, role, target_id FROM record_refs WHERE record_id = :p",
        f=forged,
        p=plan_id,
    )
    assert problems(registered) == [
        f"records id {forged} (plan {PLAN}@v2): no audit event recorded this row"
    ]
    assert_gate_refuses(registered, fresh_process, engine)


def test_8_forged_waiver_inserted(
    registered: Database, denied: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    """A waiver (and its approval) slipped in to turn the deny into an allow."""
    waiver = validate_record(
        RecordKind.waiver,
        {
            "name": "freeze-exception",
            "policy": "change_freeze",
            "plan": PLAN,
            "granted_for": f"{PLAN}@v1",
            "owner": "sre-lead@example.com",
            "reason": "the release fixes an outage, the freeze must not hold it back",
            "expires_at": (NOW + timedelta(days=10)).isoformat(),
        },
    )
    content = waiver.model_dump(mode="json")
    sql(
        registered,
        "INSERT INTO records (kind, name, version, digest, content, created_at, created_by) "
        "VALUES ('waiver', 'freeze-exception', 1, :d, :c, :t, 'mallory')",
        d=content_digest(content),
        c=canonical_json(content),
        t=NOW,
    )
    forged = record_id(registered, "waiver", "freeze-exception", 1)
    sql(
        registered,
        "INSERT INTO record_refs (record_id, role, target_id) VALUES (:f, 'plan', :p)",
        f=forged,
        p=record_id(registered, "plan", PLAN, 1),
    )
    sql(
        registered,
        "INSERT INTO waiver_approvals (waiver_record_id, approved_by, approved_at) "
        "VALUES (:f, 'mallory-2', :t)",
        f=forged,
        t=NOW,
    )
    assert problems(registered) == [
        f"records id {forged} (waiver freeze-exception@v1): no audit event recorded this row",
        f"waiver_approvals of waiver record {forged}: no audit event recorded this row",
    ]
    assert_gate_refuses(registered, fresh_process, HouseRule(engine))


# ---- decisions and staleness ---------------------------------------------------------------


def test_9_decision_flipped_from_deny_to_allow(
    registered: Database, denied: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    sql(
        registered,
        "UPDATE decisions SET outcome = 'allow', violations = '[]' WHERE id = :d",
        d=denied.id,
    )
    seq = seq_of(registered, "gate.check", decision=denied.id)
    assert problems(registered) == [
        f"decisions {denied.id}: differs from event {seq}: outcome is 'allow', the event "
        "recorded 'deny'; violations was changed"
    ]
    messages = assert_gate_refuses(registered, fresh_process, engine)
    assert all(f"decisions {denied.id}: differs from event {seq}" in m for m in messages)


def test_9b_decision_refiled_under_another_plan(registered: Database, denied: DecisionView) -> None:
    """A deny hidden from whoever lists the plan's decisions: the listing's copy of the
    plan name is edited, the decision itself left intact."""
    sql(registered, "UPDATE decisions SET plan_name = 'elsewhere' WHERE id = :d", d=denied.id)
    assert problems(registered) == [
        f"decisions {denied.id}: filed under plan 'elsewhere' but its plan record is "
        "'chat-assistant-prod' (edited in place)"
    ]


def test_10_staleness_row_deleted(
    registered: Database, allowed: DecisionView, fresh_process: Database, engine: EmbeddedEngine
) -> None:
    """Evidence made stale by a material workload change, made fresh again by deleting
    the staleness row."""
    workload = example("workload")
    workload["classes"][0]["arrival"]["peak_rps"] = 60.0  # +43 % over 42
    assert submit(registered, "workload", workload) == "chat-assistant@v2"
    staleness_id, evidence_id = sql(
        registered, "SELECT id, evidence_record_id FROM staleness"
    ).one()
    seq = seq_of(registered, "workload.submit", ref="chat-assistant@v2")
    sql(registered, "DELETE FROM staleness WHERE id = :i", i=staleness_id)
    assert problems(registered) == [
        f"staleness id {staleness_id} (evidence record {evidence_id}): recorded by event "
        f"{seq} but missing from the table"
    ]
    assert_gate_refuses(registered, fresh_process, engine)
