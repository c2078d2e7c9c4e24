"""`POST /v1/observations`: stored, judged for drift, reviewed, on both databases."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import example
from tests.support.observations import example_workload, observation, observed_class

PLAN = "chat-assistant-prod"


def grown(name: str = "assistant-live") -> dict[str, object]:
    interactive, batch = example_workload().classes
    document: dict[str, object] = observation(
        [observed_class(interactive, prompt_scale=1.3), observed_class(batch)], name=name
    ).model_dump(mode="json")
    return document


def test_a_drifted_observation_stales_evidence_audits_a_review_and_denies(
    client: TestClient,
) -> None:
    stored = client.post("/v1/observations", json=grown())
    assert stored.status_code == 201, stored.text
    assert stored.json()["record"]["references"] == {
        "plan": f"{PLAN}@v1",
        "workload": "chat-assistant@v1",
    }
    stale = client.get("/v1/evidence", params={"stale": "true"}).json()["items"]
    assert [item["ref"] for item in stale] == ["chat-assistant-h100-mixed-2026-11@v1"]

    events = client.get("/v1/audit/events", params={"limit": 5}).json()["items"]
    actions = [e["action"] for e in events]
    assert actions[:2] == ["observation.review", "observation.submit"]  # newest first
    review = events[0]["payload"]
    assert review["observation"] == "assistant-live@v1"
    assert review["staled"] == ["chat-assistant-h100-mixed-2026-11@v1"]
    assert {c["field"] for c in review["changes"]} >= {"classes.interactive.prompt_tokens.p99"}

    decision = client.post("/v1/gate/checks", json={"plan": PLAN}).json()
    assert decision["outcome"] == "deny"
    assert {v["policy"] for v in decision["violations"]} >= {"production_drift"}
    assert decision["inputs"]  # the observation is among what the decision rests on

    verified = client.get("/v1/audit/verify")
    assert verified.status_code == 200 and verified.json()["intact"] is True


def test_fail_an_observation_of_another_workload_version_is_refused(client: TestClient) -> None:
    newer = example("workload") | {"description": "profiled again"}
    assert client.post("/v1/workloads", json=newer).status_code == 201  # chat-assistant@v2
    document = grown()
    document["workload"] = "chat-assistant@v2"
    refused = client.post("/v1/observations", json=document)
    assert refused.status_code == 422
    problem = refused.json()["problems"][0]
    assert problem["loc"] == "workload"
    assert problem["message"] == (
        f"chat-assistant@v2 is not the workload plan {PLAN}@v1 pins (chat-assistant@v1)"
    )


def test_fail_a_bucket_value_outside_its_bucket_names_the_field(client: TestClient) -> None:
    document = grown()
    classes = document["classes"]
    assert isinstance(classes, list)
    classes[0]["prompt_tokens"]["quantiles"]["p50"]["value"] = 1e9
    refused = client.post("/v1/observations", json=document)
    assert refused.status_code == 422
    assert "classes.0.prompt_tokens.quantiles.p50" in refused.json()["problems"][0]["loc"]
