"""Policy releases: four eyes, the gate decides only under the release in force, a new
release rechecks what it changes, and `audit verify` names what no release accounts for.
On both databases (the `database` fixture)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from registry.audit.service import verify
from registry.errors import Conflict, Forbidden, InvalidInput, NotFound
from registry.gate.context_cache import contexts_for
from registry.gate.release_approval import approve_and_recheck
from registry.gate.service import check
from registry.gate.views import Outcome
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.releases import (
    PolicyReleaseError,
    approve,
    bundle_from_files,
    list_releases,
    submit,
)
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, DecisionRow, PolicyReleaseRow
from tests.gate.test_gate_flow import registered  # noqa: F401

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = StalenessThresholds()
PLAN = "chat-assistant-prod"


def _stricter() -> PolicyBundle:
    """At most 2 retry attempts: the worked example (3) is denied under it."""
    bundle = load_bundle()
    data = copy.deepcopy(bundle.data)
    data["capgate"]["thresholds"]["retry_max_attempts"] = 2
    return PolicyBundle.from_sources(bundle.modules, data)


def _submit(database: Database, bundle: PolicyBundle, by: str = "alice", name: str = "policies"):
    return database.write(
        lambda ctx: submit(ctx, name=name, notes="n", bundle=bundle), principal=by, now=lambda: NOW
    )


def _approve(database: Database, ref: str, engine: EmbeddedEngine, by: str = "bob", at=NOW):
    return approve_and_recheck(
        database,
        lambda: engine,
        ref=ref,
        comment="reviewed",
        principal=by,
        limits=LIMITS,
        now=at,
    )


def _gate(database: Database, engine: EmbeddedEngine, at=NOW, pin: str | None = None):
    return check(
        database,
        engine,
        plan_ref=PLAN,
        principal="release-bot",
        limits=LIMITS,
        now=at,
        policy_release=pin,
    )


def _decisions(database: Database) -> int:
    with database.reading() as session:
        return int(session.scalar(select(func.count()).select_from(DecisionRow)) or 0)


def test_success_ungoverned_registry_decides_and_says_so(registered: Database) -> None:  # noqa: F811
    engine = EmbeddedEngine()
    decision = _gate(registered, engine)
    assert decision.outcome is Outcome.allow
    assert decision.policy_release is None
    with registered.reading() as session:
        report = verify(session)
    assert report.intact and report.ungoverned_decisions == 1


def test_fail_four_eyes(registered: Database) -> None:  # noqa: F811
    engine = EmbeddedEngine()
    release = _submit(registered, load_bundle())
    assert release.ref == "policies@v1" and release.approved_by is None
    with pytest.raises(Forbidden, match="alice submitted policy release policies@v1"):
        _approve(registered, "policies@v1", engine, by="alice")
    _approve(registered, "policies@v1", engine, by="bob")
    with pytest.raises(Conflict, match="already approved by bob"):
        _approve(registered, "policies@v1", engine, by="carol")
    with pytest.raises(Conflict, match="released already as policies@v1"):
        _submit(registered, load_bundle(), name="other")
    with pytest.raises(InvalidInput) as caught:
        _approve(registered, "policies-v1", engine)
    assert [p.loc for p in caught.value.problems] == ["ref"]


def test_success_decisions_name_the_release_in_force(registered: Database) -> None:  # noqa: F811
    engine = EmbeddedEngine()
    _submit(registered, load_bundle())
    _approve(registered, "policies@v1", engine)
    decision = _gate(registered, engine, at=NOW + timedelta(minutes=1))
    assert decision.outcome is Outcome.allow
    assert decision.policy_release == "policies@v1"
    pinned = _gate(registered, engine, at=NOW + timedelta(minutes=2), pin="policies@v1")
    assert pinned.policy_release == "policies@v1"
    with registered.reading() as session:
        assert verify(session).intact


def test_fail_installed_bundle_other_than_the_release_decides_nothing(
    registered: Database,  # noqa: F811
) -> None:
    """An edited data file (retry_max_attempts 4 -> 20, the issue's case) is an error naming
    both revisions, and nothing is stored."""
    engine = EmbeddedEngine()
    _submit(registered, load_bundle())
    _approve(registered, "policies@v1", engine)
    data = copy.deepcopy(load_bundle().data)
    data["capgate"]["thresholds"]["retry_max_attempts"] = 20
    edited = EmbeddedEngine(PolicyBundle.from_sources(load_bundle().modules, data))
    before = _decisions(registered)
    with pytest.raises(PolicyReleaseError) as caught:
        _gate(registered, edited, at=NOW + timedelta(minutes=1))
    assert edited.revision in caught.value.message
    assert engine.revision in caught.value.message
    assert "policies@v1" in caught.value.message
    assert (caught.value.exit_code, caught.value.status_code) == (2, 503)
    assert _decisions(registered) == before


def test_fail_pin_other_than_the_release_in_force(registered: Database) -> None:  # noqa: F811
    engine = EmbeddedEngine()
    _submit(registered, load_bundle())
    _submit(registered, _stricter())
    _approve(registered, "policies@v1", engine)
    with pytest.raises(
        PolicyReleaseError, match=r"pins policy release policies@v2 .* is policies@v1"
    ):
        _gate(registered, engine, at=NOW + timedelta(minutes=1), pin="policies@v2")
    with pytest.raises(NotFound, match="no policy release policies@v9"):
        _gate(registered, engine, at=NOW + timedelta(minutes=1), pin="policies@v9")


def test_success_approving_a_stricter_release_rechecks_and_flags_changes(
    registered: Database,  # noqa: F811
) -> None:
    current = EmbeddedEngine()
    _submit(registered, load_bundle())
    _approve(registered, "policies@v1", current)
    first = _gate(registered, current, at=NOW + timedelta(minutes=1))
    assert first.outcome is Outcome.allow

    stricter = EmbeddedEngine(_stricter())
    _submit(registered, _stricter(), by="carol")
    done = _approve(registered, "policies@v2", stricter, by="dave", at=NOW + timedelta(minutes=2))
    assert done.note is None and done.recheck is not None
    [item] = done.recheck.rechecked
    assert (item.plan, item.previous_outcome, item.decision.outcome) == (
        "chat-assistant-prod@v1",
        Outcome.allow,
        Outcome.deny,
    )
    assert item.new_violations == ["retries_bounded.attempts_unbounded"]
    assert item.decision.policy_release == "policies@v2"
    with registered.reading() as session:
        flagged = session.scalars(
            select(AuditEventRow).where(AuditEventRow.action == "gate.outcome_changed")
        ).all()
        assert [json.loads(e.payload)["plan"] for e in flagged] == ["chat-assistant-prod@v1"]
        assert [r.in_force for r in list_releases(session)] == [False, True]
    # The old release no longer decides.
    with pytest.raises(PolicyReleaseError, match="policies@v2"):
        _gate(registered, current, at=NOW + timedelta(minutes=3))


def test_success_approval_with_another_bundle_installed_says_what_to_do(
    registered: Database,  # noqa: F811
) -> None:
    _submit(registered, _stricter())
    done = _approve(registered, "policies@v1", EmbeddedEngine())
    assert done.recheck is None
    assert done.note is not None and "capgate policy release export policies@v1" in done.note


def test_fail_audit_verify_names_a_decision_under_an_unapproved_release(
    registered: Database,  # noqa: F811
) -> None:
    engine = EmbeddedEngine()
    _submit(registered, load_bundle())
    _approve(registered, "policies@v1", engine)
    decision = _gate(registered, engine, at=NOW + timedelta(minutes=1))
    # A decision row rewritten to another bundle (and its audit entry with it would be
    # needed to hide it from the row check): the release check names it either way.
    with registered.engine.begin() as connection:
        connection.execute(
            update(DecisionRow)
            .where(DecisionRow.id == decision.id)
            .values(bundle_revision="sha256:" + "0" * 64)
        )
    with registered.reading() as session:
        report = verify(session)
    assert not report.intact
    assert any(
        decision.id in p and "no approved policy release held then" in p for p in report.problems
    )


def test_fail_release_files_edited_in_place_are_named(registered: Database) -> None:  # noqa: F811
    _submit(registered, load_bundle())
    with registered.engine.begin() as connection:
        connection.execute(update(PolicyReleaseRow).values(files='{"data.json": "{}"}'))
    with registered.reading() as session:
        report = verify(session)
    assert any("policy_releases id 1 (policies@v1)" in p for p in report.problems)


@pytest.mark.parametrize(
    ("files", "field"),
    [
        ({"a.rego": "package a"}, "files"),
        ({"data.json": "[]"}, "files.data.json"),
        ({"data.json": "{", "a.rego": ""}, "files.data.json"),
        ({"data.json": "{}", "a_test.rego": ""}, "files.a_test.rego"),
        ({"data.json": "{}", "../a.rego": ""}, "files.../a.rego"),
        ({"data.json": "{}", "notes.txt": ""}, "files.notes.txt"),
    ],
)
def test_fail_release_files_are_checked_naming_the_file(files: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        bundle_from_files(files)
    assert field in [p.loc for p in caught.value.problems]


def test_fail_a_registry_that_requires_a_release_decides_nothing_before_one(
    registered: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CAPGATE_REQUIRE_POLICY_RELEASE", "1")
    engine = EmbeddedEngine()
    with pytest.raises(PolicyReleaseError, match="no policy release is approved") as caught:
        _gate(registered, engine)
    assert engine.revision in caught.value.message
    assert _decisions(registered) == 0
    _submit(registered, load_bundle())
    _approve(registered, "policies@v1", engine)
    assert _gate(registered, engine, at=NOW + timedelta(minutes=1)).policy_release == "policies@v1"


def test_success_a_release_approved_after_a_cached_check_is_the_next_checks(
    registered: Database,  # noqa: F811
) -> None:
    """The release in force is kept with the plan's cached context (one statement less a
    check); a release submitted or approved after it is seen by the next check in the
    same process, pinned or not."""
    engine = EmbeddedEngine()
    for minute in (1, 2):  # the second check takes its context and release from the cache
        assert _gate(registered, engine, at=NOW + timedelta(minutes=minute)).policy_release is None
    _submit(registered, load_bundle())
    before = _decisions(registered)
    with pytest.raises(PolicyReleaseError, match="the release in force is none"):
        _gate(registered, engine, at=NOW + timedelta(minutes=3), pin="policies@v1")
    assert _decisions(registered) == before
    _approve(registered, "policies@v1", engine)
    for minute in (4, 5):
        assert _gate(registered, engine, at=NOW + timedelta(minutes=minute)).policy_release == (
            "policies@v1"
        )
    pinned = _gate(registered, engine, at=NOW + timedelta(minutes=6), pin="policies@v1")
    assert pinned.policy_release == "policies@v1"


def test_edge_a_release_committed_while_a_context_is_read_is_never_kept_stale(
    registered: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release approved while a check reads (just after its release was read) must not
    leave that release kept with the context: on a miss the release is read after the
    context, whose snapshot number comes first, so the approval is after that number and
    the next check reads both again. (Read the other way round, PostgreSQL's READ
    COMMITTED showed the approval in the number but not in the release: no release was
    kept, and kept, until some other write.)"""
    import registry.gate.service as service

    engine = EmbeddedEngine()
    _submit(registered, load_bundle())
    real = service.release_for_decision
    approved: list[bool] = []

    def then_approve(*args: object, **kwargs: object) -> object:
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        if not approved:
            approved.append(True)
            # A plain approval committing during the check's read (another process's:
            # no recheck here that would refill this process's cache).
            other = Database(registered.url)
            try:
                other.write(
                    lambda ctx: approve(ctx, ref="policies@v1", comment="reviewed"),
                    principal="bob",
                )
            finally:
                other.engine.dispose()
        return found

    _gate(registered, engine)  # the planner runs and its recomputation is stored
    contexts_for(registered).clear()  # the next check reads its context (a miss) and keeps it
    monkeypatch.setattr(service, "release_for_decision", then_approve)
    assert _gate(registered, engine, at=NOW + timedelta(minutes=1)).policy_release is None
    monkeypatch.setattr(service, "release_for_decision", real)
    later = [_gate(registered, engine, at=NOW + timedelta(minutes=m)) for m in (2, 3)]
    assert [d.policy_release for d in later] == ["policies@v1", "policies@v1"]
