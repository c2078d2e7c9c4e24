"""The audit-query benchmark in a tiny mode, as a real process: it runs every filter
combination on each database, prints a block naming the worst one with the plan the
database chose, and writes that block between its markers in the docs file. Its shape
is checked, not its timings (benchmarks/registry/bench_audit_queries.py measures those
at a million rows)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.registry.bench_audit_queries import DOC, ROOT
from tests.support.real_parts import absent

PAGING = {
    "100 pages by cursor (per page) (not held)",
    "offset 10,000",
    "limit 500 (not held)",
    "total=true (count every row) (not held)",
}
ROW = re.compile(
    r"^\| (decisions|audit events) \| ([^|]+) \| (\d+\.\d) \| (\d+\.\d) \| (\d+\.\d) \|$"
)


@pytest.mark.parametrize("backend", ["SQLite", "PostgreSQL"])
def test_tiny_run_prints_every_combination_and_the_worst_plan(backend: str, tmp_path: Path) -> None:
    if backend == "PostgreSQL" and not os.environ.get("CAPGATE_TEST_POSTGRES_URL"):
        absent("CAPGATE_TEST_POSTGRES_URL not set", "run scripts/ci/postgres.sh")
    doc = tmp_path / "audit-queries.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.registry.bench_audit_queries",
            *("--rows", "500", "--repeat", "2", "--backend", backend.lower()),
            *("--write", str(doc)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "loaded 500 / 500" in run.stderr  # progress goes to stderr

    rows = [ROW.match(line) for line in run.stdout.splitlines() if line.startswith("| ")]
    table = [m.groups() for m in rows[1:] if m]  # the first is the header (the rule is "|-")
    assert len(table) == len(rows) - 1, "every row after the header is a timing"
    labels = {(t, label.strip()) for t, label, *_ in table}
    # 3 plan subjects x outcome x principal x 4 windows x first page or by cursor
    decisions = {label for t, label in labels if t == "decisions" and label not in PAGING}
    assert len(decisions) == 3 * 2 * 2 * 4 * 2
    assert {"(none)", "plan@vN+outcome+principal+since+until+cursor"} <= decisions
    events = {label for t, label in labels if t == "audit events" and label not in PAGING}
    assert len(events) == 2 * 2 * 4 * 2 + 2
    assert "action+principal+since+until+cursor" in events
    for table_name in ("decisions", "audit events"):
        assert {(table_name, label) for label in PAGING} <= labels
    for _, _, p50, p99, _ in table:
        assert float(p50) <= float(p99)

    worst = re.search(r"^Worst: (decisions|audit events) (.+?), p99 (\d+\.\d) ms", run.stdout, re.M)
    assert worst, run.stdout
    held = [float(p99) for _, label, _, p99, _ in table if "(not held)" not in label]
    assert float(worst[3]) == max(held)
    plan = run.stdout.split("whose plan is:\n\n```\n", 1)[1].split("\n```", 1)[0]
    table_name = "decisions" if worst[1] == "decisions" else "audit_events"
    if backend == "SQLite":
        assert re.search(rf"(SEARCH|SCAN) {table_name}\b", plan), plan
    else:
        assert "actual time=" in plan and table_name in plan, plan
    assert re.search(r"load average \d+\.\d before and \d+\.\d after", run.stdout)

    written = doc.read_text(encoding="utf-8")
    block = written.split(f"<!-- bench-audit-queries:{backend}:begin -->\n", 1)[1]
    block = block.split(f"\n<!-- bench-audit-queries:{backend}:end -->", 1)[0]
    assert block in run.stdout
    assert written.count("(not yet run)") <= 1  # the other database's block is left alone
