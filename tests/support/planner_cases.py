"""Planner inputs built in memory, and a gate context around them (no registry needed).

Shared by the tests that take the planner's recomputation through the gate's assembly:
partitioning (TP=1 against the plan's TP) and the planner/gate agreement property.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from benchmarks.planner import profiles
from registry.gate.context import EvidenceItem, PlanContext
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.views import RecordView
from registry.records.workload import WorkloadProfile

recompute_module = importlib.import_module("registry.planner.recomputation")

LLAMA_70B = "meta-llama/Llama-3.1-70B"
LLAMA_8B = "meta-llama/Llama-3.1-8B"


def chat_workload() -> WorkloadProfile:
    """12 req/s at peak, prompts p50 600 / p99 6000 tokens, outputs p50 180 / p99 1000."""

    def lengths(quantiles: dict[str, float]) -> dict[str, object]:
        return {"basis": "assumed", "reason": "a chat service's shape", "quantiles": quantiles}

    return profiles.workload(
        rate=12.0,
        cv=1.5,
        name="chat",
        prompt=lengths({"p0": 16, "p10": 100, "p50": 600, "p90": 2000, "p99": 6000, "p100": 12000}),
        output=lengths({"p0": 1, "p10": 20, "p50": 180, "p90": 500, "p99": 1000, "p100": 2048}),
        slo={
            "ttft_p99_ms": 2000,
            "tpot_p99_ms": 60,
            "e2e_p99_ms": 90000,
            "queue_deadline_ms": 2000,
        },
    )


def h100(model: str, *, fp8: bool = False, interconnect: str = "nvlink") -> ProviderProfile:
    doc = profiles.provider(model, "h100").model_dump(mode="json")
    if fp8:
        doc["model"].update(weights_dtype="fp8", kv_dtype="fp8", quantization="fp8")
    if interconnect == "pcie":
        doc["accelerator"]["interconnect"] = {"kind": "pcie", "bandwidth_gb_s": 64}
    return ProviderProfile.model_validate(doc)


@contextmanager
def quick_recompute() -> Iterator[None]:
    """Fewer simulated requests and one load-curve point: for decisions with wide margins."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recompute_module, "SIM_REQUESTS", 2000)
        patch.setattr(recompute_module, "CURVE_REQUESTS", 1000)
        patch.setattr(recompute_module, "CURVE_LOADS", (1.0,))
        yield


def view(kind: RecordKind, name: str) -> RecordView:
    return RecordView(
        kind=kind,
        name=name,
        version=1,
        ref=f"{name}@v1",
        digest="sha256:" + "0" * 64,
        created_at=datetime(2026, 11, 30, tzinfo=UTC),
        created_by="alice",
        references={},
        content={},
    )


def plan_context(
    plan: CapacityPlan,
    workload: WorkloadProfile,
    provider: ProviderProfile,
    evidence: list[EvidenceItem] | None = None,
) -> PlanContext:
    return PlanContext(
        plan_row_id=1,
        plan_view=view(RecordKind.plan, plan.name),
        plan=plan,
        workload_view=view(RecordKind.workload, workload.name),
        workload=workload,
        provider_view=view(RecordKind.provider, provider.name),
        provider=provider,
        evidence=evidence or [],
        waivers=[],
    )
