"""Versioned, immutable series on both databases: one version per content, pinned refs."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from registry.audit.chain import verify_chain
from registry.errors import InvalidInput, NotFound
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, RecordRefRow, RecordRow
from tests.factories import example


def submit(
    database: Database, kind: str, document: dict[str, Any], who: str = "alice"
) -> SubmitResult:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    return database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record), principal=who
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
