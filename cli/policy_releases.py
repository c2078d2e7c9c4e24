"""`capgate policy release submit|approve|list|show|export`: the policy in force, governed.

A release is the bundle's files as submitted; a second policy-admin approves it and it
is in force. From the first approval on, a gate check runs only under the release in
force (registry.policy.releases).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json, emit_table

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.gate.release_approval import ReleaseApproval
    from registry.policy.releases import PolicyReleaseView

policy_app = typer.Typer(help="Policy releases: the bundle the gate decides under.")
release_app = typer.Typer(
    help="Submit, approve (a second policy-admin), list, show and export policy releases.",
    no_args_is_help=True,
)
policy_app.add_typer(release_app, name="release")


def _files(source: Path | None) -> dict[str, str]:
    from registry.policy.bundle import policies_root, read_bundle

    return read_bundle(source or policies_root()).files()


def _submit(backend: Backend, name: str, notes: str, files: dict[str, str]) -> PolicyReleaseView:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.policy.releases import PolicyReleaseView, bundle_from_files, submit

    if isinstance(backend, LocalBackend):
        bundle = bundle_from_files(files)
        return backend.database.write(
            lambda ctx: submit(ctx, name=name, notes=notes, bundle=bundle),
            principal=backend.principal,
        )
    if isinstance(backend, RemoteBackend):
        body = {"name": name, "notes": notes, "files": files}
        return PolicyReleaseView.model_validate(
            backend._request("POST", "/v1/policy-releases", json=body)
        )
    raise TypeError(f"unknown backend {type(backend).__name__}")


def _approve(backend: Backend, ref: str, comment: str | None) -> ReleaseApproval:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.gate.release_approval import ReleaseApproval, approve_and_recheck

    if isinstance(backend, LocalBackend):
        now, limits = backend._now_and_limits()
        backend.database.ensure_schema()
        return approve_and_recheck(
            backend.database,
            backend._engine,
            ref=ref,
            comment=comment,
            principal=backend.principal,
            limits=limits,
            now=now,
        )
    if isinstance(backend, RemoteBackend):
        data = backend._request(
            "POST",
            f"/v1/policy-releases/{quote(ref, safe='')}/approvals",
            json={"comment": comment},
        )
        return ReleaseApproval.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def _read(backend: Backend, ref: str | None) -> Any:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.policy.releases import PolicyReleaseView, get_release, list_releases

    if isinstance(backend, LocalBackend):
        backend.database.ensure_schema()
        with backend.database.reading() as session:
            return list_releases(session) if ref is None else get_release(session, ref)
    if isinstance(backend, RemoteBackend):
        if ref is None:
            rows = backend._request("GET", "/v1/policy-releases")
            return [PolicyReleaseView.model_validate(row) for row in rows]
        found = backend._request("GET", f"/v1/policy-releases/{quote(ref, safe='')}")
        return PolicyReleaseView.model_validate(found)
    raise TypeError(f"unknown backend {type(backend).__name__}")


@release_app.command("submit")
def submit_(
    name: Annotated[str, typer.Argument(help="The release series, e.g. capgate-policies.")],
    notes: Annotated[str, typer.Option("--notes", help="What changed and why.")] = "",
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="A policies directory (modules and data.json); default the installed one.",
        ),
    ] = None,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Submit the bundle as the next version of NAME; in force once another approves it."""
    from cli.backend import open_backend

    done = _submit(open_backend(server), name, notes, _files(source))
    if json_out:
        emit_json(done)
        return
    typer.echo(
        f"submitted {done.ref} ({done.bundle_revision}, {len(done.files)} files) as "
        f"{done.submitted_by}: pending approval by another policy-admin"
    )


@release_app.command("approve")
def approve_(
    ref: Annotated[str, typer.Argument(help="The release: NAME@vN.")],
    comment: Annotated[
        str | None, typer.Option("--comment", help="Why you agree (kept in the audit trail).")
    ] = None,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Put a release someone else submitted in force, then recheck the plans it changes."""
    from cli.backend import open_backend

    done = _approve(open_backend(server), ref, comment)
    if json_out:
        emit_json(done)
        return
    release = done.release
    typer.echo(
        f"approved {release.ref} (submitted by {release.submitted_by}) as "
        f"{release.approved_by}: in force"
    )
    if done.note:
        typer.echo(done.note)
    if done.recheck is not None:
        changed = [item for item in done.recheck.rechecked if item.changed]
        typer.echo(
            f"rechecked {len(done.recheck.rechecked)} plans, {len(changed)} changed outcome "
            f"or violations, {len(done.recheck.up_to_date)} up to date"
        )
        for item in changed:
            typer.echo(
                f"  {item.plan}: {item.previous_outcome.value} -> "
                f"{item.decision.outcome.value} (decision {item.decision.id})"
            )


@release_app.command("list")
def list_(server: ServerOpt = None, json_out: JsonOpt = False) -> None:
    """Every release: version, revision, who submitted and approved it, which is in force."""
    from cli.backend import open_backend

    rows: list[PolicyReleaseView] = _read(open_backend(server), None)
    if json_out:
        emit_json(rows)
        return
    emit_table(
        ["release", "revision", "submitted by", "approved by", "in force"],
        [
            [
                r.ref,
                r.bundle_revision[:19],
                r.submitted_by,
                r.approved_by or "(pending)",
                "yes" if r.in_force else "",
            ]
            for r in rows
        ],
    )


@release_app.command("show")
def show_(
    ref: Annotated[str, typer.Argument(help="The release: NAME@vN.")],
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One release: its revision, files, notes and approval."""
    from cli.backend import open_backend

    found: PolicyReleaseView = _read(open_backend(server), ref)
    if json_out:
        emit_json(found)
        return
    typer.echo(f"{found.ref}  {found.bundle_revision}  {'in force' if found.in_force else ''}")
    typer.echo(f"submitted by {found.submitted_by} at {found.submitted_at.isoformat()}")
    approval = (
        f"approved by {found.approved_by} at {found.approved_at.isoformat()}"
        if found.approved_by and found.approved_at
        else "pending approval"
    )
    typer.echo(approval)
    if found.notes:
        typer.echo(f"notes: {found.notes}")
    typer.echo("files: " + ", ".join(found.files))


@release_app.command("export")
def export_(
    ref: Annotated[str, typer.Argument(help="The release: NAME@vN.")],
    target: Annotated[Path, typer.Argument(help="An empty or new directory to write it to.")],
) -> None:
    """Write a release's files (verified against its revision) to install them."""
    from cli.backend import LocalBackend, open_backend
    from cli.output import fail
    from registry.policy.releases import release_bundle, release_row

    backend = open_backend(None)
    assert isinstance(backend, LocalBackend)
    if target.exists() and any(target.iterdir()):
        fail(f"{target} is not empty: export writes a whole bundle into a new directory")
    backend.database.ensure_schema()
    with backend.database.reading() as session:
        bundle = release_bundle(release_row(session, ref))
    for name, text in bundle.files().items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {ref} ({bundle.revision}, {len(bundle.files())} files) to {target}")
