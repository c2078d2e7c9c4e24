"""`capgate evidence withdraw REF --reason TEXT` and `capgate evidence withdrawals`.

Both run on the embedded registry or against a server (--server), with the same views.
Heavy imports stay inside the functions: the CLI must start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.evidence_lifecycle import Withdrawal
    from registry.records.views import Page

LimitOpt = Annotated[int, typer.Option("--limit", min=1, max=500, help="Page size.")]
OffsetOpt = Annotated[int, typer.Option("--offset", min=0, help="Items to skip.")]


def withdraw(backend: Backend, ref: str, reason: str) -> Withdrawal:
    """Withdraw one evidence version on either backend."""
    from cli.backend import LocalBackend, RemoteBackend
    from registry.evidence_lifecycle import Withdrawal

    if isinstance(backend, LocalBackend):
        from registry.evidence_lifecycle import withdraw as withdraw_in_registry

        return backend.database.write(
            lambda ctx: withdraw_in_registry(ctx, ref=ref, reason=reason),
            principal=backend.principal,
        )
    if isinstance(backend, RemoteBackend):
        from urllib.parse import quote

        data = backend._request(
            "POST", f"/v1/evidence/{quote(ref, safe='')}/withdrawals", json={"reason": reason}
        )
        return Withdrawal.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def list_withdrawals(backend: Backend, *, limit: int, offset: int) -> Page[Withdrawal]:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.evidence_lifecycle import Withdrawal
    from registry.records.views import Page

    if isinstance(backend, LocalBackend):
        from registry.evidence_lifecycle import list_withdrawals as list_in_registry

        with backend.database.reading() as session:
            return list_in_registry(session, limit=limit, offset=offset)
    if isinstance(backend, RemoteBackend):
        data = backend._request(
            "GET", "/v1/evidence/withdrawals", params={"limit": limit, "offset": offset}
        )
        return Page[Withdrawal].model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def _when(withdrawal: Withdrawal) -> str:
    return withdrawal.withdrawn_at.strftime("%Y-%m-%d %H:%M")


def extend_lifecycle(group: typer.Typer) -> None:
    """Add `withdraw` and `withdrawals` to the evidence group."""

    @group.command("withdraw")
    def withdraw_(
        ref: Annotated[
            str, typer.Argument(help="Evidence: name (its latest version), name@vN or digest.")
        ],
        reason: Annotated[
            str, typer.Option("--reason", help="Why it is withdrawn (kept in the audit trail).")
        ],
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Withdraw one evidence version: it then supports nothing and blocks nothing.

        The record stays (nothing is deleted); the withdrawal records who, when and why,
        with an audit event. A version can be withdrawn once.
        """
        from cli.backend import open_backend

        done = withdraw(open_backend(server), ref, reason)
        if json_out:
            emit_json(done)
            return
        typer.echo(f"withdrew {done.evidence}  by {done.withdrawn_by} at {_when(done)}")
        typer.echo(f"reason: {done.reason}")

    @group.command("withdrawals")
    def withdrawals(
        server: ServerOpt = None,
        json_out: JsonOpt = False,
        limit: LimitOpt = 50,
        offset: OffsetOpt = 0,
    ) -> None:
        """List withdrawn evidence versions, newest first: who withdrew them, when, why."""
        from cli.backend import open_backend

        page = list_withdrawals(open_backend(server), limit=limit, offset=offset)
        if json_out:
            emit_json(page)
            return
        if page.total == 0:
            typer.echo("no withdrawn evidence")
            return
        emit_table(
            ("REF", "WITHDRAWN", "BY", "REASON"),
            [(w.evidence, _when(w), w.withdrawn_by, w.reason) for w in page.items],
        )
        shown = page.offset + len(page.items)
        if page.total > shown:
            typer.echo(f"({page.total} in all; use --offset to see more)")
