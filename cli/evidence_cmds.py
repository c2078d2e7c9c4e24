"""`capgate evidence import|list [--stale]|history`: load tests into evidence, and its state."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.option_values import invalid_option, zoned_time
from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from registry.importers.service import ImportFile
    from registry.records.views import SubmitResult

LimitOpt = Annotated[int, typer.Option("--limit", min=1, max=500, help="Page size.")]
OffsetOpt = Annotated[int, typer.Option("--offset", min=0, help="Items to skip.")]

TOOL_CHOICES = ("auto", "vllm-bench", "guidellm", "inference-perf", "genai-perf", "aiperf")
TOOL_ALIASES = {"vllm": "vllm-bench"}


def _tool(value: str) -> str:
    tool = TOOL_ALIASES.get(value.lower(), value.lower())
    if tool not in TOOL_CHOICES:
        raise invalid_option(
            f"unknown tool {value!r}; expected one of {', '.join(TOOL_CHOICES)} (or vllm)",
            loc="--tool",
        )
    return tool


def _read(path: Path) -> bytes:
    from registry.errors import InvalidInput

    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput("file not found", source=str(path)) from None
    except IsADirectoryError:
        raise InvalidInput("is a directory, not a result file", source=str(path)) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read file: {exc.strerror}", source=str(path)) from None


def _import_inputs(
    files: list[Path], classes: list[str]
) -> tuple[list[ImportFile], str | None, bool]:
    """(files to read, the one class for all, mixed) from the arguments and --class values.

    `--class NAME` names the class of every file; `--class NAME=FILE` (repeated) gives one
    file per class of a mixed test. The two forms do not mix.
    """
    from registry.importers.service import ImportFile

    pairs = [c for c in classes if "=" in c]
    plain = [c for c in classes if "=" not in c]
    if pairs and (plain or files):
        raise invalid_option(
            "give either result files with one --class NAME, or --class NAME=FILE for each "
            "class of a mixed test, not both",
            loc="--class",
        )
    if len(plain) > 1:
        raise invalid_option(
            "one --class NAME applies to every file; for a mixed test give --class NAME=FILE "
            "per class",
            loc="--class",
        )
    if pairs:
        out: list[ImportFile] = []
        for pair in pairs:
            name, _, path = pair.partition("=")
            if not name.strip() or not path.strip():
                raise invalid_option(f"{pair!r} is not NAME=FILE", loc="--class")
            out.append(ImportFile(name=path, data=_read(Path(path)), traffic_class=name.strip()))
        return out, None, True
    if not files:
        raise invalid_option("give one or more result files, or --class NAME=FILE", loc="FILES")
    single = plain[0] if plain else None
    return [ImportFile(name=str(p), data=_read(p)) for p in files], single, False


def _submit_line(result: SubmitResult) -> str:
    state = "created" if result.created else "unchanged, existing version"
    return f"{result.record.ref}  {result.record.digest}  ({state})"


def extend_evidence(group: typer.Typer) -> None:
    """Add the evidence commands beyond submit/show/versions to `group`."""

    @group.command("import")
    def import_(
        workload: Annotated[
            str, typer.Option("--workload", help="Workload the test was measured against.")
        ],
        provider: Annotated[
            str, typer.Option("--provider", help="Provider the test was measured against.")
        ],
        files: Annotated[
            list[Path] | None,
            typer.Argument(
                help="Result files of a load-test tool (one or more); with --class NAME=FILE "
                "the files come from --class instead.",
                show_default=False,
            ),
        ] = None,
        tool: Annotated[
            str,
            typer.Option(
                "--tool",
                help="auto (judged from the file), vllm, guidellm, inference-perf, "
                "genai-perf or aiperf.",
            ),
        ] = "auto",
        plan: Annotated[
            str | None, typer.Option("--plan", help="Plan whose serving config was tested.")
        ] = None,
        classes: Annotated[
            list[str] | None,
            typer.Option(
                "--class",
                help="The traffic class the test offered (default: the file's own label, else "
                "'default'); or NAME=FILE, repeated, for a mixed test: one load generator per "
                "class run at the same time, combined into one record.",
            ),
        ] = None,
        together: Annotated[
            bool,
            typer.Option(
                "--together",
                help="The files were run at the same time, one per class, each naming its class "
                "(vLLM --metadata traffic_class=NAME): combine them into one mixed record.",
            ),
        ] = False,
        replicas: Annotated[
            int | None,
            typer.Option(
                "--replicas",
                min=1,
                help="Ready replicas behind the tested endpoint; required unless the file "
                "states it.",
            ),
        ] = None,
        measured_at: Annotated[
            str | None,
            typer.Option(
                "--measured-at",
                help="When the run started: ISO 8601 with a zone; needed when the file states "
                "no time, and preferred to a file's time without a zone. A file's own zoned "
                "time wins (a value further from it than the run's duration plus 5 minutes "
                "is refused); a file already imported keeps its first measured time.",
            ),
        ] = None,
        runtime: Annotated[
            str | None,
            typer.Option(
                "--runtime",
                help="The serving runtime measured, NAME==VERSION (e.g. vllm==0.8.5): the "
                "server, not the load generator. Taken from the file when it states it; "
                "a value contradicting the file is refused.",
            ),
        ] = None,
        name: Annotated[
            str | None,
            typer.Option(
                "--name", help="Record name (one file or a mixed test); default: the file name."
            ),
        ] = None,
        prometheus: Annotated[
            str | None,
            typer.Option(
                "--prometheus",
                help="Prometheus (or Thanos, Mimir) query API base URL: read the vLLM "
                "server's own series over each test's window (prefix-cache hits, KV-cache "
                "peak, preemptions, queue p99, running and waiting peaks; pod warm-up from "
                "kube-state-metrics) into the record's server block. Stored without "
                "credentials.",
            ),
        ] = None,
        selector: Annotated[
            str | None,
            typer.Option(
                "--selector",
                help="PromQL label matchers of the tested deployment's series, e.g. "
                'namespace="llm",model_name="m" (as capgate observe takes them).',
            ),
        ] = None,
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Import result files as evidence: one record per stage, all files or none.

        The raw file's sha256, the tool and its version, and the serving runtime measured
        (from the file or --runtime) are kept; importing the same file again returns the
        same records. With --class NAME=FILE for each class, files run
        together become one mixed-class record (their measurement windows must overlap).
        With --prometheus the server's series over the test's window are kept too (a new
        version of a record imported without them).
        """
        from cli.backend import open_backend
        from cli.evidence_backend import import_files
        from registry.importers.runtime import parse_runtime
        from registry.importers.service import ImportOptions

        stated_runtime = None if runtime is None else parse_runtime(runtime, loc="--runtime")
        contents, traffic_class, mixed = _import_inputs(files or [], classes or [])
        if together and not mixed:
            if traffic_class is not None:
                raise invalid_option(
                    "--together takes each file's class from the file; drop --class NAME or "
                    "give --class NAME=FILE per file",
                    loc="--together",
                )
            mixed = True
        options = ImportOptions(
            workload=workload,
            provider=provider,
            tool=_tool(tool),
            plan=plan,
            traffic_class=traffic_class,
            measured_at=zoned_time(measured_at, option="--measured-at"),
            replicas=replicas,
            runtime=stated_runtime,
            name=name,
            mixed=mixed,
            prometheus=prometheus,
            selector=selector,
        )
        backend = open_backend(server)
        if prometheus is not None:
            from registry.importers.server_series import endpoint

            # One query per figure and stage, each up to the client's timeout: say so first.
            typer.echo(
                f"import: reading the server's series from {endpoint(prometheus).url} over "
                "each test's window",
                err=True,
            )
        results = import_files(backend, contents, options)
        # What the import decided for the user (a re-imported file keeping its first measured
        # time) goes to stderr: stdout stays the records, or the JSON.
        for note in dict.fromkeys(n for result in results for n in result.notes):
            typer.echo(f"note: {note}", err=True)
        if json_out:
            emit_json([result.model_dump(mode="json") for result in results])
            return
        for result in results:
            typer.echo(_submit_line(result))

    @group.command("list")
    def list_(
        stale: Annotated[
            bool,
            typer.Option(
                "--stale",
                help="Only stale evidence (a material change, replaced, or too old), "
                "with the reasons.",
            ),
        ] = False,
        all_versions: Annotated[
            bool,
            typer.Option(
                "--all-versions",
                help="With --stale: also versions replaced by a newer version of their name.",
            ),
        ] = False,
        server: ServerOpt = None,
        json_out: JsonOpt = False,
        limit: LimitOpt = 50,
        offset: OffsetOpt = 0,
    ) -> None:
        """List evidence (latest version of each name), or with --stale the stale evidence."""
        from cli.backend import open_backend

        backend = open_backend(server)
        if not stale:
            from registry.records.kinds import RecordKind

            page = backend.list_series(RecordKind.evidence, limit=limit, offset=offset)
            if json_out:
                emit_json(page)
                return
            from cli.records import emit_series

            emit_series(page)
            total, shown = page.total, page.offset + len(page.items)
        else:
            from cli.evidence_backend import list_stale

            stale_page = list_stale(
                backend, limit=limit, offset=offset, include_replaced=all_versions
            )
            if json_out:
                emit_json(stale_page)
                return
            if not stale_page.items and stale_page.total == 0:
                typer.echo("no stale evidence")
                return
            emit_table(
                ("REF", "MEASURED", "AGE", "REASON"),
                [
                    (
                        item.ref,
                        item.measured_at.strftime("%Y-%m-%d") if item.measured_at else "-",
                        f"{item.age_days:.0f}d" if item.age_days is not None else "-",
                        item.reasons[0]
                        + (f" (+{len(item.reasons) - 1} more)" if len(item.reasons) > 1 else ""),
                    )
                    for item in stale_page.items
                ],
            )
            total, shown = stale_page.total, stale_page.offset + len(stale_page.items)
        if total > shown:
            typer.echo(f"({total} in all; use --offset to see more)")

    @group.command("history")
    def history(
        ref: Annotated[str, typer.Argument(help="Evidence: name (latest), name@vN or digest.")],
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Staleness history of one evidence version: which change staled it, and when."""
        from cli.backend import open_backend
        from cli.evidence_backend import staleness_history

        view = staleness_history(open_backend(server), ref)
        if json_out:
            emit_json(view)
            return
        typer.echo(f"{view.ref}  {'STALE' if view.stale else 'fresh'}")
        if view.withdrawn is not None:
            w = view.withdrawn
            typer.echo(
                f"WITHDRAWN {w.withdrawn_at:%Y-%m-%d %H:%M} by {w.withdrawn_by}: {w.reason} "
                "(supports nothing, blocks nothing)"
            )
        if view.measured_at is not None and view.age_days is not None:
            typer.echo(
                f"measured {view.measured_at.isoformat()} ({view.age_days:.1f} days ago; "
                f"maximum age {view.max_age_days:g} days)"
            )
        if not view.entries:
            typer.echo("no staleness records")
        for entry in view.entries:
            when = entry.detected_at.strftime("%Y-%m-%d %H:%M")
            if entry.cause_kind.value == "evidence":
                typer.echo(f"{when}  replaced by {entry.cause}")
                continue
            typer.echo(f"{when}  {entry.cause_kind.value} {entry.measured} -> {entry.cause}")
            for change in entry.changes:
                typer.echo(f"    {change.describe()}")
        for reason in view.reasons:
            if reason.startswith("measured "):
                typer.echo(reason)
