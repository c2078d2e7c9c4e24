"""Kept decisions read back: one by id, a page of the trail, and the input each was taken on.

Every read re-hashes the stored input against the input digest it was decided on
(`stored_input`), so a decision edited in the database is never shown as it was kept.
The views built here are also what a gate check answers and signs (registry.gate.service
builds them with `decision_view`).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.digest import content_digest, sha256_digest
from registry.errors import FieldProblem, InvalidInput, NotFound, Tampered
from registry.gate.views import DecisionView, Outcome
from registry.records.references import pinned
from registry.records.views import TrailPage
from registry.storage import keyset
from registry.storage.models import DecisionRow, RecordRow
from registry.storage.repository import GateRepository, PlanVersion


def stored_input(row: DecisionRow) -> dict[str, Any]:
    """The decision's input document, re-hashed against the input digest it was decided
    on (the stored input also carries the recomputation's digest, outside the digest)."""
    stored: dict[str, Any] = _parsed(row.input)
    if row.input_digest == "none":
        return stored
    if sha256_digest(_document_text(row.input, stored).encode()) == row.input_digest:
        return stored
    # Not the canonical text the digest was taken over: check the parsed content.
    document = {k: v for k, v in stored.items() if k != "recomputation_digest"}
    if content_digest(document) != row.input_digest:
        raise Tampered(
            f"stored decision {row.id} was altered: its input does not hash to its "
            f"input digest {row.input_digest}",
            details={"table": "decisions", "id": row.id},
        )
    return stored


def _parsed(text: str) -> Any:
    """JSON text parsed by orjson, 2-3x faster than json on a 7 KB gate input (a
    third of the time a listed page took, capgate issue 29), where that reads the same:
    orjson turns an integer beyond 64 bits into a float and refuses NaN, so a text with
    a number of 19 digits or more, or one orjson refuses, is read by json as before."""
    if _LONG_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


# A number starts after ':', ',' or '['; looking for those first is what keeps the
# search to microseconds on a 7 KB input full of hex digests.
_LONG_NUMBER = re.compile(r"[:,\[]\s*-?[0-9]{19}")


# Parametrised once: pydantic builds a class per subscription it has not cached.
DecisionPage = TrailPage[DecisionView]


def _document_text(text: str, stored: dict[str, Any]) -> str:
    """The stored input's text without its `recomputation_digest` member: the canonical
    text the input digest was taken over, when the row is as written. Hashing it skips
    re-serialising the document (most of the cost of listing decisions); a text that does
    not hash right is checked the slow way, so a nested member of the same name that is
    cut here instead cannot make an intact row look altered."""
    if "recomputation_digest" not in stored:
        return text
    member = '"recomputation_digest":' + json.dumps(stored["recomputation_digest"])
    for cut in ("," + member, member + ",", member):
        if cut in text:
            return text.replace(cut, "", 1)
    return text


def _to_view(
    row: DecisionRow, plan: RecordRow | PlanVersion, current_revision: str | None
) -> DecisionView:
    return decision_view(row, plan.name, plan.version, current_revision)


def decision_view(
    row: DecisionRow,
    plan_name: str,
    plan_version: int,
    current_revision: str | None,
    document: dict[str, Any] | None = None,
) -> DecisionView:
    """The decision as the API shows it. `document`: its input, when the caller built the
    row itself (a gate check, before and after storing it): nothing read back to re-hash."""
    if document is None:
        document = stored_input(row)
    waivers = json.loads(row.waivers)
    return DecisionView(
        id=row.id,
        plan=pinned(plan_name, plan_version),
        outcome=Outcome(row.outcome),
        engine=row.engine,
        bundle_revision=row.bundle_revision,
        policy_release=row.policy_release,
        input_digest=row.input_digest,
        inputs=_input_digests(document),
        violations=json.loads(row.violations),
        waived=waivers["waived"],
        waivers_used=waivers["used"],
        warnings=json.loads(row.warnings),
        error=row.error,
        principal=row.principal,
        created_at=as_utc(row.created_at),
        needs_recheck=(
            None
            if current_revision is None
            else row.outcome == Outcome.allow.value and row.bundle_revision != current_revision
        ),
    )


def _input_digests(document: dict[str, Any]) -> dict[str, Any]:
    """The refs and digests of every input a decision rests on, for auditors."""
    if not document:
        return {}
    out: dict[str, Any] = {
        role: {"ref": document[role]["ref"], "digest": document[role]["digest"]}
        for role in ("plan", "workload", "provider")
        if role in document
    }
    out["evidence"] = [
        {"ref": e["ref"], "digest": e["digest"], "fresh": e["fresh"]}
        for e in document.get("evidence", [])
    ]
    if "recomputation_digest" in document:
        out["recomputation"] = document["recomputation_digest"]
    manifests = document.get("manifests") or {}
    if manifests.get("checked"):
        out["manifests"] = {
            "compared_fields": manifests.get("compared_fields", 0),
            "files": manifests.get("files", {}),
        }
    return out


def get_decision(
    session: Session, decision_id: str, *, current_revision: str | None
) -> DecisionView:
    return get_decision_with_input(session, decision_id, current_revision=current_revision)[0]


def get_decision_with_input(
    session: Session, decision_id: str, *, current_revision: str | None
) -> tuple[DecisionView, dict[str, Any]]:
    """The decision and the input document it was taken on (re-hashed against its input
    digest; it carries the recomputation's digest as `recomputation_digest`). An error
    decision taken before its input was assembled has an empty one."""
    try:
        uuid.UUID(decision_id)
    except ValueError:
        raise InvalidInput(
            "invalid decision id",
            problems=[
                FieldProblem("decision_id", f"{decision_id!r} is not a decision id (a UUID)")
            ],
        ) from None
    repo = GateRepository(session)
    row = repo.decision(decision_id)
    if row is None:
        raise NotFound(f"no decision {decision_id}")
    plan = session.get(RecordRow, row.plan_record_id)
    assert plan is not None  # foreign key
    return _to_view(row, plan, current_revision), stored_input(row)


def list_decisions(
    session: Session,
    *,
    plan: str | None = None,
    outcome: Outcome | None = None,
    principal: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    cursor: str | None = None,
    total: bool = False,
    current_revision: str | None = None,
) -> TrailPage[DecisionView]:
    # `plan` is a name (every version) or name@vN (decisions on that version only).
    pinned_version = re.fullmatch(r"(?P<name>.+)@v(?P<version>[1-9][0-9]{0,8})", plan or "")
    rows, counted = GateRepository(session).decisions(
        plan_name=pinned_version["name"] if pinned_version else plan,
        plan_version=int(pinned_version["version"]) if pinned_version else None,
        outcome=outcome.value if outcome else None,
        principal=principal,
        since=since,
        until=until,
        limit=limit,
        offset=offset,
        after=keyset.decode(cursor, str) if cursor else None,
        count=total,
    )
    page, next_cursor = keyset.split(rows, limit, lambda row: (row[0].created_at, row[0].id))
    return DecisionPage(
        items=[_to_view(d, p, current_revision) for d, p in page],
        total=counted,
        limit=limit,
        offset=offset,
        next_cursor=next_cursor,
    )
