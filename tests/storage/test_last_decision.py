"""The plan's last decision and the calibration it was decided with, taken out of its
stored input by the database (registry/storage/repository/gate.py, last_decision), on
SQLite and PostgreSQL alike; and how the gate reads what it returns."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from registry.digest import canonical_json
from registry.gate.service import _previous_decision
from registry.storage.database import Database, WriteContext
from registry.storage.models import DecisionRow, RecordRow
from registry.storage.repository.gate import GateRepository

T0 = datetime(2026, 12, 1, tzinfo=UTC)
_PLANS = itertools.count()
CALIBRATION = {"fitted": True, "mfu": 0.41, "mbu": 0.77, "points": 3, "nested": {"a": [1, 2]}}


def _store(database: Database, decisions: list[tuple[str, str, Any, int]]) -> None:
    """A plan record and decisions (id, plan name, input document or text, minute)."""

    def work(ctx: WriteContext) -> None:
        plan = RecordRow(
            kind="plan",
            name=f"plan-record-{next(_PLANS)}",
            version=1,
            digest="sha256:" + "0" * 64,
            content="{}",
            created_at=T0,
            created_by="t",
        )
        ctx.session.add(plan)
        ctx.session.flush()
        for decision_id, plan_name, document, minute in decisions:
            text = document if isinstance(document, str) else canonical_json(document)
            ctx.session.add(
                DecisionRow(
                    id=decision_id,
                    plan_record_id=plan.id,
                    plan_name=plan_name,
                    outcome="allow",
                    engine="embedded",
                    bundle_revision="sha256:x",
                    input_digest="sha256:x",
                    input=text,
                    violations="[]",
                    waivers="{}",
                    warnings="[]",
                    principal="t",
                    created_at=T0 + timedelta(minutes=minute),
                )
            )

    database.write(work, principal="t")


def _last(database: Database, plan_name: str) -> tuple[str, str | None] | None:
    with database.reading() as session:
        return GateRepository(session).last_decision(plan_name)


def test_success_the_newest_decisions_calibration_comes_back_as_json(database: Database) -> None:
    _store(
        database,
        [
            ("d-old", "p", {"recomputation": {"calibration": {"fitted": False}}}, 1),
            ("d-new", "p", {"recomputation": {"calibration": CALIBRATION}, "plan": {}}, 2),
            ("d-other", "q", {"recomputation": {"calibration": {"fitted": False}}}, 3),
        ],
    )
    found = _last(database, "p")
    assert found is not None and found[0] == "d-new"
    assert found[1] is not None
    assert json.loads(found[1]) == CALIBRATION


def test_edge_no_calibration_in_the_input_is_none(database: Database) -> None:
    _store(database, [("d-1", "p", {"recomputation": {}}, 1), ("d-2", "q", {}, 2)])
    assert _last(database, "p") == ("d-1", None)
    assert _last(database, "q") == ("d-2", None)
    assert _last(database, "nobody") is None


def test_edge_a_calibration_that_is_not_an_object_is_no_calibration(database: Database) -> None:
    """A string or a number where the object belongs (an older or a hand-edited input) is
    read as no calibration, never an error the gate would answer with."""
    for index, value in enumerate(("fitted", 3, [1], None)):
        name = f"plan-{index}"
        _store(database, [(f"d-{index}", name, {"recomputation": {"calibration": value}}, 1)])
        with database.reading() as session:
            assert _previous_decision(session, name) == (f"d-{index}", None)
