"""Every series has an owner (issue 29): takeovers refused, transfers audited, legacy
series decided safely, waiver approvers limited by policy data. On both databases."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, update

from registry.api.app import create_app
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.storage.database import Database
from registry.storage.models import SeriesOwnerRow
from tests.api.test_gate_api import settings
from tests.factories import example, example_import, short_grace_plan
from tests.support.auth import bearer, token_for
from tests.support.observations import observation_document

TEAM = "team-assistant@example.com"
PLAN = "chat-assistant-prod"
WAIVER = "drain-grace-exception"


def waiver(plan: str = PLAN) -> dict[str, Any]:
    return {
        "name": WAIVER,
        "policy": "drain_configured",
        "plan": plan,
        "owner": "sre@example.com",
        "reason": "streams are capped at 25 s by the gateway",
        "expires_at": (datetime.now(UTC) + timedelta(days=10)).isoformat(),
    }


class Teams:
    """Team A (the worked example's owner) and team B, each with a member and an approver."""

    def __init__(self, database: Database, client: TestClient) -> None:
        self.database, self.client = database, client

    def as_(self, subject: str, team: str, roles: tuple[str, ...] = ("submitter",)) -> Any:
        return bearer(token_for(self.database, subject=subject, roles=roles, teams=[team]))

    def post(self, url: str, headers: Any, **kwargs: Any) -> Any:
        return self.client.post(url, headers=headers, **kwargs)


@pytest.fixture
def teams(database: Database) -> Iterator[Teams]:
    with TestClient(create_app(database, settings())) as client:
        world = Teams(database, client)
        a = world.as_("alice", TEAM)
        for collection, document in (
            ("workloads", example("workload")),
            ("providers", example("provider")),
            ("plans", short_grace_plan()),  # denied by drain_configured unless waived
        ):
            response = world.post(f"/v1/{collection}", a, json=document)
            assert response.status_code == 201, response.text
        assert world.post("/v1/evidence/import", a, **example_import()).status_code == 201
        yield world


def gate(world: Teams, plan: str = PLAN) -> str:
    pipeline = world.as_("ci", TEAM, ("pipeline",))
    response = world.post("/v1/gate/checks", pipeline, json={"plan": plan})
    assert response.status_code == 200, response.text
    return str(response.json()["outcome"])


def test_a_team_cannot_take_over_another_teams_waiver_series(teams: Teams) -> None:
    requested = teams.post("/v1/waivers", teams.as_("alice", TEAM), json=waiver())
    assert requested.status_code == 201, requested.text
    approver = teams.as_("lead-a", TEAM, ("approver",))
    ref = requested.json()["record"]["ref"]
    assert teams.post(f"/v1/waivers/{ref}/approvals", approver, json={}).status_code == 201
    assert gate(teams) == "allow"

    # Team B owns a plan of its own, and names its waiver as team A's.
    bob = teams.as_("bob", "team-b")
    b_plan = example("plan", name="b-plan", owner="team-b")
    assert teams.post("/v1/plans", bob, json=b_plan).status_code == 201
    takeover = teams.post("/v1/waivers", bob, json=waiver(plan="b-plan"))
    assert takeover.status_code == 403
    assert takeover.json()["message"] == (
        f"waiver {WAIVER} belongs to team {TEAM}; bob (teams: team-b) may not publish its "
        "next version"
    )
    versions = teams.client.get(f"/v1/waivers/{WAIVER}/versions", headers=bob).json()
    assert versions["total"] == 1
    assert gate(teams) == "allow"  # A's approved waiver still applies


def test_workloads_and_providers_belong_to_their_first_publisher(teams: Teams) -> None:
    bob = teams.as_("bob", "team-b")
    for collection, name in (
        ("workloads", "chat-assistant"),
        ("providers", "llama31-8b-h100-vllm"),
    ):
        kind = collection.rstrip("s")
        refused = teams.post(
            f"/v1/{collection}", bob, json=example(kind, description="B's version")
        )
        assert refused.status_code == 403, refused.text
        assert refused.json()["message"].startswith(f"{kind} {name} belongs to team {TEAM}; bob")
        owner = teams.client.get(f"/v1/owners/{kind}/{name}", headers=bob).json()
        assert (owner["team"], owner["source"]) == (TEAM, "assigned")
        assert [(h["team"], h["assigned_by"], h["reason"]) for h in owner["history"]] == [
            (TEAM, "alice", "first publisher")
        ]
    # A bare reference still means team A's latest: nothing of B's was stored.
    plan = teams.client.get(f"/v1/plans/{PLAN}", headers=bob).json()
    assert plan["references"]["workload"] == "chat-assistant@v1"


def test_imported_evidence_and_observations_belong_to_the_plans_team(teams: Teams) -> None:
    bob = teams.as_("bob", "team-b", ("submitter", "pipeline"))
    upload = example_import(days_ago=3)
    upload["data"] = {**upload["data"], "name": "rerun"}  # a new series, under A's plan
    imported = teams.post("/v1/evidence/import", bob, **upload)
    assert imported.status_code == 403
    assert imported.json()["message"].startswith(f"plan {PLAN} belongs to team {TEAM}; bob")
    observed = teams.post("/v1/observations", bob, json=observation_document("b-observed"))
    assert observed.status_code == 403
    assert observed.json()["message"].startswith(f"plan {PLAN} belongs to team {TEAM}; bob")

    # A pipeline of team A imports it: the series is the plan's team's, not a person's.
    pipeline = teams.as_("ci", TEAM, ("submitter", "pipeline"))
    done = teams.post("/v1/evidence/import", pipeline, **upload)
    assert done.status_code == 201, done.text
    name = done.json()[0]["record"]["name"]
    owner = teams.client.get(f"/v1/owners/evidence/{name}", headers=bob).json()
    assert (owner["team"], owner["history"][0]["assigned_by"]) == (TEAM, "ci")


def test_a_multi_team_publisher_names_the_team_of_a_new_series(teams: Teams) -> None:
    both = bearer(token_for(teams.database, "carol", ["submitter"], ["team-b", "team-c"]))
    named = teams.client.post(
        "/v1/workloads",
        params={"team": "team-c"},
        json=example("workload", name="batch-summaries"),
        headers=both,
    )
    assert named.status_code == 201, named.text
    owner = teams.client.get("/v1/owners/workload/batch-summaries", headers=both).json()
    assert owner["team"] == "team-c"
    not_mine = teams.client.post(
        "/v1/workloads",
        params={"team": "team-d"},
        json=example("workload", name="other"),
        headers=both,
    )
    assert not_mine.status_code == 403
    assert "for team team-d: not a member" in not_mine.json()["message"]
    # Without a choice: the record's owner if it is one of the publisher's teams, else the
    # first of them.
    plain = teams.client.post(
        "/v1/workloads", json=example("workload", name="third", owner=None), headers=both
    )
    assert plain.status_code == 201
    third = teams.client.get("/v1/owners/workload/third", headers=both).json()
    assert third["team"] == "team-b"
    nobody = bearer(token_for(teams.database, "dan", ["submitter"], []))
    teamless = teams.client.post(
        "/v1/workloads", json=example("workload", name="fourth"), headers=nobody
    )
    assert teamless.status_code == 403
    assert "belongs to no team" in teamless.json()["message"]


def test_a_transfer_is_an_admin_act_in_the_audit_trail(teams: Teams) -> None:
    alice, bob = teams.as_("alice", TEAM), teams.as_("bob", "team-b")
    body = {"team": "team-b", "reason": "team B runs this workload from December"}
    url = "/v1/owners/workload/chat-assistant/transfers"
    refused = teams.post(url, alice, json=body)
    assert refused.status_code == 403
    admin = teams.as_("root", "platform", ("admin",))
    moved = teams.post(url, admin, json=body)
    assert moved.status_code == 201, moved.text
    assert moved.json()["team"] == "team-b"
    assert [h["team"] for h in moved.json()["history"]] == [TEAM, "team-b"]
    assert teams.post(url, admin, json=body).status_code == 409  # already team B's

    next_version = example("workload", description="B's now")
    assert teams.post("/v1/workloads", alice, json=next_version).status_code == 403
    assert teams.post("/v1/workloads", bob, json=next_version).status_code == 201

    auditor = teams.as_("eve", "audit", ("auditor",))
    events = teams.client.get(
        "/v1/audit/events", params={"action": "series.transfer"}, headers=auditor
    ).json()["items"]
    assert [
        (e["principal"], e["payload"]["previous_team"], e["payload"]["team"]) for e in events
    ] == [("root", TEAM, "team-b")]
    assert events[0]["payload"]["reason"] == body["reason"]
    verified = teams.client.get("/v1/audit/verify", headers=auditor).json()
    assert (verified["intact"], verified["problems"]) == (True, [])

    # An owner edited in the database is caught like any other covered row.
    with teams.database.engine.begin() as connection:
        connection.execute(
            update(SeriesOwnerRow).where(SeriesOwnerRow.team == "team-b").values(team="team-a")
        )
    tampered = teams.client.get("/v1/audit/verify", headers=auditor).json()
    assert tampered["intact"] is False
    assert any(
        p.startswith("series_owners id") and "team is 'team-a', the event recorded 'team-b'" in p
        for p in tampered["problems"]
    ), tampered["problems"]


def test_an_admin_names_the_team_of_a_series_before_it_exists(teams: Teams) -> None:
    admin = teams.as_("root", "platform", ("admin",))
    body = {"team": "team-b", "reason": "reserved for team B's new deployment"}
    named = teams.post("/v1/owners/provider/b-h200/transfers", admin, json=body)
    assert named.status_code == 201, named.text
    provider = example("provider", name="b-h200")
    assert teams.post("/v1/providers", teams.as_("alice", TEAM), json=provider).status_code == 403
    assert teams.post("/v1/providers", teams.as_("bob", "team-b"), json=provider).status_code == 201


def _local(database: Database, kind: RecordKind, document: dict[str, Any]) -> None:
    record = validate_record(kind, document)
    database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="local")


def test_series_without_an_owner_row(teams: Teams) -> None:
    """Before migration 0010 nothing recorded owners: a plan's `owner` field decides, a
    waiver follows its plan, and a series stating no team is refused to every team until
    an admin names one. The local user (no team restriction) still writes."""
    requested = teams.post("/v1/waivers", teams.as_("alice", TEAM), json=waiver())
    assert requested.status_code == 201
    # A workload stating no owner, published by the local user: nobody's.
    _local(teams.database, RecordKind.workload, example("workload", name="legacy", owner=None))
    with teams.database.engine.begin() as connection:
        connection.execute(delete(SeriesOwnerRow))  # as a registry migrated from 0009
    bob, alice = teams.as_("bob", "team-b"), teams.as_("alice", TEAM)
    plan = teams.client.get(f"/v1/owners/plan/{PLAN}", headers=bob).json()
    assert (plan["team"], plan["source"], plan["history"]) == (TEAM, "stated", [])
    takeover = teams.post("/v1/waivers", bob, json=waiver())
    assert takeover.status_code == 403
    assert takeover.json()["message"].startswith(f"waiver {WAIVER} belongs to team {TEAM}")

    legacy = example("workload", name="legacy", owner=None, description="v2")
    for who in (alice, bob):
        refused = teams.post("/v1/workloads", who, json=legacy)
        assert refused.status_code == 403
        assert "has no owner team (published before series ownership" in refused.json()["message"]
    _local(teams.database, RecordKind.workload, legacy)  # the database file is their boundary
    admin = teams.as_("root", "platform", ("admin",))
    body = {"team": TEAM, "reason": "adopted after the upgrade"}
    assert teams.post("/v1/owners/workload/legacy/transfers", admin, json=body).status_code == 201
    v3 = example("workload", name="legacy", owner=None, description="v3")
    assert teams.post("/v1/workloads", alice, json=v3).status_code == 201


@pytest.fixture
def policy_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the registry at a policy data document written by the test."""
    from registry.staleness import thresholds

    installed = json.loads(thresholds.data_path().read_text(encoding="utf-8"))
    path = tmp_path / "data.json"

    def write(rule: dict[str, Any]) -> None:
        installed["capgate"]["thresholds"]["waiver_approval"] = rule
        path.write_text(json.dumps(installed), encoding="utf-8")

    monkeypatch.setattr(thresholds, "data_path", lambda: path)
    return write


def test_who_approves_a_waiver_is_policy_data(teams: Teams, policy_data: Any) -> None:
    bob = teams.as_("bob", "team-b", ("approver",))
    risk = teams.as_("rita", "risk", ("approver",))

    def requested(n: int) -> str:
        document = {**waiver(), "name": f"exception-{n}"}
        response = teams.post("/v1/waivers", teams.as_("alice", TEAM), json=document)
        assert response.status_code == 201, response.text
        return f"/v1/waivers/{response.json()['record']['ref']}/approvals"

    policy_data({"approvers": "plan_team", "global_approver_teams": []})  # the default
    first = requested(1)
    for outsider in (bob, risk):
        refused = teams.post(first, outsider, json={})
        assert refused.status_code == 403
        assert f"which belongs to team {TEAM}" in refused.json()["message"]
    assert teams.post(first, teams.as_("lead-a", TEAM, ("approver",)), json={}).status_code == 201

    policy_data({"approvers": "plan_team", "global_approver_teams": ["risk"]})
    second = requested(2)
    assert teams.post(second, bob, json={}).status_code == 403
    assert teams.post(second, risk, json={}).status_code == 201

    policy_data({"approvers": "any_team", "global_approver_teams": []})
    assert teams.post(requested(3), bob, json={}).status_code == 201
