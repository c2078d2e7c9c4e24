"""Writers under contention: N threads submit distinct versions of one series at once.

Each writer has its own `Database` (its own engine and connection, as separate
processes would), waits on a barrier, then submits through `Database.write`. Reports
errors, duplicate and missing version numbers, whether the audit chain verifies, and
p50/p99 write latency, as a markdown table, on SQLite and (when
CAPGATE_TEST_POSTGRES_URL names a role that may create databases) PostgreSQL.

    source /tmp/envrc   # or export CAPGATE_TEST_POSTGRES_URL=postgresql+psycopg://...
    .venv/bin/python -m benchmarks.registry.bench_contention [--writers 32] [--rounds 3] \\
        [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy import select

from benchmarks.doc_blocks import Measurement, add_write_flag, database_versions, publish
from benchmarks.registry.bench_submissions import EXAMPLE, chosen_databases
from registry.audit.chain import verify_chain
from registry.records import service
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind
from registry.storage.database import Database
from registry.storage.models import RecordRow
from registry.wiring import install


@dataclass
class Outcome:
    backend: str
    writes: int
    errors: int
    duplicates: int
    gaps: int
    chain_ok: bool
    p50_ms: float
    p99_ms: float


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run_round(url: str, writers: int, series: str) -> tuple[int, list[float]]:
    install()  # what a submission runs (registry.wiring)
    base = load_document(EXAMPLE)
    barrier = threading.Barrier(writers)

    def writer(index: int) -> float:
        database = Database(url)
        record = validate_record(
            RecordKind.workload, {**base, "name": series, "description": f"writer {index}"}
        )
        database.ensure_schema()
        barrier.wait()
        started = time.perf_counter()
        try:
            database.write(
                lambda ctx: service.submit(ctx, kind=RecordKind.workload, record=record),
                principal=f"writer-{index}",
            )
            return time.perf_counter() - started
        finally:
            database.engine.dispose()

    errors = 0
    latencies: list[float] = []
    with ThreadPoolExecutor(max_workers=writers) as pool:
        for future in [pool.submit(writer, i) for i in range(writers)]:
            try:
                latencies.append(future.result())
            except Exception as exc:  # counted, not fatal: errors are what is measured
                errors += 1
                print(f"  error: {type(exc).__name__}: {exc}", file=sys.stderr)
    return errors, latencies


def measure(backend: str, url: str, writers: int, rounds: int) -> Outcome:
    errors = duplicates = gaps = 0
    latencies: list[float] = []
    for round_index in range(rounds):
        series = f"contention-{round_index}"
        failed, taken = run_round(url, writers, series)
        errors += failed
        latencies += taken
        database = Database(url)
        with database.reading() as session:
            versions = list(
                session.scalars(
                    select(RecordRow.version).where(
                        RecordRow.kind == RecordKind.workload.value, RecordRow.name == series
                    )
                )
            )
        database.engine.dispose()
        duplicates += len(versions) - len(set(versions))
        gaps += (max(versions, default=0) - len(set(versions))) + (writers - failed - len(versions))
    database = Database(url)
    with database.reading() as session:
        chain_ok = verify_chain(session) == []
    database.engine.dispose()
    return Outcome(
        backend=backend,
        writes=writers * rounds,
        errors=errors,
        duplicates=duplicates,
        gaps=gaps,
        chain_ok=chain_ok,
        p50_ms=1000 * statistics.median(latencies) if latencies else float("nan"),
        p99_ms=1000 * percentile(latencies, 0.99) if latencies else float("nan"),
    )


BLOCK = "contention"
# The table's header: tests/docs checks that the page's block has it.
HEADER = (
    "| database | writes | errors | duplicate versions | gaps | audit chain | p50 ms | p99 ms |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=32, help="concurrent writers per series")
    parser.add_argument("--rounds", type=int, default=3, help="series written, one after another")
    parser.add_argument("--runs", type=int, default=3, help="fresh registries; medians reported")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    backends = chosen_databases("both", lambda message: print(message, file=sys.stderr))
    rows = []
    for name, make in backends:
        outcomes = []
        for run_ in range(args.runs):
            print(f"{name}: run {run_ + 1}/{args.runs}", file=sys.stderr)
            with make() as url:
                outcomes.append(measure(name, url, args.writers, args.rounds))
        chain = "intact" if all(o.chain_ok for o in outcomes) else "BROKEN"
        rows.append(
            f"| {name} | {sum(o.writes for o in outcomes)} | {sum(o.errors for o in outcomes)} "
            f"| {sum(o.duplicates for o in outcomes)} | {sum(o.gaps for o in outcomes)} "
            f"| {chain} | {statistics.median(o.p50_ms for o in outcomes):.1f} "
            f"| {statistics.median(o.p99_ms for o in outcomes):.1f} |"
        )
    table = "\n".join(
        [
            f"{args.writers} writers per series, {args.rounds} series per run, "
            f"{args.runs} runs, via `Database.write`; counts are over all runs:",
            "",
            HEADER,
            "|---|---:|---:|---:|---:|---|---:|---:|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"latencies the median of {args.runs} runs' p50 and p99, each run on a fresh registry",
            database_versions(any(name == "PostgreSQL" for name, _ in backends)),
        )


if __name__ == "__main__":
    main()
