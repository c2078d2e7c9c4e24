"""All SQL for records and their references, one repository per subject.

The repositories are imported from here by the services; each lives in its own module.
"""

from registry.storage.repository.gate import GateRepository, PlanVersion
from registry.storage.repository.integrity import IntegrityRepository
from registry.storage.repository.lifecycle import EvidenceLifecycleRepository
from registry.storage.repository.queries import IN_CHUNK
from registry.storage.repository.records import RecordRepository
from registry.storage.repository.staleness import StalenessRepository

__all__ = [
    "IN_CHUNK",
    "EvidenceLifecycleRepository",
    "GateRepository",
    "IntegrityRepository",
    "PlanVersion",
    "RecordRepository",
    "StalenessRepository",
]
