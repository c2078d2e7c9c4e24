"""Schemathesis against a live `capgate serve`, longer than the test suite's run.

The harness of tests/api/test_fuzz_schemathesis.py (tests/support/fuzz.py) with N
positive and N negative cases per operation, on SQLite and (when
CAPGATE_TEST_POSTGRES_URL names a role that may create databases) PostgreSQL. Prints a
markdown table on stdout, progress and every distinct failure on stderr; exits 1 if
anything failed.

    source /tmp/envrc   # or export CAPGATE_TEST_POSTGRES_URL=postgresql+psycopg://...
    .venv/bin/python -m benchmarks.api.bench_fuzz [--examples 300] [--backend sqlite] [--write]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from importlib.metadata import version
from pathlib import Path

from benchmarks.doc_blocks import Measurement, add_write_flag, database_versions, publish
from benchmarks.registry.bench_submissions import postgres_database, sqlite_database
from tests.support.fuzz import FuzzReport, fuzz, fuzz_server, print_progress


@contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="capgate-fuzz-") as folder:
        yield Path(folder)


def measure(backend: str, database: AbstractContextManager[str], examples: int) -> FuzzReport:
    with database as url, workdir() as folder, fuzz_server(backend, url, folder) as server:
        print_progress(f"{backend}: serving {server.url}, {examples} cases per mode")
        report = fuzz(server, examples, progress=print_progress)
    print_progress(report.summary())
    return report


BLOCK = "fuzz"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| backend | operations | cases | 5xx | conformance failures | distinct | wall s |"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--examples",
        type=int,
        default=300,
        help="positive cases per operation, and as many negative ones",
    )
    parser.add_argument(
        "--backend", choices=["sqlite", "postgresql"], action="append", help="default: both"
    )
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    wanted = args.backend or ["sqlite", "postgresql"]
    backends: list[tuple[str, AbstractContextManager[str]]] = []
    if "sqlite" in wanted:
        backends.append(("sqlite", sqlite_database()))
    if "postgresql" in wanted:
        admin = os.environ.get("CAPGATE_TEST_POSTGRES_URL")
        if admin:
            backends.append(("postgresql", postgres_database(admin)))
        else:
            print_progress("CAPGATE_TEST_POSTGRES_URL not set: PostgreSQL skipped")
    reports = [measure(name, database, args.examples) for name, database in backends]
    table = "\n".join(
        [
            f"Schemathesis, {args.examples} positive + {args.examples} negative cases per "
            "operation:",
            "",
            HEADER,
            "|---|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {r.backend} | {r.operations} | {r.cases} | {r.server_errors} "
                f"| {r.conformance_failures} | {len(r.findings)} | {r.seconds:.0f} |"
                for r in reports
            ),
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            "one run per database",
            [
                f"Schemathesis {version('schemathesis')}",
                *database_versions(any(r.backend == "postgresql" for r in reports)),
            ],
        )
    if any(r.findings for r in reports):
        sys.exit(1)


if __name__ == "__main__":
    main()
