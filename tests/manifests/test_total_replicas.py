"""`gate check --manifests` compares the replicas the manifests run with the plan's total,
however they spread over zones, at the line the count is written on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.manifests.consistency import (
    Discrepancy,
    StatedManifests,
    discrepancies,
    notes,
    stated_fields,
)
from tests.manifests.helpers import build, deployment, line_of, write

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=64]
"""


def _plan(tmp_path: Path, **zones: int) -> dict[str, Any]:
    """The plan the even manifests (3 replicas over z-a, z-b, z-c) ship, with ``zones``
    as its replicas_per_zone when given."""
    plan = build(tmp_path / "plan", {"deploy.yaml": deployment(VLLM)}).document
    if zones:
        plan["replicas_per_zone"] = zones
    return plan


def _replicas(plan: dict[str, Any], stated: StatedManifests) -> list[Discrepancy]:
    """The discrepancies about replicas (a different count also moves the default rollout
    maxUnavailable, 25 % of it, which is not what these tests look at)."""
    return [
        d
        for d in discrepancies(plan, stated)
        if d.field == "total_replicas" or d.field.startswith("replicas_per_zone")
    ]


def _stated(tmp_path: Path, files: dict[str, str]) -> tuple[Path, StatedManifests]:
    folder = write(tmp_path / "shipped", files)
    return folder, stated_fields([str(folder)])


@pytest.fixture(autouse=True)
def _folders(tmp_path: Path) -> None:
    (tmp_path / "plan").mkdir()
    (tmp_path / "shipped").mkdir()


def test_fail_an_uneven_count_that_contradicts_the_total_is_denied_at_replicas(
    tmp_path: Path,
) -> None:
    # 4 replicas over 3 zones: which zone runs two is the scheduler's choice, so no zone
    # is stated; the count is, and the plan runs 3.
    folder, stated = _stated(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="4")})
    assert not [name for name in stated.fields if name.startswith("replicas_per_zone.")]
    plan = _plan(tmp_path)
    (found,) = _replicas(plan, stated)
    manifest = folder / "deploy.yaml"
    assert (found.field, found.plan, found.manifests) == ("total_replicas", 3, 4)
    assert (found.file, found.line) == (str(manifest), line_of(manifest, "replicas: 4"))
    # What the manifests leave to the scheduler is said, not dropped.
    (note,) = notes(plan, stated)
    assert note.startswith("replicas_per_zone (z-a: 1, z-b: 1, z-c: 1) is not compared")
    assert f"4 replicas ({manifest}:{found.line})" in note


def test_success_an_uneven_count_with_the_plans_total_is_a_note(tmp_path: Path) -> None:
    _, stated = _stated(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="4")})
    plan = _plan(tmp_path, **{"z-a": 2, "z-b": 1, "z-c": 1})
    assert _replicas(plan, stated) == []
    (note,) = notes(plan, stated)
    assert "(z-a: 2, z-b: 1, z-c: 1) is not compared" in note
    assert note.endswith("only their total is compared")


def test_fail_pods_not_pinned_to_zones_still_compare_the_total(tmp_path: Path) -> None:
    folder, stated = _stated(tmp_path, {"deploy.yaml": deployment(VLLM, pod="")})
    assert discrepancies(_plan(tmp_path), stated) == []
    (found,) = discrepancies(_plan(tmp_path, **{"z-a": 2, "z-b": 2}), stated)
    manifest = folder / "deploy.yaml"
    assert (found.field, found.plan, found.manifests) == ("total_replicas", 4, 3)
    assert found.line == line_of(manifest, "replicas: 3")


HPA = """apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: llm}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llm}
  minReplicas: 4
  maxReplicas: 8
"""


def test_fail_the_hpa_floor_stands_in_for_unstated_replicas(tmp_path: Path) -> None:
    # A Deployment an HPA scales often states no replicas: it runs minReplicas.
    unstated = deployment(VLLM).replace("  replicas: 3\n", "")
    folder, stated = _stated(tmp_path, {"deploy.yaml": unstated, "hpa.yaml": HPA})
    found = {d.field: d for d in discrepancies(_plan(tmp_path), stated)}
    total = found["total_replicas"]
    hpa = folder / "hpa.yaml"
    assert (total.plan, total.manifests) == (3, 4)
    assert (total.file, total.line) == (str(hpa), line_of(hpa, "minReplicas: 4"))


def _pinned(zone: str) -> str:
    return f"nodeSelector: {{topology.kubernetes.io/zone: {zone}}}"


def test_one_workload_per_zone_is_one_total_and_every_zone_compared(tmp_path: Path) -> None:
    files = {
        f"{zone}.yaml": deployment(VLLM, replicas=str(n), pod=_pinned(zone), name=f"llm-{zone}")
        for zone, n in (("z-a", 2), ("z-b", 3))
    }
    _, stated = _stated(tmp_path, files)
    assert stated.fields["total_replicas"].value == 5
    plan = _plan(tmp_path, **{"z-a": 2, "z-b": 3})
    assert discrepancies(plan, stated) == []
    assert notes(plan, stated) == []
    plan["replicas_per_zone"] = {"z-a": 3, "z-b": 3}
    assert {d.field for d in discrepancies(plan, stated)} == {
        "replicas_per_zone.z-a",
        "total_replicas",
    }


def test_the_total_is_compared_not_built_into_a_plan(tmp_path: Path) -> None:
    # `plan from-manifests` has no total_replicas field: the plan's zones are its total.
    result = build(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="6")})
    assert "total_replicas" not in result.document
    assert "total_replicas" not in result.sources


def test_a_client_that_states_no_total_compares_and_notes_as_before(tmp_path: Path) -> None:
    # A check sent by an older client: only the zones it states are compared.
    _, stated = _stated(tmp_path, {"deploy.yaml": deployment(VLLM, replicas="4")})
    older = StatedManifests(
        fields={k: v for k, v in stated.fields.items() if k != "total_replicas"}
    )
    plan = _plan(tmp_path)
    assert _replicas(plan, older) == []
    assert notes(plan, older) == []
