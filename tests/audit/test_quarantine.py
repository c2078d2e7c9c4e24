"""The quarantine: a failed integrity check anywhere refuses every gate check.

Plan X (the worked example's plan) is decided, plan Y (the same plan under another
name) is decided too (so the gate's guard holds a verified baseline), then something of
plan X's, or of no plan, is tampered with in SQL: a check of plan Y must be an error
naming the failure, in the warm process (the incremental check) and in a fresh one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.api.app import create_app
from registry.audit import checkpoint as checkpoints
from registry.audit.acknowledgements import ACKNOWLEDGE
from registry.audit.integrity.sweep import SWEEP_ENV
from registry.audit.quarantine import acknowledge
from registry.audit.service import verify
from registry.errors import Conflict, InvalidInput, Tampered
from registry.gate.views import DecisionView
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from tests.api.test_gate_api import settings
from tests.audit.conftest import (
    HouseRule,
    checked,
    decisions,
    event_count,
    events,
    gate,
    problems,
    record_id,
    seq_of,
    sql,
    submit,
    take_checkpoint,
)
from tests.audit.test_rows import _waiver
from tests.factories import approve_waiver, example
from tests.support.auth import bearer, token_for
from tests.support.cli_process import capgate

PLAN_Y = "chat-assistant-canary"

# Started first by tests/conftest.py: about 31 s of an idle core (the CLI's refusals run as
# processes, a fresh process's guard being the subject).
pytestmark = pytest.mark.long(30)


@pytest.fixture
def two_plans(registered: Database, denied: DecisionView, engine: EmbeddedEngine) -> DecisionView:
    """Plan X denied (a decision worth flipping), plan Y decided after it: the guard of
    this process has verified every row (its baseline) before anything is touched."""
    submit(registered, "plan", example("plan", name=PLAN_Y))
    gate(registered, engine, PLAN_Y)
    return denied


def assert_quarantined(
    database: Database, engine: EmbeddedEngine, *names: str, plan: str = PLAN_Y
) -> list[str]:
    """A check of `plan` raises Tampered (exit 2) naming each of `names`, in this process
    (its guard warm) and in a new one; nothing is kept."""
    before = decisions(database), event_count(database)
    fresh = Database(database.url)
    messages = []
    try:
        for handle in (database, fresh):
            with pytest.raises(Tampered) as refused:
                gate(handle, engine, plan)
            message = refused.value.message
            assert refused.value.exit_code == 2 and "\n" not in message
            assert message.startswith("the registry is quarantined: "), message
            assert "capgate audit verify" in message
            for name in names:
                assert name in message, (name, message)
            messages.append(message)
    finally:
        fresh.engine.dispose()
    assert (decisions(database), event_count(database)) == before
    return messages


def flip(database: Database, decision_id: str) -> None:
    sql(
        database,
        "UPDATE decisions SET outcome = 'allow', violations = '[]' WHERE id = :d",
        d=decision_id,
    )


def test_a_flipped_decision_of_plan_x_refuses_checks_of_plan_y_until_repaired(
    two_plans: DecisionView, registered: Database, engine: EmbeddedEngine
) -> None:
    denied = two_plans
    stored = sql(
        registered, "SELECT outcome, violations FROM decisions WHERE id = :d", d=denied.id
    ).one()
    flip(registered, denied.id)
    seq = seq_of(registered, "gate.check", decision=denied.id)
    assert_quarantined(
        registered,
        engine,
        f"decisions {denied.id}: differs from event {seq}: outcome is 'allow', the event "
        "recorded 'deny'",
    )
    # Repaired: the row put back as its event recorded it.
    sql(
        registered,
        "UPDATE decisions SET outcome = :o, violations = :v WHERE id = :d",
        o=stored[0],
        v=stored[1],
        d=denied.id,
    )
    assert problems(registered) == []
    assert gate(registered, engine, PLAN_Y).outcome.value in {"allow", "deny"}
    fresh = Database(registered.url)
    try:
        assert gate(fresh, engine, PLAN_Y).outcome.value in {"allow", "deny"}
    finally:
        fresh.engine.dispose()


def test_rows_written_since_the_baseline_are_checked_and_do_not_quarantine(
    two_plans: DecisionView, registered: Database, engine: EmbeddedEngine
) -> None:
    """The incremental path: legitimate writes between checks keep the registry decided;
    a row forged after them is found."""
    gate(registered, HouseRule(engine))
    submit(registered, "waiver", _waiver())
    assert gate(registered, engine, PLAN_Y).outcome.value in {"allow", "deny"}
    latest = sql(registered, "SELECT id FROM decisions ORDER BY created_at DESC, id").first()[0]
    sql(registered, "UPDATE decisions SET principal = 'mallory' WHERE id = :d", d=latest)
    assert_quarantined(registered, engine, f"decisions {latest}", "principal is 'mallory'")


def _chain(database: Database) -> tuple[str, ...]:
    seq = seq_of(database, "plan.submit", ref=f"{PLAN_Y}@v1")
    sql(database, "UPDATE audit_events SET principal = 'mallory' WHERE seq = :s", s=seq)
    return (f"event {seq} was altered",)


def _rows(database: Database) -> tuple[str, ...]:
    plan_id = record_id(database, "plan", "chat-assistant-prod", 1)
    sql(database, "UPDATE records SET created_by = 'mallory' WHERE id = :i", i=plan_id)
    return (f"records id {plan_id}", "created_by is 'mallory'")


def _forged_row(database: Database) -> tuple[str, ...]:
    sql(
        database,
        "INSERT INTO evidence_withdrawals (evidence_record_id, reason, withdrawn_by, "
        "withdrawn_at) SELECT id, 'forged', 'mallory', created_at FROM records "
        "WHERE kind = 'evidence'",
    )
    return ("evidence_withdrawals id", "no audit event recorded this row")


def _deleted_decision(database: Database) -> tuple[str, ...]:
    decision = sql(database, "SELECT id FROM decisions ORDER BY created_at, id").first()[0]
    sql(database, "DELETE FROM decision_attestations WHERE decision_id = :d", d=decision)
    sql(database, "DELETE FROM decisions WHERE id = :d", d=decision)
    return (f"decisions {decision}", "missing from the table")


def _approval(database: Database) -> tuple[str, ...]:
    submit(database, "waiver", _waiver())
    approve_waiver(database, "freeze-exception@v1")
    sql(database, "UPDATE waiver_approvals SET approved_by = 'mallory'")
    waiver = record_id(database, "waiver", "freeze-exception", 1)
    return (f"waiver_approvals of waiver record {waiver}", "approved_by is 'mallory'")


TAMPERING: dict[str, Callable[[Database], tuple[str, ...]]] = {
    "chain": _chain,
    "rows": _rows,
    "forged row": _forged_row,
    "decisions": _deleted_decision,
    "approvals": _approval,
}


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_every_kind_of_tampering_quarantines(
    two_plans: DecisionView, registered: Database, engine: EmbeddedEngine, kind: str
) -> None:
    names = TAMPERING[kind](registered)
    assert problems(registered), kind
    assert_quarantined(registered, engine, *names)


def test_a_chain_contradicting_the_saved_checkpoint_quarantines(
    two_plans: DecisionView,
    registered: Database,
    engine: EmbeddedEngine,
    signing_key: Ed25519PrivateKey,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    signed = take_checkpoint(registered, signing_key)
    saved, public = tmp_path / "checkpoint.json", tmp_path / "key.pub.pem"
    checkpoints.write(signed, saved)
    from cryptography.hazmat.primitives import serialization

    public.write_bytes(
        signing_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    monkeypatch.setenv(checkpoints.CHECKPOINT_ENV, str(saved))
    monkeypatch.setenv(checkpoints.CHECKPOINT_KEY_ENV, str(public))
    # The tail cut, rows and all, as in tampering test 3b: only the checkpoint shows it.
    last = events(registered)[-1]
    assert last["action"] == "gate.check"
    decision = last["payload"]["decision"]
    sql(registered, "DELETE FROM decision_attestations WHERE decision_id = :d", d=decision)
    sql(registered, "DELETE FROM decisions WHERE id = :d", d=decision)
    sql(registered, "DELETE FROM audit_events WHERE seq = :s", s=last["seq"])
    assert problems(registered) == []  # only the checkpoint shows it
    assert problems(registered, checked(signed, signing_key))
    assert_quarantined(registered, engine, "contradicts the saved checkpoint")


def test_an_acknowledgement_lifts_the_quarantine_and_is_audited(
    two_plans: DecisionView, registered: Database, engine: EmbeddedEngine
) -> None:
    """A deleted event cannot be put back: an admin acknowledges it, with a reason."""
    with pytest.raises(Conflict, match="nothing to acknowledge"):
        acknowledge(registered, principal="admin-ann", reason="nothing is wrong")
    seq = seq_of(registered, "workload.submit")
    sql(registered, "DELETE FROM audit_events WHERE seq = :s", s=seq)
    messages = assert_quarantined(registered, engine)
    assert all(f"event {seq} is missing" in m or "1 were deleted" in m for m in messages)
    with pytest.raises(InvalidInput):
        acknowledge(registered, principal="admin-ann", reason="  ")
    done = acknowledge(
        registered, principal="admin-ann", reason="restored from backup; event lost (INC-42)"
    )
    assert any(f"event {seq} is missing" in p for p in done.problems)
    # In the trail: who, why, and what exactly was acknowledged.
    event = [e for e in events(registered) if e["action"] == ACKNOWLEDGE][-1]
    assert event["seq"] == done.seq
    assert event["payload"]["reason"] == "restored from backup; event lost (INC-42)"
    assert event["payload"]["problems"] == done.problems
    assert sql(registered, "SELECT principal FROM audit_events WHERE seq = :s", s=done.seq).one()[
        0
    ] == ("admin-ann")
    # Verify still tells the truth, marking what was acknowledged.
    with registered.reading() as session:
        report = verify(session)
    assert not report.intact and report.acknowledged == report.problems
    for handle in (registered, Database(registered.url)):
        assert gate(handle, engine, PLAN_Y).outcome.value in {"allow", "deny"}
    # Anything else quarantines again.
    flip(registered, two_plans.id)
    assert_quarantined(registered, engine, f"decisions {two_plans.id}")


# ---- the CLI and the API -------------------------------------------------------------------


def _cli_env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(
        CAPGATE_DATABASE_URL=url,
        CAPGATE_PRINCIPAL="ci",
        CAPGATE_POLICY_ENGINE="embedded",
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return env


def test_cli_gate_check_exits_2_and_acknowledge_lifts_it(
    two_plans: DecisionView, registered: Database, tmp_path: Path
) -> None:
    env = _cli_env(tmp_path, registered.url)
    flip(registered, two_plans.id)
    refused = capgate("gate", "check", PLAN_Y, env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "the registry is quarantined" in refused.stderr
    assert f"decisions {two_plans.id}" in refused.stderr
    assert "capgate audit verify" in refused.stderr
    verified = capgate("audit", "verify", env=env)
    assert verified.returncode == 1
    assert "the registry is quarantined" in verified.stdout

    done = capgate("audit", "acknowledge", "--reason", "INC-7: outcome reviewed", env=env)
    assert done.returncode == 0, done.stderr
    assert f"decisions {two_plans.id}" in done.stdout
    verified = capgate("audit", "verify", env=env)
    assert verified.returncode == 1 and "(acknowledged)" in verified.stdout
    assert "the registry is quarantined" not in verified.stdout
    decided = capgate("gate", "check", PLAN_Y, env=env)
    assert decided.returncode in (0, 1), decided.stderr  # allow or deny: decided


def test_api_gate_check_is_an_error_and_only_an_admin_acknowledges(
    two_plans: DecisionView, registered: Database
) -> None:
    from fastapi.testclient import TestClient

    app = create_app(registered, settings())
    pipeline = bearer(token_for(registered, "release-bot", roles=["pipeline"]))
    admin = bearer(token_for(registered, "admin-ann", roles=["admin"]))
    flip(registered, two_plans.id)
    with TestClient(app) as client:
        refused = client.post("/v1/gate/checks", json={"plan": PLAN_Y}, headers=pipeline)
        assert refused.status_code == 500, refused.text
        assert "the registry is quarantined" in refused.text
        assert f"decisions {two_plans.id}" in refused.text
        asked = {"reason": "INC-7: outcome reviewed"}
        forbidden = client.post("/v1/audit/acknowledgements", json=asked, headers=pipeline)
        assert forbidden.status_code == 403
        done = client.post("/v1/audit/acknowledgements", json=asked, headers=admin)
        assert done.status_code == 201, done.text
        assert done.json()["principal"] == "admin-ann"
        report = client.get("/v1/audit/verify", headers=admin).json()
        assert report["acknowledged"] == report["problems"] != []
        decided = client.post("/v1/gate/checks", json={"plan": PLAN_Y}, headers=pipeline)
        assert decided.status_code == 200, decided.text


def test_spaced_sweeps_see_a_flip_at_the_next_sweep(
    two_plans: DecisionView,
    registered: Database,
    engine: EmbeddedEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CAPGATE_QUARANTINE_SWEEP_S trades immediacy for cost: between sweeps a process
    verifies what was added, not what it verified before; a new process sweeps at once."""
    monkeypatch.setenv(SWEEP_ENV, "3600")
    assert gate(registered, engine, PLAN_Y).outcome.value in {"allow", "deny"}
    flip(registered, two_plans.id)
    assert gate(registered, engine, PLAN_Y).outcome.value in {"allow", "deny"}  # not due
    monkeypatch.setenv(SWEEP_ENV, "0")
    assert_quarantined(registered, engine, f"decisions {two_plans.id}")


def test_server_gate_check_exits_2_until_acknowledged_through_the_server(
    two_plans: DecisionView, registered: Database, tmp_path: Path
) -> None:
    from tests.cli.test_attestation_cli import running_server

    flip(registered, two_plans.id)
    with running_server(registered.url, _cli_env(tmp_path, registered.url)) as env:
        refused = capgate("gate", "check", PLAN_Y, env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "the registry is quarantined" in refused.stderr
        assert f"decisions {two_plans.id}" in refused.stderr
        done = capgate("audit", "acknowledge", "--reason", "INC-8", "--json", env=env)
        assert done.returncode == 0, done.stderr
        assert f"decisions {two_plans.id}" in done.stdout
        decided = capgate("gate", "check", PLAN_Y, env=env)
        assert decided.returncode in (0, 1), decided.stderr


def test_every_table_the_audit_covers_is_swept() -> None:
    """A table the audit trail covers but the sweep does not would let an edit there pass
    every gate check: the sweep's tables are the covered ones (and the parts of records)."""
    from registry.audit.rows import COVERED_TABLES
    from registry.storage.fingerprints import KEY_COLUMNS

    assert set(COVERED_TABLES) <= set(KEY_COLUMNS)
