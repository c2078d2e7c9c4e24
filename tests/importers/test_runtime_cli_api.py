"""`--runtime` at import, as a user gives it: the CLI (locally and against a server, so also
the REST form field) and `POST /v1/evidence/import` directly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.records.kinds import RecordKind
from registry.storage.database import Database
from tests.cli.test_cli import capgate
from tests.factories import load_test_bytes, vllm_summary, write_load_test
from tests.importers.helpers import local_cli_env
from tests.importers.test_import_service import submit_example
from tests.support.auth import client_for

AGAINST = (
    "--workload",
    "chat-assistant",
    "--provider",
    "llama31-8b-h100-vllm",
    "--replicas",
    "1",
)
EXAMPLE_RUN = ("--measured-at", "2026-11-24T14:05:00Z", "--name", "mixed-on-vllm-0-8")


def register(database: Database) -> None:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)


def test_cli_runtime_is_stored_and_shown(env: dict[str, str], tmp_path: Path) -> None:
    classes = write_load_test(tmp_path)
    result = capgate(
        "evidence", "import", *classes, *AGAINST, *EXAMPLE_RUN, "--runtime", "vllm==0.8.5", env=env
    )
    assert result.returncode == 0, result.stderr
    shown = capgate("evidence", "show", "mixed-on-vllm-0-8", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "runtime:\n  name: vllm\n  version: 0.8.5\n" in shown.stdout
    as_json = capgate("evidence", "show", "mixed-on-vllm-0-8", "--json", env=env)
    assert json.loads(as_json.stdout)["content"]["runtime"] == {"name": "vllm", "version": "0.8.5"}


def test_cli_runtime_contradicting_the_file_exits_2_naming_both(
    env: dict[str, str], tmp_path: Path
) -> None:
    run = tmp_path / "run.json"
    run.write_bytes(vllm_summary(vllm_version="0.8.5"))
    result = capgate(
        "evidence",
        "import",
        str(run),
        *AGAINST,
        "--class",
        "interactive",
        "--runtime",
        "vllm==0.6.3",
        env=env,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("capgate: error: ")
    assert "--runtime: the file states runtime vllm 0.8.5 (metadata vllm_version)" in line
    assert "--runtime vllm==0.6.3 was given" in line
    # Agreeing with the file is fine; the file's statement is what is stored.
    ok = capgate(
        "evidence",
        "import",
        str(run),
        *AGAINST,
        "--class",
        "interactive",
        "--runtime",
        "vllm==0.8.5",
        "--json",
        env=env,
    )
    assert ok.returncode == 0, ok.stderr
    (record,) = json.loads(ok.stdout)
    assert record["record"]["content"]["runtime"] == {"name": "vllm", "version": "0.8.5"}


def test_cli_bad_runtime_syntax_exits_2_naming_the_flag(database_url: str, tmp_path: Path) -> None:
    classes = write_load_test(tmp_path)
    # Read before any file or the registry is: no records needed.
    result = capgate(
        "evidence",
        "import",
        *classes,
        *AGAINST,
        "--runtime",
        "vllm",
        env=local_cli_env(database_url),
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line == (
        "capgate: error: --runtime: 'vllm' is not NAME==VERSION, e.g. vllm==0.8.5 (the "
        "serving runtime and its version)"
    )


# ---- the REST form field -----------------------------------------------------------------


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    register(database)
    with client_for(database, "ci-bot") as c:
        yield c


def upload(client: TestClient, files: list[tuple[str, bytes]], **form: str) -> Any:
    data = {
        "workload": "chat-assistant",
        "provider": "llama31-8b-h100-vllm",
        "replicas": "1",
        **form,
    }
    parts = [("files", (name, content, "application/json")) for name, content in files]
    return client.post("/v1/evidence/import", files=parts, data=data)


def example_upload() -> list[tuple[str, bytes]]:
    return [
        (f"{c}.profile_export_aiperf.json", load_test_bytes(c)) for c in ("interactive", "batch")
    ]


MIXED = {"measured_at": "2026-11-24T14:05:00Z", "name": "mixed-on-vllm-0-8"}


def test_api_runtime_form_field(client: TestClient) -> None:
    response = client.post(
        "/v1/evidence/import",
        files=[("files", (n, d, "application/json")) for n, d in example_upload()],
        data={
            "workload": "chat-assistant",
            "provider": "llama31-8b-h100-vllm",
            "replicas": "1",
            "traffic_class": [
                "interactive=interactive.profile_export_aiperf.json",
                "batch=batch.profile_export_aiperf.json",
            ],
            "runtime": "vllm==0.8.5",
            **MIXED,
        },
    )
    assert response.status_code == 201, response.text
    (result,) = response.json()
    assert result["record"]["content"]["runtime"] == {"name": "vllm", "version": "0.8.5"}
    shown = client.get(f"/v1/evidence/{result['record']['ref']}")
    assert shown.json()["content"]["runtime"] == {"name": "vllm", "version": "0.8.5"}


def test_api_bad_runtime_is_422_naming_the_field(client: TestClient) -> None:
    response = upload(client, example_upload()[:1], traffic_class="interactive", runtime="8.5")
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "InvalidInput"
    assert body["problems"][0]["loc"] == "runtime"
    assert "is not NAME==VERSION" in body["problems"][0]["message"]


def test_api_runtime_contradicting_the_file_is_422_naming_both(client: TestClient) -> None:
    response = upload(
        client,
        [("run.json", vllm_summary(vllm_version="0.8.5"))],
        traffic_class="interactive",
        runtime="sglang==0.4.4",
    )
    assert response.status_code == 422
    body = response.json()
    assert body["details"] == {"source": "run.json"}
    message = body["problems"][0]["message"]
    assert "vllm 0.8.5" in message and "sglang==0.4.4" in message
