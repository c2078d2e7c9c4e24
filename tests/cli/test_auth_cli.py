"""Tokens and `capgate serve` as an operator runs them: real processes, real sockets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_cli import capgate, example_path
from tests.support.serve import capgate_serve


@pytest.fixture
def local_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path}/registry.db", CAPGATE_PRINCIPAL="root")
    assert capgate("db", "upgrade", env=env).returncode == 0
    return env


def test_fail_serve_without_auth_or_insecure_beyond_loopback(local_env: dict[str, str]) -> None:
    refused = capgate("serve", env=local_env)
    assert refused.returncode == 2
    assert refused.stderr.startswith("capgate: error: capgate serve needs --auth-config")
    wide = capgate("serve", "--insecure-local", "--host", "0.0.0.0", env=local_env)
    assert (wide.returncode, wide.stderr.strip()) == (
        2,
        "capgate: error: --insecure-local serves loopback only, not 0.0.0.0",
    )


def test_fail_bad_auth_config_names_the_field(local_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "auth.yaml"
    config.write_text("issuers:\n  - issuer: https://issuer.example\n")
    result = capgate("serve", "--auth-config", str(config), env=local_env)
    assert result.returncode == 2
    assert result.stderr.startswith(f"capgate: error: {config}: issuers.0.audience: Field required")


def test_token_lifecycle_and_a_server_that_honours_it(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    created = capgate(
        "token", "create", "--subject", "ci-bot", "--role", "submitter", "--role", "auditor",
        "--team", "team-assistant@example.com", "--expires-in", "7d", env=local_env,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("cgt_") and "\n" not in token
    assert "it is not shown again" in created.stderr
    listed = json.loads(capgate("token", "list", "--json", env=local_env).stdout)
    assert [(t["subject"], t["roles"]) for t in listed] == [("ci-bot", ["auditor", "submitter"])]
    assert token not in json.dumps(listed)

    config = tmp_path / "auth.yaml"
    config.write_text("issuers: []\n")  # API tokens only
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    with capgate_serve(local_env, "--auth-config", str(config)) as url:
        remote = {k: v for k, v in local_env.items() if k != "CAPGATE_DATABASE_URL"}
        remote.update(CAPGATE_SERVER=url, CAPGATE_TOKEN_FILE=str(token_file))
        submitted = capgate("workload", "submit", str(example_path("workload")), env=remote)
        assert submitted.returncode == 0, submitted.stderr
        shown = json.loads(
            capgate("workload", "show", "chat-assistant", "--json", env=remote).stdout
        )
        assert shown["created_by"] == "ci-bot"
        # Its roles end there: no gate checks, no token administration (an auditor may
        # list tokens, never their secrets).
        gate = capgate("gate", "check", "chat-assistant-prod", env=remote)
        assert gate.returncode == 2
        assert "may not POST /v1/gate/checks: it needs pipeline" in gate.stderr
        assert capgate("token", "list", env=remote).returncode == 0
        mint = capgate("token", "create", "--subject", "me", "--role", "admin", env=remote)
        assert mint.returncode == 2
        assert "may not POST /v1/tokens: it needs admin" in mint.stderr
        # Revoked on the registry, refused by the running server at once.
        token_id = listed[0]["id"]
        assert capgate("token", "revoke", token_id, env=local_env).returncode == 0
        after = capgate("workload", "show", "chat-assistant", env=remote)
        assert after.returncode == 2
        assert f"API token {token_id} was revoked (HTTP 401" in after.stderr
        anonymous = dict(remote, CAPGATE_TOKEN_FILE="")
        assert "authentication required" in capgate("plan", "list", env=anonymous).stderr


def test_insecure_local_acts_as_the_local_user(local_env: dict[str, str]) -> None:
    with capgate_serve(local_env, "--insecure-local") as url:
        remote = dict(local_env, CAPGATE_SERVER=url, CAPGATE_DATABASE_URL="sqlite:////nowhere.db")
        submitted = capgate("workload", "submit", str(example_path("workload")), env=remote)
        assert submitted.returncode == 0, submitted.stderr
        shown = json.loads(
            capgate("workload", "show", "chat-assistant", "--json", env=remote).stdout
        )
        assert shown["created_by"].startswith("local:")
