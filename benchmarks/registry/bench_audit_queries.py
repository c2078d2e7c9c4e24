"""Audit queries at scale: every filter combination of `GET /v1/decisions` and
`GET /v1/audit/events` against a registry holding N decisions and N audit events
(default 1,000,000 each), on SQLite and (when CAPGATE_TEST_POSTGRES_URL names a role
that may create databases) PostgreSQL.

The registry is migrated as `capgate db upgrade` does, then filled in bulk: 1,000 plan
versions (200 plans), decisions spread over a year in time order with skewed plans,
outcomes and principals (one hot plan, one release bot asking half the time, errors
rare), each carrying a real ~6 KB gate input document (the listing re-hashes every
input it returns); audit events with skewed actions and principals. The events are not
a valid hash chain: the listing does not walk the chain (`audit verify` does, and is
measured elsewhere). PostgreSQL is ANALYZEd after the load, as autovacuum would;
SQLite is left as a user's registry is.

Each combination is queried `--repeat` times with filter values drawn at random (hot
and rare ones alike) through the service functions the API calls (query, then the
views it returns), one page of 50; p50 and p99 per combination, and the worst. Also:
the 100th page by cursor, offset 10,000, and a count (`total=true`), which is the one
step that grows with the trail and so is only done when asked.

    source /tmp/envrc   # or export CAPGATE_TEST_POSTGRES_URL=postgresql+psycopg://...
    .venv/bin/python -m benchmarks.registry.bench_audit_queries [--rows 1000000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Index, create_engine, insert, text
from sqlalchemy.engine import Engine

from benchmarks.registry.bench_contention import percentile
from benchmarks.registry.bench_submissions import chosen_databases
from registry.api.app import settle_heap
from registry.audit.service import list_events
from registry.digest import canonical_json, content_digest
from registry.gate.service import list_decisions
from registry.gate.views import Outcome
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, DecisionRow, RecordRow

INPUT_FILE = Path(__file__).parents[2] / "tests/gate/inputs/compliant__conservative_claims.json"
START = datetime(2026, 1, 1, tzinfo=UTC)
YEAR_S = 365 * 86400
PLANS, VERSIONS = 200, 5
PRINCIPALS = [f"team-{i:02d}" for i in range(49)]
ACTIONS = [
    "gate.check",
    "plan.submit",
    "workload.submit",
    "provider.submit",
    "evidence.import",
    "evidence.withdraw",
    "waiver.submit",
    "waiver.approve",
    "token.created",
    "token.revoked",
    "opa.decision_logs",
    "audit.adopt",
]
BATCH = 20_000


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def skewed(rng: random.Random, hot: str, others: list[str], hot_share: float) -> str:
    return hot if rng.random() < hot_share else rng.choice(others)


def plan_names() -> list[str]:
    return [f"plan-{i:03d}" for i in range(PLANS)]


def load(engine: Engine, rows: int, seed: int) -> None:
    """Plans, then decisions and events in bulk with the listing indexes dropped and
    re-created after (as a restore would), which loads far faster than row by row."""
    rng = random.Random(seed)
    document = json.loads(INPUT_FILE.read_text())
    input_text, input_digest = canonical_json(document), content_digest(document)
    indexes: list[Index] = [
        *DecisionRow.__table__.indexes,  # type: ignore[attr-defined]
        *AuditEventRow.__table__.indexes,  # type: ignore[attr-defined]
    ]
    with engine.begin() as connection:
        for index in indexes:
            index.drop(connection)
        plan_rows = [
            {
                "kind": "plan",
                "name": name,
                "version": version,
                "digest": f"sha256:{uuid.uuid4().hex}{uuid.uuid4().hex}",
                "content": "{}",
                "created_at": START,
                "created_by": "bench",
                "reverts_version": None,
            }
            for name in plan_names()
            for version in range(1, VERSIONS + 1)
        ]
        connection.execute(insert(RecordRow), plan_rows)
        ids = {
            (name, version): id_
            for id_, name, version in connection.execute(
                text("SELECT id, name, version FROM records WHERE kind = 'plan'")
            )
        }
    names = plan_names()
    step = YEAR_S / rows
    for start in range(0, rows, BATCH):
        decisions, events = [], []
        for i in range(start, min(rows, start + BATCH)):
            at = START + timedelta(seconds=i * step)
            name = skewed(rng, names[0], names, 0.2)
            outcome = rng.choices(("allow", "deny", "error"), (0.80, 0.17, 0.03))[0]
            principal = skewed(rng, "release-bot", PRINCIPALS, 0.5)
            decisions.append(
                {
                    "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "plan_record_id": ids[(name, rng.randint(1, VERSIONS))],
                    "plan_name": name,
                    "outcome": outcome,
                    "engine": "embedded",
                    "bundle_revision": "sha256:" + "0" * 64,
                    "input_digest": input_digest,
                    "input": input_text,
                    "violations": "[]",
                    "waivers": '{"used":[],"waived":[]}',
                    "warnings": "[]",
                    "error": "policy engine unreachable" if outcome == "error" else None,
                    "principal": principal,
                    "created_at": at,
                }
            )
            events.append(
                {
                    "seq": i + 1,
                    "at": at,
                    "principal": skewed(rng, "release-bot", PRINCIPALS, 0.5),
                    "action": skewed(rng, "gate.check", ACTIONS, 0.6),
                    "payload": '{"ref":"plan-000@v1"}',
                    "prev_hash": f"sha256:{i:064x}",
                    "hash": f"sha256:{i + 1:064x}",
                }
            )
        with engine.begin() as connection:
            connection.execute(insert(DecisionRow), decisions)
            connection.execute(insert(AuditEventRow), events)
        progress(f"  loaded {min(rows, start + BATCH):,} / {rows:,}")
    progress("  creating the listing indexes")
    with engine.begin() as connection:
        for index in indexes:
            index.create(connection)
        if engine.dialect.name == "postgresql":
            connection.execute(text("ANALYZE"))


@dataclass
class Timing:
    table: str
    filters: str
    p50_ms: float
    p99_ms: float


def timed(call: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        out.append((time.perf_counter() - began) * 1000)
    return out


def decision_filters(rng: random.Random) -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    names = plan_names()
    subjects: dict[str, Callable[[], dict[str, Any]]] = {
        "": dict,
        "plan": lambda: {"plan": rng.choice(names)},
        "plan@vN": lambda: {"plan": f"{rng.choice(names)}@v{rng.randint(1, VERSIONS)}"},
    }
    for (subject, make), outcome, principal, window in itertools.product(
        subjects.items(), (False, True), (False, True), ("", "since", "until", "since+until")
    ):

        def draw(
            make: Callable[[], dict[str, Any]] = make,
            outcome: bool = outcome,
            principal: bool = principal,
            window: str = window,
        ) -> dict[str, Any]:
            filters = make()
            if outcome:
                filters["outcome"] = rng.choice(list(Outcome))
            if principal:
                filters["principal"] = rng.choice(["release-bot", *PRINCIPALS])
            filters |= time_window(rng, window)
            return filters

        label = "+".join(
            p for p in (subject, "outcome" * outcome, "principal" * principal, window) if p
        )
        yield label or "(none)", draw


def event_filters(rng: random.Random) -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    for action, principal, window in itertools.product(
        (False, True), (False, True), ("", "since", "until", "since+until")
    ):

        def draw(action: bool = action, principal: bool = principal, window: str = window) -> Any:
            filters: dict[str, Any] = {}
            if action:
                filters["action"] = rng.choice(ACTIONS)
            if principal:
                filters["principal"] = rng.choice(["release-bot", *PRINCIPALS])
            return filters | time_window(rng, window)

        label = "+".join(p for p in ("action" * action, "principal" * principal, window) if p)
        yield label or "(none)", draw
    yield "seq", lambda: {"seq": rng.randint(1, 1000)}


def time_window(rng: random.Random, window: str) -> dict[str, datetime]:
    if not window:
        return {}
    since = START + timedelta(seconds=rng.uniform(0, YEAR_S))
    until = since + timedelta(days=rng.choice((1, 7, 30)))
    if window == "since":
        return {"since": since}
    if window == "until":
        return {"until": until}
    return {"since": since, "until": until}


def measure(url: str, backend: str, repeat: int, seed: int) -> list[Timing]:
    rng = random.Random(seed)
    database = Database(url)
    settle_heap()  # as `capgate serve` does once started
    timings: list[Timing] = []
    listings = [
        ("decisions", list_decisions, decision_filters(rng)),
        ("audit events", list_events, event_filters(rng)),
    ]
    for table, lister, combos in listings:
        for label, draw in combos:

            def query(lister: Any = lister, draw: Callable[[], Any] = draw) -> None:
                with database.reading() as session:
                    lister(session, limit=50, **draw())

            query()  # warm the connection and the pages this combination touches
            values = timed(query, repeat)
            timings.append(Timing(table, label, percentile(values, 0.5), percentile(values, 0.99)))
        progress(f"  {backend}: {table} measured")
    for table, lister in (("decisions", list_decisions), ("audit events", list_events)):

        def hundredth_page(lister: Any = lister) -> None:
            cursor = None
            with database.reading() as session:
                for _ in range(100):
                    cursor = lister(session, limit=50, cursor=cursor).next_cursor

        def deep_offset(lister: Any = lister) -> None:
            with database.reading() as session:
                lister(session, limit=50, offset=10_000)

        def counted(lister: Any = lister) -> None:
            with database.reading() as session:
                lister(session, limit=50, total=True)

        for label, call, runs in (
            ("100 pages by cursor (per page)", hundredth_page, 3),
            ("offset 10,000", deep_offset, 5),
            ("total=true (count every row)", counted, 3),
        ):
            values = timed(call, runs)
            if call is hundredth_page:
                values = [v / 100 for v in values]
            timings.append(Timing(table, label, percentile(values, 0.5), percentile(values, 0.99)))
    database.engine.dispose()
    return timings


def report(backend: str, rows: int, load_s: float, timings: list[Timing]) -> None:
    print(f"\n### {backend}: {rows:,} decisions and {rows:,} audit events (load {load_s:.0f} s)\n")
    for table in ("decisions", "audit events"):
        filtered = [t for t in timings if t.table == table]
        combos = [t for t in filtered if not t.filters.startswith(("100 ", "offset", "total"))]
        worst = max(combos, key=lambda t: t.p99_ms)
        p50s = sorted(t.p50_ms for t in combos)
        print(
            f"- {table}: {len(combos)} filter combinations, median p50 "
            f"{p50s[len(p50s) // 2]:.1f} ms, worst p99 {worst.p99_ms:.1f} ms ({worst.filters})"
        )
    print("\n| listing | filters | p50 ms | p99 ms |\n|---|---|---:|---:|")
    for t in timings:
        print(f"| {t.table} | {t.filters} | {t.p50_ms:.1f} | {t.p99_ms:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=100, help="queries per combination")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    args = parser.parse_args()
    for backend, make in chosen_databases(args.backend, progress):
        with make() as url:
            progress(f"{backend}: loading {args.rows:,} decisions and audit events")
            began = time.perf_counter()
            engine = create_engine(url)
            load(engine, args.rows, args.seed)
            engine.dispose()
            load_s = time.perf_counter() - began
            report(backend, args.rows, load_s, measure(url, backend, args.repeat, args.seed))


if __name__ == "__main__":
    main()
