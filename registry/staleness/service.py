"""Staleness: recorded when a new version arrives, read back as lists and histories.

`on_new_version` runs inside the submitting transaction (registry.records.service.submit
calls it for every new version), so a version and the staleness it causes commit
together or not at all. Evidence is compared with the version it was *measured against*,
not with the previous version: small drifts that add up to a material change still
stale it. Age is not recorded: it is computed when asked, against the bundle's maximum.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, cast

from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.errors import FieldProblem, InvalidInput
from registry.evidence_lifecycle import withdrawal_of, withdrawn_ids
from registry.records.kinds import RecordKind
from registry.records.references import pinned
from registry.records.views import Page
from registry.staleness.freshness import SECONDS_PER_DAY
from registry.staleness.rules import StalenessThresholds, material_changes
from registry.staleness.thresholds import load_thresholds
from registry.staleness.views import (
    REPLACED_RULE,
    ChangeView,
    StaleEvidence,
    StalenessEntry,
    StalenessHistory,
    entry_reason,
)
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow, StalenessRow
from registry.storage.repository import RecordRepository, StalenessRepository

MAX_PAGE = 500
# The record_refs role under which evidence pins each kind it was measured against.
PINNED_ROLES = {
    RecordKind.workload: "workload",
    RecordKind.provider: "provider",
    RecordKind.plan: "plan",
}


def _json_safe(value: Any) -> Any:
    """Change values as JSON can hold them (infinities become strings)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def change_dicts(changes: list[Any]) -> list[dict[str, Any]]:
    out = []
    for change in changes:
        item = change.as_dict()
        item["old"], item["new"] = _json_safe(item["old"]), _json_safe(item["new"])
        out.append(item)
    return out


def insert_staleness(
    staleness: StalenessRepository,
    ctx: WriteContext,
    *,
    evidence: RecordRow,
    cause: RecordRow,
    measured: RecordRow,
    changes: list[dict[str, Any]],
    written: list[StalenessRow],
) -> bool:
    if staleness.exists(evidence.id, cause.id):
        return False
    row = staleness.add(
        StalenessRow(
            evidence_record_id=evidence.id,
            cause_record_id=cause.id,
            measured_record_id=measured.id,
            changes=json.dumps(changes, sort_keys=True),
            detected_at=ctx.now,
        )
    )
    from registry.audit.rows import settle

    settle(ctx.session, row)
    written.append(row)
    return True


def on_new_version(
    ctx: WriteContext,
    *,
    kind: RecordKind,
    row: RecordRow,
    limits: StalenessThresholds | None = None,
    written: list[StalenessRow],
) -> list[str]:
    """Record the staleness a newly stored version causes; the stale evidence refs.

    The staleness rows inserted are appended to `written`, for the submission's audit
    event to record (registry.audit.rows).

    - a workload, provider or plan version: the latest version of each evidence pinned
      to an older version of the same name is stale when the change from that pinned
      version to this one is material;
    - an evidence version N > 1: version N-1 is stale ("evidence data replaced");
    - new evidence pinned to a version that a later version materially changed is stale
      from the start (cause: that later version).
    """
    if kind in PINNED_ROLES:
        return _stale_pinned_evidence(ctx, kind=kind, row=row, limits=limits, written=written)
    if kind is RecordKind.evidence:
        return _stale_on_new_evidence(ctx, row=row, limits=limits, written=written)
    return []


def _stale_pinned_evidence(
    ctx: WriteContext,
    *,
    kind: RecordKind,
    row: RecordRow,
    limits: StalenessThresholds | None,
    written: list[StalenessRow],
) -> list[str]:
    from registry.records.service import load_model

    staleness = StalenessRepository(ctx.session)
    found = staleness.latest_evidence_pinned_before(PINNED_ROLES[kind], row)
    if not found:
        return []
    limits = limits or load_thresholds()
    new_model = load_model(row)
    old_models: dict[int, Any] = {}
    staled: list[str] = []
    for evidence, measured in found:
        if measured.id not in old_models:
            old_models[measured.id] = load_model(measured)
        changes = material_changes(old_models[measured.id], new_model, limits)
        if changes and insert_staleness(
            staleness,
            ctx,
            evidence=evidence,
            cause=row,
            measured=measured,
            changes=change_dicts(changes),
            written=written,
        ):
            staled.append(pinned(evidence.name, evidence.version))
    return staled


def _stale_on_new_evidence(
    ctx: WriteContext,
    *,
    row: RecordRow,
    limits: StalenessThresholds | None,
    written: list[StalenessRow],
) -> list[str]:
    from registry.records.service import load_model

    staleness = StalenessRepository(ctx.session)
    records = RecordRepository(ctx.session)
    staled: list[str] = []
    if row.version > 1:
        previous = records.by_version(row.kind, row.name, row.version - 1)
        if previous is not None and insert_staleness(
            staleness,
            ctx,
            evidence=previous,
            cause=row,
            measured=previous,
            changes=[
                {
                    "field": "evidence",
                    "old": previous.digest,
                    "new": row.digest,
                    "rule": REPLACED_RULE,
                    "threshold": None,
                }
            ],
            written=written,
        ):
            staled.append(pinned(previous.name, previous.version))

    pins = records.references([row.id])[row.id]
    for pin_kind, role in PINNED_ROLES.items():
        pin = pins.get(role)
        if pin is None:
            continue
        latest = records.latest(pin_kind.value, pin.name)
        if latest is None or latest.version <= pin.version:
            continue
        limits = limits or load_thresholds()
        changes = material_changes(load_model(pin), load_model(latest), limits)
        if changes and insert_staleness(
            staleness,
            ctx,
            evidence=row,
            cause=latest,
            measured=pin,
            changes=change_dicts(changes),
            written=written,
        ):
            ref = pinned(row.name, row.version)
            if ref not in staled:
                staled.append(ref)
    return staled


# ---- reads -----------------------------------------------------------------------------


def _entry(
    evidence: RecordRow, staleness: StalenessRow, cause: RecordRow, measured: RecordRow
) -> StalenessEntry:
    changes = [ChangeView.model_validate(c) for c in json.loads(staleness.changes)]
    cause_kind, measured_kind = RecordKind(cause.kind), RecordKind(measured.kind)
    cause_ref, measured_ref = (
        pinned(cause.name, cause.version),
        pinned(measured.name, measured.version),
    )
    return StalenessEntry(
        evidence=pinned(evidence.name, evidence.version),
        cause_kind=cause_kind,
        cause=cause_ref,
        measured_kind=measured_kind,
        measured=measured_ref,
        changes=changes,
        detected_at=as_utc(staleness.detected_at),
        reason=entry_reason(cause_kind, cause_ref, measured_ref, changes),
    )


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def _age(measured_at: datetime | None, now: datetime) -> float | None:
    if measured_at is None:
        return None
    return (now - measured_at).total_seconds() / SECONDS_PER_DAY


def _age_reason(age_days: float, limits: StalenessThresholds) -> str:
    return (
        f"measured {age_days:.0f} days ago, past the maximum age of "
        f"{limits.max_evidence_age_days:g} days"
    )


def _page_bounds(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(
            "invalid page", problems=[FieldProblem("limit", f"must be between 1 and {MAX_PAGE}")]
        )
    if offset < 0:
        raise InvalidInput("invalid page", problems=[FieldProblem("offset", "must be >= 0")])


def list_stale(
    session: Session,
    *,
    now: datetime,
    limit: int = 50,
    offset: int = 0,
    include_replaced: bool = False,
    limits: StalenessThresholds | None = None,
) -> Page[StaleEvidence]:
    """Stale evidence, ordered by name and version, with every reason.

    Stale means a staleness record (a material change, or replaced) or an age past the
    maximum, computed now. By default only the latest version of each evidence name is
    listed (what a plan would use); `include_replaced` lists replaced versions too.
    Withdrawn versions are never listed: they are retired, and block nothing.
    """
    _page_bounds(limit, offset)
    limits = limits or load_thresholds()
    repo = StalenessRepository(session)
    candidates: dict[int, tuple[str, int, datetime | None]] = {}
    for record_id, name, version, measured_text in repo.staled_evidence(
        latest_only=not include_replaced
    ):
        candidates[record_id] = (name, version, _parse_time(measured_text))
    for record_id, name, version, measured_text in repo.latest_evidence_measured_at():
        measured_at = _parse_time(measured_text)
        age = _age(measured_at, now)
        if age is not None and age > limits.max_evidence_age_days:
            candidates[record_id] = (name, version, measured_at)
    # Withdrawn evidence is retired: it needs no action, so it is not listed as stale.
    for record_id in withdrawn_ids(session, list(candidates)):
        del candidates[record_id]
    ordered = sorted(candidates, key=lambda rid: (candidates[rid][0], candidates[rid][1]))
    page_ids = ordered[offset : offset + limit]
    rows = repo.records_by_id(page_ids)
    history = repo.history(page_ids)
    items: list[StaleEvidence] = []
    for record_id in page_ids:
        row = rows[record_id]
        _, _, measured_at = candidates[record_id]
        entries = [_entry(row, s, c, m) for s, c, m in history[record_id]]
        age = _age(measured_at, now)
        expired = age is not None and age > limits.max_evidence_age_days
        reasons = [e.reason for e in entries]
        if expired:
            reasons.append(_age_reason(cast(float, age), limits))
        items.append(
            StaleEvidence(
                ref=pinned(row.name, row.version),
                name=row.name,
                version=row.version,
                digest=row.digest,
                measured_at=measured_at,
                age_days=None if age is None else round(age, 2),
                expired=expired,
                reasons=reasons,
                staleness=entries,
            )
        )
    return Page[StaleEvidence](items=items, total=len(ordered), limit=limit, offset=offset)


def staleness_history(
    session: Session,
    evidence_ref: str,
    *,
    now: datetime,
    limits: StalenessThresholds | None = None,
) -> StalenessHistory:
    """Every staleness record of one evidence version, whether it is stale now, and its
    withdrawal if it was withdrawn."""
    from registry.records.service import load_model, resolve

    limits = limits or load_thresholds()
    records = RecordRepository(session)
    row = resolve(records, RecordKind.evidence, evidence_ref, loc="ref")
    entries = [
        _entry(row, s, c, m) for s, c, m in StalenessRepository(session).history([row.id])[row.id]
    ]
    measured_at: datetime | None = getattr(load_model(row), "measured_at", None)
    age = _age(measured_at, now)
    reasons = [e.reason for e in entries]
    if age is not None and age > limits.max_evidence_age_days:
        reasons.append(_age_reason(age, limits))
    return StalenessHistory(
        ref=pinned(row.name, row.version),
        digest=row.digest,
        measured_at=measured_at,
        age_days=None if age is None else round(age, 2),
        max_age_days=limits.max_evidence_age_days,
        stale=bool(reasons),
        reasons=reasons,
        entries=entries,
        withdrawn=withdrawal_of(session, row),
    )
