"""Anti-laundering: raw bytes measured against one version do not become fresh evidence
for a materially different version of the same record.

Without this, a result file whose evidence went stale when the workload changed could be
imported again against the new workload version and come back fresh, although nothing was
measured against that version. Each evidence version stores the raw digests it claims
(`LoadTestEvidence.raw_digests()`: `raw_file` and `provenance.files`, imported and
declared records alike); a new version claiming a digest that an earlier evidence version
claims (withdrawn or not: withdrawing does not change what the file was measured against)
must pin the same versions, or versions that differ from the earlier pins only
immaterially (the same rules that stale evidence, so a description-only change can still
be re-pinned). Different names are not compared: the rules compare versions of one
record. Runs inside the submitting transaction.
"""

from __future__ import annotations

from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.records.evidence import LoadTestEvidence
from registry.records.references import pinned
from registry.staleness.rules import StalenessThresholds, material_changes
from registry.staleness.thresholds import load_thresholds
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow
from registry.storage.repository import EvidenceLifecycleRepository, RecordRepository

# The pins compared, in the order a refusal names them.
ROLES = ("workload", "provider", "plan")


def _digest_loc(record: LoadTestEvidence, digest: str) -> tuple[str, str]:
    """Where the record states `digest`, and the file name it gives for it."""
    if record.raw_file is not None and record.raw_file.sha256 == digest:
        return "raw_file.sha256", record.raw_file.file_name
    for index, source in enumerate(record.provenance.files):
        if source.sha256 == digest:
            return f"provenance.files.{index}.sha256", source.file_name
    return "raw_file.sha256", "?"  # pragma: no cover - digests come from the record itself


def check_raw_digests(
    ctx: WriteContext,
    *,
    record: LoadTestEvidence,
    targets: dict[str, RecordRow],
    limits: StalenessThresholds | None = None,
) -> None:
    """Refuse `record` (pinned to `targets` by role) when one of its raw digests was
    measured against a version that a target's version changed materially."""
    from registry.records.service import load_model

    digests = sorted(record.raw_digests())
    found = EvidenceLifecycleRepository(ctx.session).measured_from(digests)
    if not found:
        return
    earlier_ids = [row.id for _, row in found]
    pins = RecordRepository(ctx.session).references(earlier_ids)
    withdrawn = EvidenceLifecycleRepository(ctx.session).withdrawals_of(earlier_ids)
    models: dict[int, Any] = {}

    def model(row: RecordRow) -> Any:
        if row.id not in models:
            models[row.id] = load_model(row)
        return models[row.id]

    problems: list[FieldProblem] = []
    refused: set[str] = set()
    for digest, earlier in found:
        if digest in refused:
            continue  # one line per digest: the earliest record that rules it out
        for role in ROLES:
            old, new = pins[earlier.id].get(role), targets.get(role)
            if old is None or new is None or old.name != new.name or old.id == new.id:
                continue
            limits = limits or load_thresholds()
            changes = material_changes(model(old), model(new), limits)
            if not changes:
                continue  # an immaterial change: re-pinning the same measurement is honest
            loc, file_name = _digest_loc(record, digest)
            more = f" (+{len(changes) - 1} more)" if len(changes) > 1 else ""
            old_ref, new_ref = pinned(old.name, old.version), pinned(new.name, new.version)
            earlier_ref = pinned(earlier.name, earlier.version)
            if earlier.id in withdrawn:
                earlier_ref += ", withdrawn"
            problems.append(
                FieldProblem(
                    loc,
                    f"{file_name} ({digest}) was measured against {role} {old_ref} "
                    f"(evidence {earlier_ref}); {new_ref} changed "
                    f"materially: {changes[0].describe()}{more}; the same bytes cannot be evidence "
                    f"for {new_ref}: run the test against it and import that result",
                )
            )
            refused.add(digest)
            break
    if problems:
        raise InvalidInput(
            "raw file already measured against a materially different version",
            problems=problems,
        )
