"""Every record series belongs to a team: only its members publish the next version.

A series (kind, name) is claimed by its first publisher, in the same transaction as its
first version, for the team that publication names:

- a plan: its `owner` field (a team the publisher is in);
- a waiver: the team of the plan it waives; evidence and observations that name a plan
  (imported evidence included): that plan's team, so one team cannot file evidence or
  observations under another team's plan;
- anything else (workloads, providers, evidence without a plan): the team asked for
  (`?team=`, `capgate ... submit --team`), else the record's `owner` when it is one of
  the publisher's teams, else the publisher's only team (with several and none named,
  the first in alphabetical order; the response's owner view says which).

A later version by a principal outside the owner team is refused (403, naming the
owner); an admin moves a series with a transfer (`capgate owner transfer`, POST
/v1/owners/{kind}/{name}/transfers), and may name a team for a series nobody has
published yet. Claims and transfers are rows of `series_owners`, each recorded by its
own audit event and verified with every other covered table (registry.audit.integrity).

Series published before migration 0010 have no row: their owner is what their records
state (a plan's `owner`; a waiver, evidence or observation: the team of the plan it
names). A series with neither is unowned, and team-scoped credentials may not publish
to it until an admin names a team: refusing is the safe side of not knowing.

Principals without a team restriction (the local user of an embedded registry) pass
every check here: the database file is their boundary. Their new series are claimed the
same way when a team can be told, else left unowned.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.audit.rows import ROWS_KEY, series_owner_entry, settle
from registry.auth.identity import Identity
from registry.auth.tokens import TEAM_PATTERN
from registry.errors import Conflict, FieldProblem, Forbidden, InvalidInput
from registry.records.kinds import RecordKind
from registry.records.references import parse_ref
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow, SeriesOwnerRow

FIRST_PUBLISHER = "first publisher"
# Kinds whose series belong with the plan their records name.
PLAN_BOUND = (RecordKind.waiver, RecordKind.evidence, RecordKind.observation)


# Every write route's ownership rule, beside its roles in registry.auth.access (paths
# without /v1). "owner: ..." routes write something a team owns and check it here;
# "any team: ..." routes say why no team boundary applies. tests/api/test_ownership_routes.py
# walks the application's routes: a write route missing here fails it, and every
# "owner:" route is exercised as a member and as an outsider of the owner team.
OWNER = "owner: "
ANY_TEAM = "any team: "
RULES: dict[tuple[str, str], str] = {
    ("POST", "/workloads"): OWNER + "the series' owner team publishes its next version",
    ("POST", "/providers"): OWNER + "the series' owner team publishes its next version",
    ("POST", "/plans"): OWNER + "the plan's owner team, named by its `owner` field",
    ("POST", "/evidence"): OWNER + "the series' team; under a plan, the plan's team",
    ("POST", "/evidence/import"): OWNER + "imported evidence belongs to the plan's team",
    ("POST", "/observations"): OWNER + "the observed plan's team",
    ("POST", "/waivers"): OWNER + "the waived plan's team, and the waiver series' owner",
    ("POST", "/waivers/{ref}/approvals"): OWNER
    + "an approver of the waived plan's team (policy data waiver_approval)",
    ("POST", "/plans/{ref}/recomputations"): ANY_TEAM
    + "a deterministic re-derivation of a plan's sizing; it changes no series",
    ("POST", "/sizing"): ANY_TEAM + "sizes the plan in the body; stores nothing of a team's",
    ("POST", "/gate/checks"): ANY_TEAM + "a decision about a plan; it changes no series",
    ("POST", "/gate/rechecks"): ANY_TEAM + "re-runs gate checks; it changes no series",
    ("POST", "/evidence/{ref}/withdrawals"): ANY_TEAM + "an admin's act, audited",
    ("POST", "/owners/{kind}/{name}/transfers"): ANY_TEAM + "an admin's act, audited",
    ("POST", "/tokens"): ANY_TEAM + "an admin's act, audited",
    ("POST", "/tokens/{token_id}/revocation"): ANY_TEAM + "an admin's act, audited",
    ("POST", "/policy-releases"): ANY_TEAM + "the policy is global (four eyes)",
    ("POST", "/policy-releases/{ref}/approvals"): ANY_TEAM + "the policy is global (four eyes)",
    ("POST", "/decision-logs"): ANY_TEAM + "OPA sidecars report their decisions",
    ("POST", "/audit/acknowledgements"): ANY_TEAM + "an admin's act on the whole registry, audited",
}


class Assignment(BaseModel):
    team: str
    assigned_by: str
    assigned_at: datetime
    reason: str


class SeriesOwner(BaseModel):
    """Who owns a series now, how that is known, and every assignment before."""

    kind: RecordKind
    name: str
    team: str | None
    # "assigned": a series_owners row; "stated": read from records that predate them;
    # "unowned": neither (only admins can change that).
    source: str
    history: list[Assignment]


# ---- reading the owner ---------------------------------------------------------------


def _rows(session: Session, kind: RecordKind, name: str) -> list[SeriesOwnerRow]:
    return list(
        session.scalars(
            select(SeriesOwnerRow)
            .where(SeriesOwnerRow.kind == kind.value, SeriesOwnerRow.name == name)
            .order_by(SeriesOwnerRow.id)
        )
    )


def _latest_content(session: Session, kind: RecordKind, name: str) -> dict[str, Any] | None:
    from registry.records.service import check_intact

    row = session.scalar(
        select(RecordRow)
        .where(RecordRow.kind == kind.value, RecordRow.name == name)
        .order_by(RecordRow.version.desc())
        .limit(1)
    )
    if row is None:
        return None
    check_intact(row)  # an owner edited in the database decides nothing
    content: dict[str, Any] = json.loads(row.content)
    return content


def _published(session: Session, kind: RecordKind, name: str) -> bool:
    found = session.scalar(
        select(RecordRow.id).where(RecordRow.kind == kind.value, RecordRow.name == name).limit(1)
    )
    return found is not None


def _plan_named(kind: RecordKind, content: dict[str, Any]) -> str | None:
    if kind in (RecordKind.waiver, RecordKind.observation):
        value = content.get("plan")
    else:
        against = content.get("measured_against")
        value = against.get("plan") if isinstance(against, dict) else None
    if not isinstance(value, str):
        return None
    return parse_ref(value, loc="plan").name


def team_of(session: Session, kind: RecordKind, name: str) -> tuple[str | None, str]:
    """(the owner team or None, "assigned" | "stated" | "unowned")."""
    rows = _rows(session, kind, name)
    if rows:
        return rows[-1].team, "assigned"
    content = _latest_content(session, kind, name)
    if content is None:
        return None, "unowned"
    if kind is RecordKind.plan:
        owner = content.get("owner")
        return (owner, "stated") if isinstance(owner, str) else (None, "unowned")
    if kind in PLAN_BOUND:
        plan = _plan_named(kind, content)
        if plan is not None:
            team, _ = team_of(session, RecordKind.plan, plan)
            if team is not None:
                return team, "stated"
    return None, "unowned"


def owner_of(session: Session, kind: RecordKind, name: str) -> SeriesOwner:
    team, source = team_of(session, kind, name)
    history = [
        Assignment(
            team=r.team,
            assigned_by=r.assigned_by,
            assigned_at=as_utc(r.assigned_at),
            reason=r.reason,
        )
        for r in _rows(session, kind, name)
    ]
    return SeriesOwner(kind=kind, name=name, team=team, source=source, history=history)


# ---- publishing ----------------------------------------------------------------------


def _teams(identity: Identity) -> str:
    return ", ".join(sorted(identity.teams or ())) or "none"


def _plan_team(
    ctx: WriteContext, identity: Identity, kind: RecordKind, name: str, plan: str
) -> str | None:
    """The team of the plan a waiver, evidence or observation names; a team-scoped
    publisher must be in it."""
    team, _ = team_of(ctx.session, RecordKind.plan, plan)
    if identity.teams is None:
        return team
    if team is None:
        raise Forbidden(
            f"plan {plan} has no owner team, so no team may file a {kind.value} under it; "
            f"an admin names one with `capgate owner transfer plan {plan} --team TEAM`"
        )
    if not identity.member_of(team):
        what = "request a waiver for it" if kind is RecordKind.waiver else f"file {kind.value}"
        raise Forbidden(
            f"plan {plan} belongs to team {team}; {identity.subject} (teams: "
            f"{_teams(identity)}) may not {what} ({kind.value} {name})"
        )
    return team


def _check_plan_owner_field(identity: Identity, record: Any, current: str | None) -> None:
    if identity.teams is None:
        return
    if record.owner is None:
        raise InvalidInput(
            "a plan needs an owner team",
            problems=[FieldProblem("owner", f"name the owner team (yours: {_teams(identity)})")],
        )
    if not identity.member_of(record.owner):
        raise Forbidden(
            f"{identity.subject} (teams: {_teams(identity)}) may not give plan {record.name} "
            f"to team {record.owner}: not a member"
        )
    if current is not None and record.owner != current:
        raise Forbidden(
            f"plan {record.name} belongs to team {current}: its owner field must say so; "
            f"an admin moves it with `capgate owner transfer plan {record.name} --team "
            f"{record.owner}`"
        )


def _new_team(
    identity: Identity, kind: RecordKind, record: Any, plan_team: str | None, asked: str | None
) -> str | None:
    """The team a new series is claimed for (None: left unowned, local user only)."""
    if kind is RecordKind.plan:
        stated = record.owner
        if asked is not None and stated is not None and asked != stated:
            raise InvalidInput(
                "two owner teams",
                problems=[FieldProblem("team", f"{asked!r} differs from the plan's owner")],
            )
        return stated if stated is not None else asked
    if plan_team is not None:
        if asked is not None and asked != plan_team:
            raise InvalidInput(
                "two owner teams",
                problems=[
                    FieldProblem("team", f"a {kind.value} belongs to its plan's team {plan_team}")
                ],
            )
        return plan_team
    if asked is not None:
        if not identity.member_of(asked):
            raise Forbidden(
                f"{identity.subject} (teams: {_teams(identity)}) may not create "
                f"{kind.value} {record.name} for team {asked}: not a member"
            )
        return asked
    if identity.teams is None:
        owner = getattr(record, "owner", None)
        return owner if kind is not RecordKind.waiver and isinstance(owner, str) else None
    if not identity.teams:
        raise Forbidden(
            f"{identity.subject} belongs to no team, and every series needs an owner team: "
            f"{kind.value} {record.name} cannot be created with this credential"
        )
    if getattr(record, "owner", None) in identity.teams:
        return str(record.owner)
    return sorted(identity.teams)[0]


def _check_team_name(team: str, loc: str) -> None:
    if not TEAM_PATTERN.match(team):
        raise InvalidInput(
            "invalid team", problems=[FieldProblem(loc, f"{team!r} is not a team name")]
        )


def check_publish(
    ctx: WriteContext,
    identity: Identity,
    kind: RecordKind,
    record: Any,
    *,
    plan: str | None,
    team: str | None = None,
) -> str | None:
    """Raise unless `identity` may publish `record` as the next version of its series.

    `plan` is the name of the plan the record names (resolved by the caller), `team` the
    owner team asked for a new series. Returns the team to claim the series for, or None
    when the series exists already (or stays unowned).
    """
    if team is not None:
        _check_team_name(team, "team")
    current, _ = team_of(ctx.session, kind, record.name)
    exists = _published(ctx.session, kind, record.name)
    claimed = bool(_rows(ctx.session, kind, record.name))
    if current is not None and not identity.member_of(current):
        raise Forbidden(
            f"{kind.value} {record.name} belongs to team {current}; {identity.subject} "
            f"(teams: {_teams(identity)}) may not publish its next version"
        )
    if exists and current is None and identity.teams is not None:
        raise Forbidden(
            f"{kind.value} {record.name} has no owner team (published before series "
            "ownership, or locally without one); "
            f"an admin names one with `capgate owner transfer {kind.value} {record.name} "
            "--team TEAM`"
        )
    plan_team = None
    if kind in PLAN_BOUND and plan is not None:
        plan_team = _plan_team(ctx, identity, kind, record.name, plan)
    if kind is RecordKind.plan:
        _check_plan_owner_field(identity, record, current)
    if exists or claimed:
        return None
    return _new_team(identity, kind, record, plan_team, team)


def claim(ctx: WriteContext, kind: RecordKind, name: str, team: str) -> dict[str, Any]:
    """Store the first publisher's team as the series' owner, in the write's unit; the
    returned row entry goes in the submission's own audit event."""
    return series_owner_entry(_add_row(ctx, kind, name, team, FIRST_PUBLISHER))


def _add_row(
    ctx: WriteContext, kind: RecordKind, name: str, team: str, reason: str
) -> SeriesOwnerRow:
    row = SeriesOwnerRow(
        kind=kind.value,
        name=name,
        team=team,
        assigned_by=ctx.principal,
        assigned_at=ctx.now,
        reason=reason,
    )
    ctx.session.add(row)
    settle(ctx.session, row)
    return row


def _transfer_event(ctx: WriteContext, row: SeriesOwnerRow, previous: str | None) -> None:
    ctx.record_event(
        "series.transfer",
        {
            "kind": row.kind,
            "name": row.name,
            "team": row.team,
            "previous_team": previous,
            "reason": row.reason,
            ROWS_KEY: [series_owner_entry(row)],
        },
    )


def transfer(
    ctx: WriteContext, *, kind: RecordKind, name: str, team: str, reason: str
) -> SeriesOwner:
    """An admin's act (the route's role): give a series, existing or not yet, to `team`."""
    _check_team_name(team, "team")
    if not reason.strip():
        raise InvalidInput(
            "a transfer needs a reason",
            problems=[FieldProblem("reason", "say why (it is kept in the audit trail)")],
        )
    current, _ = team_of(ctx.session, kind, name)
    if current == team:
        raise Conflict(f"{kind.value} {name} already belongs to team {team}")
    _transfer_event(ctx, _add_row(ctx, kind, name, team, reason), current)
    return owner_of(ctx.session, kind, name)


# ---- approving waivers -----------------------------------------------------------------


def waiver_approval_rule(data: Any = None) -> tuple[str, frozenset[str]]:
    """(approvers, global approver teams) from policy data `waiver_approval`.

    `approvers` is "plan_team" (the default: an approver in the waived plan's team) or
    "any_team" (any approver); approvers in a `global_approver_teams` team approve any
    team's waivers either way.
    """
    if data is None:
        from registry.staleness.thresholds import data_path

        try:
            data = json.loads(data_path().read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = {}
    section = data.get("capgate", {}).get("thresholds", {}) if isinstance(data, dict) else {}
    rule = section.get("waiver_approval", {}) if isinstance(section, dict) else {}
    approvers = rule.get("approvers", "plan_team") if isinstance(rule, dict) else "plan_team"
    global_teams = rule.get("global_approver_teams", []) if isinstance(rule, dict) else []
    if approvers not in ("plan_team", "any_team") or not isinstance(global_teams, list):
        # Policy data that cannot be read grants nothing: fail closed to the default.
        return "plan_team", frozenset()
    return str(approvers), frozenset(str(t) for t in global_teams)


def check_approve(
    ctx: WriteContext, identity: Identity, waiver: RecordRow, data: Any = None
) -> None:
    """Raise unless `identity` may approve this waiver version under the policy data."""
    if identity.teams is None:
        return
    approvers, global_teams = waiver_approval_rule(data)
    if approvers == "any_team" or identity.teams & global_teams:
        return
    from registry.records.service import check_intact

    check_intact(waiver)
    plan = _plan_named(RecordKind.waiver, json.loads(waiver.content))
    team = team_of(ctx.session, RecordKind.plan, plan)[0] if plan is not None else None
    if team is not None and identity.member_of(team):
        return
    whose = f"team {team}" if team is not None else "no team"
    raise Forbidden(
        f"waiver {waiver.name}@v{waiver.version} waives plan {plan}, which belongs to "
        f"{whose}; {identity.subject} (teams: {_teams(identity)}) may not approve it "
        "(policy data waiver_approval: an approver of the plan's team or of a "
        "global_approver_teams team)"
    )
