"""What the repositories share: the table aliases (built once), the IN (...) chunking
and the predicates for "latest version" and "measured at"."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import JSON, ColumnElement, cast, exists, func, inspect
from sqlalchemy.orm import Session, aliased
from sqlalchemy.orm.util import AliasedClass, AliasedInsp

from registry.storage.models import (
    Base,
    RecordRefRow,
    RecordRow,
)

M = TypeVar("M", bound=Base)
# Values per IN (...) list: far below every driver's parameter limit.
IN_CHUNK = 500

E = TypeVar("E", bound=Base)


def _shared_alias(entity: type[E], name: str) -> type[E]:
    """An alias with every mapped attribute adapted now, in the importing thread.

    Aliases are built once: SQLAlchemy adapts an alias's attributes on first use and
    memoises them on the alias itself (AliasedClass.__getattr__), so a fresh alias per
    query paid that on every call (about 5 ms of a gate check's 30). But that first use
    is not thread-safe: two request threads adapting the same attribute of a shared alias
    at once each build their own column, and a statement compiled with one is then read
    with the other (NoSuchColumnError "target.id", or "multiple FROMS": HTTP 500 on the
    first concurrent gate checks of a fresh server). Adapted here, before any request
    thread exists, every thread reads the same attributes."""
    alias = aliased(entity, name=name)
    # .keys(): iterating ReadOnlyProperties yields the descriptors, not their names.
    for key in inspect(entity).all_orm_descriptors.keys():  # noqa: SIM118
        getattr(alias, key)
    state = typing.cast(AliasedInsp[E], inspect(alias))  # sqlalchemy.cast is SQL CAST
    # What the ORM memoises on the alias's inspection when a statement is compiled or its
    # rows loaded: the annotated FROM, the column expressions and the join clause.
    for memoised in WARMED:
        getattr(state, memoised)
    state.__clause_element__()
    return alias


# AliasedInsp's memoised members (sqlalchemy/orm/util.py, _memoized_attr_* and
# _memoized_method_*) that first use builds; tests/storage check each is built at import.
WARMED = ("_all_column_expressions", "_memoized_values")


TARGET = _shared_alias(RecordRow, "target")
WORKLOAD_REF = _shared_alias(RecordRefRow, "workload_ref")
PROVIDER_REF = _shared_alias(RecordRefRow, "provider_ref")
WORKLOAD = _shared_alias(RecordRow, "workload")
PROVIDER = _shared_alias(RecordRow, "provider")
NEWER = _shared_alias(RecordRow, "newer")
EVIDENCE = _shared_alias(RecordRow, "evidence")
PINNED = _shared_alias(RecordRow, "pinned")
CAUSE = _shared_alias(RecordRow, "cause")
MEASURED = _shared_alias(RecordRow, "measured")
SHARED_ALIASES = (
    TARGET,
    WORKLOAD_REF,
    PROVIDER_REF,
    WORKLOAD,
    PROVIDER,
    NEWER,
    EVIDENCE,
    PINNED,
    CAUSE,
    MEASURED,
)


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
