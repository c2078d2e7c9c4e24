"""The `capgate` command. Exit codes: 0 success or allow, 1 deny, 2 usage or input error."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.audit import audit_app
from cli.db import db_app
from cli.evidence_cmds import extend_evidence, extend_workload
from cli.evidence_lifecycle import extend_lifecycle
from cli.gate import gate_app, size
from cli.manifests import from_manifests
from cli.records import record_commands
from cli.tokens import token_app
from cli.waivers import extend_waivers

app = typer.Typer(
    name="capgate",
    help="Decision gate and evidence registry for LLM serving capacity plans.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(db_app, name="db")
workload_app = record_commands(
    "workload", "Workload profiles: token-work distributions per traffic class."
)
extend_workload(workload_app)
app.add_typer(workload_app, name="workload")
app.add_typer(
    record_commands("provider", "Provider profiles: model, accelerator, runtime, zones, warm-up."),
    name="provider",
)
evidence_app = record_commands(
    "evidence",
    "Load-test evidence measured against a workload and provider.",
    list_command=False,  # evidence has its own `list`, with --stale
)
extend_evidence(evidence_app)
extend_lifecycle(evidence_app)
app.add_typer(evidence_app, name="evidence")
waiver_app = record_commands(
    "waiver", "Waivers: owned, expiring exceptions to one policy for one plan (four eyes)."
)
extend_waivers(waiver_app)
app.add_typer(waiver_app, name="waiver")
plan_app = record_commands("plan", "Capacity plans: replicas, serving config, admission, drain.")
plan_app.command("size")(size)
plan_app.command("from-manifests")(from_manifests)
app.add_typer(plan_app, name="plan")
app.add_typer(gate_app, name="gate")
app.add_typer(audit_app, name="audit")
app.add_typer(token_app, name="token")


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    auth_config: Annotated[
        Path | None,
        typer.Option(
            "--auth-config",
            envvar="CAPGATE_AUTH_CONFIG",
            help="Trusted OIDC issuers and what they grant (YAML); API tokens always work.",
        ),
    ] = None,
    insecure_local: Annotated[
        bool,
        typer.Option(
            "--insecure-local",
            help="No credential needed: requests act as you. Loopback only, one worker.",
        ),
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="debug, info (one access line per request), warning.")
    ] = "warning",
) -> None:
    """Serve the REST API (OpenAPI at /docs) on the configured database."""
    import logging

    import uvicorn

    from cli.output import fail
    from registry.auth.authenticator import Authenticator
    from registry.auth.config import AuthConfig
    from registry.settings import Settings, default_principal
    from registry.storage.database import Database

    level = log_level.lower()
    if level not in {"debug", "info", "warning", "error"}:
        fail(f"--log-level: {log_level!r} is not one of debug, info, warning, error")
    if auth_config is None and not insecure_local:
        fail(
            "capgate serve needs --auth-config (CAPGATE_AUTH_CONFIG): who may call it; "
            "for a try-out on this machine only, --insecure-local"
        )
    if insecure_local and host not in LOOPBACK:
        fail(f"--insecure-local serves loopback only, not {host}")
    if auth_config is not None:
        AuthConfig.load(auth_config)  # a bad file is refused before anything binds
    logging.basicConfig(level=level.upper(), format="%(message)s", stream=sys.stderr)
    settings = Settings.from_env()
    database = Database(settings.database_url)
    # Refuse to start on a database at the wrong schema, with the same one-line message.
    database.check_schema()
    if insecure_local:
        from registry.api.app import create_app, settle_heap

        local = Authenticator(local_subject=f"local:{default_principal()}")
        app = create_app(database, settings, local)
        settle_heap()
        # capgate's own access line names the principal: uvicorn's would not.
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=level,
            access_log=False,
        )
        return
    os.environ.setdefault("CAPGATE_DATABASE_URL", settings.database_url)
    if auth_config is not None:
        os.environ["CAPGATE_AUTH_CONFIG"] = str(auth_config.resolve())
    uvicorn.run(
        "registry.api.server:app",
        host=host,
        port=port,
        workers=workers,
        log_level=level,
        access_log=False,
    )


def run() -> None:
    """Console entry point: maps capgate's errors to one line and an exit code."""
    from click.exceptions import ClickException

    try:
        app()
    except ClickException:
        raise
    except Exception as exc:
        from registry.errors import CapgateError, InvalidInput

        if isinstance(exc, InvalidInput):
            print(f"capgate: error: {exc.one_line()}", file=sys.stderr)
            sys.exit(exc.exit_code)
        if isinstance(exc, CapgateError):
            print(f"capgate: error: {exc.message}", file=sys.stderr)
            sys.exit(exc.exit_code)
        if os.environ.get("CAPGATE_DEBUG"):
            raise
        print(
            f"capgate: internal error: {type(exc).__name__}: {exc} "
            "(set CAPGATE_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        sys.exit(2)


if __name__ == "__main__":
    run()
