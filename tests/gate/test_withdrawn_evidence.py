"""Withdrawn evidence at the gate: it supports nothing and blocks nothing.

The worked example's evidence is the plan's only load test at peak. Withdrawn, the gate
no longer counts it (tail_slo: no evidence at peak) and it is not in the decision's
input at all; a stale or too-old test, withdrawn, no longer blocks. Decisions taken
before keep what they were. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from registry.evidence_lifecycle import withdraw
from registry.gate.service import check, get_decision
from registry.gate.views import DecisionView
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from tests.factories import example

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
EVIDENCE = "chat-assistant-h100-mixed-2026-11"


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    """The installed bundle, letting declared evidence count: this file uses the declared
    form of the example's load test (examples/chat-assistant/evidence.yaml), whose versions
    are easy to vary by hand, and is about withdrawal, not provenance."""
    bundle = load_bundle()
    data = copy.deepcopy(bundle.data)
    thresholds = data.setdefault("capgate", {}).setdefault("thresholds", {})
    required = thresholds.get("require_imported_evidence")
    if isinstance(required, dict):
        thresholds["require_imported_evidence"] = {policy: False for policy in required}
    return EmbeddedEngine(PolicyBundle.from_sources(dict(bundle.modules), data))


def submit(database: Database, kind: str, document: dict[str, Any]) -> str:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    result = database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record), principal="alice"
    )
    return result.record.ref


def withdrawn(database: Database, ref: str, reason: str = "wrong trace replayed") -> None:
    database.write(lambda ctx: withdraw(ctx, ref=ref, reason=reason), principal="alice")


@pytest.fixture
def registered(database: Database) -> Database:
    for kind in ("workload", "provider", "plan", "evidence"):
        submit(database, kind, example(kind))
    return database


def gate(database: Database, engine: EmbeddedEngine) -> DecisionView:
    return check(
        database,
        engine,
        plan_ref="chat-assistant-prod",
        principal="release-bot",
        limits=StalenessThresholds(),
        now=NOW,
    )


def rules(decision: DecisionView, policy: str) -> list[str]:
    return [str(v["rule"]) for v in decision.violations if v["policy"] == policy]


def evidence_refs(decision: DecisionView) -> list[str]:
    return [str(e["ref"]) for e in decision.inputs["evidence"]]


def test_the_only_evidence_at_peak_withdrawn_no_longer_counts(
    registered: Database, engine: EmbeddedEngine
) -> None:
    before = gate(registered, engine)
    assert evidence_refs(before) == [f"{EVIDENCE}@v1"]
    assert "no_evidence_at_peak" not in rules(before, "tail_slo"), before.violations

    withdrawn(registered, EVIDENCE)
    after = gate(registered, engine)
    assert evidence_refs(after) == []
    assert "no_evidence_at_peak" in rules(after, "tail_slo")
    (at_peak,) = [v for v in after.violations if v["rule"] == "no_evidence_at_peak"]
    assert at_peak["details"]["fresh_evidence"] == []
    assert after.outcome.value == "deny"

    # The earlier decision keeps what it was decided on.
    with registered.reading() as session:
        kept = get_decision(session, before.id, current_revision=None)
    assert evidence_refs(kept) == [f"{EVIDENCE}@v1"]
    assert kept.outcome == before.outcome


def test_withdrawn_stale_evidence_blocks_nothing(
    registered: Database, engine: EmbeddedEngine
) -> None:
    old = copy.deepcopy(example("evidence"))
    old["name"] = "chat-assistant-h100-mixed-2026-07"
    old["raw_file"]["sha256"] = "sha256:" + "7a" * 32
    old["measured_at"] = (NOW - timedelta(days=120)).isoformat()
    submit(registered, "evidence", old)
    # Beside the fresh test the old one blocks nothing already: it is a warning.
    noted = gate(registered, engine)
    assert noted.outcome.value == "allow", noted.violations
    assert any("evidence_fresh.evidence_too_old" in w for w in noted.warnings)
    assert "chat-assistant-h100-mixed-2026-07@v1" in evidence_refs(noted)

    withdrawn(registered, "chat-assistant-h100-mixed-2026-07", "superseded by the November run")
    cleared = gate(registered, engine)
    assert not any("evidence_fresh" in w for w in cleared.warnings)
    assert evidence_refs(cleared) == [f"{EVIDENCE}@v1"]

    # Alone, an old test denies, naming its age; withdrawn, it no longer does.
    withdrawn(registered, EVIDENCE, "replaced")
    old_only = copy.deepcopy(example("evidence"))
    old_only["name"] = "chat-assistant-h100-mixed-2026-06"
    old_only["raw_file"]["sha256"] = "sha256:" + "7b" * 32
    old_only["measured_at"] = (NOW - timedelta(days=150)).isoformat()
    submit(registered, "evidence", old_only)
    blocked = gate(registered, engine)
    assert "evidence_too_old" in rules(blocked, "evidence_fresh"), blocked.violations
    withdrawn(registered, "chat-assistant-h100-mixed-2026-06", "too old to trust")
    assert rules(gate(registered, engine), "evidence_fresh") == []


def test_a_withdrawn_latest_version_does_not_bring_back_the_one_it_replaced(
    registered: Database, engine: EmbeddedEngine
) -> None:
    assert (
        submit(registered, "evidence", example("evidence", description="re-described"))
        == f"{EVIDENCE}@v2"
    )
    assert evidence_refs(gate(registered, engine)) == [f"{EVIDENCE}@v2"]
    withdrawn(registered, f"{EVIDENCE}@v2")
    decision = gate(registered, engine)
    # v1 was replaced by v2 (stale, "evidence data replaced"): it does not come back to
    # block the plan, and v2 supports nothing.
    assert evidence_refs(decision) == []
    assert rules(decision, "evidence_fresh") == []
    assert "no_evidence_at_peak" in rules(decision, "tail_slo")
