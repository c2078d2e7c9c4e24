"""Evidence that only looks representative, end to end on the worked example: a load test
that cancelled far fewer requests of a class than its clients do, and one whose prefix-cache
hit rate nobody measured. The example is registered, its load test imported from the raw
AIPerf files (edited the way another run would differ), and the gate decides."""

from __future__ import annotations

import json
from typing import Any

from registry.gate.views import Outcome
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from registry.storage.models import DecisionRow
from tests.factories import EXAMPLE_EVIDENCE
from tests.gate.test_verdicts import engine, gate, register, registry, violations

__all__ = ["engine", "registry"]  # the fixtures this module borrows


def _few_interactive_cancellations(doc: dict[str, Any]) -> None:
    """The interactive generator cancels 0.5 % of its requests, not its clients' 4 %."""
    phase = doc["input_config"]["phases"][0]
    if phase["rate"] != 7.84:  # the batch generator is left as it ran
        return
    phase["cancellation"]["rate"] = 0.5
    doc["error_summary"][0]["count"] = 23
    doc["error_request_count"]["avg"] = 23.0


def test_a_test_that_cancelled_too_few_of_a_class_is_denied_naming_the_rates(
    registry: Database, engine: EmbeddedEngine
) -> None:
    register(registry, edit=_few_interactive_cancellations)
    decision = gate(registry, engine)
    assert decision.outcome is Outcome.deny
    found = violations(decision)
    # The test still cancelled requests: presence alone would have passed it.
    assert "load_test_coverage/cancellation_not_exercised" not in found
    band = found["load_test_coverage/cancellation_rate_not_tested"]
    details = band["details"]
    assert details["class"] == "interactive"
    assert details["workload_cancellation_rate"] == 0.04
    assert (details["min_share"], details["max_share"]) == (0.5, 2)
    [tested] = details["evidence"]
    assert tested["cancellation_rate"] == round(23 / (4512 + 23), 6)
    assert "load_test_min_cancellation_share" in band["message"]
    # Only the class that was under-tested: batch still cancelled 11 of 1060.
    assert [v["details"]["class"] for v in decision.violations if v["rule"] == band["rule"]] == [
        "interactive"
    ]


def test_the_example_notes_the_prefix_cache_hit_rate_nobody_measured(
    registry: Database, engine: EmbeddedEngine
) -> None:
    """AIPerf's client files cannot see the server's prefix cache: the example is allowed,
    with one note naming its test and production's share for the mix it offered."""
    register(registry)
    decision = gate(registry, engine)
    assert decision.outcome is Outcome.allow, decision.violations
    [note] = [w for w in decision.warnings if w.startswith("tail_slo.prefix_cache_hit_rate_")]
    assert f"{EXAMPLE_EVIDENCE}@v1 is unknown" in note
    # interactive: 4700 requests x 1050 mean prompt tokens at 0.30; batch: 1060 x 2750 at 0.05.
    share = (4700 * 1050 * 0.30 + 1060 * 2750 * 0.05) / (4700 * 1050 + 1060 * 2750)
    assert f"offered classes is {share:.3f})" in note
    with registry.reading() as session:
        stored = session.get(DecisionRow, decision.id)
        assert stored is not None
        [evidence] = json.loads(stored.input)["evidence"]
    assert evidence["prefix_cache_hit_rate"] is None
    assert evidence["workload_prefix_cache_share"] == round(share, 6)
    assert evidence["per_class"]["interactive"]["cancellation_rate"] == round(188 / 4700, 6)
    assert evidence["per_class"]["batch"]["cancellation_rate"] == round(11 / 1060, 6)
