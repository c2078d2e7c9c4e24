"""The four record kinds and the schema each one is validated against."""

from __future__ import annotations

from enum import StrEnum

from registry.records.common import Metadata
from registry.records.evidence import LoadTestEvidence
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile


class RecordKind(StrEnum):
    workload = "workload"
    provider = "provider"
    evidence = "evidence"
    plan = "plan"

    @property
    def schema(self) -> type[Metadata]:
        return SCHEMAS[self]

    @property
    def collection(self) -> str:
        """The URL segment under /v1 (plural, as REST users expect)."""
        return COLLECTIONS[self]


SCHEMAS: dict[RecordKind, type[Metadata]] = {
    RecordKind.workload: WorkloadProfile,
    RecordKind.provider: ProviderProfile,
    RecordKind.evidence: LoadTestEvidence,
    RecordKind.plan: CapacityPlan,
}

COLLECTIONS: dict[RecordKind, str] = {
    RecordKind.workload: "workloads",
    RecordKind.provider: "providers",
    RecordKind.evidence: "evidence",
    RecordKind.plan: "plans",
}
