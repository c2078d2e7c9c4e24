"""The provider's runtime version and flags decide whether vLLM's CPU time per step is hidden
(async scheduling), as vLLM's own defaults do."""

from __future__ import annotations

import pytest

from registry.planner.runtime_features import async_scheduling
from registry.records.provider import RuntimeSpec


def _runtime(version: str, **args: str | int | float | bool) -> RuntimeSpec:
    return RuntimeSpec(name="vllm", version=version, args=dict(args))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.5", False),
        ("0.10.2+cu128", False),
        ("0.11.1", False),
        ("0.13.0", False),
        ("0.14.0", True),
        ("0.14", True),
        ("0.19.1.post1", True),
        ("1.0.0", True),
    ],
)
def test_success_the_default_follows_vllms_version(version: str, expected: bool) -> None:
    feature = async_scheduling(_runtime(version))
    assert feature.enabled is expected
    assert version in feature.reason and "0.14.0" in feature.reason


@pytest.mark.parametrize(
    ("version", "args", "expected"),
    [
        ("0.10.2", {"async-scheduling": True}, True),
        ("0.10.2", {"--async-scheduling": "true"}, True),
        ("0.10.2", {"async_scheduling": 1}, True),
        ("0.14.0", {"async-scheduling": False}, False),
        ("0.14.0", {"async-scheduling": "false"}, False),
        ("0.14.0", {"no-async-scheduling": True}, False),
        ("0.10.2", {"async-scheduling": True, "no-async-scheduling": True}, False),
        ("0.14.0", {"no-async-scheduling": False}, True),
    ],
)
def test_success_a_flag_in_the_profile_wins_over_the_default(
    version: str, args: dict[str, str | int | float | bool], expected: bool
) -> None:
    feature = async_scheduling(_runtime(version, **args))
    assert feature.enabled is expected
    assert "runtime.args" in feature.reason or "0.14.0" in feature.reason


def test_edge_another_runtime_is_priced_without_it() -> None:
    feature = async_scheduling(RuntimeSpec(name="sglang", version="0.5.0"))
    assert not feature.enabled and "sglang" in feature.reason
