"""Where something is written in the manifests and what is wrong there: every manifest problem
becomes one ``ManifestErrors`` naming file, document, line and field, and problems are
collected so that all of them are reported at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from registry.errors import FieldProblem, InvalidInput


class Where(NamedTuple):
    """A position in the manifests: file, document (0-based within the file) and line."""

    file: str
    document: int
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line} (document {self.document})"


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
