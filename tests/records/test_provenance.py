"""Provenance: only the import path may say a record was imported.

A record submitted by hand (service, `POST /v1/evidence`, `capgate evidence submit`) that
claims `provenance.entry: imported`, lists `provenance.files` or says its replicas came
from a file or a flag is refused (422 / exit 2) naming the field; the import path stamps
all three from the raw file's bytes. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from registry.errors import InvalidInput
from registry.importers.service import ImportFile, ImportOptions, import_files
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, RecordRow
from tests.cli.test_cli import capgate, running_server
from tests.factories import example
from tests.support.auth import client_for
from tests.support.fixtures import shared

VLLM_REL = "load-tests/vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json"
ONLY_IMPORT = "is set only by `capgate evidence import`"
SOURCE_FILE = {
    "file_name": "guidellm-chat-assistant-mixed-2026-11-24.json",
    "sha256": "sha256:" + "a8" * 32,
    "size_bytes": 4812331,
    "traffic_class": "interactive",
    "tool": "guidellm",
}


def submit(database: Database, kind: RecordKind, document: dict[str, Any]) -> SubmitResult:
    record = validate_record(kind, document)
    return database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="t")


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit(database, kind, example(kind))
    return database


def claiming(**provenance: Any) -> dict[str, Any]:
    document = copy.deepcopy(example("evidence"))
    document["provenance"] = provenance
    return document


def counts(database: Database) -> tuple[int, int]:
    with database.reading() as session:
        records = session.scalar(select(func.count()).select_from(RecordRow)) or 0
        events = session.scalar(select(func.count()).select_from(AuditEventRow)) or 0
    return int(records), int(events)


@pytest.mark.parametrize(
    ("provenance", "loc", "wording"),
    [
        ({"entry": "imported"}, "provenance.entry", "'imported' " + ONLY_IMPORT),
        ({"files": [SOURCE_FILE]}, "provenance.files", ONLY_IMPORT),
        ({"replicas_source": "flag"}, "provenance.replicas_source", "'flag' " + ONLY_IMPORT),
    ],
)
def test_hand_submitted_import_claims_are_refused(
    registry: Database, provenance: dict[str, Any], loc: str, wording: str
) -> None:
    before = counts(registry)
    with pytest.raises(InvalidInput) as caught:
        submit(registry, RecordKind.evidence, claiming(**provenance))
    problem = caught.value.problems[0]
    assert (problem.loc, caught.value.status_code, caught.value.exit_code) == (loc, 422, 2)
    assert wording in problem.message
    assert counts(registry) == before  # nothing stored, no audit event


def test_all_three_claims_are_named_at_once(registry: Database) -> None:
    document = claiming(entry="imported", files=[SOURCE_FILE], replicas_source="file")
    with pytest.raises(InvalidInput) as caught:
        submit(registry, RecordKind.evidence, document)
    assert [p.loc for p in caught.value.problems] == [
        "provenance.entry",
        "provenance.files",
        "provenance.replicas_source",
    ]


def test_declared_by_hand_is_accepted_and_says_declared(registry: Database) -> None:
    stated = claiming(entry="declared", replicas_source="declared")
    created = submit(registry, RecordKind.evidence, stated)
    assert created.created
    assert created.record.content["provenance"] == {
        "entry": "declared",
        "replicas_source": "declared",
        "files": [],
    }
    # Leaving provenance out is the same record: declared is the default.
    same = submit(registry, RecordKind.evidence, example("evidence"))
    assert (same.created, same.record.digest) == (False, created.record.digest)


def test_import_path_stamps_imported_from_the_bytes(registry: Database) -> None:
    path = shared(VLLM_REL)
    data = path.read_bytes()
    (result,) = import_files(
        registry,
        [ImportFile(name=path.name, data=data)],
        ImportOptions(
            workload="chat-assistant",
            provider="llama31-8b-h100-vllm",
            traffic_class="interactive",
            replicas=1,
        ),
        principal="ci-bot",
    )
    assert result.created
    content = result.record.content
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    assert content["provenance"]["entry"] == "imported"
    assert content["provenance"]["replicas_source"] == "flag"
    (source,) = content["provenance"]["files"]
    assert (source["file_name"], source["sha256"], source["size_bytes"]) == (
        path.name,
        digest,
        len(data),
    )
    assert content["raw_file"]["sha256"] == digest

    # The very same content, submitted by hand, is a typed-in claim: refused.
    with pytest.raises(InvalidInput) as caught:
        submit(registry, RecordKind.evidence, content)
    assert caught.value.problems[0].loc == "provenance.entry"


# ---- the same refusal over HTTP and from the CLI -----------------------------------------


@pytest.fixture
def client(registry: Database) -> Iterator[TestClient]:
    with client_for(registry, "ci-bot") as c:
        yield c


def test_post_evidence_claiming_imported_is_422(client: TestClient) -> None:
    response = client.post("/v1/evidence", json=claiming(entry="imported"))
    assert response.status_code == 422, response.text
    (problem,) = response.json()["problems"]
    assert problem["loc"] == "provenance.entry"
    assert ONLY_IMPORT in problem["message"]
    assert client.get("/v1/evidence").json()["total"] == 0
    declared = client.post("/v1/evidence", json=example("evidence"))
    assert declared.status_code == 201
    assert declared.json()["record"]["content"]["provenance"]["entry"] == "declared"


@pytest.mark.parametrize("where", ["local", "server"])
def test_cli_submit_claiming_imported_exits_2(
    registry: Database, database_url: str, where: str, tmp_path: Path
) -> None:
    document = tmp_path / "evidence.yaml"
    document.write_text(yaml.safe_dump(claiming(entry="imported")))
    env = {"CAPGATE_DATABASE_URL": database_url, "CAPGATE_PRINCIPAL": "alice"}
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    if where == "local":
        result = capgate("evidence", "submit", str(document), env={**base, **env})
    else:
        with running_server(database_url) as remote:
            result = capgate("evidence", "submit", str(document), env=remote)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"capgate: error: {document}: provenance.entry: 'imported' ")
    assert "`capgate evidence import`" in line
    listed = capgate("evidence", "list", "--json", env={**base, **env})
    assert json.loads(listed.stdout)["total"] == 0
