"""`capgate owner show KIND NAME` and `capgate owner transfer KIND NAME --team T --reason R`.

Every record series belongs to a team (registry.auth.ownership); moving one is an
admin's act, kept in the audit trail. Both run on the embedded registry or against a
server (--server). Heavy imports stay inside the functions: the CLI must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.auth.ownership import SeriesOwner
    from registry.records.kinds import RecordKind

owner_app = typer.Typer(
    help="Series owners: the team whose members publish a series' next version.",
    no_args_is_help=True,
)

KindArg = Annotated[
    str, typer.Argument(help="workload, provider, plan, evidence, observation or waiver.")
]
NameArg = Annotated[str, typer.Argument(help="The series' name (no version).")]


def _kind(value: str) -> RecordKind:
    from registry.errors import FieldProblem, InvalidInput
    from registry.records.kinds import RecordKind

    try:
        return RecordKind(value)
    except ValueError:
        known = ", ".join(k.value for k in RecordKind)
        raise InvalidInput(
            "unknown record kind",
            problems=[FieldProblem("KIND", f"{value!r} is not one of {known}")],
        ) from None


def show_owner(backend: Backend, kind_value: str, name: str) -> SeriesOwner:
    from urllib.parse import quote

    from cli.backend import LocalBackend, RemoteBackend
    from registry.auth.ownership import SeriesOwner, owner_of

    kind = _kind(kind_value)
    if isinstance(backend, LocalBackend):
        with backend.database.reading() as session:
            return owner_of(session, kind, name)
    if isinstance(backend, RemoteBackend):
        data = backend._request("GET", f"/v1/owners/{kind.value}/{quote(name, safe='')}")
        return SeriesOwner.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def transfer_owner(
    backend: Backend, kind_value: str, name: str, team: str, reason: str
) -> SeriesOwner:
    from urllib.parse import quote

    from cli.backend import LocalBackend, RemoteBackend
    from registry.auth.ownership import SeriesOwner, transfer

    kind = _kind(kind_value)
    if isinstance(backend, LocalBackend):
        return backend.database.write(
            lambda ctx: transfer(ctx, kind=kind, name=name, team=team, reason=reason),
            principal=backend.principal,
        )
    if isinstance(backend, RemoteBackend):
        data = backend._request(
            "POST",
            f"/v1/owners/{kind.value}/{quote(name, safe='')}/transfers",
            json={"team": team, "reason": reason},
        )
        return SeriesOwner.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def _print(owner: SeriesOwner) -> None:
    said = {
        "assigned": "",
        "stated": " (stated by its records; it predates series ownership)",
        "unowned": "",
    }[owner.source]
    who = f"team {owner.team}{said}" if owner.team else "no team (only an admin can name one)"
    typer.echo(f"{owner.kind.value} {owner.name}: {who}")
    for a in owner.history:
        when = a.assigned_at.strftime("%Y-%m-%d %H:%M")
        typer.echo(f"  {when}  {a.team}  by {a.assigned_by}: {a.reason}")


@owner_app.command("show")
def show(kind: KindArg, name: NameArg, server: ServerOpt = None, json_out: JsonOpt = False) -> None:
    """Which team owns a series, and every claim and transfer of it."""
    from cli.backend import open_backend

    owner = show_owner(open_backend(server), kind, name)
    if json_out:
        emit_json(owner)
        return
    _print(owner)


@owner_app.command("transfer")
def transfer_(
    kind: KindArg,
    name: NameArg,
    team: Annotated[str, typer.Option("--team", help="The team that owns it next.")],
    reason: Annotated[
        str, typer.Option("--reason", help="Why it moves (kept in the audit trail).")
    ],
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Give a series to a team (admin): from then on only its members publish the next
    version. A series nobody has published yet may be named for a team this way."""
    from cli.backend import open_backend

    owner = transfer_owner(open_backend(server), kind, name, team, reason)
    if json_out:
        emit_json(owner)
        return
    _print(owner)
