"""The Prometheus client's refusals: every answer that is not the query API's success
shape is an error, never an empty result that could read as "no drift".

Transport-level fakes (httpx.MockTransport) stand in for answers a real server does not
give on demand; the real server is tested in test_observe_live.py."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from registry.errors import InvalidInput, Unavailable
from registry.observe.prometheus import Prometheus, step_for

AT = datetime(2026, 12, 1, tzinfo=UTC)


def client(status: int, body: bytes, content_type: str = "application/json") -> Prometheus:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"Content-Type": content_type})

    return Prometheus("http://mimir.example/prometheus", transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, b"<html>proxy login</html>", "not its query API's JSON"),
        (200, b"[1, 2]", "not its query API's JSON"),
        (503, b'{"status":"error","errorType":"unavailable","error":"too\\nbusy"}', "too busy"),
        (422, b'{"status":"error","errorType":"execution","error":"too many samples"}', "422"),
        (200, b'{"status":"success","data":{"resultType":"string","result":[0,"x"]}}', "shape"),
        (200, b'{"status":"success","data":{"resultType":"vector","result":[{"x":1}]}}', "shape"),
        (200, b'{"status":"success"}', "shape"),
    ],
)
def test_fail_answers_that_are_not_results(status: int, body: bytes, message: str) -> None:
    with pytest.raises(Unavailable, match=message) as caught:
        client(status, body).query("up", AT)
    assert "\n" not in caught.value.message


def test_fail_bad_data_names_the_query() -> None:
    body = b'{"status":"error","errorType":"bad_data","error":"parse error"}'
    with pytest.raises(InvalidInput) as caught:
        client(400, body).query("sum(", AT)
    assert caught.value.problems[0].loc == "query"
    assert "sum(" in caught.value.problems[0].message


def test_a_url_prefix_is_kept_and_every_query_recorded() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    prometheus = Prometheus(
        "http://mimir.example/prometheus/", transport=httpx.MockTransport(answer)
    )
    assert prometheus.query("up", AT) == []
    assert seen == ["/prometheus/api/v1/query"] and prometheus.queries == ["up"]


def test_steps_bound_the_points() -> None:
    assert step_for(7200, floor_s=60) == 60
    assert step_for(30 * 86_400) == 1296  # 2,000 points over 30 days
    assert 30 * 86_400 / step_for(30 * 86_400) <= 2000


def test_fail_a_class_label_value_that_is_no_class_name_is_named() -> None:
    from registry.observe.read import Target, observe

    def answer(request: httpx.Request) -> httpx.Response:
        query = request.url.params.get("query", "")
        if "_bucket" in query:
            result = [
                {"metric": {"le": le, "traffic_class": "Chat Users"}, "value": [0, "5"]}
                for le in ("10", "+Inf")
            ]
            return httpx.Response(
                200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
            )
        kind = "matrix" if request.url.path.endswith("query_range") else "vector"
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": kind, "result": []}}
        )

    target = Target(
        selector="",
        class_label="traffic_class",
        classes={"chat": {}},
        runtime_version="0.10.2",
        peak_window_s=60,
    )
    with pytest.raises(InvalidInput) as caught:
        observe(
            Prometheus("http://p", transport=httpx.MockTransport(answer)),
            target,
            name="o",
            plan="p@v1",
            workload="w@v1",
            start=AT.replace(day=1, month=11),
            end=AT,
        )
    problem = caught.value.problems[0]
    assert problem.loc == "traffic_class='Chat Users'"
    assert "is not a workload class name" in problem.message
