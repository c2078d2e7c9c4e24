"""A new policy bundle marks earlier allows for re-evaluation; recheck reports changes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path

from registry.gate.recheck import recheck_all
from registry.gate.service import check, get_decision, get_decision_with_input
from registry.gate.views import Outcome
from registry.manifests.consistency import stated_fields
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database
from tests.factories import example
from tests.gate.test_gate_flow import registered, submit  # noqa: F401 - fixture
from tests.gate.test_manifest_consistency import drifted

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = StalenessThresholds()


def stricter_bundle() -> PolicyBundle:
    """The installed bundle with at most 2 retry attempts: the example (3) now violates."""
    bundle = load_bundle()
    data = copy.deepcopy(bundle.data)
    data["capgate"]["thresholds"]["retry_max_attempts"] = 2
    return PolicyBundle.from_sources(bundle.modules, data)


def test_new_bundle_marks_allow_for_recheck_and_recheck_reports_change(
    registered: Database,  # noqa: F811 - the fixture
) -> None:
    current = EmbeddedEngine()
    first = check(
        registered, current, plan_ref="chat-assistant-prod", principal="ci", limits=LIMITS, now=NOW
    )
    assert first.outcome is Outcome.allow

    stricter = EmbeddedEngine(stricter_bundle())
    assert stricter.revision != current.revision
    with registered.reading() as session:
        seen_now = get_decision(session, first.id, current_revision=stricter.revision)
        seen_then = get_decision(session, first.id, current_revision=current.revision)
    assert seen_now.needs_recheck is True
    assert seen_then.needs_recheck is False

    # A recheck comes after the decision it re-runs: with the same instant, "the latest
    # decision of the plan" would be either of the two.
    later = NOW + timedelta(minutes=1)
    report = recheck_all(registered, stricter, principal="ci", limits=LIMITS, now=later)
    assert report.bundle_revision == stricter.revision
    [item] = report.rechecked
    assert item.plan == "chat-assistant-prod@v1"
    assert item.previous_decision == first.id
    assert item.decision.outcome is Outcome.deny
    assert item.changed
    assert item.new_violations == ["retries_bounded.attempts_unbounded"]
    assert item.resolved_violations == []
    # The earlier decision keeps what it was; running again finds nothing left to recheck.
    with registered.reading() as session:
        assert get_decision(session, first.id, current_revision=None).outcome is Outcome.allow
    again = recheck_all(
        registered, stricter, principal="ci", limits=LIMITS, now=later + timedelta(minutes=1)
    )
    assert again.rechecked == []
    assert again.up_to_date == ["chat-assistant-prod@v1"]


def test_evidence_is_not_staled_by_a_bundle_change(
    registered: Database,  # noqa: F811 - the fixture
) -> None:
    submit(registered, "workload", example("workload", description="same numbers"))
    decision = check(
        registered,
        EmbeddedEngine(stricter_bundle()),
        plan_ref="chat-assistant-prod",
        principal="ci",
        limits=LIMITS,
        now=NOW,
    )
    assert all(e["fresh"] for e in decision.inputs["evidence"])


def blind_to_manifests() -> PolicyBundle:
    """The installed bundle as it was before manifests_consistent reported anything."""
    bundle = load_bundle()
    path = "manifests_consistent/manifests_consistent.rego"
    assert path in bundle.modules
    modules = {
        **bundle.modules,
        path: "package capgate.policies.manifests_consistent\n\nviolations := set()\n\n"
        "notes := set()\n",
    }
    return PolicyBundle.from_sources(modules, bundle.data)


def test_recheck_carries_the_manifests_an_earlier_decision_checked(
    registered: Database,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    # Allowed under a bundle that did not compare manifests, though they drifted.
    stated = stated_fields([str(drifted(tmp_path))])
    first = check(
        registered,
        EmbeddedEngine(blind_to_manifests()),
        plan_ref="chat-assistant-prod",
        principal="ci",
        limits=LIMITS,
        now=NOW,
        manifests=stated,
    )
    assert first.outcome is Outcome.allow

    # The current bundle denies it on the comparison kept in that decision's input.
    report = recheck_all(registered, EmbeddedEngine(), principal="ci", limits=LIMITS, now=NOW)
    [item] = report.rechecked
    assert item.decision.outcome is Outcome.deny
    assert item.new_violations == ["manifests_consistent.manifest_contradicts_plan"]
    contradicted = {v["details"]["field"] for v in item.decision.violations}
    assert "drain.termination_grace_period_s" in contradicted
    with registered.reading() as session:
        _, document = get_decision_with_input(session, item.decision.id, current_revision=None)
    assert document["manifests"]["checked"] is True
