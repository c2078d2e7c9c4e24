"""The registry's quarantine: no gate check decides while the registry fails its integrity check.

A failed integrity check anywhere (the hash chain, a row against the event that wrote
it, a decision, an approval, a saved checkpoint) quarantines the whole registry, not
only the plans whose rows were touched: every gate check answers an error (exit 2, HTTP
500) naming the failure, until the registry verifies again. The state is derived, not
stored: each check runs `Guard.check_registry` (registry.audit.integrity; a gate check
runs it inside `Guard.check_decision`, with its own rows), which is what
`capgate audit verify` checks, made incremental, so repairing the damage (restoring the
row) lifts it and nothing an attacker deletes can lift it.

Damage that cannot be repaired (a deleted event) is acknowledged instead: an admin, with
a reason, in an audit event (`acknowledge`, registry.audit.acknowledgements).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from registry.audit.acknowledgements import ACKNOWLEDGE, problem_key
from registry.audit.chain import as_utc
from registry.audit.integrity.guard import extent_problems
from registry.audit.service import list_events, verify
from registry.errors import Conflict, FieldProblem, InvalidInput
from registry.storage.database import Database, WriteContext

MAX_REASON = 2000


class Acknowledgement(BaseModel):
    """What an admin acknowledged: the problems `audit verify` reported then, and why."""

    seq: int
    at: datetime
    principal: str
    reason: str
    problems: list[str]


def acknowledge(database: Database, *, principal: str, reason: str) -> Acknowledgement:
    """Acknowledge every problem `audit verify` reports now (Conflict if there is none):
    the gate decides again unless a problem not acknowledged appears."""
    reason = reason.strip()
    if not reason or len(reason) > MAX_REASON:
        raise InvalidInput(
            "invalid acknowledgement",
            problems=[
                FieldProblem(
                    "reason",
                    "say why the failure is known and repaired"
                    if not reason
                    else f"at most {MAX_REASON} characters",
                )
            ],
        )
    with database.reading(snapshot=True) as session:
        report = verify(session)
        # The gate's incremental check words a deleted event by the count it lacks.
        counted = extent_problems(session)
    if report.intact:
        raise Conflict("nothing to acknowledge: the registry verifies (`capgate audit verify`)")

    def record(ctx: WriteContext) -> datetime:
        ctx.record_event(
            ACKNOWLEDGE,
            {
                "reason": reason,
                "problems": report.problems,
                "keys": sorted({problem_key(p) for p in [*report.problems, *counted]}),
                "events": report.events,
                "head": report.head,
            },
        )
        return ctx.now

    at = database.write(record, principal=principal)
    with database.reading() as session:
        seq = list_events(session, action=ACKNOWLEDGE, limit=1).items[0].seq
    return Acknowledgement(
        seq=seq, at=as_utc(at), principal=principal, reason=reason, problems=report.problems
    )
