"""`capgate plan from-manifests`: the plan the Kubernetes manifests ship."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import JsonOpt, ServerOpt


def from_manifests(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Manifest files, folders (every *.yaml/*.yml) or - for stdin "
            "(helm template, kustomize build)."
        ),
    ],
    workload: Annotated[
        str, typer.Option("--workload", help="The workload profile the plan serves.")
    ],
    provider: Annotated[str, typer.Option("--provider", help="The provider profile it runs on.")],
    name: Annotated[str | None, typer.Option("--name", help="The plan's name.")] = None,
    overlay: Annotated[
        Path | None,
        typer.Option(
            "--overlay",
            help="A plan fragment (YAML) for what manifests cannot say: admission, "
            "reserve, claims, name. Never read as a manifest.",
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the plan YAML here.")
    ] = None,
    submit: Annotated[
        bool, typer.Option("--submit", help="Submit the plan, as `plan submit` does.")
    ] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Build a plan from the manifests that will be applied: the plan as YAML on stdout (or
    in --output), where each field came from and notes on stderr."""
    from registry.manifests import plan_from_manifests

    # Everything is read and validated before anything is submitted.
    result = plan_from_manifests(
        paths, overlay=overlay, workload=workload, provider=provider, name=name
    )
    if output is not None:
        _write(output, result.document)
    submitted = None
    if submit:
        from cli.backend import open_backend
        from registry.records.kinds import RecordKind

        submitted = open_backend(server).submit(
            RecordKind.plan, result.document, source=" ".join(paths)
        )
    if json_out:
        from cli.output import emit_json

        emit_json(
            {
                "plan": result.document,
                "sources": {field: where._asdict() for field, where in result.sources.items()},
                "notes": result.notes,
                "submitted": submitted.model_dump(mode="json") if submitted else None,
            }
        )
        return
    from cli.records import submit_line
    from cli.yaml_out import dump_yaml

    for note in result.notes:
        typer.echo(f"note: {note}", err=True)
    # Sources on stderr, so stdout is the plan alone and can be saved or piped as is.
    width = max(len(field) for field in result.sources)
    for field, where in result.sources.items():
        typer.echo(f"source: {field:<{width}}  {where}", err=True)
    if output is None:
        typer.echo(dump_yaml(result.document).rstrip())
    else:
        typer.echo(f"wrote plan {result.document.get('name')} to {output}")
    if submitted is not None:
        typer.echo(f"# submitted: {submit_line(submitted)}")


def _write(path: Path, document: dict[str, object]) -> None:
    from cli.yaml_out import dump_yaml
    from registry.errors import InvalidInput

    try:
        path.write_text(dump_yaml(document), encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write: {exc.strerror}", source=str(path)) from None
