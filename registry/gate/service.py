"""The gate: evaluate a plan's policies on evidence and recomputation, keep the decision.

It fails closed. Anything that prevents a sound evaluation (an unreadable record, an
input that breaks its schema, a policy engine that is down, errors or answers nothing)
ends in the outcome `error`, which release pipelines treat like a denial (exit 2),
never in `allow`. Where the registry itself is reachable, the error decision is kept
too, so an auditor sees failed checks as well as passed ones.

A registry that fails its integrity check (its audit chain, or any row of any plan
against the event that wrote it: registry.audit.integrity, whose module text says how a
check stays fast) is not reachable in that sense: it is quarantined
(registry.audit.quarantine), the check raises Tampered (exit 2) naming the failure and
keeps nothing, since keeping a decision would extend a broken chain.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError
from sqlalchemy.orm import Session

from registry.attestation.store import (
    attest_stored_decision,
    planner_version_of,
    signed_attestation,
)
from registry.audit.chain import as_utc
from registry.audit.checkpoint import enforce_saved as enforce_saved_checkpoint
from registry.audit.integrity.feeds import Feeds
from registry.audit.integrity.guard import Guard, guard_for
from registry.audit.rows import ROWS_KEY, decision_entry, settle
from registry.digest import canonical_json, content_digest
from registry.errors import CapgateError
from registry.gate.assemble import gate_input
from registry.gate.context import PlanContext
from registry.gate.context_cache import CONTEXT_TABLES, contexts_for

# Reading kept decisions lives in registry.gate.decisions; its verbs are named here too,
# where the API, the CLI and the reports have always imported them from.
from registry.gate.decisions import (
    decision_view,
    get_decision,
    get_decision_with_input,
    list_decisions,
    stored_input,
)
from registry.gate.views import DecisionView, Outcome
from registry.gate.waivers import apply_waivers
from registry.keys import signing_key
from registry.policy.engine import BuiltInput
from registry.policy.input_document import ManifestsInput
from registry.policy.input_recomputation import CalibrationInput
from registry.policy.releases import release_for_decision
from registry.records.references import parse_ref
from registry.sizing.service import Sized, read_plan, size_plan
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database, WriteContext
from registry.storage.models import DecisionAttestationRow, DecisionRow
from registry.storage.repository import GateRepository, IntegrityRepository

__all__ = [
    "Engine",
    "check",
    "get_decision",
    "get_decision_with_input",
    "list_decisions",
    "stored_input",
]

if TYPE_CHECKING:
    from registry.manifests.consistency import StatedManifests


class Violation(Protocol):
    def model_dump(self) -> dict[str, Any]: ...


class EngineDecision(Protocol):
    @property
    def allow(self) -> bool: ...

    @property
    def violations(self) -> list[Any]: ...

    @property
    def notes(self) -> list[Any]: ...


class Engine(Protocol):
    """What the gate needs of a policy engine (see registry.policy.engine)."""

    @property
    def name(self) -> str: ...

    @property
    def revision(self) -> str: ...

    def decide(self, input_document: dict[str, Any]) -> EngineDecision: ...


def _violation_dicts(decision: EngineDecision) -> list[dict[str, Any]]:
    out = []
    for violation in decision.violations:
        data = violation.model_dump() if hasattr(violation, "model_dump") else dict(violation)
        out.append(data)
    return sorted(
        out,
        key=lambda v: (str(v.get("policy")), str(v.get("rule")), canonical_json(v.get("details"))),
    )


def _previous_decision(
    session: Session, plan_name: str
) -> tuple[str, CalibrationInput | None] | None:
    """The plan's last decision (any version) and the calibration it was taken with."""
    last = GateRepository(session).last_decision(plan_name)
    if last is None:
        return None
    decision_id, calibration = last
    try:
        stored = json.loads(calibration) if calibration is not None else None
    except ValueError:
        stored = None  # a string where an object belongs: not a calibration
    if not isinstance(stored, dict):
        return decision_id, None  # decided before calibration was part of the input, or an error
    try:
        return decision_id, CalibrationInput.model_validate(stored)
    except ValidationError:
        return decision_id, None


def _context_feeds(session: Session, context: PlanContext) -> Feeds:
    """Every record (and, through their series, staleness, withdrawal and approval row)
    the plan's context was read from, for the integrity check."""
    repo = IntegrityRepository(session)
    evidence = repo.version_ids(
        "evidence", [(item.view.name, item.view.version) for item in context.evidence]
    )
    waiver_refs = [parse_ref(waiver.ref) for waiver in context.waivers]
    waivers = repo.version_ids(
        "waiver", [(str(ref.name), int(ref.version or 0)) for ref in waiver_refs]
    )
    ids = {context.plan_row_id, *evidence.values(), *waivers.values()}
    if context.production is not None:
        ids.add(context.production.row_id)
    pins = repo.refs(ids)
    ids |= {target for targets in pins.values() for target in targets.values()}
    return Feeds(record_ids=frozenset(ids), every_waiver=True)


def _sized_fresh(
    database: Database,
    guard: Guard,
    plan_ref: str,
    principal: str,
    moment: datetime,
    limits: StalenessThresholds,
) -> tuple[Sized, tuple[str, CalibrationInput | None] | None]:
    """The plan recomputed and stored (no stored recomputation fits its inputs), and its
    last decision; the plan's rows verified before the planner runs, the recomputation
    and the last decision after it is stored."""

    def verify_context(context: PlanContext) -> None:
        # Nothing is appended to a registry whose records, staleness, withdrawals or
        # waivers were tampered with.
        with database.reading() as session:
            feeds = _context_feeds(session, context)
        guard.check_feeds(database, feeds)

    sized = size_plan(
        database,
        plan_ref=plan_ref,
        principal=principal,
        now=moment,
        limits=limits,
        verify=verify_context,
    )
    with database.reading() as session:
        last = _previous_decision(session, sized.context.plan.name)
    guard.check_feeds(
        database,
        Feeds(
            record_ids=frozenset(),
            decision_ids=frozenset([last[0]] if last else []),
            recomputation_ids=frozenset([sized.row_id]),
            every_waiver=False,
        ),
    )
    return sized, last


def check(
    database: Database,
    engine: Engine,
    *,
    plan_ref: str,
    principal: str,
    limits: StalenessThresholds,
    now: datetime | None = None,
    manifests: StatedManifests | ManifestsInput | None = None,
    policy_release: str | None = None,
    sweep: bool = True,
    reuse_context: bool = True,
    confirm: Callable[[Session], None] | None = None,
) -> DecisionView:
    """Evaluate the gate for `plan_ref` and store the decision (allow, deny or error).

    ``policy_release``: a release (NAME@vN) the caller pins; the check fails with
    PolicyReleaseError, storing nothing, unless it is the approved release in force, and
    so does a policy engine whose bundle is not that release (registry.policy.releases).

    ``manifests``: the plan fields the manifests that ship state (read by the client);
    they are compared with the plan version decided on, and the manifests_consistent
    policy denies a plan they contradict. A recheck passes the comparison an earlier
    decision on the same plan version made instead.

    Raises Tampered, storing nothing, when the registry fails its integrity check.
    ``sweep=False``: the registry-wide fingerprint scans are skipped (a batch of checks,
    such as a recheck, runs them once, with its first check); the rest still runs.
    ``reuse_context=False``: the plan's context is read, not taken from the process's
    cache (registry.gate.context_cache), nor kept there.
    ``confirm``: run first in the check's reading session, before anything is read
    (the API confirms there the request's API token: registry.auth.token_cache); what
    it raises ends the check with nothing read or stored.
    """
    moment = now or datetime.now(UTC)
    guard = guard_for(database)
    contexts = contexts_for(database)
    failure: Exception | None = None
    # Everything the decision reads, in one session: the integrity check below verifies
    # it (and the whole registry) before anything is decided or stored.
    with database.reading() as session:
        if confirm is not None:
            confirm(session)
        enforce_saved_checkpoint(session)  # a cut tail or a rewrite behind a saved head
        try:
            # A bundle other than the approved release decides nothing (its rows are
            # verified with the decision's other feeds below). The release read with a
            # cached context holds as long as the context does (context_cache.Entry); on
            # a miss it is read after the context, whose entry's `seq` was read first: a
            # release committed in between is then after `seq`, and invalidates both.
            if reuse_context:
                kept = contexts.entry(plan_ref, limits)
                cached = kept.release(engine.revision, policy_release) if kept else None
                read = contexts.read(session, plan_ref=plan_ref, now=moment, limits=limits)
                context, sized = read.context, read.sized
                if cached is not None and read.entry is kept:
                    in_force = cached
                else:
                    in_force = release_for_decision(
                        session, engine_revision=engine.revision, pinned=policy_release
                    )
            else:
                in_force = release_for_decision(
                    session, engine_revision=engine.revision, pinned=policy_release
                )
                context, sized = read_plan(session, plan_ref=plan_ref, now=moment, limits=limits)
            last = _previous_decision(session, context.plan.name) if sized else None
        except Exception as exc:
            failure = exc
    if failure is not None:
        # A quarantined registry says so whatever else failed (a plan deleted in SQL is
        # a quarantine, not a 404; a record edited in place, not only its own error).
        guard.check_registry(database, sweep=sweep)
        raise failure
    if sized is None:
        # The planner must run: the registry and this plan's rows are verified before
        # it runs or its result is stored, as `size_plan` promises its `verify`.
        guard.check_registry(database, sweep=sweep)
        sized, last = _sized_fresh(database, guard, plan_ref, principal, moment, limits)
    else:
        # The stored recomputation is reused: the whole registry (the quarantine) and
        # every row the decision rests on, in one snapshot and one walk of the chain.
        # Which rows those are is read only if the guard needs them (no sweep passed).
        reused, previous_id = sized, last[0] if last else None

        def feeds(session: Session) -> Feeds:
            return Feeds(
                record_ids=_context_feeds(session, reused.context).record_ids,
                decision_ids=frozenset([previous_id] if previous_id else []),
                recomputation_ids=frozenset([reused.row_id]),
                every_waiver=True,
            )

        guard.check_decision(database, feeds, sweep=sweep)
        entry = read.entry if reuse_context else None
        changed = entry is not None and guard.rows_added_since(entry.seq, CONTEXT_TABLES)
        if changed and read.cached:
            # A record, staleness, withdrawal or approval was added since the context
            # was read: read it again (registry.gate.context_cache; the cache emptied,
            # so the check reads, and keeps what it read: no second round).
            contexts.clear()
            return check(
                database,
                engine,
                plan_ref=plan_ref,
                principal=principal,
                limits=limits,
                now=moment,
                manifests=manifests,
                policy_release=policy_release,
                sweep=sweep,
            )
        if entry is not None and not read.cached and not changed:
            kept_release = ((engine.revision, policy_release), in_force)
            contexts.keep(plan_ref, limits, replace(entry, release_read=kept_release))
    context = sized.context
    previous = (last[0], last[1]) if last is not None and last[1] is not None else None
    document: dict[str, Any] = {}
    violations: list[dict[str, Any]] = []
    outcome, error = Outcome.error, None
    revision = "unknown"
    notes: list[str] = []
    try:
        document = BuiltInput(
            gate_input(context, sized.view.result, previous, manifests).model_dump(mode="json")
        )
    except ValidationError as exc:
        error = f"the gate input does not match its schema: {exc.errors()[0]['msg']}"
    if error is None:
        try:
            revision = engine.revision
            decision = engine.decide(document)
            violations = _violation_dicts(decision)
            notes = [f"{n.policy}.{n.rule}: {n.message}" for n in decision.notes]
            outcome = Outcome.allow if decision.allow and not violations else Outcome.deny
            if decision.allow and violations:
                error = "the policy engine allowed a plan it reported violations for"
                outcome = Outcome.error
        except CapgateError as exc:
            error = exc.message

    waived: dict[str, Any] = {"waived": [], "used": []}
    warnings: list[str] = []
    if outcome is Outcome.deny:
        applied = apply_waivers(
            violations,
            context.waivers,
            plan_name=context.plan.name,
            plan_ref=context.plan_view.ref,
            now=moment,
        )
        violations = applied.remaining
        waived = {"waived": applied.waived, "used": applied.used}
        warnings = applied.warnings
        if not violations:
            outcome = Outcome.allow
    # Stale evidence reaches the reader through evidence_fresh (a note beside fresh
    # evidence, a violation without it), never twice.
    warnings += notes

    stored_input = dict(document, recomputation_digest=sized.view.digest) if document else {}

    def decision_row() -> DecisionRow:
        return DecisionRow(
            id=decision_id,
            plan_record_id=context.plan_row_id,
            plan_name=context.plan_view.name,
            outcome=outcome.value,
            engine=engine.name,
            bundle_revision=revision,
            policy_release=in_force.release,
            input_digest=input_digest,
            input=input_text,
            violations=canonical_json(violations),
            waivers=canonical_json(waived),
            warnings=canonical_json(warnings),
            error=error,
            principal=principal,
            created_at=moment,
        )

    # Serialised, viewed and signed before the write: the registry's write lock (every
    # writer queues on it) is held for the chain check, the inserts and the commit only.
    decision_id = str(uuid.uuid4())
    input_digest = content_digest(document) if document else "none"
    input_text = canonical_json(stored_input)
    current = revision if revision != "unknown" else None
    plan_version = context.plan_view.version
    view = decision_view(
        decision_row(), context.plan_view.name, plan_version, current, stored_input
    )
    signed = signed_attestation(
        decision_view(decision_row(), context.plan_view.name, plan_version, None, stored_input),
        context.plan_view.digest,
        planner_version=planner_version_of(stored_input),
        key=signing_key(),
        at=as_utc(moment),
    )

    def store(ctx: WriteContext) -> DecisionView:
        # Never extend a chain that does not verify; this check's quarantine counted it.
        ctx.head = guard.check_append(ctx.session, counted=True)
        row = decision_row()
        GateRepository(ctx.session).add(row)
        settle(ctx.session, row)
        # The decision as a signed in-toto statement, in the same transaction. Signed
        # above on the instant handed to the database; should the row read back keep
        # another, it is signed again on what is stored.
        if as_utc(row.created_at) == view.created_at:
            ctx.session.add(
                DecisionAttestationRow(
                    decision_id=signed.decision_id,
                    key_id=signed.key_id,
                    envelope=signed.envelope,
                    created_at=signed.created_at,
                )
            )
        else:
            attest_stored_decision(ctx.session, row)
        ctx.record_event(
            "gate.check",
            {
                "decision": row.id,
                "plan": context.plan_view.ref,
                "outcome": outcome.value,
                "engine": engine.name,
                "bundle_revision": revision,
                "policy_release": in_force.release,
                "input_digest": row.input_digest,
                ROWS_KEY: [decision_entry(row)],
            },
        )
        # Read back (SQLite keeps another instant): its input re-hashed as any read's.
        built = stored_input if row.input is input_text else None
        return decision_view(row, context.plan_view.name, plan_version, current, built)

    return database.write(store, principal=principal, now=lambda: moment)
