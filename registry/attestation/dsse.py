"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1).

The signature covers the pre-authentication encoding (PAE) of the payload type and the
payload bytes, never the JSON of the envelope, so no canonicalisation of the envelope
is involved and the payload type cannot be swapped without breaking the signature.
Signing and verification are Ed25519 from ``cryptography``; nothing here is home-made
cryptography, only the DSSE framing.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from registry.errors import CapgateError, InvalidInput

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


class EnvelopeUnreadable(InvalidInput):
    """Not a DSSE envelope at all: missing fields, wrong types, broken base64 (exit 2)."""


class AttestationRejected(CapgateError):
    """A readable attestation that does not hold: bad signature or a failed expectation."""

    status_code = 422
    exit_code = 1


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSEv1 SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes, ASCII decimal."""
    encoded_type = payload_type.encode("utf-8")
    return b" ".join(
        [
            b"DSSEv1",
            str(len(encoded_type)).encode("ascii"),
            encoded_type,
            str(len(payload)).encode("ascii"),
            payload,
        ]
    )


def sign_envelope(
    payload: bytes, payload_type: str, private_key: Ed25519PrivateKey, keyid: str
) -> dict[str, Any]:
    """The envelope: base64 payload, its type, and one Ed25519 signature over the PAE."""
    signature = private_key.sign(pae(payload_type, payload))
    return {
        "payload": base64.b64encode(payload).decode("ascii"),
        "payloadType": payload_type,
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(signature).decode("ascii")}],
    }


def _b64decode(value: str, where: str) -> bytes:
    """Standard or URL-safe base64, padded or not, as the DSSE spec allows."""
    text = value.strip()
    text += "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(text.encode("ascii"))
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise EnvelopeUnreadable(f"{where} is not base64") from None


@dataclass(frozen=True)
class Envelope:
    """A parsed envelope: decoded payload bytes and (keyid, signature bytes) pairs."""

    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]


def parse_envelope(data: Any) -> Envelope:
    """Read the envelope's fields; raise EnvelopeUnreadable when it is not one."""
    if not isinstance(data, dict):
        raise EnvelopeUnreadable("a DSSE envelope is a JSON object")
    for field in ("payload", "payloadType"):
        if not isinstance(data.get(field), str):
            raise EnvelopeUnreadable(f"the envelope has no {field} (a string)")
    signatures = data.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise EnvelopeUnreadable("the envelope has no signatures")
    parsed: list[tuple[str, bytes]] = []
    for index, signature in enumerate(signatures):
        if not isinstance(signature, dict) or not isinstance(signature.get("sig"), str):
            raise EnvelopeUnreadable(f"signatures[{index}] has no sig (a string)")
        keyid = signature.get("keyid", "")
        if not isinstance(keyid, str):
            raise EnvelopeUnreadable(f"signatures[{index}].keyid is not a string")
        parsed.append((keyid, _b64decode(signature["sig"], f"signatures[{index}].sig")))
    return Envelope(
        payload_type=data["payloadType"],
        payload=_b64decode(data["payload"], "payload"),
        signatures=tuple(parsed),
    )


def verify_envelope(envelope: Envelope, public_key: Ed25519PublicKey, keyid: str) -> bytes:
    """The payload, when one signature verifies with `public_key`; else AttestationRejected.

    A signature's keyid is an unauthenticated hint: one naming another key is skipped,
    one without a keyid is tried.
    """
    message = pae(envelope.payload_type, envelope.payload)
    candidates = [sig for kid, sig in envelope.signatures if kid in ("", keyid)]
    for signature in candidates:
        try:
            public_key.verify(signature, message)
        except InvalidSignature:
            continue
        return envelope.payload
    if not candidates:
        others = ", ".join(sorted({kid for kid, _ in envelope.signatures}))
        raise AttestationRejected(
            f"signature does not verify: signed by key {others}, not by the given key {keyid}"
        )
    raise AttestationRejected(
        f"signature does not verify with key {keyid}: the envelope was altered or signed "
        "by another key"
    )
