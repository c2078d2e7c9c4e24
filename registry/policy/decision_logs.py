"""OPA decision logs: what sidecars report, stored once per decision id and audited."""

from __future__ import annotations

import json
import zlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.digest import canonical_json, sha256_digest
from registry.errors import FieldProblem, InvalidInput
from registry.policy.opa_bundle import BUNDLE_NAME
from registry.records.views import Page
from registry.storage.database import WriteContext
from registry.storage.models import PolicyDecisionLogRow

# OPA uploads chunks of upload_size_limit_bytes (32 KiB by default, gzip compressed).
MAX_UPLOAD_BYTES = 16 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
MAX_EVENTS = 10_000
_IN_CHUNK = 500


# ---- decision logs ------------------------------------------------------------------


class DecisionLogReceipt(BaseModel):
    received: int = Field(description="Events in the upload.")
    stored: int = Field(description="Events stored now.")
    duplicates: int = Field(description="Events already stored with the same content.")
    conflicts: list[str] = Field(
        description="Decision ids already stored with other content: kept as first stored."
    )


class DecisionLogView(BaseModel):
    decision_id: str
    received_at: datetime
    received_from: str
    bundle_revision: str | None
    path: str | None
    digest: str
    intact: bool = Field(description="Whether the stored event still hashes to its digest.")
    entry: Any = Field(description="The event as OPA sent it.")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decompressed(body: bytes, encoding: str | None) -> bytes:
    gzipped = (encoding or "").strip().lower() == "gzip" or body[:2] == b"\x1f\x8b"
    if not gzipped:
        return body
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    try:
        out = inflater.decompress(body, MAX_DECOMPRESSED_BYTES)
    except zlib.error as exc:
        raise InvalidInput(f"the decision log upload is not valid gzip: {exc}") from None
    if inflater.unconsumed_tail:
        raise InvalidInput(
            f"the decision log upload inflates beyond {MAX_DECOMPRESSED_BYTES} bytes"
        )
    return out


def _bundle_revision(event: dict[str, Any]) -> str | None:
    bundles = event.get("bundles")
    if isinstance(bundles, dict) and bundles:
        info = bundles.get(BUNDLE_NAME)
        if info is None and len(bundles) == 1:
            (info,) = bundles.values()
        if isinstance(info, dict) and isinstance(info.get("revision"), str):
            return str(info["revision"])
        return None
    revision = event.get("revision")  # OPA's deprecated single-bundle field
    return revision if isinstance(revision, str) else None


def parse_decision_logs(raw: bytes) -> list[dict[str, Any]]:
    """The events of one (decompressed) upload; anything but an array of events with
    ids is refused."""
    try:
        events = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"the decision log upload is not JSON: {exc}") from None
    if not isinstance(events, list):
        raise InvalidInput("the decision log upload must be a JSON array of events")
    if len(events) > MAX_EVENTS:
        raise InvalidInput(f"at most {MAX_EVENTS} events per upload")
    problems = []
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            problems.append(FieldProblem(f"{index}", "an event must be a JSON object"))
            continue
        decision_id = event.get("decision_id")
        if not isinstance(decision_id, str) or not 0 < len(decision_id) <= 64:
            problems.append(FieldProblem(f"{index}.decision_id", "a string of 1 to 64 characters"))
        revision = _bundle_revision(event)
        if revision is not None and len(revision) > 128:
            problems.append(
                FieldProblem(f"{index}.bundles", "a revision of at most 128 characters")
            )
        path = event.get("path")
        if path is not None and (not isinstance(path, str) or len(path) > 256):
            problems.append(FieldProblem(f"{index}.path", "a string of at most 256 characters"))
    if problems:
        raise InvalidInput("the decision log upload has malformed events", problems=problems)
    return events


def store_decision_logs(
    ctx: WriteContext, events: list[dict[str, Any]], raw_digest: str
) -> DecisionLogReceipt:
    """Store each new event; one audit event for the batch."""
    ids = [str(event["decision_id"]) for event in events]
    stored_digests: dict[str, str] = {}
    unique_ids = sorted(set(ids))
    for start in range(0, len(unique_ids), _IN_CHUNK):
        chunk = unique_ids[start : start + _IN_CHUNK]
        rows = ctx.session.execute(
            select(PolicyDecisionLogRow.decision_id, PolicyDecisionLogRow.digest).where(
                PolicyDecisionLogRow.decision_id.in_(chunk)
            )
        )
        stored_digests.update({row.decision_id: row.digest for row in rows})
    stored: list[dict[str, str]] = []
    duplicates: list[str] = []
    conflicts: list[dict[str, str]] = []
    for event in events:
        decision_id = str(event["decision_id"])
        entry = canonical_json(event)
        digest = sha256_digest(entry.encode("utf-8"))
        known = stored_digests.get(decision_id)
        if known == digest:
            duplicates.append(decision_id)
            continue
        if known is not None:
            conflicts.append({"decision_id": decision_id, "digest": digest, "stored": known})
            continue
        path = event.get("path")
        ctx.session.add(
            PolicyDecisionLogRow(
                decision_id=decision_id,
                received_at=ctx.now,
                received_from=ctx.principal,
                bundle_revision=_bundle_revision(event),
                path=path if isinstance(path, str) else None,
                entry=entry,
                digest=digest,
            )
        )
        stored_digests[decision_id] = digest
        stored.append({"decision_id": decision_id, "digest": digest})
    ctx.record_event(
        "opa.decision_logs",
        {
            "upload_sha256": raw_digest,
            "received": len(events),
            "stored": stored,
            "duplicates": duplicates,
            "conflicts": conflicts,
            "bundle_revisions": sorted(
                {r for r in (_bundle_revision(event) for event in events) if r is not None}
            ),
        },
    )
    return DecisionLogReceipt(
        received=len(events),
        stored=len(stored),
        duplicates=len(duplicates),
        conflicts=[conflict["decision_id"] for conflict in conflicts],
    )


def list_decision_logs(
    session: Session,
    *,
    revision: str | None,
    path: str | None,
    received_from: str | None,
    limit: int,
    offset: int,
) -> Page[DecisionLogView]:
    query = select(PolicyDecisionLogRow)
    if revision is not None:
        query = query.where(PolicyDecisionLogRow.bundle_revision == revision)
    if path is not None:
        query = query.where(PolicyDecisionLogRow.path == path.strip("/"))
    if received_from is not None:
        query = query.where(PolicyDecisionLogRow.received_from == received_from)
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = session.scalars(
        query.order_by(
            PolicyDecisionLogRow.received_at.desc(), PolicyDecisionLogRow.decision_id.desc()
        )
        .limit(limit)
        .offset(offset)
    )
    items = []
    for row in rows:
        intact = sha256_digest(row.entry.encode("utf-8")) == row.digest
        items.append(
            DecisionLogView(
                decision_id=row.decision_id,
                received_at=as_utc(row.received_at),
                received_from=row.received_from,
                bundle_revision=row.bundle_revision,
                path=row.path,
                digest=row.digest,
                intact=intact,
                entry=json.loads(row.entry),
            )
        )
    return Page[DecisionLogView](items=items, total=int(total), limit=limit, offset=offset)
