"""Versioned, immutable series on both databases: one version per content, pinned refs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from registry.audit.chain import verify_chain
from registry.errors import InvalidInput, NotFound
from registry.gate.context import load_plan_context
from registry.gate.waivers import apply_waivers
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.sqlite_reads import SqliteReads
from registry.records.views import SubmitResult
from registry.staleness.rules import StalenessThresholds
from registry.staleness.service import staleness_history
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, RecordRefRow, RecordRow
from registry.storage.sqlite_reads import sqlite_path
from tests.factories import approve_waiver, example, example_path
from tests.support.auth import client_for


def submit(
    database: Database,
    kind: str,
    document: dict[str, Any],
    who: str = "alice",
    *,
    at: datetime | None = None,
) -> SubmitResult:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    return database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record),
        principal=who,
        now=None if at is None else (lambda: at),
    )


def submit_example(database: Database) -> dict[str, SubmitResult]:
    return {
        kind: submit(database, kind, example(kind))
        for kind in ("workload", "provider", "plan", "evidence")
    }


def counts(database: Database) -> tuple[int, int, int]:
    with database.reading() as session:
        return (
            session.scalar(select(func.count()).select_from(RecordRow)) or 0,
            session.scalar(select(func.count()).select_from(RecordRefRow)) or 0,
            session.scalar(select(func.count()).select_from(AuditEventRow)) or 0,
        )


def test_same_content_twice_is_one_version(database: Database) -> None:
    first = submit(database, "workload", example("workload"))
    again = submit(database, "workload", example("workload"), who="bob")
    assert first.created and not again.created
    assert again.record.ref == first.record.ref == "chat-assistant@v1"
    assert again.record.digest == first.record.digest
    assert again.record.created_by == "alice"
    assert counts(database) == (1, 0, 1)


def test_changed_content_is_the_next_version(database: Database) -> None:
    submit(database, "workload", example("workload"))
    changed = submit(database, "workload", example("workload", description="after the launch"))
    assert changed.created
    assert changed.record.ref == "chat-assistant@v2"
    with database.reading() as session:
        latest = service.get(session, kind=RecordKind.workload, ref="chat-assistant")
        first = service.get(session, kind=RecordKind.workload, ref="chat-assistant@v1")
        by_digest = service.get(session, kind=RecordKind.workload, ref=first.digest)
    assert latest.version == 2
    assert first.content["description"] != "after the launch"
    assert by_digest.ref == "chat-assistant@v1"


def test_references_are_resolved_and_pinned(database: Database) -> None:
    submit(database, "workload", example("workload"))
    submit(database, "provider", example("provider"))
    plan = submit(database, "plan", example("plan", workload="chat-assistant"))
    assert plan.record.content["workload"] == "chat-assistant@v1"
    assert plan.record.references == {
        "provider": "llama31-8b-h100-vllm@v1",
        "workload": "chat-assistant@v1",
    }
    # A new workload version does not move an existing plan; resubmitting the plan
    # with the unpinned reference makes a new plan version against the new workload.
    submit(database, "workload", example("workload", owner="new-owner@example.com"))
    resubmitted = submit(database, "plan", example("plan", workload="chat-assistant"))
    assert resubmitted.created
    assert resubmitted.record.references["workload"] == "chat-assistant@v2"
    with database.reading() as session:
        old = service.get(session, kind=RecordKind.plan, ref="chat-assistant-prod@v1")
    assert old.references["workload"] == "chat-assistant@v1"


def test_fail_unknown_reference_names_the_field(database: Database) -> None:
    submit(database, "provider", example("provider"))
    with pytest.raises(InvalidInput) as info:
        submit(database, "plan", example("plan", workload="no-such-workload@v3"))
    assert [(p.loc, p.message) for p in info.value.problems] == [
        ("workload", "no workload record no-such-workload@v3")
    ]
    assert counts(database) == (1, 0, 1)


def test_fail_plan_zone_missing_from_provider(database: Database) -> None:
    submit(database, "workload", example("workload"))
    submit(database, "provider", example("provider"))
    document = example("plan")
    document["replicas_per_zone"] = {"us-east1-b": 3, "us-west1-a": 3}
    with pytest.raises(InvalidInput) as info:
        submit(database, "plan", document)
    [problem] = info.value.problems
    assert problem.loc == "replicas_per_zone.us-west1-a"
    assert "not one of the provider's zones" in problem.message


def test_fail_plan_admission_for_unknown_class(database: Database) -> None:
    submit(database, "workload", example("workload"))
    submit(database, "provider", example("provider"))
    document = example("plan")
    document["admission"]["classes"]["realtime"] = {"queue_deadline_ms": 100}
    with pytest.raises(InvalidInput) as info:
        submit(database, "plan", document)
    assert [p.loc for p in info.value.problems] == ["admission.classes.realtime"]


def test_evidence_pins_workload_provider_and_plan(database: Database) -> None:
    results = submit_example(database)
    evidence = results["evidence"].record
    assert evidence.references == {
        "plan": "chat-assistant-prod@v1",
        "provider": "llama31-8b-h100-vllm@v1",
        "workload": "chat-assistant@v1",
    }
    assert counts(database) == (4, 5, 4)


def test_half_written_submission_leaves_nothing(database: Database) -> None:
    submit(database, "workload", example("workload"))
    before = counts(database)
    record = validate_record(RecordKind.provider, example("provider"))

    def submit_then_fail(ctx: Any) -> None:
        service.submit(ctx, kind=RecordKind.provider, record=record)
        ctx.session.flush()  # the row is in the transaction now ...
        raise RuntimeError("killed half-way")  # ... and the process dies before commit

    with pytest.raises(RuntimeError, match="killed half-way"):
        database.write(submit_then_fail, principal="alice")
    assert counts(database) == before
    with database.reading() as session, pytest.raises(NotFound):
        service.get(session, kind=RecordKind.provider, ref="llama31-8b-h100-vllm")


def test_every_write_is_in_the_audit_chain(database: Database) -> None:
    submit_example(database)
    submit(database, "workload", example("workload"))  # unchanged: no event
    with database.reading() as session:
        events = list(session.scalars(select(AuditEventRow).order_by(AuditEventRow.seq)))
        assert verify_chain(session) == []
        assert [e.action for e in events] == [
            "workload.submit",
            "provider.submit",
            "plan.submit",
            "evidence.submit",
        ]
        assert {e.principal for e in events} == {"alice"}


def test_tampered_audit_event_is_detected(database: Database) -> None:
    submit_example(database)
    with database.engine.begin() as connection:
        connection.execute(
            AuditEventRow.__table__.update()
            .where(AuditEventRow.seq == 2)
            .values(principal="mallory")
        )
    with database.reading() as session:
        problems = verify_chain(session)
    assert problems == ["event 2 was altered: its hash does not match its content"]


def test_list_series_and_versions_paginate(database: Database) -> None:
    for i in range(3):
        submit(database, "workload", example("workload", name=f"svc-{i}"))
    for i in range(4):
        submit(database, "workload", example("workload", name="svc-1", description=f"rev {i}"))
    with database.reading() as session:
        page = service.list_series(session, kind=RecordKind.workload, limit=2, offset=0)
        rest = service.list_series(session, kind=RecordKind.workload, limit=2, offset=2)
        versions = service.list_versions(
            session, kind=RecordKind.workload, name="svc-1", limit=3, offset=2
        )
    assert [(s.name, s.latest_version) for s in page.items] == [("svc-0", 1), ("svc-1", 5)]
    assert [s.name for s in rest.items] == ["svc-2"]
    assert page.total == rest.total == 3
    assert [v.ref for v in versions.items] == ["svc-1@v3", "svc-1@v4", "svc-1@v5"]
    assert versions.total == 5


# ---- reverts: an earlier version's content submitted again ------------------------------

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SERIES = {
    "workload": "chat-assistant",
    "provider": "llama31-8b-h100-vllm",
    "plan": "chat-assistant-prod",
    "evidence": "chat-assistant-h100-mixed-2026-11",
    "waiver": "drain-grace-exception",
}
# What a record of each kind references, registered before it.
PREREQUISITES = {
    "workload": (),
    "provider": (),
    "plan": ("workload", "provider"),
    "evidence": ("workload", "provider", "plan"),
    "waiver": ("workload", "provider", "plan"),
}


def waiver_document(**changes: Any) -> dict[str, Any]:
    return {
        "name": "drain-grace-exception",
        "policy": "drain_configured",
        "plan": "chat-assistant-prod",
        "owner": "sre-lead@example.com",
        "reason": "streams are capped at 25 s by the gateway until the drain hook ships",
        "expires_at": (NOW + timedelta(days=10)).isoformat(),
        **changes,
    }


def document_of(kind: str, **changes: Any) -> dict[str, Any]:
    return waiver_document(**changes) if kind == "waiver" else example(kind, **changes)


def submit_events(database: Database, action: str) -> list[dict[str, Any]]:
    with database.reading() as session:
        rows = session.scalars(
            select(AuditEventRow).where(AuditEventRow.action == action).order_by(AuditEventRow.seq)
        )
        return [json.loads(row.payload) for row in rows]


@pytest.mark.parametrize("kind", list(SERIES))
def test_revert_makes_earlier_content_the_latest(database: Database, kind: str) -> None:
    for target in PREREQUISITES[kind]:
        submit(database, target, example(target), at=NOW)
    name = SERIES[kind]
    first = submit(database, kind, document_of(kind), at=NOW)
    second = submit(database, kind, document_of(kind, description="a later change"), at=NOW)
    reverted = submit(database, kind, document_of(kind), who="bob", at=NOW)
    assert (first.record.ref, second.record.ref) == (f"{name}@v1", f"{name}@v2")
    assert reverted.created
    assert reverted.record.ref == f"{name}@v3"
    assert reverted.record.reverts == f"{name}@v1"
    assert reverted.record.content == first.record.content
    assert reverted.record.digest == first.record.digest
    assert reverted.record.references == first.record.references
    assert reverted.record.created_by == "bob"
    with database.reading() as session:
        latest = service.get(session, kind=RecordKind(kind), ref=name)
        versions = service.list_versions(session, kind=RecordKind(kind), name=name)
        assert verify_chain(session) == []
    assert (latest.ref, latest.reverts, latest.content) == (
        f"{name}@v3",
        f"{name}@v1",
        first.record.content,
    )
    expected = [(f"{name}@v1", None), (f"{name}@v2", None), (f"{name}@v3", f"{name}@v1")]
    assert [(v.ref, v.reverts) for v in versions.items] == expected
    events = submit_events(database, f"{kind}.submit")
    assert [(e["ref"], e["reverts"]) for e in events] == expected
    assert events[-1]["digest"] == first.record.digest


def test_resubmitting_the_latest_stays_idempotent(database: Database) -> None:
    submit(database, "workload", example("workload"))
    submit(database, "workload", example("workload", description="v2"))
    again = submit(database, "workload", example("workload", description="v2"), who="bob")
    assert not again.created
    assert (again.record.ref, again.record.reverts) == ("chat-assistant@v2", None)
    assert submit(database, "workload", example("workload")).record.ref == "chat-assistant@v3"
    before = counts(database)
    same = submit(database, "workload", example("workload"), who="bob")
    assert not same.created
    assert (same.record.ref, same.record.reverts, same.record.created_by) == (
        "chat-assistant@v3",
        "chat-assistant@v1",
        "alice",
    )
    assert counts(database) == before  # no row, no audit event
    # v2's content again reverts v2; v1's once more reverts v1 (the earliest with it).
    forth = submit(database, "workload", example("workload", description="v2"))
    back = submit(database, "workload", example("workload"))
    assert (forth.record.ref, forth.record.reverts) == ("chat-assistant@v4", "chat-assistant@v2")
    assert (back.record.ref, back.record.reverts) == ("chat-assistant@v5", "chat-assistant@v1")
    with database.reading() as session:
        assert verify_chain(session) == []


def test_digest_refs_resolve_to_the_earliest_version(database: Database) -> None:
    first = submit(database, "workload", example("workload"))
    submit(database, "workload", example("workload", description="v2"))
    reverted = submit(database, "workload", example("workload"))
    assert reverted.record.digest == first.record.digest
    digest = first.record.digest
    with database.reading() as session:
        by_digest = service.get(session, kind=RecordKind.workload, ref=digest)
        by_name = service.get(session, kind=RecordKind.workload, ref="chat-assistant")
    assert (by_digest.ref, by_digest.reverts) == ("chat-assistant@v1", None)
    assert (by_name.ref, by_name.reverts) == ("chat-assistant@v3", "chat-assistant@v1")
    # A reference by digest is pinned to the earliest version, as before the revert.
    submit(database, "provider", example("provider"))
    plan = submit(database, "plan", example("plan", workload=digest))
    assert plan.record.references["workload"] == "chat-assistant@v1"
    assert plan.record.content["workload"] == "chat-assistant@v1"
    path = sqlite_path(database.url)
    if path is not None:  # the CLI's SQLite read path answers the same
        reads = SqliteReads(path)
        try:
            for ref in (digest, "chat-assistant", "chat-assistant@v3", "chat-assistant@v2"):
                with database.reading() as session:
                    expected = service.get(session, kind=RecordKind.workload, ref=ref)
                assert reads.get(RecordKind.workload, ref) == expected, ref
        finally:
            reads.close()


def evidence_against(workload: str) -> dict[str, Any]:
    """The example's declared evidence, measured against `workload` and no plan."""
    return example(
        "evidence",
        measured_against={"workload": workload, "provider": "llama31-8b-h100-vllm@v1"},
    )


def longer_prompts() -> dict[str, Any]:
    """The example workload with a materially longer prompt p99 (+30%)."""
    document = example("workload")
    tokens = document["classes"][0]["prompt_tokens"]
    tokens["quantiles"]["p99"] = round(tokens["quantiles"]["p99"] * 1.3)
    tokens["max"] = max(tokens["max"], tokens["quantiles"]["p99"])
    return document


def test_revert_stales_evidence_measured_against_the_version_it_replaces(
    database: Database,
) -> None:
    submit(database, "workload", example("workload"), at=NOW)
    submit(database, "workload", longer_prompts(), at=NOW)
    submit(database, "provider", example("provider"), at=NOW)
    evidence = submit(database, "evidence", evidence_against("chat-assistant@v2"), at=NOW)
    reverted = submit(database, "workload", example("workload"), at=NOW)
    assert reverted.record.reverts == "chat-assistant@v1"
    assert submit_events(database, "workload.submit")[-1]["staled"] == [evidence.record.ref]
    with database.reading() as session:
        history = staleness_history(session, evidence.record.ref, now=NOW)
    assert history.stale
    assert [(e.measured, e.cause) for e in history.entries] == [
        ("chat-assistant@v2", "chat-assistant@v3")
    ]


def test_stale_evidence_is_fresh_again_once_pinned_to_the_revert(database: Database) -> None:
    submit(database, "workload", example("workload"), at=NOW)
    submit(database, "provider", example("provider"), at=NOW)
    old = submit(database, "evidence", evidence_against("chat-assistant@v1"), at=NOW)
    submit(database, "workload", longer_prompts(), at=NOW)
    submit(database, "workload", example("workload"), at=NOW)  # v3, a revert of v1
    # Recorded staleness stays: v2 did change the workload after the measurement ...
    with database.reading() as session:
        assert staleness_history(session, old.record.ref, now=NOW).stale
    # ... and the same measurement pinned to v3 (identical to v1) is not laundering.
    repinned = submit(database, "evidence", evidence_against("chat-assistant"), at=NOW)
    assert repinned.created and repinned.record.reverts is None
    assert repinned.record.references["workload"] == "chat-assistant@v3"
    with database.reading() as session:
        fresh = staleness_history(session, repinned.record.ref, now=NOW)
    assert not fresh.stale, fresh.reasons


def test_resubmitted_waiver_is_the_one_the_gate_applies(database: Database) -> None:
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind), at=NOW)
    violation: dict[str, object] = {"policy": "drain_configured", "rule": "grace_period"}

    def waived_by() -> list[str]:
        """What the gate's waiver step makes of a drain violation on the plan now."""
        with database.reading() as session:
            context = load_plan_context(
                session, plan_ref="chat-assistant-prod", now=NOW, limits=StalenessThresholds()
            )
        outcome = apply_waivers(
            [violation],
            context.waivers,
            plan_name=context.plan.name,
            plan_ref=context.plan_view.ref,
            now=NOW,
        )
        return outcome.used

    granted = submit(database, "waiver", waiver_document(), at=NOW)
    assert waived_by() == []  # requested, not yet approved
    approve_waiver(database, granted.record.ref)
    assert waived_by() == ["drain-grace-exception@v1"]
    narrowed = submit(database, "waiver", waiver_document(rule="some-other-rule"), at=NOW)
    assert narrowed.record.ref == "drain-grace-exception@v2"
    assert waived_by() == []
    again = submit(database, "waiver", waiver_document(), at=NOW)
    assert (again.created, again.record.ref, again.record.reverts) == (
        True,
        "drain-grace-exception@v3",
        granted.record.ref,
    )
    assert again.record.content["granted_for"] == "chat-assistant-prod@v1"
    # Approval is of a version: the revert is a new request, approved again.
    assert waived_by() == []
    approve_waiver(database, again.record.ref)
    assert waived_by() == ["drain-grace-exception@v3"]
    with database.reading() as session:
        assert verify_chain(session) == []


def test_api_returns_what_a_submission_reverts(database: Database) -> None:
    with client_for(database, "ci-bot") as client:
        first = client.post("/v1/workloads", json=example("workload"))
        client.post("/v1/workloads", json=example("workload", description="v2"))
        reverted = client.post("/v1/workloads", json=example("workload"))
        again = client.post("/v1/workloads", json=example("workload"))
        latest = client.get("/v1/workloads/chat-assistant").json()
        by_digest = client.get(f"/v1/workloads/{first.json()['record']['digest']}").json()
    assert first.json()["record"]["reverts"] is None
    assert reverted.status_code == 201
    assert reverted.json()["record"]["ref"] == "chat-assistant@v3"
    assert reverted.json()["record"]["reverts"] == "chat-assistant@v1"
    assert again.status_code == 200
    assert again.json()["record"]["ref"] == "chat-assistant@v3"
    assert (latest["ref"], latest["reverts"]) == ("chat-assistant@v3", "chat-assistant@v1")
    assert (by_digest["ref"], by_digest["reverts"]) == ("chat-assistant@v1", None)


def capgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_says_what_a_submission_reverts(database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    original = str(example_path("workload"))
    changed = tmp_path / "workload.json"
    changed.write_text(json.dumps(example("workload", description="after the launch")))
    lines = []
    for path in (original, str(changed), original, original):
        result = capgate("workload", "submit", path, env=env)
        assert result.returncode == 0, result.stderr
        lines.append(result.stdout)
    digest = lines[0].split()[1]
    assert lines[0] == f"chat-assistant@v1  {digest}  (created)\n"
    assert lines[1].startswith("chat-assistant@v2  ") and lines[1].endswith("  (created)\n")
    assert lines[2] == f"chat-assistant@v3  {digest}  (created, revert of chat-assistant@v1)\n"
    assert lines[3] == f"chat-assistant@v3  {digest}  (unchanged, existing version)\n"
    shown = json.loads(capgate("workload", "show", "chat-assistant", "--json", env=env).stdout)
    assert (shown["ref"], shown["reverts"]) == ("chat-assistant@v3", "chat-assistant@v1")
    by_digest = json.loads(capgate("workload", "show", digest, "--json", env=env).stdout)
    assert (by_digest["ref"], by_digest["reverts"]) == ("chat-assistant@v1", None)


def test_fail_reverting_to_withdrawn_evidence(database: Database) -> None:
    """A withdrawal is final: resubmitting the withdrawn figures after a later version
    would revive them unannounced, so it is refused and nothing is written."""
    from registry.evidence_lifecycle import withdraw

    submit(database, "workload", example("workload"))
    submit(database, "provider", example("provider"))
    first = evidence_against("chat-assistant@v1")
    submit(database, "evidence", first)
    database.write(
        lambda ctx: withdraw(ctx, ref=f"{first['name']}@v1", reason="wrong trace replayed"),
        principal="alice",
    )
    submit(database, "evidence", {**first, "description": "re-run with the right trace"})
    before = counts(database)
    with pytest.raises(InvalidInput) as refused:
        submit(database, "evidence", first)
    assert "withdrawn (wrong trace replayed)" in refused.value.message
    assert counts(database) == before
