"""Applying waivers: explicit, owned and expiring; a waived violation stays visible."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from registry.errors import FieldProblem, InvalidInput
from registry.records.waiver import Waiver

EXPIRY_WARNING = timedelta(days=30)


@dataclass(frozen=True)
class WaiverRecord:
    ref: str
    waiver: Waiver
    requested_by: str
    # Four eyes: None until a different principal with the approver role approves it.
    approved_by: str | None


@dataclass
class WaiverOutcome:
    remaining: list[dict[str, object]] = field(default_factory=list)
    waived: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    used: list[str] = field(default_factory=list)


def check_new_waiver(waiver: Waiver, *, now: datetime, max_days: float | None = None) -> None:
    """A waiver must expire in the future and within the maximum lifetime (policy data)."""
    if max_days is None:
        from registry.staleness.thresholds import load_thresholds

        max_days = load_thresholds().waiver_max_lifetime_days
    problem: str | None = None
    if waiver.expires_at <= now:
        problem = (
            f"{waiver.expires_at.isoformat()} has already passed: an expired waiver waives nothing"
        )
    elif waiver.expires_at - now > timedelta(days=max_days):
        problem = (
            f"{waiver.expires_at.isoformat()} is more than {max_days:g} days away (the maximum "
            "lifetime, policy data waiver_max_lifetime_days): an exception is revisited, "
            "not granted for good"
        )
    if problem is not None:
        raise InvalidInput("invalid waiver record", problems=[FieldProblem("expires_at", problem)])


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
    plan_ref: str,
    now: datetime,
) -> WaiverOutcome:
    """Waive what active waivers granted for this very plan version cover.

    A waiver granted for an earlier version does not cover a later one (the later plan
    may be worse): it is named in a warning, to be granted again for the new version.
    """
    outcome = WaiverOutcome()
    warned: set[str] = set()
    for violation in violations:
        named = [w for w in waivers if _matches(w.waiver, plan_name, violation)]
        matching = [w for w in named if w.waiver.granted_for == plan_ref]
        for other in (w for w in named if w.waiver.granted_for != plan_ref):
            if other.ref not in warned:
                warned.add(other.ref)
                outcome.warnings.append(
                    f"waiver {other.ref} for {other.waiver.policy} was granted for "
                    f"{other.waiver.granted_for}, not {plan_ref}: not applied; grant it for "
                    f"{plan_ref} (granted_for) if the exception still holds"
                )
        for waiting in (w for w in matching if w.approved_by is None):
            if waiting.ref not in warned:
                warned.add(waiting.ref)
                outcome.warnings.append(
                    f"waiver {waiting.ref} for {waiting.waiver.policy} (requested by "
                    f"{waiting.requested_by}) is pending approval: not applied"
                )
        matching = [w for w in matching if w.approved_by is not None]
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
                "waiver_requested_by": chosen.requested_by,
                "waiver_approved_by": chosen.approved_by,
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
