"""All SQL for records and their references."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import JSON, ColumnElement, and_, cast, exists, func, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased
from sqlalchemy.orm.util import AliasedClass

from registry.storage.keyset import before as keyset_before
from registry.storage.keyset import bound
from registry.storage.keyset import upper_bound as keyset_upper_bound
from registry.storage.models import (
    Base,
    DecisionRow,
    EvidenceRawDigestRow,
    RecomputationRow,
    RecordRefRow,
    RecordRow,
    StalenessRow,
    WithdrawalRow,
)

M = TypeVar("M", bound=Base)
# Values per IN (...) list: far below every driver's parameter limit.
IN_CHUNK = 500

# Aliases are built once: SQLAlchemy memoises each alias's column adaptation on the alias
# itself, so a fresh alias per query paid that again on every call (about 5 ms of a gate
# check's 30). Each is used at most once per statement.
_TARGET = aliased(RecordRow, name="target")
_WORKLOAD_REF = aliased(RecordRefRow, name="workload_ref")
_PROVIDER_REF = aliased(RecordRefRow, name="provider_ref")
_WORKLOAD = aliased(RecordRow, name="workload")
_PROVIDER = aliased(RecordRow, name="provider")
_NEWER = aliased(RecordRow, name="newer")
_EVIDENCE = aliased(RecordRow, name="evidence")
_PINNED = aliased(RecordRow, name="pinned")
_CAUSE = aliased(RecordRow, name="cause")
_MEASURED = aliased(RecordRow, name="measured")


class RecordRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def by_version(self, kind: str, name: str, version: int) -> RecordRow | None:
        return self.session.scalar(
            select(RecordRow).where(
                RecordRow.kind == kind, RecordRow.name == name, RecordRow.version == version
            )
        )

    def latest(self, kind: str, name: str) -> RecordRow | None:
        return self.session.scalar(
            select(RecordRow)
            .where(RecordRow.kind == kind, RecordRow.name == name)
            .order_by(RecordRow.version.desc())
            .limit(1)
        )

    def by_digest(self, kind: str, digest: str) -> RecordRow | None:
        """The EARLIEST version with this digest.

        A digest covers the record's name, so every version holding it belongs to one
        series; several do when a revert repeated an earlier version's content. The
        earliest is the one a `sha256:` reference has always meant (pins and references
        taken before the revert point at it) and the one a revert names, so the answer
        never changes as versions are added. storage/sqlite_reads.py asks the same.
        """
        return self.session.scalar(
            select(RecordRow)
            .where(RecordRow.kind == kind, RecordRow.digest == digest)
            .order_by(RecordRow.version)
            .limit(1)
        )

    def by_id(self, record_id: int) -> RecordRow | None:
        return self.session.get(RecordRow, record_id)

    def max_version(self, kind: str, name: str) -> int:
        value = self.session.scalar(
            select(func.max(RecordRow.version)).where(
                RecordRow.kind == kind, RecordRow.name == name
            )
        )
        return int(value or 0)

    def add(self, row: RecordRow, refs: dict[str, int]) -> RecordRow:
        self.session.add(row)
        # Flush now so that a lost version race surfaces inside the unit of work.
        self.session.flush()
        for role, target_id in refs.items():
            self.session.add(RecordRefRow(record_id=row.id, role=role, target_id=target_id))
        self.session.flush()
        return row

    def references(self, record_ids: Sequence[int]) -> dict[int, dict[str, RecordRow]]:
        """For each record id, its pinned references by role."""
        if not record_ids:
            return {}
        rows = self.session.execute(
            select(RecordRefRow.record_id, RecordRefRow.role, _TARGET)
            .join(_TARGET, _TARGET.id == RecordRefRow.target_id)
            .where(RecordRefRow.record_id.in_(record_ids))
        ).all()
        out: dict[int, dict[str, RecordRow]] = {rid: {} for rid in record_ids}
        for record_id, role, row in rows:
            out[record_id][role] = row
        return out

    def count_series(self, kind: str) -> int:
        return int(
            self.session.scalar(
                select(func.count(func.distinct(RecordRow.name))).where(RecordRow.kind == kind)
            )
            or 0
        )

    def latest_of_series(
        self, kind: str, *, limit: int | None = None, offset: int = 0
    ) -> list[RecordRow]:
        """The latest version of each name, ordered by name (versions are 1..latest)."""
        latest = (
            select(
                RecordRow.name.label("name"),
                func.max(RecordRow.version).label("version"),
            )
            .where(RecordRow.kind == kind)
            .group_by(RecordRow.name)
            .order_by(RecordRow.name)
            .limit(limit)
            .offset(offset)
            .subquery()
        )
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    latest,
                    (RecordRow.name == latest.c.name) & (RecordRow.version == latest.c.version),
                )
                .where(RecordRow.kind == kind)
                .order_by(RecordRow.name)
            )
        )

    def versions(self, kind: str, name: str, *, limit: int, offset: int) -> list[RecordRow]:
        return list(
            self.session.scalars(
                select(RecordRow)
                .where(RecordRow.kind == kind, RecordRow.name == name)
                .order_by(RecordRow.version)
                .limit(limit)
                .offset(offset)
            )
        )

    def referencing(self, kind: str, role: str, target_id: int) -> list[RecordRow]:
        """Every version of ``kind`` whose ``role`` reference is the row ``target_id``,
        oldest first."""
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    RecordRefRow,
                    (RecordRefRow.record_id == RecordRow.id) & (RecordRefRow.role == role),
                )
                .where(RecordRow.kind == kind, RecordRefRow.target_id == target_id)
                .order_by(RecordRow.id)
            )
        )

    def evidence_for(self, workload_name: str, provider_name: str) -> list[RecordRow]:
        """Every evidence version measured against any version of both named records."""
        return list(
            self.session.scalars(
                select(RecordRow)
                .join(
                    _WORKLOAD_REF,
                    (_WORKLOAD_REF.record_id == RecordRow.id) & (_WORKLOAD_REF.role == "workload"),
                )
                .join(_WORKLOAD, _WORKLOAD.id == _WORKLOAD_REF.target_id)
                .join(
                    _PROVIDER_REF,
                    (_PROVIDER_REF.record_id == RecordRow.id) & (_PROVIDER_REF.role == "provider"),
                )
                .join(_PROVIDER, _PROVIDER.id == _PROVIDER_REF.target_id)
                .where(
                    RecordRow.kind == "evidence",
                    _WORKLOAD.name == workload_name,
                    _PROVIDER.name == provider_name,
                )
                .order_by(RecordRow.name, RecordRow.version)
            )
        )


class PlanVersion(NamedTuple):
    """The plan version a listed decision names (a record's id, name and version)."""

    id: int
    name: str
    version: int


class GateRepository:
    """SQL for recomputations and decisions."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def recomputation(
        self,
        plan_record_id: int,
        inputs_key: str,
        planner_version: str,
        calibration_key: str,
        seed: int,
    ) -> RecomputationRow | None:
        """The stored recomputation of exactly these inputs.

        Keyed by `inputs_key` (the digests of the plan, workload and provider contents)
        as well as the plan's row id: a row id pointed elsewhere cannot serve the
        recomputation of other content.
        """
        return self.session.scalar(
            select(RecomputationRow).where(
                RecomputationRow.plan_record_id == plan_record_id,
                RecomputationRow.inputs_key == inputs_key,
                RecomputationRow.planner_version == planner_version,
                RecomputationRow.calibration_key == calibration_key,
                RecomputationRow.seed == seed,
            )
        )

    def recomputation_by_digest(self, plan_record_id: int, digest: str) -> RecomputationRow | None:
        """A stored recomputation of this plan version with this result digest (the one a
        decision's input names), the earliest if the same result was stored twice."""
        return self.session.scalar(
            select(RecomputationRow)
            .where(
                RecomputationRow.plan_record_id == plan_record_id,
                RecomputationRow.digest == digest,
            )
            .order_by(RecomputationRow.id)
            .limit(1)
        )

    def add(self, row: RecomputationRow | DecisionRow) -> None:
        self.session.add(row)
        self.session.flush()

    def decision(self, decision_id: str) -> DecisionRow | None:
        return self.session.get(DecisionRow, decision_id)

    def last_decision(self, plan_name: str) -> tuple[str, str] | None:
        """(id, input) of the plan's newest decision, any version: the order and index
        `decisions` pages by, one row."""
        found = self.session.execute(
            select(DecisionRow.id, DecisionRow.input)
            .where(DecisionRow.plan_name == plan_name)
            .order_by(DecisionRow.created_at.desc(), DecisionRow.id.desc())
            .limit(1)
        ).first()
        return None if found is None else (found[0], found[1])

    def decisions(
        self,
        *,
        plan_name: str | None,
        outcome: str | None,
        principal: str | None,
        since: datetime | None,
        until: datetime | None,
        limit: int,
        offset: int,
        plan_version: int | None = None,
        after: tuple[datetime, str] | None = None,
        count: bool = False,
    ) -> tuple[list[tuple[DecisionRow, PlanVersion]], int | None]:
        """Newest first by (created_at, id), `limit` + 1 rows so the caller knows whether
        a next page exists. Every filter combination has an index ending in that order
        (migration 0008): a page is one range scan. `count` adds the total."""
        query = select(DecisionRow)
        if plan_name is not None and plan_version is not None:
            # name@vN is one record: filter on its id, as the index does.
            record_id = self.session.scalar(
                select(RecordRow.id).where(
                    RecordRow.kind == "plan",
                    RecordRow.name == plan_name,
                    RecordRow.version == plan_version,
                )
            )
            query = query.where(DecisionRow.plan_record_id == (record_id or -1))
        elif plan_name is not None:
            query = query.where(DecisionRow.plan_name == plan_name)
        if outcome is not None:
            query = query.where(DecisionRow.outcome == outcome)
        if principal is not None:
            query = query.where(DecisionRow.principal == principal)
        if since is not None:
            query = query.where(DecisionRow.created_at >= bound("since", since))
        before = bound("until", until) if until is not None else None
        total = None
        if count:
            counted = query if before is None else query.where(DecisionRow.created_at < before)
            total = int(
                self.session.scalar(select(func.count()).select_from(counted.subquery())) or 0
            )
        # One upper bound, so that the index range ends where the page starts.
        before, after = keyset_upper_bound(before, after)
        if before is not None:
            query = query.where(DecisionRow.created_at < before)
        if after is not None:
            query = query.where(keyset_before(DecisionRow.created_at, DecisionRow.id, after))
        decisions = list(
            self.session.scalars(
                query.order_by(DecisionRow.created_at.desc(), DecisionRow.id.desc())
                .limit(limit + 1)
                .offset(offset)
            )
        )
        # A decision names its plan version: the plans' contents are not read, and plain
        # rows cost a tenth of the ORM objects (whose deferred columns were most of it).
        plans = {
            id_: PlanVersion(id_, name, version)
            for id_, name, version in self.session.execute(
                select(RecordRow.id, RecordRow.name, RecordRow.version).where(
                    RecordRow.id.in_({d.plan_record_id for d in decisions})
                )
            )
        }
        return [(d, plans[d.plan_record_id]) for d in decisions], total

    def latest_decision_per_plan(self) -> list[tuple[DecisionRow, RecordRow]]:
        """The newest non-error decision for each plan name: the plans still in use."""
        rows = self.session.execute(
            select(DecisionRow, RecordRow)
            .join(RecordRow, RecordRow.id == DecisionRow.plan_record_id)
            .where(DecisionRow.outcome != "error")
            .order_by(RecordRow.name, DecisionRow.created_at)
        ).all()
        latest: dict[str, tuple[DecisionRow, RecordRow]] = {}
        for decision, plan in rows:
            latest[plan.name] = (decision, plan)
        return list(latest.values())


# ---- staleness -------------------------------------------------------------------------


def _measured_at_text(session: Session, record: type[RecordRow] | AliasedClass[RecordRow]) -> Any:
    """The evidence content's `measured_at` (ISO text), extracted by the database."""
    if session.get_bind().dialect.name == "postgresql":
        return func.json_extract_path_text(cast(record.content, JSON), "measured_at")
    return func.json_extract(record.content, "$.measured_at")


def _is_latest(record: type[RecordRow] | AliasedClass[RecordRow]) -> ColumnElement[bool]:
    """No newer version of the same series exists (uses the (kind, name, version) index)."""
    return ~exists().where(
        _NEWER.kind == record.kind, _NEWER.name == record.name, _NEWER.version > record.version
    )


class StalenessRepository:
    """All SQL for staleness records and the evidence they point at."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def latest_evidence_pinned_before(
        self, role: str, target: RecordRow, *, inclusive: bool = False
    ) -> list[tuple[RecordRow, RecordRow]]:
        """(evidence, pinned version) for the latest version of each evidence name whose
        `role` reference points at an older version of `target`'s series (or at `target`
        itself too, when ``inclusive``)."""
        rows = self.session.execute(
            select(_EVIDENCE, _PINNED)
            .join(
                RecordRefRow, (RecordRefRow.record_id == _EVIDENCE.id) & (RecordRefRow.role == role)
            )
            .join(_PINNED, _PINNED.id == RecordRefRow.target_id)
            .where(
                _EVIDENCE.kind == "evidence",
                _PINNED.kind == target.kind,
                _PINNED.name == target.name,
                _PINNED.version <= target.version
                if inclusive
                else _PINNED.version < target.version,
                _is_latest(_EVIDENCE),
            )
            .order_by(_EVIDENCE.name)
        ).all()
        return [(row[0], row[1]) for row in rows]

    def exists(self, evidence_id: int, cause_id: int) -> bool:
        found = self.session.scalar(
            select(StalenessRow.id).where(
                StalenessRow.evidence_record_id == evidence_id,
                StalenessRow.cause_record_id == cause_id,
            )
        )
        return found is not None

    def add(self, row: StalenessRow) -> StalenessRow:
        self.session.add(row)
        self.session.flush()
        return row

    def history(
        self, evidence_ids: Sequence[int]
    ) -> dict[int, list[tuple[StalenessRow, RecordRow, RecordRow]]]:
        """For each evidence id: (staleness, cause, measured) in the order detected."""
        out: dict[int, list[tuple[StalenessRow, RecordRow, RecordRow]]] = {
            rid: [] for rid in evidence_ids
        }
        if not evidence_ids:
            return out
        rows = self.session.execute(
            select(StalenessRow, _CAUSE, _MEASURED)
            .join(_CAUSE, _CAUSE.id == StalenessRow.cause_record_id)
            .join(_MEASURED, _MEASURED.id == StalenessRow.measured_record_id)
            .where(StalenessRow.evidence_record_id.in_(evidence_ids))
            .order_by(StalenessRow.detected_at, StalenessRow.id)
        ).all()
        for staleness, cause_row, measured_row in rows:
            out[staleness.evidence_record_id].append((staleness, cause_row, measured_row))
        return out

    def staled_evidence(self, *, latest_only: bool) -> list[tuple[int, str, int, str | None]]:
        """(id, name, version, measured_at text) of evidence with staleness records."""
        query = select(
            RecordRow.id,
            RecordRow.name,
            RecordRow.version,
            _measured_at_text(self.session, RecordRow),
        ).where(
            RecordRow.kind == "evidence",
            exists().where(StalenessRow.evidence_record_id == RecordRow.id),
        )
        if latest_only:
            query = query.where(_is_latest(RecordRow))
        return [(r[0], r[1], r[2], r[3]) for r in self.session.execute(query).all()]

    def latest_evidence_measured_at(self) -> list[tuple[int, str, int, str | None]]:
        """(id, name, version, measured_at text) of the latest version of each evidence."""
        query = select(
            RecordRow.id,
            RecordRow.name,
            RecordRow.version,
            _measured_at_text(self.session, RecordRow),
        ).where(RecordRow.kind == "evidence", _is_latest(RecordRow))
        return [(r[0], r[1], r[2], r[3]) for r in self.session.execute(query).all()]

    def records_by_id(self, record_ids: Sequence[int]) -> dict[int, RecordRow]:
        if not record_ids:
            return {}
        rows = self.session.scalars(select(RecordRow).where(RecordRow.id.in_(record_ids)))
        return {row.id: row for row in rows}


# ---- evidence lifecycle: raw digests and withdrawals -------------------------------------


class EvidenceLifecycleRepository:
    """SQL for the raw-file digests evidence claims and for evidence withdrawals."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add_raw_digests(self, record_id: int, digests: Sequence[str]) -> None:
        for digest in sorted(set(digests)):
            self.session.add(EvidenceRawDigestRow(record_id=record_id, sha256=digest))
        self.session.flush()

    def measured_from(self, digests: Sequence[str]) -> list[tuple[str, RecordRow]]:
        """(digest, evidence) for every evidence version claiming one of `digests`, oldest
        first. Withdrawn versions count too: withdrawing a record does not change what its
        raw file was measured against."""
        if not digests:
            return []
        query = (
            select(EvidenceRawDigestRow.sha256, RecordRow)
            .join(RecordRow, RecordRow.id == EvidenceRawDigestRow.record_id)
            .where(EvidenceRawDigestRow.sha256.in_(sorted(set(digests))))
            .order_by(RecordRow.id, EvidenceRawDigestRow.sha256)
        )
        return [(row[0], row[1]) for row in self.session.execute(query).all()]

    def add_withdrawal(self, row: WithdrawalRow) -> WithdrawalRow:
        self.session.add(row)
        # Flush now: a concurrent withdrawal of the same version fails here, inside the unit.
        self.session.flush()
        return row

    def withdrawals_of(self, record_ids: Sequence[int]) -> dict[int, WithdrawalRow]:
        """The withdrawal of each given evidence id that has one."""
        if not record_ids:
            return {}
        rows = self.session.scalars(
            select(WithdrawalRow).where(WithdrawalRow.evidence_record_id.in_(record_ids))
        )
        return {row.evidence_record_id: row for row in rows}

    def withdrawals(
        self, *, limit: int, offset: int
    ) -> tuple[list[tuple[WithdrawalRow, RecordRow]], int]:
        """Withdrawals, newest first, with the evidence version each withdrew."""
        total = self.session.scalar(select(func.count()).select_from(WithdrawalRow)) or 0
        rows = self.session.execute(
            select(WithdrawalRow, RecordRow)
            .join(RecordRow, RecordRow.id == WithdrawalRow.evidence_record_id)
            .order_by(WithdrawalRow.withdrawn_at.desc(), WithdrawalRow.id.desc())
            .limit(limit)
            .offset(offset)
        ).all()
        return [(w, r) for w, r in rows], int(total)


# ---- integrity: the stored rows the audit trail is checked against ----------------------

_RECORD_COLUMNS = (
    RecordRow.id,
    RecordRow.kind,
    RecordRow.name,
    RecordRow.version,
    RecordRow.digest,
    RecordRow.created_at,
    RecordRow.created_by,
    RecordRow.reverts_version,
)


def _chunks(values: Iterable[Any]) -> list[list[Any]]:
    ordered = sorted(set(values))
    return [ordered[i : i + IN_CHUNK] for i in range(0, len(ordered), IN_CHUNK)]


class IntegrityRepository:
    """Reads for registry.audit.integrity: whole tables (audit verify) or the few rows
    one decision rests on (the gate)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def records(self, ids: Iterable[int] | None = None, *, content: bool) -> list[Any]:
        """Record rows (all, or these ids) with their columns; `content` too if asked."""
        columns: tuple[Any, ...] = (
            (*_RECORD_COLUMNS, RecordRow.content) if content else _RECORD_COLUMNS
        )
        query = select(*columns).order_by(RecordRow.id)
        if ids is None:
            return list(self.session.execute(query).all())
        out: list[Any] = []
        for chunk in _chunks(ids):
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
            (kind, chunk) for kind, names in sorted(by_kind.items()) for chunk in _chunks(names)
        ]
        out: list[Any] = []
        batch: list[tuple[str, list[Any]]] = []
        for index, pair in enumerate(pairs):
            batch.append(pair)
            last = index == len(pairs) - 1
            if last or sum(len(c) for _, c in batch) + len(pairs[index + 1][1]) > IN_CHUNK:
                where = or_(*(and_(RecordRow.kind == k, RecordRow.name.in_(c)) for k, c in batch))
                out += self.session.execute(select(*_RECORD_COLUMNS).where(where)).all()
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
            for chunk in _chunks(ids):
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
            for chunk in _chunks(ids):
                rows += self.session.execute(
                    query.where(EvidenceRawDigestRow.record_id.in_(chunk))
                ).all()
        out: dict[int, list[str]] = {}
        for record_id, digest in rows:
            out.setdefault(record_id, []).append(digest)
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
        for chunk in _chunks(values):
            out += self.session.scalars(query.where(column.in_(chunk)))
        return out
