"""Where a generated workload profile goes: a file, the registry, or stdout.

Shared by `workload from-trace` and `workload from-observation`, which build a profile
and then hand it over the same way: YAML to --output, registered with --submit (the new
version printed), else YAML (or --json) on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.output import emit_json

# The options of every command that builds a workload profile (hand_over takes them).
ProfileOutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the profile YAML here.")
]
ProfileSubmitOpt = Annotated[
    bool, typer.Option("--submit", help="Register the profile in the registry.")
]


def hand_over(
    document: dict[str, Any],
    *,
    output: Path | None,
    submit: bool,
    server: str | None,
    json_out: bool,
    source: str,
    wrote: str,
) -> None:
    """``wrote`` is the line printed after writing --output without --submit."""
    from registry.errors import InvalidInput

    if output is not None:
        from cli.yaml_out import dump_yaml

        try:
            output.write_text(dump_yaml(document), encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot write: {exc.strerror}", source=str(output)) from None
    if submit:
        from cli.backend import open_backend
        from registry.records.kinds import RecordKind

        result = open_backend(server).submit(RecordKind.workload, document, source=source)
        if json_out:
            emit_json(result)
        else:
            state = "created" if result.created else "unchanged, existing version"
            typer.echo(f"{result.record.ref}  {result.record.digest}  ({state})")
        return
    if output is not None:
        typer.echo(wrote)
        return
    if json_out:
        emit_json(document)
        return
    from cli.yaml_out import dump_yaml

    typer.echo(dump_yaml(document).rstrip())
