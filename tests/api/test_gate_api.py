"""Gate checks, decisions and recomputations through the REST API."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.policy.engine import DECISION_QUERY
from registry.settings import Settings
from registry.storage.database import Database
from tests.factories import example, example_import
from tests.support.auth import client_for
from tests.support.opa_server import free_port


def settings(engine: str = "embedded", opa_url: str | None = None) -> Settings:
    return Settings(
        database_url="unused",
        server=None,
        principal="unused",
        policy_engine=engine,
        opa_url=opa_url,
    )


def register(client: TestClient) -> None:
    for collection, document in (
        ("workloads", example("workload")),
        ("providers", example("provider")),
        ("plans", example("plan")),
    ):
        response = client.post(f"/v1/{collection}", json=document)
        assert response.status_code == 201, response.text
    # The example's load test, imported as a pipeline uploads it, dated last week.
    response = client.post("/v1/evidence/import", **example_import())
    assert response.status_code == 201, response.text


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    app = create_app(database, settings())
    with client_for(app, "release-pipeline") as c:
        register(c)
        yield c


def test_gate_check_then_audit_queries(client: TestClient) -> None:
    response = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
    assert response.status_code == 200
    decision = response.json()
    assert decision["outcome"] == "allow"
    assert decision["principal"] == "release-pipeline"
    assert decision["inputs"]["workload"]["ref"] == "chat-assistant@v1"
    fetched = client.get(f"/v1/decisions/{decision['id']}").json()
    assert fetched["id"] == decision["id"] and fetched["needs_recheck"] is False
    listed = client.get(
        "/v1/decisions", params={"plan": "chat-assistant-prod", "outcome": "allow"}
    ).json()
    assert [d["id"] for d in listed["items"]] == [decision["id"]]
    assert client.get("/v1/decisions", params={"outcome": "deny"}).json()["items"] == []


def test_gate_check_answers_the_decision_as_it_is_read(client: TestClient) -> None:
    """The check's answer is serialised once, not validated again against the response
    model: it must be what the response model gives for the same decision."""
    for _ in range(2):  # the first check runs the planner, the second reuses its result
        response = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        decision = response.json()
        assert decision == client.get(f"/v1/decisions/{decision['id']}").json()


def test_recomputation_is_stored_and_reused(client: TestClient) -> None:
    first = client.post("/v1/plans/chat-assistant-prod/recomputations")
    assert first.status_code == 200
    body = first.json()
    assert body["plan"] == "chat-assistant-prod@v1"
    assert set(body["result"]["scenarios"]) == {"peak", "one_worker_lost", "largest_zone_lost"}
    again = client.post("/v1/plans/chat-assistant-prod@v1/recomputations").json()
    assert again["digest"] == body["digest"] and again["created_at"] == body["created_at"]


def test_draft_sizing_stores_nothing(client: TestClient) -> None:
    draft = example("plan", name="chat-assistant-draft")
    draft["replicas_per_zone"] = {"us-east1-b": 1, "us-east1-c": 1, "us-east1-d": 1}
    response = client.post("/v1/sizing", json=draft)
    assert response.status_code == 200
    assert response.json()["sizing"]["plan_total_replicas"] == 3
    assert client.get("/v1/plans/chat-assistant-draft").status_code == 404


def test_fail_draft_with_unknown_zone_is_422(client: TestClient) -> None:
    draft = example("plan")
    draft["replicas_per_zone"] = {"eu-west4-a": 3}
    response = client.post("/v1/sizing", json=draft)
    assert response.status_code == 422
    assert response.json()["problems"][0]["loc"] == "replicas_per_zone.eu-west4-a"


def test_fail_unknown_plan_is_404(client: TestClient) -> None:
    response = client.post("/v1/gate/checks", json={"plan": "missing-plan"})
    assert response.status_code == 404


def test_fail_bad_decision_id_is_422_and_unknown_404(client: TestClient) -> None:
    assert client.get("/v1/decisions/not-a-uuid").status_code == 422
    assert client.get("/v1/decisions/00000000-0000-4000-8000-000000000000").status_code == 404


def test_fail_unreachable_opa_is_an_error_decision(database: Database) -> None:
    app = create_app(database, settings("opa", f"http://127.0.0.1:{free_port()}"))
    with client_for(app) as client:
        register(client)
        decision = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).json()
    assert decision["outcome"] == "error"
    assert decision["error"].startswith("opa engine at http://127.0.0.1:")
    assert "Connection refused" in decision["error"]
    assert decision["violations"] == []


def test_recheck_endpoint(client: TestClient) -> None:
    client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
    report = client.post("/v1/gate/rechecks").json()
    assert report["rechecked"] == []
    assert report["up_to_date"] == ["chat-assistant-prod@v1"]


def test_auditor_reruns_opa_eval_on_the_stored_input(
    client: TestClient, opa_binary: Path, tmp_path: Path
) -> None:
    """The input document a decision stored is what the policies saw: the real `opa eval`
    on it, with the repository's policies, reaches the same verdict."""
    decision = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).json()
    stored = client.get(f"/v1/decisions/{decision['id']}/input").json()
    assert stored["input_digest"] == decision["input_digest"]
    assert stored["bundle_revision"] == decision["bundle_revision"]
    assert stored["input"]["recomputation"]["planner_version"].startswith("capgate-planner")
    (tmp_path / "input.json").write_text(json.dumps(stored["input"]))
    policies = Path(__file__).resolve().parents[2] / "policies"
    result = subprocess.run(
        [str(opa_binary), "eval", "--format", "json", "-d", str(policies),
         "-i", str(tmp_path / "input.json"), DECISION_QUERY],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    verdict = json.loads(result.stdout)["result"][0]["expressions"][0]["value"]
    assert verdict["allow"] is (decision["outcome"] == "allow")
    assert client.get(f"/v1/decisions/{uuid.uuid4()}/input").status_code == 404


def test_decisions_by_plan_version(client: TestClient) -> None:
    first = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).json()
    assert client.post("/v1/plans", json=example("plan", description="v2")).status_code == 201
    second = client.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).json()
    by_version = {
        ref: [d["id"] for d in client.get("/v1/decisions", params={"plan": ref}).json()["items"]]
        for ref in ("chat-assistant-prod@v1", "chat-assistant-prod@v2", "chat-assistant-prod")
    }
    assert by_version == {
        "chat-assistant-prod@v1": [first["id"]],
        "chat-assistant-prod@v2": [second["id"]],
        "chat-assistant-prod": [second["id"], first["id"]],
    }
