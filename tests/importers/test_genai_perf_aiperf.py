"""GenAI-Perf and AIPerf exports: every figure checked against what the file states.

Real files come from ../shared/fixtures (skipped when absent); ``synthetic__*`` files are the
project's own and reproduce what no public file shows (per-request errors and cancellations,
rate phases that fell behind, runs where nothing succeeded).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from registry.errors import InvalidInput
from registry.records.evidence import Percentiles
from tests.importers.helpers import one, path_of

AKAMAS = "aiperf/akamaslabs__vllm-benchmark__g7-4500-no-mig-concurrency64.json"
ANUD = "aiperf/anud18__qwen36-vllm-aiperf-benchmark__nvfp4-5090-chatbot-c2.json"
A_JSONL = "aiperf/synthetic__aiperf-jsonl-cancel-fail.jsonl"
A_BEHIND = "aiperf/synthetic__aiperf-phases-poisson-errors-behind.json"
A_CANCEL = "aiperf/synthetic__aiperf-phases-cancellation.json"
A_FAILED = "aiperf/synthetic__aiperf-all-failed.json"
GP_2501 = "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-sdk2501.json"
GP_2507 = "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-telemetry-sdk2507.json"


def doc_of(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path_of(rel).read_text())
    return data


def assert_block(pct: Percentiles | None, block: dict[str, Any]) -> None:
    """A stored latency equals the file's {avg, pNN} block (ms in, ms stored)."""
    assert pct is not None and block["unit"] == "ms"
    assert pct.mean == block["avg"]
    for key in ("p1", "p25", "p50", "p90", "p99"):
        if key in block:
            assert pct.at(float(key[1:])) == block[key]


# --- GenAI-Perf --------------------------------------------------------------------------


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


def test_genai_perf_flat_config_sdk2501() -> None:
    s = one(GP_2501)
    ev = s.evidence
    doc = doc_of(GP_2501)
    cfg = doc["input_config"]
    assert "perf_analyzer" not in cfg and cfg["concurrency"] == 1
    assert ev.offered.concurrency == 1
    r = ev.results.per_class["default"]
    # 66 requests in the export although 100 were configured; no failure figure is stated.
    assert (r.requests, r.completed) == (doc["request_count"]["avg"], 66)
    assert cfg["request_count"] == 100
    assert r.failed is None and "results.failed" in ev.missing
    assert any(
        "configured request count 100 but the export covers 66" in n for n in s.findings.notes
    )
    assert_block(r.tpot_ms, doc["inter_token_latency"])
    assert_block(r.ttft_ms, doc["time_to_first_token"])
    assert_block(r.e2e_ms, doc["request_latency"])
    assert r.itl_ms is None and "results.itl_ms" in ev.missing
    assert ev.results.throughput.requests_per_s == doc["request_throughput"]["avg"]
    out = ev.offered.output_tokens
    assert out is not None and out.samples == 66
    assert out.quantile(50) == doc["output_sequence_length"]["p50"]


def test_genai_perf_nested_config_sdk2507() -> None:
    s = one(GP_2507)
    ev = s.evidence
    doc = doc_of(GP_2507)
    cfg = doc["input_config"]
    # The profile run's load is perf_analyzer.stimulus, not analyze.sweep_parameters (1..1024).
    assert cfg["perf_analyzer"]["stimulus"]["concurrency"] == 1
    assert cfg["analyze"]["sweep_parameters"]["concurrency"]["max"] == 1024
    assert ev.offered.concurrency == 1
    assert ev.offered.request_rate_rps is None
    r = ev.results.per_class["default"]
    assert r.completed == doc["request_count"]["avg"] == 35
    assert cfg["perf_analyzer"]["measurement"] == {"mode": "request_count", "num": 100}
    assert any(
        "configured request count 100 but the export covers 35" in n for n in s.findings.notes
    )
    assert_block(r.tpot_ms, doc["inter_token_latency"])
    assert r.tpot_ms is not None and r.tpot_ms.at(1) == doc["inter_token_latency"]["p1"]
    gpus = [k for k in doc["telemetry_stats"]["gpu_power_usage"] if k != "unit"]
    assert len(gpus) == 8
    assert any("over 8 GPU(s)" in n for n in s.findings.notes)


# --- AIPerf ------------------------------------------------------------------------------


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


def test_aiperf_011_concurrency_phase_and_goodput() -> None:
    s = one(AKAMAS)
    ev = s.evidence
    doc = doc_of(AKAMAS)
    phase = doc["input_config"]["phases"][0]
    assert (phase["type"], phase["concurrency"], phase["duration"]) == ("concurrency", 64, 300.0)
    assert ev.tool.version == "0.11.0"
    assert ev.offered.concurrency == 64
    assert ev.offered.request_rate_rps is None
    assert "offered.concurrency" not in ev.missing
    assert ev.offered.duration_s == doc["benchmark_duration"]["avg"]
    r = ev.results.per_class["default"]
    # 4895 successes, no errors; 4892 "good" requests met the SLOs: that is goodput.
    assert doc["error_summary"] == [] and "error_request_count" not in doc
    assert (r.requests, r.completed, r.failed, r.cancelled) == (4895, 4895, 0, 0)
    assert doc["good_request_count"]["avg"] == 4892
    assert any("good_request_count 4892 of 4895" in n for n in s.findings.notes)
    assert ev.results.throughput.goodput_requests_per_s == doc["goodput"]["avg"]
    assert_block(r.tpot_ms, doc["inter_token_latency"])
    assert_block(r.itl_ms, doc["inter_chunk_latency"])
    assert_block(r.ttft_ms, doc["time_to_first_token"])
    assert_block(r.e2e_ms, doc["request_latency"])
    # No cancellation configured and none happened.
    assert ev.offered.cancellation_rate == 0.0
    assert s.findings.cancellations_exercised is False


def test_aiperf_010_warmup_phase_left_out() -> None:
    s = one(ANUD)
    ev = s.evidence
    doc = doc_of(ANUD)
    warmup, profiling = doc["input_config"]["phases"]
    assert warmup["exclude_from_results"] is True and warmup["requests"] == 16
    assert (profiling["concurrency"], profiling["requests"]) == (2, 96)
    assert ev.tool.version == "0.10.0"
    assert ev.offered.concurrency == 2
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.failed) == (96, doc["request_count"]["avg"], 0)
    assert any("warm-up phase 'warmup', 16 requests excluded" in n for n in s.findings.notes)
    assert_block(r.tpot_ms, doc["inter_token_latency"])
    prompt = ev.offered.prompt_tokens
    assert prompt is not None and prompt.samples == doc["input_sequence_length"]["count"]
    assert prompt.quantile(50) == doc["input_sequence_length"]["p50"]
    assert ev.results.throughput.total_tokens_per_s == doc["total_token_throughput"]["avg"]


def test_aiperf_jsonl_cancelled_failed_and_completed_lines() -> None:
    rows = [json.loads(line) for line in path_of(A_JSONL).read_text().splitlines()]
    profiling = [r for r in rows if r["metadata"]["benchmark_phase"] == "profiling"]
    done = [r for r in profiling if r["error"] is None]
    cancels = [r for r in profiling if r["error"] and r["error"]["code"] == 499]
    fails = [r for r in profiling if r["error"] and r["error"]["code"] != 499]
    assert (len(rows), len(profiling), len(done), len(cancels), len(fails)) == (7, 6, 3, 2, 1)

    s = one(A_JSONL)
    ev = s.evidence
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.cancelled, r.failed) == (6, 3, 2, 1)
    assert s.findings.cancellations_exercised is True

    def values(name: str) -> list[float]:
        return [float(row["metrics"][name]["value"]) for row in done]

    assert r.ttft_ms is not None and r.ttft_ms.at(50) == pytest.approx(200.0)
    assert r.ttft_ms.at(50) == pytest.approx(float(np.median(values("time_to_first_token"))))
    assert r.e2e_ms is not None and r.e2e_ms.mean == pytest.approx(
        np.mean(values("request_latency"))
    )
    # Per request, (e2e - ttft) / (out - 1): 100, 200 and 200 ms.
    assert r.tpot_ms is not None and r.tpot_ms.at(50) == pytest.approx(200.0)
    assert r.tpot_ms.mean == pytest.approx(np.mean(values("inter_token_latency")))
    # Every chunk gap pooled: 31 gaps over 5300 ms, not the mean of per-request means.
    gaps = [g for row in done for g in row["metrics"]["inter_chunk_latency"]["value"]]
    assert len(gaps) == 31 and sum(gaps) == pytest.approx(5300.0)
    assert r.itl_ms is not None and r.itl_ms.mean == pytest.approx(5300.0 / 31)
    assert r.itl_ms.mean != pytest.approx(r.tpot_ms.mean)
    # Start times: the first profiling request fixes the time; 6 starts over 1.5 s.
    starts = [row["metadata"]["request_start_ns"] for row in profiling]
    ends = [row["metadata"]["request_end_ns"] for row in profiling]
    assert ev.measured_at == datetime.fromtimestamp(min(starts) / 1e9, tz=UTC)
    assert ev.offered.achieved_rate_rps == pytest.approx(5 / ((max(starts) - min(starts)) / 1e9))
    assert ev.offered.duration_s == pytest.approx((max(ends) - min(starts)) / 1e9)
    out = ev.offered.output_tokens
    assert out is not None and out.samples == 3 and out.quantile(50) == 10.0


def test_aiperf_rate_phase_errors_cut_off_and_client_behind() -> None:
    s = one(A_BEHIND)
    ev = s.evidence
    doc = doc_of(A_BEHIND)
    phase = doc["input_config"]["phases"][1]
    assert (phase["type"], phase["rate"], phase["concurrency"]) == ("poisson", 8.0, 32)
    assert "cancellation" not in phase
    assert ev.offered.request_rate_rps == 8.0 and ev.offered.burstiness == 1.0
    assert ev.offered.concurrency == 32
    r = ev.results.per_class["default"]
    # 7 errors: 4 server errors failed; 3 HTTP 499 with no cancellation configured were cut
    # off when the phase ended: incomplete, not cancellations.
    summary = {e["error_details"]["code"]: e["count"] for e in doc["error_summary"]}
    assert (doc["error_request_count"]["avg"], summary) == (7.0, {499: 3, 500: 4})
    assert (r.requests, r.completed, r.failed, r.cancelled, r.incomplete) == (407, 400, 4, 0, 3)
    assert s.findings.cancellations_exercised is False
    # Send rate: 406 intervals over 70 s less the 5 s mean latency = 6.25 req/s, 78 % of 8.
    latency_s = doc["request_latency"]["avg"] / 1000.0
    achieved = (407 - 1) / (doc["benchmark_duration"]["avg"] - latency_s)
    assert ev.offered.achieved_rate_rps == pytest.approx(achieved)
    assert ev.offered.client_behind is True
    assert ev.offered.client_behind_reason is not None
    assert "offered 8 req/s" in ev.offered.client_behind_reason
    assert any("warm-up phase 'warmup', 20 requests excluded" in n for n in s.findings.notes)


def test_aiperf_configured_cancellation_stays_cancelled() -> None:
    s = one(A_CANCEL)
    ev = s.evidence
    doc = doc_of(A_CANCEL)
    assert doc["input_config"]["phases"][0]["cancellation"]["rate"] == 10.0
    assert ev.offered.cancellation_rate == pytest.approx(0.10)
    r = ev.results.per_class["default"]
    assert doc["cancelled_request_count"]["avg"] == doc["error_request_count"]["avg"] == 5
    assert (r.requests, r.completed, r.failed, r.cancelled, r.incomplete) == (50, 45, 0, 5, None)
    assert s.findings.cancellations_exercised is True and s.findings.cancelled_requests == 5


def test_aiperf_all_failed_is_refused() -> None:
    doc = doc_of(A_FAILED)
    assert "request_count" not in doc  # AIPerf omits it when nothing succeeded
    with pytest.raises(InvalidInput) as exc:
        one(A_FAILED)
    assert f"completed: 0, failed: {int(doc['error_request_count']['avg'])}" in str(exc.value)
    assert path_of(A_FAILED).name in str(exc.value)


# --- AIPerf 0.8 (export schema 1.0) ------------------------------------------------------
# Built here after AIPerf's own writer (src/aiperf/common/models/export_models.py, schema
# "1.0": schema_version, aiperf_version, benchmark_id, then one {unit, avg, p1..p99, min,
# max, std} block per metric, no per-block count; start_time/end_time naive local times from
# datetime.fromtimestamp). No public 0.8 file is stored in ../shared/fixtures.


def _block(unit: str, avg: float, spread: float = 0.0) -> dict[str, Any]:
    levels = {"p1": -2.3, "p5": -1.6, "p10": -1.3, "p25": -0.7, "p50": 0.0}
    levels |= {"p75": 0.7, "p90": 1.3, "p95": 1.6, "p99": 2.3}
    block: dict[str, Any] = {"unit": unit, "avg": avg}
    block |= {key: round(avg + z * spread, 3) for key, z in levels.items()}
    block |= {"min": round(avg - 3 * spread, 3), "max": round(avg + 3 * spread, 3)}
    block["std"] = spread
    return block


def aiperf_08_export(*, successes: int, timeouts: int) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "1.0",
        "aiperf_version": "0.8.0",
        "benchmark_id": "3f1c9a2e-6b7d-4e0f-9a51-0c2d8e7b4f10",
    }
    if successes:
        doc |= {
            "request_throughput": {"unit": "requests/sec", "avg": successes / 60.0},
            "request_latency": _block("ms", 4200.0, 600.0),
            "request_count": {"unit": "requests", "avg": float(successes)},
            "time_to_first_token": _block("ms", 180.0, 40.0),
            "inter_token_latency": _block("ms", 21.0, 2.0),
            "inter_chunk_latency": _block("ms", 21.5, 6.0),
            "output_token_throughput": {"unit": "tokens/sec", "avg": successes * 190 / 60.0},
            "output_sequence_length": _block("tokens", 190.0, 12.0),
            "input_sequence_length": _block("tokens", 550.0, 40.0),
            "min_request_timestamp": {"unit": "ns", "avg": 1.7690562e18},
            "max_response_timestamp": {"unit": "ns", "avg": 1.7690562e18 + 60e9},
            "benchmark_duration": {"unit": "sec", "avg": 60.0},
        }
    if timeouts:
        doc |= {
            "error_request_count": {"unit": "requests", "avg": float(timeouts)},
            "error_isl": _block("tokens", 550.0, 40.0),
            "total_error_isl": {"unit": "tokens", "avg": 550.0 * timeouts},
        }
    doc |= {
        "input_config": {
            "endpoint": {
                "model_names": ["Qwen/Qwen3-0.6B"],
                "type": "chat",
                "streaming": True,
                "url": "localhost:8000",
                "timeout_seconds": 30.0,
            },
            "loadgen": {"concurrency": 4, "request_count": successes + timeouts},
            "cli_command": "aiperf profile --model Qwen/Qwen3-0.6B --streaming --concurrency 4",
        },
        "was_cancelled": False,
        "error_summary": (
            [{"error_details": {"type": "TimeoutError", "message": ""}, "count": timeouts}]
            if timeouts
            else []
        ),
        "start_time": "2026-01-22T04:43:20.112000",
        "end_time": "2026-01-22T04:44:20.406000",
    }
    return doc


def _import_doc(doc: dict[str, Any], name: str = "profile_export_aiperf.json") -> Any:
    from registry.importers import import_result_file_with_findings

    (stage,) = import_result_file_with_findings(
        json.dumps(doc, indent=2).encode(),
        file_name=name,
        workload="chat@v1",
        provider="h100@v1",
        replicas=1,
    )
    return stage


def test_aiperf_08_every_request_timed_out_is_aiperf_refused_with_its_reasons() -> None:
    from registry.importers import detect_tool

    doc = aiperf_08_export(successes=0, timeouts=12)
    metrics = {k for k, v in doc.items() if isinstance(v, dict) and "unit" in v}
    assert metrics == {"error_request_count", "error_isl", "total_error_isl"}
    assert detect_tool(doc) == "aiperf"
    with pytest.raises(InvalidInput) as exc:
        _import_doc(doc, name="run-timeouts/profile_export_aiperf.json")
    error = exc.value
    assert error.problems[0].loc == "completed"
    line = error.one_line()
    assert line.startswith(
        "run-timeouts/profile_export_aiperf.json: completed: 0, failed: 12 (12 x TimeoutError); "
        "no request completed"
    )
    assert "matches no supported tool" not in line
    assert str(error) == (
        "cannot import run-timeouts/profile_export_aiperf.json: completed: 0, failed: 12 "
        "(12 x TimeoutError)"
    )


def test_aiperf_all_failed_names_the_stated_reasons_most_frequent_first() -> None:
    doc = aiperf_08_export(successes=0, timeouts=7)
    doc["error_request_count"]["avg"] = 10.0
    doc["error_summary"].append(
        {
            "error_details": {"code": 503, "type": "ServiceUnavailable", "message": "no pods"},
            "count": 3,
        }
    )
    with pytest.raises(InvalidInput) as exc:
        _import_doc(doc)
    assert (
        "completed: 0, failed: 10 (7 x TimeoutError; 3 x ServiceUnavailable (HTTP 503): no pods)"
        in str(exc.value)
    )


def test_aiperf_08_lengths_take_request_count_as_their_sample_count() -> None:
    doc = aiperf_08_export(successes=40, timeouts=0)
    assert "count" not in doc["input_sequence_length"]  # schema 1.0 states no per-block count
    stage = _import_doc(doc)
    ev = stage.evidence
    assert ev.tool.version == "0.8.0"
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.failed) == (40, 40, 0)
    for which, key in (
        ("prompt_tokens", "input_sequence_length"),
        ("output_tokens", "output_sequence_length"),
    ):
        dist = getattr(ev.offered, which)
        assert dist is not None, which
        assert dist.samples == doc["request_count"]["avg"] == 40
        assert dist.quantile(50) == doc[key]["p50"]
        assert dist.quantile(99) == doc[key]["p99"]
        assert f"offered.{which}" not in ev.missing
        uniformity = getattr(stage.findings, which)
        assert uniformity.samples == 40
        assert uniformity.cv == pytest.approx(doc[key]["std"] / doc[key]["avg"])
    assert not any("no sample count" in n for n in stage.findings.notes)
