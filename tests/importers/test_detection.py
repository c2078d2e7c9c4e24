"""Format detection and refusals of result files."""

from __future__ import annotations

import json

import pytest

from registry.errors import InvalidInput
from registry.importers import (
    detect_tool,
    import_result_file,
)
from registry.records.evidence import LoadTestEvidence
from tests.importers.helpers import WHEN, load, path_of


def one_of(rel: str, **kw: object) -> LoadTestEvidence:
    return load(rel, **kw)[0].evidence


# --- detection and refusals ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "tool"),
    [
        ("vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json", "vllm-bench"),
        ("guidellm/vllm-project__guidellm__benchmarks-stripped-v02.json", "guidellm"),
        ("guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json", "guidellm"),
        (
            "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json",
            "inference-perf",
        ),
        (
            "genai-perf/triton-inference-server__perf_analyzer__issue298-streaming-profile_export_genai_perf.json",
            "genai-perf",
        ),
        ("aiperf/ai-dynamo__aiperf__examples-run1-profile_export_aiperf.json", "aiperf"),
    ],
)
def test_detection(rel: str, tool: str) -> None:
    assert detect_tool(json.loads(path_of(rel).read_bytes())) == tool
    ev = one_of(rel, file_name="x.json", workload="w", provider="p")
    assert ev.tool.name == tool


def test_unknown_shape_refused_says_what_is_wrong_then_what_is_supported() -> None:
    with pytest.raises(InvalidInput) as exc:
        import_result_file(b'{"hello": 1}', file_name="x.json", workload="w", provider="p")
    # The one line the CLI prints (and the API's first problem) leads with the headline.
    line = exc.value.one_line()
    headline = "the file's shape matches no supported tool (top-level keys: hello)"
    assert line.startswith(f"x.json: (top level): {headline}; supported tools and formats: ")
    assert str(exc.value) == f"cannot import x.json: {headline}"
    message = exc.value.problems[0].message
    for tool in ("vllm-bench", "guidellm", "inference-perf", "genai-perf", "aiperf"):
        assert f"{tool}:" in message
    with pytest.raises(InvalidInput) as listed:
        import_result_file(b"[1, 2]", file_name="x.json", workload="w", provider="p")
    assert listed.value.one_line().startswith(
        "x.json: (top level): the file's shape matches no supported tool (a list of 2 items); "
    )


def test_a_per_request_csv_of_another_tool_lists_what_is_supported() -> None:
    """A per-request CSV (say, from k6 or locust) is no format capgate reads: say which are."""
    csv = b"timestamp,latency_ms,status\n1700000000,812,200\n1700000001,944,200\n"
    with pytest.raises(InvalidInput) as exc:
        import_result_file(csv, file_name="requests.csv", workload="w", provider="p")
    line = exc.value.one_line()
    assert line.startswith("requests.csv")
    assert "not JSON" in line and "supported tools and formats" in line
    assert "profile_export_genai_perf.json" in line


def test_broken_json_refused() -> None:
    with pytest.raises(InvalidInput) as exc:
        import_result_file(b'{"mean_ttft_ms": ', file_name="x.json", workload="w", provider="p")
    assert exc.value.problems[0].loc == "(file)"
    assert "not JSON" in exc.value.problems[0].message


def test_wrong_tool_names_key() -> None:
    with pytest.raises(InvalidInput) as exc:
        import_result_file(
            b'{"hello": 1}',
            file_name="x.json",
            tool="inference-perf",
            workload="w",
            provider="p",
        )
    assert exc.value.problems[0].loc == "load_summary"


def test_detailed_lists_must_agree() -> None:
    doc = {
        "num_prompts": 2,
        "input_lens": [1, 2],
        "output_lens": [1],
        "ttfts": [0.1, 0.1],
        "itls": [[], []],
    }
    with pytest.raises(InvalidInput) as exc:
        import_result_file(
            json.dumps(doc).encode(),
            file_name="x.json",
            workload="w",
            provider="p",
            measured_at=WHEN,
            replicas=1,
        )
    assert exc.value.problems[0].loc == "input_lens"


def test_traffic_class_and_name() -> None:
    [ev] = import_result_file(
        path_of("vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json").read_bytes(),
        file_name="r.json",
        workload="w",
        provider="p",
        plan="plan@v2",
        traffic_class="interactive",
        measured_at=WHEN,
        replicas=1,
        name="Exp 7 H100",
    )
    assert ev.name == "exp-7-h100"
    assert ev.offered.classes == ["interactive"]
    assert set(ev.results.per_class) == {"interactive"}
    assert ev.measured_against.plan == "plan@v2"
