"""The quarantine check's cost per gate check at N audit events (default 1,000,000), on
SQLite and (when CAPGATE_TEST_POSTGRES_URL names a role that may create databases)
PostgreSQL.

The registry is migrated as `capgate db upgrade` does, then filled in bulk with a valid
hash chain: 1,000 plan versions (`plan.submit` events recording their record rows),
then decisions, each written with the `gate.check` event that records it, as the gate
writes them, until the chain holds N events. Decisions carry a short input (0.2 KB,
not the 6.8 KB of a real gate input: the fingerprint scan reads every row, so its time
grows with the bytes stored; see --input-bytes).

Measured through `Guard.check_registry` (registry.audit.integrity), the step every gate
check now runs before it decides:

- first: a process's first check (walks the whole chain, checks every row: what
  `capgate audit verify` costs; once per process);
- steady, sweep every check (the default): one decision written (with its event,
  through `Database.write`) before each check, as between two gate checks of a server:
  the new event and row verified, plus one fingerprint scan per covered table;
- steady, sweep not due (CAPGATE_QUARANTINE_SWEEP_S spacing the sweeps out): the same
  without the scans;
- sweep alone: the scans.

    .venv/bin/python -m benchmarks.registry.bench_quarantine [--events 1000000] [--runs 7] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine, insert
from sqlalchemy.engine import Engine

from benchmarks.doc_blocks import Measurement, add_write_flag, database_versions, publish
from benchmarks.registry.bench_submissions import chosen_databases
from registry.audit import rows as R
from registry.audit.chain import GENESIS, event_body, event_hash
from registry.audit.integrity.guard import guard_for
from registry.audit.integrity.sweep import SWEEP_ENV
from registry.digest import canonical_json, sha256_digest
from registry.storage.database import Database, WriteContext
from registry.storage.fingerprints import fingerprints
from registry.storage.models import AuditEventRow, DecisionRow, RecordRow

START = datetime(2026, 1, 1, tzinfo=UTC)
PLANS = 1000
BATCH = 20_000


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Chain:
    """Events appended in memory with the hash rule of registry.audit.chain."""

    def __init__(self) -> None:
        self.seq, self.head = 0, GENESIS

    def event(self, at: datetime, action: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        digest = event_hash(self.head, event_body(self.seq, at, "bench", action, payload))
        row = {
            "seq": self.seq,
            "at": at,
            "principal": "bench",
            "action": action,
            "payload": canonical_json(payload),
            "prev_hash": self.head,
            "hash": digest,
        }
        self.head = digest
        return row


def load(engine: Engine, events: int, input_bytes: int) -> None:
    chain = Chain()
    plan_events, plans = [], []
    for i in range(PLANS):
        content = canonical_json({"name": f"plan-{i:04d}", "replicas": i})
        row = SimpleNamespace(
            id=i + 1,
            kind="plan",
            name=f"plan-{i // 5:03d}",
            version=i % 5 + 1,
            digest=sha256_digest(content.encode()),
            content=content,
            created_at=START,
            created_by="bench",
            reverts_version=None,
        )
        plans.append(vars(row))
        entry = R.record_entry(row, refs={})
        plan_events.append(
            chain.event(
                START, "plan.submit", {"ref": f"{row.name}@v{row.version}", "rows": [entry]}
            )
        )
    with engine.begin() as connection:
        connection.execute(insert(RecordRow), plans)
        connection.execute(insert(AuditEventRow), plan_events)
    document = canonical_json({"plan": "plan-000@v1", "padding": "x" * max(0, input_bytes - 40)})
    step = timedelta(seconds=365 * 86400 / events)
    remaining = events - PLANS
    for start in range(0, remaining, BATCH):
        decisions, rows = [], []
        for i in range(start, min(remaining, start + BATCH)):
            at = (START + step * i).replace(microsecond=0)
            decision = SimpleNamespace(
                id=str(uuid.UUID(int=i, version=4)),
                plan_record_id=i % PLANS + 1,
                plan_name=f"plan-{(i % PLANS) // 5:03d}",
                outcome="allow",
                engine="embedded",
                bundle_revision="sha256:" + "0" * 64,
                policy_release=None,
                input_digest="sha256:" + "1" * 64,
                input=document,
                violations="[]",
                waivers='{"used":[],"waived":[]}',
                warnings="[]",
                error=None,
                principal="release-bot",
                created_at=at,
            )
            decisions.append(vars(decision))
            rows.append(
                chain.event(
                    at,
                    "gate.check",
                    {"decision": decision.id, "rows": [R.decision_entry(decision)]},
                )
            )
        with engine.begin() as connection:
            connection.execute(insert(DecisionRow), decisions)
            connection.execute(insert(AuditEventRow), rows)
        progress(f"  loaded {PLANS + min(remaining, start + BATCH):,} / {events:,} events")


def one_decision(database: Database) -> None:
    """A decision and its event, written as the gate writes them."""

    def work(ctx: WriteContext) -> None:
        row = DecisionRow(
            id=str(uuid.uuid4()),
            plan_record_id=1,
            plan_name="plan-000",
            outcome="deny",
            engine="embedded",
            bundle_revision="sha256:" + "0" * 64,
            input_digest="none",
            input="{}",
            violations="[]",
            waivers='{"used":[],"waived":[]}',
            warnings="[]",
            error=None,
            principal=ctx.principal,
            created_at=ctx.now,
        )
        ctx.session.add(row)
        R.settle(ctx.session, row)
        ctx.record_event("gate.check", {"decision": row.id, "rows": [R.decision_entry(row)]})

    database.write(work, principal="release-bot")


def timed(call: Callable[[], Any]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def measure(url: str, runs: int) -> dict[str, list[float]]:
    database = Database(url)
    guard = guard_for(database)
    out: dict[str, list[float]] = {"first": [timed(lambda: guard.check_registry(database))]}
    steady, spaced, scans = "steady: sweep every check", "steady: sweep not due", "sweep alone"
    out[steady], out[spaced], out[scans] = [], [], []

    def scan() -> None:
        with database.reading() as session:
            fingerprints(session)

    for _ in range(runs):
        os.environ.pop(SWEEP_ENV, None)
        one_decision(database)
        out[steady].append(timed(lambda: guard.check_registry(database)))
        os.environ[SWEEP_ENV] = "3600"
        one_decision(database)
        out[spaced].append(timed(lambda: guard.check_registry(database)))
        out[scans].append(timed(scan))
    os.environ.pop(SWEEP_ENV, None)
    database.engine.dispose()
    return out


def _ms(values: list[float]) -> str:
    median = statistics.median(values)
    return f"{median / 1000:.2f} s" if median >= 1000 else f"{median:.0f} ms"


def row(backend: str, load_s: float, timings: dict[str, list[float]]) -> str:
    """One table row: the first check (one run), then the median of each steady measure."""
    cells = " | ".join(_ms(values) for values in timings.values())
    return f"| {backend} | {load_s:.0f} s | {cells} |"


BLOCK = "quarantine"
# The table's header: tests/docs checks that the page's block has it.
HEADER = (
    "| database | bulk load (not a capgate path) | first check in a process "
    "| check with sweep (default) | check, sweep not due | sweep alone |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--input-bytes", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    backends = chosen_databases(args.backend, progress)
    rows = []
    for backend, make in backends:
        with make() as url:
            progress(f"{backend}: loading {args.events:,} audit events")
            began = time.perf_counter()
            engine = create_engine(url)
            load(engine, args.events, args.input_bytes)
            engine.dispose()
            load_s = time.perf_counter() - began
            rows.append(row(backend, load_s, measure(url, args.runs)))
    table = "\n".join(
        [
            f"{args.events:,} audit events, decisions with {args.input_bytes} B inputs; "
            f'"first" is one run, the others the median of {args.runs}:',
            "",
            HEADER,
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"first check one run, the rest median of {args.runs} runs",
            database_versions(any(name == "PostgreSQL" for name, _ in backends)),
        )


if __name__ == "__main__":
    main()
