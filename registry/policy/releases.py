"""Policy releases: the bundle the gate decides under, as a record with four eyes.

A release is the bundle's files (modules and data.json) as submitted, their revision
(the content digest every decision records), a name, a version and notes. It takes
effect once a principal other than its submitter, holding the ``policy-admin`` role,
approves it; the release in force is the one approved last.

From the registry's first approval on, the gate decides only under the release in
force (or the one a pipeline pins, which must be the release in force): an installed
bundle whose revision differs is an error naming both revisions (exit 2 / HTTP 503),
never a decision. Before any approval the registry is ungoverned: the gate decides
under the installed bundle, the decision names no release ("policy release none
approved" in its report), and ``capgate audit verify`` counts those decisions; with
CAPGATE_REQUIRE_POLICY_RELEASE=1 it decides nothing (an error) until a release is
approved.
Releases cannot be removed, so governance, once on, stays on.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.audit.chain import as_utc
from registry.audit.rows import (
    ROWS_KEY,
    policy_release_approval_entry,
    policy_release_entry,
    settle,
)
from registry.digest import canonical_json
from registry.errors import Conflict, FieldProblem, Forbidden, InvalidInput, NotFound, Unavailable
from registry.policy.bundle import DATA_FILE, PolicyBundle, files_revision
from registry.storage.database import WriteContext
from registry.storage.models import PolicyReleaseApprovalRow, PolicyReleaseRow

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]{0,127})@v(?P<version>[1-9][0-9]{0,8})$")
MAX_NOTES = 4000


class PolicyReleaseError(Unavailable):
    """The policy in force cannot be established: an error, never a decision (exit 2, 503)."""


class PolicyReleaseView(BaseModel):
    ref: str  # name@vN
    name: str
    version: int
    bundle_revision: str
    files: list[str]
    notes: str
    submitted_by: str
    submitted_at: datetime
    approved_by: str | None
    approved_at: datetime | None
    approval_comment: str | None
    in_force: bool


def _ref(row: PolicyReleaseRow) -> str:
    return f"{row.name}@v{row.version}"


def _view(
    row: PolicyReleaseRow, approval: PolicyReleaseApprovalRow | None, in_force_id: int | None
) -> PolicyReleaseView:
    return PolicyReleaseView(
        ref=_ref(row),
        name=row.name,
        version=row.version,
        bundle_revision=row.bundle_revision,
        files=sorted(json.loads(row.files)),
        notes=row.notes,
        submitted_by=row.submitted_by,
        submitted_at=as_utc(row.submitted_at),
        approved_by=approval.approved_by if approval else None,
        approved_at=as_utc(approval.approved_at) if approval else None,
        approval_comment=approval.comment if approval else None,
        in_force=row.id == in_force_id,
    )


def _approvals(session: Session) -> dict[int, PolicyReleaseApprovalRow]:
    return {row.release_id: row for row in session.scalars(select(PolicyReleaseApprovalRow))}


def in_force_row(session: Session) -> PolicyReleaseRow | None:
    """The release approved last (ties by id: one transaction approves one release)."""
    approval = session.scalars(
        select(PolicyReleaseApprovalRow).order_by(
            PolicyReleaseApprovalRow.approved_at.desc(), PolicyReleaseApprovalRow.id.desc()
        )
    ).first()
    return None if approval is None else session.get(PolicyReleaseRow, approval.release_id)


def _parse_ref(ref: str, loc: str = "ref") -> tuple[str, int]:
    found = REF.match(ref)
    if found is None:
        raise InvalidInput(
            "invalid policy release reference",
            problems=[FieldProblem(loc, f"{ref!r} is not NAME@vN (lower-case name, version >= 1)")],
        )
    return found["name"], int(found["version"])


def release_row(session: Session, ref: str, loc: str = "ref") -> PolicyReleaseRow:
    name, version = _parse_ref(ref, loc)
    row = session.scalars(
        select(PolicyReleaseRow).where(
            PolicyReleaseRow.name == name, PolicyReleaseRow.version == version
        )
    ).first()
    if row is None:
        raise NotFound(f"no policy release {ref}")
    return row


def release_bundle(row: PolicyReleaseRow) -> PolicyBundle:
    """The release's files as a bundle (their revision is checked against the row's)."""
    bundle = bundle_from_files(json.loads(row.files))
    if bundle.revision != row.bundle_revision:
        raise PolicyReleaseError(
            f"policy release {_ref(row)}: its stored files hash to {bundle.revision}, not to "
            f"its revision {row.bundle_revision} (edited in place; see capgate audit verify)"
        )
    return bundle


MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024


def bundle_from_files(files: dict[str, str], loc: str = "files") -> PolicyBundle:
    """A bundle from submitted files: .rego modules (no tests) and one data.json object."""
    problems = []
    if len(files) > MAX_FILES:
        problems.append(FieldProblem(loc, f"{len(files)} files, at most {MAX_FILES}"))
    if DATA_FILE not in files:
        problems.append(FieldProblem(loc, f"no {DATA_FILE}: a release holds its data too"))
    for name, text in sorted(files.items()):
        where = f"{loc}.{name}"
        if name != DATA_FILE and (not name.endswith(".rego") or name.endswith("_test.rego")):
            problems.append(FieldProblem(where, "only .rego modules (not tests) and data.json"))
        elif ".." in name.split("/") or name.startswith("/"):
            problems.append(FieldProblem(where, "a relative path inside the bundle"))
        elif len(text.encode("utf-8")) > MAX_FILE_BYTES:
            problems.append(FieldProblem(where, f"larger than {MAX_FILE_BYTES} bytes"))
    data: object = None
    if DATA_FILE in files:
        try:
            data = json.loads(files[DATA_FILE])
        except ValueError as exc:
            problems.append(FieldProblem(f"{loc}.{DATA_FILE}", f"not JSON: {exc}"))
        else:
            if not isinstance(data, dict):
                problems.append(FieldProblem(f"{loc}.{DATA_FILE}", "not a JSON object"))
    if problems:
        raise InvalidInput("invalid policy release files", problems=problems)
    assert isinstance(data, dict)
    return PolicyBundle(
        revision=files_revision(files),
        modules={name: text for name, text in sorted(files.items()) if name != DATA_FILE},
        data=data,
        data_text=files[DATA_FILE],
    )


def submit(ctx: WriteContext, *, name: str, notes: str, bundle: PolicyBundle) -> PolicyReleaseView:
    """The next version of release ``name`` with the bundle's files; pending approval."""
    if not NAME.match(name):
        raise InvalidInput(
            "invalid policy release name",
            problems=[FieldProblem("name", f"{name!r}: lower-case letters, digits, . _ - only")],
        )
    if len(notes) > MAX_NOTES:
        raise InvalidInput(
            "notes too long",
            problems=[FieldProblem("notes", f"{len(notes)} characters, at most {MAX_NOTES}")],
        )
    files, revision = bundle.files(), bundle.revision
    same = ctx.session.scalars(
        select(PolicyReleaseRow).where(PolicyReleaseRow.bundle_revision == revision)
    ).first()
    if same is not None:
        raise Conflict(
            f"these files were released already as {_ref(same)} (revision {revision}): "
            "a revision is released once"
        )
    latest = ctx.session.scalar(
        select(func.max(PolicyReleaseRow.version)).where(PolicyReleaseRow.name == name)
    )
    row = PolicyReleaseRow(
        name=name,
        version=(latest or 0) + 1,
        bundle_revision=revision,
        files=canonical_json(files),
        notes=notes,
        submitted_by=ctx.principal,
        submitted_at=ctx.now,
    )
    ctx.session.add(row)
    settle(ctx.session, row)
    ctx.record_event(
        "policy_release.submit",
        {
            "release": _ref(row),
            "bundle_revision": revision,
            ROWS_KEY: [policy_release_entry(row)],
        },
    )
    current = in_force_row(ctx.session)
    return _view(row, None, current.id if current else None)


def approve(ctx: WriteContext, *, ref: str, comment: str | None) -> PolicyReleaseView:
    """Put a release in force: someone other than its submitter, once."""
    row = release_row(ctx.session, ref)
    earlier = ctx.session.scalars(
        select(PolicyReleaseApprovalRow).where(PolicyReleaseApprovalRow.release_id == row.id)
    ).first()
    if earlier is not None:
        raise Conflict(f"policy release {_ref(row)} was already approved by {earlier.approved_by}")
    if row.submitted_by == ctx.principal:
        raise Forbidden(
            f"{ctx.principal} submitted policy release {_ref(row)} and may not approve it "
            "too: a different policy-admin must"
        )
    previous = in_force_row(ctx.session)
    approval = PolicyReleaseApprovalRow(
        release_id=row.id, approved_by=ctx.principal, approved_at=ctx.now, comment=comment
    )
    ctx.session.add(approval)
    settle(ctx.session, approval)
    ctx.record_event(
        "policy_release.approve",
        {
            "release": _ref(row),
            "bundle_revision": row.bundle_revision,
            "submitted_by": row.submitted_by,
            "replaces": _ref(previous) if previous else None,
            "comment": comment,
            ROWS_KEY: [policy_release_approval_entry(approval)],
        },
    )
    return _view(row, approval, row.id)


def list_releases(session: Session) -> list[PolicyReleaseView]:
    approvals = _approvals(session)
    current = in_force_row(session)
    rows = session.scalars(
        select(PolicyReleaseRow).order_by(PolicyReleaseRow.name, PolicyReleaseRow.version)
    )
    return [_view(row, approvals.get(row.id), current.id if current else None) for row in rows]


def get_release(session: Session, ref: str) -> PolicyReleaseView:
    row = release_row(session, ref)
    current = in_force_row(session)
    return _view(row, _approvals(session).get(row.id), current.id if current else None)


def approved_revisions(session: Session) -> dict[str, tuple[str, datetime]]:
    """bundle revision -> (release ref, approved at) of every approved release."""
    approvals = _approvals(session)
    out: dict[str, tuple[str, datetime]] = {}
    for row in session.scalars(select(PolicyReleaseRow)):
        approval = approvals.get(row.id)
        if approval is not None:
            out[row.bundle_revision] = (_ref(row), as_utc(approval.approved_at))
    return out


class ReleaseInForce(BaseModel):
    """What the gate decides under: the release, or None on an ungoverned registry (the
    decision then names no release, and `capgate audit verify` counts it)."""

    release: str | None


def release_for_decision(
    session: Session, *, engine_revision: str, pinned: str | None
) -> ReleaseInForce:
    """The release a decision runs under, or PolicyReleaseError (never a decision)."""
    current = in_force_row(session)
    if pinned is not None:
        wanted = release_row(session, pinned, loc="policy_release")
        if current is None or wanted.id != current.id:
            now = _ref(current) if current else "none (no release was approved)"
            raise PolicyReleaseError(
                f"the pipeline pins policy release {_ref(wanted)} "
                f"({wanted.bundle_revision}), but the release in force is {now}"
            )
    if current is None:
        from registry.settings import Settings

        if Settings.from_env().require_policy_release:
            raise PolicyReleaseError(
                "no policy release is approved and CAPGATE_REQUIRE_POLICY_RELEASE is set: "
                f"submit the installed bundle ({engine_revision}) with capgate policy "
                "release submit, and have another policy-admin approve it"
            )
        return ReleaseInForce(release=None)
    if current.bundle_revision != engine_revision:
        raise PolicyReleaseError(
            f"the policy engine runs bundle {engine_revision}, but the approved release "
            f"in force, {_ref(current)}, is {current.bundle_revision}: install the "
            "approved release (or submit and approve the installed bundle) before deciding"
        )
    return ReleaseInForce(release=_ref(current))


def release_problems(session: Session) -> tuple[list[str], int]:
    """Decisions no approved release accounts for, and how many came before governance.

    From the first approval on, every allow or deny must have been taken under the
    revision of a release approved by then, and must name that release. Decisions taken
    before the first approval are ungoverned: counted, not failed (the registry was not
    under releases yet).
    """
    from registry.storage.models import DecisionRow

    approved = approved_revisions(session)
    if not approved:
        ungoverned = session.scalar(select(func.count()).select_from(DecisionRow)) or 0
        return [], int(ungoverned)
    first = min(at for _ref, at in approved.values())
    problems: list[str] = []
    ungoverned = 0
    rows = session.execute(
        select(
            DecisionRow.id,
            DecisionRow.plan_name,
            DecisionRow.outcome,
            DecisionRow.bundle_revision,
            DecisionRow.policy_release,
            DecisionRow.created_at,
        ).order_by(DecisionRow.created_at, DecisionRow.id)
    )
    for decision_id, plan, outcome, revision, release, created in rows:
        at = as_utc(created)
        if at < first:
            ungoverned += 1
            continue
        if outcome not in ("allow", "deny"):
            continue  # an error decided nothing
        held = approved.get(revision)
        if held is None or held[1] > at:
            problems.append(
                f"decisions {decision_id} (plan {plan}, {outcome} at {at.isoformat()}) was "
                f"taken under bundle {revision}, which no approved policy release held then"
            )
        elif release != held[0]:
            problems.append(
                f"decisions {decision_id} (plan {plan}) names policy release {release}, but "
                f"its bundle {revision} is release {held[0]}"
            )
    return problems, ungoverned
