"""Observation records without Prometheus: histograms counted from drawn requests exactly
as vLLM's client counts them (x <= le). For tests of the record, drift and the API; the
live path (a real Prometheus) is tests/observe/test_observe_live.py."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from registry.observe.catalog import one_two_five
from registry.observe.histogram import Buckets
from registry.observe.read import _histogram
from registry.planner.sampling import lengths_at
from registry.records.observation import (
    Observation,
    ObservedClass,
    ObservedHistogram,
    PrometheusSource,
)
from registry.records.workload import TrafficClass, WorkloadProfile

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat-assistant"


def example_workload() -> WorkloadProfile:
    return WorkloadProfile.model_validate(yaml.safe_load((EXAMPLE / "workload.yaml").read_text()))


def token_histogram(lengths: np.ndarray, series: str) -> ObservedHistogram:
    pairs = [(b, float(np.sum(lengths <= b))) for b in one_two_five(16384)]
    buckets = Buckets.from_pairs([*pairs, (math.inf, float(len(lengths)))])
    return _histogram(series, "tokens", buckets, float(lengths.sum()))


def observed_class(
    cls: TrafficClass,
    *,
    requests: int = 20_000,
    prompt_scale: float = 1.0,
    peak_rps: float | None = None,
    seed: int = 7,
) -> ObservedClass:
    """``requests`` drawn from the class's profile (prompts times ``prompt_scale``)."""
    rng = np.random.default_rng(seed)
    prompt = np.rint(lengths_at(cls.prompt_tokens, rng.random(requests)) * prompt_scale)
    output = lengths_at(cls.output_tokens, rng.random(requests)).astype(float)
    return ObservedClass(
        name=cls.name,
        requests=requests,
        mean_rps=cls.arrival.mean_rps,
        peak_rps=cls.arrival.peak_rps if peak_rps is None else peak_rps,
        peak_window_s=60.0,
        interarrival_cv=cls.arrival.interarrival_cv,
        finished={"stop": requests},
        cancellation_share=cls.cancellation_rate,
        prompt_tokens=token_histogram(prompt, "vllm:request_prompt_tokens"),
        output_tokens=token_histogram(output, "vllm:request_generation_tokens"),
    )


def observation(
    classes: list[ObservedClass],
    *,
    name: str = "chat-assistant-prod-live",
    plan: str = "chat-assistant-prod@v1",
    workload: str = "chat-assistant@v1",
) -> Observation:
    return Observation(
        name=name,
        plan=plan,
        workload=workload,
        window_start=datetime(2026, 11, 30, tzinfo=UTC),
        window_end=datetime(2026, 12, 1, tzinfo=UTC),
        source=PrometheusSource(
            url="http://prometheus:9090",
            selector='namespace="assistant"',
            class_label="traffic_class",
            runtime_version="0.10.2",
            step_s=60.0,
            queries=[],
        ),
        classes=classes,
    )


def observation_document(name: str = "chat-assistant-prod-live", **kwargs: Any) -> dict[str, Any]:
    """The worked example's traffic as profiled, as the JSON `POST /v1/observations` takes."""
    workload = example_workload()
    document: dict[str, Any] = observation(
        [observed_class(c, requests=2_000) for c in workload.classes], name=name, **kwargs
    ).model_dump(mode="json")
    return document
