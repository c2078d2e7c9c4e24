"""Out-of-range and malformed input is a 4xx naming the field, never a 500 (issue 12)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.api.limits import MAX_OFFSET, MAX_SEED, install_body_limit
from registry.digest import canonical_json, content_digest
from registry.records.references import MAX_VERSION
from registry.storage.database import Database
from tests.factories import example
from tests.support.auth import client_for


@pytest.fixture
def client(database: Database) -> Iterator[TestClient]:
    app = create_app(database)
    install_body_limit(app)  # no-op once create_app installs it
    with client_for(app, "ci-bot") as c:
        yield c


def problem_locs(response: object) -> list[str]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) >= {"error", "message"}
    return [p["loc"] for p in body.get("problems", [])]


def raw_post(client: TestClient, url: str, text: str) -> object:
    return client.post(url, content=text, headers={"content-type": "application/json"})


# 1. query and path integers, NUL bytes


@pytest.mark.parametrize(
    "url",
    [
        "/v1/workloads",
        "/v1/decisions",
        "/v1/workloads/x/versions",
        "/v1/decision-logs",
        "/v1/evidence/withdrawals",
    ],
)
@pytest.mark.parametrize("offset", [MAX_OFFSET + 1, 2**63, 10**30])
def test_offset_out_of_range_is_422_naming_offset(client: TestClient, url: str, offset: int):
    response = client.get(url, params={"offset": offset})
    assert response.status_code == 422
    assert problem_locs(response) == ["offset"]


def test_offset_at_the_bound_is_answered(client: TestClient):
    response = client.get("/v1/workloads", params={"offset": MAX_OFFSET})
    assert response.status_code == 200
    assert response.json()["items"] == []


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1, 2**64])
def test_seed_out_of_range_is_422_naming_seed(client: TestClient, seed: int):
    response = client.post("/v1/sizing", params={"seed": seed}, json=example("plan"))
    assert response.status_code == 422
    assert problem_locs(response) == ["seed"]
    response = client.post("/v1/plans/some-plan/recomputations", params={"seed": seed})
    assert response.status_code == 422
    assert problem_locs(response) == ["seed"]


@pytest.mark.parametrize("version", [MAX_VERSION + 1, 2**63, 10**40])
def test_huge_version_in_a_reference_is_422_naming_ref(client: TestClient, version: int):
    response = client.get(f"/v1/workloads/chat-assistant@v{version}")
    assert response.status_code == 422
    assert problem_locs(response) == ["ref"]
    assert "version" in response.json()["problems"][0]["message"]


def test_largest_version_is_a_clean_404(client: TestClient):
    response = client.get(f"/v1/workloads/chat-assistant@v{MAX_VERSION}")
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("url", "loc"),
    [
        ("/v1/decisions?plan=a%00b", "plan"),
        ("/v1/decisions?principal=%00", "principal"),
        ("/v1/decision-logs?path=x%00", "path"),
    ],
)
def test_nul_in_a_query_parameter_is_422_naming_it(client: TestClient, url: str, loc: str):
    response = client.get(url)
    assert response.status_code == 422
    assert loc in problem_locs(response)


@pytest.mark.parametrize(
    "url",
    [
        "/v1/workloads/a%00b",
        "/v1/workloads/a%00b/versions",
        "/v1/decisions/a%00b",
        "/v1/evidence/a%00b/staleness",
    ],
)
def test_nul_in_a_path_is_422(client: TestClient, url: str):
    response = client.get(url)
    assert response.status_code == 422
    assert problem_locs(response)


# 2. non-finite numbers in JSON bodies


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e309", "-1e400"])
def test_non_finite_number_in_a_body_is_422_naming_the_field(client: TestClient, number: str):
    document = example("workload")
    text = json.dumps(document).replace('"mean_rps": 18.0', f'"mean_rps": {number}', 1)
    response = raw_post(client, "/v1/workloads", text)
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert problem_locs(response) == ["classes.0.arrival.mean_rps"]


def test_non_finite_number_in_a_draft_is_422(client: TestClient):
    text = json.dumps(example("plan"))[:-1] + ', "extra": [1, NaN]}'
    response = raw_post(client, "/v1/sizing", text)
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert problem_locs(response) == ["extra.1"]


def test_infinite_float_reaching_validation_is_422():
    from registry.errors import InvalidInput
    from registry.records.documents import validate_record
    from registry.records.kinds import RecordKind

    document = example("workload")
    document["classes"][0]["arrival"]["mean_rps"] = float("inf")
    with pytest.raises(InvalidInput) as caught:
        validate_record(RecordKind("workload"), document)
    assert [p.loc for p in caught.value.problems] == ["classes.0.arrival.mean_rps"]


# 3. duplicate keys and nesting


def test_duplicate_key_in_a_body_is_422_naming_key_and_path(client: TestClient):
    text = json.dumps(example("workload")).replace(
        '"mean_rps": 18.0', '"mean_rps": 18.0, "mean_rps": 1.0', 1
    )
    response = raw_post(client, "/v1/workloads", text)
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert problem_locs(response) == ["classes.0.arrival.mean_rps"]
    assert "duplicate" in response.json()["problems"][0]["message"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_body_is_422(client: TestClient, depth: int):
    text = '{"name": ' + "[" * depth + "]" * depth + "}"
    response = raw_post(client, "/v1/workloads", text)
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert "nested" in json.dumps(response.json())  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [b"\x08\x0f\xa0\xa1", b'{"name": "\xff"}', b"o\xc3\xbf)\xff"])
@pytest.mark.parametrize("url", ["/v1/workloads", "/v1/tokens", "/v1/waivers/x/approvals"])
def test_body_not_utf8_is_422_not_500(client: TestClient, url: str, body: bytes):
    # Found by the schemathesis fuzzer (test_fuzz_schemathesis.py): json.loads raised
    # UnicodeDecodeError, not JSONDecodeError, and the body check answered 500.
    response = client.post(url, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert "not UTF-8" in response.json()["message"]


# 4. canonical JSON


def test_negative_zero_has_the_digest_of_zero():
    assert canonical_json({"x": -0.0, "y": [-0.0]}) == canonical_json({"x": 0.0, "y": [0.0]})
    assert content_digest({"x": -0.0}) == content_digest({"x": 0.0})


def test_negative_zero_resubmitted_is_the_same_version(client: TestClient):
    document = example("workload")
    document["classes"][0]["prefix_cache_share"] = 0.0
    first = client.post("/v1/workloads", json=document)
    assert first.status_code == 201
    text = json.dumps(document).replace(
        '"prefix_cache_share": 0.0,', '"prefix_cache_share": -0.0,', 1
    )
    assert "-0.0" in text
    again = raw_post(client, "/v1/workloads", text)
    assert again.status_code == 200, again.text  # type: ignore[attr-defined]
    assert again.json()["record"]["digest"] == first.json()["record"]["digest"]  # type: ignore[attr-defined]


# 5. body size


def test_oversized_body_is_413_in_the_error_shape(client: TestClient):
    text = '{"name": "' + "x" * (9 * 1024 * 1024) + '"}'
    response = raw_post(client, "/v1/workloads", text)
    assert response.status_code == 413  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body["error"] == "PayloadTooLarge"
    assert "bytes" in body["message"]


def test_oversized_chunked_body_is_413(client: TestClient):
    chunks = (b"x" * (1024 * 1024) for _ in range(10))
    response = client.post(
        "/v1/workloads", content=chunks, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_bounds_are_in_openapi(client: TestClient):
    spec = client.get("/openapi.json").json()
    params = {
        p["name"]: p["schema"]
        for p in spec["paths"]["/v1/plans/{ref}/recomputations"]["post"]["parameters"]
    }
    assert params["seed"]["maximum"] == MAX_SEED
    listing = spec["paths"]["/v1/workloads"]["get"]["parameters"]
    offset = next(p for p in listing if p["name"] == "offset")
    assert offset["schema"]["maximum"] == MAX_OFFSET


def test_broken_multipart_form_is_422_naming_the_body(client: TestClient):
    """Found by the fuzzer: the form parser's 400 was an undocumented status."""
    boundary = "deec87236b025663cd381d32af6eca03"
    response = client.post(
        "/v1/evidence/import",
        content=f"--{boundary}\r\n[{{'x': None}}]--{boundary}--\r\n".encode(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 422, response.text
    assert problem_locs(response) == ["body"]
