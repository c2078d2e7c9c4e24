"""Check an attestation offline: the signature, the statement, the caller's expectations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from registry.attestation.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    AttestationRejected,
    parse_envelope,
    verify_envelope,
)
from registry.attestation.statement import DecisionStatement, digest_hex, read_statement
from registry.keys import key_id

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def verify_attestation(
    envelope: Any,
    public_key: Ed25519PublicKey,
    *,
    plan_digest: str | None = None,
    expect_outcome: str | None = None,
) -> DecisionStatement:
    """The verified statement; EnvelopeUnreadable (not an envelope) or AttestationRejected.

    The payload is read only after its signature verified: nothing unsigned is believed.
    """
    parsed = parse_envelope(envelope)
    payload = verify_envelope(parsed, public_key, key_id(public_key))
    if parsed.payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise AttestationRejected(
            f"payload type is {parsed.payload_type!r}, not an in-toto statement "
            f"({IN_TOTO_PAYLOAD_TYPE})"
        )
    statement = read_statement(payload)
    if plan_digest is not None and statement.plan_digest != f"sha256:{digest_hex(plan_digest)}":
        raise AttestationRejected(
            f"plan digest is {statement.plan_digest} ({statement.plan}), "
            f"not the expected {plan_digest}"
        )
    if expect_outcome is not None and statement.outcome != expect_outcome:
        raise AttestationRejected(
            f"outcome is {statement.outcome} ({statement.plan}, decision "
            f"{statement.decision_id}), not the expected {expect_outcome}"
        )
    return statement
