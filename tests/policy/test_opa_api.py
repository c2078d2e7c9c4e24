"""The OPA routes: the signed bundle OPA pulls, past revisions, and decision logs.

On both backends through the API (TestClient); the same routes under a real OPA are in
test_opa_sidecar.py.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.api.bundles import keep_served_bundle, signed_bundle
from registry.digest import sha256_digest
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.opa_bundle import (
    BundleSigningKey,
    BundleVerificationError,
    read_tarball,
    verify_tarball,
)
from registry.settings import Settings
from registry.storage.database import Database
from registry.storage.models import PolicyBundleRow
from tests.support.auth import bearer, token_for
from tests.support.opa_server import signing_key_for_tests

BUNDLE = "/v1/bundles/capgate.tar.gz"
LOGS = "/v1/decision-logs"


def settings(key_file: Path | None) -> Settings:
    return Settings(
        database_url="unused",
        server=None,
        principal="unused",
        policy_engine="embedded",
        opa_url=None,
        bundle_signing_key=str(key_file) if key_file else None,
    )


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "bundle-key.pem"
    path.write_bytes(signing_key_for_tests().private_pem())
    return path


@pytest.fixture
def app(database: Database, key_file: Path) -> FastAPI:
    return create_app(database, settings(key_file))


@pytest.fixture
def opa(app: FastAPI) -> Iterator[TestClient]:
    """What an OPA sidecar holds: a pipeline token."""
    token = token_for(app.state.database, subject="opa-sidecar", roles=["pipeline"])
    with TestClient(app, headers=bearer(token)) as client:
        yield client


@pytest.fixture
def auditor(app: FastAPI) -> Iterator[TestClient]:
    token = token_for(app.state.database, subject="auditor-ann", roles=["auditor"])
    with TestClient(app, headers=bearer(token)) as client:
        yield client


def _events(client: TestClient, action: str) -> list[dict[str, Any]]:
    response = client.get("/v1/audit/events", params={"action": action})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


# ---- the bundle ---------------------------------------------------------------------


def test_success_bundle_is_signed_opa_bundle_with_revision_etag(opa: TestClient) -> None:
    key, revision = signing_key_for_tests(), load_bundle().revision
    response = opa.get(BUNDLE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/gzip"
    assert response.headers["etag"] == f'"{revision}"'
    assert verify_tarball(response.content, key.public_key(), algorithm="RS256") == revision
    files = read_tarball(response.content)
    assert json.loads(files[".manifest"]) == {
        "revision": revision,
        "roots": ["capgate", "system/log"],
    }
    assert files["data.json"].decode() == load_bundle().files()["data.json"]
    assert {name for name in files if name.endswith(".rego")} == set(load_bundle().modules)
    # Deterministic: the same bytes on every request (and on every replica with this key).
    assert opa.get(BUNDLE).content == response.content
    assert response.content == signed_bundle(load_bundle(), key).tarball


def test_success_if_none_match_gives_304(opa: TestClient) -> None:
    etag = opa.get(BUNDLE).headers["etag"]
    again = opa.get(BUNDLE, headers={"If-None-Match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    # OPA sends superseded ETags too, comma separated.
    listed = opa.get(BUNDLE, headers={"If-None-Match": f'"sha256:old", {etag}'})
    assert listed.status_code == 304
    other = opa.get(BUNDLE, headers={"If-None-Match": '"sha256:' + "0" * 64 + '"'})
    assert other.status_code == 200 and other.content


def test_success_served_revision_is_kept_once(opa: TestClient, database: Database) -> None:
    first = opa.get(BUNDLE).content
    opa.get(BUNDLE)
    opa.get(BUNDLE, headers={"If-None-Match": f'"{load_bundle().revision}"'})
    with database.reading() as session:
        rows = [
            (row.revision, bytes(row.tarball), row.first_served_to, row.tarball_sha256)
            for row in session.query(PolicyBundleRow).all()
        ]
    assert [row[:3] for row in rows] == [(load_bundle().revision, first, "opa-sidecar")]
    served = _events(opa, "opa.bundle_served")
    assert [event["payload"]["revision"] for event in served] == [load_bundle().revision]
    assert served[0]["payload"]["key_id"] == "capgate"
    assert served[0]["payload"]["tarball_sha256"] == rows[0][3] == sha256_digest(first)
    report = opa.get("/v1/audit/verify").json()
    assert (report["intact"], report["problems"]) == (True, [])


def test_success_past_revision_retrievable(
    opa: TestClient, auditor: TestClient, database: Database
) -> None:
    # A revision served before the policies changed (kept by a replica of that time).
    base = load_bundle()
    data = json.loads(json.dumps(base.data))
    data["capgate"]["thresholds"]["evidence_max_age_days"] = 30
    older = signed_bundle(
        PolicyBundle.from_sources(dict(base.modules), data), BundleSigningKey.generate()
    )
    keep_served_bundle(database, older, "capgate-2025", "opa-sidecar")
    current = opa.get(BUNDLE).content
    past = auditor.get(f"/v1/bundles/revisions/{older.revision}.tar.gz")
    assert past.status_code == 200
    assert past.content == older.tarball
    assert past.headers["etag"] == f'"{older.revision}"'
    assert json.loads(read_tarball(past.content)["data.json"]) == data
    now = auditor.get(f"/v1/bundles/revisions/{base.revision}.tar.gz")
    assert now.content == current
    # A signature by another key does not verify with this one.
    with pytest.raises(BundleVerificationError, match="signature"):
        verify_tarball(past.content, signing_key_for_tests().public_key(), algorithm="RS256")


def test_success_current_revision_retrievable_before_any_poll(auditor: TestClient) -> None:
    revision = load_bundle().revision
    response = auditor.get(f"/v1/bundles/revisions/{revision}.tar.gz")
    assert response.status_code == 200
    key = signing_key_for_tests()
    assert verify_tarball(response.content, key.public_key(), algorithm="RS256") == revision


def test_fail_unknown_or_malformed_revision(auditor: TestClient) -> None:
    unknown = auditor.get("/v1/bundles/revisions/sha256:" + "a" * 64 + ".tar.gz")
    assert unknown.status_code == 404
    assert "never served" in unknown.json()["message"]
    assert auditor.get("/v1/bundles/revisions/latest.tar.gz").status_code == 422


def test_fail_broken_signing_key_is_503(database: Database, tmp_path: Path) -> None:
    broken = tmp_path / "broken.pem"
    broken.write_text("not a key")
    app = create_app(database, settings(broken))
    token = token_for(database, subject="opa-sidecar", roles=["pipeline"])
    with TestClient(app, headers=bearer(token)) as client:
        response = client.get(BUNDLE)
    assert response.status_code == 503
    assert "CAPGATE_BUNDLE_SIGNING_KEY" in response.json()["message"]
    app = create_app(database, settings(tmp_path / "missing.pem"))
    with TestClient(app, headers=bearer(token)) as client:
        assert client.get(BUNDLE).status_code == 503


def test_success_default_key_is_made_once(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registry.policy import opa_bundle

    default = tmp_path / "data" / "bundle-signing-key.pem"
    monkeypatch.setattr(opa_bundle, "default_key_path", lambda: default)
    app = create_app(database, settings(None))
    token = token_for(database, subject="opa-sidecar", roles=["pipeline"])
    with TestClient(app, headers=bearer(token)) as client:
        first = client.get(BUNDLE)
        assert first.status_code == 200
        assert default.stat().st_mode & 0o777 == 0o600
        key = BundleSigningKey.from_pem(default.read_bytes())
        assert verify_tarball(first.content, key.public_key(), algorithm=key.algorithm)
        assert client.get(BUNDLE).content == first.content


# ---- decision logs ------------------------------------------------------------------


def _event(decision_id: str, revision: str | None = None, allow: bool = True) -> dict[str, Any]:
    """An event as OPA's decision_logs plugin writes it."""
    return {
        "labels": {"id": "f3c1", "version": "1.22.3"},
        "decision_id": decision_id,
        "bundles": {"capgate": {"revision": revision or load_bundle().revision}},
        "path": "capgate/gate/decision",
        "input": {"plan": {"ref": "chat-assistant-prod@v1"}},
        "result": {"allow": allow, "violations": [], "notes": []},
        "requested_by": "127.0.0.1:50000",
        "timestamp": "2026-12-01T07:00:00.123456Z",
        "metrics": {"timer_server_handler_ns": 1200},
        "req_id": 3,
    }


def _gzipped(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "content": gzip.compress(json.dumps(events).encode()),
        "headers": {"Content-Encoding": "gzip", "Content-Type": "application/json"},
    }


def test_success_decision_logs_stored_once_with_one_event_per_batch(
    opa: TestClient, auditor: TestClient
) -> None:
    batch = [_event("d-1"), _event("d-2", allow=False)]
    response = opa.post(LOGS, **_gzipped(batch))
    assert response.status_code == 200, response.text
    assert response.json() == {"received": 2, "stored": 2, "duplicates": 0, "conflicts": []}
    # OPA retries an upload it believes failed: the same events are duplicates.
    again = opa.post(LOGS, **_gzipped(batch))
    assert again.json() == {"received": 2, "stored": 0, "duplicates": 2, "conflicts": []}
    listed = auditor.get(LOGS).json()
    assert listed["total"] == 2
    by_id = {item["decision_id"]: item for item in listed["items"]}
    assert by_id["d-2"]["entry"] == batch[1]
    assert by_id["d-2"]["received_from"] == "opa-sidecar"
    assert by_id["d-2"]["bundle_revision"] == load_bundle().revision
    assert by_id["d-2"]["path"] == "capgate/gate/decision"
    assert by_id["d-2"]["intact"] is True
    events = _events(auditor, "opa.decision_logs")
    assert len(events) == 2  # one per batch
    first = events[-1]
    assert first["principal"] == "opa-sidecar"
    assert first["payload"]["received"] == 2
    assert sorted(item["decision_id"] for item in first["payload"]["stored"]) == ["d-1", "d-2"]
    assert {item["digest"] for item in first["payload"]["stored"]} == {
        by_id["d-1"]["digest"],
        by_id["d-2"]["digest"],
    }
    assert events[0]["payload"]["duplicates"] == ["d-1", "d-2"]
    # The chain, with these events, verifies.
    report = auditor.get("/v1/audit/verify").json()
    assert (report["intact"], report["problems"]) == (True, [])


def test_success_uncompressed_upload_accepted(opa: TestClient, auditor: TestClient) -> None:
    response = opa.post(LOGS, json=[_event("plain-1")])
    assert response.json()["stored"] == 1
    assert auditor.get(LOGS).json()["items"][0]["decision_id"] == "plain-1"


def test_fail_conflicting_event_never_overwrites(opa: TestClient, auditor: TestClient) -> None:
    opa.post(LOGS, **_gzipped([_event("d-1", allow=False)]))
    response = opa.post(LOGS, **_gzipped([_event("d-1", allow=True), _event("d-3")]))
    assert response.json() == {"received": 2, "stored": 1, "duplicates": 0, "conflicts": ["d-1"]}
    stored = {i["decision_id"]: i for i in auditor.get(LOGS).json()["items"]}
    assert stored["d-1"]["entry"]["result"]["allow"] is False
    conflict = _events(auditor, "opa.decision_logs")[0]["payload"]["conflicts"]
    assert [item["decision_id"] for item in conflict] == ["d-1"]
    assert conflict[0]["stored"] == stored["d-1"]["digest"]


def test_success_decision_logs_newest_first_filtered_and_paged(
    opa: TestClient, auditor: TestClient
) -> None:
    other = "sha256:" + "b" * 64
    opa.post(LOGS, **_gzipped([_event("old-1"), _event("old-2", other)]))
    opa.post(LOGS, **_gzipped([_event("new-1")]))
    everything = auditor.get(LOGS).json()
    assert everything["items"][0]["decision_id"] == "new-1"
    assert everything["total"] == 3
    current = auditor.get(LOGS, params={"revision": load_bundle().revision}).json()
    assert sorted(i["decision_id"] for i in current["items"]) == ["new-1", "old-1"]
    assert [
        i["decision_id"] for i in auditor.get(LOGS, params={"revision": other}).json()["items"]
    ] == ["old-2"]
    page = auditor.get(LOGS, params={"limit": 1, "offset": 1}).json()
    assert (page["total"], page["limit"], page["offset"], len(page["items"])) == (3, 1, 1, 1)
    assert auditor.get(LOGS, params={"received_from": "someone"}).json()["total"] == 0
    assert auditor.get(LOGS, params={"path": "capgate/gate/decision"}).json()["total"] == 3


MALFORMED: list[tuple[bytes, dict[str, str], str]] = [
    (b"\x1f\x8bnot gzip", {"Content-Encoding": "gzip"}, "not valid gzip"),
    (b"{not json", {}, "not JSON"),
    (json.dumps({"decision_id": "x"}).encode(), {}, "JSON array"),
    (json.dumps([{"path": "p"}]).encode(), {}, "malformed events"),
    (json.dumps([{"decision_id": "x" * 65}]).encode(), {}, "malformed events"),
    (json.dumps(["event"]).encode(), {}, "malformed events"),
    (b'[{"decision_id": "x", "result": NaN}]', {}, "not JSON"),
]


def test_fail_malformed_upload_is_422_and_stores_nothing(
    opa: TestClient, auditor: TestClient
) -> None:
    for body, headers, message in MALFORMED:
        response = opa.post(LOGS, content=body, headers=headers)
        assert response.status_code == 422, body
        assert message in response.json()["message"], body
    assert auditor.get(LOGS).json()["total"] == 0
    assert _events(auditor, "opa.decision_logs") == []


def test_fail_only_pipeline_tokens_send_decision_logs(auditor: TestClient) -> None:
    response = auditor.post(LOGS, **_gzipped([_event("d-1")]))
    assert response.status_code == 403
    assert auditor.get(LOGS).json()["total"] == 0


def test_fail_tampered_stored_entry_is_flagged(
    opa: TestClient, auditor: TestClient, database: Database
) -> None:
    from sqlalchemy import text

    opa.post(LOGS, **_gzipped([_event("d-1", allow=False)]))
    with database.engine.begin() as connection:
        connection.execute(
            text("UPDATE policy_decision_logs SET entry = replace(entry, 'false', 'true')")
        )
    (item,) = auditor.get(LOGS).json()["items"]
    assert item["intact"] is False


def test_success_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPGATE_BUNDLE_SIGNING_KEY", "/etc/capgate/bundle.pem")
    monkeypatch.setenv("CAPGATE_BUNDLE_SIGNING_KEY_ID", "capgate-2026")
    monkeypatch.setenv("CAPGATE_OPA_CA_FILE", "/etc/capgate/opa-ca.pem")
    found = Settings.from_env()
    assert (found.bundle_signing_key, found.bundle_signing_key_id, found.opa_ca_file) == (
        "/etc/capgate/bundle.pem",
        "capgate-2026",
        "/etc/capgate/opa-ca.pem",
    )
