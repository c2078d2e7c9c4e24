"""Generated blocks in the documentation: a figure is written by the command that measures it.

A block is the text between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``
(the convention of benchmarks/planner/example_doc.py). A benchmark run with ``--write``
replaces its block in docs/benchmarks.md with its table and one line saying how it was
measured (:class:`Measurement`); tests/docs/test_benchmark_blocks.py checks that every
block of that page is registered in :data:`BLOCKS`, names the module that writes it, and
holds a table and its measurement line.

    python -m benchmarks.doc_blocks [NAME ...]   # run benchmarks with --write (default: all)
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"

# Block name -> the benchmark module that writes it (``python -m MODULE --write``).
BLOCKS: dict[str, str] = {
    "submissions": "benchmarks.registry.bench_submissions",
    "contention": "benchmarks.registry.bench_contention",
    "quarantine": "benchmarks.registry.bench_quarantine",
    "fuzz": "benchmarks.api.bench_fuzz",
    "cli-startup": "benchmarks.cli.bench_startup",
    "gate-check-pipeline": "benchmarks.cli.bench_gate_check",
    "planner-sim": "benchmarks.planner.bench_sim",
    "manifests": "benchmarks.manifests.bench_manifests",
    "report": "benchmarks.report.bench_report",
    "importers": "benchmarks.importers.bench_importers",
    "observe": "benchmarks.observe.bench_observe",
}

# Every measurement line starts so (the test finds it by this prefix).
MEASURED = "Measured "


class BlockError(ValueError):
    """A block's markers are missing, repeated or out of order."""


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"


def _span(text: str, path: Path, name: str) -> tuple[int, int]:
    """Where the block's body starts and ends in ``text``."""
    start, end = markers(name)
    for marker in (start, end):
        count = text.count(marker)
        if count != 1:
            problem = "missing" if count == 0 else f"present {count} times"
            raise BlockError(f"{path}: marker {marker!r} is {problem}; add it once by hand")
    begin, finish = text.index(start) + len(start), text.index(end)
    if finish < begin:
        raise BlockError(f"{path}: {end!r} comes before {start!r}")
    return begin, finish


def block(path: Path, name: str) -> str:
    """The body of block ``name`` in ``path``, without its surrounding blank lines."""
    text = path.read_text(encoding="utf-8")
    begin, finish = _span(text, path, name)
    return text[begin:finish].strip("\n")


def replace_block(path: Path, name: str, markdown: str) -> None:
    """Replace block ``name`` of ``path`` with ``markdown``; the rest of the file is kept
    byte for byte. Refuses (BlockError) when the markers are not there exactly once: a
    benchmark never invents where its figures go."""
    text = path.read_text(encoding="utf-8")
    begin, finish = _span(text, path, name)
    body = markdown.strip("\n")
    if not body.strip():
        raise BlockError(f"{path}: refusing to write an empty block {name!r}")
    path.write_text(f"{text[:begin]}\n{body}\n{text[finish:]}", encoding="utf-8")


def add_write_flag(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"after measuring, write the table into docs/benchmarks.md (block {name!r})",
    )
    parser.add_argument(
        "--note",
        default="",
        help="a sentence added to the measurement line (say why a run was shortened)",
    )


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``1.23 / 0.98 / 0.75``."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def sqlite_version() -> str:
    return f"SQLite {sqlite3.sqlite_version}"


def postgres_version(url: str) -> str:
    """``PostgreSQL 15.4`` for the server at ``url`` (SHOW server_version)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            version = str(connection.execute(text("SHOW server_version")).scalar_one())
    finally:
        engine.dispose()
    return f"PostgreSQL {version.split()[0]}"


@dataclass
class Measurement:
    """How a benchmark run measured: started before the work so that the load average
    before it is the machine's, not the benchmark's own."""

    block: str
    argv: list[str] = field(default_factory=lambda: sys.argv[1:])
    load_before: str = field(default_factory=load_average)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        if self.block not in BLOCKS:
            raise BlockError(f"block {self.block!r} is not registered in BLOCKS")

    def _note(self) -> tuple[str, list[str]]:
        """The ``--note`` given (argparse accepted it: add_write_flag declares it) and the
        arguments without it and without ``--write``."""
        note, kept, rest = "", [], iter(self.argv)
        for arg in rest:
            if arg == "--note":
                note = next(rest, "")
            elif arg.startswith("--note="):
                note = arg.removeprefix("--note=")
            elif arg != "--write":
                kept.append(arg)
        return note, kept

    def command(self) -> str:
        _, kept = self._note()
        return " ".join(["python -m", BLOCKS[self.block], *(shlex.quote(arg) for arg in kept)])

    def line(self, how: str, versions: Sequence[str] = ()) -> str:
        """The measurement line: date, command, ``how`` (runs and statistic), the cores,
        the load average before and after, and the software measured."""
        software = ", ".join([f"Python {platform.python_version()}", *versions])
        note, _ = self._note()
        return (
            f"{MEASURED}{self.started:%Y-%m-%d} by `{self.command()} --write`: {how}; "
            f"{os.cpu_count()} cores, load average (1/5/15 min) {self.load_before} before, "
            f"{load_average()} after; {software}." + (f" {note.rstrip('.')}." if note else "")
        )


def database_versions(postgresql: bool) -> list[str]:
    """SQLite's version, and the PostgreSQL server's (CAPGATE_TEST_POSTGRES_URL) when it ran."""
    url = os.environ.get("CAPGATE_TEST_POSTGRES_URL")
    return [sqlite_version(), *([postgres_version(url)] if postgresql and url else [])]


def publish(
    measurement: Measurement, markdown: str, how: str, versions: Sequence[str] = ()
) -> None:
    """Write ``markdown`` and the measurement line into the measurement's block of
    docs/benchmarks.md."""
    line = measurement.line(how, versions)
    replace_block(DOC, measurement.block, f"{markdown.strip()}\n\n{line}")
    print(f"wrote block {measurement.block!r} of {DOC.relative_to(ROOT)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Run benchmarks with --write, one after another, to refill their blocks."
    )
    parser.add_argument("names", nargs="*", help=f"blocks (default: all of {', '.join(BLOCKS)})")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in BLOCKS]
    if unknown:
        parser.error(f"unknown block(s) {', '.join(unknown)}; known: {', '.join(BLOCKS)}")
    failed = []
    for name in args.names or list(BLOCKS):
        print(f"{name}: python -m {BLOCKS[name]} --write", file=sys.stderr, flush=True)
        # One process per benchmark, as a user runs it: no benchmark's imports or load
        # falls on the next one.
        if subprocess.run([sys.executable, "-m", BLOCKS[name], "--write"], check=False).returncode:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)} (see their output above)")


if __name__ == "__main__":
    main()
