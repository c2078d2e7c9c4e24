"""Reading Kubernetes manifests with the line of every value.

Files, folders (every *.yaml / *.yml, sorted) or ``-`` for stdin (``helm template`` or
``kustomize build`` output), each holding any number of YAML documents. The documents
are composed with the registry's YAML rules (no duplicate keys, bounded nesting) but with
aliases, as kubectl applies them (their expansion bounded), and each value keeps its
line, so whatever is read from them can say where it came from and whatever is wrong
names the file, the document and the line. Reading goes on past a problem, so every
problem of every file is reported at once.

This module finds the files and reads each document, collecting notes and problems;
``located`` holds the documents read, ``yaml_nodes`` composes the YAML and ``problems`` says
where each problem is. ``Manifest``, ``Node`` and ``Where`` are importable from here too, as
most readers of manifests import them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from registry.errors import InvalidInput
from registry.manifests.located import Manifest, Node, type_name
from registry.manifests.problems import ManifestErrors, Problem, Where, place, problems_of
from registry.manifests.yaml_nodes import (
    ManifestLoader,
    alias_problem,
    list_items,
    metadata_name,
    node_lines,
    scalar_field,
    yaml_problem,
)
from registry.records.documents import (
    MAX_DEPTH,
    document_problems,
    yaml_node_problems,
)

# Manifest, Node and Where are defined in located and problems, and re-exported here: most
# readers of manifests import them from this module.
__all__ = [
    "STDIN",
    "STDIN_NAME",
    "Manifest",
    "Node",
    "ReadKinds",
    "Reading",
    "Where",
    "manifest_files",
    "read_manifests",
    "read_text",
]


STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml")


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
                    line, message = yaml_problem(exc, 1)
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
        why = alias_problem(node)
        if why is not None:
            # Refused whatever its kind: walking it at all is the danger.
            self._problem(document, node.start_mark.line + 1, "", why)
            return
        items = list_items(node)
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
            line, message = yaml_problem(exc, start)
            found.append((line, "", message))
        except RecursionError:
            found.append((start, "", f"nested deeper than {MAX_DEPTH} levels"))
        else:
            if problems:
                located = Manifest({}, self.file, document, node_lines(node)[0])
                found += [(located.where(p.loc).line, p.loc, p.message) for p in problems]
        if not found and not isinstance(content, dict):
            found.append((start, "", f"a manifest must be a mapping, not {type_name(content)}"))
        if found:
            self._undecodable(node, document, found)
            return
        # Lines once constructed: constructing merges ``<<: *anchor`` keys into the mapping.
        lines, text_lines = node_lines(node)
        self.reading.manifests.append(Manifest(content, self.file, document, lines, text_lines))

    def _undecodable(
        self, node: yaml.Node, document: int, found: list[tuple[int, str, str]]
    ) -> None:
        kind = scalar_field(node, "kind")
        version = scalar_field(node, "apiVersion")
        if kind and version and not self.reads(version.rpartition("/")[0], kind):
            line, path, message = found[0]
            title = f"{kind} {metadata_name(node)}".strip()
            group = version.rpartition("/")[0] or "core"
            what = f"{path}: {message}" if path else message
            self.reading.notes.append(
                f"{self.file} (document {document}, line {line}): {title} ({group}) "
                f"skipped: capgate does not read this kind, and it cannot be decoded ({what})"
            )
            return
        for line, path, message in found:
            self._problem(document, line, path, message)


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
