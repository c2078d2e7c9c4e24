"""Withdrawing evidence over HTTP: one version, audited, never deleted. Both databases."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.errors import CapgateError, Conflict
from registry.evidence_lifecycle import Withdrawal, withdraw
from registry.storage.database import Database
from tests.factories import example
from tests.support.auth import client_for

EVIDENCE = "chat-assistant-h100-mixed-2026-11"
REASON = "replayed the wrong trace: the batch class ran at half its rate"


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    with client_for(database, "ci-bot") as c:
        for kind, collection in (
            ("workload", "workloads"),
            ("provider", "providers"),
            ("plan", "plans"),
            ("evidence", "evidence"),
        ):
            assert c.post(f"/v1/{collection}", json=example(kind)).status_code == 201
        yield c


def post_withdrawal(client: TestClient, ref: str, body: Any) -> Any:
    return client.post(f"/v1/evidence/{ref}/withdrawals", json=body)


def test_withdraw_is_recorded_audited_and_deletes_nothing(client: TestClient) -> None:
    record = client.get(f"/v1/evidence/{EVIDENCE}").json()
    response = post_withdrawal(client, EVIDENCE, {"reason": REASON})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["evidence"] == f"{EVIDENCE}@v1"
    assert body["digest"] == record["digest"]
    assert (body["reason"], body["withdrawn_by"]) == (REASON, "ci-bot")

    # The record itself is still there, byte for byte.
    again = client.get(f"/v1/evidence/{EVIDENCE}@v1")
    assert again.status_code == 200
    assert again.json()["digest"] == record["digest"]
    assert again.json()["content"] == record["content"]

    # The history says who withdrew it, when and why.
    history = client.get(f"/v1/evidence/{EVIDENCE}/staleness").json()
    assert history["withdrawn"] == body
    assert client.get(f"/v1/evidence/{EVIDENCE}@v1/withdrawals").json() == [body]
    listed = client.get("/v1/evidence/withdrawals").json()
    assert (listed["total"], listed["items"]) == (1, [body])

    # One audit event, in the chain, naming the version, its digest and the reason.
    events = client.get("/v1/audit/events", params={"action": "evidence.withdraw"}).json()
    (event,) = events["items"]
    assert event["principal"] == "ci-bot"
    rows = event["payload"].pop("rows")  # the withdrawal row it stored (registry.audit.rows)
    assert [(r["table"], r["fields"]["withdrawn_by"]) for r in rows] == [
        ("evidence_withdrawals", "ci-bot")
    ]
    assert event["payload"] == {
        "kind": "evidence",
        "ref": f"{EVIDENCE}@v1",
        "digest": record["digest"],
        "reason": REASON,
    }
    assert client.get("/v1/audit/verify").json()["intact"] is True


def test_twice_is_409_naming_the_first(client: TestClient) -> None:
    assert post_withdrawal(client, EVIDENCE, {"reason": REASON}).status_code == 201
    second = post_withdrawal(client, f"{EVIDENCE}@v1", {"reason": "again"})
    assert second.status_code == 409
    message = second.json()["message"]
    assert message.startswith(f"evidence {EVIDENCE}@v1 was already withdrawn by ci-bot at ")
    assert message.endswith(f": {REASON}")
    events = client.get("/v1/audit/events", params={"action": "evidence.withdraw"}).json()
    assert len(events["items"]) == 1


def test_unknown_ref_404_and_bad_reason_422(client: TestClient) -> None:
    missing = post_withdrawal(client, "no-such-evidence", {"reason": REASON})
    assert missing.status_code == 404
    assert "no evidence record no-such-evidence" in missing.json()["message"]
    assert post_withdrawal(client, f"{EVIDENCE}@v9", {"reason": REASON}).status_code == 404
    for body in ({"reason": "  \n "}, {"reason": ""}):
        empty = post_withdrawal(client, EVIDENCE, body)
        assert empty.status_code == 422
        assert empty.json()["problems"][0]["loc"] == "reason"
    absent = post_withdrawal(client, EVIDENCE, {})
    assert absent.status_code == 422
    assert absent.json()["problems"][0]["loc"] == "reason"
    malformed = post_withdrawal(client, "Not A Ref", {"reason": REASON})
    assert malformed.status_code == 422
    assert client.get("/v1/evidence/withdrawals").json()["total"] == 0


def test_withdrawal_applies_to_the_version_the_ref_names(client: TestClient) -> None:
    rerun = copy.deepcopy(example("evidence"))
    rerun["description"] = "the same test, described better"
    assert client.post("/v1/evidence", json=rerun).json()["record"]["ref"] == f"{EVIDENCE}@v2"
    # A bare name means the latest version; v1 is untouched.
    done = post_withdrawal(client, EVIDENCE, {"reason": REASON}).json()
    assert done["evidence"] == f"{EVIDENCE}@v2"
    assert client.get(f"/v1/evidence/{EVIDENCE}@v1/withdrawals").json() == []
    assert client.get(f"/v1/evidence/{EVIDENCE}@v1/staleness").json()["withdrawn"] is None
    # v1 can be withdrawn on its own, by digest.
    digest = client.get(f"/v1/evidence/{EVIDENCE}@v1").json()["digest"]
    by_digest = post_withdrawal(client, digest, {"reason": "replaced anyway"})
    assert by_digest.status_code == 201
    assert by_digest.json()["evidence"] == f"{EVIDENCE}@v1"
    listed = client.get("/v1/evidence/withdrawals").json()["items"]
    assert [w["evidence"] for w in listed] == [f"{EVIDENCE}@v1", f"{EVIDENCE}@v2"]


def test_withdrawn_evidence_leaves_the_stale_list(client: TestClient) -> None:
    workload = copy.deepcopy(example("workload"))
    quantiles = workload["classes"][0]["prompt_tokens"]["quantiles"]
    quantiles["p99"] = round(quantiles["p99"] * 1.3)
    assert client.post("/v1/workloads", json=workload).status_code == 201
    stale = client.get("/v1/evidence/stale").json()
    assert [item["ref"] for item in stale["items"]] == [f"{EVIDENCE}@v1"]
    post_withdrawal(client, EVIDENCE, {"reason": "stale since chat-assistant@v2"})
    assert client.get("/v1/evidence/stale").json() == {
        "items": [],
        "total": 0,
        "limit": 50,
        "offset": 0,
    }
    # Still stale in its own history (what happened stays), and withdrawn.
    history = client.get(f"/v1/evidence/{EVIDENCE}/staleness").json()
    assert history["stale"] is True
    assert history["withdrawn"]["reason"] == "stale since chat-assistant@v2"


def test_two_racing_withdrawals_one_wins(client: TestClient, database: Database) -> None:
    outcomes: list[Withdrawal | CapgateError] = []
    start = threading.Barrier(2)

    def attempt(who: str) -> None:
        start.wait()
        try:
            outcomes.append(
                database.write(lambda ctx: withdraw(ctx, ref=EVIDENCE, reason=who), principal=who)
            )
        except CapgateError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=attempt, args=(who,)) for who in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    won = [o for o in outcomes if isinstance(o, Withdrawal)]
    lost = [o for o in outcomes if isinstance(o, Conflict)]
    assert (len(won), len(lost)) == (1, 1), outcomes
    assert f"already withdrawn by {won[0].withdrawn_by}" in lost[0].message
    assert client.get("/v1/evidence/withdrawals").json()["total"] == 1


def test_openapi_and_paging(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    withdraw_op = paths["/v1/evidence/{ref}/withdrawals"]["post"]
    assert withdraw_op["operationId"] == "withdraw_evidence"
    assert {"201", "404", "409", "422"} <= set(withdraw_op["responses"])
    assert "get" in paths["/v1/evidence/{ref}/withdrawals"]
    assert "get" in paths["/v1/evidence/withdrawals"]
    assert client.get("/v1/evidence/withdrawals", params={"limit": 0}).status_code == 422
    assert client.get("/v1/evidence/withdrawals", params={"offset": -1}).status_code == 422
    # The generic record routes still answer beside the new ones.
    assert client.get("/v1/evidence").json()["total"] == 1
    assert client.get(f"/v1/evidence/{EVIDENCE}/versions").json()["total"] == 1
