"""What the repositories share: the table aliases (built once), the IN (...) chunking
and the predicates for "latest version" and "measured at"."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import JSON, ColumnElement, cast, exists, func
from sqlalchemy.orm import Session, aliased
from sqlalchemy.orm.util import AliasedClass

from registry.storage.models import (
    Base,
    RecordRefRow,
    RecordRow,
)

M = TypeVar("M", bound=Base)
# Values per IN (...) list: far below every driver's parameter limit.
IN_CHUNK = 500

# Aliases are built once: SQLAlchemy memoises each alias's column adaptation on the alias
# itself, so a fresh alias per query paid that again on every call (about 5 ms of a gate
# check's 30). Each is used at most once per statement.
TARGET = aliased(RecordRow, name="target")
WORKLOAD_REF = aliased(RecordRefRow, name="workload_ref")
PROVIDER_REF = aliased(RecordRefRow, name="provider_ref")
WORKLOAD = aliased(RecordRow, name="workload")
PROVIDER = aliased(RecordRow, name="provider")
NEWER = aliased(RecordRow, name="newer")
EVIDENCE = aliased(RecordRow, name="evidence")
PINNED = aliased(RecordRow, name="pinned")
CAUSE = aliased(RecordRow, name="cause")
MEASURED = aliased(RecordRow, name="measured")


def measured_at_text(session: Session, record: type[RecordRow] | AliasedClass[RecordRow]) -> Any:
    """The evidence content's `measured_at` (ISO text), extracted by the database."""
    if session.get_bind().dialect.name == "postgresql":
        return func.json_extract_path_text(cast(record.content, JSON), "measured_at")
    return func.json_extract(record.content, "$.measured_at")


def is_latest(record: type[RecordRow] | AliasedClass[RecordRow]) -> ColumnElement[bool]:
    """No newer version of the same series exists (uses the (kind, name, version) index)."""
    return ~exists().where(
        NEWER.kind == record.kind, NEWER.name == record.name, NEWER.version > record.version
    )


def chunks(values: Iterable[Any]) -> list[list[Any]]:
    ordered = sorted(set(values))
    return [ordered[i : i + IN_CHUNK] for i in range(0, len(ordered), IN_CHUNK)]
