"""Importing real result files into the registry: one transaction, the one write path."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from registry.errors import InvalidInput
from registry.importers.service import ImportFile, ImportOptions, import_files
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, RecordRow
from tests.factories import example
from tests.support.fixtures import shared

MULTI_REL = "load-tests/guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json"
VLLM_REL = "load-tests/vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json"
# States no time; its model is Triton's served name "ensemble", which cannot be compared with
# the example provider's (a note), so it imports against the example's plan.
GENAI_REL = (
    "load-tests/genai-perf/triton-inference-server__perf_analyzer__issue298-streaming-"
    "profile_export_genai_perf.json"
)
# --measured-at for files that state no time; the real files here state their own.
WHEN = datetime(2026, 11, 20, tzinfo=UTC)


def submit_example(database: Database, kind: RecordKind) -> SubmitResult:
    record = validate_record(kind, example(kind))
    return database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="t")


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)
    return database


@pytest.fixture
def MULTI() -> Path:
    return shared(MULTI_REL)


@pytest.fixture
def VLLM() -> Path:
    return shared(VLLM_REL)


@pytest.fixture
def GENAI() -> Path:
    return shared(GENAI_REL)


def run_import(database: Database, *paths: Path, **kw: object) -> list[SubmitResult]:
    files = [ImportFile(name=p.name, data=p.read_bytes()) for p in paths]
    args: dict[str, object] = {
        "tool": "auto",
        "workload": "chat-assistant",
        "provider": "llama31-8b-h100-vllm",
        "traffic_class": "interactive",
        "replicas": 1,
    }
    args.update(kw)
    options = ImportOptions(**args)  # type: ignore[arg-type]
    return import_files(database, files, options, principal="importer")


def count(database: Database, kind: str) -> int:
    with database.reading() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(RecordRow).where(RecordRow.kind == kind)
            )
            or 0
        )


def audit_count(database: Database) -> int:
    with database.reading() as session:
        return int(session.scalar(select(func.count()).select_from(AuditEventRow)) or 0)


def test_multi_stage_file_is_one_record_per_stage_linked(registry: Database, MULTI: Path) -> None:
    results = run_import(registry, MULTI)
    assert [r.record.ref for r in results] == [
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-0@v1",
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-1@v1",
    ]
    assert all(r.created for r in results)
    series = "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver"
    assert [r.record.content["labels"] for r in results] == [
        {"series": series, "stage": "0"},
        {"series": series, "stage": "1"},
    ]
    digest = "sha256:" + hashlib.sha256(MULTI.read_bytes()).hexdigest()
    for result in results:
        content = result.record.content
        assert content["raw_file"]["sha256"] == digest
        assert content["raw_file"]["file_name"] == MULTI.name
        assert content["tool"]["name"] == "guidellm" and content["tool"]["version"]
        assert content["findings"] is not None
        # Pinned by the one write path, like any submitted record.
        assert result.record.references == {
            "provider": "llama31-8b-h100-vllm@v1",
            "workload": "chat-assistant@v1",
        }
        assert result.record.created_by == "importer"


def test_same_file_twice_is_the_same_records(registry: Database, MULTI: Path, VLLM: Path) -> None:
    first = run_import(registry, MULTI, VLLM)
    events = audit_count(registry)
    second = run_import(registry, MULTI, VLLM)
    assert [r.created for r in second] == [False, False, False]
    assert [(r.record.ref, r.record.digest) for r in second] == [
        (r.record.ref, r.record.digest) for r in first
    ]
    assert count(registry, "evidence") == 3
    assert audit_count(registry) == events


def test_broken_file_among_good_ones_imports_nothing(
    registry: Database, tmp_path: Path, MULTI: Path, VLLM: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"benchmarks": [')
    events = audit_count(registry)
    with pytest.raises(InvalidInput) as error:
        run_import(registry, VLLM, MULTI, broken)
    assert error.value.source == "broken.json"
    assert "not JSON" in error.value.one_line()
    assert count(registry, "evidence") == 0
    assert audit_count(registry) == events


def test_unknown_format_says_what_was_expected(registry: Database, tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(InvalidInput) as error:
        run_import(registry, odd)
    line = error.value.one_line()
    # What is wrong first, then what would be read.
    assert line.startswith(
        "odd.json: (top level): the file's shape matches no supported tool (top-level keys: "
        "hello); supported tools and formats: vllm-bench:"
    )
    assert str(error.value) == (
        "cannot import odd.json: the file's shape matches no supported tool (top-level keys: hello)"
    )
    for tool in ("guidellm", "inference-perf", "genai-perf", "aiperf"):
        assert f"{tool}:" in line
    assert count(registry, "evidence") == 0


def test_a_bad_reference_in_a_later_record_rolls_back_the_earlier_ones(
    registry: Database, MULTI: Path, VLLM: Path
) -> None:
    """Stage 0 is submitted before the class check fails: nothing may remain."""
    with pytest.raises(InvalidInput) as error:
        run_import(registry, VLLM, MULTI, traffic_class="no-such-class")
    assert error.value.source == VLLM.name
    assert error.value.problems[0].loc == "results.per_class.no-such-class"
    assert "--class" in error.value.problems[0].message
    with pytest.raises(InvalidInput) as missing:
        run_import(registry, VLLM, workload="nothing-here")
    assert missing.value.source == VLLM.name
    assert missing.value.problems[0].loc == "measured_against.workload"
    assert count(registry, "evidence") == 0


def test_file_without_a_time_needs_measured_at(registry: Database, GENAI: Path) -> None:
    with pytest.raises(InvalidInput) as error:
        run_import(registry, GENAI, measured_at=None)
    assert error.value.problems[0].loc == "--measured-at"
    assert "--measured-at" in error.value.one_line()
    (result,) = run_import(registry, GENAI, plan="chat-assistant-prod", measured_at=WHEN)
    assert result.record.content["measured_at"] == "2026-11-20T00:00:00Z"
    assert result.record.references["plan"] == "chat-assistant-prod@v1"


def test_explicit_tool_and_nothing_to_import(registry: Database, VLLM: Path) -> None:
    (result,) = run_import(registry, VLLM, tool="vllm-bench")
    assert result.record.content["tool"]["name"] == "vllm-bench"
    with pytest.raises(InvalidInput) as error:
        run_import(registry, VLLM, tool="guidellm")
    assert error.value.source == VLLM.name
    with pytest.raises(InvalidInput):
        run_import(registry)
