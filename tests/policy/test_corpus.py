"""The scenario corpus: each input gives exactly the expected policies on both engines."""

from __future__ import annotations

import re

import pytest

from registry.gate.input_document import GateInput
from registry.policy.bundle import policies_root
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision
from registry.policy.opa_server import OpaServerEngine
from tests.policy.conftest import CASES, EXPECTED, INPUTS, load_case


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
        assert [(n.rule, n.severity, n.details["claimed"]) for n in decision.notes] == [
            ("claims_pessimistic", "info", 2200)
        ]
    assert decisions[0] == decisions[1]
