"""Trace fitting against the real Azure LLM inference trace (code, 2023) and small traces.

The Azure trace is CC-BY-4.0, Microsoft Azure's AzurePublicDataset; it is read from
../shared/fixtures (the test skips with one line when that is absent). Expected figures are
recomputed here from the file with the csv module and numpy (exact, not streamed), and the
streamed sketch must agree within its stated error. Mooncake prefix reuse is checked on
small traces written here, with the figures worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from registry.errors import InvalidInput
from registry.records.common import Basis
from registry.records.workload import ClassSLO, WorkloadProfile
from registry.traces import fit_trace, workload_from_trace
from tests.support.fixtures import shared

AZURE_REL = "traces/Azure__AzurePublicDataset__AzureLLMInferenceTrace_code_2023.csv"
SLO = ClassSLO(ttft_p99_ms=2000.0, tpot_p99_ms=100.0, e2e_p99_ms=60000.0, queue_deadline_ms=5000.0)


@pytest.fixture
def azure() -> Path:
    return shared(AZURE_REL)


def _azure_exact(path: Path) -> tuple[list[datetime], np.ndarray, np.ndarray]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    ts = [datetime.fromisoformat(r["TIMESTAMP"]).replace(tzinfo=UTC) for r in rows]
    p = np.array([float(r["ContextTokens"]) for r in rows])
    o = np.array([float(r["GeneratedTokens"]) for r in rows])
    return ts, p, o


def test_azure_trace_profile(azure: Path) -> None:
    fit = fit_trace(azure, name="azure-code-2023", slo=SLO)
    prof = fit.profile
    ts, p, o = _azure_exact(azure)
    assert fit.form == "azure"
    assert fit.rows == len(ts) == 8819
    m = prof.measurement
    assert m is not None
    assert m.trace_digest == "sha256:" + hashlib.sha256(azure.read_bytes()).hexdigest()
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


def test_azure_trace_states_no_prefix_reuse_or_cancellations(azure: Path) -> None:
    # The file's header is all it has: TIMESTAMP, ContextTokens, GeneratedTokens.
    with azure.open(newline="") as fh:
        header = next(csv.reader(fh))
    assert header == ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
    fit = fit_trace(azure, name="azure-code-2023", slo=SLO)
    [cls] = fit.profile.classes
    # Unknown, not zero: null with the reason, in the record and in what the CLI writes.
    assert cls.prefix_cache_share is None and cls.cancellation_rate is None
    assert "hash_ids" in (cls.unknown_reason("prefix_cache_share") or "")
    assert "no cancelled column" in (cls.unknown_reason("cancellation_rate") or "")
    assert fit.prefix_reuse is None
    assert "prefix_cache_share unknown" in (fit.profile.description or "")
    assert "cancellation_rate unknown" in (fit.profile.description or "")
    written = fit.profile.model_dump(mode="json", exclude_none=True)
    assert "prefix_cache_share" not in written["classes"][0]
    assert set(written["classes"][0]["unknown"]) == {"prefix_cache_share", "cancellation_rate"}
    # What the CLI writes reads back as the same profile (the reasons make the nulls).
    assert WorkloadProfile.model_validate(written) == fit.profile


def test_window_argument_changes_peak(azure: Path) -> None:
    prof = workload_from_trace(azure, name="azure", slo=SLO, window_s=1.0)
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
    # hash_ids: only request 2 starts with a block seen before (id 0, 512 tokens); the ids
    # here cover fewer blocks than the prompts (2 of 14), so the rest are misses.
    prompt_total = 6755 + 7319 + 7234 + 2287
    assert prof.classes[0].prefix_cache_share == pytest.approx(512 / prompt_total, abs=5e-5)
    assert prof.classes[0].cancellation_rate is None


# Mooncake rows, 512-token blocks. Per request: the leading run of ids already seen earlier
# (any class), times 512, capped at the prompt.
#   line  tier  input  hash_ids   leading seen   hit tokens
#   1     a     1024   [1, 2]     -              0
#   2     a     1500   [1, 2, 3]  1, 2           1024
#   3     a      700   [1, 4]     1              512
#   4     b      300   [5]        -              0
#   5     b     1536   [1, 2, 3]  1, 2, 3        1536
#   6     b      600   [6, 2]     - (6 is new)   0     (2 was seen, but not as a prefix)
#   7     a     1000   [1, 2]     1, 2           1000  (2 x 512 = 1024, capped at 1000)
MOONCAKE_ROWS = [
    (0, "a", 1024, [1, 2]),
    (1000, "a", 1500, [1, 2, 3]),
    (2000, "a", 700, [1, 4]),
    (3000, "b", 300, [5]),
    (4000, "b", 1536, [1, 2, 3]),
    (5000, "b", 600, [6, 2]),
    (6000, "a", 1000, [1, 2]),
]
START = datetime(2024, 6, 1, tzinfo=UTC)


def _mooncake(tmp_path: Path, rows: list[tuple[int, str, int, list[Any]]] = MOONCAKE_ROWS) -> Path:
    lines = [
        json.dumps(
            {"timestamp": t, "input_length": n, "output_length": 10, "hash_ids": ids, "tier": k}
        )
        for t, k, n, ids in rows
    ]
    return _write(tmp_path / "mooncake.jsonl", lines)


def test_mooncake_prefix_reuse_unbounded_cache(tmp_path: Path) -> None:
    fit = fit_trace(_mooncake(tmp_path), name="mc", slo=SLO, trace_start=START)
    [cls] = fit.profile.classes
    prompt = 1024 + 1500 + 700 + 300 + 1536 + 600 + 1000  # 6660
    hits = 0 + 1024 + 512 + 0 + 1536 + 0 + 1000  # 4072
    assert (prompt, hits) == (6660, 4072)
    assert cls.prefix_cache_share == 0.6114  # 4072 / 6660 = 0.61141..., stored to 4 places
    assert fit.prefix_reuse is not None
    reuse = fit.prefix_reuse["default"]
    assert (reuse.prompt_tokens, reuse.hit_tokens, reuse.requests) == (6660, 4072, 7)
    assert reuse.uncovered_rows == 0
    assert cls.cancellation_rate is None  # a Mooncake trace records no cancellations
    assert "upper bound" in (fit.profile.description or "")


def test_mooncake_prefix_reuse_per_class_with_a_shared_cache(tmp_path: Path) -> None:
    prof = workload_from_trace(
        _mooncake(tmp_path), name="mc", slo=SLO, trace_start=START, class_by="tier"
    )
    by = {c.name: c for c in prof.classes}
    # a: lines 1, 2, 3, 7: (0 + 1024 + 512 + 1000) / (1024 + 1500 + 700 + 1000) = 2536 / 4224
    assert by["a"].prefix_cache_share == round(2536 / 4224, 4) == 0.6004
    # b: lines 4, 5, 6: line 5 hits blocks class a brought in: 1536 / (300 + 1536 + 600)
    assert by["b"].prefix_cache_share == round(1536 / 2436, 4) == 0.6305


def test_mooncake_prefix_reuse_with_an_lru_cache(tmp_path: Path) -> None:
    # LRU of 3 blocks (1536 tokens); blocks a request touches become most recent.
    #   line 1 [1,2]    miss            cache 1 2
    #   line 2 [1,2,3]  1 2 hit: 1024   cache 1 2 3
    #   line 3 [1,4]    1 hit: 512      cache 3 1 4   (2 evicted)
    #   line 4 [5]      miss            cache 1 4 5   (3 evicted)
    #   line 5 [1,2,3]  1 hit: 512      cache 1 2 3   (4, 5 evicted)
    #   line 6 [6,2]    miss            cache 3 6 2   (1 evicted)
    #   line 7 [1,2]    miss (1 gone)
    fit = fit_trace(
        _mooncake(tmp_path), name="mc", slo=SLO, trace_start=START, prefix_cache_tokens=1536
    )
    [cls] = fit.profile.classes
    assert cls.prefix_cache_share == round(2048 / 6660, 4) == 0.3075
    assert fit.prefix_reuse is not None
    assert fit.prefix_reuse["default"].hit_tokens == 4072  # the unbounded figure, still noted
    assert "LRU cache of 1536 tokens (3 blocks)" in (fit.profile.description or "")
    assert "unbounded cache: default 0.6114" in (fit.profile.description or "")


def test_mooncake_more_ids_than_blocks_refused(tmp_path: Path) -> None:
    # 600 tokens fill 2 blocks of 512; 3 ids mean some other block size.
    path = _mooncake(tmp_path, [(0, "a", 100, [1]), (1000, "a", 600, [1, 2, 3])])
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="mc", slo=SLO, trace_start=START)
    assert exc.value.problems[0].loc == "line 2.hash_ids"
    assert "3 block ids" in exc.value.problems[0].message
    # Declared 200-token blocks fit: 600 tokens are 3 blocks.
    prof = workload_from_trace(path, name="mc", slo=SLO, trace_start=START, hash_block_tokens=200)
    # line 2: id 1 seen (200 tokens), id 2 new -> 200 / (100 + 600)
    assert prof.classes[0].prefix_cache_share == round(200 / 700, 4)


@pytest.mark.parametrize(
    ("value", "loc"),
    [("[1, 2", "line 2.hash_ids"), ({"a": 1}, "line 2.hash_ids"), ([1.5], "line 2.hash_ids")],
)
def test_mooncake_unreadable_hash_ids_refused(tmp_path: Path, value: Any, loc: str) -> None:
    path = _mooncake(tmp_path, [(0, "a", 100, [1]), (1000, "a", 100, value)])
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="mc", slo=SLO, trace_start=START)
    assert exc.value.problems[0].loc == loc


def test_mooncake_row_without_hash_ids_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "m.jsonl",
        [
            json.dumps({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}),
            json.dumps({"timestamp": 5, "input_length": 10, "output_length": 1}),
        ],
    )
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="mc", slo=SLO, trace_start=START)
    assert exc.value.problems[0].loc == "line 2.hash_ids"


def test_generic_csv_cancelled_and_hash_ids_columns(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "g.csv",
        [
            "timestamp,prompt_tokens,output_tokens,tier,cancelled,hash_ids",
            '1700000000,512,5,chat,false,"[7]"',
            "1700000001,1024,5,chat,true,7 8",
            "1700000002,512,5,chat,no,9",
            "1700000003,512,5,chat,0,7",
            "1700000004,300,5,batch,yes,7",
            "1700000005,300,5,batch,1,10",
        ],
    )
    prof = workload_from_trace(path, name="g", slo=SLO, class_by="tier")
    by = {c.name: c for c in prof.classes}
    # cancelled: chat 1 of 4, batch 2 of 2
    assert by["chat"].cancellation_rate == 0.25
    assert by["batch"].cancellation_rate == 1.0
    # chat: line 3 hits block 7 (512), line 5 hits 7 (512): 1024 / (512 + 1024 + 512 + 512)
    assert by["chat"].prefix_cache_share == round(1024 / 2560, 4)
    # batch: line 6 hits 7, capped at its 300-token prompt: 300 / 600
    assert by["batch"].prefix_cache_share == 0.5
    assert by["chat"].unknown == {}


def test_generic_cancelled_column_must_be_a_flag(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "g.csv",
        ["timestamp,prompt_tokens,output_tokens,cancelled", "1700000000,1,1,maybe"],
    )
    with pytest.raises(InvalidInput) as exc:
        workload_from_trace(path, name="g", slo=SLO)
    assert exc.value.problems[0].loc == "line 2.cancelled"


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


def test_zone_less_and_zoned_stamps_mix_as_utc(tmp_path: Path) -> None:
    # Zone-less stamps are UTC: 01:00:02+01:00 is 00:00:02Z, two seconds after the first.
    path = _write(
        tmp_path / "z.csv",
        [
            "timestamp,prompt_tokens,output_tokens",
            "2025-01-01T00:00:00,1,1",
            "2025-01-01T00:00:01,1,1",
            "2025-01-01T01:00:02+01:00,1,1",
            "2025-01-01T00:00:04,1,1",
        ],
    )
    prof = workload_from_trace(path, name="z", slo=SLO)
    assert prof.measurement is not None
    assert prof.measurement.window_start == datetime(2025, 1, 1, tzinfo=UTC)
    assert prof.measurement.window_end == datetime(2025, 1, 1, 0, 0, 4, tzinfo=UTC)
    arrival = prof.classes[0].arrival
    assert arrival.mean_rps == pytest.approx(4 / 4)  # 4 requests over a 4 s span
    # gaps 1, 1, 2 s: mean 4/3, population std sqrt(2)/3, so CV sqrt(2)/4
    assert arrival.interarrival_cv == pytest.approx(2**0.5 / 4)
