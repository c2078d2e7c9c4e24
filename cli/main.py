"""The `capgate` command. Exit codes: 0 success or allow, 1 deny, 2 usage or input error."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from cli.audit import audit_app
from cli.db import db_app
from cli.evidence_cmds import extend_evidence, extend_workload
from cli.evidence_lifecycle import extend_lifecycle
from cli.gate import gate_app, size
from cli.records import record_commands

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
app.add_typer(
    record_commands("waiver", "Waivers: owned, expiring exceptions to one policy for one plan."),
    name="waiver",
)
plan_app = record_commands("plan", "Capacity plans: replicas, serving config, admission, drain.")
plan_app.command("size")(size)
app.add_typer(plan_app, name="plan")
app.add_typer(gate_app, name="gate")
app.add_typer(audit_app, name="audit")


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
) -> None:
    """Serve the REST API (OpenAPI at /docs) on the configured database."""
    import uvicorn

    from registry.settings import Settings
    from registry.storage.database import Database

    settings = Settings.from_env()
    # Refuse to start on a database at the wrong schema, with the same one-line message.
    Database(settings.database_url).check_schema()
    os.environ.setdefault("CAPGATE_DATABASE_URL", settings.database_url)
    uvicorn.run(
        "registry.api.server:app", host=host, port=port, workers=workers, log_level="warning"
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
