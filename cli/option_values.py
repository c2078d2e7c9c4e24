"""Option values the evidence and workload commands parse themselves.

Each refusal is an InvalidInput naming the option (CLI exit 2), never a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime


def invalid_option(message: str, *, loc: str = "", source: str | None = None) -> Exception:
    """An InvalidInput naming the option `loc` (or the file `source`) and the problem."""
    from registry.errors import FieldProblem, InvalidInput

    return InvalidInput(message, problems=[FieldProblem(loc, message)], source=source)


def zoned_time(value: str | None, *, option: str) -> datetime | None:
    """An ISO 8601 time with its zone (a time without one is ambiguous); None if not given."""
    if value is None:
        return None
    from datetime import datetime

    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise invalid_option(f"{value!r} is not an ISO 8601 time", loc=option) from None
    if parsed.tzinfo is None:
        raise invalid_option("needs a time zone, e.g. 2026-11-24T14:05:00Z", loc=option)
    return parsed
