"""Gate decision latency on both engines, decisions per second through the API, and one
`capgate gate check` beside `opa eval` of the same policies and input.

    .venv/bin/python -m benchmarks.gate.bench_decisions [--decisions 500] [--api-checks 200]

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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.registry.bench_submissions import ApiServer, api_server, sqlite_database
from registry.policy.bundle import policies_root
from registry.policy.dual import DualEngine
from registry.policy.embedded import EmbeddedEngine
from registry.policy.opa_server import OpaServerEngine
from tests.support.opa_server import running_opa

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chat-assistant"
INPUT = ROOT / "tests" / "gate" / "inputs" / "compliant.json"
CACHED_OPA = Path.home() / ".cache" / "capgate" / "opa-v1.22.3" / "bin" / "opa"


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


def api_checks(server: ApiServer, total: int, clients: int) -> tuple[float, float, float]:
    per_client = total // clients

    def client(_: int) -> list[float]:
        out = []
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http:
            for _ in range(per_client):
                start = time.perf_counter()
                response = http.post("/v1/gate/checks", json={"plan": "chat-assistant-prod"})
                out.append(time.perf_counter() - start)
                if response.json()["outcome"] != "allow":
                    raise RuntimeError(response.text)
        return out

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        samples = [s for chunk in pool.map(client, range(clients)) for s in chunk]
    elapsed = time.perf_counter() - start
    p50, p99 = percentiles(samples)
    return len(samples) / elapsed, p50, p99


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=500)
    parser.add_argument("--api-checks", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    binary = Path(os.environ.get("CAPGATE_OPA_BINARY") or CACHED_OPA)
    document = json.loads(INPUT.read_text())

    print("| engine | decisions | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    embedded = EmbeddedEngine()
    p50, p99 = percentiles(time_calls(lambda: embedded.decide(document), args.decisions))
    print(f"| embedded (OPA's Wasm) | {args.decisions} | {p50:.2f} | {p99:.2f} |")
    with running_opa(binary) as url:
        opa = OpaServerEngine(url)
        p50, p99 = percentiles(time_calls(lambda: opa.decide(document), args.decisions))
        print(f"| OPA server (opa-python-client) | {args.decisions} | {p50:.2f} | {p99:.2f} |")
        both = DualEngine(embedded, opa)
        p50, p99 = percentiles(time_calls(lambda: both.decide(document), args.decisions))
        print(f"| both (embedded and OPA, compared) | {args.decisions} | {p50:.2f} | {p99:.2f} |")
        opa.close()

    with (
        tempfile.TemporaryDirectory() as folder,
        sqlite_database() as url,
        api_server(url, workers=2) as server,
    ):
        register_example(server)
        rate, p50, p99 = api_checks(server, args.api_checks, args.clients)
        print()
        print(
            "| through the API (SQLite, 2 workers, embedded engine) | checks | per second "
            "| p50 ms | p99 ms |"
        )
        print("|---|---|---|---|---|")
        print(f"| POST /v1/gate/checks | {args.api_checks} | {rate:.1f} | {p50:.1f} | {p99:.1f} |")

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
        print()
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


if __name__ == "__main__":
    main()
