"""What HTTP itself promises: a 405 names every method the path answers (RFC 9110
section 15.5.6), and the API's schema is a read like any other unless made public."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.storage.database import Database
from tests.api.test_access import app_routes
from tests.api.test_gate_api import settings
from tests.support.auth import bearer, token_for

CANDIDATES = ("DELETE", "GET", "PATCH", "POST", "PUT")


def test_a_405_names_every_method_of_the_path(database: Database) -> None:
    app = create_app(database, settings())
    # Each path template with the methods the app's own route table gives it.
    methods: dict[str, set[str]] = defaultdict(set)
    for method, path in app_routes(app):
        methods[path].add(method)
    assert methods["/v1/plans"] == {"GET", "POST"}  # two routes, one path
    client = TestClient(app, headers=bearer(token_for(database)))
    checked = 0
    for path in sorted(methods):
        concrete = path.replace("{ref}", "x").replace("{token_id}", "x").replace("{name}", "x")
        concrete = concrete.replace("{decision_id}", "x").replace("{kind}", "plans")
        if "{" in concrete:
            continue
        # What the path answers, asked method by method; the 405's Allow must name exactly
        # the methods that are not refused as 405 (the request may fail otherwise: a 422
        # for an empty body still proves the method is served).
        answered = {m for m in CANDIDATES if client.request(m, concrete).status_code != 405}
        refused = client.request(next(m for m in CANDIDATES if m not in answered), concrete)
        assert refused.status_code == 405
        assert refused.headers["allow"] == ", ".join(sorted(answered)), concrete
        assert answered >= methods[path], concrete
        assert refused.json()["error"] == "MethodNotAllowed"
        checked += 1
    assert checked >= len(methods) // 2


def test_the_schema_needs_a_credential_by_default(database: Database) -> None:
    app = create_app(database, settings())
    anonymous = TestClient(app)
    for path in ("/openapi.json", "/docs"):
        refused = anonymous.get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"] == "Unauthenticated"
    reader = TestClient(app, headers=bearer(token_for(database, roles=["auditor"])))
    schema = reader.get("/openapi.json")
    assert schema.status_code == 200
    assert "/v1/gate/checks" in schema.json()["paths"]
    page = reader.get("/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text


def test_the_schema_is_public_when_the_setting_says_so(database: Database) -> None:
    app = create_app(database, replace(settings(), public_api_docs=True))
    anonymous = TestClient(app)
    assert anonymous.get("/openapi.json").status_code == 200
    assert anonymous.get("/docs").status_code == 200
    # Only the schema: the API itself still needs a credential.
    assert anonymous.get("/v1/plans").status_code == 401
