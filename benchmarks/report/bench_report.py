"""How long a report takes and how large it is, for a 50-replica plan with 20 evidence records.

    .venv/bin/python -m benchmarks.report.bench_report [--runs 5] [--evidence 20] \\
        [--keep FILE] [--write]

A throwaway SQLite registry (migrated as `capgate db upgrade` does) holds the worked
example's workload with ten times its traffic (mean 220, peak 510 req/s), its provider, a
plan of 50 ready replicas in three zones (17/17/16) and 20 evidence records measured against
them (declared, from examples/chat-assistant/evidence.yaml, each with its own latencies;
three older than the 90-day limit, so stale with a reason), then one gate check (the
planner runs once, calibrated on the fresh evidence; the decision is stored). Then, timed:

- in process, ``gather`` (one read transaction) plus the charts and the Jinja2 rendering,
  median of ``--runs`` after one warm-up run (which compiles the templates);
- ``capgate report PLAN --output FILE`` as a fresh process, wall time, median of ``--runs``;

and the file's size. Targets (issue 15): under 1 s and under 2 MB.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from benchmarks.doc_blocks import Measurement, add_write_flag, publish, sqlite_version

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chat-assistant"
PLAN = "bench-50-replicas"
BLOCK = "report"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| measure | median | range | target |"


def documents(evidence: int) -> list[tuple[str, dict[str, Any]]]:
    """The records to submit, in order."""
    workload = yaml.safe_load((EXAMPLE / "workload.yaml").read_text())
    for traffic_class in workload["classes"]:
        arrival = traffic_class["arrival"]
        arrival["mean_rps"] *= 10
        arrival["peak_rps"] *= 10
    provider = yaml.safe_load((EXAMPLE / "provider.yaml").read_text())
    plan = yaml.safe_load((EXAMPLE / "plan.yaml").read_text())
    plan["name"] = PLAN
    plan["replicas_per_zone"] = {"us-east1-b": 17, "us-east1-c": 17, "us-east1-d": 16}
    plan["autoscaling"].update(min_replicas=50, max_replicas=80)
    plan["reserve"]["reserve_replicas"] = 10
    plan["claims"].update(peak_rps=510, ready_replicas_needed_at_peak=40)
    out: list[tuple[str, dict[str, Any]]] = [
        ("workload", workload),
        ("provider", provider),
        ("plan", plan),
    ]
    base = yaml.safe_load((EXAMPLE / "evidence.yaml").read_text())
    now = datetime.now(UTC)
    for i in range(evidence):
        record = copy.deepcopy(base)
        record["name"] = f"bench-evidence-{i:02d}"
        record["measured_against"]["plan"] = f"{PLAN}@v1"
        record["raw_file"]["sha256"] = "sha256:" + f"{i:02x}" * 32
        # Three tests older than the 90-day limit: stale, with their reason.
        age = timedelta(days=100 + i) if i < 3 else timedelta(days=1 + i)
        record["measured_at"] = (now - age).strftime("%Y-%m-%dT%H:%M:%SZ")
        factor = 1 + 0.01 * i
        for result in record["results"]["per_class"].values():
            for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
                if metric in result:
                    quantiles = result[metric]["quantiles"]
                    result[metric]["quantiles"] = {
                        k: round(v * factor, 3) for k, v in quantiles.items()
                    }
                    if "mean" in result[metric]:
                        result[metric]["mean"] = round(result[metric]["mean"] * factor, 3)
        out.append(("evidence", record))
    return out


def register(url: str, evidence: int) -> str:
    """Submit the records and run one gate check; the decision's id."""
    from registry.gate.engine_factory import engine_for
    from registry.gate.service import check
    from registry.records import service
    from registry.records.documents import validate_record
    from registry.records.kinds import RecordKind
    from registry.settings import Settings
    from registry.staleness.thresholds import load_thresholds
    from registry.storage.database import Database, WriteContext
    from registry.wiring import install

    install()  # what submissions and decisions run (registry.wiring)
    database = Database(url)
    for kind, document in documents(evidence):
        record_kind = RecordKind(kind)
        record = validate_record(record_kind, document, source=f"{kind}.yaml")

        def write(ctx: WriteContext, k: RecordKind = record_kind, r: Any = record) -> Any:
            return service.submit(ctx, kind=k, record=r)

        database.write(write, principal="bench")
    start = time.perf_counter()
    decision = check(
        database,
        engine_for(Settings.from_env()),
        plan_ref=PLAN,
        principal="bench",
        limits=load_thresholds(),
    )
    print(
        f"setup: gate check (planner run, calibrated, decision stored) "
        f"{time.perf_counter() - start:.1f} s: {decision.verdict()}",
        file=sys.stderr,
    )
    database.engine.dispose()
    return decision.id


def in_process(url: str, runs: int) -> tuple[list[float], float, str]:
    """(run times, the first run's time, the HTML)."""
    from registry.report.data import gather
    from registry.report.render import render_report
    from registry.staleness.thresholds import load_thresholds
    from registry.storage.database import Database

    database = Database(url)
    limits = load_thresholds()

    def once() -> str:
        data = gather(database, plan_ref=PLAN, now=datetime.now(UTC), limits=limits)
        return render_report(data)

    start = time.perf_counter()
    html = once()
    first = time.perf_counter() - start
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        html = once()
        samples.append(time.perf_counter() - start)
    database.engine.dispose()
    return samples, first, html


def as_process(url: str, runs: int, output: Path) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env["CAPGATE_DATABASE_URL"] = url
    command = [str(ROOT / ".venv" / "bin" / "capgate"), "report", PLAN, "--output", str(output)]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        samples.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit(f"capgate report failed: {result.stderr}")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--evidence", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="Also write the report here.")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    for name in ("CAPGATE_POLICY_ENGINE", "CAPGATE_OPA_URL", "CAPGATE_SERVER"):
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory() as folder:
        # The signing key and anything else of the user's data directory: throwaway.
        os.environ["XDG_DATA_HOME"] = str(Path(folder) / "data")
        url = f"sqlite:///{folder}/bench.db"
        from registry.storage import migrate

        migrate.upgrade(url)
        register(url, args.evidence)
        samples, first, html = in_process(url, args.runs)
        output = Path(folder) / "report.html"
        processes = as_process(url, args.runs, output)
        size = output.stat().st_size
        if args.keep:
            args.keep.write_text(output.read_text(encoding="utf-8"), encoding="utf-8")
    first_ms = f"{first:.3f}"
    table = "\n".join(
        [
            f"A 50-replica plan with {args.evidence} evidence records, the report of its "
            "stored decision:",
            "",
            HEADER,
            "|---|---|---|---|",
            f"| read, charts and rendering, in process (the first run, compiling the "
            f"templates: {first_ms} s) | {statistics.median(samples):.3f} s "
            f"| {min(samples):.3f} to {max(samples):.3f} s | < 1 s |",
            f"| `capgate report PLAN --output FILE`, a fresh process "
            f"| {statistics.median(processes):.3f} s | {min(processes):.3f} to "
            f"{max(processes):.3f} s | |",
            f"| file size ({html.count('<svg')} charts) | {size / 1024:,.0f} KiB | | < 2 MB |",
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"median of {args.runs} runs after one warm-up run",
            [sqlite_version()],
        )


if __name__ == "__main__":
    main()
