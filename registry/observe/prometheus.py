"""A Prometheus HTTP API client: instant and range queries, bounded and failing loudly.

Works against anything that serves Prometheus' query API (Prometheus, Thanos Query,
Mimir/Cortex under their Prometheus prefix, VictoriaMetrics): only ``/api/v1/query`` and
``/api/v1/query_range`` are used. Every failure (unreachable, timeout, an error status,
an answer that is not the API's shape) is an Unavailable error (exit 2 / 503), never an
empty result that could read as "no drift"; a query the server rejects as malformed is
InvalidInput naming the query.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from registry.errors import FieldProblem, InvalidInput, Unavailable

TIMEOUT_S = 60.0
# Prometheus refuses a range query of more than 11,000 points per series; stay well under.
MAX_POINTS = 2_000


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and value."""

    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range query: its labels and (unix time, value) points."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


def step_for(window_s: float, *, floor_s: float = 15.0, max_points: int = MAX_POINTS) -> float:
    """The range-query step for a window: at most ``max_points`` points, never below the
    scrape-like ``floor_s``, rounded up to whole seconds."""
    if window_s <= 0:
        raise ValueError("the window must be positive")
    return float(max(floor_s, math.ceil(window_s / max_points)))


def _value(raw: Any) -> float:
    # Prometheus sends sample values as strings ("NaN", "+Inf" included).
    return float(raw)


class Prometheus:
    """One Prometheus-compatible endpoint. ``url`` is its base (``http://host:9090``, or a
    prefix such as ``https://mimir.example.com/prometheus``)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = TIMEOUT_S,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.queries: list[str] = []  # every query sent, for the record
        self._client = httpx.Client(
            base_url=self.url, timeout=timeout_s, headers=headers or {}, transport=transport
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Prometheus:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def query(self, promql: str, at: datetime) -> list[Sample]:
        data = self._get("/api/v1/query", {"query": promql, "time": at.timestamp()}, promql)
        if data.get("resultType") == "scalar":
            return [Sample({}, _value(data["result"][1]))]
        if data.get("resultType") != "vector":
            raise self._shape(promql, f"resultType {data.get('resultType')!r}, not vector")
        try:
            return [
                Sample(dict(item["metric"]), _value(item["value"][1])) for item in data["result"]
            ]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self._shape(promql, repr(exc)) from None

    def query_range(
        self, promql: str, start: datetime, end: datetime, step_s: float
    ) -> list[Series]:
        params = {
            "query": promql,
            "start": start.timestamp(),
            "end": end.timestamp(),
            "step": step_s,
        }
        data = self._get("/api/v1/query_range", params, promql)
        if data.get("resultType") != "matrix":
            raise self._shape(promql, f"resultType {data.get('resultType')!r}, not matrix")
        try:
            return [
                Series(
                    dict(item["metric"]),
                    [(float(t), _value(v)) for t, v in item["values"]],
                )
                for item in data["result"]
            ]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self._shape(promql, repr(exc)) from None

    def _get(self, path: str, params: dict[str, Any], promql: str) -> dict[str, Any]:
        self.queries.append(promql)
        try:
            response = self._client.get(path, params=params)
        except httpx.TimeoutException:
            raise Unavailable(
                f"Prometheus {self.url} did not answer within {self.timeout_s:g} s: {promql}"
            ) from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach Prometheus {self.url}: {exc}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise Unavailable(
                f"Prometheus {self.url} answered HTTP {response.status_code} with something "
                "that is not its query API's JSON"
            )
        if body.get("status") != "success":
            error_type = body.get("errorType", "")
            message = " ".join(str(body.get("error", "no error message")).split())
            if response.status_code == 400 and error_type == "bad_data":
                raise InvalidInput(
                    "Prometheus refused the query",
                    problems=[FieldProblem("query", f"{message}: {promql}")],
                )
            raise Unavailable(
                f"Prometheus {self.url} answered HTTP {response.status_code} "
                f"({error_type or 'error'}): {message}"
            )
        data = body.get("data")
        if not isinstance(data, dict):
            raise self._shape(promql, "no data")
        return data

    def _shape(self, promql: str, what: str) -> Unavailable:
        return Unavailable(f"Prometheus {self.url} answered {promql!r} in an unknown shape: {what}")
