"""Options shared by every command."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="CAPGATE_SERVER",
        help="capgate server URL; without it, the local embedded registry is used.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def instant(option: str, text: str) -> datetime:
    """An option's instant: ISO 8601 with a zone (`Z` or an offset), else exit 2 naming
    the option. A zone is required because the registry compares instants in UTC and a
    server refuses one without a zone: local and remote runs read the same value."""
    from registry.errors import FieldProblem, InvalidInput

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidInput(
            "invalid option",
            problems=[FieldProblem(f"--{option}", f"{text!r} is not an instant with a zone")],
        )
    return moment
