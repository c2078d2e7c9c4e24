"""`capgate gate verify` and `capgate gate public-key` as a real process: exit 0, 1 or 2."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry import keys
from registry.api.app import create_app
from registry.gate.views import DecisionView
from registry.keys import SigningKey, load_private_key
from registry.policy.embedded import EmbeddedEngine
from registry.storage import migrate
from registry.storage.database import Database
from tests.gate.test_attestation import attest, gate, new_key_file, plan_digest_of, register

CAPGATE = [sys.executable, "-m", "cli.main"]


def capgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CAPGATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def base_env(folder: Path, database_url: str, key: SigningKey) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(
        CAPGATE_DATABASE_URL=database_url,
        CAPGATE_PRINCIPAL="ci",
        CAPGATE_SIGNING_KEY=key.source,
        XDG_DATA_HOME=str(folder / "data"),  # never a key in the user's own data directory
    )
    return env


@contextmanager
def running_server(database_url: str, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A real server on loopback in this process (it signs with this process's key),
    accepting requests without a token as `capgate serve --insecure-local` does; and `env`
    pointed at it, without a local key or database, to prove the commands go to the server."""
    from registry.auth.authenticator import Authenticator

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    database = Database(database_url)
    app = create_app(database, authenticator=Authenticator(local_subject="ci"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            pytest.fail("server did not start")
        time.sleep(0.02)
    try:
        client_env = {k: v for k, v in env.items() if k != keys.ENV_VAR}
        client_env.update(
            CAPGATE_SERVER=f"http://127.0.0.1:{port}",
            CAPGATE_DATABASE_URL="sqlite:////nonexistent/never.db",
        )
        yield client_env
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        database.engine.dispose()


class Signed:
    """A registry with one attested allow decision, its envelope file and public key."""

    def __init__(self, folder: Path, database: Database, key: SigningKey) -> None:
        self.folder = folder
        self.key = key
        self.decision: DecisionView = gate(database, EmbeddedEngine())
        self.envelope = attest(database, self.decision, key)
        self.plan_digest = plan_digest_of(database, self.decision)
        self.envelope_file = folder / "decision.intoto.json"
        self.envelope_file.write_text(json.dumps(self.envelope))
        self.public_key = folder / "public.pem"
        self.public_key.write_text(key.public_pem())
        self.env = base_env(folder, database.url, key)

    def write(self, name: str, content: Any) -> str:
        path = self.folder / name
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return str(path)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Signed]:
    """Once per module on SQLite: the file-based checks do not depend on the database."""
    folder = tmp_path_factory.mktemp("signed-cli")
    url = f"sqlite:///{folder / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    key = load_private_key(new_key_file(folder))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(keys.ENV_VAR, key.source)
        register(database)
        yield Signed(folder, database, key)
    database.engine.dispose()


def test_verify_a_file_exit_0_with_a_summary(signed: Signed) -> None:
    result = capgate(
        "gate",
        "verify",
        str(signed.envelope_file),
        "--key",
        str(signed.public_key),
        "--plan-digest",
        signed.plan_digest,
        "--expect-outcome",
        "allow",
        env=signed.env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "verified  chat-assistant-prod@v1  allow"
    assert f"  plan digest  {signed.plan_digest}" in lines
    assert f"  decision     {signed.decision.id}" in lines
    assert f"  signed by    {signed.key.key_id}" in lines

    as_json = capgate(
        "gate",
        "verify",
        str(signed.envelope_file),
        "--key",
        str(signed.public_key),
        "--json",
        env=signed.env,
    )
    assert as_json.returncode == 0, as_json.stderr
    statement = json.loads(as_json.stdout)
    assert statement["predicate"]["decision_id"] == signed.decision.id
    assert statement["predicate"]["inputs"] == signed.decision.model_dump(mode="json")["inputs"]


def _tampered(envelope: dict[str, Any]) -> dict[str, Any]:
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["principal"] = "mallory"  # one field, canonical JSON as signed
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    return dict(envelope, payload=base64.b64encode(payload).decode())


def test_verify_fails_exit_1_with_one_line(signed: Signed) -> None:
    other_key = signed.write(
        "other.pem", keys.public_key_pem(Ed25519PrivateKey.generate().public_key())
    )
    envelope_file, key = str(signed.envelope_file), str(signed.public_key)
    cases = {
        "outcome is allow": [envelope_file, "--key", key, "--expect-outcome", "deny"],
        "plan digest is": [envelope_file, "--key", key, "--plan-digest", "sha256:" + "ab" * 32],
        "not by the given key": [envelope_file, "--key", other_key],
        "does not verify": [
            signed.write("tampered.json", _tampered(signed.envelope)),
            "--key",
            key,
        ],
        "does not verify with key": [
            signed.write("swapped.json", dict(signed.envelope, payloadType="application/json")),
            "--key",
            key,
        ],
    }
    for says, args in cases.items():
        result = capgate("gate", "verify", *args, env=signed.env)
        assert result.returncode == 1, (says, result.stdout, result.stderr)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("capgate: error: ")
        assert says in result.stderr, result.stderr
        assert "not verified" in result.stderr


def test_unreadable_input_exit_2(signed: Signed) -> None:
    envelope_file, key = str(signed.envelope_file), str(signed.public_key)
    cases = {
        "file not found (and not a decision id)": ["/no/such/envelope.json", "--key", key],
        "not JSON": [signed.write("garbage.json", "{not json"), "--key", key],
        "not a DSSE envelope": [signed.write("object.json", {"payload": 1}), "--key", key],
        "public key file not found": [envelope_file, "--key", "/no/such/key.pem"],
        "not an unencrypted PEM private key": [
            envelope_file,
            "--key",
            signed.write("bad-key.pem", "not a key"),
        ],
        "not a sha256 digest": [envelope_file, "--key", key, "--plan-digest", "md5:abc"],
        "no decision 00000000-0000-4000-8000-000000000000": [
            "00000000-0000-4000-8000-000000000000",
            "--key",
            key,
        ],
    }
    for says, args in cases.items():
        result = capgate("gate", "verify", *args, env=signed.env)
        assert result.returncode == 2, (says, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1, result.stderr
        assert says in result.stderr, result.stderr
    missing_key_option = capgate("gate", "verify", envelope_file, env=signed.env)
    assert missing_key_option.returncode == 2
    assert "--key" in missing_key_option.stderr


@pytest.fixture
def signed_on(database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    """On each database: the server (in this process) signs with the configured key."""
    key = load_private_key(new_key_file(tmp_path))
    monkeypatch.setenv(keys.ENV_VAR, key.source)
    register(database)
    return Signed(tmp_path, database, key)


def test_verify_by_decision_id_local_and_server(signed_on: Signed, database_url: str) -> None:
    decision_id, key = signed_on.decision.id, str(signed_on.public_key)
    local = capgate(
        "gate",
        "verify",
        decision_id,
        "--key",
        key,
        "--expect-outcome",
        "allow",
        env=signed_on.env,
    )
    assert local.returncode == 0, local.stderr
    assert f"  decision     {decision_id}" in local.stdout.splitlines()
    local_key = capgate("gate", "public-key", env=signed_on.env)
    assert local_key.returncode == 0 and local_key.stdout == signed_on.key.public_pem()

    with running_server(database_url, signed_on.env) as server_env:
        served_key = capgate("gate", "public-key", env=server_env)
        assert served_key.returncode == 0, served_key.stderr
        assert served_key.stdout == signed_on.key.public_pem()
        fetched_key = signed_on.write("served.pem", served_key.stdout)
        remote = capgate(
            "gate",
            "verify",
            decision_id,
            "--key",
            fetched_key,
            "--plan-digest",
            signed_on.plan_digest,
            env=server_env,
        )
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == local.stdout
        unknown = capgate(
            "gate",
            "verify",
            "00000000-0000-4000-8000-000000000000",
            "--key",
            fetched_key,
            env=server_env,
        )
        assert unknown.returncode == 2
        assert "no decision" in unknown.stderr and "HTTP 404" in unknown.stderr
