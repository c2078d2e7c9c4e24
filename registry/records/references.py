"""References to records: `name` (latest), `name@vN`, or a `sha256:` digest."""

from __future__ import annotations

import re
from dataclasses import dataclass

from registry.errors import FieldProblem, InvalidInput

# Versions are stored as 32-bit signed integers on SQLite and PostgreSQL alike.
MAX_VERSION = 2**31 - 1

_REF = re.compile(
    r"^(?:(?P<digest>sha256:[0-9a-f]{64})|(?P<name>[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?)"
    r"(?:@v(?P<version>[1-9][0-9]*))?)$"
)


@dataclass(frozen=True)
class Ref:
    name: str | None = None
    version: int | None = None
    digest: str | None = None

    def __str__(self) -> str:
        if self.digest:
            return self.digest
        return f"{self.name}@v{self.version}" if self.version else str(self.name)


def parse_ref(text: str, *, loc: str = "ref") -> Ref:
    if "\x00" in text:
        raise InvalidInput(
            "invalid reference",
            problems=[FieldProblem(loc=loc, message="must not contain NUL characters")],
        )
    match = _REF.match(text.strip())
    if match is None:
        raise InvalidInput(
            "invalid reference",
            problems=[
                FieldProblem(
                    loc=loc,
                    message=f"{text!r} is not a reference: use name, name@vN or sha256:<64 hex>",
                )
            ],
        )
    if match["digest"]:
        return Ref(digest=match["digest"])
    version = match["version"]
    if version and (len(version) > 10 or int(version) > MAX_VERSION):
        raise InvalidInput(
            "invalid reference",
            problems=[
                FieldProblem(loc=loc, message=f"version must be between 1 and {MAX_VERSION}")
            ],
        )
    return Ref(name=match["name"], version=int(version) if version else None)


def pinned(name: str, version: int) -> str:
    return f"{name}@v{version}"
