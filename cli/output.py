"""Printing results: JSON for machines, short text for people.

Errors too: one `capgate: error: ...` line on stderr (then one indented line per further
problem), or, for a command given `--json` (or `--format json`), one JSON object on one
stderr line in the REST API's error shape (registry.api.errors) plus the exit code:

    {"error": "InvalidInput", "message": "...", "problems": [{"loc": "...", "message":
    "..."}], "details": {}, "exit_code": 2}
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from registry.errors import CapgateError

# Whether the command line asks for JSON (cli.main.run sets it before the command runs):
# an error that reaches cli.main's handler has left the command's context behind.
_json_asked = False


def emit_json(value: Any) -> None:
    """Print a pydantic model or plain data as indented JSON on stdout."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    typer.echo(json.dumps(value, indent=2, sort_keys=False))


def emit_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        typer.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def json_asked_in(args: Sequence[str]) -> bool:
    """Whether a command line asks for JSON output: `--json`, `--format json` or
    `--format=json`, before any `--`."""
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        if arg in ("--json", "--format=json"):
            return True
        if arg == "--format" and list(args[index + 1 : index + 2]) == ["json"]:
            return True
    return False


def ask_json_errors(asked: bool) -> None:
    global _json_asked
    _json_asked = asked


def json_errors() -> bool:
    """Whether errors are written as JSON: the running command's own --json / --format
    options when it is running, else the command line's (cli.main.run)."""
    try:  # typer vendors click since 0.28; the context holds the command's parsed options
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - typer before 0.28 runs on the click package
        try:
            from click.globals import get_current_context  # type: ignore[no-redef]
        except ImportError:
            return _json_asked
    context = get_current_context(silent=True)
    while context is not None:
        params = context.params
        if "json_out" in params or "output_format" in params:
            formats = params.get("output_format") or []
            return bool(params.get("json_out")) or any(
                getattr(f, "value", f) == "json" for f in formats
            )
        context = context.parent
    return _json_asked


def error_document(
    kind: str,
    message: str,
    *,
    exit_code: int,
    problems: Sequence[tuple[str, str]] = (),
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An error as the REST API answers it (registry.api.errors.ErrorBody), with the exit
    code: the CLI and the API say errors the same way."""
    return {
        "error": kind,
        "message": message,
        "problems": [{"loc": loc, "message": said} for loc, said in problems],
        "details": details or {},
        "exit_code": exit_code,
    }


def capgate_error_document(exc: CapgateError) -> dict[str, Any]:
    from registry.errors import InvalidInput

    details = dict(exc.details)
    problems: list[tuple[str, str]] = []
    if isinstance(exc, InvalidInput):
        problems = [(p.loc, p.message) for p in exc.problems]
        if exc.source and "source" not in details:
            details["source"] = exc.source  # as the API's evidence import says it
    return error_document(
        type(exc).__name__,
        exc.message,
        exit_code=exc.exit_code,
        problems=problems,
        details=details,
    )


def print_error_document(document: dict[str, Any]) -> None:
    """One JSON object on one stderr line (anything else on stderr came before it)."""
    print(json.dumps(document, separators=(",", ":")), file=sys.stderr, flush=True)


def report_error(exc: CapgateError) -> None:
    """A capgate error on stderr, as text or JSON (json_errors); the caller exits."""
    from registry.errors import InvalidInput

    if json_errors():
        print_error_document(capgate_error_document(exc))
        return
    if isinstance(exc, InvalidInput):
        print(f"capgate: error: {exc.one_line()}", file=sys.stderr)
        # Every further problem too, one per line: a record is fixed in one round.
        for problem in exc.problems[1:]:
            print(f"  {problem}", file=sys.stderr)
        return
    print(f"capgate: error: {exc.message}", file=sys.stderr)


def fail(message: str, code: int = 2, *, kind: str = "InvalidInput") -> None:
    """One line on stderr (text, or a JSON object of `kind` for --json), then exit with
    `code`."""
    if json_errors():
        print_error_document(error_document(kind, message, exit_code=code))
    else:
        print(f"capgate: error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def emit_more(next_cursor: str | None, total: int | None) -> None:
    """Below a table, on stderr (stdout stays the rows): how many matched, when counted,
    and how to see the next page."""
    if total is not None:
        typer.echo(f"({total} in all)", err=True)
    if next_cursor:
        typer.echo(f"(more: --cursor {next_cursor})", err=True)
