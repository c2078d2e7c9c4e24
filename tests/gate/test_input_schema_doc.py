"""The documented JSON Schema of the gate's input is the one the code checks."""

from __future__ import annotations

import json
from pathlib import Path

from registry.policy.input_document import GateInput, input_json_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "gate-input.schema.json"
COMPLIANT = Path(__file__).resolve().parent / "inputs" / "compliant.json"


def test_documented_schema_matches_the_models() -> None:
    assert json.loads(DOC.read_text()) == input_json_schema(), (
        "docs/gate-input.schema.json is out of date: regenerate it with "
        "python -m registry.policy.input_document"
    )


def test_corpus_input_validates_and_unknown_fields_are_refused() -> None:
    document = json.loads(COMPLIANT.read_text())
    GateInput.model_validate(document)
    document["plan"]["surprise"] = 1
    try:
        GateInput.model_validate(document)
    except ValueError as exc:
        assert "surprise" in str(exc)
    else:
        raise AssertionError("an unknown field in the gate input was accepted")


def test_planner_judges_claims_with_the_policy_tolerance() -> None:
    from registry.planner.claims import CLAIM_TOLERANCE
    from registry.policy.bundle import load_bundle

    thresholds = load_bundle().data["capgate"]["thresholds"]
    assert thresholds["claims_max_relative_error"] == CLAIM_TOLERANCE
