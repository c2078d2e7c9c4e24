"""The REST API on both databases: status codes, error shape, pagination, OpenAPI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.storage.database import Database
from tests.factories import example
from tests.support.auth import client_for

COLLECTIONS = {
    "workload": "workloads",
    "provider": "providers",
    "plan": "plans",
    "evidence": "evidence",
}


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    with client_for(database, "ci-bot") as c:
        yield c


def post(
    client: TestClient, kind: str, document: dict[str, object]
) -> tuple[int, dict[str, object]]:
    response = client.post(f"/v1/{COLLECTIONS[kind]}", json=document)
    return response.status_code, response.json()


def test_create_then_identical_then_changed(client: TestClient) -> None:
    status, body = post(client, "workload", example("workload"))
    assert status == 201 and body["created"] is True
    assert body["record"]["ref"] == "chat-assistant@v1"
    assert body["record"]["created_by"] == "ci-bot"
    status, body = post(client, "workload", example("workload"))
    assert status == 200 and body["created"] is False
    status, body = post(client, "workload", example("workload", owner="someone-else"))
    assert status == 201 and body["record"]["ref"] == "chat-assistant@v2"


def test_worked_example_round_trip(client: TestClient) -> None:
    for kind in ("workload", "provider", "plan", "evidence"):
        status, _ = post(client, kind, example(kind))
        assert status == 201, kind
    plan = client.get("/v1/plans/chat-assistant-prod").json()
    assert plan["references"] == {
        "provider": "llama31-8b-h100-vllm@v1",
        "workload": "chat-assistant@v1",
    }
    assert plan["content"]["replicas_per_zone"] == {
        "us-east1-b": 3,
        "us-east1-c": 3,
        "us-east1-d": 3,
    }
    by_digest = client.get(f"/v1/plans/{plan['digest']}").json()
    assert by_digest["ref"] == "chat-assistant-prod@v1"


def test_fail_invalid_body_is_422_with_field_path(client: TestClient) -> None:
    document = example("workload")
    document["classes"][0]["slo"]["ttft_p99_ms"] = "fast"
    status, body = post(client, "workload", document)
    assert status == 422
    assert body["error"] == "InvalidInput"
    assert body["problems"] == [
        {"loc": "classes.0.slo.ttft_p99_ms", "message": "Input should be a valid number"}
    ]


def test_fail_unknown_field_is_422(client: TestClient) -> None:
    status, body = post(client, "provider", example("provider", gpu_count=8))
    assert status == 422
    assert body["problems"] == [{"loc": "gpu_count", "message": "unknown field"}]


def test_fail_non_object_body_is_422(client: TestClient) -> None:
    response = client.post(
        "/v1/plans", content=b"[1,2]", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["error"] == "InvalidInput"


def test_fail_unknown_reference_in_body_is_422(client: TestClient) -> None:
    status, body = post(client, "plan", example("plan"))
    assert status == 422
    assert body["problems"][0]["loc"] == "workload"


def test_fail_unknown_record_is_404(client: TestClient) -> None:
    response = client.get("/v1/workloads/never-submitted@v2")
    assert response.status_code == 404
    assert response.json() == {
        "error": "NotFound",
        "message": "no workload record never-submitted@v2",
        "details": {"loc": "ref", "ref": "never-submitted@v2"},
    }
    assert client.get("/v1/workloads/never-submitted/versions").status_code == 404


def test_fail_malformed_reference_is_422(client: TestClient) -> None:
    response = client.get("/v1/workloads/Not A Ref")
    assert response.status_code == 422


def test_list_pagination(client: TestClient) -> None:
    for i in range(5):
        post(client, "workload", example("workload", name=f"svc-{i}"))
    page = client.get("/v1/workloads", params={"limit": 2, "offset": 2}).json()
    assert [item["name"] for item in page["items"]] == ["svc-2", "svc-3"]
    assert page["total"] == 5
    assert client.get("/v1/workloads", params={"limit": 0}).status_code == 422


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


def test_fail_readiness_on_unmigrated_database(tmp_path: object) -> None:
    database = Database(f"sqlite:///{tmp_path}/empty.db")
    with TestClient(create_app(database)) as client:
        response = client.get("/readyz")
        assert response.status_code == 503
        assert "capgate db upgrade" in response.json()["message"]
        # Tokens live in the registry: an unmigrated one cannot check them (never "allow").
        token = {"Authorization": "Bearer cgt_0123456789abcdef_" + "a" * 43}
        submit = client.post("/v1/workloads", json=example("workload"), headers=token)
        assert submit.status_code == 503


def test_openapi_documents_record_bodies(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    body = spec["paths"]["/v1/plans"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/CapacityPlan"}
    plan_schema = spec["components"]["schemas"]["CapacityPlan"]
    assert plan_schema["additionalProperties"] is False
    assert "ServingConfig" in spec["components"]["schemas"]
    assert client.get("/docs").status_code == 200


def test_fail_unknown_query_parameter_names_it(client: TestClient) -> None:
    """A misspelt filter must not read as an answer over every row."""
    response = client.get("/v1/decisions", params={"outcom": "deny"})
    assert response.status_code == 422
    (problem,) = response.json()["problems"]
    assert problem["loc"] == "outcom"
    assert problem["message"].startswith("not a query parameter of this route (it takes: ")
    assert "outcome" in problem["message"]


@pytest.mark.parametrize(
    ("method", "path", "status", "error"),
    [
        ("GET", "/nope", 404, "NotFound"),
        ("DELETE", "/v1/plans", 405, "MethodNotAllowed"),
        ("POST", "/healthz", 405, "MethodNotAllowed"),
    ],
)
def test_routing_errors_use_the_one_error_shape(
    client: TestClient, method: str, path: str, status: int, error: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == status
    assert set(response.json()) == {"error", "message"}
    assert response.json()["error"] == error
