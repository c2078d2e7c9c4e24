"""The report's data and templates without the CLI: what a page that reuses them gets, what
a report says when the registry lacks something, and that record text is escaped."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from registry.gate.views import DecisionView, Outcome
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.report.charts import build
from registry.report.data import ReportData, gather
from registry.report.render import environment, render_report
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from tests.factories import example
from tests.report.html_checks import parse

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAN = "chat-assistant-prod"


def submit(database: Database, kind: str, document: dict[str, Any]) -> None:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record),
        principal="alice",
        now=lambda: NOW,
    )


def registered(database: Database, **evidence_changes: Any) -> ReportData:
    """The example's records and its hand-written evidence; no decision, and no
    recomputation (none is computed: the planner does not run here)."""
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    submit(database, "evidence", example("evidence", **evidence_changes))
    return gather(
        database, plan_ref=PLAN, now=NOW, limits=StalenessThresholds(), compute_missing=False
    )


def test_without_a_recomputation_every_section_says_why(database: Database) -> None:
    data = registered(database)
    assert data.decision is None and data.recomputation is None
    html = render_report(data)
    page = parse(html)
    assert not page.errors and page.external_references() == []
    text = page.text
    assert "NO DECISION YET" in text
    assert "No recomputation is available for this report" in text
    # The warm-up timeline needs no recomputation: drawn, with the capacity left unknown.
    (chart,) = page.named("svg")
    assert chart.attrs["id"] == "chart-warmup"
    assert "capacity of a ready replica is unknown" in text
    # Inputs: the three records and the evidence, each with the event that stored it.
    assert [i.role for i in data.inputs] == ["plan", "workload", "provider", "evidence"]
    assert all(i.event is not None and i.event.hash_matches for i in data.inputs)
    assert [i.event.action for i in data.inputs if i.event] == [
        "plan.submit",
        "workload.submit",
        "provider.submit",
        "evidence.submit",
    ]
    for record in data.inputs:
        assert record.digest in html and f"#{record.event.seq}" in html  # type: ignore[union-attr]


def test_an_error_decision_reads_as_an_error(database: Database) -> None:
    data = registered(database)
    decision = DecisionView(
        id="6f138a81-c1ea-4ebd-97c3-0adbf45f1f02",
        plan=f"{PLAN}@v1",
        outcome=Outcome.error,
        engine="embedded",
        bundle_revision="unknown",
        input_digest="none",
        inputs={},
        violations=[],
        waived=[],
        waivers_used=[],
        warnings=[],
        error="the policy engine is unavailable",
        principal="ci",
        created_at=NOW,
        needs_recheck=None,
    )
    text = parse(render_report(dataclasses.replace(data, decision=decision))).text
    assert "ERROR" in text and "the gate could not decide: the policy engine is unavailable" in text


def test_record_text_is_escaped(database: Database) -> None:
    data = registered(database, tool={"name": "<script>alert('x')</script>", "version": "1"})
    html = render_report(data)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "<script>alert('x')</script>" in parse(html).text


def test_the_report_body_embeds_in_another_page(database: Database) -> None:
    """A page of its own (the server's, later) extends the base layout and includes the
    report's body: its own h1, the report's sections below it."""
    data = registered(database)
    page_template = environment().from_string(
        '{% extends "base.html" %}{% block title %}Decision{% endblock %}'
        "{% block content %}<h1>Decision page</h1>"
        '{% include "report_body.html" %}{% endblock %}'
    )
    page = parse(page_template.render(report=data, charts=build(data, prefix="ui")))
    assert not page.errors
    assert page.headings()[0] == 1 and page.headings().count(1) == 1
    assert {"verdict", "plan", "load", "warmup", "evidence", "calibration", "inputs"} <= {
        t.attrs["id"] for t in page.named("section")
    }
    assert [t.attrs["id"] for t in page.named("svg")] == ["ui-warmup"]
