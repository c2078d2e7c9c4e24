"""Options shared by every command."""

from __future__ import annotations

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
