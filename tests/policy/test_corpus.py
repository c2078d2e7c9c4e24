"""The scenario corpus: each input gives exactly the expected policies on both engines."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from registry.policy.bundle import PolicyBundle, load_bundle, policies_root
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision
from registry.policy.input_document import GateInput
from registry.policy.opa_server import OpaServerEngine
from tests.policy.conftest import CASES, EXPECTED, INPUTS, load_case
from tests.support.opa_server import running_opa


def _rules(decision: PolicyDecision) -> list[str]:
    return sorted({f"{v.policy}/{v.rule}" for v in decision.violations})


def _notes(decision: PolicyDecision) -> list[str]:
    return sorted({f"{n.policy}/{n.rule}" for n in decision.notes})


def test_success_corpus_is_complete() -> None:
    files = sorted(p.name for p in INPUTS.glob("*.json") if p.name != "expected.json")
    assert files == CASES
    policy_dirs = sorted(
        p.name
        for p in policies_root().iterdir()
        if p.is_dir() and p.name not in {"lib", "gate"} and not p.name.startswith("__")
    )
    covered = {
        p for case in EXPECTED.values() if len(case["policies"]) == 1 for p in case["policies"]
    }
    # evidence_fresh denies only when no evidence is fresh, and then tail_slo finds no
    # evidence at peak too: it never stands alone, so any case that violates it counts.
    covered |= {
        "evidence_fresh" for case in EXPECTED.values() if "evidence_fresh" in case["policies"]
    }
    assert sorted(covered) == policy_dirs, "every policy needs an input that violates only it"
    assert EXPECTED["compliant.json"]["policies"] == []


def test_success_gate_composes_every_policy() -> None:
    gate = (policies_root() / "gate" / "gate.rego").read_text()
    for folder in policies_root().iterdir():
        if folder.is_dir() and (folder / f"{folder.name}.rego").is_file():
            if folder.name in {"gate"}:
                continue
            assert re.search(rf"^import data\.capgate\.policies\.{folder.name}$", gate, re.M)
            assert f"{folder.name}.violations" in gate


@pytest.mark.parametrize("name", CASES)
def test_success_input_matches_contract(name: str) -> None:
    GateInput.model_validate(load_case(name))


@pytest.mark.parametrize("name", CASES)
def test_embedded_expected_policies(embedded: EmbeddedEngine, name: str) -> None:
    decision = embedded.decide(load_case(name))
    assert decision.policies == EXPECTED[name]["policies"]
    assert _rules(decision) == EXPECTED[name]["rules"]
    assert _notes(decision) == EXPECTED[name]["notes"]
    assert decision.allow is (EXPECTED[name]["policies"] == [])


@pytest.mark.opa
@pytest.mark.parametrize("name", CASES)
def test_opa_expected_policies(opa_engine: OpaServerEngine, name: str) -> None:
    decision = opa_engine.decide(load_case(name))
    assert decision.policies == EXPECTED[name]["policies"]
    assert _rules(decision) == EXPECTED[name]["rules"]
    assert _notes(decision) == EXPECTED[name]["notes"]
    assert decision.allow is (EXPECTED[name]["policies"] == [])


@pytest.mark.opa
@pytest.mark.parametrize("name", CASES)
def test_parity_engines_decide_identically(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine, name: str
) -> None:
    doc = load_case(name)
    assert embedded.revision == opa_engine.revision
    assert embedded.decide(doc) == opa_engine.decide(doc)


def test_success_violation_objects_are_whole(embedded: EmbeddedEngine) -> None:
    decision = embedded.decide(load_case("drain_configured__short_grace_period.json"))
    assert [v.model_dump() for v in decision.violations] == [
        {
            "policy": "drain_configured",
            "rule": "grace_period_too_short",
            "severity": "high",
            "message": "drain.termination_grace_period_s 30 s is shorter than "
            "drain.pre_stop.sleep_s 5 s plus the in-flight tail 95.308 s (100.308 s)",
            "details": {
                "termination_grace_period_s": 30,
                "pre_stop_sleep_s": 5,
                "evidence_e2e_p99_s": 88,
                "longest_stream_s": 95.308,
                "required_s": 100.308,
            },
        },
        {
            "policy": "drain_configured",
            "rule": "pre_stop_gives_up_early",
            "severity": "high",
            "message": "drain.pre_stop.timeout_s 20 s is shorter than the in-flight tail "
            "95.308 s: the hook gives up while the longest streams still run",
            "details": {"pre_stop_timeout_s": 20, "tail_s": 95.308},
        },
    ]


def test_success_float_precision_survives_embedded(embedded: EmbeddedEngine) -> None:
    # The input reaches the module as JSON text: every digit a detail carries survives.
    decision = embedded.decide(load_case("tail_slo__claims_disagree.json"))
    assert [v.model_dump() for v in decision.violations] == [
        {
            "policy": "tail_slo",
            "rule": "claims_disagree",
            "severity": "high",
            "message": "class interactive: the plan claims ttft_p99_ms 600 ms, the recomputation "
            "predicts 1100 ms (relative error 0.455 > 0.2): the plan promises more than the "
            "recomputation; raise claims.per_class.interactive.ttft_p99_ms or change the plan "
            "(the step-time model is calibrated on 1 load test(s) (MBU 0.675, MFU 0.5))",
            "details": {
                "class": "interactive",
                "metric": "ttft_p99_ms",
                "claimed": 600,
                "predicted": 1100,
                "relative_error": 0.454545454545,
                "max_relative_error": 0.2,
            },
        }
    ]


STALE_MESSAGES = [
    "evidence chat-assistant-h100-mixed-2026-08@v1 is stale: workload chat-assistant@v1 "
    "supersedes chat-assistant@v0: interactive prompt tokens p99 moved +38%",
    "evidence chat-assistant-h100-mixed-2026-08@v1 is 97 days old; at most 90 allowed",
]


def test_success_stale_reasons_in_message(embedded: EmbeddedEngine) -> None:
    decision = embedded.decide(load_case("evidence_fresh__only_stale_evidence.json"))
    fresh = [v.message for v in decision.violations if v.policy == "evidence_fresh"]
    assert fresh == STALE_MESSAGES


def test_success_stale_beside_fresh_evidence_is_a_note(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    """More evidence never hurts: an old test beside the fresh one supports nothing and
    blocks nothing; both engines list it as a note."""
    case = load_case("compliant__stale_beside_fresh.json")
    for decision in (embedded.decide(case), opa_engine.decide(case)):
        assert decision.allow is True
        assert [(n.policy, n.severity, n.message) for n in decision.notes] == [
            ("evidence_fresh", "info", message) for message in STALE_MESSAGES
        ]


def test_success_conservative_claims_are_a_note_on_both_engines(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    case = load_case("compliant__conservative_claims.json")
    decisions = [embedded.decide(case), opa_engine.decide(case)]
    for decision in decisions:
        assert decision.allow is True
        assert [(n.rule, n.severity, n.details["claims"]) for n in decision.notes] == [
            (
                "claims_pessimistic",
                "info",
                [
                    {
                        "class": "interactive",
                        "metric": "ttft_p99_ms",
                        "claimed": 2200,
                        "predicted": 1100,
                    }
                ],
            )
        ]
    assert decisions[0] == decisions[1]


def _on_both(embedded: EmbeddedEngine, opa_engine: OpaServerEngine, name: str) -> PolicyDecision:
    """The corpus case's decision, the same on both engines."""
    case = load_case(name)
    decision = embedded.decide(case)
    assert opa_engine.decide(case) == decision
    return decision


def test_success_conservative_claims_are_one_note_per_plan_on_both_engines(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    """Six conservative claims over two classes: one note naming them all, in the same
    order on both engines."""
    (note,) = _on_both(embedded, opa_engine, "compliant__claims_copied_from_slos.json").notes
    assert (note.rule, note.severity) == ("claims_pessimistic", "info")
    assert [(c["class"], c["metric"]) for c in note.details["claims"]] == [
        ("batch", "e2e_p99_ms"),
        ("batch", "tpot_p99_ms"),
        ("batch", "ttft_p99_ms"),
        ("interactive", "e2e_p99_ms"),
        ("interactive", "tpot_p99_ms"),
        ("interactive", "ttft_p99_ms"),
    ]
    assert note.message == (
        "the plan's claims exceed the recomputation by more than claims_max_relative_error "
        "0.2 of the prediction: batch.e2e_p99_ms 240000 ms (predicted 72000 ms), "
        "batch.tpot_p99_ms 100 ms (predicted 48 ms), batch.ttft_p99_ms 10000 ms (predicted "
        "5200 ms), interactive.e2e_p99_ms 75000 ms (predicted 34400 ms), interactive.tpot_p99_ms "
        "60 ms (predicted 36.8 ms), interactive.ttft_p99_ms 1500 ms (predicted 880 ms); the claims "
        "are conservative"
    )


MISSING_CLAIMS = [
    ("batch", "ttft_p99_ms", 5200),
    ("batch", "tpot_p99_ms", 48),
    ("batch", "e2e_p99_ms", 72000),
    ("interactive", "ttft_p99_ms", 880),
    ("interactive", "tpot_p99_ms", 36.8),
    ("interactive", "e2e_p99_ms", 34400),
]


def _claims_required_bundle() -> PolicyBundle:
    """The shipped bundle with claims_required on: a missing claim denies."""
    base = load_bundle()
    data = copy.deepcopy(base.data)
    data["capgate"]["thresholds"]["claims_required"] = True
    return PolicyBundle.from_sources(dict(base.modules), data)


def test_success_missing_claims_are_one_note_by_default(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    decision = _on_both(embedded, opa_engine, "tail_slo__no_claims.json")
    assert decision.allow is True
    (note,) = decision.notes
    assert (note.policy, note.rule, note.severity) == ("tail_slo", "claims_missing", "info")
    assert [
        (c["class"], c["metric"], pytest.approx(c["predicted"])) for c in note.details["claims"]
    ] == MISSING_CLAIMS
    assert note.message.startswith(
        "the plan claims no batch.ttft_p99_ms (predicted 5200 ms), batch.tpot_p99_ms "
        "(predicted 48 ms), batch.e2e_p99_ms (predicted 72000 ms), "
    )


@pytest.mark.opa
def test_fail_missing_claims_deny_when_the_data_requires_them(opa_binary: Path) -> None:
    """claims_required is data: the same modules with it on deny the plan without claims,
    a violation per missing claim, identically on both engines."""
    required = _claims_required_bundle()
    case = load_case("tail_slo__no_claims.json")
    with running_opa(opa_binary, bundle=required) as url:
        decisions = [
            EmbeddedEngine(required).decide(case),
            OpaServerEngine(url, required).decide(case),
        ]
    assert decisions[0] == decisions[1]
    decision = decisions[0]
    assert decision.allow is False and decision.policies == ["tail_slo"]
    assert sorted(
        (v.details["class"], v.details["metric"], v.details["field"]) for v in decision.violations
    ) == sorted(
        (name, metric, f"claims.per_class.{name}.{metric}") for name, metric, _ in MISSING_CLAIMS
    )
    assert {v.rule for v in decision.violations} == {"claims_missing"}
    assert [n for n in decision.notes if n.rule == "claims_missing"] == []
    assert EmbeddedEngine().decide(case).allow is True  # the shipped data: a note only


def test_success_manifests_notes_reach_the_decision(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    name = "compliant__manifests_leave_zones_to_scheduler.json"
    case = load_case(name)
    decision = _on_both(embedded, opa_engine, name)
    assert decision.allow is True
    assert [(n.policy, n.rule, n.severity, n.message) for n in decision.notes] == [
        ("manifests_consistent", "manifests_not_compared", "info", case["manifests"]["notes"][0])
    ]
