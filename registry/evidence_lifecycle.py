"""Evidence lifecycle: withdrawing one evidence version, audited, never deleted.

A withdrawal retires one evidence *version* (the ref given, resolved: a bare name means
its latest version), because versions are what decisions and staleness point at: an
earlier version that a decision rested on keeps what it was. The record itself stays,
byte for byte; a withdrawal row says who withdrew it, when and why, and the audit event
is appended in the same transaction. Withdrawn evidence supports nothing and blocks
nothing: the gate's plan context leaves it out and the stale list leaves it out. It still
holds its raw file's digest against laundering: withdrawing a stale record does not
change what its file was measured against, so tidying up cannot reopen that door.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from registry.errors import Conflict, FieldProblem, InvalidInput
from registry.records.hooks import Submission, SubmitHook
from registry.records.kinds import RecordKind
from registry.records.references import pinned
from registry.records.views import Page
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow, WithdrawalRow
from registry.storage.repository import EvidenceLifecycleRepository, RecordRepository

MAX_REASON_CHARS = 2000
MAX_PAGE = 500


class Withdrawal(BaseModel):
    """One withdrawn evidence version: which, who, when and why."""

    evidence: str = Field(description="The withdrawn evidence version, name@vN.")
    digest: str = Field(description="The withdrawn version's content digest.")
    reason: str
    withdrawn_by: str
    withdrawn_at: datetime


def view(withdrawal: WithdrawalRow, evidence: RecordRow) -> Withdrawal:
    from registry.audit.chain import as_utc

    return Withdrawal(
        evidence=pinned(evidence.name, evidence.version),
        digest=evidence.digest,
        reason=withdrawal.reason,
        withdrawn_by=withdrawal.withdrawn_by,
        withdrawn_at=as_utc(withdrawal.withdrawn_at),
    )


class WithdrawalIsFinal(SubmitHook):
    """A submission part (registry.records.hooks): a withdrawal is final, so the same
    figures again would undo it without saying so."""

    def check_before_write(self, ctx: WriteContext, submission: Submission) -> None:
        reverted = submission.reverted
        if submission.kind is not RecordKind.evidence or reverted is None:
            return
        withdrawal = EvidenceLifecycleRepository(ctx.session).withdrawals_of([reverted.id])
        if reverted.id in withdrawal:
            ref = pinned(reverted.name, reverted.version)
            raise InvalidInput(
                f"this content is {ref}, which was withdrawn ({withdrawal[reverted.id].reason}); "
                "a withdrawal is final: submit the corrected evidence",
                problems=[FieldProblem("content", f"identical to the withdrawn {ref}")],
            )


def _reason(text: str) -> str:
    reason = " ".join(text.split())  # one line in listings and the audit trail
    if not reason:
        raise InvalidInput(
            "invalid withdrawal",
            problems=[FieldProblem("reason", "say why the evidence is withdrawn (--reason)")],
        )
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(
            "invalid withdrawal",
            problems=[FieldProblem("reason", f"at most {MAX_REASON_CHARS} characters")],
        )
    return reason


def withdraw(ctx: WriteContext, *, ref: str, reason: str) -> Withdrawal:
    """Withdraw the evidence version `ref` resolves to; Conflict if it already is."""
    from registry.records.service import resolve

    text = _reason(reason)
    evidence = resolve(RecordRepository(ctx.session), RecordKind.evidence, ref, loc="ref")
    lifecycle = EvidenceLifecycleRepository(ctx.session)
    earlier = lifecycle.withdrawals_of([evidence.id]).get(evidence.id)
    if earlier is not None:
        done = view(earlier, evidence)
        raise Conflict(
            f"evidence {done.evidence} was already withdrawn by {done.withdrawn_by} at "
            f"{done.withdrawn_at.isoformat()}: {done.reason}",
            details={"withdrawal": done.model_dump(mode="json")},
        )
    row = lifecycle.add_withdrawal(
        WithdrawalRow(
            evidence_record_id=evidence.id,
            reason=text,
            withdrawn_by=ctx.principal,
            withdrawn_at=ctx.now,
        )
    )
    from registry.audit.rows import ROWS_KEY, settle, withdrawal_entry

    settle(ctx.session, row)
    done = view(row, evidence)
    ctx.record_event(
        "evidence.withdraw",
        {
            "kind": "evidence",
            "ref": done.evidence,
            "digest": done.digest,
            "reason": text,
            ROWS_KEY: [withdrawal_entry(row)],
        },
    )
    return done


def withdrawn_ids(session: Session, record_ids: list[int]) -> set[int]:
    """The ids among `record_ids` that were withdrawn."""
    return set(EvidenceLifecycleRepository(session).withdrawals_of(record_ids))


def withdrawal_of(session: Session, evidence: RecordRow) -> Withdrawal | None:
    row = EvidenceLifecycleRepository(session).withdrawals_of([evidence.id]).get(evidence.id)
    return None if row is None else view(row, evidence)


def list_withdrawals(session: Session, *, limit: int = 50, offset: int = 0) -> Page[Withdrawal]:
    """Every withdrawal, newest first."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(
            "invalid page", problems=[FieldProblem("limit", f"must be between 1 and {MAX_PAGE}")]
        )
    if offset < 0:
        raise InvalidInput("invalid page", problems=[FieldProblem("offset", "must be >= 0")])
    rows, total = EvidenceLifecycleRepository(session).withdrawals(limit=limit, offset=offset)
    return Page[Withdrawal](
        items=[view(w, r) for w, r in rows], total=total, limit=limit, offset=offset
    )
