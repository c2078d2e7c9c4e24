"""Pods spread over zones they do not name: a hard zone spread (DoNotSchedule, maxSkew 1)
runs the replicas within one of each other, so the plan's zones are held to that share
(by `gate check --manifests`) and the overlay's (by `plan from-manifests`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.manifests.consistency import (
    Discrepancy,
    StatedManifests,
    discrepancies,
    notes,
    stated_fields,
)
from registry.manifests.zones import ZONE_SPREAD
from tests.cli.test_gate_cli import capgate
from tests.manifests.helpers import (
    ZONES,
    build,
    deployment,
    edited_example_manifests,
    line_of,
    write,
)

VLLM = """
image: vllm/vllm-openai:v0.10.2
command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs=64]
"""
SPREAD = (
    "topologySpreadConstraints:\n"
    "  - {maxSkew: SKEW, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: WHEN}\n"
)


def _spread(skew: int = 1, when: str = "DoNotSchedule") -> str:
    """Pod fields that spread over zones without pinning any."""
    return SPREAD.replace("SKEW", str(skew)).replace("WHEN", when)


def _stated(tmp_path: Path, replicas: int, pod: str) -> tuple[Path, StatedManifests]:
    files = {"deploy.yaml": deployment(VLLM, replicas=str(replicas), pod=pod)}
    folder = write(tmp_path, files)
    return folder / "deploy.yaml", stated_fields([str(folder)])


def _zones(plan: dict[str, Any], stated: StatedManifests) -> list[Discrepancy]:
    return [d for d in discrepancies(plan, stated) if d.field.startswith("replicas_per_zone")]


def _plan(**zones: int) -> dict[str, Any]:
    return {"replicas_per_zone": zones}


def test_fail_uneven_plan_zones_are_denied_at_the_spread(tmp_path: Path) -> None:
    manifest, stated = _stated(tmp_path, 9, _spread())
    spread = stated.fields[ZONE_SPREAD]
    assert (spread.value, spread.line) == (1, line_of(manifest, "maxSkew: 1"))
    found = _zones(_plan(**{"z-a": 4, "z-b": 3, "z-c": 2}), stated)
    assert [(d.field, d.plan, d.manifests, d.line) for d in found] == [
        ("replicas_per_zone.z-a", 4, 3, spread.line),
        ("replicas_per_zone.z-c", 2, 3, spread.line),
    ]
    assert {d.file for d in found} == {str(manifest)}


def test_fail_a_remainder_allows_one_more_but_not_two(tmp_path: Path) -> None:
    _, stated = _stated(tmp_path, 10, _spread())
    assert _zones(_plan(**{"z-a": 4, "z-b": 3, "z-c": 3}), stated) == []
    found = _zones(_plan(**{"z-a": 5, "z-b": 3, "z-c": 2}), stated)
    # Each zone is held to the nearer end of what the spread allows it (3 or 4).
    assert [(d.field, d.plan, d.manifests) for d in found] == [
        ("replicas_per_zone.z-a", 5, 4),
        ("replicas_per_zone.z-c", 2, 3),
    ]


def test_success_even_plan_zones_agree_and_the_assumption_is_said(tmp_path: Path) -> None:
    manifest, stated = _stated(tmp_path, 9, _spread())
    plan = _plan(**{"z-a": 3, "z-b": 3, "z-c": 3})
    assert _zones(plan, stated) == []
    (note,) = notes(plan, stated)
    spread_line = stated.fields[ZONE_SPREAD].line
    assert note.startswith(f"replicas_per_zone is compared as the hard zone spread at {manifest}")
    assert f":{spread_line} runs the manifests' 9 replicas" in note
    assert "exactly the plan's 3 zones (z-a, z-b, z-c)" in note


@pytest.mark.parametrize(
    "pod", [_spread(skew=2), _spread(when="ScheduleAnyway"), ""], ids=["skew-2", "soft", "none"]
)
def test_success_a_spread_that_fixes_no_counts_leaves_zones_uncompared(
    tmp_path: Path, pod: str
) -> None:
    _, stated = _stated(tmp_path, 9, pod)
    assert ZONE_SPREAD not in stated.fields
    plan = _plan(**{"z-a": 7, "z-b": 1, "z-c": 1})
    assert _zones(plan, stated) == []
    (note,) = notes(plan, stated)
    assert note.endswith("only their total is compared")


def test_fail_pinned_zones_under_a_larger_skew_fix_no_counts(tmp_path: Path) -> None:
    pinned = ZONES.replace("maxSkew: 1", "maxSkew: 2")
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, {"deploy.yaml": deployment(VLLM, pod=pinned)})
    assert "does not spread over them evenly" in caught.value.one_line()
    assert "maxSkew: 1" in caught.value.one_line()


def test_fail_from_manifests_refuses_overlay_zones_the_spread_cannot_run(tmp_path: Path) -> None:
    files = {"deploy.yaml": deployment(VLLM, replicas="9", pod=_spread())}
    with pytest.raises(InvalidInput) as caught:
        build(tmp_path, files, replicas_per_zone={"z-a": 4, "z-b": 3, "z-c": 2})
    (problem,) = caught.value.problems
    manifest = tmp_path / "k8s" / "deploy.yaml"
    assert problem.loc == "replicas_per_zone"
    # The manifest's own file and line lead: that is where the spread is written.
    line = line_of(manifest, "maxSkew: 1")
    assert caught.value.source == f"{manifest} (document 0, line {line})"
    assert problem.message == (
        "the hard zone spread runs 9 replicas within one of each other, 3 in each of the "
        f"overlay's 3 zones, but the overlay places z-a: 4, z-c: 2 ({tmp_path / 'overlay.yaml'}:2)"
    )
    result = build(tmp_path, files, replicas_per_zone={"z-a": 3, "z-b": 3, "z-c": 3})
    assert result.document["replicas_per_zone"] == {"z-a": 3, "z-b": 3, "z-c": 3}


# ---- end to end: the worked example's Deployment with its zones unnamed -----------------

PLAN = "chat-assistant-prod"  # 9 replicas, 3 in each of three zones
ZONE_TERM = (
    "                  - key: topology.kubernetes.io/zone\n"
    "                    operator: In\n"
    "                    values: [us-east1-b, us-east1-c, us-east1-d]\n"
)


def test_gate_check_holds_the_plans_zones_to_the_spread(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = edited_example_manifests(
        tmp_path, {"deployment.yaml": [(ZONE_TERM, ""), ("  replicas: 9\n", "  replicas: 12\n")]}
    )
    manifest = folder / "deployment.yaml"
    line = line_of(manifest, "maxSkew: 1")
    denied = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert denied.returncode == 1, denied.stdout + denied.stderr
    for zone in ("us-east1-b", "us-east1-c", "us-east1-d"):
        assert f"replicas_per_zone.{zone} is 3 in the plan but 4 in {manifest}:{line}" in (
            denied.stdout
        )

    manifest.write_text(manifest.read_text().replace("  replicas: 12\n", "  replicas: 9\n"))
    allowed = capgate(
        "gate", "check", PLAN, "--manifests", str(folder), "--format", "json", env=env
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    decision = json.loads(allowed.stdout)
    assert decision["outcome"] == "allow"
    said = json.dumps(decision)
    assert "replicas_per_zone is compared as the hard zone spread" in said
