"""The /ui pages without a browser (registry/api/ui.py): who may open them, status codes,
filters, and invalid filters shown on the page as a 422 (tests/browser/test_ui_pages.py
loads them in Chromium)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.auth.authenticator import Authenticator
from registry.storage.database import Database
from tests.api.test_gate_api import register, settings
from tests.conftest import sqlite_only
from tests.factories import example, example_import
from tests.report.html_checks import parse
from tests.support.auth import bearer, client_for, token_for

PLAN = "chat-assistant-prod"
PAGES = (
    "/ui/",
    "/ui/plans",
    f"/ui/plans/{PLAN}",
    "/ui/decisions",
    "/ui/evidence/stale",
    "/ui/audit",
)


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    """A registry with the worked example and two decisions: a deny, then an allow."""
    app = create_app(database, settings())
    with client_for(app, "release-pipeline") as c:
        for kind in ("workload", "provider", "plan"):
            assert c.post(f"/v1/{kind}s", json=example(kind)).status_code == 201
        assert c.post("/v1/gate/checks", json={"plan": PLAN}).json()["outcome"] == "deny"
        yield c


@pytest.fixture
def decided(database: Database) -> Iterator[TestClient]:
    app = create_app(database, settings())
    with client_for(app, "release-pipeline") as c:
        register(c)
        assert c.post("/v1/gate/checks", json={"plan": PLAN}).json()["outcome"] == "allow"
        yield c


def decision_ids(html: str) -> list[str]:
    return re.findall(r'href="/ui/decisions/([0-9a-f-]{36})"', html)


def test_every_page_answers_html_with_one_h1(client: TestClient) -> None:
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[-500:])
        assert response.headers["content-type"].startswith("text/html")
        page = parse(response.text)
        assert not page.errors, (path, page.errors)
        assert page.headings().count(1) == 1, path
        assert "<script" not in response.text
        assert all(t.attrs.get("scope") for t in page.named("th")), path


def test_the_pages_are_not_in_the_api_description(client: TestClient) -> None:
    assert not [p for p in client.get("/openapi.json").json()["paths"] if p.startswith("/ui")]


def test_unauthenticated_requests_are_refused_on_a_normal_server(database: Database) -> None:
    with TestClient(create_app(database, settings())) as anonymous:
        for path in (*PAGES, "/ui/decisions/00000000-0000-0000-0000-000000000000"):
            response = anonymous.get(path)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"] == "Bearer"
            assert "Authentication required" in response.text
            assert PLAN not in response.text
        wrong = anonymous.get("/ui/decisions", headers=bearer("not-a-token"))
        assert wrong.status_code == 401


def test_any_role_reads_the_pages_with_a_bearer_token(database: Database) -> None:
    token = token_for(database, subject="auditor", roles=["auditor"])
    with TestClient(create_app(database, settings()), headers=bearer(token)) as auditor:
        assert auditor.get("/ui/decisions").status_code == 200


def test_insecure_local_pages_need_no_credential(database: Database) -> None:
    local = Authenticator(local_subject="local:alice")
    with TestClient(create_app(database, settings(), local)) as browser:
        assert browser.get("/ui/decisions").status_code == 200


def test_the_filters_change_the_rows(client: TestClient) -> None:
    register_evidence_and_allow(client)
    every = decision_ids(client.get("/ui/decisions").text)
    assert len(every) == 2
    deny = client.get("/ui/decisions", params={"outcome": "deny"}).text
    allow = client.get("/ui/decisions", params={"outcome": "allow", "plan": ""}).text
    assert len(decision_ids(deny)) == len(decision_ids(allow)) == 1
    assert set(decision_ids(deny) + decision_ids(allow)) == set(every)
    assert ">DENY<" in deny and ">ALLOW<" not in deny
    assert decision_ids(client.get("/ui/decisions", params={"plan": "other"}).text) == []
    assert len(decision_ids(client.get("/ui/decisions", params={"plan": f"{PLAN}@v1"}).text)) == 2
    assert decision_ids(client.get("/ui/decisions", params={"principal": "nobody"}).text) == []
    by = decision_ids(client.get("/ui/decisions", params={"principal": "release-pipeline"}).text)
    assert len(by) == 2
    assert decision_ids(client.get("/ui/decisions", params={"until": "2000-01-01"}).text) == []
    today = client.get("/ui/decisions", params={"since": "2000-01-01", "until": "2999-12-31"})
    assert len(decision_ids(today.text)) == 2
    # The form keeps what was asked.
    assert 'value="deny" selected' in deny


def register_evidence_and_allow(client: TestClient) -> None:
    response = client.post("/v1/evidence/import", **example_import(PLAN))
    assert response.status_code == 201, response.text
    assert client.post("/v1/gate/checks", json={"plan": PLAN}).json()["outcome"] == "allow"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"outcome": "maybe"}, "outcome"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-02-30"}, "until"),
        ({"since": "2026-12-02", "until": "2026-12-01"}, "until"),
        ({"since": "12345"}, "since"),
        ({"plan": "x" * 300}, "plan"),
        ({"outcom": "deny"}, "outcom"),
        ({"cursor": "garbage"}, "cursor"),
    ],
)
@sqlite_only  # a filter refused as malformed: no database changes that
def test_an_invalid_filter_is_a_422_page_naming_it(
    client: TestClient, query: dict[str, str], field: str
) -> None:
    response = client.get("/ui/decisions", params=query)
    assert response.status_code == 422, response.text[-300:]
    assert response.headers["content-type"].startswith("text/html")
    assert "The filter was not applied" in response.text
    assert f"<code>{field}</code>" in response.text
    assert decision_ids(response.text) == []
    assert not parse(response.text).errors


def test_unknown_things_are_404_pages_and_bad_ids_422(client: TestClient) -> None:
    assert client.get("/ui/plans/no-such-plan").status_code == 404
    assert client.get("/ui/decisions/00000000-0000-0000-0000-000000000000").status_code == 404
    bad = client.get("/ui/decisions/not-an-id")
    assert bad.status_code == 422 and "not a decision id" in bad.text
    assert client.get("/ui/nothing-here").status_code == 404


def test_a_decision_page_is_its_report(decided: TestClient) -> None:
    (decision_id,) = decision_ids(decided.get("/ui/decisions").text)
    response = decided.get(f"/ui/decisions/{decision_id}")
    assert response.status_code == 200
    page = parse(response.text)
    assert not page.errors
    assert page.headings().count(1) == 1
    assert {"verdict", "plan", "load", "evidence", "calibration", "inputs"} <= {
        t.attrs["id"] for t in page.named("section")
    }
    svgs = page.named("svg")
    assert len(svgs) >= 4 and all(s.attrs["id"].startswith("ui-") for s in svgs)
    assert "ALLOW" in response.text and decision_id in response.text


def test_the_plan_and_audit_pages_say_what_they_show(decided: TestClient) -> None:
    plans = decided.get("/ui/plans").text
    assert f'href="/ui/plans/{PLAN}"' in plans and "v1" in plans
    versions = decided.get(f"/ui/plans/{PLAN}").text
    assert f"{PLAN}@v1" in versions and ">ALLOW<" in versions
    audit = decided.get("/ui/audit").text
    assert "INTACT" in audit
    assert "No stale evidence" in decided.get("/ui/evidence/stale").text


def test_the_plan_page_lists_outcomes_a_policy_release_changed(
    decided: TestClient, database: Database
) -> None:
    import copy

    from registry.gate.release_approval import approve_and_recheck
    from registry.policy.bundle import PolicyBundle, load_bundle
    from registry.policy.embedded import EmbeddedEngine
    from registry.policy.releases import submit
    from registry.staleness.rules import StalenessThresholds

    assert "For review" not in decided.get(f"/ui/plans/{PLAN}").text
    data = copy.deepcopy(load_bundle().data)
    data["capgate"]["thresholds"]["retry_max_attempts"] = 2  # the example's 3 now violates
    stricter = PolicyBundle.from_sources(load_bundle().modules, data)
    database.write(
        lambda ctx: submit(ctx, name="policies", notes="stricter", bundle=stricter),
        principal="alice",
    )
    done = approve_and_recheck(
        database,
        lambda: EmbeddedEngine(stricter),
        ref="policies@v1",
        comment=None,
        principal="bob",
        limits=StalenessThresholds(),
    )
    assert done.recheck is not None and done.recheck.rechecked[0].changed
    page = decided.get(f"/ui/plans/{PLAN}").text
    assert "For review: outcomes a policy release changed" in page
    assert "allow &rarr; deny" in page and "policies@v1" in page
    assert "retries_bounded.attempts_unbounded" in page
