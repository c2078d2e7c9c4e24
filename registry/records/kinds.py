"""The record kinds and the schema each one is validated against.

Schemas are imported on first use: listing or showing records needs only the kind's
name, and building every pydantic schema costs the CLI a tenth of a second.
"""

from __future__ import annotations

from enum import StrEnum
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.records.common import Metadata

_SCHEMA_PATHS = {
    "workload": "registry.records.workload:WorkloadProfile",
    "provider": "registry.records.provider:ProviderProfile",
    "evidence": "registry.records.evidence:LoadTestEvidence",
    "plan": "registry.records.plan:CapacityPlan",
    "waiver": "registry.records.waiver:Waiver",
    "observation": "registry.records.observation:Observation",
}

COLLECTIONS = {
    "workload": "workloads",
    "provider": "providers",
    "evidence": "evidence",
    "plan": "plans",
    "waiver": "waivers",
    "observation": "observations",
}


class RecordKind(StrEnum):
    workload = "workload"
    provider = "provider"
    evidence = "evidence"
    plan = "plan"
    waiver = "waiver"
    observation = "observation"

    @property
    def schema(self) -> type[Metadata]:
        module, _, attribute = _SCHEMA_PATHS[self.value].partition(":")
        schema: type[Metadata] = getattr(import_module(module), attribute)
        return schema

    @property
    def collection(self) -> str:
        """The URL segment under /v1 (plural, as REST users expect)."""
        return COLLECTIONS[self.value]


def all_schemas() -> dict[RecordKind, type[Metadata]]:
    return {kind: kind.schema for kind in RecordKind}
