"""What the model server itself measured during a load test, read from its Prometheus.

A load generator sees requests from outside: it cannot see the server's queue, its KV
cache, its preemptions, its prefix-cache hits or how long a pod took from start to ready.
`capgate evidence import ... --prometheus URL` reads those over the test's own window and
keeps them here, with every query it sent, so an auditor can rerun them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Self

from pydantic import Field, model_validator

from registry.records.common import (
    Fraction,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    Record,
    Text,
)


class ServerQuery(Record):
    """One PromQL query sent for a figure, and what it answered (null: no data)."""

    figure: Name = Field(description="The figure the query is for: prefix_cache_hit_rate, ...")
    query: Text
    value: float | None = None


class ServerMetrics(Record):
    """The serving runtime's own series over the test window, as Prometheus answered."""

    source: Text = Field(description="Base URL of the Prometheus API read (no credentials).")
    selector: Text | None = Field(
        default=None, description='Label matchers scoping the series, e.g. namespace="llm".'
    )
    start: datetime = Field(description="Start of the window read: the test's start.")
    end: datetime = Field(description="End of the window read: the test's end.")
    prefix_cache_hit_rate: Fraction | None = Field(
        default=None,
        description="Prefix-cache hits / queries (tokens) over the window: how much of the "
        "prompts the cache served.",
    )
    prefix_cache_queried_tokens: NonNegativeFloat | None = Field(
        default=None, description="Prompt tokens looked up in the prefix cache over the window."
    )
    kv_cache_usage_peak: Fraction | None = Field(
        default=None, description="Highest KV-cache usage of any replica over the window."
    )
    preemptions: NonNegativeInt | None = Field(
        default=None, description="Requests preempted over the window, all replicas."
    )
    queue_p99_ms: NonNegativeFloat | None = Field(
        default=None, description="p99 of the server's queue time over the window, all classes."
    )
    requests_running_peak: NonNegativeFloat | None = None
    requests_waiting_peak: NonNegativeFloat | None = None
    warmup_s: PositiveFloat | None = Field(
        default=None,
        description="Longest pod start-to-ready time among pods started in the window "
        "(kube-state-metrics); null when none started or the series are absent.",
    )
    queries: list[ServerQuery] = Field(default_factory=list)
    notes: list[Text] = Field(
        default_factory=list, description="Series absent, renamed or unusable, and why."
    )

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("the window's start and end need a time zone")
        if self.end <= self.start:
            raise ValueError("the window must end after it starts")
        return self
