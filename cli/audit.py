"""`capgate audit list|verify|acknowledge|checkpoint|keygen`: the hash-chained trail of
every write."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt, instant
from cli.output import emit_json, emit_more, emit_table

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.audit.checkpoint import Checkpoint

audit_app = typer.Typer(help="The audit trail: every write, hash-chained.", no_args_is_help=True)

KeyOpt = Annotated[
    Path | None,
    typer.Option(
        "--key",
        help="Ed25519 key (PEM). Signing: the private key, else the file CAPGATE_SIGNING_KEY "
        "names. Verifying: the public key (keygen writes it beside the private one).",
    ),
]


@audit_app.command("list")
def list_events(
    action: Annotated[str | None, typer.Option(help="Only this action, e.g. gate.check.")] = None,
    principal: Annotated[str | None, typer.Option(help="Only events by this principal.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Events at or after this instant (ISO 8601, with zone).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Events before this instant.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    offset: Annotated[int, typer.Option(min=0, max=10_000)] = 0,
    cursor: Annotated[
        str | None, typer.Option(help="Start after this position (a page's next cursor).")
    ] = None,
    total: Annotated[bool, typer.Option("--total", help="Count every match.")] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Audit events, newest first."""
    from cli.backend import open_backend

    filters: dict[str, object] = {
        "action": action,
        "principal": principal,
        "cursor": cursor,
        "total": total or None,
    }
    for name, text in (("since", since), ("until", until)):
        if text is not None:
            filters[name] = instant(name, text)
    page = open_backend(server).audit_events(filters, limit=limit, offset=offset)
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
    emit_more(page.next_cursor, page.total)


def _checkpoint_problems(backend: Backend, checkpoint: Checkpoint) -> list[str]:
    """The checkpoint against the chain as the registry serves it (the client decides)."""
    from registry.audit.checkpoint import problems

    newest = backend.audit_events({}, limit=1, offset=0).items
    at_size = backend.audit_events({"seq": checkpoint.size}, limit=1, offset=0).items
    return problems(
        checkpoint,
        highest=newest[0].seq if newest else 0,
        event_at_size=(at_size[0].seq, at_size[0].hash) if at_size else None,
    )


@audit_app.command("verify")
def verify(
    checkpoint_file: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            help="A checkpoint written by `capgate audit checkpoint`: also detect a cut tail "
            "or a rewritten chain since (needs --key PUBLIC.pem).",
        ),
    ] = None,
    key: KeyOpt = None,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Walk the hash chain and check every stored row against the event that wrote it;
    exit 1 if anything was altered, added or lost."""
    from cli.backend import open_backend

    checkpoint = None
    if checkpoint_file is not None:
        from registry.audit import checkpoint as checkpoints
        from registry.keys import load_public_key, signing_key

        public = load_public_key(key) if key is not None else signing_key().public_key
        signed = checkpoints.read(checkpoint_file)
        checkpoint = checkpoints.verified(signed, public, source=str(checkpoint_file))
    elif key is not None:
        from cli.output import fail

        fail("--key is for --checkpoint: give the checkpoint to verify against")
    backend = open_backend(server)
    report = backend.audit_verify()
    if checkpoint is not None:
        extra = _checkpoint_problems(backend, checkpoint)
        report = report.model_copy(
            update={"problems": [*report.problems, *extra], "intact": report.intact and not extra}
        )
    if json_out:
        emit_json(report)
    elif report.intact:
        against = (
            f"; consistent with the checkpoint of {checkpoint.at.isoformat()} "
            f"({checkpoint.size} events)"
            if checkpoint is not None
            else ""
        )
        typer.echo(f"intact: {report.events} events, head {report.head}{against}")
    else:
        typer.echo(f"BROKEN: {len(report.problems)} problem(s) in {report.events} events")
        acknowledged = set(report.acknowledged)
        for problem in report.problems:
            mark = " (acknowledged)" if problem in acknowledged else ""
            typer.echo(f"  {problem}{mark}")
        if len(acknowledged) < len(report.problems):
            typer.echo("the registry is quarantined: every gate check is refused until it verifies")
    if report.ungoverned_decisions and not json_out:
        typer.echo(
            f"note: {report.ungoverned_decisions} decisions were taken before any policy "
            "release was approved (under an unapproved bundle; see capgate policy release)"
        )
    raise typer.Exit(0 if report.intact else 1)


@audit_app.command("acknowledge")
def acknowledge(
    reason: Annotated[
        str,
        typer.Option(
            "--reason", help="Why the failure is known and repaired (kept in the audit trail)."
        ),
    ],
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Lift the quarantine of a known, repaired failure (admin): acknowledge every problem
    `audit verify` reports now; a problem not acknowledged quarantines the registry again."""
    from cli.backend import open_backend

    done = open_backend(server).audit_acknowledge(reason)
    if json_out:
        emit_json(done)
        return
    typer.echo(
        f"acknowledged {len(done.problems)} problem(s) as event {done.seq} by {done.principal}:"
    )
    for problem in done.problems:
        typer.echo(f"  {problem}")


@audit_app.command("checkpoint")
def checkpoint(
    out: Annotated[Path, typer.Option("--out", help="Write the signed checkpoint here.")],
    key: KeyOpt = None,
    server: ServerOpt = None,
) -> None:
    """Sign the chain's current size and head (verified first); keep the file somewhere
    the registry's writers cannot reach, and verify against it later."""
    from datetime import UTC

    from cli.backend import open_backend
    from registry.audit import checkpoint as checkpoints
    from registry.audit.chain import GENESIS
    from registry.keys import key_id, load_private_key, signing_key

    # The key named, else the registry's signing key (CAPGATE_SIGNING_KEY or the default).
    private = (load_private_key(key) if key is not None else signing_key()).private_key
    report = open_backend(server).audit_verify()
    if not report.intact:
        typer.echo(f"BROKEN: {len(report.problems)} problem(s) in {report.events} events")
        for problem in report.problems:
            typer.echo(f"  {problem}")
        typer.echo("no checkpoint written: a broken chain is not signed", err=True)
        raise typer.Exit(1)
    signed = checkpoints.sign(
        checkpoints.Checkpoint(
            size=report.events, head=report.head or GENESIS, at=datetime.now(UTC)
        ),
        private,
    )
    checkpoints.write(signed, out)
    typer.echo(
        f"checkpoint: {report.events} events, head {signed.checkpoint.head}, signed by key "
        f"{key_id(private.public_key())} -> {out}"
    )


@audit_app.command("keygen")
def keygen(
    out: Annotated[Path, typer.Option("--out", help="The private key's file (PEM, mode 0600).")],
    public: Annotated[
        Path | None,
        typer.Option("--public", help="The public key's file (default: beside it, .pub.pem)."),
    ] = None,
) -> None:
    """Make an Ed25519 key pair for signing checkpoints; never overwrites a file."""
    from registry.keys import generate_key_pair

    public_path, identifier = generate_key_pair(out, public)
    typer.echo(f"private key {out}, public key {public_path} (key id {identifier})")
