"""The `capgate` command. Exit codes: 0 success or allow, 1 deny, 2 usage or input error."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated

import typer

ROOT = {
    "name": "capgate",
    "help": "Decision gate and evidence registry for LLM serving capacity plans.",
    "no_args_is_help": True,
    "pretty_exceptions_enable": False,
    # Typer's own: --install-completion / --show-completion for bash, zsh, fish, PowerShell.
    "add_completion": True,
    # Help is written in paragraphs: markdown reflows them to the terminal's width (the
    # default keeps each source line break, so help broke mid-sentence at 80 columns).
    "rich_markup_mode": "markdown",
}


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        typer.echo(f"capgate {version('capgate')}")
        raise typer.Exit()


def _root_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print capgate's version."
        ),
    ] = False,
) -> None:
    """Decision gate and evidence registry for LLM serving capacity plans."""


# Each group is built on first use: a command line that names one group imports and
# converts that group alone (see _app_for).
@cache
def _db() -> typer.Typer:
    from cli.db import db_app

    return db_app


@cache
def _workload() -> typer.Typer:
    from cli.observe import from_observation
    from cli.records import record_commands
    from cli.workload_from_trace import extend_workload

    group = record_commands(
        "workload", "Workload profiles: token-work distributions per traffic class."
    )
    extend_workload(group)
    group.command("from-observation")(from_observation)
    return group


@cache
def _provider() -> typer.Typer:
    from cli.records import record_commands

    return record_commands(
        "provider", "Provider profiles: model, accelerator, runtime, zones, warm-up."
    )


@cache
def _evidence() -> typer.Typer:
    from cli.evidence_cmds import extend_evidence
    from cli.evidence_lifecycle import extend_lifecycle
    from cli.records import record_commands

    group = record_commands(
        "evidence",
        "Load-test evidence measured against a workload and provider.",
        list_command=False,  # evidence has its own `list`, with --stale
    )
    extend_evidence(group)
    extend_lifecycle(group)
    return group


@cache
def _waiver() -> typer.Typer:
    from cli.records import record_commands
    from cli.waivers import extend_waivers

    group = record_commands(
        "waiver", "Waivers: owned, expiring exceptions to one policy for one plan (four eyes)."
    )
    extend_waivers(group)
    return group


@cache
def _plan() -> typer.Typer:
    from cli.manifests import from_manifests
    from cli.plan_size import size
    from cli.records import record_commands

    group = record_commands("plan", "Capacity plans: replicas, serving config, admission, drain.")
    group.command("size")(size)
    group.command("from-manifests")(from_manifests)
    return group


@cache
def _observation() -> typer.Typer:
    from cli.records import record_commands

    return record_commands(
        "observation", "Observations: production traffic read from Prometheus (capgate observe)."
    )


@cache
def _gate() -> typer.Typer:
    from cli.gate import gate_app

    return gate_app


@cache
def _audit() -> typer.Typer:
    from cli.audit import audit_app

    return audit_app


@cache
def _token() -> typer.Typer:
    from cli.tokens import token_app

    return token_app


@cache
def _policy() -> typer.Typer:
    from cli.policy_releases import policy_app

    return policy_app


@cache
def _owner() -> typer.Typer:
    from cli.owners import owner_app

    return owner_app


@cache
def _catalog() -> typer.Typer:
    from cli.catalog import catalog_app

    return catalog_app


GROUPS: dict[str, Callable[[], typer.Typer]] = {
    "db": _db,
    "workload": _workload,
    "provider": _provider,
    "evidence": _evidence,
    "waiver": _waiver,
    "plan": _plan,
    "observation": _observation,
    "gate": _gate,
    "audit": _audit,
    "token": _token,
    "policy": _policy,
    "owner": _owner,
    "catalog": _catalog,
}


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


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


def build(only: str | None = None) -> typer.Typer:
    """The command tree: every group and `serve`, or the group named ``only`` alone.

    Typer turns every command of the tree it is given into a click command (reading each
    function's signature and type hints) before it parses anything: about 30 ms for the
    whole tree, and the groups' modules cost as much again to import, together a fifth of a
    pipeline's `gate check --server`. A command line that starts with a group's name needs
    that group alone; its usage lines and errors read the same.
    """
    root = typer.Typer(**ROOT)  # type: ignore[arg-type]
    root.callback()(_root_options)
    for name, make in GROUPS.items():
        if only is None or name == only:
            root.add_typer(make(), name=name)
    if only is None:
        from cli.observe import observe
        from cli.report import report
        from cli.validate import validate

        root.command("observe")(observe)
        root.command("report")(report)
        root.command("serve")(serve)
        root.command("validate")(validate)
    return root


def _app_for(args: list[str]) -> typer.Typer:
    return build(args[0] if args and args[0] in GROUPS else None)


def __getattr__(name: str) -> typer.Typer:
    # `from cli.main import app` (tests drive the whole tree through CliRunner).
    if name == "app":
        return build()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Top-level modules of the `server` extra (pyproject.toml): a thin install (the bare
# package, for `--server`) lacks them, and a command that needs one says how to get it.
SERVER_MODULES = frozenset(
    {
        "sqlalchemy", "alembic", "pydantic", "pydantic_settings", "fastapi", "uvicorn",
        "httpx", "psycopg", "opa_client", "opapywasm", "wasmtime", "multipart",
        "python_multipart", "numpy", "orjson", "matplotlib", "jinja2", "jwt", "cryptography",
    }
)  # fmt: skip


def run() -> None:
    """Console entry point: maps capgate's errors to one line and an exit code (one JSON
    object on stderr when the command line asks for JSON: cli.output)."""
    from cli.output import ask_json_errors, json_asked_in

    args = sys.argv[1:]
    as_json = json_asked_in(args)
    ask_json_errors(as_json)
    try:
        # Named, not taken from argv[0]: usage lines and the completion script say
        # `capgate` however it was started (`python -m cli.main` in the tests).
        if not as_json:
            # Typer runs in standalone mode: it shows its own usage errors and exits (2)
            # itself, so whatever reaches the handlers below is capgate's.
            _app_for(args)(prog_name="capgate")
        else:
            # Usage errors come back here, to be said in JSON too; an exit code is returned.
            code = _app_for(args)(prog_name="capgate", standalone_mode=False)
            sys.exit(code if isinstance(code, int) else 0)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in SERVER_MODULES:
            raise
        _error(
            "MissingDependency",
            f"this command needs capgate's server dependencies (no module {exc.name!r}): "
            "pip install 'capgate[server]'; the bare package runs only "
            "`capgate gate check PLAN --server URL`",
            as_json,
        )
        sys.exit(2)
    except typer.Abort:
        # Only without standalone mode (as_json): Ctrl-D at a prompt, as typer exits.
        _error("Aborted", "aborted", as_json, code=1)
        sys.exit(1)
    except typer.TyperException as exc:
        # Only without standalone mode (as_json): a usage error, e.g. an unknown option.
        from cli.output import error_document, print_error_document

        param = getattr(exc, "param", None)
        opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
        loc = opts[0] if opts else getattr(param, "human_readable_name", "") or ""
        problems = [(loc, exc.message)] if param is not None else []
        print_error_document(
            error_document(
                "UsageError", exc.format_message(), exit_code=exc.exit_code, problems=problems
            )
        )
        sys.exit(exc.exit_code)
    except Exception as exc:
        from cli.output import report_error
        from registry.errors import CapgateError

        if isinstance(exc, CapgateError):
            report_error(exc)
            sys.exit(exc.exit_code)
        if os.environ.get("CAPGATE_DEBUG"):
            raise
        _error(
            "InternalError",
            f"{type(exc).__name__}: {exc} (set CAPGATE_DEBUG=1 for a traceback)",
            as_json,
            text_prefix="capgate: internal error: ",
        )
        sys.exit(2)


def _error(
    kind: str,
    message: str,
    as_json: bool,
    *,
    code: int = 2,
    text_prefix: str = "capgate: error: ",
) -> None:
    """An error that is no CapgateError, as text or (``as_json``) as cli.output's JSON."""
    from cli.output import error_document, print_error_document

    if as_json:
        print_error_document(error_document(kind, message, exit_code=code))
    else:
        print(f"{text_prefix}{message}", file=sys.stderr)


if __name__ == "__main__":
    run()
