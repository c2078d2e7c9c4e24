"""Where a gate check's CPU goes through the API: the server, the database, the clients.

    .venv/bin/python -m benchmarks.gate.api_profile [--checks 400] [--clients 8]
        [--backend postgresql] [--yappi]

One fresh registry (PostgreSQL, which needs CAPGATE_TEST_POSTGRES_URL; or SQLite), the worked
example registered through the API, then `--checks` checks from `--clients` threads
against one uvicorn process (this module run as `serve`). It prints the CPU
milliseconds a check costs in the server process, in the PostgreSQL backends serving
its database, and in the client threads (this process), and the SQL statements the
server ran in all (registration and warm-up included; a SQLAlchemy listener counts
them). Run builds one after the other on a shared machine: its load moves the figures.

`--yappi`: the server runs under yappi (installed separately: not a dependency) with
its CPU clock, every thread; the functions with most CPU, inclusive, are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from benchmarks.gate.bench_decisions import api_checks, register_example
from benchmarks.gate.cpu import _backends, _stat
from benchmarks.registry.bench_submissions import (
    ApiServer,
    chosen_databases,
    free_port,
    wait_ready,
)

# Functions whose inclusive CPU is printed under --yappi (a substring of yappi's full name).
WATCHED = (
    "registry/api/gate.py:",
    "registry/gate/service.py:",
    "Guard.check_decision",
    "Guard.check_append",
    "Database.write",
    "Database.reading",
    "Authenticator.authenticate",
    "authenticate_token",
    "get_identity",
    "serialize_response",
    "solve_dependencies",
    "request_body_to_args",
    "EmbeddedEngine.decide",
    "signed_attestation",
    "decision_view",
    "gate_input",
    "append_event",
    "release_for_decision",
    "_previous_decision",
    "PlanContexts.read",
    "Session.commit",
    "Session.close",
    "Session.rollback",
    "pool",
    "httptools_impl",
    "h11_impl",
    "JSONResponse.render",
)


def _cpu(pids: set[int]) -> float:
    return sum(stat[1] for pid in pids if (stat := _stat(pid)) is not None)


def serve(port: int, count: str, out: str | None) -> None:
    """One uvicorn process on the app, counting its statements; under yappi with `out`."""
    import uvicorn
    from sqlalchemy import event

    from registry.api.server import app

    statements = [0]

    @event.listens_for(app.state.database.engine, "before_cursor_execute")
    def _count(*_: object) -> None:
        statements[0] += 1

    if out:
        import yappi

        yappi.set_clock_type("cpu")
        yappi.start(builtins=False)

    def dump(*_: object) -> None:
        Path(count).write_text(str(statements[0]))
        if out:
            yappi.stop()
            stats = yappi.get_func_stats()
            rows = [
                (s.full_name, s.ttot, s.tsub, s.ncall)
                for s in stats
                if s.ttot > 0.0005 or any(w in s.full_name for w in WATCHED)
            ]
            Path(out).write_text(json.dumps(rows))
        os._exit(0)

    signal.signal(signal.SIGTERM, dump)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    server.run()


@contextmanager
def profiled_server(url: str, count: str, out: str | None) -> Iterator[ApiServer]:
    from registry.auth.identity import ALL_ROLES
    from registry.auth.tokens import TokenRequest, create_token
    from registry.storage.database import Database

    request = TokenRequest(
        subject="bench",
        roles=ALL_ROLES,
        teams=frozenset({"team-assistant@example.com"}),
        lifetime=timedelta(hours=2),
    )
    database = Database(url)
    token = database.write(lambda ctx: create_token(ctx, request), principal="bench").token
    database.engine.dispose()
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.gate.api_profile", "serve", str(port), count]
    command += [out] if out else []
    process = subprocess.Popen(command, env=dict(os.environ, CAPGATE_DATABASE_URL=url))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process, 60)
        yield ApiServer(base, {"Authorization": f"Bearer {token}"}, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="postgresql")
    parser.add_argument("--yappi", action="store_true", help="profile the server's CPU")
    args = parser.parse_args()
    databases = chosen_databases(args.backend, lambda m: print(m, file=sys.stderr))
    if not databases:
        sys.exit("no database to profile on")
    label, database = databases[0]
    folder = tempfile.mkdtemp(prefix="capgate-profile-")
    out = str(Path(folder) / "yappi.json") if args.yappi else None
    counted = Path(folder) / "statements"
    with database() as url, profiled_server(url, str(counted), out) as server:
        register_example(server)
        api_checks(server, 4 * args.clients, args.clients)  # warm: the chain walked
        load = os.getloadavg()[0]
        backends = _backends(url)
        server_before, db_before = _cpu({server.pid}), _cpu(backends)
        times = os.times()
        rate, p50, p99, _ = api_checks(server, args.checks, args.clients)
        after = os.times()
        server_cpu = _cpu({server.pid}) - server_before
        db_cpu = _cpu(backends | _backends(url)) - db_before
    n = args.checks // args.clients * args.clients
    client_cpu = after.user + after.system - times.user - times.system
    print(
        f"{label}, 1 uvicorn process, {args.clients} clients, {n} checks, load {load:.1f}: "
        f"{rate:.1f}/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms"
    )
    print(
        f"CPU ms a check: server {server_cpu * 1000 / n:.1f}, database backends "
        f"{db_cpu * 1000 / n:.1f}, clients {client_cpu * 1000 / n:.1f}"
    )
    if counted.exists():
        total_statements = int(counted.read_text())
        print(f"statements the server ran (the whole run, warm-up included): {total_statements}")
    if out and Path(out).exists():
        rows = json.loads(Path(out).read_text())
        print("function | CPU s inclusive | CPU s exclusive | calls")
        for name, ttot, tsub, ncall in sorted(rows, key=lambda r: -r[1])[:60]:
            print(f"{name[-110:]} | {ttot:.3f} | {tsub:.3f} | {ncall}")


if __name__ == "__main__":
    main()
