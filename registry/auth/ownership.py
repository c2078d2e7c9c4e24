"""Plans and waivers belong to an owner team: only its members publish new versions.

A plan's team is its `owner`; a waiver belongs to the team of the plan it waives, so
one team cannot waive another team's policy. Principals without a team restriction
(the local user of an embedded registry) pass: the database file is their boundary.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from registry.auth.identity import Identity
from registry.errors import FieldProblem, Forbidden, InvalidInput
from registry.records.kinds import RecordKind
from registry.records.service import check_intact
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow


def _latest_owner(ctx: WriteContext, kind: RecordKind, name: str) -> tuple[bool, str | None]:
    row = ctx.session.scalar(
        select(RecordRow)
        .where(RecordRow.kind == kind.value, RecordRow.name == name)
        .order_by(RecordRow.version.desc())
        .limit(1)
    )
    if row is None:
        return False, None
    check_intact(row)  # an owner edited in the database decides nothing
    owner = json.loads(row.content).get("owner")
    return True, owner if isinstance(owner, str) else None


def check_can_publish(ctx: WriteContext, identity: Identity, kind: RecordKind, record: Any) -> None:
    if identity.teams is None or kind not in (RecordKind.plan, RecordKind.waiver):
        return
    teams = ", ".join(sorted(identity.teams)) or "none"
    if kind is RecordKind.plan:
        exists, current = _latest_owner(ctx, kind, record.name)
        if current is not None and not identity.member_of(current):
            raise Forbidden(
                f"plan {record.name} belongs to team {current}; {identity.subject} "
                f"(teams: {teams}) may not publish its next version"
            )
        if record.owner is None and (current is not None or not exists):
            raise InvalidInput(
                "a plan needs an owner team",
                problems=[FieldProblem("owner", f"name the owner team (yours: {teams})")],
            )
        if record.owner is not None and not identity.member_of(record.owner):
            raise Forbidden(
                f"{identity.subject} (teams: {teams}) may not give plan {record.name} "
                f"to team {record.owner}: not a member"
            )
        return
    exists, plan_owner = _latest_owner(ctx, RecordKind.plan, record.plan)
    if plan_owner is not None and not identity.member_of(plan_owner):
        raise Forbidden(
            f"plan {record.plan} belongs to team {plan_owner}; {identity.subject} "
            f"(teams: {teams}) may not request a waiver for it"
        )
