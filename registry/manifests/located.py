"""A manifest document and the values inside it, each with the line it is written on.

``Node`` reads a value with its type checked the way Kubernetes checks it (a null is absent,
a boolean is never a count), so every reader of manifests fails with the file, document, line
and field path of what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from registry.manifests.problems import Where, invalid


def join_path(path: str, part: str | int) -> str:
    return f"{path}.{part}" if path else str(part)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "a mapping"


@dataclass(frozen=True)
class Manifest:
    """One document: its decoded content and the line of each dotted field path."""

    content: dict[str, Any]
    file: str
    document: int
    lines: dict[str, int]
    # First line of the text of each block scalar (``|`` or ``>``), one line below its
    # indicator: a script's words are found from there.
    text_lines: dict[str, int] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.content.get("kind", ""))

    @property
    def api_group(self) -> str:
        """The API group of ``apiVersion`` (``apps`` of ``apps/v1``; ``""`` for the core)."""
        version = str(self.content.get("apiVersion", ""))
        return version.rpartition("/")[0]

    @property
    def name(self) -> str:
        metadata = self.content.get("metadata")
        return str(metadata.get("name", "")) if isinstance(metadata, dict) else ""

    @property
    def title(self) -> str:
        return f"{self.kind} {self.name}".strip()

    @property
    def root(self) -> Node:
        return Node(self, "", self.content)

    def where(self, path: str) -> Where:
        """The line of ``path``, or of its nearest parent that has one."""
        while path not in self.lines and path:
            path = path.rpartition(".")[0]
        return Where(self.file, self.document, self.lines.get(path, 1))


@dataclass(frozen=True)
class Node:
    """A value inside a manifest, read with its type checked and its position kept."""

    manifest: Manifest
    path: str
    value: Any = field(repr=False)

    @property
    def where(self) -> Where:
        return self.manifest.where(self.path)

    def fail(self, message: str) -> NoReturn:
        raise invalid(self.where, self.path, message)

    def child(self, key: str) -> Node | None:
        """The value under ``key``; None when absent or null (Kubernetes reads both alike)."""
        value = self.value.get(key) if isinstance(self.value, dict) else None
        return None if value is None else Node(self.manifest, join_path(self.path, key), value)

    def _typed(self, key: str, kinds: type | tuple[type, ...], what: str) -> Node | None:
        node = self.child(key)
        if node is None:
            return None
        value = node.value
        # YAML's true/false are Python bools, which are also ints: never a count.
        if not isinstance(value, kinds) or isinstance(value, bool):
            node.fail(f"must be {what}, not {type_name(value)} ({value!r})")
        return node

    def mapping(self, key: str) -> Node | None:
        return self._typed(key, dict, "a mapping")

    def items(self, key: str) -> list[Node]:
        """The items of a list under ``key`` ([] when absent)."""
        node = self._typed(key, list, "a list")
        if node is None:
            return []
        return [Node(self.manifest, join_path(node.path, i), v) for i, v in enumerate(node.value)]

    def entries(self) -> Iterator[tuple[str, Node]]:
        if isinstance(self.value, dict):
            for key, value in self.value.items():
                if value is not None:
                    yield str(key), Node(self.manifest, join_path(self.path, key), value)

    def integer(self, key: str) -> Node | None:
        return self._typed(key, int, "an integer")

    def string(self, key: str) -> Node | None:
        return self._typed(key, str, "a string")

    def int_or_string(self, key: str) -> Node | None:
        """Kubernetes' IntOrString: a count (3) or a percentage ("25%")."""
        return self._typed(key, (int, str), "an integer or a percentage")

    def strings(self, key: str) -> list[Node]:
        items = self.items(key)
        for item in items:
            if not isinstance(item.value, str):
                # Kubernetes refuses numbers in command and args: quote them.
                item.fail(f"must be a string, not {type_name(item.value)} ({item.value!r})")
        return items
