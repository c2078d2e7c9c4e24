"""The material-change matrix: each rule, and the changes that must not stale anything."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.staleness.rules import material_changes
from tests.factories import example

Edit = Callable[[dict[str, Any]], None]


def changes_after(kind: str, edit: Edit) -> list[tuple[str, str]]:
    before = example(kind)
    after = copy.deepcopy(before)
    edit(after)
    old = validate_record(RecordKind(kind), before)
    new = validate_record(RecordKind(kind), after)
    return [(c.field, c.rule) for c in material_changes(old, new)]


def interactive(document: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = document["classes"][0]
    return result


def paired_lengths(strength: float) -> Edit:
    """Give the interactive class joint lengths: a share ``strength`` of its requests on the
    diagonal of a 2 x 2 histogram (long prompts with long outputs), the rest off it."""

    def edit(d: dict[str, Any]) -> None:
        cls = interactive(d)
        n = cls["prompt_tokens"]["samples"]
        assert cls["output_tokens"]["samples"] == n

        def edges(dist: dict[str, Any]) -> list[float]:
            return [dist.get("min", 1), dist["quantiles"]["p50"], dist.get("max", 10**6) + 1]

        on = round(n * strength / 2)
        off = n // 2 - on
        rest = n - 2 * on - off
        cls["joint_lengths"] = {
            "prompt_edges": edges(cls["prompt_tokens"]),
            "output_edges": edges(cls["output_tokens"]),
            "cells": [[0, 0, on], [1, 1, on], [0, 1, off], [1, 0, rest]],
        }

    return edit


def grow_p99_prompt(factor: float) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        q = interactive(d)["prompt_tokens"]["quantiles"]
        q["p99"] = round(q["p99"] * factor)
        interactive(d)["prompt_tokens"]["max"] = max(
            interactive(d)["prompt_tokens"]["max"], q["p99"]
        )

    return edit


MATERIAL: list[tuple[Any, ...]] = [
    (
        "p99 prompt +30%",
        "workload",
        grow_p99_prompt(1.3),
        ("classes.interactive.prompt_tokens.p99", "moved 30%"),
    ),
    (
        "peak rate +25%",
        "workload",
        lambda d: interactive(d)["arrival"].update(peak_rps=52.5),
        ("classes.interactive.arrival.peak_rps", "grew 25%"),
    ),
    (
        "burstier arrivals",
        "workload",
        lambda d: interactive(d)["arrival"].update(interarrival_cv=2.2),
        ("classes.interactive.arrival.interarrival_cv", "burstiness grew"),
    ),
    (
        "lengths now paired",
        "workload",
        paired_lengths(0.9),
        ("classes.interactive.joint_lengths", "prompt-output rank correlation moved +0.80"),
    ),
    (
        "class removed",
        "workload",
        lambda d: d["classes"].pop(1),
        ("classes.batch", "traffic class removed"),
    ),
    (
        "priority changed",
        "workload",
        lambda d: interactive(d).update(priority=2),
        ("classes.interactive.priority", "priority changed"),
    ),
    (
        "SLO tightened",
        "workload",
        lambda d: interactive(d)["slo"].update(ttft_p99_ms=800),
        ("classes.interactive.slo.ttft_p99_ms", "SLO tightened"),
    ),
    (
        "different weights",
        "provider",
        lambda d: d["model"].update(weights_digest="sha256:" + "e" * 64),
        ("model.weights_digest", "model changed"),
    ),
    (
        "fp8 weights",
        "provider",
        lambda d: d["model"].update(weights_dtype="fp8"),
        ("model.weights_dtype", "model changed"),
    ),
    (
        "other accelerator",
        "provider",
        lambda d: d["accelerator"].update(name="H200-SXM-141GB"),
        ("accelerator.name", "accelerator changed"),
    ),
    (
        "runtime minor",
        "provider",
        lambda d: d["runtime"].update(version="0.11.0"),
        ("runtime.version", "runtime major or minor version changed"),
    ),
    (
        "max_num_seqs",
        "plan",
        lambda d: d["serving"].update(max_num_seqs=128),
        ("serving.max_num_seqs", "serving config changed"),
    ),
    (
        "gpu memory utilisation",
        "plan",
        lambda d: d["serving"].update(gpu_memory_utilization=0.8),
        ("serving.gpu_memory_utilization", "serving config changed"),
    ),
    (
        "prefix caching off",
        "plan",
        lambda d: d["serving"].update(enable_prefix_caching=False),
        ("serving.enable_prefix_caching", "serving config changed"),
    ),
    (
        "TP 2",
        "plan",
        lambda d: d.update(parallelism={"tensor_parallel": 2, "gpus_per_replica": 2}),
        ("parallelism.tensor_parallel", "accelerators per replica changed"),
        ("parallelism.gpus_per_replica", "accelerators per replica changed"),
    ),
]

IMMATERIAL: list[tuple[str, str, Edit]] = [
    ("description", "workload", lambda d: d.update(description="reworded")),
    ("owner and labels", "workload", lambda d: d.update(owner="x@example.com", labels={"a": "b"})),
    ("looser SLO", "workload", lambda d: interactive(d)["slo"].update(ttft_p99_ms=2000)),
    ("p99 prompt +2%", "workload", grow_p99_prompt(1.02)),
    ("lengths barely paired", "workload", paired_lengths(0.55)),
    ("peak rate +10%", "workload", lambda d: interactive(d)["arrival"].update(peak_rps=46.2)),
    ("runtime patch", "provider", lambda d: d["runtime"].update(version="0.10.3")),
    ("price", "provider", lambda d: d.update(price_per_accelerator_hour_usd=2.5)),
    ("replicas", "plan", lambda d: d["replicas_per_zone"].update({"us-east1-b": 4})),
    ("drain", "plan", lambda d: d["drain"].update(termination_grace_period_s=320)),
]


@pytest.mark.parametrize(
    ("label", "kind", "edit", "expected"),
    [(m[0], m[1], m[2], list(m[3:])) for m in MATERIAL],
    ids=[m[0] for m in MATERIAL],
)
def test_material_change_is_named(
    label: str, kind: str, edit: Edit, expected: list[tuple[str, str]]
) -> None:
    assert changes_after(kind, edit) == expected


@pytest.mark.parametrize(("label", "kind", "edit"), IMMATERIAL, ids=[m[0] for m in IMMATERIAL])
def test_immaterial_change_stales_nothing(label: str, kind: str, edit: Edit) -> None:
    assert changes_after(kind, edit) == []
