"""Printing results: JSON for machines, short text for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import typer


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


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, then exit with `code`."""
    print(f"capgate: error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def emit_more(next_cursor: str | None, total: int | None) -> None:
    """Below a table, on stderr (stdout stays the rows): how many matched, when counted,
    and how to see the next page."""
    if total is not None:
        typer.echo(f"({total} in all)", err=True)
    if next_cursor:
        typer.echo(f"(more: --cursor {next_cursor})", err=True)
