"""Reading a tool's JSON safely: values as numbers or None, and the refusal that names the key.

Tools write 200, 200.0, null, "inf" or NaN for the same figure; every reader goes through these
so a malformed value becomes "not stated" (listed as missing) rather than a wrong number.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from registry.errors import FieldProblem, InvalidInput


def refuse(loc: str, message: str, *, source: str, summary: str | None = None) -> InvalidInput:
    """The error for a file capgate cannot read: names the key and says what was expected."""
    return InvalidInput(
        summary or f"cannot import {source}: {loc}: {message}",
        problems=[FieldProblem(loc=loc, message=message)],
        source=source,
    )


def num(value: Any) -> float | None:
    """A JSON number as float; None for null, strings other than 'inf', NaN, booleans."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def pos(value: Any) -> float | None:
    f = num(value)
    return f if f is not None and f > 0 else None


def count(value: Any) -> int | None:
    """A JSON count as int (tools write 200, 200.0 or null)."""
    f = num(value)
    if f is None or f < 0 or f != int(f):
        return None
    return int(f)


def obj(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def epoch_to_utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)
