"""A gate decision as an in-toto Statement v1 (https://in-toto.io/Statement/v1).

The subject is the plan the decision is about (``name@vN``, the hex of its sha256
content digest); the predicate is the decision: outcome, reasons, waivers, the digests
of every input, the policy bundle revision, the engine and planner, who asked and when.
Serialised as capgate's canonical JSON, so one decision always gives the same bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registry.attestation.dsse import AttestationRejected
from registry.digest import canonical_json
from registry.errors import InvalidInput

if TYPE_CHECKING:
    from registry.gate.views import DecisionView

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://capgate.dev/decision/v1"
_SHA256 = re.compile(r"^sha256:([0-9a-f]{64})$")


def digest_hex(digest: str) -> str:
    """The hex of a ``sha256:<hex>`` digest (a bare hex is accepted too)."""
    value = digest.strip().lower()
    match = _SHA256.match(value if value.startswith("sha256:") else f"sha256:{value}")
    if match is None:
        raise InvalidInput(f"{digest!r} is not a sha256 digest (sha256:<64 hex digits>)")
    return match.group(1)


def decision_statement(
    decision: DecisionView, plan_digest: str, *, planner_version: str | None
) -> dict[str, Any]:
    """The statement for `decision` on the plan whose content digest is `plan_digest`."""
    view = decision.model_dump(mode="json")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": decision.plan, "digest": {"sha256": digest_hex(plan_digest)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "decision_id": view["id"],
            "plan": view["plan"],
            "outcome": view["outcome"],
            "violations": view["violations"],
            "waived": view["waived"],
            "waivers_used": view["waivers_used"],
            "error": view["error"],
            "inputs": view["inputs"],
            "input_digest": view["input_digest"],
            "bundle_revision": view["bundle_revision"],
            "engine": view["engine"],
            "planner_version": planner_version,
            "principal": view["principal"],
            "created_at": view["created_at"],
        },
    }


def statement_bytes(statement: dict[str, Any]) -> bytes:
    return canonical_json(statement).encode("utf-8")


@dataclass(frozen=True)
class DecisionStatement:
    """What a verified statement says, for a summary and for expectations."""

    plan: str
    plan_digest: str
    outcome: str
    decision_id: str
    bundle_revision: str
    created_at: str
    statement: dict[str, Any]


def read_statement(payload: bytes) -> DecisionStatement:
    """The payload as capgate's decision statement; AttestationRejected when it is not."""
    try:
        statement = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AttestationRejected("the signed payload is not JSON") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise AttestationRejected(
            f"the signed payload is not an in-toto statement ({STATEMENT_TYPE})"
        )
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise AttestationRejected(
            f"the statement's predicate type is {statement.get('predicateType')!r}, "
            f"not capgate's decision ({PREDICATE_TYPE})"
        )
    subjects = statement.get("subject")
    predicate = statement.get("predicate")
    if (
        not isinstance(subjects, list)
        or len(subjects) != 1
        or not isinstance(subjects[0], dict)
        or not isinstance(subjects[0].get("digest"), dict)
        or not isinstance(predicate, dict)
    ):
        raise AttestationRejected("the statement does not name one plan and a decision")
    subject = subjects[0]
    fields = {
        "plan": subject.get("name"),
        "plan_digest": subject["digest"].get("sha256"),
        "outcome": predicate.get("outcome"),
        "decision_id": predicate.get("decision_id"),
        "bundle_revision": predicate.get("bundle_revision"),
        "created_at": predicate.get("created_at"),
    }
    missing = sorted(name for name, value in fields.items() if not isinstance(value, str))
    if missing:
        raise AttestationRejected(f"the statement lacks {', '.join(missing)}")
    return DecisionStatement(
        plan=fields["plan"],
        plan_digest=f"sha256:{fields['plan_digest']}",
        outcome=fields["outcome"],
        decision_id=fields["decision_id"],
        bundle_revision=fields["bundle_revision"],
        created_at=fields["created_at"],
        statement=statement,
    )
