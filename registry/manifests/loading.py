"""Reading Kubernetes manifests with the line of every value.

Files, folders (every *.yaml / *.yml, sorted) or ``-`` for stdin (``helm template`` or
``kustomize build`` output), each holding any number of YAML documents. The documents
are composed with the registry's strict loader (no aliases, no duplicate keys, bounded
nesting) and each value keeps its line, so whatever is read from them can say where it
came from and whatever is wrong names the file, the document and the line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import yaml

from registry.errors import FieldProblem, InvalidInput
from registry.records.documents import (
    MAX_DEPTH,
    StrictYamlLoader,
    document_problems,
    yaml_node_problems,
)

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml")


class Where(NamedTuple):
    """A position in the manifests: file, document (0-based within the file) and line."""

    file: str
    document: int
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line} (document {self.document})"


def _join(path: str, part: str | int) -> str:
    return f"{path}.{part}" if path else str(part)


def _type_name(value: Any) -> str:
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
        return None if value is None else Node(self.manifest, _join(self.path, key), value)

    def _typed(self, key: str, kinds: type | tuple[type, ...], what: str) -> Node | None:
        node = self.child(key)
        if node is None:
            return None
        value = node.value
        # YAML's true/false are Python bools, which are also ints: never a count.
        if not isinstance(value, kinds) or isinstance(value, bool):
            node.fail(f"must be {what}, not {_type_name(value)} ({value!r})")
        return node

    def mapping(self, key: str) -> Node | None:
        return self._typed(key, dict, "a mapping")

    def items(self, key: str) -> list[Node]:
        """The items of a list under ``key`` ([] when absent)."""
        node = self._typed(key, list, "a list")
        if node is None:
            return []
        return [Node(self.manifest, _join(node.path, i), v) for i, v in enumerate(node.value)]

    def entries(self) -> Iterator[tuple[str, Node]]:
        if isinstance(self.value, dict):
            for key, value in self.value.items():
                if value is not None:
                    yield str(key), Node(self.manifest, _join(self.path, key), value)

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
                item.fail(f"must be a string, not {_type_name(item.value)} ({item.value!r})")
        return items


def invalid(where: Where, path: str, message: str) -> InvalidInput:
    """The one error every manifest problem becomes: file, document, line and field."""
    return InvalidInput(
        message,
        problems=[FieldProblem(path, message)],
        source=f"{where.file} (document {where.document}, line {where.line})",
    )


def _lines(node: yaml.Node) -> tuple[dict[str, int], dict[str, int]]:
    """The 1-based line of every field path: a key's line for mapping values (where
    ``replicas: 9`` is written), the item's own line for list items; and where the
    text of each block scalar starts."""
    lines = {"": node.start_mark.line + 1}
    text_lines: dict[str, int] = {}
    stack: list[tuple[str, yaml.Node]] = [("", node)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, yaml.ScalarNode) and current.style in ("|", ">"):
            text_lines[path] = current.start_mark.line + 2
        elif isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                child = _join(path, str(key_node.value))
                lines[child] = key_node.start_mark.line + 1
                stack.append((child, value_node))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                child = _join(path, index)
                lines[child] = item.start_mark.line + 1
                stack.append((child, item))
    return lines, text_lines


def _yaml_error(file: str, document: int, exc: yaml.YAMLError) -> InvalidInput:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else 1
    problem = getattr(exc, "problem", None) or str(exc)
    where = Where(file, document, line)
    return invalid(where, "", f"not valid YAML: {problem}")


def _expand_lists(manifest: Manifest) -> Iterator[Manifest]:
    """``kind: List`` (what ``kubectl get -o yaml`` writes) holds manifests in ``items``."""
    if manifest.kind != "List":
        yield manifest
        return
    for item in manifest.root.items("items"):
        if not isinstance(item.value, dict):
            item.fail("must be a mapping (a manifest)")
        prefix = item.path + "."
        lines = {
            k.removeprefix(prefix): v for k, v in manifest.lines.items() if k.startswith(prefix)
        }
        lines[""] = manifest.lines[item.path]
        text_lines = {
            k.removeprefix(prefix): line
            for k, line in manifest.text_lines.items()
            if k.startswith(prefix)
        }
        yield Manifest(item.value, manifest.file, manifest.document, lines, text_lines)


def parse_manifests(text: str, file: str) -> Iterator[Manifest]:
    """Every non-empty document of one file, in order."""
    loader = StrictYamlLoader(text)
    document = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    return
                node = loader.get_node()
            except yaml.YAMLError as exc:
                raise _yaml_error(file, document, exc) from None
            except RecursionError:
                raise invalid(
                    Where(file, document, 1), "", f"nested deeper than {MAX_DEPTH} levels"
                ) from None
            if node is not None:
                yield from _expand_lists(_manifest(loader, node, file, document))
            document += 1
    finally:
        loader.dispose()


def _manifest(loader: Any, node: yaml.Node, file: str, document: int) -> Manifest:
    lines, text_lines = _lines(node)
    problems = yaml_node_problems(node)
    content: Any = None
    if not problems:
        try:
            content = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise _yaml_error(file, document, exc) from None
        problems = document_problems(content)
    if problems:
        first = problems[0]
        where = Manifest({}, file, document, lines).where(first.loc)
        raise invalid(where, first.loc, first.message)
    if not isinstance(content, dict):
        raise invalid(
            Where(file, document, lines[""]),
            "",
            f"a manifest must be a mapping, not {_type_name(content)}",
        )
    return Manifest(content, file, document, lines, text_lines)


def manifest_files(paths: Sequence[str]) -> list[str]:
    """The files to read: each file as given, each folder's *.yaml / *.yml sorted."""
    files: list[str] = []
    for given in paths:
        if given == STDIN:
            files.append(STDIN)
            continue
        path = Path(given)
        if path.is_dir():
            found = sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
            )
            if not found:
                raise InvalidInput(f"no *.yaml or *.yml file in {given}", source=given)
            files.extend(str(p) for p in found)
        elif path.is_file():
            files.append(str(path))
        else:
            raise InvalidInput("file not found", source=given)
    if files.count(STDIN) > 1:
        raise InvalidInput("stdin (-) can be read only once")
    return files


def read_text(file: str) -> str:
    if file == STDIN:
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read file: {exc}", source=file) from None


def load_manifests(
    paths: Sequence[str], *, skip: Sequence[Path] = ()
) -> tuple[list[Manifest], list[str]]:
    """The Kubernetes manifests under ``paths``, and notes on what was left out.

    Documents without ``apiVersion`` and ``kind`` (an overlay kept beside the manifests,
    a values file) are not manifests: they are skipped with a note. Files in ``skip``
    (the overlay itself) are not read at all.
    """
    skipped = {p.resolve() for p in skip}
    manifests: list[Manifest] = []
    notes: list[str] = []
    for file in manifest_files(paths):
        if file != STDIN and Path(file).resolve() in skipped:
            continue
        name = STDIN_NAME if file == STDIN else file
        for manifest in parse_manifests(read_text(file), name):
            if "kind" not in manifest.content or "apiVersion" not in manifest.content:
                notes.append(
                    f"{name} document {manifest.document}: no apiVersion and kind, "
                    "not a manifest; skipped"
                )
                continue
            manifests.append(manifest)
    return manifests, notes
