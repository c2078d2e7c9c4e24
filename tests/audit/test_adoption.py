"""Schema 0006 adopts the rows written before events recorded them."""

from __future__ import annotations

from registry.digest import canonical_json
from registry.gate.views import DecisionView
from registry.policy.embedded import EmbeddedEngine
from registry.storage import migrate
from registry.storage.database import Database
from tests.audit.conftest import (
    event_count,
    events,
    gate,
    problems,
    rechain,
    sql,
)


def test_upgrade_to_0006_adopts_existing_rows(
    registered: Database, allowed: DecisionView, engine: EmbeddedEngine
) -> None:
    # What schema 0005 left: events without row entries (the chain as it hashed them).
    for event in events(registered):
        payload = {k: v for k, v in event["payload"].items() if k != "rows"}
        sql(
            registered,
            "UPDATE audit_events SET payload = :p WHERE seq = :s",
            p=canonical_json(payload),
            s=event["seq"],
        )
    rechain(registered)
    unrecorded = problems(registered)
    # 4 records, their 4 series owners (0010), the recomputation and the decision; the
    # downgrade to 0005 drops series_owners, and an upgrade starts it empty.
    assert len(unrecorded) == 10
    assert all(p.endswith("no audit event recorded this row") for p in unrecorded)
    legacy = event_count(registered)
    migrate.downgrade(registered.url, "0005")
    migrate.upgrade(registered.url)
    adopted = events(registered)[legacy:]
    assert [(e["action"], e["payload"]["schema"]) for e in adopted] == [("audit.adopt", "0006")]
    assert {r["table"] for r in adopted[0]["payload"]["rows"]} == {
        "records",
        "recomputations",
        "decisions",
    }
    assert problems(registered) == []
    fresh = Database(registered.url)
    try:
        assert gate(fresh, engine).outcome.value == "allow"
    finally:
        fresh.engine.dispose()
    # The backfilled recomputation was found by its inputs: only the decision was added.
    assert event_count(registered) == legacy + 2
