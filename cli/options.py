"""Options shared by every command."""

from __future__ import annotations

import re
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


_DURATION = re.compile(r"^\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|min|m|h|d|w)?\s*$")
_UNIT_S: dict[str | None, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0}
_UNIT_S |= {"h": 3600.0, "d": 86_400.0, "w": 604_800.0, None: 1.0}


def duration_s(option: str, text: str, *, maximum: str | None = None) -> float:
    """An option's duration in seconds (`90`, `60s`, `5m`, `1.5h`, `7d`, `2w`), positive and
    at most ``maximum`` (itself such a duration), else exit 2 naming the option."""
    from registry.errors import FieldProblem, InvalidInput

    def seconds(value: str) -> float:
        match = _DURATION.match(value)
        return float(match["value"]) * _UNIT_S[match["unit"]] if match else 0.0

    value = seconds(text)
    if value <= 0:
        problem = f"{text!r} is not a positive duration such as 60s, 5m or 1h"
    elif maximum is not None and value > seconds(maximum):
        problem = f"{text!r} is longer than {maximum}"
    else:
        return value
    raise InvalidInput("invalid option", problems=[FieldProblem(f"--{option}", problem)])


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
