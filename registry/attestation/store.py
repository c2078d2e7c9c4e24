"""One signed attestation per decision, kept beside it in the same transaction."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from registry.attestation.dsse import IN_TOTO_PAYLOAD_TYPE, sign_envelope
from registry.attestation.reader import decision_reader
from registry.attestation.statement import decision_statement, statement_bytes
from registry.audit.chain import as_utc
from registry.digest import canonical_json
from registry.keys import SigningKey, signing_key
from registry.storage.models import DecisionAttestationRow, DecisionRow, RecordRow

if TYPE_CHECKING:
    from registry.gate.views import DecisionView


def _planner_version(session: Session, decision_id: str) -> str | None:
    """The planner that recomputed the plan for this decision (None for an error)."""
    row = session.get(DecisionRow, decision_id)
    if row is None or not row.input:
        return None
    return planner_version_of(json.loads(row.input))


def attest_decision(
    session: Session,
    decision: DecisionView,
    plan_digest: str,
    key: SigningKey,
    *,
    at: datetime | None = None,
) -> DecisionAttestationRow:
    """Sign `decision` and add its attestation to the caller's session (no commit).

    The decision row must be in the same session (added or stored). A decision is
    attested once: if it already is, the stored attestation is returned unchanged.
    """
    existing = session.get(DecisionAttestationRow, decision.id)
    if existing is not None:
        return existing
    row = signed_attestation(
        decision,
        plan_digest,
        planner_version=_planner_version(session, decision.id),
        key=key,
        at=at or decision.created_at,
    )
    session.add(row)
    return row


def planner_version_of(stored_input: dict[str, Any]) -> str | None:
    """The planner version a decision's stored input names (None for an error)."""
    recomputation = stored_input.get("recomputation")
    version = recomputation.get("planner_version") if isinstance(recomputation, dict) else None
    return version if isinstance(version, str) else None


def signed_attestation(
    decision: DecisionView,
    plan_digest: str,
    *,
    planner_version: str | None,
    key: SigningKey,
    at: datetime,
) -> DecisionAttestationRow:
    """The attestation row of `decision`, signed, in no session: the gate signs before it
    takes the registry's write lock, so writers do not queue behind a signature."""
    statement = decision_statement(decision, plan_digest, planner_version=planner_version)
    envelope = sign_envelope(
        statement_bytes(statement), IN_TOTO_PAYLOAD_TYPE, key.private_key, key.key_id
    )
    return DecisionAttestationRow(
        decision_id=decision.id,
        key_id=key.key_id,
        envelope=canonical_json(envelope),
        created_at=at,
    )


def attest_stored_decision(
    session: Session, row: DecisionRow, key: SigningKey | None = None
) -> DecisionAttestationRow:
    """The gate's one call: attest the DecisionRow just added to `session`.

    Reads the decision back as the API shows it and the plan's digest from the same
    session; signs with `key`, by default the server's (keys.signing_key()).
    """
    read_decision = decision_reader()  # installed by registry.wiring (the gate's reader)
    session.flush()  # the decision row, so that it can be read back like any other
    decision = read_decision(session, row.id)
    plan = session.get(RecordRow, row.plan_record_id)
    assert plan is not None  # foreign key
    return attest_decision(
        session, decision, plan.digest, key or signing_key(), at=as_utc(row.created_at)
    )


def get_attestation(session: Session, decision_id: str) -> DecisionAttestationRow | None:
    return session.get(DecisionAttestationRow, decision_id)


def envelope_of(row: DecisionAttestationRow) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(row.envelope)
    return envelope
