"""Rows read for the integrity check: covered tables in chunks, by id and by series."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from registry.storage.models import (
    DecisionRow,
    EvidenceRawDigestRow,
    RecordRefRow,
    RecordRow,
)
from registry.storage.repository.queries import (
    IN_CHUNK,
    M,
    chunks,
)

RECORD_COLUMNS = (
    RecordRow.id,
    RecordRow.kind,
    RecordRow.name,
    RecordRow.version,
    RecordRow.digest,
    RecordRow.created_at,
    RecordRow.created_by,
    RecordRow.reverts_version,
)


class IntegrityRepository:
    """Reads for registry.audit.integrity: whole tables (audit verify) or the few rows
    one decision rests on (the gate)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def records(self, ids: Iterable[int] | None = None, *, content: bool) -> list[Any]:
        """Record rows (all, or these ids) with their columns; `content` too if asked."""
        columns: tuple[Any, ...] = (
            (*RECORD_COLUMNS, RecordRow.content) if content else RECORD_COLUMNS
        )
        query = select(*columns).order_by(RecordRow.id)
        if ids is None:
            return list(self.session.execute(query).all())
        out: list[Any] = []
        for chunk in chunks(ids):
            out += self.session.execute(query.where(RecordRow.id.in_(chunk))).all()
        return out

    def records_of_series(self, series: Iterable[tuple[str, str]]) -> list[Any]:
        """Every version (without content) of each (kind, name) series."""
        by_kind: dict[str, set[str]] = {}
        for kind, name in series:
            by_kind.setdefault(kind, set()).add(name)
        # Several series in one statement, up to IN_CHUNK names: a gate check's five or
        # so series are one round trip, not one per kind.
        pairs = [
            (kind, chunk) for kind, names in sorted(by_kind.items()) for chunk in chunks(names)
        ]
        out: list[Any] = []
        batch: list[tuple[str, list[Any]]] = []
        for index, pair in enumerate(pairs):
            batch.append(pair)
            last = index == len(pairs) - 1
            if last or sum(len(c) for _, c in batch) + len(pairs[index + 1][1]) > IN_CHUNK:
                where = or_(*(and_(RecordRow.kind == k, RecordRow.name.in_(c)) for k, c in batch))
                out += self.session.execute(select(*RECORD_COLUMNS).where(where)).all()
                batch = []
        return out

    def series_names(self, kind: str) -> set[str]:
        return set(self.session.scalars(select(RecordRow.name).where(RecordRow.kind == kind)))

    def version_ids(
        self, kind: str, versions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """The row ids of (name, version) pairs of one kind."""
        wanted = sorted(set(versions))
        out: dict[tuple[str, int], int] = {}
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
            rows = self.session.execute(
                select(RecordRow.id, RecordRow.name, RecordRow.version).where(
                    RecordRow.kind == kind,
                    or_(*(and_(RecordRow.name == n, RecordRow.version == v) for n, v in chunk)),
                )
            ).all()
            out.update({(name, version): rid for rid, name, version in rows})
        return out

    def refs(self, ids: Iterable[int] | None = None) -> dict[int, dict[str, int]]:
        """The pinned references (role -> target id) of these records, or of all."""
        query = select(RecordRefRow.record_id, RecordRefRow.role, RecordRefRow.target_id)
        rows: list[Any] = []
        if ids is None:
            rows = list(self.session.execute(query).all())
        else:
            for chunk in chunks(ids):
                rows += self.session.execute(query.where(RecordRefRow.record_id.in_(chunk))).all()
        out: dict[int, dict[str, int]] = {}
        for record_id, role, target_id in rows:
            out.setdefault(record_id, {})[role] = target_id
        return out

    def raw_digests(self, ids: Iterable[int] | None = None) -> dict[int, list[str]]:
        query = select(EvidenceRawDigestRow.record_id, EvidenceRawDigestRow.sha256)
        rows: list[Any] = []
        if ids is None:
            rows = list(self.session.execute(query).all())
        else:
            for chunk in chunks(ids):
                rows += self.session.execute(
                    query.where(EvidenceRawDigestRow.record_id.in_(chunk))
                ).all()
        out: dict[int, list[str]] = {}
        for record_id, digest in rows:
            out.setdefault(record_id, []).append(digest)
        return out

    def decisions_named(self, ids: Iterable[str]) -> list[tuple[DecisionRow, str | None]]:
        """Decision rows with the name of the plan record each is filed under (None when
        that record is gone), one statement a chunk instead of two."""
        out: list[tuple[DecisionRow, str | None]] = []
        for chunk in chunks(ids):
            rows = self.session.execute(
                select(DecisionRow, RecordRow.name)
                .outerjoin(RecordRow, RecordRow.id == DecisionRow.plan_record_id)
                .where(DecisionRow.id.in_(chunk))
            )
            out += [(row, name) for row, name in rows]
        return out

    def rows(
        self,
        model: type[M],
        column: InstrumentedAttribute[Any] | None = None,
        values: Iterable[Any] | None = None,
    ) -> list[M]:
        """Rows of `model`: all of them, or those whose `column` is one of `values`."""
        query = select(model)
        if column is None or values is None:
            return list(self.session.scalars(query))
        out: list[M] = []
        for chunk in chunks(values):
            out += self.session.scalars(query.where(column.in_(chunk)))
        return out
