"""`capgate validate FILE...`: record files checked offline, every problem of every file.

Nothing is written and no registry is opened: each file is read with the registry's own
rules (duplicate keys, aliases, bounds) and validated against its kind's schema, the kind
taken from --kind or from the fields the file has. References to other records
(`workload: chat-assistant`) are resolved only on submit, so they are not checked here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import JsonOpt

if TYPE_CHECKING:
    from registry.errors import FieldProblem
    from registry.records.kinds import RecordKind


def _guess_kind(document: dict[str, Any]) -> RecordKind | str:
    """The one kind whose required fields the document has all of, else a sentence why
    there is none."""
    from registry.records.kinds import RecordKind

    keys = set(document)
    fitting = [
        kind
        for kind in RecordKind
        if {n for n, f in kind.schema.model_fields.items() if f.is_required()} <= keys
    ]
    if len(fitting) == 1:
        return fitting[0]
    names = ", ".join(k.value for k in (fitting or list(RecordKind)))
    if fitting:
        return f"the fields fit several kinds ({names}): give --kind"
    return f"the fields fit no record kind ({names}): give --kind to see what is missing"


def _problems(path: Path, kind: RecordKind | None) -> tuple[str | None, list[FieldProblem]]:
    from registry.errors import FieldProblem, InvalidInput
    from registry.records.documents import load_document, validate_record
    from registry.records.kinds import RecordKind

    try:
        document = load_document(path)
        chosen = kind if kind is not None else _guess_kind(document)
        if not isinstance(chosen, RecordKind):  # (a StrEnum is a str too)
            return None, [FieldProblem("", chosen)]
        validate_record(chosen, document, source=str(path))
    except InvalidInput as exc:
        found = exc.problems or [FieldProblem("", exc.message)]
        return (kind.value if kind is not None else None), found
    return chosen.value, []


def validate(
    files: Annotated[list[Path], typer.Argument(help="Record files (YAML or JSON).")],
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="workload, provider, evidence, plan, waiver or observation (default: "
            "judged from the file's fields).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Check record files offline, as submit would, without a registry: every problem of
    every file. Exit 0 when all are valid, 2 when any is not."""
    from cli.output import emit_json
    from registry.errors import InvalidInput
    from registry.records.kinds import RecordKind

    chosen: RecordKind | None = None
    if kind is not None:
        try:
            chosen = RecordKind(kind)
        except ValueError:
            names = ", ".join(k.value for k in RecordKind)
            raise InvalidInput(f"--kind: {kind!r} is not one of {names}") from None
    results = []
    for path in files:
        found_kind, problems = _problems(path, chosen)
        results.append((path, found_kind, problems))
    if json_out:
        emit_json(
            [
                {
                    "file": str(path),
                    "kind": found_kind,
                    "valid": not problems,
                    "problems": [{"loc": p.loc, "message": p.message} for p in problems],
                }
                for path, found_kind, problems in results
            ]
        )
    else:
        for path, found_kind, problems in results:
            if not problems:
                typer.echo(f"ok  {path}  ({found_kind})")
            for problem in problems:
                typer.echo(f"{path}: {problem}", err=True)
    if any(problems for _, _, problems in results):
        raise typer.Exit(2)
