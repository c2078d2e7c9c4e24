"""Anti-laundering: one raw result file cannot become fresh evidence for a version that
changed materially since it was measured.

A real vLLM result file is imported against the worked example's workload v1; the
workload then changes. Re-importing the same bytes against the new version is refused
with one line naming the digest, the earlier record, both versions and the change,
unless the change is immaterial (then re-pinning is allowed). Declared records are held
to the same rule through their `raw_file.sha256`. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from registry.errors import InvalidInput
from registry.evidence_lifecycle import withdraw
from registry.importers.service import ImportFile, ImportOptions, import_files
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import EvidenceRawDigestRow, RecordRow
from tests.factories import example, vllm_summary
from tests.support.fixtures import shared

VLLM_REL = "load-tests/vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json"
IMPORTED = "nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf"
WORKLOAD = "chat-assistant"
PROVIDER = "llama31-8b-h100-vllm"


def submit(database: Database, kind: str, document: dict[str, Any]) -> SubmitResult:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    return database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record), principal="t"
    )


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    return database


@pytest.fixture
def result_file() -> Path:
    return shared(VLLM_REL)


def sha256_of(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def run_import(
    database: Database, path: Path, *, workload: str = WORKLOAD, provider: str = PROVIDER
) -> SubmitResult:
    (result,) = import_files(
        database,
        [ImportFile(name=path.name, data=path.read_bytes())],
        ImportOptions(
            workload=workload, provider=provider, traffic_class="interactive", replicas=1
        ),
        principal="ci-bot",
    )
    return result


def interactive_p99(document: dict[str, Any]) -> float:
    return float(document["classes"][0]["prompt_tokens"]["quantiles"]["p99"])


def workload_with_p99(factor: float) -> dict[str, Any]:
    """The example workload with the interactive class's p99 prompt length scaled."""
    document = copy.deepcopy(example("workload"))
    quantiles = document["classes"][0]["prompt_tokens"]["quantiles"]
    quantiles["p99"] = round(quantiles["p99"] * factor)
    return document


def evidence_count(database: Database) -> int:
    with database.reading() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(RecordRow).where(RecordRow.kind == "evidence")
            )
            or 0
        )


def test_reimport_after_a_material_change_is_refused_with_one_line(
    registry: Database, result_file: Path
) -> None:
    first = run_import(registry, result_file)
    assert first.record.references["workload"] == f"{WORKLOAD}@v1"
    old_p99 = interactive_p99(example("workload"))
    changed = workload_with_p99(1.3)
    new_p99 = interactive_p99(changed)
    assert submit(registry, "workload", changed).record.ref == f"{WORKLOAD}@v2"

    with pytest.raises(InvalidInput) as caught:
        run_import(registry, result_file)  # `chat-assistant` is v2 now
    error = caught.value
    assert error.source == result_file.name and error.status_code == 422
    (problem,) = error.problems
    assert problem.loc == "raw_file.sha256"
    digest = sha256_of(result_file)
    line = error.one_line()
    assert "\n" not in line
    assert line.startswith(f"{result_file.name}: raw_file.sha256: {result_file.name} ({digest})")
    assert f"measured against workload {WORKLOAD}@v1 (evidence {IMPORTED}@v1)" in line
    assert (
        f"{WORKLOAD}@v2 changed materially: classes.interactive.prompt_tokens.p99: "
        f"{old_p99!r} -> {new_p99!r}, moved 30% (threshold 0.1)" in line
    )
    assert evidence_count(registry) == 1  # all or nothing: no new version


def test_an_immaterial_change_can_still_be_repinned(registry: Database, result_file: Path) -> None:
    run_import(registry, result_file)
    described = example("workload", description="Chat assistant (owner moved teams)")
    assert submit(registry, "workload", described).record.ref == f"{WORKLOAD}@v2"
    repinned = run_import(registry, result_file)
    assert repinned.created
    assert repinned.record.ref == f"{IMPORTED}@v2"
    assert repinned.record.references["workload"] == f"{WORKLOAD}@v2"
    assert repinned.record.content["raw_file"]["sha256"] == sha256_of(result_file)


def test_small_drifts_that_add_up_are_caught_against_the_first_measurement(
    registry: Database, result_file: Path
) -> None:
    run_import(registry, result_file)
    # +6 %: immaterial (threshold 10 %), so the same file may be re-pinned to v2 ...
    submit(registry, "workload", workload_with_p99(1.06))
    assert run_import(registry, result_file).record.ref == f"{IMPORTED}@v2"
    # ... another +6 % is immaterial from v2, but +12.4 % from v1, where it was measured.
    submit(registry, "workload", workload_with_p99(1.06 * 1.06))
    with pytest.raises(InvalidInput) as caught:
        run_import(registry, result_file)
    line = caught.value.one_line()
    assert f"measured against workload {WORKLOAD}@v1 (evidence {IMPORTED}@v1)" in line
    assert f"{WORKLOAD}@v3 changed materially" in line


def test_a_material_provider_change_is_refused_too(registry: Database, result_file: Path) -> None:
    run_import(registry, result_file)
    provider = copy.deepcopy(example("provider"))
    old_version = provider["runtime"]["version"]
    provider["runtime"]["version"] = "0.11.0"
    assert submit(registry, "provider", provider).record.ref == f"{PROVIDER}@v2"
    with pytest.raises(InvalidInput) as caught:
        run_import(registry, result_file)
    line = caught.value.one_line()
    assert f"measured against provider {PROVIDER}@v1" in line
    assert (
        f"runtime.version: {old_version!r} -> '0.11.0', runtime major or minor version changed"
        in line
    )


def test_declared_records_are_held_to_the_same_rule(registry: Database) -> None:
    declared = example("evidence")
    digest = declared["raw_file"]["sha256"]
    submit(registry, "evidence", declared)
    submit(registry, "workload", workload_with_p99(1.3))
    relabelled = copy.deepcopy(declared)
    relabelled["name"] = "chat-assistant-rerun"
    relabelled["measured_against"] = {"workload": f"{WORKLOAD}@v2", "provider": PROVIDER}
    with pytest.raises(InvalidInput) as caught:
        submit(registry, "evidence", relabelled)
    (problem,) = caught.value.problems
    assert problem.loc == "raw_file.sha256"
    assert f"({digest}) was measured against workload {WORKLOAD}@v1" in problem.message
    assert "(evidence chat-assistant-h100-mixed-2026-11@v1)" in problem.message
    # Another name against the version it was measured against is no laundering.
    relabelled["measured_against"]["workload"] = f"{WORKLOAD}@v1"
    assert submit(registry, "evidence", relabelled).created


def test_withdrawing_the_stale_record_does_not_release_its_file(
    registry: Database, result_file: Path
) -> None:
    run_import(registry, result_file)
    submit(registry, "workload", workload_with_p99(1.3))
    registry.write(
        lambda ctx: withdraw(ctx, ref=IMPORTED, reason="stale since chat-assistant@v2"),
        principal="alice",
    )
    with pytest.raises(InvalidInput) as caught:
        run_import(registry, result_file)
    assert f"(evidence {IMPORTED}@v1, withdrawn)" in caught.value.one_line()


def test_digests_of_evidence_stored_before_the_migration_are_backfilled(
    registry: Database, result_file: Path
) -> None:
    run_import(registry, result_file)
    with registry.reading() as session:
        before = sorted(session.scalars(select(EvidenceRawDigestRow.sha256)))
    assert before == [sha256_of(result_file)]
    # Back to the schema without the digest table, then forward: 0003 refills it.
    registry.engine.dispose()
    migrate.downgrade(registry.url, "0002")
    migrate.upgrade(registry.url)
    database = Database(registry.url)
    try:
        with database.reading() as session:
            assert sorted(session.scalars(select(EvidenceRawDigestRow.sha256))) == before
        submit(database, "workload", workload_with_p99(1.3))
        with pytest.raises(InvalidInput) as caught:
            run_import(database, result_file)
        assert f"{WORKLOAD}@v2 changed materially" in caught.value.one_line()
    finally:
        database.engine.dispose()


# ---- the measured time -------------------------------------------------------------------

DECLARED_AT = "2026-11-24T14:05:00Z"  # the example's declared record: a 600 s run


def declared_at(measured_at: str, name: str = "chat-assistant-rerun") -> dict[str, Any]:
    """The example's declared record under another name, claiming the same raw file."""
    document = copy.deepcopy(example("evidence"))
    assert document["measured_at"] == DECLARED_AT
    assert document["offered"]["duration_s"] == 600
    document["name"] = name
    document["measured_at"] = measured_at
    return document


def test_a_later_time_for_the_same_bytes_is_refused_naming_both(registry: Database) -> None:
    declared = example("evidence")
    submit(registry, "evidence", declared)
    before = evidence_count(registry)
    with pytest.raises(InvalidInput) as caught:
        submit(registry, "evidence", declared_at("2026-12-24T14:05:00Z"))
    error = caught.value
    assert error.status_code == 422
    assert str(error) == "raw file measured earlier than this record states"
    (problem,) = error.problems
    assert problem.loc == "measured_at"
    digest = declared["raw_file"]["sha256"]
    file_name = declared["raw_file"]["file_name"]
    assert problem.message == (
        f"2026-12-24T14:05:00+00:00 is later than {file_name} ({digest}) can support: evidence "
        "chat-assistant-h100-mixed-2026-11@v1 states those bytes were measured at "
        "2026-11-24T14:05:00+00:00 (a 600 s run), so at most 2026-11-24T14:20:00+00:00 (its end "
        "plus 5 min); the same bytes cannot be newer evidence: run the test again and import "
        "that result"
    )
    assert evidence_count(registry) == before  # nothing written


def test_times_within_the_run_or_earlier_are_no_laundering(registry: Database) -> None:
    submit(registry, "evidence", example("evidence"))
    # The run's end plus 5 minutes is the latest these bytes support.
    assert submit(registry, "evidence", declared_at("2026-11-24T14:20:00Z", "at-the-end")).created
    # Older is not fresher: an earlier time is not refused.
    assert submit(registry, "evidence", declared_at("2026-11-01T00:00:00Z", "older")).created


def test_small_steps_forward_are_held_to_the_first_claim(registry: Database) -> None:
    """Each version within 5 minutes of the one before would add up: the first claim rules."""
    submit(registry, "evidence", example("evidence"))
    assert submit(registry, "evidence", declared_at("2026-11-24T14:19:00Z", "step-1")).created
    with pytest.raises(InvalidInput) as caught:
        submit(registry, "evidence", declared_at("2026-11-24T14:30:00Z", "step-2"))
    assert "evidence chat-assistant-h100-mixed-2026-11@v1 states" in caught.value.one_line()


def test_an_imported_file_cannot_be_declared_younger(registry: Database, result_file: Path) -> None:
    imported = run_import(registry, result_file)
    content = imported.record.content
    relabelled = copy.deepcopy(example("evidence"))
    relabelled["name"] = "hand-made-from-the-same-file"
    relabelled["raw_file"] = content["raw_file"]
    relabelled["measured_at"] = "2026-11-24T14:05:00Z"  # a year and a half after the run
    with pytest.raises(InvalidInput) as caught:
        submit(registry, "evidence", relabelled)
    (problem,) = caught.value.problems
    assert problem.loc == "measured_at"
    assert f"evidence {IMPORTED}@v1 states those bytes were measured at" in problem.message
    assert content["measured_at"].replace("Z", "+00:00") in problem.message


def test_the_runs_of_one_file_hours_apart_import_together(registry: Database) -> None:
    """Every run of a multi-run file states its own time: the runs are not one another's
    earlier claims, however far apart (a sweep restarts the server between runs)."""
    start = datetime(2026, 11, 20, 8, 0, 0)
    lines = [vllm_summary(end=start + timedelta(hours=3 * i), rate=2.0 + i) for i in range(3)]
    data = b"\n".join(lines) + b"\n"
    results = import_files(
        registry,
        [ImportFile(name="sweep.jsonl", data=data)],
        ImportOptions(
            workload=WORKLOAD, provider=PROVIDER, traffic_class="interactive", replicas=1
        ),
        principal="ci-bot",
    )
    assert [r.created for r in results] == [True, True, True]
    assert [r.record.content["measured_at"] for r in results] == [
        "2026-11-20T08:00:00Z",
        "2026-11-20T11:00:00Z",
        "2026-11-20T14:00:00Z",
    ]
