"""OPA slow or answering garbage: the gate's decision is an error, never an allow.

The OPA engine's own failures (server killed, wrong URL, undefined decision, built-in
errors) are in tests/policy/test_fail_closed.py. Here a real OPA sits behind a real
loopback proxy that holds its answers back past the client's timeout, and a loopback
HTTP server answers OPA's endpoint with 200s that are not OPA's answer. Each gate
check ends in the outcome `error` (exit 2; over HTTP the stored decision says
`error`, as documented for `POST /v1/gate/checks`), and the registry stays whole.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.gate.service import check
from registry.gate.views import DecisionView, Outcome
from registry.policy.bundle import load_bundle
from registry.policy.engine import PolicyError
from registry.policy.opa_server import DEFAULT_TIMEOUT_S, OpaServerEngine
from registry.settings import Settings
from registry.staleness.thresholds import load_thresholds
from registry.storage import migrate
from registry.storage.database import Database
from tests.faults.common import CAPGATE, PLAN, assert_registry_whole, capgate, cli_env, seed
from tests.faults.opa_fakes import DelayingProxy, GarbageServer
from tests.policy.conftest import load_case
from tests.support.auth import bearer, token_for

CLIENT_TIMEOUT_S = 0.5


def _gate(database: Database, engine: OpaServerEngine) -> DecisionView:
    return check(
        database,
        engine,
        plan_ref=PLAN,
        principal="faults",
        limits=load_thresholds(),
        now=datetime.now(UTC),
    )


def _settings(opa_url: str) -> Settings:
    return Settings(
        database_url="unused",
        server=None,
        principal="unused",
        policy_engine="opa",
        opa_url=opa_url,
    )


def _assert_error_decision(decision: DecisionView | dict[str, object], *needles: str) -> str:
    view = decision if isinstance(decision, DecisionView) else DecisionView.model_validate(decision)
    assert view.outcome is Outcome.error, view
    assert view.error is not None
    for needle in needles:
        assert needle in view.error, view.error
    return view.error


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Database]:
    """A SQLite registry holding the worked example (the database plays no part in an
    OPA fault; the PostgreSQL faults are in test_postgres_restart)."""
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    seed(database)
    yield database
    database.engine.dispose()


@pytest.mark.opa
def test_slow_opa_times_out_into_an_error(seeded: Database, opa_url: str) -> None:
    with DelayingProxy(opa_url) as proxy:
        engine = OpaServerEngine(proxy.url, timeout=CLIENT_TIMEOUT_S)
        fast = _gate(seeded, engine)  # the same OPA through the same proxy, in time
        assert fast.outcome is Outcome.allow, fast

        proxy.delay = 4 * CLIENT_TIMEOUT_S  # the kept-alive connection slows down too
        started = time.monotonic()
        with pytest.raises(PolicyError, match=r"ReadTimeout: .*Read timed out"):
            engine.decide(load_case("compliant.json"))
        elapsed = time.monotonic() - started
        assert elapsed < 2 * CLIENT_TIMEOUT_S + 1, f"the engine waited {elapsed:.1f} s"

        # Over HTTP: the stored decision is the error (200, outcome error), never allow.
        app = create_app(seeded, _settings(proxy.url))
        app.state.engine = engine  # the app's one engine, with the short timeout
        client = TestClient(app, headers=bearer(token_for(seeded, "release")))
        answer = client.post("/v1/gate/checks", json={"plan": PLAN})
        assert answer.status_code == 200, answer.text
        error = _assert_error_decision(answer.json(), f"opa engine at {proxy.url}", "ReadTimeout")
        assert "timed out" in error
        stored = client.get(f"/v1/decisions/{answer.json()['id']}").json()
        assert stored["outcome"] == "error"

        proxy.delay = 0.0
        assert engine.decide(load_case("compliant.json")).allow  # OPA in time again
    whole = assert_registry_whole(seeded)
    assert whole["decisions"] == {fast.id, answer.json()["id"]}


REVISION = load_bundle().revision
PROVENANCE = {"bundles": {"capgate": {"revision": REVISION}}}
ALLOW = {"allow": True, "violations": [], "notes": []}

GARBAGE = {
    "html": (dict(body=b"<html>it works</html>", content_type="text/html"), "JSONDecodeError"),
    "truncated json": (dict(body=b'{"result": {"allow": tr'), "JSONDecodeError"),
    "a json list": (dict(body=b"[true]"), "other than a JSON object"),
    "empty body": (dict(body=b""), "JSONDecodeError"),
    "no provenance": (dict(body=json.dumps({"result": ALLOW}).encode()), "no provenance"),
    "allow as a string": (
        dict(
            body=json.dumps(
                {"provenance": PROVENANCE, "result": {**ALLOW, "allow": "yes"}}
            ).encode()
        ),
        "wrong shape",
    ),
    "another revision": (
        dict(
            body=json.dumps(
                {"provenance": {"bundles": {"capgate": {"revision": "sha256:0"}}}, "result": ALLOW}
            ).encode()
        ),
        "revision sha256:0",
    ),
    "cut connection": (dict(body=None), "ConnectionError"),
    "short body": (
        dict(body=json.dumps({"result": ALLOW}).encode(), short=True),
        "IncompleteRead",
    ),
    "redirect": (
        dict(body=b"", status=307, headers={"Location": "http://127.0.0.1:1/elsewhere"}),
        "TooManyRedirects",
    ),
}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_garbage_from_opa_is_an_error(case: str) -> None:
    kwargs, needle = GARBAGE[case]
    with GarbageServer(**kwargs) as garbage:  # type: ignore[arg-type]
        engine = OpaServerEngine(garbage.url, timeout=2.0)
        with pytest.raises(PolicyError, match="opa engine") as caught:
            engine.decide(load_case("compliant.json"))
        assert garbage.requests, "the engine never asked"
    assert needle in caught.value.message, caught.value.message


@pytest.mark.opa
def test_slow_and_garbage_opa_over_the_cli_and_the_api(seeded: Database, opa_url: str) -> None:
    """The operator's path, CAPGATE_POLICY_ENGINE=opa: an OPA slower than the engine's
    own 5 s timeout, and an endpoint that is not OPA. Each check exits 2 (the API
    stores an error decision), never allow. The slow check runs beside the others."""
    database = seeded
    url = database.url
    with DelayingProxy(opa_url, delay=DEFAULT_TIMEOUT_S + 1) as proxy:
        env = cli_env(url, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=proxy.url)
        slow = subprocess.Popen(
            [*CAPGATE, "gate", "check", PLAN],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            body = json.dumps({"result": ALLOW}).encode()  # an allow from nobody's bundle
            with GarbageServer(body) as garbage:
                env = cli_env(url, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=garbage.url)
                result = capgate("gate", "check", PLAN, env=env)
                client = TestClient(
                    create_app(database, _settings(garbage.url)),
                    headers=bearer(token_for(database, "release")),
                )
                answer = client.post("/v1/gate/checks", json={"plan": PLAN})
            slow_out, slow_err = slow.communicate(timeout=60)
        finally:
            slow.kill()
            slow.wait()

    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "ALLOW" not in result.stdout + result.stderr
    assert result.stdout.startswith("ERROR chat-assistant-prod@v1: opa engine at "), result.stdout
    assert "no provenance" in result.stdout
    assert answer.status_code == 200, answer.text
    _assert_error_decision(answer.json(), "no provenance")

    assert slow.returncode == 2, slow_out + slow_err
    assert "Traceback" not in slow_err and "ALLOW" not in slow_out + slow_err
    assert slow_out.startswith(f"ERROR chat-assistant-prod@v1: opa engine at {proxy.url}")
    assert "timed out" in slow_out, slow_out

    whole = assert_registry_whole(database)
    assert len(whole["decisions"]) == 3  # every error decision kept, as documented
