"""Schemathesis fuzzes a live `capgate serve`, on SQLite and on PostgreSQL.

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

# Positive and as many negative cases per operation: about 700 requests, well under
# 90 s per backend on two cores (generation dominates, not the server).
EXAMPLES_PER_OPERATION = 8


def test_fuzz_every_operation(database_url: str, tmp_path: Path) -> None:
    backend = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    with fuzz_server(backend, database_url, tmp_path) as server:
        report = fuzz(server, EXAMPLES_PER_OPERATION)
    assert report.operations > 40, "the OpenAPI document lost its operations"
    assert report.cases >= report.operations * EXAMPLES_PER_OPERATION
    if report.findings:
        pytest.fail(report.summary(), pytrace=False)
