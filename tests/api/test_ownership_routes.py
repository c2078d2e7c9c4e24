"""Every write route x owner/non-owner, from the application's own route table.

registry.auth.ownership.RULES names each write route's ownership rule. A write route
without a rule fails here; a route whose rule says a team owns what it writes must have
a case below, run once by a member of the owner team (it succeeds) and once by an
outsider holding every role (403, naming the owner), on both databases.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.auth.ownership import ANY_TEAM, OWNER, RULES
from registry.storage.database import Database
from tests.api.test_access import app_routes
from tests.api.test_gate_api import register, settings
from tests.factories import example, example_import
from tests.support.auth import bearer, token_for
from tests.support.observations import observation_document

PLAN = "chat-assistant-prod"
TEAM = "team-assistant@example.com"
OUTSIDER_TEAM = "team-b"


@dataclass
class World:
    client: TestClient
    database: Database
    counter: Iterator[int]

    def headers(self, team: str, subject: str) -> dict[str, str]:
        return bearer(token_for(self.database, subject=subject, teams=[team]))

    def waiver_document(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "policy": "drain_configured",
            "plan": PLAN,
            "owner": "sre@example.com",
            "reason": "streams are capped at 25 s by the gateway",
            "expires_at": (datetime.now(UTC) + timedelta(days=10)).isoformat(),
        }

    def requested_waiver(self) -> str:
        """A waiver of the owner team's plan, requested by a member who approves nothing."""
        name = f"owned-waiver-{next(self.counter)}"
        headers = self.headers(TEAM, f"requester-{name}")
        response = self.client.post("/v1/waivers", json=self.waiver_document(name), headers=headers)
        assert response.status_code == 201, response.text
        return str(response.json()["record"]["ref"])


# (method, path) -> the request (url, kwargs) one principal makes. Each call builds a new
# request, so the member's and the outsider's are the same write against the same state.
Sample = Callable[[World], tuple[str, dict[str, Any]]]
CASES: dict[tuple[str, str], Sample] = {
    ("POST", "/v1/workloads"): lambda w: (
        "/v1/workloads",
        {"json": example("workload", description="the next version")},
    ),
    ("POST", "/v1/providers"): lambda w: (
        "/v1/providers",
        {"json": example("provider", description="the next version")},
    ),
    ("POST", "/v1/plans"): lambda w: (
        "/v1/plans",
        {"json": example("plan", description="the next version")},
    ),
    ("POST", "/v1/evidence"): lambda w: (
        "/v1/evidence",
        {"json": example("evidence", description="the next version")},
    ),
    ("POST", "/v1/evidence/import"): lambda w: ("/v1/evidence/import", example_import()),
    ("POST", "/v1/observations"): lambda w: (
        "/v1/observations",
        {"json": observation_document(name=f"observed-{next(w.counter)}")},
    ),
    ("POST", "/v1/waivers"): lambda w: (
        "/v1/waivers",
        {"json": w.waiver_document(f"waiver-{next(w.counter)}")},
    ),
    ("POST", "/v1/waivers/{ref}/approvals"): lambda w: (
        f"/v1/waivers/{w.requested_waiver()}/approvals",
        {"json": {"comment": "reviewed"}},
    ),
}


def owned_routes() -> set[tuple[str, str]]:
    return {("POST", "/v1" + path) for (_, path), rule in RULES.items() if rule.startswith(OWNER)}


def test_every_write_route_has_an_ownership_rule_and_every_owned_one_a_case() -> None:
    app = create_app(Database("sqlite://"), settings())
    writes = {
        (method, path)
        for method, path in app_routes(app)
        if path.startswith("/v1/") and method not in {"GET", "HEAD"}
    }
    ruled = {(method, "/v1" + path) for method, path in RULES}
    assert writes - ruled == set(), "name the ownership rule of new write routes in RULES"
    assert ruled - writes == set(), "RULES names a route that no longer exists"
    for key, rule in RULES.items():
        assert rule.startswith((OWNER, ANY_TEAM)), f"{key}: {rule!r}"
    assert owned_routes() == CASES.keys(), "add an owner/non-owner case for owned routes"


@pytest.fixture
def world(database: Database) -> Iterator[World]:
    with TestClient(create_app(database, settings())) as client:
        client.headers.update(bearer(token_for(database, subject="team-lead", teams=[TEAM])))
        register(client)  # workload, provider, plan and imported evidence: all TEAM's
        yield World(client, database, itertools.count())


@pytest.mark.parametrize("route", sorted(CASES), ids=lambda r: f"{r[0]} {r[1]}")
def test_member_writes_and_outsider_is_refused(world: World, route: tuple[str, str]) -> None:
    method, _ = route
    outsider = world.headers(OUTSIDER_TEAM, "outsider")
    url, kwargs = CASES[route](world)
    refused = world.client.request(method, url, headers=outsider, **kwargs)
    assert refused.status_code == 403, refused.text
    message = refused.json()["message"]
    assert f"belongs to team {TEAM}" in message and "outsider (teams: team-b)" in message

    member = world.headers(TEAM, "member")
    url, kwargs = CASES[route](world)
    done = world.client.request(method, url, headers=member, **kwargs)
    assert done.status_code in (200, 201), done.text
