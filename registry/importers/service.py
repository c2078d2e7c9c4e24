"""Importing load-test result files into the registry, all or nothing.

Every file is read and converted first (the pure importers), then every record goes
through the one write path, `registry.records.service.submit` (pinning, digests,
staleness, audit), inside the caller's single unit of work: a broken file or a bad
reference anywhere leaves nothing behind. Identical content is the existing version, so
importing the same file twice returns the same records with `created: false`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from registry.errors import FieldProblem, InvalidInput
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database, WriteContext

MAX_FILES = 100


def convert_files(
    files: Sequence[tuple[str, bytes]],
    *,
    tool: str = "auto",
    workload: str,
    provider: str,
    plan: str | None = None,
    traffic_class: str | None = None,
    measured_at: datetime | None = None,
) -> list[tuple[str, LoadTestEvidence]]:
    """(file name, record) for every stage of every file; raises on the first bad file."""
    from registry.importers import import_result_file

    if not files:
        raise InvalidInput(
            "nothing to import", problems=[FieldProblem("files", "give at least one result file")]
        )
    if len(files) > MAX_FILES:
        raise InvalidInput(
            "too many files",
            problems=[FieldProblem("files", f"at most {MAX_FILES} files in one import")],
        )
    out: list[tuple[str, LoadTestEvidence]] = []
    for file_name, data in files:
        records = import_result_file(
            data,
            file_name=file_name,
            tool=tool,
            workload=workload,
            provider=provider,
            plan=plan,
            traffic_class=traffic_class,
            measured_at=measured_at,
        )
        out.extend((file_name, record) for record in records)
    return out


def import_files(
    database: Database,
    files: Sequence[tuple[str, bytes]],
    *,
    principal: str,
    tool: str = "auto",
    workload: str,
    provider: str,
    plan: str | None = None,
    traffic_class: str | None = None,
    measured_at: datetime | None = None,
) -> list[SubmitResult]:
    """Import result files as evidence records, one per stage, all in one transaction.

    Files are parsed before the write begins: the unit of work reruns its body on a lost
    version race, and a large result file should be parsed once and hold no lock.
    """
    converted = convert_files(
        files,
        tool=tool,
        workload=workload,
        provider=provider,
        plan=plan,
        traffic_class=traffic_class,
        measured_at=measured_at,
    )
    return database.write(lambda ctx: submit_converted(ctx, converted), principal=principal)


def submit_converted(
    ctx: WriteContext, converted: Sequence[tuple[str, LoadTestEvidence]]
) -> list[SubmitResult]:
    """Submit records from `convert_files` in the caller's transaction."""
    from registry.records import service

    results: list[SubmitResult] = []
    for file_name, record in converted:
        try:
            results.append(service.submit(ctx, kind=RecordKind.evidence, record=record))
        except InvalidInput as exc:
            exc.source = exc.source or file_name
            raise
    return results
