"""Owner teams and four eyes over the REST API: who may publish, request and approve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.storage.database import Database
from tests.factories import example
from tests.support.auth import bearer, token_for

TEAM = "team-assistant@example.com"


def waiver() -> dict[str, Any]:
    return {
        "name": "drain-grace-exception",
        "policy": "drain_configured",
        "plan": "chat-assistant-prod",
        "owner": "sre@example.com",
        "reason": "streams are capped at 25 s by the gateway",
        "expires_at": (datetime.now(UTC) + timedelta(days=10)).isoformat(),
    }


def registered(database: Database) -> TestClient:
    client = TestClient(create_app(database))
    member = bearer(token_for(database, "member", ["submitter"], [TEAM]))
    for collection in ("workloads", "providers", "plans"):
        response = client.post(
            f"/v1/{collection}", json=example(collection.rstrip("s")), headers=member
        )
        assert response.status_code == 201, response.text
    return client


def test_only_the_owner_team_publishes_plan_versions(database: Database) -> None:
    client = registered(database)
    member = bearer(token_for(database, "member-2", ["submitter"], [TEAM]))
    outsider = bearer(token_for(database, "outsider", ["submitter"], ["team-b"]))
    next_version = example("plan", description="v2 by its team")
    denied = client.post("/v1/plans", json=next_version, headers=outsider)
    assert denied.status_code == 403
    assert denied.json()["message"] == (
        f"plan chat-assistant-prod belongs to team {TEAM}; outsider (teams: team-b) may not "
        "publish its next version"
    )
    assert client.post("/v1/plans", json=next_version, headers=member).status_code == 201
    # Nor can a member hand the plan to a team it is not in, or drop the owner.
    given_away = client.post("/v1/plans", json=example("plan", owner="team-b"), headers=member)
    assert given_away.status_code == 403
    unowned = client.post("/v1/plans", json=example("plan", owner=None), headers=member)
    assert unowned.status_code == 422
    assert unowned.json()["problems"][0]["loc"] == "owner"
    versions = client.get("/v1/plans/chat-assistant-prod/versions", headers=member).json()
    assert versions["total"] == 2


def test_a_team_cannot_request_a_waiver_for_another_teams_plan(database: Database) -> None:
    client = registered(database)
    outsider = bearer(token_for(database, "outsider", ["submitter", "approver"], ["team-b"]))
    response = client.post("/v1/waivers", json=waiver(), headers=outsider)
    assert response.status_code == 403
    assert "may not request a waiver" in response.json()["message"]


def test_four_eyes_on_waivers(database: Database) -> None:
    client = registered(database)
    requester = bearer(token_for(database, "dev-alice", ["submitter", "approver"], [TEAM]))
    approver = bearer(token_for(database, "lead-bob", ["approver"], [TEAM]))
    auditor = bearer(token_for(database, "audit-eve", ["auditor"], []))
    created = client.post("/v1/waivers", json=waiver(), headers=requester)
    assert created.status_code == 201, created.text
    ref = created.json()["record"]["ref"]
    assert client.get("/v1/waivers/pending", headers=auditor).json() == [ref]
    assert client.get(f"/v1/waivers/{ref}/approval", headers=auditor).status_code == 404
    # The requester holds the approver role, and still cannot approve their own request.
    own = client.post(f"/v1/waivers/{ref}/approvals", json={}, headers=requester)
    assert own.status_code == 403
    assert own.json()["message"].startswith("dev-alice requested waiver")
    done = client.post(f"/v1/waivers/{ref}/approvals", json={"comment": "ok"}, headers=approver)
    assert done.status_code == 201, done.text
    assert (done.json()["requested_by"], done.json()["approved_by"]) == ("dev-alice", "lead-bob")
    again = client.post(f"/v1/waivers/{ref}/approvals", json={}, headers=approver)
    assert again.status_code == 409
    assert client.get("/v1/waivers/pending", headers=auditor).json() == []
    approval = client.get(f"/v1/waivers/{ref}/approval", headers=auditor).json()
    assert approval["approved_by"] == "lead-bob"
    events = client.get(
        "/v1/audit/events", params={"action": "waiver.approve"}, headers=auditor
    ).json()
    assert [(e["principal"], e["payload"]["requested_by"]) for e in events["items"]] == [
        ("lead-bob", "dev-alice")
    ]
