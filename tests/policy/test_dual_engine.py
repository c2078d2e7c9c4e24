"""`--engine both`: every decision on the embedded engine and on a real OPA server,
taken only when the two are identical; a disagreement is an error, never an answer."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from registry.gate.engine_factory import engine_for
from registry.policy.dual import DualEngine, first_difference
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision, PolicyError
from registry.policy.opa_server import OpaServerEngine
from registry.settings import Settings
from tests.cli.test_gate_cli import capgate
from tests.policy.conftest import CASES, load_case

pytestmark = pytest.mark.opa


def test_success_both_engines_agree_on_the_whole_corpus(
    embedded: EmbeddedEngine, opa_engine: OpaServerEngine
) -> None:
    both = DualEngine(embedded, opa_engine)
    outcomes = set()
    for name in CASES:
        doc = load_case(name)
        decision = both.decide(doc)
        assert decision == embedded.decide(doc), name
        outcomes.add(decision.allow)
    assert outcomes == {True, False}


class _Disagreeing(OpaServerEngine):
    """A real OPA engine whose answer is turned into an allow: stands for an OPA that
    runs something else than capgate believes (the comparison is what is tested)."""

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        return PolicyDecision(allow=True, violations=[], notes=[])


def test_fail_a_disagreement_is_an_error_naming_it(embedded: EmbeddedEngine, opa_url: str) -> None:
    both = DualEngine(embedded, _Disagreeing(opa_url))
    denied = load_case("drain_configured__short_grace_period.json")
    with pytest.raises(
        PolicyError, match=r"disagree, so neither answer is taken: allow: embedded False, opa True"
    ):
        both.decide(denied)
    allowed = load_case("compliant.json")
    assert both.decide(allowed).allow is True


def test_success_first_difference_names_the_violation(embedded: EmbeddedEngine) -> None:
    denied = embedded.decide(load_case("drain_configured__short_grace_period.json"))
    fewer = PolicyDecision(allow=False, violations=denied.violations[1:], notes=denied.notes)
    assert first_difference(denied, denied) is None
    found = first_difference(denied, fewer)
    assert found is not None and found.startswith("violations: only the embedded engine has")
    assert denied.violations[0].rule in found


def test_fail_both_without_an_opa_url_is_an_error() -> None:
    settings = dataclasses.replace(Settings.from_env(), policy_engine="both", opa_url=None)
    with pytest.raises(PolicyError, match="CAPGATE_POLICY_ENGINE=both needs CAPGATE_OPA_URL"):
        engine_for(settings)


def test_success_gate_check_engine_both_from_the_cli(
    env: dict[str, str],
    opa_url: str,
) -> None:
    env = {**env, "CAPGATE_OPA_URL": opa_url}
    result = capgate(
        "gate", "check", "chat-assistant-prod", "--engine", "both", "--format", "json", env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    decision = json.loads(result.stdout)
    assert (decision["engine"], decision["outcome"]) == ("both", "allow")
    refused = capgate(
        "gate", "check", "chat-assistant-prod", "--engine", "both", "--server", "http://x", env=env
    )
    assert refused.returncode == 2
    assert "--engine chooses a local check's engine" in refused.stderr
    no_opa = {k: v for k, v in env.items() if k != "CAPGATE_OPA_URL"}
    unready = capgate("gate", "check", "chat-assistant-prod", "--engine", "both", env=no_opa)
    assert unready.returncode == 2
    assert "CAPGATE_POLICY_ENGINE=both needs CAPGATE_OPA_URL" in unready.stderr
