"""Signed checkpoints of the audit chain: a transparency log's signed tree head.

A checkpoint says "the chain had `size` events and the last was `head`, at `at`",
signed with an Ed25519 key kept away from the registry. Anyone holding the public key
and a saved checkpoint can later tell

- that the tail was cut: the chain holds fewer events than the checkpoint, and
- that the chain was rewritten, even with every hash recomputed: event `size` no
  longer has the checkpoint's hash,

neither of which the chain alone can show (it verifies after either). The file is JSON:

    {"checkpoint": {"origin": ..., "size": N, "head": "sha256:...", "at": "..."},
     "key_id": "<sha256 hex of the raw public key>", "signature": "<base64>"}

and the signature covers the canonical JSON of `checkpoint`.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from datetime import datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from registry.digest import canonical_json
from registry.errors import InvalidInput
from registry.keys import key_id

ORIGIN = "capgate audit trail"


class Checkpoint(BaseModel):
    origin: str = ORIGIN
    size: int
    head: str
    at: datetime


class SignedCheckpoint(BaseModel):
    checkpoint: Checkpoint
    key_id: str
    signature: str


def _signed_bytes(checkpoint: Checkpoint) -> bytes:
    return canonical_json(checkpoint.model_dump(mode="json")).encode("utf-8")


def sign(checkpoint: Checkpoint, private_key: Ed25519PrivateKey) -> SignedCheckpoint:
    return SignedCheckpoint(
        checkpoint=checkpoint,
        key_id=key_id(private_key.public_key()),
        signature=base64.b64encode(private_key.sign(_signed_bytes(checkpoint))).decode("ascii"),
    )


def verified(signed: SignedCheckpoint, public_key: Ed25519PublicKey, *, source: str) -> Checkpoint:
    """The checkpoint, once its signature verifies with `public_key`; else InvalidInput."""
    try:
        public_key.verify(
            base64.b64decode(signed.signature, validate=True), _signed_bytes(signed.checkpoint)
        )
    except (InvalidSignature, binascii.Error, ValueError):
        raise InvalidInput(
            f"{source}: the checkpoint's signature does not verify with key {key_id(public_key)}"
        ) from None
    return signed.checkpoint


def write(signed: SignedCheckpoint, path: Path) -> None:
    path.write_text(json.dumps(signed.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")


def read(path: Path) -> SignedCheckpoint:
    try:
        return SignedCheckpoint.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise InvalidInput(f"{path}: checkpoint file not found") from None
    except (OSError, ValidationError) as exc:
        raise InvalidInput(f"{path}: not a capgate checkpoint ({exc})") from None


def problems(
    checkpoint: Checkpoint, *, highest: int, event_at_size: tuple[int, str] | None
) -> list[str]:
    """What the chain now contradicts in a verified checkpoint: `highest` is the number
    of its last event, `event_at_size` the number and hash of event `size` (if any)."""
    when = checkpoint.at.isoformat()
    if checkpoint.size == 0:
        return []
    if highest < checkpoint.size:
        return [
            f"the chain ends at event {highest}, before event {checkpoint.size} of the "
            f"checkpoint of {when}: its tail was removed"
        ]
    if event_at_size is None or event_at_size[0] != checkpoint.size:
        return [f"event {checkpoint.size}, the head of the checkpoint of {when}, is missing"]
    if event_at_size[1] != checkpoint.head:
        return [
            f"event {checkpoint.size} has hash {event_at_size[1]}, but the checkpoint of "
            f"{when} signed {checkpoint.head}: the chain was rewritten"
        ]
    return []


CHECKPOINT_ENV = "CAPGATE_AUDIT_CHECKPOINT"
CHECKPOINT_KEY_ENV = "CAPGATE_AUDIT_CHECKPOINT_KEY"


def enforce_saved(session: Session) -> None:
    """The gate's side of checkpoints: with CAPGATE_AUDIT_CHECKPOINT naming the last saved
    checkpoint, a chain that contradicts it (tail cut, history rewritten) is Tampered.

    The checkpoint is verified with CAPGATE_AUDIT_CHECKPOINT_KEY (a public key PEM), else
    with the registry's own signing key. A configured checkpoint that cannot be read or
    whose signature fails is an error too: the gate fails closed, never open.
    """
    from registry.audit.chain import event_at, extent
    from registry.audit.integrity.guard import QUARANTINE_HINT
    from registry.errors import Tampered, Unavailable
    from registry.keys import load_public_key, signing_key

    configured = os.environ.get(CHECKPOINT_ENV)
    if not configured:
        return
    try:
        signed = read(Path(configured).expanduser())
        key_file = os.environ.get(CHECKPOINT_KEY_ENV)
        public = load_public_key(key_file) if key_file else signing_key().public_key
        checkpoint = verified(signed, public, source=configured)
    except InvalidInput as exc:
        raise Unavailable(f"{CHECKPOINT_ENV}: {exc.message}") from None
    _, highest = extent(session)
    event = event_at(session, checkpoint.size) if checkpoint.size else None
    found = problems(
        checkpoint,
        highest=highest,
        event_at_size=(event.seq, event.hash) if event is not None else None,
    )
    if found:
        raise Tampered(
            f"the registry is quarantined: the audit chain contradicts the saved checkpoint "
            f"{configured}: {found[0]}; {QUARANTINE_HINT}",
            details={"problems": found},
        )
