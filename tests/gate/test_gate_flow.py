"""The gate end to end on registered records: decisions, waivers, staleness, fail-closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest

from registry.errors import NotFound
from registry.gate.service import check, get_decision, list_decisions
from registry.gate.views import Outcome
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyError
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from tests.factories import approve_waiver, example, import_example_evidence, short_grace_plan

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = StalenessThresholds()


def submit(database: Database, kind: str, document: dict[str, Any], *, at: datetime = NOW) -> str:
    """Submit as alice at `at` (the registry's clock: waivers are judged against it)."""
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    result = database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record),
        principal="alice",
        now=lambda: at,
    )
    return result.record.ref


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


@pytest.fixture
def registered(database: Database) -> Database:
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    import_example_evidence(database)
    return database


def gate(database: Database, engine: Any, plan: str = "chat-assistant-prod", now: datetime = NOW):
    return check(database, engine, plan_ref=plan, principal="release-bot", limits=LIMITS, now=now)


def test_worked_example_is_allowed_and_recorded(
    registered: Database, engine: EmbeddedEngine
) -> None:
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.allow, decision.violations
    assert decision.violations == [] and decision.error is None
    assert decision.engine == "embedded" and decision.bundle_revision == engine.revision
    assert decision.inputs["plan"]["ref"] == "chat-assistant-prod@v1"
    assert decision.inputs["evidence"] == [
        {
            "ref": "chat-assistant-h100-mixed-2026-11@v1",
            "digest": decision.inputs["evidence"][0]["digest"],
            "fresh": True,
        }
    ]
    with registered.reading() as session:
        stored = get_decision(session, decision.id, current_revision=engine.revision)
        page = list_decisions(session, plan="chat-assistant-prod")
    assert stored == decision
    assert [d.id for d in page.items] == [decision.id]


def test_short_grace_period_is_denied_by_drain_policy(
    registered: Database, engine: EmbeddedEngine
) -> None:
    submit(registered, "plan", short_grace_plan())
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.deny
    assert {v["policy"] for v in decision.violations} == {"drain_configured"}
    assert any("30" in str(v["message"]) for v in decision.violations)


def waiver(expires: datetime) -> dict[str, Any]:
    return {
        "name": "drain-grace-exception",
        "policy": "drain_configured",
        "plan": "chat-assistant-prod",
        "owner": "sre-lead@example.com",
        "reason": "streams are capped at 25 s by the gateway until the drain hook ships",
        "expires_at": expires.isoformat(),
    }


def test_waiver_turns_deny_into_allow_and_stays_visible(
    registered: Database, engine: EmbeddedEngine
) -> None:
    submit(registered, "plan", short_grace_plan())
    ref = submit(registered, "waiver", waiver(NOW + timedelta(days=10)))
    pending = gate(registered, engine)  # requested by alice, approved by nobody yet
    assert pending.outcome is Outcome.deny
    assert pending.waived == []
    assert any(f"waiver {ref}" in w and "pending approval" in w for w in pending.warnings)
    approve_waiver(registered, ref, at=NOW)
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.allow
    assert decision.violations == []
    assert {v["policy"] for v in decision.waived} == {"drain_configured"}
    assert decision.waivers_used == ["drain-grace-exception@v1"]
    assert any("expires in 10 days" in w for w in decision.warnings)


def test_expired_waiver_does_not_apply(registered: Database, engine: EmbeddedEngine) -> None:
    submit(registered, "plan", short_grace_plan())
    # Granted five days ago for four days: it has expired since.
    ref = submit(registered, "waiver", waiver(NOW - timedelta(days=1)), at=NOW - timedelta(days=5))
    approve_waiver(registered, ref, at=NOW - timedelta(days=5))
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.deny
    assert decision.waived == []
    assert any("expired" in w and "not applied" in w for w in decision.warnings)


@pytest.mark.parametrize(
    ("expires", "says"),
    [
        (NOW - timedelta(days=1), "has already passed"),
        (NOW + timedelta(days=365 * 50), "more than 90 days away"),
    ],
    ids=["already expired", "fifty years"],
)
def test_waiver_expiry_is_checked_at_submission(
    registered: Database, expires: datetime, says: str
) -> None:
    from registry.errors import InvalidInput

    with pytest.raises(InvalidInput) as error:
        submit(registered, "waiver", waiver(expires))
    assert error.value.problems[0].loc == "expires_at"
    assert says in error.value.problems[0].message


def test_a_waiver_covers_the_plan_version_it_was_granted_for(
    registered: Database, engine: EmbeddedEngine
) -> None:
    """Granted for v2, it does not silently cover a later, worse v3 until granted again."""
    assert submit(registered, "plan", short_grace_plan()) == "chat-assistant-prod@v2"
    assert submit(registered, "waiver", waiver(NOW + timedelta(days=30))) == (
        "drain-grace-exception@v1"
    )
    approve_waiver(registered, "drain-grace-exception@v1")
    assert gate(registered, engine).outcome is Outcome.allow
    worse = short_grace_plan()
    worse["drain"]["termination_grace_period_s"] = 10
    worse["drain"]["pre_stop"]["timeout_s"] = 5
    assert submit(registered, "plan", worse) == "chat-assistant-prod@v3"
    denied = gate(registered, engine)
    assert denied.outcome is Outcome.deny
    assert denied.waived == []
    assert any(
        "granted for chat-assistant-prod@v2, not chat-assistant-prod@v3" in w
        for w in denied.warnings
    )
    # The owner looks at v3 and grants the exception for it: allowed again.
    regrant = dict(waiver(NOW + timedelta(days=30)), granted_for="chat-assistant-prod@v3")
    assert submit(registered, "waiver", regrant) == "drain-grace-exception@v2"
    approve_waiver(registered, "drain-grace-exception@v2")
    assert gate(registered, engine).outcome is Outcome.allow


def test_workload_change_stales_evidence_until_new_evidence(
    registered: Database, engine: EmbeddedEngine
) -> None:
    # The workload's interactive p99 prompt grows 30 %; the plan moves to the new version.
    workload = example("workload")
    prompts = workload["classes"][0]["prompt_tokens"]
    prompts["quantiles"]["p99"] = round(prompts["quantiles"]["p99"] * 1.3)
    assert submit(registered, "workload", workload) == "chat-assistant@v2"
    plan = example("plan", workload="chat-assistant@v2")
    assert submit(registered, "plan", plan) == "chat-assistant-prod@v2"

    denied = gate(registered, engine)
    assert denied.outcome is Outcome.deny
    fresh = [v for v in denied.violations if v["policy"] == "evidence_fresh"]
    assert fresh, denied.violations
    assert "classes.interactive.prompt_tokens.p99" in str(fresh[0])
    assert "6100" in str(fresh[0]) and "7930" in str(fresh[0])

    # A new load test measured against the new versions brings the plan back to allow.
    import_example_evidence(
        registered,
        workload="chat-assistant@v2",
        plan="chat-assistant-prod@v2",
        measured_at="2026-11-29T10:00:00+00:00",
        run=1,
    )
    allowed = gate(registered, engine)
    assert allowed.outcome is Outcome.allow, allowed.violations
    # The earlier decision keeps what it was.
    with registered.reading() as session:
        again = get_decision(session, denied.id, current_revision=None)
    assert again.outcome is Outcome.deny


def test_old_evidence_expires(registered: Database, engine: EmbeddedEngine) -> None:
    decision = gate(registered, engine, now=NOW + timedelta(days=120))
    assert decision.outcome is Outcome.deny
    policies = {v["policy"] for v in decision.violations}
    assert "evidence_fresh" in policies
    # Said once, by the policy that denies: stale evidence is not repeated as a warning.
    fresh = [v for v in decision.violations if v["policy"] == "evidence_fresh"]
    assert any("past the maximum age of 90 days" in str(v["message"]) for v in fresh)
    assert not any("past the maximum age" in w for w in decision.warnings)


class BrokenEngine:
    name = "broken"
    revision = "sha256:" + "0" * 64

    def decide(self, input_document: dict[str, Any]) -> Any:
        raise PolicyError("policy evaluation failed: builtin error")


def test_engine_failure_is_an_error_decision_never_allow(registered: Database) -> None:
    decision = gate(registered, BrokenEngine())
    assert decision.outcome is Outcome.error
    assert decision.outcome.exit_code == 2
    assert decision.error == "policy evaluation failed: builtin error"
    with registered.reading() as session:
        stored = list_decisions(session, outcome=Outcome.error)
    assert [d.id for d in stored.items] == [decision.id]


class AllowingWithViolations:
    name = "inconsistent"
    revision = "sha256:" + "1" * 64

    def decide(self, input_document: dict[str, Any]) -> Any:
        class Decision:
            allow = True
            violations: ClassVar[list[dict[str, Any]]] = [
                {"policy": "x", "rule": "y", "severity": "high", "message": "m", "details": {}}
            ]
            notes: ClassVar[list[dict[str, Any]]] = []

        return Decision()


def test_inconsistent_engine_answer_is_an_error(registered: Database) -> None:
    decision = gate(registered, AllowingWithViolations())
    assert decision.outcome is Outcome.error


def test_unknown_plan_is_not_found(registered: Database, engine: EmbeddedEngine) -> None:
    with pytest.raises(NotFound):
        gate(registered, engine, plan="no-such-plan")


def test_unreadable_evidence_fails_closed(registered: Database, engine: EmbeddedEngine) -> None:
    from sqlalchemy import update

    from registry.errors import CapgateError
    from registry.storage.models import RecordRow

    with registered.engine.begin() as connection:
        connection.execute(
            update(RecordRow).where(RecordRow.kind == "evidence").values(content="{broken")
        )
    # Content that no longer hashes to its digest is refused before it is parsed (by the
    # registry-wide check, which names the row: registry.audit.quarantine).
    with pytest.raises(CapgateError, match=r"quarantined: records id .* its content does not hash"):
        gate(registered, engine)


def test_decisions_filter_and_paginate(registered: Database, engine: EmbeddedEngine) -> None:
    first = gate(registered, engine)
    submit(registered, "plan", short_grace_plan())
    second = gate(registered, engine)
    with registered.reading() as session:
        denies = list_decisions(session, outcome=Outcome.deny)
        newest = list_decisions(session, limit=1, total=True)
        rest = list_decisions(session, limit=1, cursor=newest.next_cursor)
        by_bot = list_decisions(session, principal="release-bot")
    assert [d.id for d in denies.items] == [second.id]
    # Both decisions share one instant here: the cursor still walks each exactly once.
    assert newest.total == 2 and len(newest.items) == 1 and newest.next_cursor
    assert {d.id for d in newest.items + rest.items} == {first.id, second.id}
    assert rest.next_cursor is None and rest.total is None
    assert {d.id for d in by_bot.items} == {first.id, second.id}
    assert first.inputs["plan"]["ref"] == "chat-assistant-prod@v1"


def test_plan_still_pinning_the_old_workload_sees_recorded_staleness(
    registered: Database, engine: EmbeddedEngine
) -> None:
    workload = example("workload")
    workload["classes"][0]["arrival"]["peak_rps"] = 60.0  # +43 % over 42
    submit(registered, "workload", workload)
    # The plan was not resubmitted: it still pins chat-assistant@v1, as does the evidence.
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.deny
    fresh = [v for v in decision.violations if v["policy"] == "evidence_fresh"]
    assert len(fresh) == 1
    assert (
        "chat-assistant@v1 -> chat-assistant@v2: classes.interactive.arrival.peak_rps: "
        "42.0 -> 60.0, grew 43% (threshold 0.2)"
        in str(fresh[0]["message"])
        + str(fresh[0]["details"])
    )


def test_a_load_test_with_failed_requests_does_not_show_the_slo(database: Database) -> None:
    """The example's load test where 7 % of interactive requests failed with HTTP 500: the
    latencies of the requests that survived look fine, the gate does not take them."""
    import json

    from registry.importers.service import ImportFile, ImportOptions, import_files
    from tests.factories import EXAMPLE_EVIDENCE, load_test_bytes

    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    interactive = json.loads(load_test_bytes("interactive"))
    completed = int(interactive["request_count"]["avg"])
    failed = round(completed * 0.07)
    cancelled = int(interactive["error_request_count"]["avg"])
    interactive["error_request_count"]["avg"] = float(cancelled + failed)
    interactive["error_summary"].append(
        {
            "error_details": {"code": 500, "type": "HTTPError", "message": "upstream error"},
            "count": failed,
        }
    )
    files = [
        ImportFile("interactive.json", json.dumps(interactive).encode(), "interactive"),
        ImportFile("batch.json", load_test_bytes("batch"), "batch"),
    ]
    options = ImportOptions(
        workload="chat-assistant",
        provider="llama31-8b-h100-vllm",
        plan="chat-assistant-prod",
        replicas=1,
        measured_at=datetime(2026, 11, 24, 14, 5, tzinfo=UTC),
        name=EXAMPLE_EVIDENCE,
        mixed=True,
    )
    import_files(database, files, options, principal="alice")
    engine = EmbeddedEngine()
    decision = gate(database, engine)
    assert decision.outcome is Outcome.deny
    (errors,) = [v for v in decision.violations if v["rule"] == "evidence_errors"]
    batch_completed = int(json.loads(load_test_bytes("batch"))["request_count"]["avg"])
    expected = failed / (completed + batch_completed + failed)
    assert errors["details"]["failed"] == failed
    assert errors["details"]["error_rate"] == pytest.approx(expected, abs=1e-6)
    assert {v["rule"] for v in decision.violations if v["policy"] == "tail_slo"} == {
        "evidence_errors",
        "no_evidence_at_peak",
    }


def test_conservative_claims_allow_with_a_warning(
    registered: Database, engine: EmbeddedEngine
) -> None:
    """A plan promising less than it can keep is not denied: the gap is a warning."""
    plan = example("plan")
    plan["claims"]["per_class"]["interactive"]["ttft_p99_ms"] = 5000
    assert submit(registered, "plan", plan) == "chat-assistant-prod@v2"
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.allow, decision.violations
    (note,) = [w for w in decision.warnings if "claims_pessimistic" in w]
    assert note.startswith("tail_slo.claims_pessimistic: the plan's claims exceed the ")
    assert "interactive.ttft_p99_ms 5000 ms (predicted " in note
    assert note.endswith("the claims are conservative")
