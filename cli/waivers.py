"""`capgate waiver approve REF` and `capgate waiver pending`: four eyes on waivers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.gate.waiver_approvals import WaiverApproval


def approve(backend: Backend, ref: str, comment: str | None) -> WaiverApproval:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.gate.waiver_approvals import WaiverApproval
    from registry.gate.waiver_approvals import approve as approve_in_registry

    if isinstance(backend, LocalBackend):
        return backend.database.write(
            lambda ctx: approve_in_registry(ctx, ref=ref, comment=comment),
            principal=backend.principal,
        )
    if isinstance(backend, RemoteBackend):
        from urllib.parse import quote

        data = backend._request(
            "POST", f"/v1/waivers/{quote(ref, safe='')}/approvals", json={"comment": comment}
        )
        return WaiverApproval.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def pending(backend: Backend) -> list[str]:
    from cli.backend import LocalBackend, RemoteBackend

    if isinstance(backend, LocalBackend):
        from registry.gate.waiver_approvals import pending as pending_in_registry

        with backend.database.reading() as session:
            return pending_in_registry(session)
    if isinstance(backend, RemoteBackend):
        return [str(ref) for ref in backend._request("GET", "/v1/waivers/pending")]
    raise TypeError(f"unknown backend {type(backend).__name__}")


def extend_waivers(group: typer.Typer) -> None:
    @group.command("approve")
    def approve_(
        ref: Annotated[str, typer.Argument(help="Waiver: name (latest version), name@vN, digest.")],
        comment: Annotated[
            str | None, typer.Option("--comment", help="Why you agree (kept in the audit trail).")
        ] = None,
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Approve a waiver someone else requested: only then does the gate apply it."""
        from cli.backend import open_backend

        done = approve(open_backend(server), ref, comment)
        if json_out:
            emit_json(done)
            return
        typer.echo(
            f"approved {done.waiver} (requested by {done.requested_by}) as {done.approved_by}"
        )

    @group.command("pending")
    def pending_(server: ServerOpt = None, json_out: JsonOpt = False) -> None:
        """Waivers requested but not yet approved: the gate does not apply them."""
        from cli.backend import open_backend

        refs = pending(open_backend(server))
        if json_out:
            emit_json(refs)
            return
        typer.echo("\n".join(refs) if refs else "no pending waivers")
