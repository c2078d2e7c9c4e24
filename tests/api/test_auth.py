"""Authentication: API tokens from the registry and OIDC tokens from a real issuer.

The OIDC issuer runs on loopback with its own RSA keys and JWKS endpoint; PyJWT does
the verifying inside capgate. Every failure is a 401 (or 503 when the issuer cannot be
reached) and never reaches a handler.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.auth.authenticator import Authenticator
from registry.auth.config import AuthConfig, Grant, Issuer
from registry.auth.identity import Role
from registry.auth.tokens import (
    TOKEN_PATTERN,
    TokenRequest,
    authenticate_token,
    create_token,
    revoke_token,
)
from registry.errors import Unauthenticated
from registry.storage.database import Database
from tests.factories import example
from tests.support.auth import bearer, token_for
from tests.support.oidc_issuer import LoopbackIssuer, SigningKey, running_issuer


def test_no_credential_is_401_except_health(database: Database) -> None:
    with TestClient(create_app(database)) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        response = client.get("/v1/plans")
        assert response.status_code == 401
        assert response.json()["message"].startswith("authentication required")
        # The old header names nobody any more.
        forged = client.post(
            "/v1/workloads", json=example("workload"), headers={"X-Capgate-Principal": "admin"}
        )
        assert forged.status_code == 401


def test_api_token_subject_is_the_principal(database: Database) -> None:
    token = token_for(database, subject="ci-bot", roles=["submitter"])
    with TestClient(create_app(database), headers=bearer(token)) as client:
        created = client.post(
            "/v1/workloads",
            json=example("workload"),
            headers={"X-Capgate-Principal": "someone-else"},  # ignored
        )
        assert created.status_code == 201, created.text
        assert created.json()["record"]["created_by"] == "ci-bot"
        events = client.get("/v1/audit/events", params={"action": "workload.submit"}).json()
        assert [e["principal"] for e in events["items"]] == ["ci-bot"]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # wrong secret
        lambda t: "cgt_ffffffffffffffff_" + TOKEN_PATTERN.fullmatch(t)[2],  # unknown id
        lambda t: t + "x",  # malformed
    ],
    ids=["wrong secret", "unknown id", "malformed"],
)
def test_fail_bad_api_token(database: Database, mangle: object) -> None:
    token = token_for(database, roles=["auditor"])
    with TestClient(create_app(database)) as client:
        response = client.get("/v1/plans", headers=bearer(mangle(token)))  # type: ignore[operator]
        assert response.status_code == 401


def test_fail_revoked_and_expired_api_tokens(database: Database) -> None:
    token = token_for(database, roles=["auditor"])
    token_id = token.split("_")[1]
    with TestClient(create_app(database)) as client:
        assert client.get("/v1/plans", headers=bearer(token)).status_code == 200
        database.write(lambda ctx: revoke_token(ctx, token_id), principal="admin")
        response = client.get("/v1/plans", headers=bearer(token))
        assert response.status_code == 401
        assert response.json()["message"] == f"API token {token_id} was revoked"
    request = TokenRequest(
        subject="old",
        roles=frozenset({Role.auditor}),
        teams=frozenset(),
        lifetime=timedelta(hours=1),
    )
    issued = database.write(lambda ctx: create_token(ctx, request), principal="admin")
    later = datetime.now(UTC) + timedelta(hours=2)
    with database.reading() as session, pytest.raises(Unauthenticated, match="expired at"):
        authenticate_token(session, issued.token, now=later)


def test_fail_revoked_token_at_once_where_the_identity_is_cached(database: Database) -> None:
    """A gate check may take the identity its process verified moments ago
    (registry.auth.token_cache), but confirms it in its own reading session: a token
    revoked since, by another process, is refused by the very next check, as are a
    deleted one and one whose roles were changed in SQL."""
    from sqlalchemy import text

    from registry.auth.token_cache import TokenCache

    check = {"plan": "no-such-plan"}
    tokens = [token_for(database, roles=["pipeline"]) for _ in range(3)]
    with TestClient(create_app(database)) as client:
        for token in tokens:
            # A full lookup, which the process keeps: the plan is unknown, the token fine.
            assert (
                client.post("/v1/gate/checks", json=check, headers=bearer(token)).status_code == 404
            )
        cache: TokenCache = client.app.state.authenticator._tokens  # type: ignore[attr-defined]
        assert all(cache.get(token) is not None for token in tokens)
        revoked, deleted, changed = (token.split("_")[1] for token in tokens)
        database.write(lambda ctx: revoke_token(ctx, revoked), principal="admin")
        with database.engine.begin() as connection:
            connection.execute(text("DELETE FROM api_tokens WHERE id = :id"), {"id": deleted})
            connection.execute(
                text("UPDATE api_tokens SET roles = :roles WHERE id = :id"),
                {"roles": '["admin","pipeline"]', "id": changed},
            )
        answers = [
            client.post("/v1/gate/checks", json=check, headers=bearer(token)) for token in tokens
        ]
        assert [a.status_code for a in answers] == [401, 401, 401]
        assert answers[0].json()["message"] == f"API token {revoked} was revoked"
        assert answers[1].json()["message"] == "unknown API token"
        assert answers[2].json()["message"] == f"API token {changed} changed since it was verified"
        # Refused, and forgotten: the next request looks the token up again.
        assert all(cache.get(token) is None for token in tokens)


def test_token_cache_keeps_identities_briefly_and_boundedly() -> None:
    """Past its TTL an identity is looked up again, and a process keeps a bounded number
    of them (the least recently verified goes first); the secret itself is not kept."""
    from registry.auth.identity import Identity
    from registry.auth.token_cache import TokenCache

    identity = Identity(subject="ci-bot", roles=frozenset({Role.pipeline}), teams=None, via="x")
    cache = TokenCache(ttl_s=3600, max_entries=2)
    for token in ("cgt_a", "cgt_b", "cgt_c"):
        cache.keep(token, identity)
    assert cache.get("cgt_a") is None
    found = cache.get("cgt_c")
    assert found is not None and found.identity == identity
    assert not any("cgt_" in key for key in cache._entries)  # keyed by the token's hash
    expired = TokenCache(ttl_s=-1)
    expired.keep("cgt_a", identity)
    assert expired.get("cgt_a") is None


def test_tokens_are_stored_hashed(database: Database) -> None:
    token = token_for(database, roles=["auditor"])
    with database.engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT id, secret_hash FROM api_tokens").all()
    # The secret is URL-safe base64 and may itself hold "_": split by the token's pattern.
    match = TOKEN_PATTERN.fullmatch(token)
    assert match is not None
    secret = match[2]
    assert len(secret) == 43
    assert len(stored) == 1
    assert stored[0][1].startswith("sha256:") and secret not in stored[0][1]


# ---- OIDC -------------------------------------------------------------------------------


@pytest.fixture
def issuer() -> Iterator[LoopbackIssuer]:
    with running_issuer() as running:
        yield running


def oidc_app(database: Database, issuer: LoopbackIssuer, **overrides: object) -> TestClient:
    config = AuthConfig(
        issuers=[
            Issuer(
                issuer=issuer.url,
                audience="capgate",
                subject_prefix="oidc:",
                teams_claim="groups",
                jwks_refresh_cooldown_s=0,
                grants=[
                    Grant(
                        match={"repository": "acme/serving", "ref": "refs/heads/*"},
                        roles=[Role.pipeline],
                    ),
                    Grant(match={"sub": "alice"}, roles=[Role.submitter, Role.auditor]),
                ],
                **overrides,  # type: ignore[arg-type]
            )
        ]
    )
    return TestClient(create_app(database, authenticator=Authenticator(config)))


@pytest.fixture
def sqlite_database(tmp_path: object) -> Iterator[Database]:
    from registry.storage import migrate

    url = f"sqlite:///{tmp_path}/registry.db"
    migrate.upgrade(url)
    database = Database(url)
    yield database
    database.engine.dispose()


def test_oidc_token_subject_roles_and_teams(
    sqlite_database: Database, issuer: LoopbackIssuer
) -> None:
    with oidc_app(sqlite_database, issuer) as client:
        token = issuer.token("alice", groups=["team-assistant@example.com"])
        created = client.post("/v1/workloads", json=example("workload"), headers=bearer(token))
        assert created.status_code == 201, created.text
        assert created.json()["record"]["created_by"] == "oidc:alice"
        # A CI job's token: roles from its claims (GitHub Actions' repository and ref).
        ci = issuer.token(
            "repo:acme/serving:ref:refs/heads/main",
            repository="acme/serving",
            ref="refs/heads/main",
        )
        denied = client.post("/v1/workloads", json=example("workload"), headers=bearer(ci))
        assert denied.status_code == 403
        assert "needs submitter" in denied.json()["message"]
        # Someone with a valid token but no grant reads nothing.
        nobody = client.get("/v1/plans", headers=bearer(issuer.token("mallory")))
        assert nobody.status_code == 403


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda i: i.token("alice", key=SigningKey("k1")), "signature does not verify"),
        (lambda i: i.token("alice", audience="someone-else"), "audience"),
        (lambda i: i.token("alice", lifetime_s=-120), "expired"),
        (lambda i: i.token("alice", nbf=int(datetime.now(UTC).timestamp()) + 600), "not valid yet"),
        (lambda i: i.token("alice", key=SigningKey("unknown-kid")), "no signing key"),
        (lambda i: i.token("alice", issuer="https://evil.example"), "not trusted"),
    ],
    ids=["bad signature", "wrong audience", "expired", "not before", "unknown key", "issuer"],
)
def test_fail_oidc_token(
    sqlite_database: Database, issuer: LoopbackIssuer, make: object, says: str
) -> None:
    with oidc_app(sqlite_database, issuer) as client:
        response = client.get("/v1/plans", headers=bearer(make(issuer)))  # type: ignore[operator]
        assert response.status_code == 401, response.text
        assert says in response.json()["message"]


def test_oidc_key_rotation_is_followed(sqlite_database: Database, issuer: LoopbackIssuer) -> None:
    with oidc_app(sqlite_database, issuer) as client:
        assert client.get("/v1/plans", headers=bearer(issuer.token("alice"))).status_code == 200
        fetched = issuer.jwks_requests
        assert client.get("/v1/plans", headers=bearer(issuer.token("alice"))).status_code == 200
        assert issuer.jwks_requests == fetched  # cached
        new_key = issuer.rotate()
        rotated = client.get("/v1/plans", headers=bearer(issuer.token("alice", key=new_key)))
        assert rotated.status_code == 200
        assert issuer.jwks_requests == fetched + 1


def test_fail_closed_when_the_issuer_is_unreachable(sqlite_database: Database) -> None:
    with running_issuer() as gone:
        token = gone.token("alice")
        url = gone.url
    config = AuthConfig(issuers=[Issuer(issuer=url, audience="capgate", timeout_s=1)])
    app = create_app(sqlite_database, authenticator=Authenticator(config))
    with TestClient(app) as client:
        response = client.get("/v1/plans", headers=bearer(token))
        assert response.status_code == 503
        assert "cannot read the OIDC discovery document" in response.json()["message"]
    # Discovery known, key set unreachable: still 503, never accepted.
    config = AuthConfig(
        issuers=[Issuer(issuer=url, audience="capgate", jwks_uri=url + "/jwks.json", timeout_s=1)]
    )
    app = create_app(sqlite_database, authenticator=Authenticator(config))
    with TestClient(app) as client:
        response = client.get("/v1/plans", headers=bearer(token))
        assert response.status_code == 503
        assert "cannot fetch the signing keys" in response.json()["message"]


def test_access_log_names_principal_route_status_latency(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    token = token_for(database, subject="ci-bot", roles=["auditor"])
    with TestClient(create_app(database)) as client, caplog.at_level("INFO", "capgate.access"):
        client.get("/v1/plans/nothing-here", headers=bearer(token))
        client.get("/v1/plans")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "capgate.access"]
    assert [(x["principal"], x["route"], x["status"]) for x in lines] == [
        ("ci-bot", "/plans/{ref}", 404),
        (None, "/plans", 401),
    ]
    assert all(x["latency_ms"] >= 0 and x["method"] == "GET" for x in lines)
