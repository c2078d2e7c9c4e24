"""Reading record files (YAML or JSON) and validating them into schemas.

Validation errors become `InvalidInput` whose problems carry dotted field paths, so
the CLI prints one line naming the file and field, and the API answers 422 with the
same path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from registry.errors import FieldProblem, InvalidInput
from registry.records.common import Metadata
from registry.records.kinds import RecordKind


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as strings, so JSON and YAML validate alike."""


_PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_document(path: Path) -> dict[str, Any]:
    """Read one YAML or JSON file holding a single mapping."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput("file not found", source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read file: {exc}", source=source) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.load(text, Loader=_PlainLoader)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source=source
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInput(f"not valid YAML: {problem}{where}", source=source) from None
    if not isinstance(data, dict):
        raise InvalidInput(
            "the file must hold one mapping (a record), not a list or scalar", source=source
        )
    return data


def problems_from(error: ValidationError) -> list[FieldProblem]:
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "field required"
        message = message.removeprefix("Value error, ")
        problems.append(FieldProblem(loc=loc, message=message))
    return problems


def validate_record(kind: RecordKind, data: Any, *, source: str | None = None) -> Metadata:
    """Validate a decoded document as `kind`; raise InvalidInput naming each field."""
    try:
        return kind.schema.model_validate(data)
    except ValidationError as exc:
        problems = problems_from(exc)
        raise InvalidInput(
            f"invalid {kind.value} record", problems=problems, source=source
        ) from None


def read_record(kind: RecordKind, path: Path) -> Metadata:
    return validate_record(kind, load_document(path), source=str(path))
