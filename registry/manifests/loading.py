"""Reading Kubernetes manifests with the line of every value.

Files, folders (every *.yaml / *.yml, sorted) or ``-`` for stdin (``helm template`` or
``kustomize build`` output), each holding any number of YAML documents. The documents
are composed with the registry's YAML rules (no duplicate keys, bounded nesting) but with
aliases, as kubectl applies them (their expansion bounded), and each value keeps its
line, so whatever is read from them can say where it came from and whatever is wrong
names the file, the document and the line. Reading goes on past a problem, so every
problem of every file is reported at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import yaml

from registry.errors import FieldProblem, InvalidInput
from registry.records.documents import (
    MAX_DEPTH,
    PlainLoader,
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


class Problem(NamedTuple):
    """One thing wrong in the manifests: where it is written (``file (document N, line
    L)``; None when it is written nowhere), the field path and what is wrong."""

    place: str | None
    path: str
    message: str

    def located(self) -> str:
        """``place: path`` (or either alone), as the problem's line starts."""
        return ": ".join(part for part in (self.place, self.path) if part)


def place(where: Where) -> str:
    return f"{where.file} (document {where.document}, line {where.line})"


class ManifestErrors(InvalidInput):
    """Every problem found in the manifests, each leading with where it is written.

    Shaped as the CLI prints an InvalidInput: ``source`` is the first problem's place
    and its path the first problem's field; each further problem names its own place in
    its ``loc``, so every line of ``capgate: error:`` says file, document and line.
    """

    def __init__(self, found: Sequence[Problem]) -> None:
        first, *rest = found
        problems = [FieldProblem(first.path, first.message)]
        problems += [FieldProblem(p.located(), p.message) for p in rest]
        super().__init__(first.message, problems=problems, source=first.place)
        self.found = list(found)


def problems_of(error: InvalidInput) -> list[Problem]:
    """An error raised while reading, as the problems it holds (to collect them)."""
    if isinstance(error, ManifestErrors):
        return list(error.found)
    if not error.problems:
        return [Problem(error.source, "", error.message)]
    first, *rest = error.problems
    # Further problems of a plain InvalidInput are located by their path alone.
    return [Problem(error.source, first.loc, first.message)] + [
        Problem(None, p.loc, p.message) for p in rest
    ]


def invalid(where: Where, path: str, message: str) -> InvalidInput:
    """The one error every manifest problem becomes: file, document, line and field."""
    return ManifestErrors([Problem(place(where), path, message)])


class ManifestLoader(yaml.SafeLoader):
    """The registry's YAML rules for manifests, but with aliases, which kubectl applies.

    Timestamps stay strings, as in records. Aliases (``*name``) and merge keys
    (``<<: *name``) are composed as PyYAML composes them, one node shared by every use,
    and a document is refused (never expanded) when its aliases would add more than
    MAX_ALIAS_EXPANSION values, or refer to themselves.
    """


ManifestLoader.yaml_implicit_resolvers = PlainLoader.yaml_implicit_resolvers

# What aliases may add to one document, expanded: a billion-laughs document (a few
# lines that expand to 10^9 values) is refused before anything walks it. Ten times a
# large manifest, far below what exhausts memory.
MAX_ALIAS_EXPANSION = 100_000


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _alias_problem(root: yaml.Node) -> str | None:
    """Why the aliases of a document are refused, or None.

    Counts the values of the document expanded, each shared node once per use, without
    expanding it: sizes are summed over the node graph, each node's once.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                return "an alias refers to the node that holds it (a recursive alias)"
            if id(child) not in sizes:
                stack.append((child, False))
    added = sizes[id(root)] - len(sizes)
    if added > MAX_ALIAS_EXPANSION:
        return (
            f"aliases expand this document by {added} values, more than the "
            f"{MAX_ALIAS_EXPANSION} allowed (the bound on alias expansion)"
        )
    return None


def node_lines(node: yaml.Node) -> tuple[dict[str, int], dict[str, int]]:
    """The 1-based line of every field path: a key's line for mapping values (where
    ``replicas: 9`` is written), the item's own line for list items; and where the
    text of each block scalar starts.

    A value given by an alias is located at its anchor, where it is written: an anchor
    precedes its aliases, so a value that starts before its key is an alias's."""
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
                mark = key_node.start_mark
                if value_node.start_mark.index < mark.index:
                    mark = value_node.start_mark
                lines[child] = mark.line + 1
                stack.append((child, value_node))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                child = _join(path, index)
                lines[child] = item.start_mark.line + 1
                stack.append((child, item))
    return lines, text_lines


def _yaml_problem(exc: yaml.YAMLError, default_line: int) -> tuple[int, str]:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else default_line
    problem = getattr(exc, "problem", None) or str(exc)
    return line, f"not valid YAML: {problem}"


def _scalar_field(node: yaml.Node, key: str) -> str:
    """A top-level scalar of a composed document (kind, apiVersion), constructed or not."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if (
                isinstance(key_node, yaml.ScalarNode)
                and key_node.value == key
                and isinstance(value_node, yaml.ScalarNode)
            ):
                return str(value_node.value)
    return ""


def _metadata_name(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "metadata":
                return _scalar_field(value_node, "name")
    return ""


@dataclass
class Reading:
    """What was read from the manifests: the documents, notes on what was left out,
    and every problem found (reading goes on past a problem, to report them all)."""

    manifests: list[Manifest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# Which (API group, kind) a caller reads: an undecodable document of another kind is
# skipped with a note rather than refusing the manifests.
ReadKinds = Callable[[str, str], bool]


def _read_all(group: str, kind: str) -> bool:
    return True


class _FileReader:
    """The documents of one file, each decoded on its own: a document that cannot be
    decoded is a problem (or, of a kind nobody reads, a note) and the next is read."""

    def __init__(self, file: str, reading: Reading, reads: ReadKinds) -> None:
        self.file = file
        self.reading = reading
        self.reads = reads

    def read(self, text: str) -> None:
        loader = ManifestLoader(text)
        document = 0
        try:
            while True:
                try:
                    if not loader.check_node():
                        return
                    node = loader.get_node()
                except yaml.YAMLError as exc:
                    # The scanner or parser cannot get past this: nothing after it in the
                    # file can be read, so one problem for the file, no more.
                    line, message = _yaml_problem(exc, 1)
                    self._problem(document, line, "", message)
                    return
                except RecursionError:
                    self._problem(document, 1, "", f"nested deeper than {MAX_DEPTH} levels")
                    return
                if node is not None:
                    self._document(loader, node, document)
                document += 1
        finally:
            loader.dispose()

    def _problem(self, document: int, line: int, path: str, message: str) -> None:
        where = Where(self.file, document, line)
        self.reading.problems.append(Problem(place(where), path, message))

    def _document(self, loader: ManifestLoader, node: yaml.Node, document: int) -> None:
        why = _alias_problem(node)
        if why is not None:
            # Refused whatever its kind: walking it at all is the danger.
            self._problem(document, node.start_mark.line + 1, "", why)
            return
        items = _list_items(node)
        for unit in [node] if items is None else items:
            self._unit(loader, unit, document)

    def _unit(self, loader: ManifestLoader, node: yaml.Node, document: int) -> None:
        start = node.start_mark.line + 1
        found: list[tuple[int, str, str]] = []
        content: Any = None
        try:
            problems = yaml_node_problems(node)
            if not problems:
                content = loader.construct_document(node)
                problems = document_problems(content)
        except yaml.YAMLError as exc:
            line, message = _yaml_problem(exc, start)
            found.append((line, "", message))
        except RecursionError:
            found.append((start, "", f"nested deeper than {MAX_DEPTH} levels"))
        else:
            if problems:
                located = Manifest({}, self.file, document, node_lines(node)[0])
                found += [(located.where(p.loc).line, p.loc, p.message) for p in problems]
        if not found and not isinstance(content, dict):
            found.append((start, "", f"a manifest must be a mapping, not {_type_name(content)}"))
        if found:
            self._undecodable(node, document, found)
            return
        # Lines once constructed: constructing merges ``<<: *anchor`` keys into the mapping.
        lines, text_lines = node_lines(node)
        self.reading.manifests.append(Manifest(content, self.file, document, lines, text_lines))

    def _undecodable(
        self, node: yaml.Node, document: int, found: list[tuple[int, str, str]]
    ) -> None:
        kind = _scalar_field(node, "kind")
        version = _scalar_field(node, "apiVersion")
        if kind and version and not self.reads(version.rpartition("/")[0], kind):
            line, path, message = found[0]
            title = f"{kind} {_metadata_name(node)}".strip()
            group = version.rpartition("/")[0] or "core"
            what = f"{path}: {message}" if path else message
            self.reading.notes.append(
                f"{self.file} (document {document}, line {line}): {title} ({group}) "
                f"skipped: capgate does not read this kind, and it cannot be decoded ({what})"
            )
            return
        for line, path, message in found:
            self._problem(document, line, path, message)


def _list_items(node: yaml.Node) -> list[yaml.Node] | None:
    """The item nodes of a ``kind: List`` (what ``kubectl get -o yaml`` writes), each
    read as a manifest of its own; None for any other document."""
    if _scalar_field(node, "kind") != "List" or not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == "items":
            return list(value_node.value) if isinstance(value_node, yaml.SequenceNode) else []
    return []


def manifest_files(paths: Sequence[str], problems: list[Problem] | None = None) -> list[str]:
    """The files to read: each file as given, each folder's *.yaml / *.yml sorted.

    A path that names nothing to read is a problem: added to ``problems`` when given (to
    report with every other), raised otherwise."""
    files: list[str] = []
    found_problems: list[Problem] = []
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
                found_problems.append(Problem(given, "", f"no *.yaml or *.yml file in {given}"))
            files.extend(str(p) for p in found)
        elif path.is_file():
            files.append(str(path))
        else:
            found_problems.append(Problem(given, "", "file not found"))
    if files.count(STDIN) > 1:
        found_problems.append(Problem(None, "", "stdin (-) can be read only once"))
    if problems is None:
        if found_problems:
            raise ManifestErrors(found_problems)
    else:
        problems.extend(found_problems)
    return files


def read_text(file: str) -> str:
    if file == STDIN:
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read file: {exc}", source=file) from None


def read_manifests(
    paths: Sequence[str], *, skip: Sequence[Path] = (), reads: ReadKinds = _read_all
) -> Reading:
    """Every manifest under ``paths``, notes on what was left out, and every problem.

    Documents without ``apiVersion`` and ``kind`` (an overlay kept beside the manifests,
    a values file) are not manifests: they are skipped with a note. Files in ``skip``
    (the overlay itself) are not read at all. A document that cannot be decoded is a
    problem, unless its kind is one ``reads`` says no: then it is skipped with a note.
    A file that cannot be read, or whose YAML cannot be parsed past some point, is one
    problem: the documents after it are not guessed at.
    """
    skipped = {p.resolve() for p in skip}
    reading = Reading()
    for file in manifest_files(paths, reading.problems):
        if file != STDIN and Path(file).resolve() in skipped:
            continue
        name = STDIN_NAME if file == STDIN else file
        try:
            text = read_text(file)
        except InvalidInput as exc:
            reading.problems.extend(problems_of(exc))
            continue
        before = len(reading.manifests)
        _FileReader(name, reading, reads).read(text)
        kept = reading.manifests[:before]
        for manifest in reading.manifests[before:]:
            if "kind" not in manifest.content or "apiVersion" not in manifest.content:
                reading.notes.append(
                    f"{name} document {manifest.document}: no apiVersion and kind, "
                    "not a manifest; skipped"
                )
                continue
            kept.append(manifest)
        reading.manifests = kept
    return reading
