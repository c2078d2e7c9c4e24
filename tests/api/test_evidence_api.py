"""Evidence import over HTTP (multipart), stale listings and staleness history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.storage.database import Database
from tests.factories import example, load_test_bytes
from tests.support.auth import client_for
from tests.support.fixtures import shared

MULTI_REL = "load-tests/guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json"
VLLM_REL = "load-tests/vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json"
EVIDENCE = "chat-assistant-h100-mixed-2026-11"
FORM = {
    "workload": "chat-assistant",
    "provider": "llama31-8b-h100-vllm",
    "traffic_class": "interactive",
    "replicas": "1",
}


@pytest.fixture
def MULTI() -> Path:
    return shared(MULTI_REL)


@pytest.fixture
def VLLM() -> Path:
    return shared(VLLM_REL)


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    with client_for(database, "ci-bot") as c:
        for kind, collection in (
            ("workload", "workloads"),
            ("provider", "providers"),
            ("plan", "plans"),
            ("evidence", "evidence"),
        ):
            assert c.post(f"/v1/{collection}", json=example(kind)).status_code == 201
        yield c


def upload(client: TestClient, *paths: Path, **form: str) -> Any:
    files = [("files", (p.name, p.read_bytes(), "application/json")) for p in paths]
    return client.post("/v1/evidence/import", files=files, data={**FORM, **form})


def test_import_multipart_then_same_again(client: TestClient, MULTI: Path, VLLM: Path) -> None:
    response = upload(client, MULTI, VLLM, tool="auto")
    assert response.status_code == 201, response.text
    body = response.json()
    assert [r["record"]["ref"] for r in body] == [
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-0@v1",
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-1@v1",
        "nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf@v1",
    ]
    assert all(r["created"] for r in body)
    assert body[0]["record"]["created_by"] == "ci-bot"
    again = upload(client, MULTI, VLLM)
    assert again.status_code == 200
    assert [r["created"] for r in again.json()] == [False, False, False]
    assert [r["record"]["digest"] for r in again.json()] == [r["record"]["digest"] for r in body]


def test_import_broken_file_422_names_it_and_keeps_nothing(
    client: TestClient, tmp_path: Path, VLLM: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    response = upload(client, VLLM, broken)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "InvalidInput"
    assert body["details"] == {"source": "broken.json"}
    assert body["problems"][0]["loc"] == "(file)"
    assert body["problems"][0]["message"].startswith("not JSON")
    listed = client.get("/v1/evidence").json()
    assert [s["name"] for s in listed["items"]] == [EVIDENCE]


def test_import_bad_form_fields(client: TestClient, VLLM: Path) -> None:
    no_zone = upload(client, VLLM, measured_at="2026-11-20T00:00:00")
    assert no_zone.status_code == 422
    assert no_zone.json()["problems"][0]["loc"] == "measured_at"
    missing = client.post(
        "/v1/evidence/import",
        files=[("files", (VLLM.name, VLLM.read_bytes(), "application/json"))],
        data={"provider": "llama31-8b-h100-vllm"},
    )
    assert missing.status_code == 422
    assert missing.json()["problems"][0]["loc"] == "workload"
    unknown_ref = upload(client, VLLM, workload="nothing-here")
    assert unknown_ref.status_code == 422
    assert unknown_ref.json()["problems"][0]["loc"] == "measured_against.workload"
    no_replicas = upload(client, VLLM, replicas="")
    assert no_replicas.status_code == 422
    assert no_replicas.json()["problems"][0]["loc"] == "--replicas"
    assert "form field replicas" in no_replicas.json()["problems"][0]["message"]
    zero = upload(client, VLLM, replicas="0")
    assert zero.status_code == 422
    assert zero.json()["problems"][0]["loc"].endswith("replicas")


def test_mixed_test_from_two_uploads_is_one_record(client: TestClient) -> None:
    """Two load generators run together, one per class: one record, a result per class."""
    files = [
        ("files", (f"{c}.json", load_test_bytes(c), "application/json"))
        for c in ("interactive", "batch")
    ]
    form = {
        "workload": "chat-assistant",
        "provider": "llama31-8b-h100-vllm",
        "plan": "chat-assistant-prod",
        "replicas": "1",
        "measured_at": "2026-11-24T14:05:00Z",
        "name": "mixed-upload",
    }
    response = client.post(
        "/v1/evidence/import",
        files=files,
        data={**form, "traffic_class": ["interactive=interactive.json", "batch=batch.json"]},
    )
    assert response.status_code == 201, response.text
    (result,) = response.json()
    content = result["record"]["content"]
    assert result["record"]["ref"] == "mixed-upload@v1"
    assert sorted(content["results"]["per_class"]) == ["batch", "interactive"]
    assert content["provenance"]["entry"] == "imported"
    assert [f["traffic_class"] for f in content["provenance"]["files"]] == ["interactive", "batch"]
    # A file without its NAME=FILE is refused, naming the file.
    unnamed = client.post(
        "/v1/evidence/import",
        files=files,
        data={**form, "traffic_class": ["interactive=interactive.json"]},
    )
    assert unnamed.status_code == 422
    assert unnamed.json()["details"] == {"source": "batch.json"}


def test_stale_listing_and_the_generic_listing_side_by_side(client: TestClient) -> None:
    assert client.get("/v1/evidence/stale").json()["items"] == []
    assert client.get("/v1/evidence", params={"stale": "true"}).json()["items"] == []

    changed = example("plan")
    changed["serving"]["max_num_seqs"] = 192
    assert client.post("/v1/plans", json=changed).status_code == 201

    stale = client.get("/v1/evidence", params={"stale": "true"}).json()
    assert stale == client.get("/v1/evidence/stale").json()
    (item,) = stale["items"]
    assert item["ref"] == f"{EVIDENCE}@v1"
    assert item["reasons"] == [
        "plan chat-assistant-prod@v1 -> chat-assistant-prod@v2: "
        "serving.max_num_seqs: 256 -> 192, serving config changed"
    ]
    # Without stale=true the generic listing answers, unchanged.
    for params in ({}, {"stale": "false"}):
        generic = client.get("/v1/evidence", params=params).json()
        assert generic["items"][0]["latest_ref"] == f"{EVIDENCE}@v1"
        assert "reasons" not in generic["items"][0]
    # And a record named by reference is still a record.
    assert client.get(f"/v1/evidence/{EVIDENCE}").json()["ref"] == f"{EVIDENCE}@v1"


def test_replaced_versions_only_when_asked(client: TestClient) -> None:
    rerun = example("evidence", description="re-run")
    assert client.post("/v1/evidence", json=rerun).status_code == 201
    assert client.get("/v1/evidence/stale").json()["total"] == 0
    everything = client.get("/v1/evidence/stale", params={"include_replaced": "true"}).json()
    assert [i["ref"] for i in everything["items"]] == [f"{EVIDENCE}@v1"]


def test_staleness_history(client: TestClient) -> None:
    fresh = client.get(f"/v1/evidence/{EVIDENCE}/staleness").json()
    assert fresh["stale"] is False and fresh["entries"] == [] and fresh["max_age_days"] == 90
    workload = example("workload")
    workload["classes"][0]["prompt_tokens"]["quantiles"]["p99"] = 7930
    assert client.post("/v1/workloads", json=workload).status_code == 201
    history = client.get(f"/v1/evidence/{EVIDENCE}@v1/staleness").json()
    assert history["stale"] is True
    (entry,) = history["entries"]
    assert (entry["cause_kind"], entry["cause"], entry["measured"]) == (
        "workload",
        "chat-assistant@v2",
        "chat-assistant@v1",
    )
    assert entry["changes"][0]["threshold"] == 0.1
    missing = client.get("/v1/evidence/nothing-here/staleness")
    assert missing.status_code == 404
    assert missing.json()["message"] == "no evidence record nothing-here"


def test_paging_bounds_and_openapi(client: TestClient) -> None:
    assert client.get("/v1/evidence/stale", params={"limit": 0}).status_code == 422
    paths = client.get("/openapi.json").json()["paths"]
    assert "post" in paths["/v1/evidence/import"]
    assert "get" in paths["/v1/evidence/stale"]
    assert "get" in paths["/v1/evidence/{ref}/staleness"]
    assert paths["/v1/evidence"]["get"]["operationId"] == "list_evidence"
