"""Submissions per second through the REST API, on SQLite and on PostgreSQL.

Starts a real `uvicorn` server process on loopback against a fresh, migrated database,
then submits distinct workload versions from several client threads over HTTP and
reports throughput and latency percentiles. PostgreSQL runs when
CAPGATE_TEST_POSTGRES_URL names a role that may create databases.

    .venv/bin/python -m benchmarks.registry.bench_submissions [--requests 600] [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError

from benchmarks.doc_blocks import Measurement, add_write_flag, database_versions, publish
from registry.records.documents import load_document
from registry.storage import migrate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant" / "workload.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        migrate.upgrade(url)
        yield url


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"capgate_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        _drop(admin, name)
        admin.dispose()


def _drop(admin: Engine, name: str) -> None:
    """Drop the benchmark's database. Right after a bulk load an autovacuum worker may hold
    it, which a role without pg_signal_backend cannot end (FORCE then fails): retry for a
    while, then say what is left rather than lose the measurement."""
    for attempt in range(10):
        try:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except DBAPIError as exc:
            error = exc
            time.sleep(1 + attempt)
    print(f"could not drop database {name} ({error.orig}); drop it by hand", file=sys.stderr)


def chosen_databases(
    choice: str, progress: Callable[[str], None]
) -> list[tuple[str, Callable[[], AbstractContextManager[str]]]]:
    """The databases a benchmark runs on (``--backend sqlite|postgresql|both``), each a
    throwaway migrated registry; PostgreSQL only where CAPGATE_TEST_POSTGRES_URL names a
    server, else said on stderr through ``progress``."""
    backends: list[tuple[str, Callable[[], AbstractContextManager[str]]]] = []
    if choice in ("sqlite", "both"):
        backends.append(("SQLite", sqlite_database))
    admin = os.environ.get("CAPGATE_TEST_POSTGRES_URL")
    if choice in ("postgresql", "both"):
        if admin:
            backends.append(("PostgreSQL", lambda: postgres_database(admin)))
        else:
            progress("PostgreSQL skipped: CAPGATE_TEST_POSTGRES_URL is not set")
    return backends


@dataclass(frozen=True)
class ApiServer:
    url: str
    headers: dict[str, str]  # an API token with every role
    pid: int = 0  # the server's main process (its workers are its children)


@contextmanager
def api_server(database_url: str, workers: int) -> Iterator[ApiServer]:
    from datetime import timedelta

    from registry.auth.identity import ALL_ROLES
    from registry.auth.tokens import TokenRequest, create_token
    from registry.storage.database import Database

    port = free_port()
    request = TokenRequest(
        subject="bench",
        roles=ALL_ROLES,
        teams=frozenset({"team-assistant@example.com"}),
        lifetime=timedelta(hours=2),
    )
    database = Database(database_url)
    token = database.write(lambda ctx: create_token(ctx, request), principal="bench").token
    database.engine.dispose()
    env = dict(os.environ, CAPGATE_DATABASE_URL=database_url)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "registry.api.server:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process, 30)
        yield ApiServer(base, {"Authorization": f"Bearer {token}"}, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_ready(base: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    """Until the server at `base` answers /readyz, or RuntimeError when it exits or
    `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("API server did not become ready")
        time.sleep(0.1)


def run(server: ApiServer, requests: int, clients: int) -> dict[str, float]:
    template = load_document(EXAMPLE)
    per_client = requests // clients

    def client(index: int) -> list[float]:
        latencies = []
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=30) as http:
            for i in range(per_client):
                # Half the submissions extend one shared series (version races between
                # clients), half start new series.
                name = "bench-shared" if i % 2 else f"bench-{index}-{i}"
                document: dict[str, Any] = dict(
                    template, name=name, description=f"client {index} rev {i}"
                )
                start = time.perf_counter()
                response = http.post("/v1/workloads", json=document)
                latencies.append(time.perf_counter() - start)
                if response.status_code != 201:
                    raise RuntimeError(f"unexpected {response.status_code}: {response.text}")
        return latencies

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        latencies = [x for chunk in pool.map(client, range(clients)) for x in chunk]
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "submissions": len(latencies),
        "per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
    }


BLOCK = "submissions"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| database | server workers | clients | submissions | per second | p50 ms | p99 ms |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--runs", type=int, default=3, help="fresh registries; medians reported")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    backends = chosen_databases("both", lambda message: print(message, file=sys.stderr))
    rows = []
    for label, make in backends:
        results = []
        for run_ in range(args.runs):
            print(f"{label}: run {run_ + 1}/{args.runs}", file=sys.stderr)
            with make() as url, api_server(url, args.workers) as server:
                results.append(run(server, args.requests, args.clients))
        median = {key: statistics.median(r[key] for r in results) for key in results[0]}
        rows.append(
            f"| {label} | {args.workers} | {args.clients} | {median['submissions']:.0f} | "
            f"{median['per_second']:.0f} | {median['p50_ms']:.1f} | {median['p99_ms']:.1f} |"
        )
    table = "\n".join(
        [
            HEADER,
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"median of {args.runs} runs, each on a fresh registry",
            database_versions(any(label == "PostgreSQL" for label, _ in backends)),
        )


if __name__ == "__main__":
    main()
