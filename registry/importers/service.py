"""Importing load-test result files into the registry, all or nothing.

Every file is read and converted first (the pure importers), then every record goes
through the one write path, `registry.records.service.submit` (pinning, digests,
staleness, audit), inside the caller's single unit of work: a broken file or a bad
reference anywhere leaves nothing behind. Identical content is the existing version, so
importing the same file twice returns the same records with `created: false`.

A file's time of measurement is not the importer's to change. Where the file states its own
time with a zone, that time is used (a contradicting `--measured-at` is refused by the
importer). Otherwise the time came from `--measured-at` (or a zoneless clock read as UTC),
and bytes already in the registry keep the time their first import gave the same run: the
record takes it, whatever was given this time, and the result says so in `notes`.

With `--prometheus URL` (`ImportOptions.prometheus`) each record also gets `server`: the
serving runtime's own series over the test's window, read by
`registry.importers.server_series` before the write begins (no lock held while Prometheus
answers). The window starts at the time the record will keep, so a re-imported file reads
the window of its first import; the record differs from one imported without the flag, so
it is a new version of it. A record whose time is a guess (a file's time without a zone,
read as UTC) or that states no duration has no window, and is refused.

What the file says the test ran on (its model, its GPUs, the server's version) is held
against the provider version the record will pin, inside the same transaction
(`registry.importers.identity`): another model or accelerator family is refused naming
both; what cannot be compared, and a runtime release apart, are notes in the result and in
the record's findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from pydantic import Field

from registry.auth.identity import Identity as Caller
from registry.errors import Conflict, FieldProblem, InvalidInput, NotFound
from registry.importers.identity import Identity
from registry.importers.measured_at import NO_ZONE_NOTE, is_time_note
from registry.importers.parsed_stage import MeasuredAtSource
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
    # Read the server's own series over each test's window (--prometheus URL; the URL's
    # credentials, if any, are sent but never stored), scoped by PromQL label matchers.
    prometheus: str | None = None
    selector: str | None = None


@dataclass(frozen=True)
class ImportFile:
    name: str
    data: bytes
    traffic_class: str | None = None  # from `--class NAME=FILE`


class ImportResult(SubmitResult):
    """A submit result with what the import did that the person importing must know."""

    notes: list[str] = Field(
        default_factory=list,
        description="What the import decided for you, e.g. a re-imported file keeping the "
        "measured time of its first import.",
    )


@dataclass(frozen=True)
class Converted:
    """One record read from a file, and where its measured time came from."""

    file_name: str
    evidence: LoadTestEvidence
    measured_at_source: MeasuredAtSource = MeasuredAtSource.FILE
    # What the file says the test ran on, with the keys read (held against the provider).
    identity: Identity = field(default_factory=Identity)


def _problem(loc: str, message: str) -> InvalidInput:
    return InvalidInput(message, problems=[FieldProblem(loc, message)])


def convert_files(files: Sequence[ImportFile], options: ImportOptions) -> list[Converted]:
    """A record for every stage of every file; raises on the first bad file."""
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
        return [
            Converted(
                files[0].name, imported.evidence, imported.measured_at_source, imported.identity
            )
        ]
    out: list[Converted] = []
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
        out.extend(
            Converted(f.name, st.evidence, st.measured_at_source, st.identity) for st in stages
        )
    return out


def import_files(
    database: Database,
    files: Sequence[ImportFile],
    options: ImportOptions,
    *,
    principal: str,
    identity: Caller | None = None,
) -> list[ImportResult]:
    """Import result files as evidence records, all in one transaction.

    Files are parsed before the write begins: the unit of work reruns its body on a lost
    version race, and a large result file should be parsed once and hold no lock.
    """
    if options.selector and options.prometheus is None:
        raise _problem("--selector", "scopes the server's series read with --prometheus URL")
    converted = convert_files(files, options)
    if options.prometheus is not None:
        converted = with_server_series(database, converted, options, principal=principal)
    return database.write(
        lambda ctx: submit_converted(ctx, converted, identity=identity), principal=principal
    )


# How the note on a time without a zone ends when that time was read as UTC (measured_at.py).
_GUESSED_TIME = f"{NO_ZONE_NOTE}read as UTC"


def _server_window(file_name: str, record: LoadTestEvidence) -> tuple[datetime, datetime]:
    """The window the server's series are read over, from the time the record keeps."""
    from registry.importers.server_series import run_window

    notes = record.findings.notes if record.findings else []
    guessed = next((n for n in notes if is_time_note(n) and n.endswith(_GUESSED_TIME)), None)
    if guessed is not None:
        raise InvalidInput(
            "the test's window is unknown",
            problems=[
                FieldProblem(
                    "--measured-at",
                    f"{guessed}: the server's series would be read over a guessed window; "
                    "give the run's start with its zone",
                )
            ],
            source=file_name,
        )
    try:
        return run_window(record.measured_at, record.offered.duration_s)
    except InvalidInput as exc:
        exc.source = file_name
        raise


def with_server_series(
    database: Database, converted: Sequence[Converted], options: ImportOptions, *, principal: str
) -> list[Converted]:
    """Each record with `server`: Prometheus read over the window of the time the record
    will keep (the first import's, for bytes already imported)."""
    from registry.importers.server_series import endpoint, read_server_series
    from registry.observe.prometheus import Prometheus

    assert options.prometheus is not None
    where = endpoint(options.prometheus)
    with database.reading() as session:
        # Only read: the same settling the write repeats, to know the window now.
        reading = WriteContext(session=session, principal=principal, now=datetime.now(UTC))
        windows = [
            _server_window(item.file_name, _keep_first_time(reading, item)[0]) for item in converted
        ]
    out: list[Converted] = []
    with Prometheus(where.url, headers=where.headers) as client:
        for item, (start, end) in zip(converted, windows, strict=True):
            server = read_server_series(
                client,
                selector=options.selector or "",
                start=start,
                end=end,
                runtime=item.evidence.runtime,
            )
            out.append(replace(item, evidence=item.evidence.model_copy(update={"server": server})))
    return out


def _keep_first_time(ctx: WriteContext, item: Converted) -> tuple[LoadTestEvidence, list[str]]:
    """The record with the time the first import of its bytes gave the same run, if the
    file does not fix the time itself; and the note saying so."""
    record = item.evidence
    if item.measured_at_source is MeasuredAtSource.FILE:
        return record, []
    from registry.staleness.laundering import first_measurement

    first = first_measurement(ctx, record)
    if first is None or first[1].measured_at == record.measured_at:
        return record, []
    row, earlier = first
    given = (
        "given as --measured-at (form field measured_at)"
        if item.measured_at_source is MeasuredAtSource.ARGUMENT
        else "read as UTC from the file's time without a zone"
    )
    note = (
        f"{item.file_name}: measured_at {earlier.measured_at.isoformat()} kept from the first "
        f"import of these bytes (evidence {row.name}@v{row.version}), not "
        f"{record.measured_at.isoformat()} {given}: importing a file again cannot change "
        "when it was measured"
    )
    update: dict[str, object] = {"measured_at": earlier.measured_at}
    if record.findings is not None:
        # How the kept time was settled is the first import's note, not this one's.
        notes = _with_time_notes(record.findings.notes, earlier)
        update["findings"] = record.findings.model_copy(update={"notes": notes})
    return record.model_copy(update=update), [note]


def _with_time_notes(notes: list[str], earlier: LoadTestEvidence) -> list[str]:
    """`notes` with each note on settling a zoneless time replaced, in order, by the one the
    earlier record holds (dropped when it holds none)."""
    kept = iter(n for n in (earlier.findings.notes if earlier.findings else []) if is_time_note(n))
    out: list[str] = []
    for n in notes:
        if not is_time_note(n):
            out.append(n)
        elif (replacement := next(kept, None)) is not None:
            out.append(replacement)
    return out


def _check_server_window(item: Converted, record: LoadTestEvidence) -> None:
    """The series were read for the time the record keeps; a first import of the same bytes
    that landed meanwhile can move it, and then they describe another window."""
    assert record.server is not None
    if _server_window(item.file_name, record) != (record.server.start, record.server.end):
        raise Conflict(
            f"{item.file_name}: another import of these bytes settled their time of measurement "
            f"({record.measured_at.isoformat()}) while the server's series were read for "
            f"{record.server.start.isoformat()}: import again"
        )


def _hold_against_provider(
    ctx: WriteContext, item: Converted, record: LoadTestEvidence
) -> tuple[LoadTestEvidence, list[str]]:
    """The record checked against the provider version it will pin (the latest, for a bare
    name), with notes added to its findings; a contradiction raises InvalidInput. A
    reference that does not resolve is left to the submission, which names it."""
    from registry.importers.identity import check
    from registry.records.provider import ProviderProfile
    from registry.records.references import pinned
    from registry.records.service import load_model, resolve
    from registry.storage.repository import RecordRepository

    try:
        row = resolve(
            RecordRepository(ctx.session),
            RecordKind.provider,
            record.measured_against.provider,
            loc="measured_against.provider",
        )
    except (NotFound, InvalidInput):
        return record, []
    provider = load_model(row)
    assert isinstance(provider, ProviderProfile)
    notes = check(
        item.identity,
        record.runtime,
        provider,
        ref=pinned(row.name, row.version),
        source=item.file_name,
    )
    if not notes:
        return record, []
    findings = record.findings
    if findings is not None:
        findings = findings.model_copy(update={"notes": [*findings.notes, *notes]})
        record = record.model_copy(update={"findings": findings})
    return record, [f"{item.file_name}: {note}" for note in notes]


def submit_converted(
    ctx: WriteContext, converted: Sequence[Converted], *, identity: Caller | None = None
) -> list[ImportResult]:
    """Submit records from `convert_files` in the caller's transaction, as `identity`
    (None: the local user) for the ownership check."""
    from registry.records import service

    results: list[ImportResult] = []
    for item in converted:
        try:
            record, notes = _keep_first_time(ctx, item)
            record, held = _hold_against_provider(ctx, item, record)
            notes += held
            if record.server is not None:
                _check_server_window(item, record)
                notes += [f"{record.name}: server series: {n}" for n in record.server.notes]
            # The one caller allowed to state provenance.entry: imported.
            result = service.submit(
                ctx, kind=RecordKind.evidence, record=record, via_import=True, identity=identity
            )
        except InvalidInput as exc:
            exc.source = exc.source or item.file_name
            raise
        results.append(ImportResult(created=result.created, record=result.record, notes=notes))
    return results
