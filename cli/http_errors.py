"""A capgate server's error answer, as the one error the CLI reports (both HTTP clients).

The server answers every error in one shape (`message`, and for a 422 `problems` with
`loc` and `message`); the status decides which error, and so which exit code.
"""

from __future__ import annotations

from typing import Any

from registry.errors import (
    CapgateError,
    Conflict,
    FieldProblem,
    Forbidden,
    InvalidInput,
    NotFound,
    Unauthenticated,
    Unavailable,
)

BY_STATUS: dict[int, type[CapgateError]] = {
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
}


def error_for(
    status: int, body: dict[str, Any], *, reason: str, server: str, source: str | None = None
) -> CapgateError:
    """The error to raise for an answer with `status` >= 400 and JSON `body` ({} when the
    body was not JSON; `reason` then stands for the message)."""
    # One line whatever the server wrote: the CLI reports an error as one stderr line.
    message = " ".join(str(body.get("message", reason)).split())
    if status == 422:
        problems = [FieldProblem(p["loc"], p["message"]) for p in body.get("problems", [])]
        # An import names the offending file in details.source: the line names it too.
        details = body.get("details") or {}
        return InvalidInput(message, problems=problems, source=details.get("source") or source)
    return BY_STATUS.get(status, Unavailable)(f"{message} (HTTP {status} from {server})")
