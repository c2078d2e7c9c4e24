"""GuideLLM reports: every figure checked against what the file states.

Real files come from ../shared/fixtures (skipped when absent); ``synthetic__*`` files are the
project's own and reproduce what no public file shows (errored, incomplete and late runs).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.importers import CvBasis
from registry.importers.guidellm import guidellm_level
from registry.records.evidence import Percentiles
from tests.importers.helpers import load, one, path_of

SYNC = "guidellm/danielkorat__guidellm-bench__qwen3-4b-thinking-tp2-fp8-xpu-synchronous.json"
CONC4 = (
    "guidellm/danielkorat__guidellm-bench__qwen3-4b-thinking-tp4-fp8-xpu-sanity-concurrent4.json"
)
MOCK = "guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json"
V02 = "guidellm/vllm-project__guidellm__benchmarks-stripped-v02.json"
BEHIND = "guidellm/synthetic__guidellm-report-constant-errored-incomplete-behind.json"
ZERO = "guidellm/synthetic__guidellm-report-zero-successful.json"


def doc_of(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path_of(rel).read_text())
    return data


def ok_stat(bench: dict[str, Any], key: str) -> dict[str, Any]:
    stat: dict[str, Any] = bench["metrics"][key]["successful"]
    return stat


def assert_same(pct: Percentiles | None, stat: dict[str, Any], *, scale: float = 1.0) -> None:
    """Every percentile the file states, and its mean, as stored (levels kept in order)."""
    assert pct is not None
    assert pct.mean == pytest.approx(stat["mean"] * scale)
    stated = {guidellm_level(k): v * scale for k, v in stat["percentiles"].items()}
    for level, value in stated.items():
        assert level is not None
        got = pct.at(level)
        if got is not None:
            assert got == pytest.approx(value)
    assert pct.at(99) == pytest.approx(stat["percentiles"]["p99"] * scale)


# --- TPOT is GuideLLM's inter_token_latency_ms, in every version ---------------------------


@pytest.mark.parametrize("rel", [SYNC, CONC4, MOCK, V02])
def test_tpot_is_guidellm_inter_token_latency(rel: str) -> None:
    stages = load(rel)
    benches = doc_of(rel)["benchmarks"]
    assert len(stages) == len(benches)
    for s, bench in zip(stages, benches, strict=True):
        r = s.evidence.results.per_class["default"]
        itl = ok_stat(bench, "inter_token_latency_ms")
        assert_same(r.tpot_ms, itl)
        # GuideLLM's own TPOT divides by all output tokens: a different figure, not stored.
        assert r.tpot_ms is not None
        assert r.tpot_ms.mean != ok_stat(bench, "time_per_output_token_ms")["mean"]
        # GuideLLM keeps no per-gap times: no pooled ITL in any version.
        assert r.itl_ms is None and "results.itl_ms" in s.evidence.missing
        assert "results.tpot_ms" not in s.evidence.missing
        assert any("token-weighted" in n for n in s.findings.notes)


def test_report_schema_sync_counts_weighting_and_window() -> None:
    s = one(SYNC)
    ev = s.evidence
    bench = doc_of(SYNC)["benchmarks"][0]
    totals = bench["metrics"]["request_totals"]
    assert ev.tool.version == "0.5.0.dev0"
    assert ev.offered.concurrency == 1  # synchronous strategy
    r = ev.results.per_class["default"]
    # request_totals (26), not the 30 sampled requests that include warm-up and cool-down.
    assert (r.requests, r.completed, r.failed, r.incomplete) == (
        totals["total"],
        totals["successful"],
        totals["errored"],
        totals["incomplete"],
    )
    assert r.completed == 26 and len(bench["requests"]["successful"]) == 30
    assert any("lists 30 sampled requests" in n for n in s.findings.notes)
    # The token-weighted count is the number of token gaps: sum of (out - 1) = 26 * 1023.
    itl = ok_stat(bench, "inter_token_latency_ms")
    out = ok_stat(bench, "output_token_count")
    assert itl["count"] == round(out["total_sum"]) - out["count"]
    assert any(
        f"its count, {itl['count']}, is the number of token gaps" in n for n in s.findings.notes
    )
    # TTFT in ms, e2e from seconds.
    assert_same(r.ttft_ms, ok_stat(bench, "time_to_first_token_ms"))
    assert_same(r.e2e_ms, ok_stat(bench, "request_latency"), scale=1000.0)
    # The stated window (720 s) runs past the last request: clipped to it.
    assert bench["duration"] == 720.0
    last = bench["scheduler_metrics"]["request_end_time"]
    assert ev.offered.duration_s == pytest.approx(last - bench["start_time"])
    assert ev.measured_at == datetime.fromtimestamp(bench["start_time"], tz=UTC)
    # No schedule to keep in a synchronous run.
    assert ev.offered.achieved_rate_rps is None and ev.offered.client_behind is False


def test_report_schema_concurrent_streams() -> None:
    s = one(CONC4)
    bench = doc_of(CONC4)["benchmarks"][0]
    assert bench["config"]["strategy"]["streams"] == 4
    assert s.evidence.offered.concurrency == 4
    r = s.evidence.results.per_class["default"]
    assert (r.completed, r.failed, r.incomplete, r.cancelled) == (4, 0, 0, 0)
    assert s.evidence.offered.duration_s == pytest.approx(bench["duration"])


def test_old_schema_incomplete_is_not_a_cancellation() -> None:
    s = one(V02)
    ev = s.evidence
    bench = doc_of(V02)["benchmarks"][0]
    assert ev.tool.version is None
    assert ev.measured_at == datetime.fromtimestamp(1749157168.1827004, tz=UTC)
    assert ev.offered.concurrency == 1  # synchronous strategy
    assert ev.offered.duration_s == pytest.approx(29.997201442718506)
    r = ev.results.per_class["default"]
    totals = bench["request_totals"]
    assert (totals["successful"], totals["errored"], totals["incomplete"]) == (46, 0, 1)
    # The request cut off at max_seconds is incomplete; nothing was cancelled on purpose.
    assert (r.requests, r.completed, r.failed, r.incomplete, r.cancelled) == (47, 46, 0, 1, 0)
    assert s.findings.cancellations_exercised is False
    assert any("max_seconds_reached" in n for n in s.findings.notes)
    assert r.ttft_ms is not None
    # p001 is the 0.1th percentile, p01 the 1st, p999 the 99.9th; median stands for p50.
    assert r.ttft_ms.at(0.1) == 15.790939331054688
    assert r.ttft_ms.at(5) == 15.971660614013672
    assert r.ttft_ms.at(50) == 16.38054847717285
    assert r.ttft_ms.at(99.9) == 21.281957626342773
    assert r.e2e_ms is not None and r.e2e_ms.at(99) == pytest.approx(689.1846656799316)
    assert r.tpot_ms is not None and r.tpot_ms.mean == 4.941609043733832
    assert ev.offered.prompt_tokens is not None
    assert ev.offered.prompt_tokens.samples == 46
    assert ev.offered.prompt_tokens.mean == 257.1086956521739
    assert s.findings.prompt_tokens.basis is CvBasis.stated_std
    assert s.findings.prompt_tokens.cv == pytest.approx(0.37464538999161057 / 257.1086956521739)
    assert s.findings.output_tokens.cv == 0.0
    assert ev.results.throughput.requests_per_s == 1.5481806532737452


def test_report_v2_two_stages_linked_and_on_schedule() -> None:
    stages = load(MOCK)
    doc = doc_of(MOCK)
    assert len(stages) == 2
    base = "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver"
    assert [s.evidence.name for s in stages] == [f"{base}-stage-0", f"{base}-stage-1"]
    for i, (s, bench) in enumerate(zip(stages, doc["benchmarks"], strict=True)):
        ev = s.evidence
        assert ev.labels == {"series": base, "stage": str(i)}
        assert ev.tool.version == "0.8.0.dev18"
        assert ev.offered.request_rate_rps == bench["config"]["strategy"]["rate"]
        # Achieved send rate from the scheduler's mean lateness against its schedule.
        sched = bench["scheduler_metrics"]
        made = sched["requests_made"]["total"]
        rate = bench["config"]["strategy"]["rate"]
        expected = (made - 1) / ((made - 1) / rate + 2 * sched["request_targeted_start_delay_avg"])
        assert ev.offered.achieved_rate_rps == pytest.approx(expected)
        assert ev.offered.client_behind is False  # a few ms late: on schedule
        # GuideLLM's constant strategy: evenly spaced, replayed so and CV 0 at the gate.
        assert bench["config"]["strategy"]["type_"] == "constant"
        assert ev.offered.constant_arrivals and ev.offered.burstiness is None
    a = stages[0].evidence
    assert a.offered.request_rate_rps == 2.0 and stages[1].evidence.offered.request_rate_rps == 4.0
    ra = a.results.per_class["default"]
    assert (ra.requests, ra.completed, ra.failed, ra.incomplete, ra.cancelled) == (2, 2, 0, 0, 0)
    assert ra.ttft_ms is not None and ra.ttft_ms.at(50) == 11.276006698608398
    # 14 token gaps over 2 requests: the token-weighted per-request TPOT, not a pooled ITL.
    assert ra.tpot_ms is not None and ra.tpot_ms.mean == 1.1508464813232422
    assert ra.itl_ms is None
    assert a.offered.prompt_tokens is not None and a.offered.prompt_tokens.mean == 71.5
    assert a.measured_at == datetime.fromtimestamp(1786678148.2526348, tz=UTC)


# --- failed and cut-off runs never look fast ------------------------------------------------


def test_errored_incomplete_and_client_behind() -> None:
    s = one(BEHIND)
    ev = s.evidence
    bench = doc_of(BEHIND)["benchmarks"][0]
    totals = bench["metrics"]["request_totals"]
    r = ev.results.per_class["default"]
    assert (r.requests, r.completed, r.failed, r.incomplete, r.cancelled) == (
        totals["total"],
        totals["successful"],
        totals["errored"],
        totals["incomplete"],
        0,
    )
    assert (r.failed, r.incomplete) == (6, 4)
    assert s.findings.cancellations_exercised is False
    assert s.findings.cancelled_requests == 0
    # 50 requests at 10 req/s, each started 1.5 s late on average: sent over 4.9 + 3.0 s.
    sched = bench["scheduler_metrics"]
    assert (sched["requests_made"]["total"], sched["request_targeted_start_delay_avg"]) == (50, 1.5)
    assert ev.offered.request_rate_rps == 10.0
    assert ev.offered.achieved_rate_rps == pytest.approx(49 / (49 / 10.0 + 2 * 1.5))
    assert ev.offered.client_behind is True
    assert ev.offered.client_behind_reason is not None
    assert "of the offered 10 req/s" in ev.offered.client_behind_reason
    assert_same(r.tpot_ms, ok_stat(bench, "inter_token_latency_ms"))


def test_zero_successful_is_refused() -> None:
    path = path_of(ZERO)
    totals = doc_of(ZERO)["benchmarks"][0]["metrics"]["request_totals"]
    assert totals["successful"] == 0
    with pytest.raises(InvalidInput) as exc:
        one(ZERO)
    assert f"completed: 0, failed: {totals['errored']}" in str(exc.value)
    assert path.name in str(exc.value)
    assert exc.value.problems[0].loc == "completed"


# --- the YAML report ---------------------------------------------------------------------


@pytest.mark.parametrize("rel", [MOCK, V02])
def test_yaml_report_reads_as_the_json_one(rel: str) -> None:
    """GuideLLM writes benchmarks.yaml with ``yaml.dump(report.model_dump())``: the JSON's
    structure, in YAML (GenerativeBenchmarksReport.save_file). The same figures come out."""
    import yaml

    from registry.importers import import_result_file_with_findings

    as_yaml = yaml.dump(doc_of(rel)).encode()
    assert not as_yaml.lstrip().startswith(b"{")
    from_json = load(rel)
    for file_name in ("out/benchmarks.yaml", "out/benchmarks.yml", "out/report"):
        from_yaml = import_result_file_with_findings(
            as_yaml, file_name=file_name, workload="chat@v1", provider="h100@v1", replicas=1
        )
        assert len(from_yaml) == len(from_json)
        for a, b in zip(from_yaml, from_json, strict=True):
            assert a.evidence.tool == b.evidence.tool
            assert a.evidence.measured_at == b.evidence.measured_at
            assert a.evidence.offered == b.evidence.offered
            assert a.evidence.results == b.evidence.results
            assert a.evidence.missing == b.evidence.missing
            assert a.evidence.raw_file is not None
            assert a.evidence.raw_file.size_bytes == len(as_yaml)


def test_a_broken_yaml_report_is_refused_naming_the_line() -> None:
    from registry.importers import import_result_file

    broken = b"benchmarks:\n  - metrics: {a: 1\n"
    with pytest.raises(InvalidInput) as exc:
        import_result_file(broken, file_name="benchmarks.yaml", workload="w", provider="p")
    line = exc.value.one_line()
    assert line.startswith("benchmarks.yaml: (file): not YAML (")
    assert "at line 3" in line and "supported tools and formats" in line
    aliased = b"args: &a {x: 1}\nbenchmarks: *a\n"
    with pytest.raises(InvalidInput) as alias:
        import_result_file(aliased, file_name="benchmarks.yaml", workload="w", provider="p")
    assert "YAML aliases (*name) are not allowed" in alias.value.one_line()
