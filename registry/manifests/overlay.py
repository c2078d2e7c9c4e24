"""Merging what the manifests say with an overlay: a plan fragment for all they cannot
say (admission, retries, reserve, claims, names). The manifests are what ships, so a
field both state is taken from the manifests, and a note says so."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import yaml

from registry.manifests.loading import Where
from registry.manifests.yaml_nodes import node_lines
from registry.records.documents import PlainLoader, load_document


@dataclass(frozen=True)
class Overlay:
    """The overlay's content and the line of each of its fields, so a problem with a
    value it gives names where it is written."""

    document: dict[str, Any] = dataclass_field(default_factory=dict)
    file: str | None = None
    lines: dict[str, int] = dataclass_field(default_factory=dict)

    def line(self, path: str) -> int | None:
        """The line of ``path`` or of its nearest parent the overlay states; None when
        it states none of them."""
        while path not in self.lines and path:
            path = path.rpartition(".")[0]
        return self.lines.get(path) if path else None

    def states(self, path: str) -> bool:
        return self.file is not None and path in self.lines

    def place(self, path: str) -> str | None:
        """``overlay.yaml (line N)``, where ``path`` (or its section) is written."""
        if self.file is None:
            return None
        line = self.line(path)
        return self.file if line is None else f"{self.file} (line {line})"

    def at(self, path: str) -> str:
        """``overlay.yaml:N``: the overlay where it is mentioned second."""
        line = self.line(path)
        return f"{self.file}:{line}" if line is not None else str(self.file)


def read_overlay(path: Path | None) -> Overlay:
    """The overlay file, read with the record rules (a plan fragment), and its lines."""
    if path is None:
        return Overlay()
    document = load_document(path)  # refuses what a record file may not hold
    loader = PlainLoader(path.read_text(encoding="utf-8"))
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    lines = node_lines(node)[0] if isinstance(node, yaml.Node) else {}
    lines.pop("", None)
    return Overlay(document, str(path), lines)


def _leaves(document: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    leaves: dict[str, Any] = {}
    for key, value in document.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            leaves.update(_leaves(value, path))
        else:
            leaves[path] = value
    return leaves


def _set(document: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        child = document.get(part)
        if not isinstance(child, dict):
            child = document[part] = {}
        document = child
    document[last] = value


def _within(path: str, field: str) -> bool:
    return path == field or path.startswith(field + ".")


def merge(
    fields: dict[str, tuple[Any, Where]], overlay: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """The overlay with every manifest field laid over it.

    A manifest field replaces the overlay's value at that path and anything below it
    (replicas_per_zone is one field: the manifests' zones, not a union with the overlay's).
    """
    document: dict[str, Any] = {}
    overlay_leaves = _leaves(overlay)
    for path, value in overlay_leaves.items():
        owner = next((field for field in fields if _within(path, field)), None)
        if owner is None:
            _set(document, path, value)
        else:
            manifest_value, where = fields[owner]
            notes.append(
                f"{owner}: given by the overlay and by the manifests ({where}); the "
                f"manifests win: {manifest_value!r}"
            )
    for field, (value, _) in fields.items():
        _set(document, field, value)
    # One note per field, however many overlay leaves it covered.
    notes[:] = list(dict.fromkeys(notes))
    return document


def shadowed(fields: dict[str, tuple[Any, Where]], overlay: Overlay) -> list[tuple[str, str]]:
    """Overlay values that are not sections but hold manifest fields below them
    (``serving: 5`` beside ``--max-num-seqs``): the merge would drop them unsaid. Each
    as (overlay path, the manifest field under it)."""
    found = []
    for path, value in _leaves(overlay.document).items():
        if isinstance(value, dict):
            continue
        below = next((f for f in fields if f.startswith(path + ".")), None)
        if below is not None:
            found.append((path, below))
    return found
