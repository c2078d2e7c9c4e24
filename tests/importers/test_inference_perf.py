"""inference-perf reports: every figure checked against what the file states.

Real files come from ../shared/fixtures (the kubecon-na-2025 vLLM sweep of
kubernetes-sigs/inference-perf); ``synthetic__*`` files reproduce shapes no public file shows
(failed requests, goodput, a concurrent stage).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.importers import (
    CvBasis,
    detect_tool,
    import_result_file_with_findings,
)
from tests.importers.helpers import WHEN, load, one, path_of

STAGE0 = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json"
STAGE6 = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage6-lifecycle.json"
SUMMARY = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-summary-lifecycle.json"
PROM_STAGE6 = (
    "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage6-prometheus.json"
)
PROM_SUMMARY = (
    "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-summary-prometheus.json"
)
ALL_FAILED = "inference-perf/synthetic__stage-2-all-failed-lifecycle.json"
FAILURES_GOODPUT = "inference-perf/synthetic__stage-1-failures-goodput-lifecycle.json"
CONCURRENT = "inference-perf/synthetic__stage-0-concurrent-lifecycle.json"


def raw(rel: str) -> Any:
    """The file's own figures, read the way the test compares them."""
    return json.loads(path_of(rel).read_bytes())


# --- lifecycle reports: the mapping ------------------------------------------------------


def test_inference_perf_stage_seconds_to_ms_and_median() -> None:
    s = one(STAGE6)
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


def test_inference_perf_tpot_is_tpot_not_ntpot_and_itl_is_pooled() -> None:
    # TPOT = (last - first token) / (n - 1); NTPOT = e2e / n includes the TTFT and is not TPOT.
    lat = raw(STAGE0)["successes"]["latency"]
    r = one(STAGE0).evidence.results.per_class["default"]
    assert r.tpot_ms is not None and r.itl_ms is not None
    assert r.tpot_ms.at(50) == pytest.approx(lat["time_per_output_token"]["median"] * 1000)
    assert r.tpot_ms.at(50) != pytest.approx(
        lat["normalized_time_per_output_token"]["median"] * 1000
    )
    # ITL pools every token gap: its median (near 0: chunks read together) is far below TPOT,
    # while its mean equals TPOT's, as gaps over the same intervals must.
    assert r.itl_ms.at(50) == pytest.approx(lat["inter_token_latency"]["median"] * 1000)
    assert r.itl_ms.mean == pytest.approx(r.tpot_ms.mean)
    assert r.itl_ms.at(50) < r.tpot_ms.at(50) / 10


def test_inference_perf_summary_lacks_rates() -> None:
    s = one(SUMMARY)
    ev = s.evidence
    doc = raw(SUMMARY)
    assert ev.offered.requests == doc["load_summary"]["count"] == 38717
    assert "offered.request_rate_rps" in ev.missing and "offered.duration_s" in ev.missing
    # No requested rate: the large schedule delay is reported, not judged against a schedule.
    delay = doc["load_summary"]["schedule_delay"]
    assert not ev.offered.client_behind and ev.offered.achieved_rate_rps is None
    assert any(
        f"schedule_delay median {delay['median']:.4g} s" in n and "cannot be judged" in n
        for n in s.findings.notes
    )


def test_inference_perf_requires_measured_at() -> None:
    with pytest.raises(InvalidInput) as exc:
        load(STAGE0, measured_at=None)
    assert exc.value.problems[0].loc == "--measured-at"
    assert "--measured-at" in exc.value.problems[0].message


def test_inference_perf_states_no_replicas() -> None:
    # The reports carry no replica count: the flag is required and recorded as the source.
    with pytest.raises(InvalidInput) as exc:
        load(STAGE0, replicas=None)
    assert exc.value.problems[0].loc == "--replicas"
    ev = one(STAGE0, replicas=2).evidence
    assert ev.offered.replicas == 2
    assert ev.provenance is not None and ev.provenance.replicas_source == "flag"


# --- the client's schedule ----------------------------------------------------------------


def test_inference_perf_client_fell_behind_stage6() -> None:
    load_summary = raw(STAGE6)["load_summary"]
    requested, achieved = load_summary["requested_rate"], load_summary["achieved_rate"]
    delay = load_summary["schedule_delay"]
    assert achieved < 0.9 * requested  # the file itself: 106.5 of 183.38 req/s
    window = load_summary["count"] / requested  # the 60 s the stage was scheduled over
    assert delay["median"] > 0.1 * window

    ev = one(STAGE6).evidence
    assert ev.offered.request_rate_rps == requested
    assert ev.offered.achieved_rate_rps == achieved
    assert ev.offered.client_behind is True
    reason = ev.offered.client_behind_reason
    assert reason is not None
    assert f"median {delay['median']:.4g} s" in reason and f"p99 {delay['p99']:.4g} s" in reason
    assert f"scheduled over {window:.4g} s" in reason
    assert f"achieved {achieved:.4g} of the offered {requested:g} req/s" in reason


def test_inference_perf_client_kept_schedule_stage0() -> None:
    load_summary = raw(STAGE0)["load_summary"]
    assert load_summary["schedule_delay"]["median"] < 0.010  # the tool's accuracy guidance
    ev = one(STAGE0).evidence
    assert ev.offered.request_rate_rps == load_summary["requested_rate"] == 1.0
    assert ev.offered.achieved_rate_rps == load_summary["achieved_rate"]
    assert ev.offered.client_behind is False
    assert ev.offered.client_behind_reason is None


def test_inference_perf_concurrent_stage_is_closed_loop() -> None:
    # inference-perf sets a concurrent stage's rate to num_requests (all enqueued within one
    # second), so requests wait for one of the N slots: neither the rate nor the delay judges.
    doc = raw(CONCURRENT)["load_summary"]
    s = one(CONCURRENT)
    ev = s.evidence
    assert ev.offered.concurrency == doc["concurrency"] == 8
    assert ev.offered.request_rate_rps is None
    assert ev.offered.achieved_rate_rps == doc["achieved_rate"]
    assert ev.offered.client_behind is False
    assert any(f"requested_rate {doc['requested_rate']:g}" in n for n in s.findings.notes)
    assert any("concurrent stage queues" in n for n in s.findings.notes)


# --- failures and goodput -----------------------------------------------------------------


def test_inference_perf_failures_and_goodput() -> None:
    doc = raw(FAILURES_GOODPUT)
    ev = one(FAILURES_GOODPUT).evidence
    r = ev.results.per_class["default"]
    assert r.requests == doc["load_summary"]["count"] == 50
    assert r.completed == doc["successes"]["count"] == 45
    assert r.failed == doc["failures"]["count"] == 5
    goodput = doc["successes"]["goodput_metrics"]
    assert ev.results.throughput.goodput_requests_per_s == goodput["request_goodput"]
    assert "throughput.goodput_requests_per_s" not in ev.missing
    assert ev.offered.client_behind is False  # achieved 5.1 of 5.0 req/s, delay < 1 ms


def test_inference_perf_zero_completed_refused() -> None:
    doc = raw(ALL_FAILED)
    assert doc["successes"]["count"] == 0
    with pytest.raises(InvalidInput) as exc:
        load(ALL_FAILED)
    assert exc.value.problems[0].loc == "stage 2: completed"  # the stage its file name gives
    assert f"completed: 0, failed: {doc['failures']['count']}" in str(exc.value)
    assert exc.value.source == path_of(ALL_FAILED).name


def test_inference_perf_lifecycle_without_latencies_refused() -> None:
    doc = raw(STAGE0)
    del doc["successes"]["latency"]
    with pytest.raises(InvalidInput) as exc:
        import_result_file_with_findings(
            json.dumps(doc).encode(),
            file_name="stage_0_lifecycle_metrics.json",
            workload="w",
            provider="p",
            measured_at=WHEN,
            replicas=1,
        )
    assert exc.value.problems[0].loc == "successes.latency"


# --- the Prometheus report is refused, naming the file to import instead --------------------


@pytest.mark.parametrize(
    ("rel", "lifecycle", "sibling"),
    [
        (PROM_STAGE6, STAGE6, "stage_6_lifecycle_metrics.json"),
        (PROM_SUMMARY, SUMMARY, "summary_lifecycle_metrics.json"),
    ],
)
def test_inference_perf_prometheus_report_refused(rel: str, lifecycle: str, sibling: str) -> None:
    doc = raw(rel)
    # What makes it no load-test result, read off the file: no load, no failures, no
    # per-request latencies, and a server-side count that is not the client's.
    assert doc["load_summary"] == {} and doc["failures"] == {}
    assert "latency" not in doc["successes"]
    assert doc["successes"]["count"] != raw(lifecycle)["successes"]["count"]
    assert detect_tool(doc) == "inference-perf"
    with pytest.raises(InvalidInput) as exc:
        load(rel)
    problem = exc.value.problems[0]
    assert problem.loc == "successes"
    assert "Prometheus report" in problem.message
    assert f"successes.count ({doc['successes']['count']})" in problem.message
    assert f"Import the client-side report of the same run instead: {sibling}" in (problem.message)
    assert exc.value.source == path_of(rel).name


# --- per-request files --------------------------------------------------------------------


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
        replicas=1,
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


def test_inference_perf_per_request_nested_layout() -> None:
    # Later inference-perf nests the counts under request_metrics / response_metrics and gives
    # every token of a streamed chunk that chunk's arrival time; TPOT divides by the output
    # token count, not by the number of distinct times.
    rows = [
        {
            "start_time": 100.0,
            "end_time": 100.9,
            "info": {
                "request_metrics": {"text": {"input_tokens": 120}},
                "response_metrics": {
                    "output_tokens": 5,
                    "output_token_times": [100.2, 100.2, 100.6, 100.6, 100.8],
                },
                "input_tokens": 120,
            },
            "error": None,
        },
        {
            "start_time": 101.0,
            "end_time": 101.5,
            "info": {
                "request_metrics": {"text": {"input_tokens": 80}},
                "response_metrics": {
                    "output_tokens": 3,
                    "output_token_times": [101.1, 101.3, 101.5],
                },
            },
            "error": None,
        },
    ]
    [s] = import_result_file_with_findings(
        json.dumps(rows).encode(),
        file_name="per_request_lifecycle_metrics.json",
        workload="w",
        provider="p",
        measured_at=WHEN,
        replicas=1,
    )
    r = s.evidence.results.per_class["default"]
    assert (r.requests, r.completed, r.failed) == (2, 2, 0)
    assert r.ttft_ms is not None and r.ttft_ms.mean == pytest.approx((200.0 + 100.0) / 2)
    # (100.8 - 100.2) / (5 - 1) = 0.15 s and (101.5 - 101.1) / (3 - 1) = 0.2 s
    assert r.tpot_ms is not None and r.tpot_ms.mean == pytest.approx((150.0 + 200.0) / 2)
    prompt, output = s.evidence.offered.prompt_tokens, s.evidence.offered.output_tokens
    assert prompt is not None and prompt.mean == pytest.approx(100.0)
    assert output is not None and output.mean == pytest.approx(4.0)
