"""Every route x every role: allowed calls succeed, the others are 403 with one line.

The sample table must name every route of the application, so a new route without a
row here fails this test (and, without a row in registry/auth/access.py, is refused to
everyone at run time).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.auth.access import allowed_roles
from registry.auth.identity import Role
from registry.policy.bundle import load_bundle
from registry.storage import migrate
from registry.storage.database import Database
from tests.api.test_gate_api import register, settings
from tests.factories import example
from tests.support.auth import bearer, token_for
from tests.support.observations import observation_document

PLAN = "chat-assistant-prod"
TEAM = "team-assistant@example.com"


@dataclass
class World:
    app: FastAPI
    database: Database
    admin: TestClient
    decision_id: str
    counter: Iterator[int]

    def fresh_waiver(self) -> str:
        """A waiver requested by someone who is none of the role users (four eyes)."""
        n = next(self.counter)
        document = {
            "name": f"waiver-{n}",
            "policy": "drain_configured",
            "plan": PLAN,
            "owner": "sre@example.com",
            "reason": f"exception number {n} for the access test",
            "expires_at": (datetime.now(UTC) + timedelta(days=10)).isoformat(),
        }
        requester = token_for(self.database, subject=f"requester-{n}", roles=["submitter"])
        response = self.admin.post("/v1/waivers", json=document, headers=bearer(requester))
        assert response.status_code == 201, response.text
        return str(response.json()["record"]["ref"])

    def fresh_evidence(self) -> str:
        response = self.admin.post(
            "/v1/evidence", json=example("evidence", name=f"evidence-{next(self.counter)}")
        )
        assert response.status_code == 201, response.text
        return str(response.json()["record"]["ref"])

    def fresh_observation(self) -> dict[str, Any]:
        return observation_document(name=f"observation-{next(self.counter)}")

    def release_files(self) -> dict[str, str]:
        """Bundle files no release holds yet (another data document each time)."""
        files = load_bundle().files()
        return {**files, "data.json": json.dumps({"access_test": next(self.counter)})}

    def installed_release(self) -> str:
        """The installed bundle submitted by someone who is none of the role users: its
        approval keeps every later gate check of the test deciding."""
        requester = token_for(self.database, subject="release-requester", roles=["policy-admin"])
        body = {"name": "installed", "files": load_bundle().files()}
        response = self.admin.post("/v1/policy-releases", json=body, headers=bearer(requester))
        assert response.status_code == 201, response.text
        return str(response.json()["ref"])

    def fresh_token(self) -> str:
        return token_for(self.database, subject=f"victim-{next(self.counter)}").split("_")[1]


Request = tuple[str, dict[str, Any]]
SAMPLES: dict[tuple[str, str], Callable[[World], Request]] = {
    ("GET", "/v1/workloads"): lambda w: ("/v1/workloads", {}),
    ("GET", "/v1/workloads/{ref}"): lambda w: ("/v1/workloads/chat-assistant", {}),
    ("GET", "/v1/workloads/{name}/versions"): lambda w: (
        "/v1/workloads/chat-assistant/versions",
        {},
    ),
    ("POST", "/v1/workloads"): lambda w: ("/v1/workloads", {"json": example("workload")}),
    ("GET", "/v1/observations"): lambda w: ("/v1/observations", {}),
    ("GET", "/v1/observations/{ref}"): lambda w: ("/v1/observations/observation-seed", {}),
    ("GET", "/v1/observations/{name}/versions"): lambda w: (
        "/v1/observations/observation-seed/versions",
        {},
    ),
    ("POST", "/v1/observations"): lambda w: ("/v1/observations", {"json": w.fresh_observation()}),
    ("GET", "/v1/providers"): lambda w: ("/v1/providers", {}),
    ("GET", "/v1/providers/{ref}"): lambda w: ("/v1/providers/llama31-8b-h100-vllm", {}),
    ("GET", "/v1/providers/{name}/versions"): lambda w: (
        "/v1/providers/llama31-8b-h100-vllm/versions",
        {},
    ),
    ("POST", "/v1/providers"): lambda w: ("/v1/providers", {"json": example("provider")}),
    ("GET", "/v1/plans"): lambda w: ("/v1/plans", {}),
    ("GET", "/v1/plans/{ref}"): lambda w: (f"/v1/plans/{PLAN}", {}),
    ("GET", "/v1/plans/{name}/versions"): lambda w: (f"/v1/plans/{PLAN}/versions", {}),
    ("POST", "/v1/plans"): lambda w: ("/v1/plans", {"json": example("plan")}),
    ("POST", "/v1/plans/{ref}/recomputations"): lambda w: (f"/v1/plans/{PLAN}/recomputations", {}),
    ("POST", "/v1/sizing"): lambda w: ("/v1/sizing", {"json": example("plan")}),
    ("GET", "/v1/evidence"): lambda w: ("/v1/evidence", {}),
    ("GET", "/v1/evidence/stale"): lambda w: ("/v1/evidence?stale=true", {}),
    ("GET", "/v1/evidence/{ref}"): lambda w: ("/v1/evidence/chat-assistant-h100-mixed-2026-11", {}),
    ("GET", "/v1/evidence/{name}/versions"): lambda w: (
        "/v1/evidence/chat-assistant-h100-mixed-2026-11/versions",
        {},
    ),
    ("GET", "/v1/evidence/{ref}/staleness"): lambda w: (
        "/v1/evidence/chat-assistant-h100-mixed-2026-11/staleness",
        {},
    ),
    ("POST", "/v1/evidence"): lambda w: ("/v1/evidence", {"json": example("evidence")}),
    ("POST", "/v1/evidence/import"): lambda w: (
        "/v1/evidence/import",
        {"data": {"workload": "x"}, "files": [("files", ("a.json", b"{}", "application/json"))]},
    ),
    ("GET", "/v1/evidence/withdrawals"): lambda w: ("/v1/evidence/withdrawals", {}),
    ("GET", "/v1/evidence/{ref}/withdrawals"): lambda w: (
        "/v1/evidence/chat-assistant-h100-mixed-2026-11/withdrawals",
        {},
    ),
    ("POST", "/v1/evidence/{ref}/withdrawals"): lambda w: (
        f"/v1/evidence/{w.fresh_evidence()}/withdrawals",
        {"json": {"reason": "the access test withdraws it"}},
    ),
    ("GET", "/v1/waivers"): lambda w: ("/v1/waivers", {}),
    ("GET", "/v1/waivers/pending"): lambda w: ("/v1/waivers/pending", {}),
    ("GET", "/v1/waivers/{ref}"): lambda w: ("/v1/waivers/waiver-0", {}),
    ("GET", "/v1/waivers/{name}/versions"): lambda w: ("/v1/waivers/waiver-0/versions", {}),
    ("GET", "/v1/waivers/{ref}/approval"): lambda w: ("/v1/waivers/waiver-0/approval", {}),
    ("POST", "/v1/waivers"): lambda w: (
        "/v1/waivers",
        {
            "json": {
                "name": "waiver-by-role",
                "policy": "drain_configured",
                "plan": PLAN,
                "owner": "sre@example.com",
                "reason": "requested in the access test",
                "expires_at": (datetime.now(UTC) + timedelta(days=5)).isoformat(),
            }
        },
    ),
    ("POST", "/v1/waivers/{ref}/approvals"): lambda w: (
        f"/v1/waivers/{w.fresh_waiver()}/approvals",
        {"json": {"comment": "fine"}},
    ),
    ("POST", "/v1/gate/checks"): lambda w: ("/v1/gate/checks", {"json": {"plan": PLAN}}),
    ("POST", "/v1/policy-releases"): lambda w: (
        "/v1/policy-releases",
        {"json": {"name": "access", "files": w.release_files()}},
    ),
    ("GET", "/v1/policy-releases"): lambda w: ("/v1/policy-releases", {}),
    ("GET", "/v1/policy-releases/{ref}"): lambda w: ("/v1/policy-releases/seeded@v1", {}),
    ("POST", "/v1/policy-releases/{ref}/approvals"): lambda w: (
        f"/v1/policy-releases/{w.installed_release()}/approvals",
        {"json": {"comment": "reviewed"}},
    ),
    ("POST", "/v1/gate/rechecks"): lambda w: ("/v1/gate/rechecks", {}),
    ("GET", "/v1/decisions"): lambda w: ("/v1/decisions", {}),
    ("GET", "/v1/decisions/{decision_id}"): lambda w: (f"/v1/decisions/{w.decision_id}", {}),
    ("GET", "/v1/decisions/{decision_id}/attestation"): lambda w: (
        f"/v1/decisions/{w.decision_id}/attestation",
        {},
    ),
    ("GET", "/v1/decisions/{decision_id}/input"): lambda w: (
        f"/v1/decisions/{w.decision_id}/input",
        {},
    ),
    ("GET", "/v1/attestation/public-key"): lambda w: ("/v1/attestation/public-key", {}),
    ("GET", "/v1/bundles/capgate.tar.gz"): lambda w: ("/v1/bundles/capgate.tar.gz", {}),
    ("GET", "/v1/bundles/revisions/{revision}.tar.gz"): lambda w: (
        f"/v1/bundles/revisions/{load_bundle().revision}.tar.gz",
        {},
    ),
    ("POST", "/v1/decision-logs"): lambda w: (
        "/v1/decision-logs",
        {"json": [{"decision_id": f"access-{next(w.counter)}", "path": "capgate/gate/decision"}]},
    ),
    ("GET", "/v1/decision-logs"): lambda w: ("/v1/decision-logs", {}),
    ("GET", "/v1/audit/events"): lambda w: ("/v1/audit/events", {}),
    ("GET", "/v1/audit/verify"): lambda w: ("/v1/audit/verify", {}),
    ("POST", "/v1/audit/acknowledgements"): lambda w: (
        "/v1/audit/acknowledgements",
        {"json": {"reason": "access test"}},
    ),
    ("GET", "/v1/owners/{kind}/{name}"): lambda w: ("/v1/owners/plan/" + PLAN, {}),
    ("POST", "/v1/owners/{kind}/{name}/transfers"): lambda w: (
        f"/v1/owners/workload/reserved-{next(w.counter)}/transfers",
        {"json": {"team": "team-b", "reason": "named at creation in the access test"}},
    ),
    ("GET", "/v1/tokens"): lambda w: ("/v1/tokens", {}),
    ("POST", "/v1/tokens"): lambda w: (
        "/v1/tokens",
        {"json": {"subject": "new-bot", "roles": ["auditor"], "expires_in_days": 1}},
    ),
    ("POST", "/v1/tokens/{token_id}/revocation"): lambda w: (
        f"/v1/tokens/{w.fresh_token()}/revocation",
        {},
    ),
}
# Allowed, but the sample is refused on its merits (proves the role passed the guard).
EXPECTED_REFUSAL = {
    ("POST", "/v1/evidence/import"): 422,
    # The registry verifies: nothing to acknowledge.
    ("POST", "/v1/audit/acknowledgements"): 409,
}


def app_routes(app: FastAPI) -> list[tuple[str, str]]:
    found = []
    for route in app.routes:
        router = getattr(route, "original_router", None)
        for inner in router.routes if router is not None else [route]:
            if isinstance(inner, APIRoute) and inner.path.startswith("/"):
                prefix = route.include_context.prefix if router is not None else ""
                found.extend((m, prefix + inner.path) for m in sorted(inner.methods))
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    url = f"sqlite:///{tmp_path_factory.mktemp('access')}/registry.db"
    migrate.upgrade(url)
    database = Database(url)
    app = create_app(database, settings())
    admin_token = token_for(database, subject="seed-admin", teams=[TEAM])
    with TestClient(app, headers=bearer(admin_token)) as admin:
        register(admin)
        decision = admin.post("/v1/gate/checks", json={"plan": PLAN})
        assert decision.status_code == 200, decision.text
        world = World(app, database, admin, decision.json()["id"], itertools.count())
        seeded = admin.post("/v1/observations", json=observation_document("observation-seed"))
        assert seeded.status_code == 201, seeded.text
        waiver = world.fresh_waiver()  # waiver-0, read by the GET samples
        approved = admin.post(f"/v1/waivers/{waiver}/approvals", json={})
        assert approved.status_code == 201, approved.text
        release = {"name": "seeded", "files": world.release_files()}
        assert admin.post("/v1/policy-releases", json=release).status_code == 201
        yield world
    database.engine.dispose()


def test_every_route_has_a_sample_and_an_access_rule(world: World) -> None:
    routes = {r for r in app_routes(world.app) if r[1].startswith("/v1/")}
    assert routes - SAMPLES.keys() == set(), "add a sample (and an access rule) for new routes"
    assert SAMPLES.keys() - routes == set(), "a sample names a route that no longer exists"
    for method, path in routes:
        assert allowed_roles(method, path), f"{method} {path} has no access rule"


@pytest.mark.parametrize("role", list(Role))
def test_every_route_for_one_role(world: World, role: Role) -> None:
    token = token_for(world.database, subject=f"{role.value}-user", roles=[role], teams=[TEAM])
    failures = []
    for (method, path), sample in sorted(SAMPLES.items()):
        allowed = role in allowed_roles(method, path)
        url, kwargs = sample(world) if allowed else (path, {})
        response = world.admin.request(method, url, headers=bearer(token), **kwargs)
        expected = EXPECTED_REFUSAL.get((method, path))
        if allowed and not (response.status_code < 400 or response.status_code == expected):
            failures.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
        if not allowed:
            message = response.json().get("message", "")
            if response.status_code != 403 or "\n" in message or "needs" not in message:
                failures.append(f"{method} {path}: expected 403, got {response.status_code}")
    assert failures == []
