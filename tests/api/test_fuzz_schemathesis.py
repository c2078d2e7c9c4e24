"""Schemathesis fuzzes a live `capgate serve`, on SQLite here and on PostgreSQL in
test_fuzz_schemathesis_postgres.py (two files: the two workers run them side by side).

Every operation of the served OpenAPI document gets a fixed number of positive and
negative (schema-violating) cases, derandomised so a run is repeatable, each sent with an
every-role token to a registry seeded with the worked example, and every response goes
through schemathesis' checks: no 5xx, a documented status code, content type, headers and
body schema (tests/support/fuzz.py says which check is left out and why). The failures
are collected, not stopped at, and listed with a curl command that reproduces each.

benchmarks/api/bench_fuzz.py runs the same harness with many more cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fuzz import fuzz, fuzz_server

# The budget: 5 positive and 5 negative cases per operation, about 450 requests, about
# 30 s per backend on an idle core (generation dominates, not the server); it was 8 and 8.
# Hypothesis tries each operation's simplest case first (empty strings and bodies, zero,
# the shortest lists), then random ones: a smaller budget drops repeats of random shapes,
# not that edge. Derandomised: every run sends the same requests.
# benchmarks/api/bench_fuzz.py runs the same harness with many more cases.
EXAMPLES_PER_OPERATION = 5

# This file's backend; the other file imports the test and names PostgreSQL.
pytestmark = [
    pytest.mark.long(30),
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]


def test_fuzz_every_operation(database_url: str, tmp_path: Path) -> None:
    backend = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    with fuzz_server(backend, database_url, tmp_path) as server:
        report = fuzz(server, EXAMPLES_PER_OPERATION)
    assert report.operations > 40, "the OpenAPI document lost its operations"
    assert report.cases >= report.operations * EXAMPLES_PER_OPERATION
    if report.findings:
        pytest.fail(report.summary(), pytrace=False)
