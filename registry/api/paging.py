"""Query parameters of the audit listings (decisions, audit events), which grow without
bound: a page follows the previous one by cursor, offsets stay short, totals are asked
for."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from registry.storage.keyset import MAX_CURSOR_CHARS

# Deeper than this, skipping rows costs what the skipped rows cost: use the cursor.
MAX_TRAIL_OFFSET = 10_000

TrailOffset = Annotated[
    int,
    Query(
        ge=0,
        le=MAX_TRAIL_OFFSET,
        description=f"Items to skip (at most {MAX_TRAIL_OFFSET:,}; page deeper with `cursor`).",
    ),
]
Cursor = Annotated[
    str | None,
    Query(
        max_length=MAX_CURSOR_CHARS,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The `next_cursor` of the previous page: the page after it.",
    ),
]
WithTotal = Annotated[
    bool,
    Query(description="Count every match into `total` (costs a count over the matches)."),
]
