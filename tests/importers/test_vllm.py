"""vLLM bench results: every figure checked against what the file states (read off by hand)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from registry.errors import InvalidInput
from registry.importers import (
    CvBasis,
    ImportedStage,
    detect_tool,
    import_result_file_with_findings,
    vllm,
)
from tests.importers.helpers import WHEN, load, one, path_of

# --- vLLM -------------------------------------------------------------------------------


def test_vllm_legacy_summary_file() -> None:
    rel = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
    s = one(rel)
    ev = s.evidence
    assert ev.tool.name == "vllm-bench"
    assert ev.raw_file is not None
    digest = hashlib.sha256(path_of(rel).read_bytes()).hexdigest()
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


def test_vllm_summary_only_says_one_thing_about_lengths() -> None:
    """A summary states token totals: mean lengths, no spread. The findings say exactly that,
    once per length, and never "the file states no lengths" beside it."""
    rel = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
    doc = json.loads(path_of(rel).read_bytes())
    assert "input_lens" not in doc and doc["completed"] == 200
    s = one(rel)
    prompt, output = s.findings.prompt_tokens, s.findings.output_tokens
    mean_prompt = doc["total_input_tokens"] / doc["completed"]
    mean_output = doc["total_output_tokens"] / doc["completed"]
    assert prompt.note == (
        f"summary only: mean prompt {mean_prompt:g} tokens per completed request "
        "(total_input_tokens / completed); no distribution, so no CV"
    )
    assert output.note is not None and f"mean output {mean_output:g} tokens" in output.note
    assert (prompt.basis, prompt.cv, prompt.samples) == (CvBasis.unavailable, None, 200)
    said = [prompt.note, output.note, *s.findings.notes]
    assert not any("states no lengths" in (n or "") for n in said)
    assert sum("summary only" in (n or "") for n in said) == 2  # once per length
    # A file that states no totals either keeps "the file states no lengths".
    fork = one("vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json")
    assert fork.findings.prompt_tokens.note == "the file states no lengths"


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


# --- failed runs never look fast ----------------------------------------------------------

ALL_FAILED = "vllm-bench/synthetic__vllm-all-failed-completed-0.json"


def _import_bytes(data: bytes, file_name: str, **kw: object) -> list[ImportedStage]:
    args: dict[str, object] = {"workload": "chat@v1", "provider": "h100@v1", "replicas": 1}
    args.update(kw)
    return import_result_file_with_findings(data, file_name=file_name, **args)  # type: ignore[arg-type]


def test_vllm_all_failed_run_is_refused() -> None:
    path = path_of(ALL_FAILED)
    doc = json.loads(path.read_bytes())
    # The file is the shape vLLM writes when nothing succeeded: every latency 0.0.
    assert (doc["completed"], doc["failed"]) == (0, 8)
    assert doc["p99_ttft_ms"] == doc["p99_tpot_ms"] == doc["p99_e2el_ms"] == 0.0
    with pytest.raises(InvalidInput) as exc:
        load(ALL_FAILED)
    assert "completed: 0" in str(exc.value)
    assert f"failed: {doc['failed']}" in str(exc.value)
    assert path.name in str(exc.value)
    assert exc.value.problems[0].loc == "completed"


def test_vllm_all_failed_run_is_refused_at_a_finite_rate_too() -> None:
    doc = json.loads(path_of(ALL_FAILED).read_bytes())
    doc["request_rate"] = 4.0
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(json.dumps(doc).encode(), "finite.json", measured_at=WHEN)
    assert "completed: 0" in str(exc.value) and "finite.json" in str(exc.value)


def test_vllm_all_failed_line_in_appended_file_refuses_the_file() -> None:
    good = path_of(APPENDED).read_bytes()
    bad = path_of(ALL_FAILED).read_bytes()
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(good + b"\n" + bad, "appended.json", measured_at=WHEN, replicas=None)
    assert "completed: 0" in str(exc.value) and "appended.json" in str(exc.value)


# --- --append-result JSON Lines --------------------------------------------------------------

NERDALERT = (
    "vllm-bench/nerdalert__vllm-benchmark-graphs__h100-llama31-8b-vllm-vs-sgl-appended-results.json"
)


def _rows(rel: str) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path_of(rel).read_text().split("\n") if ln.strip()]


def test_vllm_appended_results_one_record_per_line() -> None:
    rows = _rows(NERDALERT)
    assert len(rows) == 12
    stages = load(NERDALERT, measured_at=None)
    assert len(stages) == len(rows)
    rates: list[float | str] = []
    for i, (s, row) in enumerate(zip(stages, rows, strict=True)):
        ev = s.evidence
        assert ev.labels["stage"] == str(i)
        assert ev.name.endswith(f"-stage-{i}")
        r = ev.results.per_class["default"]
        if row["request_rate"] == "inf":
            assert ev.offered.rate_unbounded and ev.offered.request_rate_rps is None
            rates.append("inf")
        else:
            assert ev.offered.request_rate_rps == row["request_rate"]
            rates.append(row["request_rate"])
        # Legacy writer: no 'failed' key, so failed = num_prompts - completed.
        assert "failed" not in row
        assert r.requests == row["num_prompts"]
        assert r.completed == row["completed"]
        assert r.failed == row["num_prompts"] - row["completed"]
        assert r.ttft_ms is not None and r.ttft_ms.at(99) == row["p99_ttft_ms"]
        assert r.ttft_ms.at(50) == row["median_ttft_ms"] and r.ttft_ms.mean == row["mean_ttft_ms"]
        assert r.tpot_ms is not None and r.tpot_ms.at(99) == row["p99_tpot_ms"]
        assert r.itl_ms is not None and r.itl_ms.at(99) == row["p99_itl_ms"]
        assert ev.offered.duration_s == row["duration"]
        assert ev.results.throughput.requests_per_s == row["request_throughput"]
        # The date is the runner's clock at the end of each run, read as UTC.
        assert ev.measured_at == datetime.strptime(row["date"], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        assert any(f"framework={row['framework']}" in n for n in s.findings.notes)
    assert rates == [1.0, 10.0, 20.0, 30.0, 35.0, "inf"] * 2
    # The unbounded runs lost about half their requests: the error rate is in the record.
    inf = stages[5].evidence.results.per_class["default"]
    assert (inf.requests, inf.completed, inf.failed) == (2000, 1015, 985)
    assert any("failed = num_prompts - completed = 985" in n for n in stages[5].findings.notes)


APPENDED = "vllm-bench/synthetic__vllm-append-result-metadata.json"


def test_vllm_append_result_with_metadata_replicas_and_class() -> None:
    raw = path_of(APPENDED).read_bytes()
    assert not raw.endswith(b"\n")  # mainline writes "\n" before each appended object
    rows = _rows(APPENDED)
    stages = load(APPENDED, replicas=None, measured_at=None)
    assert len(stages) == len(rows) == 3
    for s, row in zip(stages, rows, strict=True):
        ev = s.evidence
        # --metadata replicas=4 traffic_class=interactive, merged as strings.
        assert row["replicas"] == "4" and row["traffic_class"] == "interactive"
        assert ev.offered.replicas == 4
        assert ev.provenance is not None and ev.provenance.replicas_source == "file"
        assert ev.offered.classes == ["interactive"]
        r = ev.results.per_class["interactive"]
        assert (r.completed, r.failed, r.requests) == (
            row["completed"],
            row["failed"],
            row["completed"] + row["failed"],
        )
        # No e2el statistics were written; e2e comes from the successful 'latencies' (s).
        assert "p99_e2el_ms" not in row
        good = [x for x in row["latencies"] if x > 0]
        assert len(good) == row["completed"]
        assert r.e2e_ms is not None
        assert r.e2e_ms.at(99) == pytest.approx(float(np.percentile(good, 99)) * 1000)
        assert r.e2e_ms.mean == pytest.approx(float(np.mean(good)) * 1000)
        assert r.ttft_ms is not None and r.ttft_ms.at(99) == row["p99_ttft_ms"]
    # Line 2: one failed request of 20, so the error rate is computable.
    second = stages[1].evidence.results.per_class["interactive"]
    assert (second.completed, second.failed) == (19, 1)
    # Open loop at 4 req/s with --max-concurrency 4: client_queue_time is the queue wait.
    assert rows[1]["request_rate"] == 4.0 and rows[1]["max_concurrency"] == 4
    assert second.queue_ms is not None
    assert second.queue_ms.at(99) == rows[1]["p99_client_queue_time_ms"]
    assert stages[1].evidence.offered.concurrency == 4
    # request_rate "inf": the client queue is a closed-loop backlog, not stored as queue_ms.
    assert rows[2]["request_rate"] == "inf" and "p99_client_queue_time_ms" in rows[2]
    assert stages[2].evidence.results.per_class["interactive"].queue_ms is None


def test_vllm_metadata_replicas_conflict_with_flag() -> None:
    with pytest.raises(InvalidInput) as exc:
        load(APPENDED, replicas=2)
    assert exc.value.problems[0].loc == "--replicas"
    assert "metadata replicas" in str(exc.value)


def test_vllm_json_lines_with_blank_lines_name_the_physical_line() -> None:
    lines = path_of(APPENDED).read_bytes().split(b"\n")
    # A leading blank line and a blank line between objects (writers mixed over time).
    text = b"\n" + lines[0] + b"\n\n" + lines[1] + b"\n" + lines[2] + b"\n"
    stages = _import_bytes(text, "blank.json", measured_at=WHEN, replicas=None)
    assert [s.evidence.labels["stage"] for s in stages] == ["0", "1", "2"]
    # An AIPerf per-request row on physical line 4 is not a vLLM result.
    aiperf_row = json.dumps({"metadata": {}, "metrics": {}}).encode()
    mixed = b"\n" + lines[0] + b"\n\n" + aiperf_row + b"\n" + lines[2]
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(mixed, "mixed.json", measured_at=WHEN, replicas=None)
    assert exc.value.problems[0].loc == "line 4"
    assert "line 4" in str(exc.value) and "mixed.json" in str(exc.value)
    # A truncated last line (the writer died mid-append) is named too.
    broken = lines[0] + b"\n" + lines[1][:50]
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(broken, "broken.json", measured_at=WHEN)
    assert exc.value.problems[0].loc == "line 2"


def test_detect_tool_tells_json_lines_apart() -> None:
    rows = _rows(APPENDED)
    assert detect_tool(rows) == "vllm-bench"
    assert detect_tool([{"metadata": {"x": 1}, "metrics": {}}]) == "aiperf"
    assert detect_tool([{"hello": 1}]) is None
    # A GenAI-Perf/AIPerf {unit, avg} block under request_throughput is not vLLM's number.
    assert detect_tool([{"request_throughput": {"unit": "requests/sec", "avg": 1.0}}]) is None


# --- vllm bench sweep summary.json -----------------------------------------------------------

SWEEP = "vllm-bench/er0080__vllm-benchmarking__sweep-v0251-max-num-seqs-8-summary.json"


def test_vllm_sweep_summary_one_record_per_run() -> None:
    runs = json.loads(path_of(SWEEP).read_bytes())
    assert isinstance(runs, list) and len(runs) == 2
    stages = load(SWEEP)
    assert len(stages) == 2
    for s, run in zip(stages, runs, strict=True):
        ev = s.evidence
        assert ev.labels["stage"] == f"run-{run['run_number']}"
        assert ev.offered.rate_unbounded and run["request_rate"] == "inf"
        assert ev.offered.concurrency == run["max_concurrency"]
        assert ev.offered.requests == run["num_prompts"]
        assert ev.offered.duration_s == run["duration"]
        r = ev.results.per_class["default"]
        assert (r.completed, r.failed) == (run["completed"], run["failed"])
        assert r.ttft_ms is not None and r.ttft_ms.at(99) == run["p99_ttft_ms"]
        assert r.tpot_ms is not None and r.tpot_ms.at(99) == run["p99_tpot_ms"]
        assert r.itl_ms is not None and r.itl_ms.at(99) == run["p99_itl_ms"]
        assert r.e2e_ms is not None and r.e2e_ms.at(99) == run["p99_e2el_ms"]
        assert r.e2e_ms.at(50) == run["median_e2el_ms"] and r.e2e_ms.mean == run["mean_e2el_ms"]
        assert ev.results.throughput.output_tokens_per_s == run["output_throughput"]
        # The serve override the sweep merged into each run is kept in the notes.
        assert any(f"max_num_seqs={run['max_num_seqs']}" in n for n in s.findings.notes)
    assert stages[0].evidence.name != stages[1].evidence.name


def test_vllm_sweep_warmup_run_left_out() -> None:
    runs = json.loads(path_of(SWEEP).read_bytes())
    warm = dict(runs[0], run_number=-1)
    stages = _import_bytes(json.dumps([warm, *runs]).encode(), "summary.json", measured_at=WHEN)
    assert [s.evidence.labels["stage"] for s in stages] == ["run-0", "run-1"]


# --- replicas and traffic class from the file --------------------------------------------------

EXP7 = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"


def test_vllm_replicas_not_guessed_from_the_file_name() -> None:
    # exp7 measured 2 replicas, but says so only in its folder/file name.
    with pytest.raises(InvalidInput) as exc:
        load(EXP7, replicas=None)
    assert exc.value.problems[0].loc == "--replicas"
    assert "--replicas" in str(exc.value)
    ev = one(EXP7, replicas=2).evidence
    assert ev.offered.replicas == 2
    assert ev.provenance is not None and ev.provenance.replicas_source == "flag"


def _exp7(**extra: object) -> bytes:
    doc = json.loads(path_of(EXP7).read_bytes())
    doc.update(extra)
    return json.dumps(doc).encode()


def test_vllm_decode_replicas_metadata() -> None:
    # As llm-d users write it: --metadata prefill_replicas=0 decode_replicas=4.
    data = _exp7(prefill_replicas="0", decode_replicas="4")
    [s] = _import_bytes(data, "pd.json", measured_at=WHEN, replicas=None)
    assert s.evidence.offered.replicas == 4
    assert any("metadata decode_replicas (prefill_replicas 0)" in n for n in s.findings.notes)
    # Disaggregated prefill/decode: no single replica count, so the flag is required.
    data = _exp7(prefill_replicas="2", decode_replicas="4")
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(data, "pd.json", measured_at=WHEN, replicas=None)
    assert exc.value.problems[0].loc == "--replicas"
    [s] = _import_bytes(data, "pd.json", measured_at=WHEN, replicas=6)
    assert s.evidence.offered.replicas == 6
    assert any("disaggregated" in n for n in s.findings.notes)


@pytest.mark.parametrize(
    ("extra", "loc"),
    [
        ({"replicas": "four"}, "replicas"),
        ({"replicas": "0"}, "replicas"),
        ({"replicas": "4", "num_replicas": "2"}, "replicas"),
        ({"traffic_class": "Interactive Chat"}, "traffic_class"),
        ({"traffic_class": "interactive", "class": "batch"}, "traffic_class"),
    ],
)
def test_vllm_unreadable_metadata_refused(extra: dict[str, str], loc: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        _import_bytes(_exp7(**extra), "meta.json", measured_at=WHEN, replicas=None)
    assert exc.value.problems[0].loc == loc


def test_vllm_class_metadata_names_the_class() -> None:
    [s] = _import_bytes(_exp7(**{"class": "batch"}), "c.json", measured_at=WHEN)
    assert list(s.evidence.results.per_class) == ["batch"]


# --- time and schedule -------------------------------------------------------------------------


def test_vllm_date_marks_the_end_of_the_run() -> None:
    doc = json.loads(path_of(EXP7).read_bytes())
    [stage] = vllm.parse(doc, source="exp7.json")
    assert stage.measured_at_is_end
    assert stage.measured_at == datetime.strptime(doc["date"], "%Y%m%d-%H%M%S")


def test_vllm_ramp_up_is_not_an_unbounded_rate() -> None:
    data = _exp7(
        request_rate="inf", ramp_up_strategy="linear", ramp_up_start_rps=1, ramp_up_end_rps=20
    )
    [s] = _import_bytes(data, "ramp.json", measured_at=WHEN)
    off = s.evidence.offered
    assert not off.rate_unbounded and off.request_rate_rps is None
    assert any("linear ramp-up from 1 to 20 req/s" in n for n in s.findings.notes)


def test_vllm_detailed_e2e_from_gaps_with_empty_rows() -> None:
    # Legacy --save-detailed has no 'latencies': e2e = ttft + sum(itls), one-token outputs
    # have no gaps (an empty list in the middle of the file).
    doc = {
        "date": "20250301-120000",
        "num_prompts": 3,
        "request_rate": 1.0,
        "completed": 3,
        "input_lens": [10, 20, 30],
        "output_lens": [3, 1, 2],
        "ttfts": [0.1, 0.2, 0.3],
        "itls": [[0.01, 0.02], [], [0.03]],
        "errors": ["", "", ""],
    }
    [s] = _import_bytes(json.dumps(doc).encode(), "legacy.json", measured_at=WHEN)
    r = s.evidence.results.per_class["default"]
    e2e = [130.0, 200.0, 330.0]
    assert r.e2e_ms is not None
    assert r.e2e_ms.at(50) == pytest.approx(200.0)
    assert r.e2e_ms.at(99) == pytest.approx(float(np.percentile(e2e, 99)))
    # ITL pools the three gaps; TPOT is over the two requests with more than one token.
    assert r.itl_ms is not None and r.itl_ms.mean == pytest.approx(20.0)
    assert r.tpot_ms is not None and r.tpot_ms.mean == pytest.approx((15.0 + 30.0) / 2)
