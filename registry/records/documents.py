"""Reading record files (YAML or JSON) and validating them into schemas.

Validation errors become `InvalidInput` whose problems carry dotted field paths, so
the CLI prints one line naming the file and field, and the API answers 422 with the
same path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.events import AliasEvent

from registry.errors import FieldProblem, InvalidInput

if TYPE_CHECKING:
    # Schema code only where a record is validated: reading manifests for a thin
    # `gate check --server --manifests` needs the YAML rules here, not pydantic.
    from pydantic import ValidationError

    from registry.records.common import Metadata
    from registry.records.kinds import RecordKind

# Deeper documents are refused: no record nests anywhere near this, and the walk
# below stays far from Python's recursion limit.
MAX_DEPTH = 64


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as strings, so JSON and YAML validate alike.

    Aliases are refused (no expansion bombs, and what a reviewer reads is what is stored).
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)


_PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# For other readers of user YAML (result files): the same refusals, the same plain values.
PlainLoader = _PlainLoader


class _Pairs(dict[str, Any]):
    """A decoded JSON object that remembers keys it saw more than once."""

    duplicates: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = _Pairs()
    seen: list[str] = []
    for key, value in pairs:
        if key in result:
            seen.append(key)
        result[key] = value
    if seen:
        result.duplicates = tuple(seen)
    return result


def _join(loc: str, part: str | int) -> str:
    return f"{loc}.{part}" if loc else str(part)


def document_problems(data: Any) -> list[FieldProblem]:
    """Duplicate keys, non-finite numbers and excessive nesting, each with its field path."""
    problems: list[FieldProblem] = []
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        loc, value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(
                FieldProblem(loc, "must be a finite number (not NaN, Infinity or out of range)")
            )
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                problems.append(FieldProblem(loc, f"nested deeper than {MAX_DEPTH} levels"))
                continue
            if isinstance(value, _Pairs):
                for key in value.duplicates:
                    problems.append(FieldProblem(_join(loc, key), "duplicate key"))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for part, child in items:
                stack.append((_join(loc, part), child, depth + 1))
    return sorted(problems, key=lambda p: p.loc)


def check_document(data: Any, *, source: str | None = None) -> None:
    problems = document_problems(data)
    if problems:
        raise InvalidInput("invalid document", problems=problems, source=source)


def loads_json(text: str | bytes, *, source: str | None = None) -> Any:
    """Strict JSON: duplicate keys, NaN/Infinity, out-of-range numbers and deep nesting
    are InvalidInput naming the field, never silently accepted or a crash."""
    try:
        data = json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source=source
        ) from None
    except UnicodeDecodeError as exc:
        # Bytes that are not UTF-8 (nor the UTF-16/32 json.loads detects) are not JSON.
        raise InvalidInput(
            f"not valid JSON: not UTF-8 text (byte {exc.start})", source=source
        ) from None
    except RecursionError:
        raise InvalidInput(
            f"not valid JSON: nested deeper than {MAX_DEPTH} levels", source=source
        ) from None
    check_document(data, source=source)
    return _plain(data)


def _plain(data: Any) -> Any:
    """Plain dicts again (the _Pairs marker has done its work)."""
    if isinstance(data, dict):
        return {key: _plain(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_plain(value) for value in data]
    return data


def _yaml_duplicates(node: Any) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    stack: list[tuple[str, Any, int]] = [("", node, 0)]
    while stack:
        loc, current, depth = stack.pop()
        if depth > MAX_DEPTH:
            problems.append(FieldProblem(loc, f"nested deeper than {MAX_DEPTH} levels"))
        elif isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in current.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
                if key in seen:
                    line = key_node.start_mark.line + 1
                    problems.append(FieldProblem(_join(loc, key), f"duplicate key (line {line})"))
                seen.add(key)
                stack.append((_join(loc, key), value_node, depth + 1))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                stack.append((_join(loc, index), item, depth + 1))
    return sorted(problems, key=lambda p: p.loc)


def loads_yaml(text: str, *, source: str | None = None) -> Any:
    """Strict YAML: no aliases, no duplicate keys, no NaN/.inf, bounded nesting."""
    loader = _PlainLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problems = _yaml_duplicates(node)
        if problems:
            raise InvalidInput("invalid document", problems=problems, source=source)
        data = loader.construct_document(node)
    except RecursionError:
        raise InvalidInput(
            f"not valid YAML: nested deeper than {MAX_DEPTH} levels", source=source
        ) from None
    finally:
        loader.dispose()
    check_document(data, source=source)
    return data


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
            data = loads_json(text, source=source)
        else:
            data = loads_yaml(text, source=source)
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
    from pydantic import ValidationError

    problems = document_problems(data)
    if problems:
        raise InvalidInput(f"invalid {kind.value} record", problems=problems, source=source)
    try:
        return kind.schema.model_validate(data)
    except ValidationError as exc:
        problems = problems_from(exc)
        raise InvalidInput(
            f"invalid {kind.value} record", problems=problems, source=source
        ) from None


def read_record(kind: RecordKind, path: Path) -> Metadata:
    return validate_record(kind, load_document(path), source=str(path))


# The same rules for multi-document manifests (registry.manifests), which keep each
# value's line and so compose documents themselves.
StrictYamlLoader = _PlainLoader
yaml_node_problems = _yaml_duplicates
