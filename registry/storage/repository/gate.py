"""Decisions, recomputations and what a gate check reads of them."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import JSON, cast, func, select
from sqlalchemy.orm import Session

from registry.storage.keyset import before as keyset_before
from registry.storage.keyset import bound
from registry.storage.keyset import upper_bound as keyset_upper_bound
from registry.storage.models import (
    DecisionRow,
    RecomputationRow,
    RecordRow,
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

    def last_decision(self, plan_name: str) -> tuple[str, str | None] | None:
        """(id, calibration) of the plan's newest decision, any version: the order and
        index `decisions` pages by, one row. The calibration its input was decided with
        (``recomputation.calibration``, JSON text; None when the input has none) is taken
        out of the input by the database: the rest of a 7 KB input is neither sent nor
        parsed here, on every gate check."""
        if self.session.get_bind().dialect.name == "postgresql":
            calibration = func.json_extract_path_text(
                cast(DecisionRow.input, JSON), "recomputation", "calibration"
            )
        else:
            calibration = func.json_extract(DecisionRow.input, "$.recomputation.calibration")
        found = self.session.execute(
            select(DecisionRow.id, calibration)
            .where(DecisionRow.plan_name == plan_name)
            .order_by(DecisionRow.created_at.desc(), DecisionRow.id.desc())
            .limit(1)
        ).first()
        if found is None:
            return None
        # SQLite hands a number back as a number; an object comes back as JSON text.
        return found[0], found[1] if isinstance(found[1], str) else None

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
