"""What the service returns and the API serialises: the same shapes for CLI and REST."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from registry.records.kinds import RecordKind

T = TypeVar("T")


class RecordView(BaseModel):
    kind: RecordKind
    name: str
    version: int
    ref: str
    digest: str
    created_at: datetime
    created_by: str
    references: dict[str, str]
    content: dict[str, Any]
    reverts: str | None = Field(
        default=None,
        description="The earlier version (name@vN) whose content this version repeats, "
        "re-submitted to make it the latest again; null for any other version.",
    )


class SubmitResult(BaseModel):
    created: bool
    record: RecordView


class SeriesView(BaseModel):
    kind: RecordKind
    name: str
    latest_version: int
    latest_ref: str
    latest_digest: str
    updated_at: datetime


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class TrailPage(BaseModel, Generic[T]):
    """A page of an audit listing that grows without bound (decisions, audit events).

    Pages follow each other by `next_cursor` (keyset pagination: each page is one index
    range scan however deep it is); `offset` stays for short skips. `total` is counted
    only when asked for, since counting is the one step that grows with the trail.
    """

    items: list[T]
    limit: int
    offset: int
    total: int | None = Field(
        default=None, description="Every match, counted only when the request asks (total=true)."
    )
    next_cursor: str | None = Field(
        default=None,
        description="Pass as `cursor` for the next page; absent on the last page.",
    )
