"""`capgate audit list|verify`: the hash-chained trail of every write."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table

audit_app = typer.Typer(help="The audit trail: every write, hash-chained.", no_args_is_help=True)


@audit_app.command("list")
def list_events(
    action: Annotated[str | None, typer.Option(help="Only this action, e.g. gate.check.")] = None,
    principal: Annotated[str | None, typer.Option(help="Only events by this principal.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Audit events, newest first."""
    from cli.backend import open_backend

    page = open_backend(server).audit_events(
        {"action": action, "principal": principal}, limit=limit, offset=offset
    )
    if json_out:
        emit_json(page)
        return
    emit_table(
        ("SEQ", "AT", "BY", "ACTION", "SUBJECT"),
        [
            (
                e.seq,
                e.at.strftime("%Y-%m-%d %H:%M:%S"),
                e.principal,
                e.action,
                e.payload.get("ref") or e.payload.get("plan") or "",
            )
            for e in page.items
        ],
    )


@audit_app.command("verify")
def verify(server: ServerOpt = None, json_out: JsonOpt = False) -> None:
    """Walk the hash chain from the first event; exit 1 if any event was altered or lost."""
    from cli.backend import open_backend

    report = open_backend(server).audit_verify()
    if json_out:
        emit_json(report)
    elif report.intact:
        typer.echo(f"intact: {report.events} events, head {report.head}")
    else:
        typer.echo(f"BROKEN: {len(report.problems)} problem(s) in {report.events} events")
        for problem in report.problems:
            typer.echo(f"  {problem}")
    raise typer.Exit(0 if report.intact else 1)
