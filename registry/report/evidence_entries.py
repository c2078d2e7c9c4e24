"""The report's evidence rows: each load test as the report's basis judged it (the gate at the
decision, else now), how it stands now when that differs, and whether it calibrated the
recomputation (and why not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from registry.gate.context import EvidenceItem, PlanContext
from registry.planner.result import PlanRecomputation
from registry.records import service
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.storage.repository import RecordRepository


@dataclass(frozen=True)
class EvidenceEntry:
    ref: str
    name: str
    digest: str
    tool: str
    entry: str  # imported or declared
    measured_at: datetime | None
    measured_against: dict[str, str]
    replicas: int | None
    offered_rps_per_replica: float | None
    classes: list[str]
    fresh: bool  # as the report's basis judged it: at the decision, else now
    age_days: float | None
    reasons: list[str]
    now: str  # how it stands now, when that differs from the decision's view ("" if not)
    calibration: str  # whether it calibrated the recomputation, and why not
    model: LoadTestEvidence | None = field(default=None, compare=False, repr=False)


def calibration_use(name: str, fresh: bool, result: PlanRecomputation | None) -> str:
    if result is None:
        return "no recomputation"
    calibration = result.calibration
    if name in calibration.source_evidence:
        if calibration.fitted:
            return "calibrated the planner"
        return "offered for calibration; the fit was rejected, defaults kept"
    if name in calibration.ignored_evidence:
        return f"not used: {calibration.ignored_evidence[name]}"
    return "not used: stale" if not fresh else "not used"


def _now_text(item: EvidenceItem | None, fresh_then: bool) -> str:
    if item is None:
        return "withdrawn or replaced by a newer version since"
    if item.freshness.fresh == fresh_then:
        return ""
    if item.freshness.fresh:
        return "fresh now"
    return "stale now: " + "; ".join(item.freshness.reasons)


def _entry(
    model: LoadTestEvidence,
    *,
    ref: str,
    digest: str,
    fresh: bool,
    age_days: float | None,
    reasons: list[str],
    now: str,
    result: PlanRecomputation | None,
) -> EvidenceEntry:
    offered = model.offered
    per_replica = None
    if offered.request_rate_rps is not None:
        per_replica = offered.request_rate_rps / offered.replicas
    return EvidenceEntry(
        ref=ref,
        name=model.name,
        digest=digest,
        tool=model.tool.name + (f" {model.tool.version}" if model.tool.version else ""),
        entry=model.provenance.entry.value,
        measured_at=model.measured_at,
        measured_against=model.measured_against.model_dump(exclude_none=True),
        replicas=offered.replicas,
        offered_rps_per_replica=per_replica,
        classes=list(model.results.per_class),
        fresh=fresh,
        age_days=age_days,
        reasons=reasons,
        now=now,
        calibration=calibration_use(model.name, fresh, result),
        model=model,
    )


def evidence_now(context: PlanContext, result: PlanRecomputation | None) -> list[EvidenceEntry]:
    return [
        _entry(
            item.model,
            ref=item.view.ref,
            digest=item.view.digest,
            fresh=item.freshness.fresh,
            age_days=item.freshness.age_days,
            reasons=list(item.freshness.reasons),
            now="",
            result=result,
        )
        for item in context.evidence
    ]


def evidence_at_decision(
    session: Session,
    context: PlanContext,
    document: dict[str, Any],
    result: PlanRecomputation | None,
) -> list[EvidenceEntry]:
    by_digest = {item.view.digest: item for item in context.evidence}
    repo = RecordRepository(session)
    out = []
    for seen in document.get("evidence", []):
        item = by_digest.get(seen["digest"])
        model: LoadTestEvidence
        if item is not None:
            model = item.model
        else:
            row = service.resolve(repo, RecordKind.evidence, seen["ref"], loc="evidence")
            loaded = service.load_model(row)
            assert isinstance(loaded, LoadTestEvidence)
            model = loaded
        out.append(
            _entry(
                model,
                ref=seen["ref"],
                digest=seen["digest"],
                fresh=bool(seen.get("fresh")),
                age_days=seen.get("age_days"),
                reasons=list(seen.get("stale_reasons", [])),
                now=_now_text(item, bool(seen.get("fresh"))),
                result=result,
            )
        )
    return out
