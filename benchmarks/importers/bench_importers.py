"""Benchmarks: importing a 100,000-request vLLM --save-detailed file, fitting a 1,000,000-row trace.

Run:  .venv/bin/python benchmarks/importers/bench_importers.py [--requests N] [--rows N]

Both inputs are generated here with a fixed seed (synthetic, not real data):

* a vLLM ``--save-detailed`` result with N requests: prompt lengths lognormal (median 512),
  output lengths lognormal (median 48, capped at 1024), TTFT 50-400 ms, one inter-token gap
  per output token after the first (so the file holds ~N x 60 gap values), 1 % failures;
* an Azure-format CSV trace (TIMESTAMP with 7 fractional digits, ContextTokens,
  GeneratedTokens) with N rows of bursty (gamma, shape 0.25) arrivals at ~50 req/s.

Time is wall clock for the call alone (the file is read into memory / written beforehand);
peak memory is measured in a second run under tracemalloc (Python allocations, including
numpy's) so that tracing does not distort the timing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from registry.importers import import_result_file  # noqa: E402
from registry.records.workload import ClassSLO  # noqa: E402
from registry.traces import fit_trace  # noqa: E402


def vllm_detailed(n: int, seed: int = 7) -> bytes:
    rng = np.random.default_rng(seed)
    prompt = np.clip(rng.lognormal(np.log(512), 0.8, n), 4, 32000).astype(int)
    out = np.clip(rng.lognormal(np.log(48), 0.9, n), 1, 1024).astype(int)
    ttft = rng.uniform(0.05, 0.4, n)
    failed = rng.random(n) < 0.01
    itls = [
        [] if bad else np.round(rng.gamma(4.0, 0.005, k - 1), 6).tolist()
        for k, bad in zip(out, failed, strict=True)
    ]
    doc = {
        "date": "20250301-120000",
        "backend": "vllm",
        "model_id": "synthetic",
        "num_prompts": n,
        "request_rate": 50.0,
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": n / 50.0,
        "completed": int((~failed).sum()),
        "failed": int(failed.sum()),
        "request_throughput": float((~failed).sum()) / (n / 50.0),
        "input_lens": prompt.tolist(),
        "output_lens": np.where(failed, 0, out).tolist(),
        "ttfts": np.where(failed, 0.0, np.round(ttft, 6)).tolist(),
        "itls": itls,
        "start_times": np.round(np.arange(n) / 50.0, 6).tolist(),
        "errors": ["timeout" if bad else "" for bad in failed],
    }
    return json.dumps(doc).encode()


def azure_trace(path: Path, rows: int, seed: int = 11) -> None:
    rng = np.random.default_rng(seed)
    start = datetime(2024, 5, 1, 0, 0, 0)
    t = 0.0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        block = 100_000
        for i in range(0, rows, block):
            k = min(block, rows - i)
            gaps = rng.gamma(0.25, 1 / 50 / 0.25, k)
            prompt = np.clip(rng.lognormal(np.log(1000), 1.0, k), 1, 100_000).astype(int)
            out = np.clip(rng.lognormal(np.log(100), 1.0, k), 1, 8000).astype(int)
            lines = []
            for g, p, o in zip(gaps, prompt, out, strict=True):
                t += float(g)
                ts = start + timedelta(seconds=t)
                lines.append(f"{ts:%Y-%m-%d %H:%M:%S}.{ts.microsecond:06d}0,{p},{o}\n")
            fh.writelines(lines)


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(seconds, peak MiB under tracemalloc) of fn; the timing run is untraced."""
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()

    data = vllm_detailed(args.requests)
    when = datetime(2025, 3, 1, tzinfo=UTC)

    def do_import() -> object:
        return import_result_file(
            data,
            file_name="bench.json",
            workload="w@v1",
            provider="p@v1",
            measured_at=when,
            replicas=1,
        )

    secs, mib = measure(do_import)
    print(
        f"import vLLM --save-detailed: {args.requests} requests, {len(data) / 2**20:.1f} MiB "
        f"file: {secs:.2f} s, peak {mib:.0f} MiB (file bytes held by the caller not counted)"
    )

    slo = ClassSLO(
        ttft_p99_ms=2000.0, tpot_p99_ms=100.0, e2e_p99_ms=60000.0, queue_deadline_ms=5000.0
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.csv"
        azure_trace(path, args.rows)
        size = path.stat().st_size

        def do_fit() -> object:
            return fit_trace(path, name="bench-trace", slo=slo)

        secs, mib = measure(do_fit)
        print(
            f"fit trace: {args.rows} rows, {size / 2**20:.1f} MiB CSV: {secs:.2f} s, "
            f"peak {mib:.1f} MiB"
        )


if __name__ == "__main__":
    main()
