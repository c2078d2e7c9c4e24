"""Importers against real result files: every figure checked against what the file states.

The expected numbers below were read off the fixture files by hand (tests/fixtures/load-tests,
sources in tests/fixtures/PROVENANCE.md); latencies the files write in seconds are expected
here multiplied by 1000.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.importers import (
    CvBasis,
    ImportedStage,
    detect_tool,
    import_result_file,
    import_result_file_with_findings,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "load-tests"
WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def load(rel: str, **kw: object) -> list[ImportedStage]:
    path = FIX / rel
    args: dict[str, object] = {"workload": "chat@v1", "provider": "h100@v1", "measured_at": WHEN}
    args.update(kw)
    return import_result_file_with_findings(
        path.read_bytes(),
        file_name=path.name,
        **args,  # type: ignore[arg-type]
    )


def one(rel: str, **kw: object) -> ImportedStage:
    stages = load(rel, **kw)
    assert len(stages) == 1
    return stages[0]


# --- vLLM -------------------------------------------------------------------------------


def test_vllm_legacy_summary_file() -> None:
    rel = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
    s = one(rel)
    ev = s.evidence
    assert ev.tool.name == "vllm-bench"
    assert ev.raw_file is not None
    digest = hashlib.sha256((FIX / rel).read_bytes()).hexdigest()
    assert ev.raw_file.sha256 == f"sha256:{digest}"
    assert ev.raw_file.size_bytes == 1065
    assert ev.measured_against.workload == "chat@v1"
    assert ev.offered.request_rate_rps == 3.6
    assert ev.offered.burstiness == 100.0
    assert ev.offered.requests == 200
    assert ev.offered.duration_s == pytest.approx(57.42171942605637)
    r = ev.results.per_class["default"]
    assert (r.completed, r.failed, r.cancelled) == (200, 0, 0)
    assert r.ttft_ms is not None and r.tpot_ms is not None and r.itl_ms is not None
    assert r.ttft_ms.quantiles == {
        "p50": 244.08852099440992,
        "p95": 257.0488001947524,
        "p99": 261.66544687526766,
    }
    assert r.ttft_ms.mean == 243.57119981985306
    assert r.tpot_ms.at(99) == 27.33748187944843
    assert r.itl_ms.at(99) == 216.5980374556966
    tp = ev.results.throughput
    assert tp.requests_per_s == 3.483002633829972
    assert tp.output_tokens_per_s == 696.6005267659943
    assert tp.total_tokens_per_s == 28557.13859477194
    # "request_goodput:" (with a colon) is null: no goodput stated.
    assert tp.goodput_requests_per_s is None
    assert "throughput.goodput_requests_per_s" in ev.missing
    assert "results.e2e_ms" in ev.missing  # e2el was not among --percentile-metrics
    assert "offered.prompt_tokens" in ev.missing
    # The file's date has no zone; the measured_at argument wins and that is noted.
    assert ev.measured_at == WHEN
    assert any("no time zone" in n for n in s.findings.notes)
    assert any("legacy" in n for n in s.findings.notes)
    assert s.findings.prompt_tokens.basis is CvBasis.unavailable
    assert s.findings.cancellations_exercised is False
    assert s.findings.mixed_priorities is False


def test_vllm_date_read_as_utc_without_argument() -> None:
    rel = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
    s = one(rel, measured_at=None)
    assert s.evidence.measured_at == datetime(2025, 5, 13, 4, 56, 48, tzinfo=UTC)
    assert any("read as UTC" in n for n in s.findings.notes)


def test_vllm_fork_file_with_inf_rate_and_missing_keys() -> None:
    s = one("vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json")
    ev = s.evidence
    assert ev.offered.request_rate_rps is None  # "inf": unbounded, not missing
    assert "offered.request_rate_rps" not in ev.missing
    assert any("'inf'" in n for n in s.findings.notes)
    assert ev.offered.requests == 200
    r = ev.results.per_class["default"]
    assert r.ttft_ms is not None and r.ttft_ms.quantiles == {
        "p50": 14025.211746804416,
        "p99": 16596.106526181098,
    }
    assert r.tpot_ms is not None and r.tpot_ms.mean == 183.77582653886833
    for key in (
        "offered.duration_s",
        "results.completed",
        "throughput.requests_per_s",
        "throughput.output_tokens_per_s",
    ):
        assert key in ev.missing


def test_vllm_save_detailed_recomputes_from_requests() -> None:
    s = one("vllm-bench/synthetic__vllm-save-detailed-4req.json")
    r = s.evidence.results.per_class["default"]
    assert (r.requests, r.completed, r.failed) == (4, 3, 1)
    # ttfts of the 3 successful requests: 0.1, 0.2, 0.3 s
    assert r.ttft_ms is not None
    assert r.ttft_ms.at(50) == pytest.approx(200.0)
    assert r.ttft_ms.at(99) == pytest.approx(298.0)  # the file's own p99_ttft_ms
    # TPOT per request (e2e - ttft) / (out - 1): 0.04/2, 0.08/4, 0.05/1 s
    assert r.tpot_ms is not None
    assert r.tpot_ms.at(50) == pytest.approx(20.0)
    assert r.tpot_ms.at(99) == pytest.approx(49.4)
    assert r.tpot_ms.mean == pytest.approx(30.0)
    # ITL pooled over the 7 chunk gaps of successful requests
    assert r.itl_ms is not None
    assert r.itl_ms.at(99) == pytest.approx(48.8)
    assert r.e2e_ms is not None and r.e2e_ms.at(50) == pytest.approx(280.0)
    off = s.evidence.offered
    assert off.prompt_tokens is not None and off.output_tokens is not None
    assert off.prompt_tokens.samples == 4 and off.prompt_tokens.quantile(50) == 250.0
    assert off.output_tokens.samples == 3 and off.output_tokens.quantile(50) == 3.0
    assert off.prompt_tokens.histogram is not None
    assert sum(off.prompt_tokens.histogram.counts) == 4
    f = s.findings
    assert f.prompt_tokens.basis is CvBasis.per_request
    assert f.output_tokens.cv == pytest.approx(1.2472191289 / (10 / 3), rel=1e-6)
    assert "results.e2e_ms" not in s.evidence.missing


# --- GuideLLM --------------------------------------------------------------------------


def test_guidellm_v02_quirks() -> None:
    s = one("guidellm/vllm-project__guidellm__benchmarks-stripped-v02.json")
    ev = s.evidence
    assert ev.tool.version is None
    assert ev.measured_at == datetime.fromtimestamp(1749157168.1827004, tz=UTC)
    assert ev.offered.concurrency == 1  # synchronous strategy
    assert ev.offered.duration_s == pytest.approx(29.997201442718506)
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.failed, r.cancelled) == (47, 46, 0, 1)
    assert r.ttft_ms is not None
    # p001 is the 0.1th percentile, p01 the 1st, p999 the 99.9th; median stands for p50.
    assert r.ttft_ms.at(0.1) == 15.790939331054688
    assert r.ttft_ms.at(5) == 15.971660614013672
    assert r.ttft_ms.at(50) == 16.38054847717285
    assert r.ttft_ms.at(99.9) == 21.281957626342773
    # request_latency is in seconds
    assert r.e2e_ms is not None and r.e2e_ms.at(99) == pytest.approx(689.1846656799316)
    # GuideLLM's per-request ITL is capgate's TPOT
    assert r.tpot_ms is not None and r.tpot_ms.mean == 4.941609043733832
    assert r.itl_ms is None and "results.itl_ms" in ev.missing
    assert ev.offered.prompt_tokens is not None
    assert ev.offered.prompt_tokens.samples == 46
    assert ev.offered.prompt_tokens.mean == 257.1086956521739
    assert s.findings.prompt_tokens.basis is CvBasis.stated_std
    assert s.findings.prompt_tokens.cv == pytest.approx(0.37464538999161057 / 257.1086956521739)
    assert s.findings.output_tokens.cv == 0.0
    assert s.findings.cancellations_exercised is True
    assert ev.results.throughput.requests_per_s == 1.5481806532737452


def test_guidellm_report_v2_two_stages_linked() -> None:
    stages = load("guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json")
    assert len(stages) == 2
    base = "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver"
    names = [s.evidence.name for s in stages]
    assert names == [f"{base}-stage-0", f"{base}-stage-1"]
    for i, s in enumerate(stages):
        assert s.evidence.labels == {"series": base, "stage": str(i)}
        assert s.evidence.tool.version == "0.8.0.dev18"
    a, b = (s.evidence for s in stages)
    assert a.offered.request_rate_rps == 2.0 and b.offered.request_rate_rps == 4.0
    ra = a.results.per_class["default"]
    assert (ra.requests, ra.completed, ra.failed, ra.cancelled) == (2, 2, 0, 0)
    assert ra.ttft_ms is not None and ra.ttft_ms.at(50) == 11.276006698608398
    # pooled over 14 token gaps for 2 requests: an ITL, not a per-request TPOT
    assert ra.itl_ms is not None and ra.itl_ms.mean == 1.1508464813232422
    assert ra.tpot_ms is None
    assert a.offered.prompt_tokens is not None and a.offered.prompt_tokens.mean == 71.5
    assert a.measured_at == datetime.fromtimestamp(1786678148.2526348, tz=UTC)


# --- inference-perf --------------------------------------------------------------------


def test_inference_perf_stage_seconds_to_ms_and_median() -> None:
    s = one("inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage6-lifecycle.json")
    ev = s.evidence
    assert ev.labels == {"stage": "6"}
    assert ev.measured_at == WHEN  # the file states no time
    assert ev.offered.request_rate_rps == 183.38
    assert ev.offered.requests == 11002
    assert ev.offered.duration_s == 103.25901604094543
    r = ev.results.per_class["default"]
    assert (r.completed, r.failed) == (11002, 0)
    assert r.ttft_ms is not None
    assert r.ttft_ms.at(50) == pytest.approx(2886.54515898088)  # 'median' in seconds
    assert r.ttft_ms.at(0.1) == pytest.approx(43.370625919429584)
    assert r.ttft_ms.at(99.9) == pytest.approx(3364.4744808719262)
    assert r.tpot_ms is not None and r.tpot_ms.at(99) == pytest.approx(9.52118719478805)
    assert r.e2e_ms is not None and r.e2e_ms.mean == pytest.approx(4143.004813736435)
    assert ev.results.throughput.requests_per_s == 103.0780152073592
    p = ev.offered.prompt_tokens
    assert p is not None and p.samples == 11002 and p.quantile(50) == 205.0 and p.max == 213.0
    assert s.findings.prompt_tokens.basis is CvBasis.estimated_from_percentiles
    assert s.findings.prompt_tokens.cv == pytest.approx(
        (207.0 - 201.0) / 1.3489795 / 204.10052717687694
    )
    assert s.findings.cancellations_exercised is None


def test_inference_perf_summary_lacks_rates() -> None:
    s = one("inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-summary-lifecycle.json")
    ev = s.evidence
    assert ev.offered.requests == 38717
    assert "offered.request_rate_rps" in ev.missing and "offered.duration_s" in ev.missing


def test_inference_perf_requires_measured_at() -> None:
    with pytest.raises(InvalidInput) as exc:
        load(
            "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json",
            measured_at=None,
        )
    assert exc.value.problems[0].loc == "measured_at"


def test_inference_perf_per_request_file(tmp_path: Path) -> None:
    # Synthetic, from the documented per_request_lifecycle_metrics.json schema.
    rows = [
        {
            "start_time": 10.0,
            "end_time": 10.5,
            "request": "",
            "response": "",
            "info": {
                "input_tokens": 100,
                "output_tokens": 3,
                "output_token_times": [10.1, 10.3, 10.5],
            },
            "error": None,
        },
        {
            "start_time": 11.0,
            "end_time": 11.2,
            "request": "",
            "response": "",
            "info": {"input_tokens": 300, "output_tokens": 2, "output_token_times": [11.1, 11.2]},
            "error": None,
        },
        {
            "start_time": 12.0,
            "end_time": 12.1,
            "request": "",
            "response": "",
            "info": {"input_tokens": 50},
            "error": {"message": "boom"},
        },
    ]
    data = json.dumps(rows).encode()
    [s] = import_result_file_with_findings(
        data,
        file_name="per_request_lifecycle_metrics.json",
        workload="w",
        provider="p",
        measured_at=WHEN,
    )
    r = s.evidence.results.per_class["default"]
    assert (r.requests, r.completed, r.failed) == (3, 2, 1)
    assert r.ttft_ms is not None and r.ttft_ms.at(50) == pytest.approx(100.0)
    # TPOT = (last - first) / (n - 1): 0.2 and 0.1 s
    assert r.tpot_ms is not None and r.tpot_ms.mean == pytest.approx(150.0)
    assert r.e2e_ms is not None and r.e2e_ms.at(50) == pytest.approx(350.0)
    assert s.findings.prompt_tokens.basis is CvBasis.per_request
    assert s.evidence.offered.prompt_tokens is not None
    assert s.evidence.offered.prompt_tokens.samples == 3


# --- GenAI-Perf and AIPerf -------------------------------------------------------------


def test_genai_perf_export() -> None:
    s = one(
        "genai-perf/triton-inference-server__perf_analyzer__issue298-streaming-profile_export_genai_perf.json"
    )
    ev = s.evidence
    assert ev.tool.name == "genai-perf"
    assert ev.offered.concurrency == 100
    r = ev.results.per_class["default"]
    assert r.ttft_ms is not None and r.ttft_ms.at(99) == 425.02943662
    assert r.ttft_ms.mean == 184.63779366666665
    assert r.e2e_ms is not None and r.e2e_ms.at(50) == 5778.654798
    # per-request ITL is capgate's TPOT
    assert r.tpot_ms is not None and r.tpot_ms.at(99) == 2.2631232999999997
    assert ev.results.throughput.requests_per_s == 17.222547659562533
    assert ev.results.throughput.output_tokens_per_s == 44190.56002502682
    # No sample count in the file: lengths cannot be a measured distribution, CV still can.
    assert ev.offered.prompt_tokens is None and "offered.prompt_tokens" in ev.missing
    assert s.findings.prompt_tokens.cv == pytest.approx(19.752151781514844 / 200.85)


def test_aiperf_aggregate_cancellations() -> None:
    s = one("aiperf/ai-dynamo__aiperf__examples-run1-profile_export_aiperf.json")
    ev = s.evidence
    # min_request_timestamp (ns since the epoch) fixes the time exactly.
    assert ev.measured_at == datetime.fromtimestamp(1.759522419154569e18 / 1e9, tz=UTC)
    assert ev.offered.concurrency == 100
    assert ev.offered.cancellation_rate == pytest.approx(0.10)
    assert ev.offered.duration_s == 9.317788951
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.failed, r.cancelled) == (100, 89, 0, 11)
    assert r.ttft_ms is not None and r.ttft_ms.at(50) == 2369.317693
    assert r.tpot_ms is not None and r.tpot_ms.mean == 27.763065454471807
    assert r.itl_ms is not None and r.itl_ms.at(99) == 140.53429476
    assert ev.offered.output_tokens is not None and ev.offered.output_tokens.samples == 89
    assert ev.offered.output_tokens.quantile(5) == 228.6
    assert s.findings.cancellations_exercised is True
    assert s.findings.cancelled_requests == 11
    assert s.findings.prompt_tokens.cv == 0.0  # every prompt 550 tokens: uniform


def test_aiperf_jsonl_per_request() -> None:
    s = one("aiperf/ai-dynamo__aiperf__examples-run1-profile_export-first12.jsonl")
    r = s.evidence.results.per_class["default"]
    assert (r.requests, r.completed, r.cancelled, r.failed) == (12, 1, 11, 0)
    assert r.ttft_ms is not None and r.ttft_ms.at(50) == pytest.approx(1680.543782)
    assert r.e2e_ms is not None and r.e2e_ms.at(50) == pytest.approx(7936.968269)
    assert r.tpot_ms is not None and r.tpot_ms.at(50) == pytest.approx(32.585544203124996)
    assert r.itl_ms is not None and r.itl_ms.mean == pytest.approx(6256.424487 / 192)
    out = s.evidence.offered.output_tokens
    assert out is not None and out.quantile(50) == 193.0
    assert s.evidence.measured_at == datetime.fromtimestamp(1759522419.154608635, tz=UTC)
    assert s.findings.cancellations_exercised is True


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
    assert detect_tool(json.loads((FIX / rel).read_bytes())) == tool
    [ev] = import_result_file(
        (FIX / rel).read_bytes(),
        file_name="x.json",
        workload="w",
        provider="p",
        measured_at=WHEN,
    )[:1]
    assert ev.tool.name == tool


def test_unknown_shape_refused() -> None:
    with pytest.raises(InvalidInput) as exc:
        import_result_file(b'{"hello": 1}', file_name="x.json", workload="w", provider="p")
    assert "expected one of" in exc.value.problems[0].message


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
        )
    assert exc.value.problems[0].loc == "input_lens"


def test_traffic_class_and_name() -> None:
    [ev] = import_result_file(
        (FIX / "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json").read_bytes(),
        file_name="r.json",
        workload="w",
        provider="p",
        plan="plan@v2",
        traffic_class="interactive",
        measured_at=WHEN,
        name="Exp 7 H100",
    )
    assert ev.name == "exp-7-h100"
    assert ev.offered.classes == ["interactive"]
    assert set(ev.results.per_class) == {"interactive"}
    assert ev.measured_against.plan == "plan@v2"
