"""Production shape on loopback: two `capgate serve` processes on one PostgreSQL behind one
address, three OPA sidecars pulling the signed bundle through it and sending their
decision logs back. The same decision everywhere, one audit trail.

Everything is real: the server processes, PostgreSQL, the OPA binary, the tokens.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.keys import private_key_pem
from registry.policy.bundle import load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from tests.api.test_gate_api import register
from tests.conftest import _empty_tables
from tests.support.auth import bearer, token_for
from tests.support.opa_server import (
    running_opa_sidecar,
    sidecar_config,
    signing_key_for_tests,
    wait_for_bundle,
)
from tests.support.round_robin import round_robin
from tests.support.serve import capgate_serve

PLAN = "chat-assistant-prod"


def test_two_servers_three_sidecars_one_truth(
    migrated_postgres_url: str, opa_binary: Path, tmp_path: Path
) -> None:
    database = Database(migrated_postgres_url)
    _empty_tables(database)
    bundle_key = signing_key_for_tests()
    (tmp_path / "bundle.pem").write_bytes(bundle_key.private_pem())
    auth_config = tmp_path / "auth.yaml"
    auth_config.write_text("issuers: []\n")
    sidecar_token = token_for(database, subject="opa-sidecar", roles=["pipeline"], teams=[])
    release = token_for(database, subject="release-pipeline")
    auditor = bearer(token_for(database, subject="auditor", roles=["auditor"], teams=[]))
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    base.update(
        CAPGATE_DATABASE_URL=migrated_postgres_url,
        CAPGATE_BUNDLE_SIGNING_KEY=str(tmp_path / "bundle.pem"),
        CAPGATE_BUNDLE_SIGNING_KEY_ID=bundle_key.key_id,
        CAPGATE_SIGNING_KEY=str(tmp_path / "attest.pem"),
    )
    (tmp_path / "attest.pem").write_bytes(private_key_pem(Ed25519PrivateKey.generate()))

    with ExitStack() as stack:
        # The address first: the sidecars poll it until the replicas behind it answer.
        proxy_backends: list[str] = []
        front, served = stack.enter_context(round_robin(proxy_backends))
        config = sidecar_config(front + "/v1", sidecar_token, bundle_key)
        sidecars = [
            stack.enter_context(running_opa_sidecar(opa_binary, config, wait_for_activation=False))
            for _ in range(3)
        ]
        for sidecar in sidecars[:2]:  # each replica decides through its own sidecar
            env = dict(base, CAPGATE_POLICY_ENGINE="opa", CAPGATE_OPA_URL=sidecar.url)
            proxy_backends.append(
                stack.enter_context(capgate_serve(env, "--auth-config", str(auth_config)))
            )
        for sidecar in sidecars:
            wait_for_bundle(sidecar.url)

        with httpx.Client(base_url=front, headers=bearer(release), timeout=60) as client:
            register(client)  # type: ignore[arg-type]  # the API tests' helper, same shape
            decisions = [
                client.post("/v1/gate/checks", json={"plan": PLAN}).json() for _ in range(4)
            ]
        # Both replicas answered, each through its own OPA sidecar.
        assert set(served) == set(proxy_backends)
        outcomes = {(d["outcome"], json.dumps(d["violations"], sort_keys=True)) for d in decisions}
        assert len(outcomes) == 1, decisions
        assert {d["engine"] for d in decisions} == {"opa"}
        assert {d["bundle_revision"] for d in decisions} == {load_bundle().revision}
        # The third sidecar, and the embedded engine, decide the same on the stored input.
        stored = httpx.get(
            f"{front}/v1/decisions/{decisions[0]['id']}/input", headers=auditor
        ).json()
        third = httpx.post(
            f"{sidecars[2].url}/v1/data/capgate/gate/decision?provenance=true",
            json={"input": stored["input"]},
        ).json()
        assert third["provenance"]["bundles"]["capgate"]["revision"] == load_bundle().revision
        embedded = EmbeddedEngine().decide(stored["input"])
        assert third["result"]["allow"] is embedded.allow is (decisions[0]["outcome"] == "allow")

        # One audit trail: every decision from either replica, a chain that verifies.
        listed = httpx.get(
            f"{front}/v1/decisions", params={"plan": PLAN, "limit": 10}, headers=auditor
        ).json()
        assert {d["id"] for d in listed["items"]} == {d["id"] for d in decisions}
        verify = httpx.get(f"{front}/v1/audit/verify", headers=auditor).json()
        assert verify["intact"], verify["problems"]
        # The sidecars' decision logs arrived (through either replica).
        deadline = time.monotonic() + 15
        while True:
            logs = httpx.get(
                f"{front}/v1/decision-logs", params={"limit": 100}, headers=auditor
            ).json()
            if logs["total"] >= len(decisions) + 1:
                break
            assert time.monotonic() < deadline, logs
            time.sleep(0.5)
        assert {e["bundle_revision"] for e in logs["items"]} == {load_bundle().revision}
