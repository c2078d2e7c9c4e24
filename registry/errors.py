"""One error hierarchy, mapped once to HTTP (registry.api.errors) and once to exit codes (cli)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldProblem:
    """One thing wrong with an input: where (a dotted path) and what."""

    loc: str
    message: str

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


class CapgateError(Exception):
    """Base of every error capgate reports on purpose. Anything else is a bug."""

    status_code = 500
    exit_code = 2

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class InvalidInput(CapgateError):
    """The input is malformed: wrong type, unknown field, broken reference or file."""

    status_code = 422

    def __init__(
        self, message: str, *, problems: list[FieldProblem] | None = None, source: str | None = None
    ) -> None:
        super().__init__(message)
        self.problems = problems or []
        self.source = source

    def one_line(self) -> str:
        """The first problem in one line, naming the file and field, as the CLI prints it."""
        where = f"{self.source}: " if self.source else ""
        if self.problems:
            more = len(self.problems) - 1
            suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            # (The CLI prints the others on the lines below it; the API returns them all.)
            return f"{where}{self.problems[0]}{suffix}"
        return f"{where}{self.message}"


class NotFound(CapgateError):
    status_code = 404


class Conflict(CapgateError):
    status_code = 409


class SchemaNotCurrent(CapgateError):
    """The database is not at the schema this code was built for."""

    status_code = 503


class Unavailable(CapgateError):
    """A dependency (database, policy engine, server) cannot be reached or read."""

    status_code = 503


class Unauthenticated(CapgateError):
    """No credential, or one that does not verify (bad signature, expired, revoked)."""

    status_code = 401
    exit_code = 2


class Forbidden(CapgateError):
    """A verified principal asked for something its roles or team do not allow."""

    status_code = 403
    exit_code = 2


class Tampered(CapgateError):
    """The registry's stored state disagrees with its own digests or audit trail.

    A record whose content no longer hashes to its digest, a row that no audit event
    recorded (or that differs from what its event recorded), or a hash chain that does
    not verify. Nothing read from such a registry is trusted: the gate refuses to decide
    (exit 2, never allow). HTTP 500: the server's own state is corrupt, which no change
    to the request can fix (409 would invite a retry).
    """

    status_code = 500
    exit_code = 2
