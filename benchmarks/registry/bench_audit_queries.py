"""Audit queries at scale: every filter combination of `GET /v1/decisions` and
`GET /v1/audit/events` (and `capgate gate list`, `capgate audit list`, which call the
same functions) against a registry holding N decisions and N audit events (default
1,000,000 each), on SQLite and (when CAPGATE_TEST_POSTGRES_URL names a role that may
create databases) PostgreSQL. docs/audit-queries.md says what is run and holds the
blocks `--write` puts there.

The registry is migrated as `capgate db upgrade` does, then filled in bulk (progress on
stderr): 1,000 plan versions (200 plans), decisions spread over a year in time order
with skewed plans, outcomes and principals (one hot plan, one release bot asking half
the time, errors rare), each carrying a real ~7 KB gate input document (the listing
re-hashes every input it returns); audit events with skewed actions and principals.
The events are not a valid hash chain: the listing does not walk the chain (`audit
verify` does, and is measured elsewhere). PostgreSQL is VACUUM ANALYZEd after the load,
as autovacuum would; SQLite keeps the planner statistics its migrations wrote, as a
user's registry does (nothing in capgate runs ANALYZE).

Each combination (filters x first page or a later one by cursor) is queried `--repeat`
times with values drawn at random (hot and rare ones alike) through the service
functions the API calls (query, row checks, views), one page of 50: p50, p99 and the
median CPU time per combination, the worst with the plan the database chose for its
slowest sample, and the load average. Also offset 10,000, and, not held to the
target: 100 pages by cursor, `limit=500` and a count (`total=true`).

    export CAPGATE_TEST_POSTGRES_URL=postgresql+psycopg://...
    .venv/bin/python -m benchmarks.registry.bench_audit_queries [--rows 1000000] [--keep]
        [--write docs/audit-queries.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Index, create_engine, event, insert, text
from sqlalchemy.engine import Connection, Engine, make_url

from benchmarks.registry.bench_contention import percentile
from benchmarks.registry.bench_submissions import chosen_databases
from registry.api.app import settle_heap
from registry.audit.service import list_events
from registry.digest import canonical_json, content_digest
from registry.gate.service import list_decisions
from registry.gate.views import Outcome
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.keyset import encode
from registry.storage.models import AuditEventRow, DecisionRow, RecordRow

ROOT = Path(__file__).resolve().parents[2]
INPUT_FILE = ROOT / "tests/gate/inputs/compliant__conservative_claims.json"
DOC = ROOT / "docs/audit-queries.md"
TARGET_MS = 50
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
        statistics = planner_statistics(connection)
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
        if statistics:
            connection.execute(
                text("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (:tbl, :idx, :stat)"),
                statistics,
            )


def settle(engine: Engine) -> None:
    """PostgreSQL: VACUUM ANALYZE the loaded tables, as autovacuum does after a large
    insert, so that the measurement is neither sharing the machine with it nor reading
    a heap without a visibility map (a count could then not be answered from an index)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        for table in ("records", "decisions", "audit_events"):
            connection.execute(text(f"VACUUM (ANALYZE) {table}"))


def planner_statistics(connection: Connection) -> list[dict[str, str]]:
    """SQLite: the planner statistics the migrations wrote for the listing indexes, to be
    put back once they are re-created (dropping an index drops its statistics, and a
    registry keeps them: nothing in capgate runs ANALYZE)."""
    if connection.dialect.name != "sqlite":
        return []
    if not connection.scalar(text("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_stat1'")):
        return []
    return [
        dict(row._mapping)
        for row in connection.execute(
            text(
                "SELECT tbl, idx, stat FROM sqlite_stat1 "
                "WHERE tbl IN ('decisions', 'audit_events') AND idx IS NOT NULL"
            )
        )
    ]


@dataclass
class Combination:
    """One row of the table: a listing asked with some filters (values drawn anew for
    each sample) and a paging mode. `target`: held to the p99 target (a page of 50,
    first or by cursor); the paging rows beyond it are reported, not held."""

    table: str
    label: str
    lister: Callable[..., Any]
    draw: Callable[[], dict[str, Any]]
    target: bool = True
    pages: int = 1  # pages walked per sample (the time is reported per page)


@dataclass
class Timing:
    combination: Combination
    p50_ms: float
    p99_ms: float
    cpu_p50_ms: float  # this process's CPU time, median
    slowest: dict[str, Any]  # the filters of the slowest sample


def decision_combinations(rng: random.Random, rows: int) -> Iterator[Combination]:
    names = plan_names()
    subjects: dict[str, Callable[[], dict[str, Any]]] = {
        "": dict,
        "plan": lambda: {"plan": rng.choice(names)},
        "plan@vN": lambda: {"plan": f"{rng.choice(names)}@v{rng.randint(1, VERSIONS)}"},
    }
    for (subject, make), outcome, principal, window, paged in itertools.product(
        subjects.items(), (False, True), (False, True), WINDOWS, (False, True)
    ):

        def draw(
            make: Callable[[], dict[str, Any]] = make,
            outcome: bool = outcome,
            principal: bool = principal,
            window: str = window,
            paged: bool = paged,
        ) -> dict[str, Any]:
            filters = make()
            if outcome:
                filters["outcome"] = rng.choice(list(Outcome))
            if principal:
                filters["principal"] = rng.choice(["release-bot", *PRINCIPALS])
            filters |= time_window(rng, window)
            if paged:
                filters["cursor"] = encode(cursor_instant(rng, filters), str(uuid.uuid4()))
            return filters

        parts = (subject, "outcome" * outcome, "principal" * principal, window, "cursor" * paged)
        yield Combination("decisions", label(parts), list_decisions, draw)
    yield from paging("decisions", list_decisions, rows)


def event_combinations(rng: random.Random, rows: int) -> Iterator[Combination]:
    for action, principal, window, paged in itertools.product(
        (False, True), (False, True), WINDOWS, (False, True)
    ):

        def draw(
            action: bool = action, principal: bool = principal, window: str = window, paged=paged
        ) -> dict[str, Any]:
            filters: dict[str, Any] = {}
            if action:
                filters["action"] = rng.choice(ACTIONS)
            if principal:
                filters["principal"] = rng.choice(["release-bot", *PRINCIPALS])
            filters |= time_window(rng, window)
            if paged:
                filters["cursor"] = encode(cursor_instant(rng, filters), rng.randint(1, rows))
            return filters

        parts = ("action" * action, "principal" * principal, window, "cursor" * paged)
        yield Combination("audit events", label(parts), list_events, draw)
    yield Combination("audit events", "seq", list_events, lambda: {"seq": rng.randint(1, rows)})
    yield Combination(
        "audit events",
        "seq+action+principal+since+until",
        list_events,
        lambda: (
            {
                "seq": rng.randint(1, rows),
                "action": rng.choice(ACTIONS),
                "principal": rng.choice(["release-bot", *PRINCIPALS]),
            }
            | time_window(rng, "since+until")
        ),
    )
    yield from paging("audit events", list_events, rows)


def paging(table: str, lister: Callable[..., Any], rows: int) -> Iterator[Combination]:
    """Paging beyond one page of 50, unfiltered (the most rows): reported, not held to
    the target, as each does more than one page's work by design."""
    yield Combination(table, "100 pages by cursor (per page)", lister, dict, False, pages=100)
    yield Combination(table, "offset 10,000", lister, lambda: {"offset": min(10_000, rows // 2)})
    yield Combination(table, "limit 500", lister, lambda: {"limit": 500}, False)
    yield Combination(table, "total=true (count every row)", lister, lambda: {"total": True}, False)


WINDOWS = ("", "since", "until", "since+until")


def label(parts: tuple[str, ...]) -> str:
    return "+".join(p for p in parts if p) or "(none)"


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


def cursor_instant(rng: random.Random, filters: dict[str, Any]) -> datetime:
    """Where a later page starts: an instant inside the filter's window (a cursor
    outside it would only list nothing)."""
    low = filters.get("since", START)
    high = filters.get("until", START + timedelta(seconds=YEAR_S))
    return low + (high - low) * rng.random()


def time_page(
    database: Database, combination: Combination, filters: dict[str, Any]
) -> tuple[float, float]:
    """Milliseconds for one page as the API serves it (a read session, the query, the
    views; a page of 50 unless the filters say otherwise): wall time, and this process's
    CPU time in it (what does not grow when other processes share the cores)."""
    arguments = {"limit": 50} | filters
    began, cpu, pages = time.perf_counter(), time.thread_time(), 0
    with database.reading() as session:
        cursor = arguments.pop("cursor", None)
        while pages < combination.pages:
            cursor = combination.lister(session, **arguments, cursor=cursor).next_cursor
            pages += 1
            if cursor is None:
                break  # the last page (a small registry)
    return (
        (time.perf_counter() - began) * 1000 / pages,
        (time.thread_time() - cpu) * 1000 / pages,
    )


def measure(url: str, backend: str, rows: int, repeat: int, seed: int) -> list[Timing]:
    rng = random.Random(seed)
    database = Database(url)
    settle_heap()  # as `capgate serve` does once started
    timings: list[Timing] = []
    for combinations in (decision_combinations(rng, rows), event_combinations(rng, rows)):
        for combination in combinations:
            time_page(database, combination, combination.draw())  # warm the connection
            samples = []
            for _ in range(repeat if combination.pages == 1 else max(2, repeat // 10)):
                filters = combination.draw()
                samples.append((*time_page(database, combination, filters), filters))
            values = [ms for ms, _, _ in samples]
            slowest = max(samples, key=lambda sample: sample[0])[2]
            cpu = percentile([ms for _, ms, _ in samples], 0.5)
            timings.append(
                Timing(combination, percentile(values, 0.5), percentile(values, 0.99), cpu, slowest)
            )
        progress(f"  {backend}: {combination.table} measured")
    database.engine.dispose()
    return timings


def worst(timings: list[Timing], table: str | None = None) -> Timing:
    """The combination held to the target with the highest p99 (in `table` if named)."""
    held = [t for t in timings if t.combination.target]
    return max((t for t in held if table in (None, t.combination.table)), key=lambda t: t.p99_ms)


def query_plan(url: str, timing: Timing) -> str:
    """The plan of the listing statement a combination ran with its slowest filters:
    the statement captured as it executed, then EXPLAIN (ANALYZE, BUFFERS) on
    PostgreSQL, EXPLAIN QUERY PLAN on SQLite, by the database itself."""
    database = Database(url)
    seen: list[tuple[str, Any]] = []
    table = "audit_events" if timing.combination.table == "audit events" else "decisions"

    def listen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if f"FROM {table}" in statement and "ORDER BY" in statement:
            seen.append((statement, parameters))

    event.listen(database.engine, "before_cursor_execute", listen)
    try:
        time_page(database, timing.combination, timing.slowest)
    finally:
        event.remove(database.engine, "before_cursor_execute", listen)
    statement, parameters = seen[0]
    with database.engine.connect() as connection:
        cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        if connection.dialect.name == "postgresql":
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
            lines = [row[0] for row in cursor.fetchall()]
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + statement, parameters)
            depth: dict[int, int] = {0: -1}
            lines = []
            for id_, parent, _, detail in cursor.fetchall():
                depth[id_] = depth.get(parent, -1) + 1
                lines.append("  " * depth[id_] + detail)
    database.engine.dispose()
    return "\n".join(lines)


def shown(filters: dict[str, Any]) -> str:
    """A sample's filters as the API's query string would carry them."""
    return " ".join(
        f"{k}={v.isoformat() if isinstance(v, datetime) else getattr(v, 'value', v)}"
        for k, v in filters.items()
    )


def report(
    backend: str,
    rows: int,
    repeat: int,
    load: tuple[float, float],
    timings: list[Timing],
    plan: str,
) -> str:
    """The Markdown block for one database: the summary, the worst combination with its
    plan, every combination's p50 and p99."""
    held = [t for t in timings if t.combination.target]
    slow = [t for t in held if t.p99_ms >= TARGET_MS]
    top = worst(timings)
    lines = [
        f"#### {backend}: {rows:,} decisions and {rows:,} audit events",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {repeat} samples per combination, load "
        f"average {load[0]:.1f} before and {load[1]:.1f} after on {os.cpu_count()} cores. "
        f"{len(held)} combinations held to p99 < {TARGET_MS} ms: "
        + (f"{len(slow)} over it." if slow else "all under it."),
        "",
    ]
    for table in ("decisions", "audit events"):
        mine = [t for t in held if t.combination.table == table]
        p50s = sorted(t.p50_ms for t in mine)
        w = worst(timings, table)
        lines.append(
            f"- {table}: {len(mine)} combinations, median p50 {p50s[len(p50s) // 2]:.1f} ms, "
            f"worst p99 {w.p99_ms:.1f} ms ({w.combination.label})"
        )
    lines += [
        "",
        f"Worst: {top.combination.table} {top.combination.label}, p99 {top.p99_ms:.1f} ms; "
        f"its slowest sample was `{shown(top.slowest)}`, whose plan is:",
        "",
        "```",
        plan,
        "```",
        "",
        "| listing | filters | p50 ms | p99 ms | CPU p50 ms |",
        "|---|---|---:|---:|---:|",
    ]
    for t in timings:
        note = "" if t.combination.target else " (not held)"
        lines.append(
            f"| {t.combination.table} | {t.combination.label}{note} | {t.p50_ms:.1f} | "
            f"{t.p99_ms:.1f} | {t.cpu_p50_ms:.1f} |"
        )
    return "\n".join(lines)


@contextmanager
def fresh_database(made: AbstractContextManager[str]) -> Iterator[tuple[str, bool]]:
    """A throwaway registry (the default): always loaded."""
    with made as url:
        yield url, True


@contextmanager
def kept_database(backend: str, rows: int, seed: int) -> Iterator[tuple[str, bool]]:
    """A loaded registry kept between runs (`--keep`): the SQLite file or PostgreSQL
    database named for rows and seed, upgraded to the newest migration (so a new
    migration is also timed on a million rows); loaded again when it is missing or its
    load did not finish. Yields the URL and whether it still needs loading."""
    name = f"capgate_bench_audit_{rows}_{seed}"
    if backend == "SQLite":
        url = f"sqlite:///{Path(tempfile.gettempdir()) / name}.db"
    else:
        admin_url = os.environ["CAPGATE_TEST_POSTGRES_URL"]
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            exists = connection.scalar(
                text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
            )
            if not exists:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    began = time.perf_counter()
    migrate.upgrade(url)
    progress(f"{backend}: migrated to head in {time.perf_counter() - began:.1f} s")
    engine = create_engine(url)
    with engine.connect() as connection:
        loaded = connection.scalar(text("SELECT max(seq) FROM audit_events")) == rows
        if not loaded:
            for table in ("audit_events", "decisions"):
                connection.execute(text(f"DELETE FROM {table}"))
            connection.execute(text("DELETE FROM records WHERE kind = 'plan'"))
            connection.commit()
    engine.dispose()
    yield url, not loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=100, help="queries per combination")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the loaded databases (named for --rows and --seed) and reuse them",
    )
    parser.add_argument(
        "--load-only", action="store_true", help="with --keep: load, do not measure"
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help=f"replace each database's block in FILE (e.g. {DOC.relative_to(ROOT)})",
    )
    args = parser.parse_args()
    for backend, make in chosen_databases(args.backend, progress):
        kept = kept_database(backend, args.rows, args.seed) if args.keep else None
        with kept or fresh_database(make()) as (url, needs_load):
            if needs_load:
                progress(f"{backend}: loading {args.rows:,} decisions and audit events")
                began = time.perf_counter()
                engine = create_engine(url)
                load(engine, args.rows, args.seed)
                progress(f"{backend}: vacuuming")
                settle(engine)
                engine.dispose()
                progress(f"{backend}: loaded in {time.perf_counter() - began:.0f} s")
            if args.load_only:
                continue
            before = os.getloadavg()[0]
            timings = measure(url, backend, args.rows, args.repeat, args.seed)
            after = os.getloadavg()[0]
            block = report(
                backend,
                args.rows,
                args.repeat,
                (before, after),
                timings,
                query_plan(url, worst(timings)),
            )
        print(block + "\n", flush=True)
        if args.write:
            args.write.write_text(replaced(args.write.read_text(encoding="utf-8"), backend, block))


def replaced(text: str, backend: str, block: str) -> str:
    """`text` with the block between this database's markers replaced by `block`."""
    start, end = (f"<!-- bench-audit-queries:{backend}:{side} -->" for side in ("begin", "end"))
    if start not in text or end not in text:
        raise SystemExit(f"no {start} ... {end} markers to write between")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{block}\n{end}{after}"


if __name__ == "__main__":
    main()
