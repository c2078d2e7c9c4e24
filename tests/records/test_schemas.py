"""Schema validation: strict types, unknown fields, cross-field checks, error paths."""

from __future__ import annotations

from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind
from tests.factories import EXAMPLE_KINDS, example, example_path


def problems_of(kind: RecordKind, document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as info:
        validate_record(kind, document)
    return [(p.loc, p.message) for p in info.value.problems]


@pytest.mark.parametrize("kind", EXAMPLE_KINDS)
def test_success_worked_example_validates(kind: RecordKind) -> None:
    record = validate_record(kind, example(kind))
    assert record.name == example(kind)["name"]


def test_fail_unknown_field_is_named() -> None:
    document = example("plan")
    document["serving"]["max_num_seq"] = 128  # typo of max_num_seqs
    assert problems_of(RecordKind.plan, document) == [("serving.max_num_seq", "unknown field")]


def test_fail_string_where_a_number_belongs_is_not_coerced() -> None:
    document = example("plan")
    document["serving"]["max_num_seqs"] = "256"
    [(loc, message)] = problems_of(RecordKind.plan, document)
    assert loc == "serving.max_num_seqs"
    assert "valid integer" in message


def test_fail_quantiles_must_not_decrease() -> None:
    document = example("workload")
    document["classes"][0]["prompt_tokens"]["quantiles"] = {"p50": 900, "p90": 700, "p99": 6100}
    [(loc, message)] = problems_of(RecordKind.workload, document)
    assert loc == "classes.0.prompt_tokens"
    assert "p90=700 is below p50=900" in message


def test_fail_token_quantiles_need_p50_and_p99() -> None:
    document = example("workload")
    document["classes"][1]["output_tokens"]["quantiles"] = {"p50": 350, "p90": 800}
    [(loc, message)] = problems_of(RecordKind.workload, document)
    assert loc == "classes.1"
    assert "output_tokens quantiles must state at least p50 and p99" in message


def test_fail_measured_distribution_needs_samples() -> None:
    document = example("workload")
    del document["classes"][0]["output_tokens"]["samples"]
    [(loc, message)] = problems_of(RecordKind.workload, document)
    assert loc == "classes.0.output_tokens"
    assert "sample count" in message
    # It names the switch for a number nobody measured, not only what is missing.
    assert "basis: assumed, with the reason in 'reason'" in message


def test_fail_measured_numbers_need_a_trace() -> None:
    document = example("workload")
    del document["measurement"]
    [(loc, message)] = problems_of(RecordKind.workload, document)
    assert loc == ""
    assert "provenance" in message


def test_success_assumed_numbers_need_a_reason_not_a_trace() -> None:
    document = example("workload")
    del document["measurement"]
    for traffic_class in document["classes"]:
        for field in ("prompt_tokens", "output_tokens", "concurrency"):
            traffic_class[field].pop("samples", None)
            traffic_class[field]["basis"] = "assumed"
            traffic_class[field]["reason"] = "new product, no traffic yet"
        traffic_class["arrival"]["basis"] = "assumed"
        traffic_class["arrival"]["reason"] = "marketing forecast"
    record = validate_record(RecordKind.workload, document)
    assert record.model_dump()["classes"][0]["prompt_tokens"]["basis"] == "assumed"


def test_fail_tensor_parallel_must_divide_gpus() -> None:
    document = example("plan")
    document["parallelism"] = {"tensor_parallel": 4, "gpus_per_replica": 6}
    [(loc, message)] = problems_of(RecordKind.plan, document)
    assert loc == "parallelism"
    assert "tensor_parallel (4) must divide gpus_per_replica (6)" in message


def test_fail_peak_below_mean() -> None:
    document = example("workload")
    document["classes"][0]["arrival"]["peak_rps"] = 10.0
    [(loc, message)] = problems_of(RecordKind.workload, document)
    assert loc == "classes.0.arrival"
    assert "peak_rps (10) is below mean_rps (18)" in message


def test_fail_duplicate_class_names() -> None:
    document = example("workload")
    document["classes"][1]["name"] = "interactive"
    [(_, message)] = problems_of(RecordKind.workload, document)
    assert "repeated: interactive" in message


def test_fail_evidence_results_for_a_class_not_offered() -> None:
    document = example("evidence")
    document["offered"]["classes"] = ["interactive"]
    [(_, message)] = problems_of(RecordKind.evidence, document)
    assert "not offered: batch" in message


def test_fail_broken_yaml_names_line(tmp_path: Any) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("name: x\nserving: [unclosed\n")
    with pytest.raises(InvalidInput) as info:
        load_document(path)
    assert str(path) in info.value.one_line()
    assert "line" in info.value.one_line()


def test_fail_list_instead_of_mapping(tmp_path: Any) -> None:
    path = tmp_path / "plan.json"
    path.write_text("[1, 2]")
    with pytest.raises(InvalidInput, match="one mapping"):
        load_document(path)


def test_yaml_and_json_validate_alike(tmp_path: Any) -> None:
    import json

    document = load_document(example_path("evidence"))
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(document))
    from_yaml = validate_record(RecordKind.evidence, document)
    from_json = validate_record(RecordKind.evidence, load_document(path))
    assert from_yaml == from_json
