"""The time of measurement cannot be relabelled at import.

A file that states its own time with a zone keeps it: a `--measured-at` (form field
`measured_at`) further from it than the run's duration plus 5 minutes is refused naming
both times (exit 2, HTTP 422). Bytes already in the registry keep the time their first
import gave the same run, whatever `--measured-at` says this time, and the import says so
(a note on stderr, `notes` in the API's answer). On SQLite and PostgreSQL; the CLI locally
and against a server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.errors import InvalidInput
from registry.importers import import_result_file_with_findings
from registry.importers.measured_at import MEASURED_AT_SLACK
from registry.importers.parsed_stage import MeasuredAtSource
from registry.importers.service import ImportFile, ImportOptions, ImportResult, import_files
from registry.records.kinds import RecordKind
from registry.staleness.laundering import SAME_RUN_SLACK
from registry.storage.database import Database
from tests.cli.test_cli import capgate
from tests.importers.helpers import path_of, provider_for, register_providers
from tests.importers.test_import_service import submit_example
from tests.support.auth import client_for

# AIPerf's example run: min_request_timestamp (ns since the epoch) fixes the time, with a zone.
ZONED = "aiperf/ai-dynamo__aiperf__examples-run1-profile_export_aiperf.json"
ZONED_AT = datetime.fromtimestamp(1.759522419154569e18 / 1e9, tz=UTC)
ZONED_S = 9.317788951  # its benchmark_duration
# inference-perf states no time at all (nor the model): --measured-at is needed.
NO_TIME = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json"
# Three vLLM --append-result lines, each with its own date (no zone), 1.5 min apart.
STAGED = "vllm-bench/synthetic__vllm-append-result-metadata.json"
GUIDELLM = "guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json"

T1 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
T2 = T1 + timedelta(days=30)
AGAINST = {"workload": "chat-assistant", "provider": "llama31-8b-h100-vllm", "replicas": 1}


def read(rel: str, **kw: Any) -> list[Any]:
    path = path_of(rel)
    args: dict[str, Any] = {"workload": "chat@v1", "provider": "h100@v1", "replicas": 1, **kw}
    return import_result_file_with_findings(path.read_bytes(), file_name=path.name, **args)


# ---- the file's own time wins --------------------------------------------------------------


def test_the_slack_is_one_rule_for_the_importers_and_the_laundering_check() -> None:
    assert MEASURED_AT_SLACK == SAME_RUN_SLACK == timedelta(minutes=5)


def test_measured_at_contradicting_the_files_own_time_is_refused_naming_both() -> None:
    wrong = datetime(2026, 11, 24, 14, 5, tzinfo=UTC)
    with pytest.raises(InvalidInput) as caught:
        read(ZONED, measured_at=wrong)
    error = caught.value
    assert error.status_code == 422 and error.exit_code == 2
    (problem,) = error.problems
    assert problem.loc == "--measured-at"
    line = error.one_line()
    assert "\n" not in line
    assert line.startswith(
        f"{path_of(ZONED).name}: --measured-at: the file states the run started at "
        f"{ZONED_AT.isoformat()} (min_request_timestamp) but --measured-at "
        f"{wrong.isoformat()} was given (API: form field measured_at), 416.7 days later: "
        f"more than the {ZONED_S:g} s run plus 5 min"
    )


@pytest.mark.parametrize(
    ("offset", "accepted"),
    [
        (timedelta(0), True),
        (timedelta(seconds=ZONED_S) + MEASURED_AT_SLACK, True),  # the end, a bit late
        (-(timedelta(seconds=ZONED_S) + MEASURED_AT_SLACK), True),
        (timedelta(seconds=ZONED_S) + MEASURED_AT_SLACK + timedelta(seconds=1), False),
        (-(timedelta(seconds=ZONED_S) + MEASURED_AT_SLACK + timedelta(seconds=1)), False),
    ],
)
def test_within_the_runs_duration_plus_5_minutes_the_files_time_is_kept(
    offset: timedelta, accepted: bool
) -> None:
    if not accepted:
        with pytest.raises(InvalidInput) as caught:
            read(ZONED, measured_at=ZONED_AT + offset)
        assert caught.value.problems[0].loc == "--measured-at"
        return
    (stage,) = read(ZONED, measured_at=ZONED_AT + offset)
    assert stage.evidence.measured_at == ZONED_AT  # the file's, never the flag's
    assert stage.measured_at_source is MeasuredAtSource.FILE


def test_every_stage_of_a_multi_run_file_is_held_to_its_own_time() -> None:
    doc = json.loads(path_of(GUIDELLM).read_bytes())
    starts = [datetime.fromtimestamp(b["start_time"], tz=UTC) for b in doc["benchmarks"]]
    # The sweep's start: stage 1 began 15 s later, well within 5 minutes.
    stages = read(GUIDELLM, measured_at=starts[0])
    assert [s.evidence.measured_at for s in stages] == starts
    with pytest.raises(InvalidInput) as caught:
        read(GUIDELLM, measured_at=starts[0] + timedelta(hours=1))
    assert caught.value.one_line().startswith(
        f"{path_of(GUIDELLM).name}: --measured-at: the file states the run started at "
        f"{starts[0].isoformat()} (start_time)"
    )


def test_a_time_without_a_zone_still_yields_to_measured_at() -> None:
    (stage,) = read(NO_TIME, measured_at=T1)
    assert stage.measured_at_source is MeasuredAtSource.ARGUMENT
    stages = read(STAGED, replicas=None)
    assert {s.measured_at_source for s in stages} == {MeasuredAtSource.FILE_NO_ZONE}
    given = read(STAGED, replicas=None, measured_at=T1)
    assert all(s.evidence.measured_at == T1 for s in given)


# ---- a re-imported file keeps its first measured time ------------------------------------


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)
    register_providers(database)  # each file is imported for the model it measured
    return database


def run_import(database: Database, rel: str, **kw: Any) -> list[ImportResult]:
    path = path_of(rel)
    against = {**AGAINST, "provider": provider_for(rel), "traffic_class": "interactive"}
    options = ImportOptions(**{**against, **kw})
    return import_files(
        database, [ImportFile(name=path.name, data=path.read_bytes())], options, principal="ci"
    )


def test_reimport_keeps_the_first_measured_time_whatever_measured_at_says(
    registry: Database,
) -> None:
    (first,) = run_import(registry, NO_TIME, measured_at=T1)
    assert first.created and first.notes == []
    assert first.record.content["measured_at"] == "2026-11-20T09:00:00Z"

    (again,) = run_import(registry, NO_TIME, measured_at=T2)
    # The same record: the later --measured-at could not make the same bytes younger.
    assert not again.created
    assert (again.record.ref, again.record.digest) == (first.record.ref, first.record.digest)
    assert again.record.content["measured_at"] == "2026-11-20T09:00:00Z"
    (note,) = again.notes
    assert note == (
        f"{path_of(NO_TIME).name}: measured_at {T1.isoformat()} kept from the first import of "
        f"these bytes (evidence {first.record.ref}), not {T2.isoformat()} given as "
        "--measured-at (form field measured_at): importing a file again cannot change when it "
        "was measured"
    )

    # Another version of the record (now against the plan) keeps the time too.
    (pinned,) = run_import(registry, NO_TIME, measured_at=T2, plan="chat-assistant-prod")
    assert pinned.created and pinned.record.ref.endswith("@v2")
    assert pinned.record.content["measured_at"] == "2026-11-20T09:00:00Z"
    assert len(pinned.notes) == 1

    # An earlier --measured-at is not the first import's either.
    (earlier,) = run_import(registry, NO_TIME, measured_at=T1 - timedelta(days=3))
    assert earlier.record.content["measured_at"] == "2026-11-20T09:00:00Z"


def test_each_stage_of_a_reimported_file_keeps_its_own_first_time(registry: Database) -> None:
    first = run_import(registry, STAGED, traffic_class=None, replicas=None)
    times = [r.record.content["measured_at"] for r in first]
    assert len(set(times)) == 3  # each line's own date, read as UTC
    assert all(r.notes == [] for r in first)

    again = run_import(registry, STAGED, traffic_class=None, replicas=None, measured_at=T2)
    # The same records: each stage's first time, and the first import's note on how it was
    # settled (the file's date read as UTC), not "the measured_at argument was used".
    assert [r.created for r in again] == [False, False, False]
    assert [r.record.digest for r in again] == [r.record.digest for r in first]
    assert [r.record.content["measured_at"] for r in again] == times
    assert [len(r.notes) for r in again] == [1, 1, 1]
    assert f"not {T2.isoformat()} given as --measured-at" in again[0].notes[0]
    notes = again[0].record.content["findings"]["notes"]
    assert any("has no time zone; read as UTC" in n for n in notes)
    assert not any("measured_at argument" in n for n in notes)


# ---- the CLI (locally and against a server) and the API ----------------------------------


def cli_against(rel: str) -> tuple[str, ...]:
    return (
        *("--workload", "chat-assistant", "--provider", provider_for(rel)),
        *("--replicas", "1", "--class", "interactive"),
    )


def test_cli_conflicting_measured_at_exits_2_naming_both_times(env: dict[str, str]) -> None:
    path = path_of(ZONED)
    wrong = "2026-11-24T14:05:00Z"
    against = cli_against(ZONED)
    result = capgate("evidence", "import", str(path), *against, "--measured-at", wrong, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"capgate: error: {path}: ")
    assert f"--measured-at: the file states the run started at {ZONED_AT.isoformat()}" in line
    assert "--measured-at 2026-11-24T14:05:00+00:00 was given" in line
    # The file's own time is what an import without the flag stores.
    ok = capgate("evidence", "import", str(path), *against, "--json", env=env)
    assert ok.returncode == 0, ok.stderr
    (record,) = json.loads(ok.stdout)
    assert datetime.fromisoformat(record["record"]["content"]["measured_at"]) == ZONED_AT


def test_cli_reimport_keeps_the_first_time_and_says_so_on_stderr(env: dict[str, str]) -> None:
    path = path_of(NO_TIME)
    against = cli_against(NO_TIME)
    first = capgate(
        "evidence", "import", str(path), *against, "--measured-at", T1.isoformat(), env=env
    )
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""
    again = capgate(
        "evidence", "import", str(path), *against, "--measured-at", T2.isoformat(), env=env
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.endswith("(unchanged, existing version)\n")
    (note,) = again.stderr.splitlines()
    assert note.startswith(f"note: {path}: measured_at {T1.isoformat()} kept from the first")
    assert f"not {T2.isoformat()} given as --measured-at" in note
    shown = capgate("evidence", "show", first.stdout.split()[0], "--json", env=env)
    assert json.loads(shown.stdout)["content"]["measured_at"] == "2026-11-20T09:00:00Z"


@pytest.fixture
def client(registry: Database) -> Iterator[TestClient]:
    with client_for(registry, "ci-bot") as c:
        yield c


def upload(client: TestClient, rel: str, **form: str) -> Any:
    path = path_of(rel)
    data = {
        "workload": "chat-assistant",
        "provider": provider_for(rel),
        "replicas": "1",
        "traffic_class": "interactive",
        **form,
    }
    files = [("files", (path.name, path.read_bytes(), "application/json"))]
    return client.post("/v1/evidence/import", files=files, data=data)


def test_api_conflicting_measured_at_is_422_naming_both(client: TestClient) -> None:
    response = upload(client, ZONED, measured_at="2026-11-24T14:05:00Z")
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "InvalidInput"
    assert body["details"] == {"source": path_of(ZONED).name}
    (problem,) = body["problems"]
    assert problem["loc"] == "--measured-at"
    assert ZONED_AT.isoformat() in problem["message"]
    assert "2026-11-24T14:05:00+00:00" in problem["message"]
    assert "form field measured_at" in problem["message"]


def test_api_reimport_answers_200_with_the_note(client: TestClient) -> None:
    first = upload(client, NO_TIME, measured_at=T1.isoformat())
    assert first.status_code == 201, first.text
    assert first.json()[0]["notes"] == []
    again = upload(client, NO_TIME, measured_at=T2.isoformat())
    assert again.status_code == 200, again.text
    (result,) = again.json()
    assert result["created"] is False
    assert result["record"]["content"]["measured_at"] == "2026-11-20T09:00:00Z"
    (note,) = result["notes"]
    assert f"measured_at {T1.isoformat()} kept from the first import" in note
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "notes" in schema["EvidenceImportResult"]["properties"]
