"""Trace fitting against the real Azure LLM inference trace (code, 2023) and small traces.

The Azure trace is CC-BY-4.0, Microsoft Azure's AzurePublicDataset. Expected figures are
recomputed here from the file with the csv module and numpy (exact, not streamed), and the
streamed sketch must agree within its stated error.
"""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from registry.errors import InvalidInput
from registry.records.common import Basis
from registry.records.workload import ClassSLO
from registry.traces import fit_trace, workload_from_trace

AZURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "traces"
    / "Azure__AzurePublicDataset__AzureLLMInferenceTrace_code_2023.csv"
)
SLO = ClassSLO(ttft_p99_ms=2000.0, tpot_p99_ms=100.0, e2e_p99_ms=60000.0, queue_deadline_ms=5000.0)


def _azure_exact() -> tuple[list[datetime], np.ndarray, np.ndarray]:
    with AZURE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    ts = [datetime.fromisoformat(r["TIMESTAMP"]).replace(tzinfo=UTC) for r in rows]
    p = np.array([float(r["ContextTokens"]) for r in rows])
    o = np.array([float(r["GeneratedTokens"]) for r in rows])
    return ts, p, o


def test_azure_trace_profile() -> None:
    fit = fit_trace(AZURE, name="azure-code-2023", slo=SLO)
    prof = fit.profile
    ts, p, o = _azure_exact()
    assert fit.form == "azure"
    assert fit.rows == len(ts) == 8819
    m = prof.measurement
    assert m is not None
    assert m.trace_digest == "sha256:" + hashlib.sha256(AZURE.read_bytes()).hexdigest()
    assert m.trace_digest.startswith("sha256:54e9a6d2a4bd06ba")  # as PROVENANCE.md states
    assert m.window_start == datetime(2023, 11, 16, 18, 17, 3, 979960, tzinfo=UTC)
    assert m.window_end == datetime(2023, 11, 16, 19, 14, 19, 928016, tzinfo=UTC)
    assert m.requests == 8819
    [cls] = prof.classes
    span = (ts[-1] - ts[0]).total_seconds()
    assert cls.arrival.mean_rps == pytest.approx(8819 / span)
    # peak: most arrivals in a 60 s window aligned to the first request
    offsets = np.array([(t - ts[0]).total_seconds() for t in ts])
    windows = np.bincount(np.floor(offsets / 60.0).astype(int))
    assert cls.arrival.peak_rps == pytest.approx(windows.max() / 60.0)
    gaps = np.diff(offsets)
    assert cls.arrival.interarrival_cv == pytest.approx(gaps.std() / gaps.mean(), rel=1e-6)
    assert cls.arrival.basis is Basis.measured
    for dist, exact in ((cls.prompt_tokens, p), (cls.output_tokens, o)):
        assert dist.samples == 8819
        assert dist.mean == pytest.approx(exact.mean())
        assert dist.min == exact.min() and dist.max == exact.max()
        for level in (10, 50, 90, 99):
            want = float(np.percentile(exact, level))
            got = dist.quantile(level)
            assert got is not None
            # the log-spaced sketch is within ~2.2 % (one bin) of numpy's interpolation
            assert got == pytest.approx(want, rel=0.025, abs=1.0)
        assert dist.histogram is not None and sum(dist.histogram.counts) == 8819
    assert cls.concurrency is None  # no completion times in the trace
    assert cls.slo == SLO
    assert "SLOs given, not measured" in (prof.description or "")


def test_window_argument_changes_peak() -> None:
    prof = workload_from_trace(AZURE, name="azure", slo=SLO, window_s=1.0)
    assert prof.classes[0].arrival.peak_window_s == 1.0
    assert prof.classes[0].arrival.peak_rps >= prof.classes[0].arrival.mean_rps


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_mooncake_jsonl_needs_trace_start(tmp_path: Path) -> None:
    # Synthetic, in the Mooncake trace's field layout (timestamp in ms from the start).
    rows = [
        {"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1]},
        {"timestamp": 1000, "input_length": 7319, "output_length": 490, "hash_ids": [0, 2]},
        {"timestamp": 3000, "input_length": 7234, "output_length": 794, "hash_ids": [3]},
        {"timestamp": 3000, "input_length": 2287, "output_length": 316, "hash_ids": [4]},
    ]
    path = _write(tmp_path / "mooncake.jsonl", [json.dumps(r) for r in rows])
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="mc", slo=SLO)
    assert exc.value.problems[0].loc == "trace_start"
    start = datetime(2024, 6, 1, tzinfo=UTC)
    prof = workload_from_trace(path, name="mc", slo=SLO, trace_start=start, window_s=2.0)
    assert prof.measurement is not None
    assert prof.measurement.window_start == start
    assert prof.measurement.window_end == datetime(2024, 6, 1, 0, 0, 3, tzinfo=UTC)
    arr = prof.classes[0].arrival
    assert arr.mean_rps == pytest.approx(4 / 3)
    # Windows [0,2) and [2,4) hold 2 each (1.0 req/s), but the trace ends at 3 s, so the last
    # window is cut short; the peak is never reported below the mean.
    assert arr.peak_rps == pytest.approx(4 / 3)
    # gaps 1, 2, 0 s: mean 1, population std sqrt(2/3)
    assert arr.interarrival_cv == pytest.approx((2 / 3) ** 0.5)
    out = prof.classes[0].output_tokens
    assert out.min == 316 and out.max == 794 and out.samples == 4


def test_generic_csv_with_classes_and_measured_concurrency(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "generic.csv",
        [
            "timestamp,prompt_tokens,output_tokens,latency_s,tier",
            "2025-01-01T00:00:00Z,100,10,5.0,Interactive",
            "2025-01-01T00:00:01Z,200,20,1.0,Interactive",
            "2025-01-01T00:00:02Z,300,30,5.0,Batch",
            "2025-01-01T00:00:03Z,400,40,1.0,Interactive",
            "2025-01-01T00:00:06Z,500,50,1.0,Batch",
        ],
    )
    batch_slo = SLO.model_copy(update={"ttft_p99_ms": 9000.0})
    prof = workload_from_trace(
        path,
        name="g",
        class_by="tier",
        slo={"interactive": SLO, "batch": batch_slo},
        priorities={"interactive": 0, "batch": 1},
    )
    by = {c.name: c for c in prof.classes}
    assert set(by) == {"interactive", "batch"}
    assert by["batch"].priority == 1 and by["batch"].slo.ttft_p99_ms == 9000.0
    inter = by["interactive"]
    assert inter.prompt_tokens.samples == 3
    assert inter.arrival.mean_rps == pytest.approx(3 / 6)
    # in flight at each interactive arrival: t=0 -> 1; t=1 -> 2 (first ends at 5); t=3 -> 2
    assert inter.concurrency is not None and inter.concurrency.basis is Basis.measured
    assert inter.concurrency.max == 2 and inter.concurrency.samples == 3


def test_assumed_service_time_marks_concurrency_assumed(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "g.csv",
        [
            "timestamp,prompt_tokens,output_tokens",
            "1700000000,10,1",
            "1700000001,10,1",
            "1700000001.5,10,1",
        ],
    )
    prof = workload_from_trace(path, name="g", slo=SLO, assumed_service_time_s=2.0)
    conc = prof.classes[0].concurrency
    assert conc is not None and conc.basis is Basis.assumed
    assert conc.max == 3 and conc.reason and "2 s" in conc.reason
    assert prof.measurement is not None
    assert prof.measurement.window_start == datetime.fromtimestamp(1700000000, tz=UTC)


def test_unsorted_trace_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "u.csv",
        ["timestamp,prompt_tokens,output_tokens", "1700000005,1,1", "1700000001,1,1"],
    )
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="u", slo=SLO)
    assert exc.value.problems[0].loc == "line 3.timestamp"


def test_unknown_columns_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", ["time,in,out", "1,2,3"])
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="x", slo=SLO)
    assert "expected Azure" in exc.value.problems[0].message


def test_missing_class_slo_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.csv",
        ["timestamp,prompt_tokens,output_tokens,k", "1700000000,1,1,a", "1700000001,1,1,a"],
    )
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="c", slo={"b": SLO}, class_by="k")
    assert exc.value.problems[0].loc == "slo.a"
