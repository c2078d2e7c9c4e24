"""`capgate {workload,provider,evidence,plan} submit|show|list|versions`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from registry.records.kinds import RecordKind
    from registry.records.views import Page, SeriesView, SubmitResult

LimitOpt = Annotated[int, typer.Option("--limit", min=1, max=500, help="Page size.")]
OffsetOpt = Annotated[int, typer.Option("--offset", min=0, max=1_000_000, help="Items to skip.")]


def emit_series(page: Page[SeriesView]) -> None:
    """Every name with its latest version, as `list` prints it for any kind."""
    emit_table(
        ("NAME", "LATEST", "UPDATED", "DIGEST"),
        [
            (
                s.name,
                f"v{s.latest_version}",
                s.updated_at.strftime("%Y-%m-%d %H:%M"),
                s.latest_digest[:19],
            )
            for s in page.items
        ],
    )


def submit_line(result: SubmitResult) -> str:
    """What a submission made: the version, its digest, and whether it is new."""
    state = "created" if result.created else "unchanged, existing version"
    if result.created and result.record.reverts:
        state += f", revert of {result.record.reverts}"
    return f"{result.record.ref}  {result.record.digest}  ({state})"


def _kind(value: str) -> RecordKind:
    from registry.records.kinds import RecordKind

    return RecordKind(value)


def record_commands(kind_value: str, help_text: str, *, list_command: bool = True) -> typer.Typer:
    group = typer.Typer(help=help_text, no_args_is_help=True)

    @group.command("submit")
    def submit(
        file: Annotated[Path, typer.Argument(help="YAML or JSON file holding one record.")],
        server: ServerOpt = None,
        json_out: JsonOpt = False,
        team: Annotated[
            str | None,
            typer.Option(
                "--team",
                help="The team that owns a new series (default: the plan's team, the record's "
                "owner if it is one of yours, else your team). Later versions keep the owner.",
            ),
        ] = None,
    ) -> None:
        """Submit a record: content identical to the latest version is that version; changed
        content, or an earlier version's (a revert), is the next version. Only members of
        the series' owner team publish its next version."""
        from cli.backend import open_backend
        from registry.records.documents import load_document

        kind = _kind(kind_value)
        document = load_document(file)
        result = open_backend(server).submit(kind, document, source=str(file), team=team)
        if json_out:
            emit_json(result)
            return
        typer.echo(submit_line(result))

    @group.command("show")
    def show(
        ref: Annotated[str, typer.Argument(help="name (latest), name@vN or sha256:<digest>.")],
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Show one version of a record."""
        from cli.backend import open_backend

        view = open_backend(server).get(_kind(kind_value), ref)
        if json_out:
            emit_json(view)
            return
        from cli.yaml_out import dump_yaml

        typer.echo(f"# {view.kind.value} {view.ref}")
        typer.echo(f"# digest:     {view.digest}")
        typer.echo(f"# created:    {view.created_at.isoformat()} by {view.created_by}")
        for role, target in view.references.items():
            typer.echo(f"# {role + ':':<11} {target}")
        typer.echo(dump_yaml(view.content).rstrip())

    def list_(
        server: ServerOpt = None,
        json_out: JsonOpt = False,
        limit: LimitOpt = 50,
        offset: OffsetOpt = 0,
    ) -> None:
        """List every name of this kind with its latest version."""
        from cli.backend import open_backend

        page = open_backend(server).list_series(_kind(kind_value), limit=limit, offset=offset)
        if json_out:
            emit_json(page)
            return
        emit_series(page)
        if page.total > page.offset + len(page.items):
            typer.echo(f"({page.total} in all; use --offset to see more)")

    if list_command:
        group.command("list")(list_)

    @group.command("versions")
    def versions(
        name: Annotated[str, typer.Argument(help="Record name.")],
        server: ServerOpt = None,
        json_out: JsonOpt = False,
        limit: LimitOpt = 50,
        offset: OffsetOpt = 0,
    ) -> None:
        """List the versions of one record."""
        from cli.backend import open_backend

        page = open_backend(server).list_versions(
            _kind(kind_value), name, limit=limit, offset=offset
        )
        if json_out:
            emit_json(page)
            return
        emit_table(
            ("REF", "CREATED", "BY", "DIGEST"),
            [
                (v.ref, v.created_at.strftime("%Y-%m-%d %H:%M"), v.created_by, v.digest[:19])
                for v in page.items
            ],
        )

    return group
