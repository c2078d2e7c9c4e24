"""Benchmarks: importing a 100,000-request vLLM --save-detailed file, fitting a 1,000,000-row trace.

Run:  .venv/bin/python -m benchmarks.importers.bench_importers [--requests N] [--rows N] [--write]

Both inputs are generated here with a fixed seed (synthetic, not real data):

* a vLLM ``--save-detailed`` result with N requests: prompt lengths lognormal (median 512),
  output lengths lognormal (median 48, capped at 1024), TTFT 50-400 ms, one inter-token gap
  per output token after the first (so the file holds ~N x 60 gap values), 1 % failures;
* an Azure-format CSV trace (TIMESTAMP with 7 fractional digits, ContextTokens,
  GeneratedTokens) with N rows of bursty (gamma, shape 0.25) arrivals at ~50 req/s.

Time is wall clock for the call alone (the file is read into memory / written beforehand);
peak memory is measured in one more run under tracemalloc (Python allocations, including
numpy's) so that tracing does not distort the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.doc_blocks import (  # noqa: E402
    Measurement,
    add_write_flag,
    publish,
    sqlite_version,
)
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


def measure(fn: Callable[[], object], runs: int) -> tuple[list[float], float]:
    """(seconds of each untraced run, peak MiB of one more run under tracemalloc)."""
    seconds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20


def command_import(data: bytes, runs: int) -> tuple[list[float], float]:
    """``capgate evidence import`` of ``data`` as a fresh process, each run on a fresh local
    SQLite registry holding the example's workload and provider: (wall seconds of each
    run, the largest peak RSS in MiB)."""
    capgate = str(ROOT / ".venv" / "bin" / "capgate")
    seconds, rss_kib = [], 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
            env.update(CAPGATE_DATABASE_URL=f"sqlite:///{folder}/registry.db")
            env.update(XDG_DATA_HOME=str(folder / "data"), CAPGATE_PRINCIPAL="bench")
            subprocess.run([capgate, "db", "upgrade"], env=env, check=True, capture_output=True)
            for kind in ("workload", "provider"):
                path = ROOT / "examples" / "chat-assistant" / f"{kind}.yaml"
                subprocess.run(
                    [capgate, kind, "submit", str(path)], env=env, check=True, capture_output=True
                )
            result = folder / "bench.json"
            result.write_bytes(data)
            command = [
                *(capgate, "evidence", "import", str(result), "--workload", "chat-assistant"),
                *("--provider", "llama31-8b-h100-vllm", "--replicas", "1"),
                *("--class", "interactive"),
            ]
            t0 = time.perf_counter()
            process = subprocess.Popen(
                command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            _, status, usage = os.wait4(process.pid, 0)
            seconds.append(time.perf_counter() - t0)
            if os.waitstatus_to_exitcode(status) != 0:
                error = process.stderr.read().decode() if process.stderr else ""
                sys.exit(f"capgate evidence import failed: {error}")
            rss_kib = max(rss_kib, usage.ru_maxrss)
    return seconds, rss_kib / 1024


def timing(seconds: list[float]) -> str:
    return f"**{statistics.median(seconds):.2f} s** ({min(seconds):.2f} to {max(seconds):.2f})"


BLOCK = "importers"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| case | input | time: median (range) | target | peak memory |"


def main() -> None:
    ap = argparse.ArgumentParser(description="Import and trace-fitting benchmarks.")
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each call")
    ap.add_argument("--command-runs", type=int, default=3, help="runs of the whole command")
    add_write_flag(ap, BLOCK)
    args = ap.parse_args()
    measurement = Measurement(BLOCK)

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

    import_s, import_mib = measure(do_import, args.runs)
    print(f"import: {timing(import_s)}, peak {import_mib:.0f} MiB", file=sys.stderr)

    slo = ClassSLO(
        ttft_p99_ms=2000.0, tpot_p99_ms=100.0, e2e_p99_ms=60000.0, queue_deadline_ms=5000.0
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.csv"
        azure_trace(path, args.rows)
        size = path.stat().st_size

        def do_fit() -> object:
            return fit_trace(path, name="bench-trace", slo=slo)

        fit_s, fit_mib = measure(do_fit, args.runs)
    print(f"fit trace: {timing(fit_s)}, peak {fit_mib:.1f} MiB", file=sys.stderr)
    command_s, command_mib = command_import(data, args.command_runs)

    file_cell = f"{args.requests:,} requests, {len(data) / 2**20:.1f} MiB JSON"
    table = "\n".join(
        [
            HEADER,
            "|---|---|---|---|---|",
            f"| import vLLM `--save-detailed` | {file_cell} | {timing(import_s)} | < 3 s "
            f"| {import_mib:,.0f} MiB under tracemalloc |",
            f"| fit trace | {args.rows:,}-row Azure-format CSV, {size / 2**20:.1f} MiB "
            f"| {timing(fit_s)} | < 10 s | {fit_mib:.1f} MiB under tracemalloc |",
            f"| `capgate evidence import` (fresh process, local SQLite) | the same file "
            f"| {timing(command_s)} | | {command_mib:,.0f} MiB peak RSS |",
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"calls: median of {args.runs} runs (peak memory from one more, traced run); "
            f"the command: median of {args.command_runs} runs, each on a fresh registry",
            [
                f"numpy {np.__version__}",
                f"orjson {version('orjson')}",
                sqlite_version(),
            ],
        )


if __name__ == "__main__":
    main()
