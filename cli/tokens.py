"""`capgate token create|list|revoke`: static API tokens for CI systems and scripts.

On the embedded registry these act directly on its database (whoever can write the
database file administers it); against a server (--server) they need the admin role.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table, fail

if TYPE_CHECKING:
    from datetime import timedelta

    from registry.auth.tokens import IssuedToken, TokenView

token_app = typer.Typer(help="API tokens: hashed, scoped to roles and teams, expiring.")

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([hd])$")


def _lifetime(text: str) -> timedelta:
    from datetime import timedelta

    match = _DURATION.match(text.strip())
    if match is None:
        fail(f"--expires-in: {text!r} is not a duration such as 90d or 12h")
        raise AssertionError  # fail() exits
    value, unit = float(match.group(1)), match.group(2)
    return timedelta(days=value) if unit == "d" else timedelta(hours=value)


@token_app.command("create")
def create(
    subject: Annotated[str, typer.Option("--subject", help="Who the token speaks for.")],
    role: Annotated[
        list[str],
        typer.Option(
            "--role",
            help="submitter, pipeline, approver, auditor, admin or policy-admin (repeatable).",
        ),
    ],
    team: Annotated[
        list[str] | None, typer.Option("--team", help="Owner team it may publish for.")
    ] = None,
    expires_in: Annotated[str, typer.Option("--expires-in", help="e.g. 90d, 12h.")] = "90d",
    description: Annotated[str | None, typer.Option("--description")] = None,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create a token. Its secret is printed once, on stdout; only its hash is kept."""
    from cli.backend import LocalBackend, RemoteBackend, open_backend
    from registry.auth.identity import parse_roles
    from registry.auth.tokens import IssuedToken, TokenRequest, create_token

    lifetime = _lifetime(expires_in)
    request = TokenRequest(
        subject=subject,
        roles=parse_roles(role, field="--role"),
        teams=frozenset(team or []),
        lifetime=lifetime,
        description=description,
    )
    backend = open_backend(server)
    issued: IssuedToken
    if isinstance(backend, LocalBackend):
        issued = backend.database.write(
            lambda ctx: create_token(ctx, request), principal=backend.principal
        )
    elif isinstance(backend, RemoteBackend):
        body = {
            "subject": subject,
            "roles": sorted(r.value for r in request.roles),
            "teams": sorted(request.teams),
            "expires_in_days": lifetime.total_seconds() / 86400,
            "description": description,
        }
        issued = IssuedToken.model_validate(backend._request("POST", "/v1/tokens", json=body))
    else:
        raise TypeError(f"unknown backend {type(backend).__name__}")
    if json_out:
        emit_json(issued)
        return
    typer.echo(issued.token)
    typer.echo(
        f"token {issued.info.id} for {issued.info.subject} "
        f"({', '.join(issued.info.roles)}), expires {issued.info.expires_at:%Y-%m-%d %H:%M}Z: "
        "store it now, it is not shown again",
        err=True,
    )


def _tokens(server: str | None, include_revoked: bool) -> list[TokenView]:
    from cli.backend import LocalBackend, RemoteBackend, open_backend
    from registry.auth.tokens import TokenView, list_tokens

    backend = open_backend(server)
    if isinstance(backend, LocalBackend):
        with backend.database.reading() as session:
            return list_tokens(session, include_revoked=include_revoked)
    if isinstance(backend, RemoteBackend):
        data = backend._request(
            "GET", "/v1/tokens", params={"include_revoked": str(include_revoked).lower()}
        )
        return [TokenView.model_validate(item) for item in data]
    raise TypeError(f"unknown backend {type(backend).__name__}")


@token_app.command("list")
def list_(
    include_revoked: Annotated[bool, typer.Option("--all", help="Revoked tokens too.")] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List tokens (never their secrets)."""
    tokens = _tokens(server, include_revoked)
    if json_out:
        emit_json([t.model_dump(mode="json") for t in tokens])
        return
    if not tokens:
        typer.echo("no API tokens")
        return
    emit_table(
        ("ID", "SUBJECT", "ROLES", "TEAMS", "EXPIRES", "REVOKED"),
        [
            (
                t.id,
                t.subject,
                ",".join(t.roles),
                ",".join(t.teams) or "-",
                f"{t.expires_at:%Y-%m-%d}",
                f"{t.revoked_at:%Y-%m-%d} by {t.revoked_by}" if t.revoked_at else "-",
            )
            for t in tokens
        ],
    )


@token_app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (from `token list`).")],
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Revoke a token: it stops working at once."""
    from urllib.parse import quote

    from cli.backend import LocalBackend, RemoteBackend, open_backend
    from registry.auth.tokens import TokenView, revoke_token

    backend = open_backend(server)
    if isinstance(backend, LocalBackend):
        done = backend.database.write(
            lambda ctx: revoke_token(ctx, token_id), principal=backend.principal
        )
    elif isinstance(backend, RemoteBackend):
        done = TokenView.model_validate(
            backend._request("POST", f"/v1/tokens/{quote(token_id, safe='')}/revocation")
        )
    else:
        raise TypeError(f"unknown backend {type(backend).__name__}")
    if json_out:
        emit_json(done)
        return
    typer.echo(f"revoked {done.id} ({done.subject})")
