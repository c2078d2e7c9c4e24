"""Everything a decision about one plan version rests on, read from the registry.

Read in one session, then used outside any transaction: records are immutable, so the
planner and the policy engine can take their time without holding a write lock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import cast

from sqlalchemy.orm import Session

from registry.evidence_lifecycle import withdrawn_ids
from registry.gate.waiver_approvals import approvals_of
from registry.gate.waivers import WaiverRecord
from registry.observe.drift import Drift, drift, plan_claims
from registry.records import service
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.observation import Observation
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.references import pinned
from registry.records.views import RecordView
from registry.records.waiver import Waiver
from registry.records.workload import WorkloadProfile
from registry.staleness.freshness import Freshness, Versioned, assess
from registry.staleness.rules import Change, StalenessThresholds
from registry.storage.models import RecordRow, StalenessRow
from registry.storage.repository import RecordRepository, StalenessRepository


@dataclass(frozen=True)
class EvidenceItem:
    view: RecordView
    model: LoadTestEvidence
    freshness: Freshness


@dataclass(frozen=True)
class ProductionSignal:
    """The latest observation of the plan against the workload version it pins."""

    row_id: int
    ref: str
    observation: Observation
    drift: Drift


@dataclass(frozen=True)
class PlanContext:
    plan_row_id: int
    plan_view: RecordView
    plan: CapacityPlan
    workload_view: RecordView
    workload: WorkloadProfile
    provider_view: RecordView
    provider: ProviderProfile
    evidence: list[EvidenceItem]
    waivers: list[WaiverRecord]
    production: ProductionSignal | None = None

    @property
    def fresh_evidence(self) -> list[LoadTestEvidence]:
        return [item.model for item in self.evidence if item.freshness.fresh]


def _versioned(row: RecordRow) -> Versioned:
    model = service.load_model(row)
    return Versioned(
        ref=pinned(row.name, row.version),
        model=cast(WorkloadProfile | ProviderProfile | CapacityPlan, model),
    )


def _recorded_reasons(records: list[tuple[StalenessRow, RecordRow, RecordRow]]) -> list[str]:
    """The staleness the registry recorded when newer versions arrived, as reasons.

    A plan that still pins the version its evidence was measured against is judged
    against what the world is now: evidence made stale by a later workload, provider
    or plan version satisfies no policy, for any plan. The reasons read as `assess`
    writes them, so a change both see is named once (`_with_recorded`).
    """
    reasons: list[str] = []
    for staleness, cause, measured in records:
        for change in json.loads(staleness.changes):
            measured_ref = pinned(measured.name, measured.version)
            cause_ref = pinned(cause.name, cause.version)
            reason = (
                f"production drift: observation {cause_ref} of workload {measured_ref}"
                if cause.kind == RecordKind.observation.value
                else f"{measured_ref} -> {cause_ref}"
            ) + f": {Change(**change).describe()}"
            if reason not in reasons:
                reasons.append(reason)
    return reasons


def _with_recorded(freshness: Freshness, recorded: tuple[str, ...]) -> Freshness:
    """Add the recorded staleness (`_recorded_reasons`) to what `assess` found."""
    reasons = list(freshness.reasons)
    for reason in recorded:
        if reason not in reasons:
            reasons.append(reason)
    if reasons == freshness.reasons:
        return freshness
    return replace(freshness, fresh=False, reasons=reasons)


@dataclass(frozen=True)
class _Measured:
    """One evidence item and everything its freshness is judged on, but the instant."""

    view: RecordView
    model: LoadTestEvidence
    workload: Versioned
    provider: Versioned
    plan: Versioned | None
    recorded: tuple[str, ...]


@dataclass(frozen=True)
class LoadedPlan:
    """A plan's context as read, and what to judge its evidence's freshness again at
    another instant with (records are immutable: only the clock moves)."""

    context: PlanContext
    measured: tuple[_Measured, ...]
    current: tuple[Versioned, Versioned, Versioned]  # the workload, provider and plan
    limits: StalenessThresholds

    def at(self, now: datetime) -> PlanContext:
        """The context with its evidence's freshness judged at `now`."""
        return replace(
            self.context, evidence=_assessed(self.measured, self.current, now, self.limits)
        )


def _assessed(
    measured: tuple[_Measured, ...],
    current: tuple[Versioned, Versioned, Versioned],
    now: datetime,
    limits: StalenessThresholds,
) -> list[EvidenceItem]:
    workload, provider, plan = current
    return [
        EvidenceItem(
            view=item.view,
            model=item.model,
            freshness=_with_recorded(
                assess(
                    item.model,
                    measured_workload=item.workload,
                    measured_provider=item.provider,
                    measured_plan=item.plan,
                    workload=workload,
                    provider=provider,
                    plan=plan,
                    replaced_by=None,
                    now=now,
                    limits=limits,
                ),
                item.recorded,
            ),
        )
        for item in measured
    ]


def _production(
    repo: RecordRepository,
    plan: CapacityPlan,
    workload_row: RecordRow,
    workload: Versioned,
    limits: StalenessThresholds,
) -> ProductionSignal | None:
    """The latest observation of any version of this plan that pins this workload version.

    A new workload version (and a plan pinning it) leaves earlier observations behind: they
    judged a workload the plan no longer rests on. A later observation that shows no drift
    replaces one that did."""
    observed = repo.referencing(RecordKind.observation.value, "workload", workload_row.id)
    if not observed:
        return None
    plans = repo.references([row.id for row in observed])
    mine = [row for row in observed if plans[row.id]["plan"].name == plan.name]
    if not mine:
        return None
    latest = mine[-1]
    observation = cast(Observation, service.load_model(latest))
    found = drift(observation, cast(WorkloadProfile, workload.model), limits, plan_claims(plan))
    return ProductionSignal(
        row_id=latest.id,
        ref=pinned(latest.name, latest.version),
        observation=observation,
        drift=found,
    )


def load_plan_context(
    session: Session, *, plan_ref: str, now: datetime, limits: StalenessThresholds
) -> PlanContext:
    """The context of a registered plan version."""
    return load_plan(session, plan_ref=plan_ref, now=now, limits=limits).context


def load_plan(
    session: Session, *, plan_ref: str, now: datetime, limits: StalenessThresholds
) -> LoadedPlan:
    """The context of a registered plan version, and how to judge it at another instant."""
    repo = RecordRepository(session)
    plan_row = service.resolve(repo, RecordKind.plan, plan_ref, loc="plan")
    refs = repo.references([plan_row.id])[plan_row.id]
    return build_loaded(
        session,
        plan_row_id=plan_row.id,
        plan_view=service.to_view(plan_row, refs),
        plan=_versioned(plan_row),
        workload_row=refs["workload"],
        provider_row=refs["provider"],
        now=now,
        limits=limits,
    )


def build_context(
    session: Session,
    *,
    plan_row_id: int,
    plan_view: RecordView,
    plan: Versioned,
    workload_row: RecordRow,
    provider_row: RecordRow,
    now: datetime,
    limits: StalenessThresholds,
) -> PlanContext:
    """Evidence with its freshness and the applicable waivers, around one plan."""
    return build_loaded(
        session,
        plan_row_id=plan_row_id,
        plan_view=plan_view,
        plan=plan,
        workload_row=workload_row,
        provider_row=provider_row,
        now=now,
        limits=limits,
    ).context


def build_loaded(
    session: Session,
    *,
    plan_row_id: int,
    plan_view: RecordView,
    plan: Versioned,
    workload_row: RecordRow,
    provider_row: RecordRow,
    now: datetime,
    limits: StalenessThresholds,
) -> LoadedPlan:
    """`build_context`, keeping what the evidence's freshness is judged on."""
    repo = RecordRepository(session)
    workload_v, provider_v = _versioned(workload_row), _versioned(provider_row)
    latest: dict[str, RecordRow] = {}
    for row in repo.evidence_for(workload_row.name, provider_row.name):
        latest[row.name] = row  # ordered by name, version: the last one of a name wins
    # Withdrawn evidence supports nothing and blocks nothing: it is left out entirely. A
    # withdrawn latest version takes its name out; the version it replaced stays replaced.
    withdrawn = withdrawn_ids(session, [row.id for row in latest.values()])
    latest = {name: row for name, row in latest.items() if row.id not in withdrawn}
    evidence_refs = repo.references([row.id for row in latest.values()])
    recorded = StalenessRepository(session).history([row.id for row in latest.values()])
    # The versions the evidence was measured against are, as a rule, the plan's own:
    # validated once.
    known = {workload_row.id: workload_v, provider_row.id: provider_v}

    def versioned(row: RecordRow) -> Versioned:
        return known[row.id] if row.id in known else _versioned(row)

    measured = []
    for row in latest.values():
        pins = evidence_refs[row.id]
        measured.append(
            _Measured(
                view=service.to_view(row, pins),
                model=cast(LoadTestEvidence, service.load_model(row)),
                workload=versioned(pins["workload"]),
                provider=versioned(pins["provider"]),
                plan=_versioned(pins["plan"]) if "plan" in pins else None,
                recorded=tuple(_recorded_reasons(recorded[row.id])),
            )
        )
    plan_model = cast(CapacityPlan, plan.model)
    waiver_rows = repo.latest_of_series(RecordKind.waiver.value)
    approvals = approvals_of(session, [row.id for row in waiver_rows])
    waivers = [
        WaiverRecord(
            ref=pinned(row.name, row.version),
            waiver=cast(Waiver, service.load_model(row)),
            requested_by=row.created_by,
            approved_by=approvals[row.id].approved_by if row.id in approvals else None,
        )
        for row in waiver_rows
    ]
    current = (workload_v, provider_v, plan)
    context = PlanContext(
        production=_production(repo, plan_model, workload_row, workload_v, limits),
        plan_row_id=plan_row_id,
        plan_view=plan_view,
        plan=plan_model,
        workload_view=service.to_view(workload_row, {}),
        workload=cast(WorkloadProfile, workload_v.model),
        provider_view=service.to_view(provider_row, {}),
        provider=cast(ProviderProfile, provider_v.model),
        evidence=_assessed(tuple(measured), current, now, limits),
        waivers=[w for w in waivers if w.waiver.plan == plan_model.name],
    )
    return LoadedPlan(context=context, measured=tuple(measured), current=current, limits=limits)
