"""Gate decision latency on both engines, decisions per second through the API, and one
`capgate gate check` beside `opa eval` of the same policies and input.

    .venv/bin/python -m benchmarks.gate.bench_decisions [--decisions 500] [--api-checks 400]
        [--clients 8] [--workers 2] [--runs 3] [--backend both] [--only-api] [--write-doc]

The API part runs `POST /v1/gate/checks` from `--clients` threads against `--workers`
uvicorn processes on a fresh registry per database (SQLite, and PostgreSQL where
CAPGATE_TEST_POSTGRES_URL names a role that may create databases), with everything a
production check does: the quarantine (integrity check), the decision signed and stored
with its audit event. Then it profiles checks in this process on the same registry,
stage by stage (benchmarks.gate.check_profile). `--write-doc` puts the tables into
docs/production.md between its generated markers.

Needs the OPA binary (CAPGATE_OPA_BINARY or the scripts/ci/opa.sh cache).
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.gate.check_profile import Profile, profile_checks
from benchmarks.gate.cpu import CpuMeter
from benchmarks.machine import reference_note, reference_seconds
from benchmarks.registry.bench_submissions import (
    ApiServer,
    api_server,
    chosen_databases,
    sqlite_database,
)
from registry.policy.bundle import policies_root
from registry.policy.dual import DualEngine
from registry.policy.embedded import EmbeddedEngine
from registry.policy.opa_server import OpaServerEngine
from tests.support.opa_server import running_opa

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chat-assistant"
INPUT = ROOT / "tests" / "gate" / "inputs" / "compliant.json"
CACHED_OPA = Path.home() / ".cache" / "capgate" / "opa-v1.22.3" / "bin" / "opa"
DOC = ROOT / "docs" / "production.md"
START, END = "<!-- generated: gate throughput -->", "<!-- end generated: gate throughput -->"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.99 * (len(ordered) - 1))] * 1000


def time_calls(call: Callable[[], Any], n: int) -> list[float]:
    call()  # warm: build the bundle, open the connection
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def register_example(server: ApiServer) -> None:
    """The worked example through the API, its load test imported as a pipeline would."""
    load_test = EXAMPLE / "load-test"
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http:
        for kind, collection in (
            ("workload", "workloads"),
            ("provider", "providers"),
            ("plan", "plans"),
        ):
            document = yaml.safe_load((EXAMPLE / f"{kind}.yaml").read_text())
            http.post(f"/v1/{collection}", json=document).raise_for_status()
        classes = ("interactive", "batch")
        http.post(
            "/v1/evidence/import",
            data={
                "workload": "chat-assistant",
                "provider": "llama31-8b-h100-vllm",
                "plan": "chat-assistant-prod",
                "replicas": "1",
                "measured_at": (datetime.now(UTC) - timedelta(days=6)).isoformat(),
                "traffic_class": [f"{c}={c}.profile_export_aiperf.json" for c in classes],
            },
            files=[
                (
                    "files",
                    (
                        f"{c}.profile_export_aiperf.json",
                        (load_test / f"{c}.profile_export_aiperf.json").read_bytes(),
                        "application/json",
                    ),
                )
                for c in classes
            ],
        ).raise_for_status()
        # The first check runs the planner once; later checks reuse the stored result.
        http.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"}).raise_for_status()


def api_checks(
    server: ApiServer, total: int, clients: int, meter: CpuMeter | None = None
) -> tuple[float, float, float, float]:
    """`total` checks from `clients` threads, each with its own connection: (checks per
    second, p50 ms, p99 ms, CPU ms a check of the server and its database's backends,
    0 where not measured). A check that does not allow stops the benchmark."""
    per_client = total // clients

    def client(_: int) -> list[float]:
        out = []
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=120) as http:
            for _ in range(per_client):
                start = time.perf_counter()
                response = http.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
                out.append(time.perf_counter() - start)
                if response.status_code != 200 or response.json()["outcome"] != "allow":
                    raise RuntimeError(response.text)
        return out

    cpu_before = meter.read() if meter else {}
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        samples = [s for chunk in pool.map(client, range(clients)) for s in chunk]
    elapsed = time.perf_counter() - start
    cpu = CpuMeter.spent(cpu_before, meter.read()) if meter else 0.0
    p50, p99 = percentiles(samples)
    return len(samples) / elapsed, p50, p99, cpu * 1000 / len(samples)


@dataclass(frozen=True)
class ApiResult:
    database: str
    workers: int
    clients: int
    checks: int
    runs: list[tuple[float, float, float, float]]  # (per second, p50, p99, CPU ms) per run
    load: tuple[float, float]  # 1-minute load average before the first and after the last
    profile: Profile

    def median(self, index: int) -> float:
        return statistics.median(run[index] for run in self.runs)


def api_benchmark(
    label: str,
    database: Callable[[], AbstractContextManager[str]],
    *,
    workers: int,
    clients: int,
    checks: int,
    runs: int,
    profiled: int,
) -> ApiResult:
    """`runs` rounds of `checks` checks through one server on a fresh registry, then
    `profiled` checks in this process on the same registry, stage by stage."""
    with database() as url:
        with api_server(url, workers=workers) as server:
            register_example(server)
            api_checks(server, 4 * clients, clients)  # every worker has walked the chain
            load_before = os.getloadavg()[0]
            meter = CpuMeter(server.pid, url)
            results = [api_checks(server, checks, clients, meter) for _ in range(runs)]
            load_after = os.getloadavg()[0]
        profile = profile_checks(url, "chat-assistant-prod", profiled)
    return ApiResult(label, workers, clients, checks, results, (load_before, load_after), profile)


def api_tables(results: list[ApiResult]) -> str:
    """The throughput table and each database's per-stage table, as Markdown."""
    lines = [
        "| database | uvicorn workers | clients | checks per run | runs | per second "
        "| p50 ms | p99 ms | CPU ms a check (server and database) | load average (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cpu = f"{r.median(3):.1f}" if r.median(3) else "not measured"
        lines.append(
            f"| {r.database} | {r.workers} | {r.clients} | {r.checks} | {len(r.runs)} "
            f"| {r.median(0):.1f} | {r.median(1):.1f} | {r.median(2):.1f} | {cpu} "
            f"| {r.load[0]:.1f} to {r.load[1]:.1f} |"
        )
    for r in results:
        p = r.profile
        lines += [
            "",
            f"One check on {r.database}, stage by stage ({p.checks} checks in one process, "
            f"one after another; median {p.median_ms:.1f} ms a check, of which "
            f"{p.median_cpu_ms:.1f} ms CPU in the checking process):",
            "",
            "| stage | ms per check | share | SQL statements |",
            "|---|---|---|---|",
        ]
        for stage, ms, share, statements in p.rows():
            lines.append(f"| {stage} | {ms:.2f} | {share:.0%} | {statements:.1f} |")
        statements = sum(row[3] for row in p.rows())
        lines.append(f"| **all** | {sum(row[1] for row in p.rows()):.2f} | | {statements:.1f} |")
    return "\n".join(lines)


def write_doc(section: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    DOC.write_text(f"{before}{START}\n{section}\n{END}{after}", encoding="utf-8")


def engine_table(decisions: int, binary: Path) -> None:
    document = json.loads(INPUT.read_text())
    print("| engine | decisions | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    embedded = EmbeddedEngine()
    p50, p99 = percentiles(time_calls(lambda: embedded.decide(document), decisions))
    print(f"| embedded (OPA's Wasm) | {decisions} | {p50:.2f} | {p99:.2f} |")
    with running_opa(binary) as url:
        opa = OpaServerEngine(url)
        p50, p99 = percentiles(time_calls(lambda: opa.decide(document), decisions))
        print(f"| OPA server (opa-python-client) | {decisions} | {p50:.2f} | {p99:.2f} |")
        both = DualEngine(embedded, opa)
        p50, p99 = percentiles(time_calls(lambda: both.decide(document), decisions))
        print(f"| both (embedded and OPA, compared) | {decisions} | {p50:.2f} | {p99:.2f} |")
        opa.close()


def command_table(binary: Path) -> None:
    document = json.loads(INPUT.read_text())
    with (
        tempfile.TemporaryDirectory() as folder,
        sqlite_database() as url,
        api_server(url, workers=1) as server,
    ):
        register_example(server)
        env = dict(os.environ, CAPGATE_DATABASE_URL=url)
        env.pop("CAPGATE_SERVER", None)
        capgate = [str(ROOT / ".venv" / "bin" / "capgate"), "gate", "check", "chat-assistant-prod"]
        input_file = Path(folder) / "input.json"
        input_file.write_text(json.dumps(document))
        opa_eval = [
            str(binary),
            "eval",
            "--format",
            "raw",
            "-d",
            str(policies_root()),
            "-i",
            str(input_file),
            "data.capgate.gate.decision.allow",
        ]
        print("| one command, wall time | runs | median s |")
        print("|---|---|---|")
        for label, command in (
            ("capgate gate check (local registry, embedded)", capgate),
            ("opa eval (same policies, same input)", opa_eval),
        ):
            runs = []
            for _ in range(5):
                start = time.perf_counter()
                result = subprocess.run(
                    command, env=env, capture_output=True, text=True, check=False
                )
                runs.append(time.perf_counter() - start)
                if result.returncode != 0:
                    sys.exit(f"{label} failed: {result.stderr}")
            print(f"| {label} | {len(runs)} | {statistics.median(runs):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=500, help="engine decisions timed")
    parser.add_argument("--api-checks", type=int, default=400, help="checks per API run")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--runs", type=int, default=3, help="API runs (medians reported)")
    parser.add_argument("--profile-checks", type=int, default=50)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--only-api", action="store_true", help="skip the engine and one-command tables"
    )
    parser.add_argument(
        "--write-doc",
        action="store_true",
        help=f"rewrite the generated throughput section of {DOC.relative_to(ROOT)}",
    )
    args = parser.parse_args()
    binary = Path(os.environ.get("CAPGATE_OPA_BINARY") or CACHED_OPA)

    if not args.only_api:
        engine_table(args.decisions, binary)
        print()
    reference = reference_seconds()
    results = [
        api_benchmark(
            label,
            database,
            workers=args.workers,
            clients=args.clients,
            checks=args.api_checks,
            runs=args.runs,
            profiled=args.profile_checks,
        )
        for label, database in chosen_databases(args.backend, lambda m: print(m, file=sys.stderr))
    ]
    tables = api_tables(results)
    print(tables)
    if args.write_doc:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d")
        write_doc(
            f"Generated by `python -m benchmarks.gate.bench_decisions --only-api --write-doc "
            f"--workers {args.workers} --clients {args.clients} --api-checks {args.api_checks} "
            f"--runs {args.runs}` on {stamp}, {os.cpu_count()} cores, "
            f"{reference_note(reference)}; medians of the runs:\n\n" + tables
        )
    if not args.only_api:
        print()
        command_table(binary)


if __name__ == "__main__":
    main()
