"""Freshness by the serving runtime the evidence measured (`assess`, no database).

Evidence that states its runtime is judged by it: another runtime, or another major.minor
version, than the plan's provider version runs does not support the plan. Evidence that
states none ran the runtime of the provider version it was measured against.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.records.documents import validate_record
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile
from registry.staleness.freshness import Freshness, Versioned, assess
from registry.staleness.rules import StalenessThresholds
from tests.factories import example

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PROVIDER = "llama31-8b-h100-vllm"
# The worked example's provider runs vllm 0.10.2.
V1, V2 = f"{PROVIDER}@v1", f"{PROVIDER}@v2"


def versioned(kind: str, ref: str, **changes: Any) -> Versioned:
    model = validate_record(RecordKind(kind), example(kind, **changes))
    assert isinstance(model, WorkloadProfile | ProviderProfile | CapacityPlan)
    return Versioned(ref=ref, model=model)


def provider(ref: str = V1, version: str = "0.10.2", name: str = "vllm") -> Versioned:
    runtime = {**example("provider")["runtime"], "name": name, "version": version}
    return versioned("provider", ref, runtime=runtime)


def evidence(runtime: dict[str, str] | None) -> LoadTestEvidence:
    document = example("evidence")
    if runtime is not None:
        document["runtime"] = runtime
    record = validate_record(RecordKind.evidence, document)
    assert isinstance(record, LoadTestEvidence)
    return record


def judge(
    runtime: dict[str, str] | None,
    *,
    measured_provider: Versioned | None = None,
    plan_provider: Versioned | None = None,
) -> Freshness:
    return assess(
        evidence(runtime),
        measured_workload=versioned("workload", "chat-assistant@v1"),
        measured_provider=measured_provider or provider(),
        measured_plan=None,
        workload=versioned("workload", "chat-assistant@v1"),
        provider=plan_provider or provider(),
        plan=versioned("plan", "chat-assistant-prod@v1"),
        replaced_by=None,
        now=NOW,
        limits=StalenessThresholds(),
    )


@pytest.mark.parametrize(
    "runtime",
    [
        None,
        {"name": "vllm", "version": "0.10.2"},
        {"name": "vllm", "version": "0.10.0"},  # another patch release: same minor
        {"name": "vllm", "version": "0.10.2+cu128"},
        {"name": "vLLM", "version": "0.10.1"},  # names compare without case
    ],
    ids=["unknown", "same", "other patch", "local build", "name case"],
)
def test_same_runtime_minor_or_unknown_is_fresh(runtime: dict[str, str] | None) -> None:
    freshness = judge(runtime)
    assert freshness.fresh, freshness.reasons
    assert freshness.changes == []


@pytest.mark.parametrize(
    ("runtime", "reason"),
    [
        (
            {"name": "vllm", "version": "0.9.2"},
            f"measured on vllm 0.9.2; the plan's provider {V1} runs vllm 0.10.2 "
            "(minor version differs)",
        ),
        (
            {"name": "vllm", "version": "1.0.0"},
            f"measured on vllm 1.0.0; the plan's provider {V1} runs vllm 0.10.2 "
            "(major version differs)",
        ),
        (
            {"name": "sglang", "version": "0.10.2"},
            f"measured on sglang 0.10.2; the plan's provider {V1} runs vllm 0.10.2 "
            "(a different runtime)",
        ),
    ],
    ids=["minor", "major", "runtime"],
)
def test_another_runtime_or_minor_version_is_stale_with_the_reason(
    runtime: dict[str, str], reason: str
) -> None:
    freshness = judge(runtime)
    assert not freshness.fresh
    assert freshness.reasons == [reason]
    (change,) = freshness.changes
    assert change.field == "runtime"
    assert change.new == "vllm 0.10.2"


def test_unknown_runtime_keeps_the_provider_rule() -> None:
    """No runtime stated: the provider version's runtime stands for it, as before."""
    freshness = judge(None, plan_provider=provider(V2, version="0.11.0"))
    assert freshness.reasons == [
        f"{V1} -> {V2}: runtime.version: '0.10.2' -> '0.11.0', runtime major or minor "
        "version changed"
    ]


def test_a_runtime_the_provider_rule_already_names_is_named_once() -> None:
    """Measured on the pinned provider's runtime, which the plan's provider moved on from:
    one change, named as the provider rule names it."""
    freshness = judge(
        {"name": "vllm", "version": "0.10.2"}, plan_provider=provider(V2, version="0.11.0")
    )
    assert not freshness.fresh
    assert [c.field for c in freshness.changes] == ["runtime.version"]
    assert len(freshness.reasons) == 1


def test_a_runtime_unlike_the_pinned_provider_is_named_beside_the_provider_change() -> None:
    freshness = judge(
        {"name": "vllm", "version": "0.9.2"}, plan_provider=provider(V2, version="0.11.0")
    )
    assert freshness.reasons == [
        f"{V1} -> {V2}: runtime.version: '0.10.2' -> '0.11.0', runtime major or minor "
        "version changed",
        f"measured on vllm 0.9.2; the plan's provider {V2} runs vllm 0.11.0 "
        "(minor version differs)",
    ]


def test_the_measured_runtime_is_judged_against_the_plan_provider_not_the_pinned_one() -> None:
    """Pinned to a provider version that says 0.10.2, but the file says it ran 0.9: the
    plan (same provider version) is not supported until the test is run on 0.10."""
    freshness = judge({"name": "vllm", "version": "0.9.0"})
    assert not freshness.fresh
    assert freshness.reasons[0].startswith("measured on vllm 0.9.0; the plan's provider")


def test_a_runtime_is_not_in_the_dump_when_unknown() -> None:
    """Evidence that states no runtime dumps, and so hashes, as before the field existed."""
    assert "runtime" not in evidence(None).model_dump(mode="json")
    assert evidence({"name": "vllm", "version": "0.8.5"}).model_dump(mode="json")["runtime"] == {
        "name": "vllm",
        "version": "0.8.5",
    }


@pytest.mark.parametrize("version", ["latest", "0", "v0.8.5", "0.8 .5"])
def test_a_hand_written_runtime_version_must_be_a_version(version: str) -> None:
    with pytest.raises(InvalidInput) as error:
        evidence({"name": "vllm", "version": version})
    assert error.value.problems[0].loc == "runtime.version"
