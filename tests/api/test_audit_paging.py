"""Paging the audit listings, which grow without bound: by cursor at any depth, short
offsets, totals only when asked, and bad cursors refused with the field named."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.storage.database import Database
from tests.api.test_gate_api import register, settings
from tests.support.auth import client_for


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    with client_for(create_app(database, settings()), "release-pipeline") as c:
        register(c)
        for _ in range(3):
            assert c.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).is_success
        yield c


def walk(client: TestClient, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item, page after page by cursor; each page but the last is full."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items
        assert len(body["items"]) == params["limit"]


WALKS = [
    ("/v1/audit/events", "seq", {}),
    ("/v1/audit/events", "seq", {"action": "gate.check"}),
    ("/v1/decisions", "id", {}),
    ("/v1/decisions", "id", {"plan": "chat-assistant-prod@v1", "outcome": "allow"}),
]


def test_cursor_walks_every_item_once_newest_first(client: TestClient) -> None:
    for path, key, filters in WALKS:
        everything = client.get(path, params={**filters, "limit": 500, "total": "true"}).json()
        assert everything["next_cursor"] is None
        assert everything["total"] == len(everything["items"]) >= 3
        walked = walk(client, path, limit=2, **filters)
        assert [i[key] for i in walked] == [i[key] for i in everything["items"]], path
        instants = [i["at" if key == "seq" else "created_at"] for i in walked]
        assert instants == sorted(instants, reverse=True)


def test_cursor_and_until_together_list_what_both_allow(client: TestClient) -> None:
    """The listing keeps only the tighter of `until` and a cursor (issue 29: SQLite
    ranges on one of them and filters the other): a page starting at any item's cursor,
    inside the window or above it, is what both bounds allow, in order, and the count is
    the window's, whatever the cursor."""
    for path, key, filters in WALKS:
        stamp = "at" if key == "seq" else "created_at"
        everything = client.get(path, params={**filters, "limit": 500}).json()["items"]
        until = everything[1][stamp]  # the newest one or two items are outside the window
        window = [i for i in everything if i[stamp] < until]
        cursors = [None] + [
            client.get(path, params={**filters, "limit": n}).json()["next_cursor"]
            for n in range(1, len(everything))
        ]
        for above, cursor in enumerate(cursors):
            page = client.get(
                path,
                params={**filters, "until": until, "limit": 500, "total": "true"}
                | ({"cursor": cursor} if cursor else {}),
            ).json()
            after = everything[above:]  # the items past this cursor
            expected = [i[key] for i in after if i[stamp] < until]
            assert [i[key] for i in page["items"]] == expected, (path, above)
            assert page["total"] == len(window), (path, above)


def test_total_is_counted_only_when_asked(client: TestClient) -> None:
    plain = client.get("/v1/decisions", params={"limit": 1}).json()
    counted = client.get("/v1/decisions", params={"limit": 1, "total": "true"}).json()
    assert (plain["total"], counted["total"]) == (None, 3)
    assert plain["next_cursor"] == counted["next_cursor"] is not None


BAD = [
    ({"cursor": "not-a-cursor"}, "cursor"),
    ({"cursor": "eyJhIjoxfQ"}, "cursor"),  # valid base64 of {"a":1}
    ({"cursor": "WyIyMDI2LTAxLTAxVDAwOjAwOjAwIiwxXQ"}, "cursor"),  # an instant without zone
    ({"cursor": "a" * 300}, "cursor"),
    ({"cursor": "a/b"}, "cursor"),
    ({"offset": 10_001}, "offset"),
    # Found by the fuzzer: a valid instant that is before year 1 in UTC.
    ({"since": "0001-01-01T01:00:00+20:05"}, "since"),
    ({"until": "0001-01-01T01:00:00+20:05"}, "until"),
]


def test_fail_bad_cursor_or_deep_offset_is_422_naming_it(client: TestClient) -> None:
    for path in ("/v1/decisions", "/v1/audit/events"):
        for params, field in BAD:
            response = client.get(path, params=params)
            assert response.status_code == 422, (path, params, response.text)
            assert [p["loc"] for p in response.json()["problems"]] == [field], (path, params)
    # An event's cursor carries a sequence number, a decision's a UUID.
    event_cursor = client.get("/v1/audit/events", params={"limit": 1}).json()["next_cursor"]
    response = client.get("/v1/decisions", params={"cursor": event_cursor})
    assert response.status_code == 422
    assert response.json()["problems"][0]["loc"] == "cursor"
