"""Staleness recorded on submit and read back, on SQLite and PostgreSQL.

Starts from the worked example (workload, provider, plan, evidence measured against
their v1) and submits new versions: material changes stale the evidence with the change
that did it, immaterial ones leave it alone; age is judged when asked.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.staleness import service as staleness
from registry.staleness.rules import StalenessThresholds
from registry.staleness.thresholds import load_thresholds
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, StalenessRow
from tests.factories import EXAMPLE_KINDS, example

EVIDENCE = "chat-assistant-h100-mixed-2026-11"
MEASURED_AT = datetime(2026, 11, 24, 14, 5, tzinfo=UTC)
SOON = MEASURED_AT + timedelta(days=3)

Edit = Callable[[dict[str, Any]], None]


def submit(database: Database, kind: str, document: dict[str, Any]) -> SubmitResult:
    record = validate_record(RecordKind(kind), document)
    return database.write(
        lambda ctx: service.submit(ctx, kind=RecordKind(kind), record=record), principal="t"
    )


def edited(kind: str, edit: Edit) -> dict[str, Any]:
    document = copy.deepcopy(example(kind))
    edit(document)
    return document


@pytest.fixture
def worked(database: Database) -> Database:
    for kind in EXAMPLE_KINDS:
        submit(database, kind.value, example(kind))
    return database


def stale_refs(database: Database, *, now: datetime = SOON, **kw: Any) -> list[str]:
    with database.reading() as session:
        page = staleness.list_stale(session, now=now, **kw)
    return [item.ref for item in page.items]


def staleness_rows(database: Database) -> int:
    with database.reading() as session:
        return int(session.scalar(select(func.count()).select_from(StalenessRow)) or 0)


def last_audit_payload(database: Database) -> dict[str, Any]:
    with database.reading() as session:
        row = session.scalars(select(AuditEventRow).order_by(AuditEventRow.seq.desc())).first()
        assert row is not None
        payload: dict[str, Any] = json.loads(row.payload)
        return payload


def prompt_p99(factor: float) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        tokens = d["classes"][0]["prompt_tokens"]
        tokens["quantiles"]["p99"] = round(tokens["quantiles"]["p99"] * factor)
        tokens["max"] = max(tokens["max"], tokens["quantiles"]["p99"])

    return edit


def set_in(path: tuple[str, ...], value: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        target = d
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


MATERIAL = [
    pytest.param(
        "workload",
        prompt_p99(1.3),
        "classes.interactive.prompt_tokens.p99",
        id="workload p99 prompt +30%",
    ),
    pytest.param(
        "workload",
        set_in(("classes",), example("workload")["classes"][:1]),
        "classes.batch",
        id="workload class removed",
    ),
    pytest.param(
        "provider",
        set_in(("runtime", "version"), "0.11.0"),
        "runtime.version",
        id="provider runtime minor version",
    ),
    pytest.param(
        "plan",
        set_in(("serving", "max_num_seqs"), 192),
        "serving.max_num_seqs",
        id="plan serving max_num_seqs",
    ),
    pytest.param(
        "plan",
        set_in(("serving", "enable_prefix_caching"), False),
        "serving.enable_prefix_caching",
        id="plan serving prefix caching",
    ),
]

IMMATERIAL = [
    pytest.param("workload", set_in(("description",), "reworded"), id="workload description"),
    pytest.param("workload", prompt_p99(1.02), id="workload p99 prompt +2%"),
    pytest.param("provider", set_in(("runtime", "version"), "0.10.3"), id="provider patch"),
    pytest.param(
        "plan",
        set_in(("replicas_per_zone",), {"us-east1-b": 4, "us-east1-c": 4, "us-east1-d": 4}),
        id="plan replica counts",
    ),
]


@pytest.mark.parametrize(("kind", "edit", "field"), MATERIAL)
def test_material_change_stales_the_evidence(
    worked: Database, kind: str, edit: Edit, field: str
) -> None:
    result = submit(worked, kind, edited(kind, edit))
    assert result.created and result.record.version == 2
    assert stale_refs(worked) == [f"{EVIDENCE}@v1"]
    assert last_audit_payload(worked)["staled"] == [f"{EVIDENCE}@v1"]

    with worked.reading() as session:
        history = staleness.staleness_history(session, EVIDENCE, now=SOON)
    assert history.stale
    (entry,) = history.entries
    assert entry.cause_kind.value == kind
    assert entry.cause == result.record.ref
    assert entry.measured == result.record.ref.replace("@v2", "@v1")
    assert field in [change.field for change in entry.changes]
    assert entry.reason.startswith(f"{kind} {entry.measured} -> {entry.cause}: ")


def test_reason_names_field_old_new_and_threshold(worked: Database) -> None:
    submit(worked, "workload", edited("workload", prompt_p99(1.3)))
    with worked.reading() as session:
        (item,) = staleness.list_stale(session, now=SOON).items
    (change,) = item.staleness[0].changes
    assert change.model_dump() == {
        "field": "classes.interactive.prompt_tokens.p99",
        "old": 6100.0,
        "new": 7930.0,
        "rule": "moved 30%",
        "threshold": 0.1,
    }
    assert item.reasons == [
        "workload chat-assistant@v1 -> chat-assistant@v2: "
        "classes.interactive.prompt_tokens.p99: 6100.0 -> 7930.0, moved 30% (threshold 0.1)"
    ]
    assert not item.expired


@pytest.mark.parametrize(("kind", "edit"), IMMATERIAL)
def test_immaterial_change_stales_nothing(worked: Database, kind: str, edit: Edit) -> None:
    result = submit(worked, kind, edited(kind, edit))
    assert result.created and result.record.version == 2
    assert stale_refs(worked) == []
    assert staleness_rows(worked) == 0
    assert last_audit_payload(worked)["staled"] == []


def test_drift_is_judged_against_the_measured_version(worked: Database) -> None:
    """Two +6% steps are each immaterial to their predecessor, but +12% from v1 is not."""
    submit(worked, "workload", edited("workload", prompt_p99(1.06)))
    assert stale_refs(worked) == []
    submit(worked, "workload", edited("workload", prompt_p99(1.06 * 1.06)))
    with worked.reading() as session:
        (item,) = staleness.list_stale(session, now=SOON).items
    entry = item.staleness[0]
    assert (entry.measured, entry.cause) == ("chat-assistant@v1", "chat-assistant@v3")


def test_replaced_evidence_version_is_stale(worked: Database) -> None:
    result = submit(worked, "evidence", example("evidence", description="re-run"))
    assert result.record.ref == f"{EVIDENCE}@v2"
    assert last_audit_payload(worked)["staled"] == [f"{EVIDENCE}@v1"]
    # The current version is fresh; the replaced one is listed only when asked for.
    assert stale_refs(worked) == []
    assert stale_refs(worked, include_replaced=True) == [f"{EVIDENCE}@v1"]
    with worked.reading() as session:
        old = staleness.staleness_history(session, f"{EVIDENCE}@v1", now=SOON)
        new = staleness.staleness_history(session, EVIDENCE, now=SOON)
    assert old.stale and not new.stale
    (entry,) = old.entries
    assert (entry.cause_kind.value, entry.cause) == ("evidence", f"{EVIDENCE}@v2")
    assert entry.changes[0].rule == "evidence data replaced"
    assert entry.reason == f"evidence data replaced: {EVIDENCE}@v1 replaced by {EVIDENCE}@v2"


def test_new_evidence_for_the_new_version_is_fresh(worked: Database) -> None:
    submit(worked, "workload", edited("workload", prompt_p99(1.3)))
    fresh = example("evidence", name="chat-assistant-rerun")
    fresh["measured_against"]["workload"] = "chat-assistant@v2"
    del fresh["measured_against"]["plan"]  # the plan still pins v1
    fresh["raw_file"]["sha256"] = "sha256:" + "ef" * 32  # a new test: another result file
    submit(worked, "evidence", fresh)
    assert stale_refs(worked) == [f"{EVIDENCE}@v1"]


def test_evidence_pinned_to_a_superseded_version_is_stale_from_the_start(
    worked: Database,
) -> None:
    submit(worked, "workload", edited("workload", prompt_p99(1.3)))
    late = example("evidence", name="chat-assistant-late")
    late["measured_against"]["workload"] = "chat-assistant@v1"
    result = submit(worked, "evidence", late)
    assert last_audit_payload(worked)["staled"] == [result.record.ref]
    assert stale_refs(worked) == [f"{EVIDENCE}@v1", "chat-assistant-late@v1"]


def test_only_the_latest_evidence_version_is_staled_by_a_change(worked: Database) -> None:
    submit(worked, "evidence", example("evidence", description="re-run"))
    submit(worked, "plan", edited("plan", set_in(("serving", "max_num_seqs"), 192)))
    with worked.reading() as session:
        old = staleness.staleness_history(session, f"{EVIDENCE}@v1", now=SOON)
        new = staleness.staleness_history(session, f"{EVIDENCE}@v2", now=SOON)
    assert [e.cause for e in old.entries] == [f"{EVIDENCE}@v2"]
    assert [e.cause for e in new.entries] == ["chat-assistant-prod@v2"]


def test_age_past_the_maximum_is_stale(worked: Database) -> None:
    assert stale_refs(worked, now=MEASURED_AT + timedelta(days=89)) == []
    late = MEASURED_AT + timedelta(days=91)
    with worked.reading() as session:
        (item,) = staleness.list_stale(session, now=late).items
        history = staleness.staleness_history(session, EVIDENCE, now=late)
    assert item.ref == f"{EVIDENCE}@v1" and item.expired and item.staleness == []
    assert item.reasons == ["measured 91 days ago, past the maximum age of 90 days"]
    assert history.stale and history.entries == [] and history.max_age_days == 90
    tighter = StalenessThresholds(max_evidence_age_days=30)
    assert stale_refs(worked, now=MEASURED_AT + timedelta(days=31), limits=tighter) == [
        f"{EVIDENCE}@v1"
    ]


def test_a_rolled_back_submit_leaves_no_staleness(worked: Database) -> None:
    record = validate_record(RecordKind.workload, edited("workload", prompt_p99(1.3)))

    def work(ctx: Any) -> None:
        service.submit(ctx, kind=RecordKind.workload, record=record)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        worked.write(work, principal="t")
    assert staleness_rows(worked) == 0
    assert stale_refs(worked) == []


def test_list_stale_pages(worked: Database) -> None:
    for i in range(3):
        submit(worked, "evidence", example("evidence", name=f"extra-{i}"))
    submit(worked, "workload", edited("workload", prompt_p99(1.3)))
    with worked.reading() as session:
        first = staleness.list_stale(session, now=SOON, limit=2)
        rest = staleness.list_stale(session, now=SOON, limit=2, offset=2)
    assert first.total == rest.total == 4
    assert [i.ref for i in first.items + rest.items] == [
        f"{EVIDENCE}@v1",
        "extra-0@v1",
        "extra-1@v1",
        "extra-2@v1",
    ]


def test_thresholds_from_policy_data(tmp_path: Path) -> None:
    assert load_thresholds() == StalenessThresholds(
        max_evidence_age_days=load_thresholds().max_evidence_age_days
    )
    data = tmp_path / "data.json"
    data.write_text(
        json.dumps(
            {
                "capgate": {
                    "thresholds": {
                        "evidence_max_age_days": 30,
                        "staleness": {"length_quantile_change": 0.05},
                    }
                }
            }
        )
    )
    assert load_thresholds(data) == StalenessThresholds(
        length_quantile_change=0.05, max_evidence_age_days=30
    )
    data.write_text(json.dumps({"capgate": {"thresholds": {}}}))
    assert load_thresholds(data) == StalenessThresholds()


def test_bundle_thresholds_are_used_by_default(
    worked: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A +6% p99 is immaterial at 10% and material at the bundle's (here 5%) limit."""
    strict = StalenessThresholds(length_quantile_change=0.05)
    monkeypatch.setattr(staleness, "load_thresholds", lambda: strict)
    submit(worked, "workload", edited("workload", prompt_p99(1.06)))
    assert stale_refs(worked) == [f"{EVIDENCE}@v1"]
