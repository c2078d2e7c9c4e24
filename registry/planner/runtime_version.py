"""A runtime version string as the (major, minor) release the planner's rules compare."""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^(\d+)\.(\d+)")


def release(version: str | None) -> tuple[int, int] | None:
    """``"0.10.2+cu128"`` -> ``(0, 10)``; None when the string does not start with one."""
    m = _RELEASE.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None
