"""Applying waivers: explicit, owned and expiring; a waived violation stays visible."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from registry.records.waiver import Waiver

EXPIRY_WARNING = timedelta(days=30)


@dataclass(frozen=True)
class WaiverRecord:
    ref: str
    waiver: Waiver


@dataclass
class WaiverOutcome:
    remaining: list[dict[str, object]] = field(default_factory=list)
    waived: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    used: list[str] = field(default_factory=list)


def _matches(waiver: Waiver, plan_name: str, violation: dict[str, object]) -> bool:
    return (
        waiver.plan == plan_name
        and waiver.policy == violation.get("policy")
        and (waiver.rule is None or waiver.rule == violation.get("rule"))
    )


def apply_waivers(
    violations: list[dict[str, object]],
    waivers: list[WaiverRecord],
    *,
    plan_name: str,
    now: datetime,
) -> WaiverOutcome:
    outcome = WaiverOutcome()
    warned: set[str] = set()
    for violation in violations:
        matching = [w for w in waivers if _matches(w.waiver, plan_name, violation)]
        active = [w for w in matching if w.waiver.expires_at > now]
        for expired in (w for w in matching if w.waiver.expires_at <= now):
            if expired.ref not in warned:
                warned.add(expired.ref)
                outcome.warnings.append(
                    f"waiver {expired.ref} for {expired.waiver.policy} expired at "
                    f"{expired.waiver.expires_at.isoformat()}: not applied"
                )
        if not active:
            outcome.remaining.append(violation)
            continue
        # The waiver that lasts longest answers for the violation.
        chosen = max(active, key=lambda w: w.waiver.expires_at)
        outcome.waived.append(
            {
                **violation,
                "waived_by": chosen.ref,
                "waiver_owner": chosen.waiver.owner,
                "waiver_expires_at": chosen.waiver.expires_at.isoformat(),
            }
        )
        if chosen.ref not in outcome.used:
            outcome.used.append(chosen.ref)
        if chosen.waiver.expires_at - now <= EXPIRY_WARNING and chosen.ref not in warned:
            warned.add(chosen.ref)
            days = (chosen.waiver.expires_at - now).total_seconds() / 86400
            outcome.warnings.append(
                f"waiver {chosen.ref} ({chosen.waiver.policy}, owner {chosen.waiver.owner}) "
                f"expires in {days:.0f} days, at {chosen.waiver.expires_at.isoformat()}"
            )
    return outcome
