"""Recomputing a plan with the embedded planner, and keeping the result.

A recomputation is keyed by the plan version and the digests of the plan's, workload's
and provider's contents, the planner version, the evidence that calibrated it and the
seed, so the gate reads the same numbers the engineer saw from `capgate plan size`
unless one of those changed, and a row id pointed at another plan serves nothing. The
stored result is re-hashed against its digest whenever it is read. The planner runs
outside any transaction; only storing the result is a write.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.digest import canonical_json, content_digest
from registry.errors import Tampered
from registry.gate.context import LoadedPlan, PlanContext, load_plan
from registry.planner.result import PlanRecomputation
from registry.planner.version import PLANNER_VERSION
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database, WriteContext
from registry.storage.models import RecomputationRow
from registry.storage.repository import GateRepository

DEFAULT_SEED = 0


class RecomputationView(BaseModel):
    plan: str
    planner_version: str
    calibration_key: str
    seed: int
    digest: str
    created_at: datetime
    created_by: str
    result: PlanRecomputation


@dataclass(frozen=True)
class Sized:
    context: PlanContext
    view: RecomputationView
    row_id: int  # the recomputations row, for the gate's integrity check


def inputs_key(context: PlanContext) -> str:
    """What the result depends on besides planner, calibration and seed: the contents of
    the plan and of the workload and provider versions it pins (each re-hashed on read)."""
    return content_digest(
        {
            "plan": context.plan_view.digest,
            "workload": context.workload_view.digest,
            "provider": context.provider_view.digest,
        }
    )


def calibration_key(context: PlanContext) -> str:
    """Which evidence calibrates the planner: the fresh evidence's digests, or none."""
    digests = sorted(item.view.digest for item in context.evidence if item.freshness.fresh)
    return content_digest(digests) if digests else "none"


def _view(row: RecomputationRow, plan_ref: str) -> RecomputationView:
    from registry.audit.rows import text_intact

    if not text_intact(row.result, row.digest):
        raise Tampered(
            f"stored recomputation {row.id} of {plan_ref} was altered: its result does not "
            f"hash to its digest {row.digest}",
            details={"table": "recomputations", "id": row.id, "digest": row.digest},
        )
    return RecomputationView(
        plan=plan_ref,
        planner_version=row.planner_version,
        calibration_key=row.calibration_key,
        seed=row.seed,
        digest=row.digest,
        created_at=as_utc(row.created_at),
        created_by=row.created_by,
        result=PlanRecomputation.model_validate(json.loads(row.result)),
    )


def stored_recomputation(
    session: Session, *, plan_row_id: int, plan_ref: str, digest: str
) -> tuple[RecomputationView, int] | None:
    """The stored recomputation of this plan version whose result has ``digest`` (what a
    decision's input names), re-hashed on read; None when there is none."""
    row = GateRepository(session).recomputation_by_digest(plan_row_id, digest)
    return None if row is None else (_view(row, plan_ref), row.id)


def current_recomputation(
    session: Session, context: PlanContext, *, seed: int = DEFAULT_SEED
) -> tuple[RecomputationView, int] | None:
    """The stored recomputation `size_plan` would reuse now (same inputs, planner version,
    calibrating evidence and seed), without computing or storing anything."""
    row = GateRepository(session).recomputation(
        context.plan_row_id, inputs_key(context), PLANNER_VERSION, calibration_key(context), seed
    )
    return None if row is None else (_view(row, context.plan_view.ref), row.id)


# The planner is pure and seeded: the same inputs always give the same result, so one
# process keeps the last few results keyed by the digests of everything they depend on.
_CACHE: OrderedDict[tuple[str, ...], PlanRecomputation] = OrderedDict()
_CACHE_SIZE = 32
_CACHE_LOCK = threading.Lock()


def recompute_cached(context: PlanContext, calibration: str, seed: int) -> PlanRecomputation:
    key = (
        PLANNER_VERSION,
        content_digest(context.plan.model_dump(mode="json")),
        context.workload_view.digest,
        context.provider_view.digest,
        calibration,
        str(seed),
    )
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    fresh = [item.model for item in context.evidence if item.freshness.fresh]
    # Imported here: a stored recomputation is reused without loading the simulator.
    from registry.planner.recomputation import recompute

    result = recompute(context.plan, context.workload, context.provider, evidence=fresh, seed=seed)
    with _CACHE_LOCK:
        _CACHE[key] = result
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def read_plan(
    session: Session,
    *,
    plan_ref: str,
    now: datetime,
    limits: StalenessThresholds,
    seed: int = DEFAULT_SEED,
) -> tuple[PlanContext, Sized | None]:
    """The plan's context and its stored recomputation when its inputs are unchanged
    (None: `size_plan` would compute one), read in the caller's session."""
    loaded, sized = read_loaded_plan(session, plan_ref=plan_ref, now=now, limits=limits, seed=seed)
    return loaded.context, sized


def read_loaded_plan(
    session: Session,
    *,
    plan_ref: str,
    now: datetime,
    limits: StalenessThresholds,
    seed: int = DEFAULT_SEED,
) -> tuple[LoadedPlan, Sized | None]:
    """`read_plan`, keeping how to judge the context at another instant (the gate's
    per-process cache of plan contexts: registry.gate.context_cache)."""
    loaded = load_plan(session, plan_ref=plan_ref, now=now, limits=limits)
    context = loaded.context
    existing = GateRepository(session).recomputation(
        context.plan_row_id, inputs_key(context), PLANNER_VERSION, calibration_key(context), seed
    )
    if existing is None:
        return loaded, None
    view = _view(existing, context.plan_view.ref)
    return loaded, Sized(context=context, view=view, row_id=existing.id)


def size_plan(
    database: Database,
    *,
    plan_ref: str,
    principal: str,
    now: datetime,
    limits: StalenessThresholds,
    seed: int = DEFAULT_SEED,
    verify: Callable[[PlanContext], None] | None = None,
) -> Sized:
    """The plan's recomputation: the stored one if its inputs are unchanged, else a new one.

    `verify` sees the plan's context once it is read, before anything is computed or
    stored (the gate's integrity check: a tampered registry gets no new recomputation).
    """
    with database.reading() as session:
        context, found = read_plan(session, plan_ref=plan_ref, now=now, limits=limits, seed=seed)
    if verify is not None:
        verify(context)
    if found is not None:
        return found
    key = calibration_key(context)
    inputs = inputs_key(context)

    result = recompute_cached(context, key, seed)
    payload = result.model_dump(mode="json")

    def store(ctx: WriteContext) -> RecomputationRow:
        from registry.audit.rows import ROWS_KEY, recomputation_entry, settle

        repo = GateRepository(ctx.session)
        # A concurrent run of the same recomputation may have stored it meanwhile.
        stored = repo.recomputation(context.plan_row_id, inputs, result.planner_version, key, seed)
        if stored is not None:
            return stored
        row = RecomputationRow(
            plan_record_id=context.plan_row_id,
            inputs_key=inputs,
            planner_version=result.planner_version,
            calibration_key=key,
            seed=seed,
            result=canonical_json(payload),
            digest=content_digest(payload),
            created_at=ctx.now,
            created_by=ctx.principal,
        )
        repo.add(row)
        settle(ctx.session, row)
        ctx.record_event(
            "plan.recompute",
            {
                "plan": context.plan_view.ref,
                "planner_version": result.planner_version,
                "calibration_key": key,
                "digest": row.digest,
                ROWS_KEY: [recomputation_entry(row)],
            },
        )
        return row

    row = database.write(store, principal=principal)
    return Sized(context=context, view=_view(row, context.plan_view.ref), row_id=row.id)
