"""Importing load-test result files into the registry, all or nothing.

Every file is read and converted first (the pure importers), then every record goes
through the one write path, `registry.records.service.submit` (pinning, digests,
staleness, audit), inside the caller's single unit of work: a broken file or a bad
reference anywhere leaves nothing behind. Identical content is the existing version, so
importing the same file twice returns the same records with `created: false`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from registry.errors import FieldProblem, InvalidInput
from registry.records.evidence import LoadTestEvidence, RuntimeInfo
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.storage.database import Database, WriteContext

MAX_FILES = 100


@dataclass(frozen=True)
class ImportOptions:
    """What the person importing says about the files (the CLI's flags, the API's form)."""

    workload: str
    provider: str
    tool: str = "auto"
    plan: str | None = None
    traffic_class: str | None = None
    measured_at: datetime | None = None
    replicas: int | None = None
    # The serving runtime measured (--runtime NAME==VERSION); the file's own statement wins.
    runtime: RuntimeInfo | None = None
    name: str | None = None  # record name; default: from the file name
    # The files are one per traffic class, run at the same time: one combined record.
    mixed: bool = False


@dataclass(frozen=True)
class ImportFile:
    name: str
    data: bytes
    traffic_class: str | None = None  # from `--class NAME=FILE`


def _problem(loc: str, message: str) -> InvalidInput:
    return InvalidInput(message, problems=[FieldProblem(loc, message)])


def convert_files(
    files: Sequence[ImportFile], options: ImportOptions
) -> list[tuple[str, LoadTestEvidence]]:
    """(file name, record) for every stage of every file; raises on the first bad file."""
    from registry.importers import import_class_files, import_result_file_with_findings

    if not files:
        raise _problem("files", "nothing to import: give at least one result file")
    if len(files) > MAX_FILES:
        raise _problem("files", f"too many files: at most {MAX_FILES} in one import")
    if options.mixed:
        if options.traffic_class is not None:
            raise _problem("--class", "a mixed import names each file's class as --class NAME=FILE")
        if len(files) < 2:
            raise _problem("--class", "a mixed import needs two or more files, one per class")
        imported = import_class_files(
            [(f.traffic_class or "", f.name, f.data) for f in files],
            tool=options.tool,
            workload=options.workload,
            provider=options.provider,
            plan=options.plan,
            measured_at=options.measured_at,
            replicas=options.replicas,
            runtime=options.runtime,
            name=options.name,
        )
        return [(files[0].name, imported.evidence)]
    out: list[tuple[str, LoadTestEvidence]] = []
    for f in files:
        stages = import_result_file_with_findings(
            f.data,
            file_name=f.name,
            tool=options.tool,
            workload=options.workload,
            provider=options.provider,
            plan=options.plan,
            traffic_class=f.traffic_class or options.traffic_class,
            measured_at=options.measured_at,
            replicas=options.replicas,
            runtime=options.runtime,
            name=options.name if len(files) == 1 else None,
        )
        out.extend((f.name, stage.evidence) for stage in stages)
    return out


def import_files(
    database: Database,
    files: Sequence[ImportFile],
    options: ImportOptions,
    *,
    principal: str,
) -> list[SubmitResult]:
    """Import result files as evidence records, all in one transaction.

    Files are parsed before the write begins: the unit of work reruns its body on a lost
    version race, and a large result file should be parsed once and hold no lock.
    """
    converted = convert_files(files, options)
    return database.write(lambda ctx: submit_converted(ctx, converted), principal=principal)


def submit_converted(
    ctx: WriteContext, converted: Sequence[tuple[str, LoadTestEvidence]]
) -> list[SubmitResult]:
    """Submit records from `convert_files` in the caller's transaction."""
    from registry.records import service

    results: list[SubmitResult] = []
    for file_name, record in converted:
        try:
            # The one caller allowed to state provenance.entry: imported.
            results.append(
                service.submit(ctx, kind=RecordKind.evidence, record=record, via_import=True)
            )
        except InvalidInput as exc:
            exc.source = exc.source or file_name
            raise
    return results
