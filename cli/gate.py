"""`capgate gate check|show|list|recheck|verify|public-key`: the gate's commands.

The reports `check` and `show` write are in cli.gate_reports; `capgate plan size`, which
shows the planner's progress as `check` does, is in cli.plan_size.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.gate_reports import (
    FormatOpt,
    JsonFormatOpt,
    OutputOpt,
    PlanFileOpt,
    ReportOpt,
    asked_reports,
    emit_reports,
    error_line,
)
from cli.options import JsonOpt, ServerOpt, instant
from cli.output import emit_json, emit_more, emit_table
from cli.plan_size import planner_progress

if TYPE_CHECKING:
    from registry.gate.outcome import DecisionLike
    from registry.gate.views import DecisionView


gate_app = typer.Typer(
    help="Policy decisions on capacity plans. Exit 0 allow, 1 deny, 2 error.",
    no_args_is_help=True,
)


class EngineChoice(StrEnum):
    embedded = "embedded"
    opa = "opa"
    both = "both"


@gate_app.command("check")
def check(
    plan: Annotated[str, typer.Argument(help="Plan reference: name, name@vN or sha256:...")],
    output_format: FormatOpt = None,
    json_out: JsonFormatOpt = False,
    output: OutputOpt = None,
    report: ReportOpt = None,
    plan_file: PlanFileOpt = None,
    manifests: Annotated[
        list[str] | None,
        typer.Option(
            "--manifests",
            help="Kubernetes manifests that ship the plan (files, folders or - for stdin; "
            "repeatable): every plan field they state must agree with the plan, or the "
            "manifests_consistent policy denies it, naming file and line.",
        ),
    ] = None,
    policy_release: Annotated[
        str | None,
        typer.Option(
            "--policy-release",
            help="Pin the policy release (NAME@vN) this check must run under: exit 2 unless "
            "it is the approved release in force.",
        ),
    ] = None,
    engine: Annotated[
        EngineChoice | None,
        typer.Option(
            "--engine",
            help="embedded, opa or both (default: CAPGATE_POLICY_ENGINE). both decides on "
            "the embedded engine and on the OPA server at CAPGATE_OPA_URL and is an error "
            "(exit 2) when the two disagree.",
            show_default=False,
        ),
    ] = None,
    server: ServerOpt = None,
) -> None:
    """Evaluate every policy on PLAN, store the decision, write each report and exit with
    its code (an error that leaves no decision is written in each report too)."""
    from cli.output import fail

    reports = asked_reports(output_format, output, json_out, report)
    if engine is not None and server:
        fail("--engine chooses a local check's engine; with --server the server's decides")
    if engine is not None:
        import os

        os.environ["CAPGATE_POLICY_ENGINE"] = engine.value
    try:
        decision = _decide(plan, manifests, policy_release, server)
    except (typer.Exit, typer.Abort, typer.TyperException):
        # Typer's own (it vendors click since 0.28: the click package, which a bare
        # install lacks, raises other classes): usage errors and exits, not failures.
        raise
    except Exception as exc:
        # No decision: the reports say why the pipeline stopped; the error itself is
        # raised on, for the one line on stderr and exit 2 (cli.main.run).
        from registry.gate.undecided import Undecided

        emit_reports(Undecided(plan, error_line(exc)), reports, plan_file, verdict=False)
        raise
    emit_reports(decision, reports, plan_file, verdict=True)
    raise typer.Exit(decision.outcome.exit_code)


def _decide(
    plan: str, manifests: list[str] | None, policy_release: str | None, server: str | None
) -> DecisionLike:
    # Manifests are read here, where the files are, and before anything is asked of the
    # registry: one that cannot be read is an error (exit 2) and no decision is stored.
    if server:
        from cli.remote_gate import check_remote
        from registry.settings import Settings

        # The thin path: one request, no ORM, schema or planner imported (pipeline speed);
        # the server validates what the manifests state.
        sent = None
        if manifests:
            from registry.manifests.stated import stated_document

            sent = stated_document(manifests)
        return check_remote(
            server, Settings.from_env().token(), plan, sent, policy_release=policy_release
        )
    from cli.backend import open_backend

    stated = None
    if manifests:
        from registry.manifests.consistency import stated_fields

        stated = stated_fields(manifests)
    backend = open_backend(None)
    with planner_progress(backend, terminal_only=True):
        return backend.gate_check(plan, stated, policy_release)


@gate_app.command("show")
def show(
    decision_id: Annotated[str, typer.Argument(help="Decision id (a UUID).")],
    output_format: FormatOpt = None,
    json_out: JsonFormatOpt = False,
    output: OutputOpt = None,
    report: ReportOpt = None,
    plan_file: PlanFileOpt = None,
    server: ServerOpt = None,
) -> None:
    """Show a stored decision: outcome, violations, waivers and the digests of its inputs;
    in any report format, as `gate check` wrote it (exit 0: the decision was read)."""
    from cli.backend import open_backend

    reports = asked_reports(output_format, output, json_out, report)
    decision = open_backend(server).get_decision(decision_id)
    emit_reports(decision, reports, plan_file, verdict=False, text=_shown_text)


def _shown_text(decision: DecisionView) -> str:
    from registry.gate.report import render_text

    lines = [
        render_text(decision),
        f"  asked by {decision.principal} at {decision.created_at.isoformat()}",
    ]
    if decision.needs_recheck:
        lines.append(
            "  needs re-evaluation: the policy bundle changed since (capgate gate recheck)"
        )
    return "\n".join(lines)


class OutcomeFilter(StrEnum):
    allow = "allow"
    deny = "deny"
    error = "error"


@gate_app.command("list")
def list_decisions(
    plan: Annotated[str | None, typer.Option(help="Only this plan name.")] = None,
    outcome: Annotated[OutcomeFilter | None, typer.Option(help="Only this outcome.")] = None,
    principal: Annotated[str | None, typer.Option(help="Only decisions asked by.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Decisions at or after this instant (ISO 8601, with zone).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Decisions before this instant.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    offset: Annotated[int, typer.Option(min=0, max=10_000)] = 0,
    cursor: Annotated[
        str | None, typer.Option(help="Start after this position (a page's next cursor).")
    ] = None,
    total: Annotated[bool, typer.Option("--total", help="Count every match.")] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The audit trail of decisions, newest first."""
    from cli.backend import open_backend
    from registry.gate.views import Outcome

    filters: dict[str, Any] = {
        "plan": plan,
        "outcome": Outcome(outcome.value) if outcome else None,
        "principal": principal,
        "since": instant("since", since) if since else None,
        "until": instant("until", until) if until else None,
        "cursor": cursor,
        "total": total or None,
    }
    page = open_backend(server).list_decisions(filters, limit=limit, offset=offset)
    if json_out:
        emit_json(page)
        return
    emit_table(
        ("DECISION", "PLAN", "OUTCOME", "VIOLATIONS", "BY", "AT"),
        [
            (
                d.id,
                d.plan,
                d.outcome.value,
                len(d.violations),
                d.principal,
                d.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            )
            for d in page.items
        ],
    )
    emit_more(page.next_cursor, page.total)


@gate_app.command("recheck")
def recheck(
    all_plans: Annotated[
        bool, typer.Option("--all", help="Every plan whose last allow predates the bundle.")
    ] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-run earlier allow decisions under the current policy bundle; report what changed."""
    from cli.backend import open_backend
    from cli.output import fail

    if not all_plans:
        fail("say which decisions to re-evaluate: --all")
    report = open_backend(server).recheck_all()
    if json_out:
        emit_json(report)
    else:
        for item in report.rechecked:
            change = "changed" if item.changed else "unchanged"
            typer.echo(
                f"{item.plan}: {item.previous_outcome.value} -> {item.decision.outcome.value} "
                f"({change}; decision {item.decision.id})"
            )
            for added in item.new_violations:
                typer.echo(f"  + {added}")
            for resolved in item.resolved_violations:
                typer.echo(f"  - {resolved}")
        typer.echo(
            f"{len(report.rechecked)} re-evaluated, {len(report.up_to_date)} up to date "
            f"(bundle {report.bundle_revision[:19]})"
        )
    worst = max((i.decision.outcome.exit_code for i in report.rechecked), default=0)
    raise typer.Exit(worst)


def _read_envelope(decision_or_file: str, server: str | None) -> tuple[Any, str]:
    """The envelope JSON from a file, else fetched by decision id; and where it came from."""
    import json
    import uuid

    from cli.output import fail

    path = Path(decision_or_file)
    if not path.is_file():
        try:
            uuid.UUID(decision_or_file)
        except ValueError:
            fail(f"{decision_or_file}: file not found (and not a decision id)")
        from cli.backend import open_backend

        envelope = open_backend(server).get_attestation(decision_or_file)
        return envelope, f"decision {decision_or_file}"
    try:
        return json.loads(path.read_text(encoding="utf-8")), str(path)
    except OSError as exc:
        fail(f"{path}: cannot read: {exc.strerror}")
    except (UnicodeDecodeError, ValueError):
        fail(f"{path}: not JSON (a DSSE envelope is expected)")
    raise AssertionError("unreachable")  # fail() always exits


@gate_app.command("verify")
def verify(
    decision_or_file: Annotated[
        str,
        typer.Argument(
            metavar="DECISION_OR_FILE",
            help="An attestation file (DSSE envelope JSON), or a decision id whose "
            "attestation is fetched from the registry.",
        ),
    ],
    key: Annotated[
        Path,
        typer.Option(
            "--key", help="Public key (PEM) to verify with, as `capgate gate public-key` gives."
        ),
    ],
    plan_digest: Annotated[
        str | None,
        typer.Option("--plan-digest", help="Fail unless the decision is about this plan digest."),
    ] = None,
    expect_outcome: Annotated[
        OutcomeFilter | None,
        typer.Option("--expect-outcome", help="Fail unless the decision's outcome is this."),
    ] = None,
    server: ServerOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the verified statement as JSON.")
    ] = False,
) -> None:
    """Check a signed decision offline: signature, in-toto statement, expectations.

    Exit 0 when it verifies, 1 when the signature or an expectation fails, 2 when the
    input cannot be read.
    """
    from cli.output import fail
    from registry.attestation.dsse import AttestationRejected, EnvelopeUnreadable
    from registry.attestation.statement import digest_hex
    from registry.errors import InvalidInput
    from registry.keys import key_id, load_public_key

    try:
        verifying_key = load_public_key(key)
        if plan_digest is not None:
            digest_hex(plan_digest)
    except InvalidInput as exc:
        fail(exc.one_line())
    envelope, source = _read_envelope(decision_or_file, server)
    from registry.attestation.verify import verify_attestation

    try:
        verified = verify_attestation(
            envelope,
            verifying_key,
            plan_digest=plan_digest,
            expect_outcome=expect_outcome.value if expect_outcome else None,
        )
    except EnvelopeUnreadable as exc:
        fail(f"{source}: not a DSSE envelope: {exc.message}")
    except AttestationRejected as exc:
        fail(f"{source}: not verified: {exc.message}", code=1)
    if json_out:
        emit_json(verified.statement)
        return
    typer.echo(f"verified  {verified.plan}  {verified.outcome}")
    typer.echo(f"  plan digest  {verified.plan_digest}")
    typer.echo(f"  decision     {verified.decision_id}")
    typer.echo(f"  bundle       {verified.bundle_revision}")
    typer.echo(f"  decided at   {verified.created_at}")
    typer.echo(f"  signed by    {key_id(verifying_key)}")


@gate_app.command("public-key")
def public_key(server: ServerOpt = None) -> None:
    """Print the public key (PEM) the registry signs decisions with, for `gate verify`."""
    from cli.backend import open_backend

    typer.echo(open_backend(server).attestation_public_key(), nl=False)
