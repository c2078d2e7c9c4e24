"""`capgate report PLAN [--decision ID | --principal NAME] [--output FILE]`: a self-contained
HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report(
    plan: Annotated[str, typer.Argument(help="Plan reference: name, name@vN or sha256:...")],
    decision: Annotated[
        str | None,
        typer.Option(
            "--decision",
            help="The decision to report on (an id from `capgate gate list`). Default: the "
            "plan version's latest decision by a principal holding the pipeline role (an API "
            "token or --auth-config says who does), else its latest.",
            show_default=False,
        ),
    ] = None,
    principal: Annotated[
        str | None,
        typer.Option(
            "--principal",
            help="Report on the plan version's latest decision by this principal (as "
            "`capgate gate list` shows it).",
            show_default=False,
        ),
    ] = None,
    auth_config: Annotated[
        Path | None,
        typer.Option(
            "--auth-config",
            envvar="CAPGATE_AUTH_CONFIG",
            help="The server's auth configuration: its grants of the pipeline role on the "
            "subject tell a release pipeline's decisions from exploratory checks.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The HTML file to write (its folder is created). Default: out/PLAN.html, "
            "PLAN the plan's name.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML report on PLAN: the verdict and every violation, the
    plan against the planner's recomputation, latency, failure-scenario and warm-up
    charts, the evidence and its freshness, the calibration, and every input's digest with
    the audit event that recorded the decision. Read-only: it runs no gate check and stores
    nothing (without a decision the report says so). Local registry only.

    Which decision: the one --decision names, else --principal's latest, else the latest
    taken by a principal holding the pipeline role, so an engineer's exploratory check does
    not change a release's report; a registry that knows no roles (no API tokens, no
    --auth-config) reports on the latest. The report and the lines on stderr say which
    decision it shows, why, and name a newer one."""
    from datetime import UTC, datetime

    from cli.output import fail
    from registry.auth.config import AuthConfig
    from registry.policy.bundle import installed_revision
    from registry.records.references import parse_ref
    from registry.report.data import gather
    from registry.report.render import render_report
    from registry.settings import Settings
    from registry.staleness.thresholds import load_thresholds
    from registry.storage.database import Database

    settings = Settings.from_env()
    if settings.server:
        fail(
            "capgate report reads the registry directly; it has no --server mode: run it "
            "where the registry's database is (unset CAPGATE_SERVER)"
        )
    parse_ref(plan, loc="plan")  # a malformed reference is refused before the registry is read
    roles_config = AuthConfig.load(auth_config) if auth_config is not None else None
    from registry.wiring import install

    install()  # what a decision taken for the report runs (registry.wiring)
    database = Database(settings.database_url)
    try:
        data = gather(
            database,
            plan_ref=plan,
            decision_id=decision,
            principal=principal,
            auth_config=roles_config,
            now=datetime.now(UTC),
            limits=load_thresholds(),
            current_revision=installed_revision(),
        )
    finally:
        database.engine.dispose()
    html = render_report(data)
    target = output or Path("out") / f"{data.plan.name}.html"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        fail(f"{target}: cannot write the report: {exc.strerror or exc}")
    size_kib = len(html.encode("utf-8")) / 1024
    typer.echo(f"{data.verdict} {data.plan_ref}: report written to {target} ({size_kib:,.0f} KiB)")
    # Which decision, on stderr: stdout stays the one line a script reads.
    for sentence in data.choice.sentences() if data.choice else []:
        typer.echo(f"note: {sentence}", err=True)
