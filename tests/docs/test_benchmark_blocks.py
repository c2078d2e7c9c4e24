"""docs/benchmarks.md: every figure table is a block written by the benchmark that measures
it (``python -m MODULE --write``), with the line saying how it was measured. Not timed:
the figures are checked for presence and provenance, not re-measured."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from benchmarks.doc_blocks import BLOCKS, DOC, MEASURED, block

LOADS = r"[\d.]+ / [\d.]+ / [\d.]+"


def test_every_block_of_the_page_is_registered_and_every_registered_block_is_there() -> None:
    text = DOC.read_text(encoding="utf-8")
    # Markers stand on their own lines (the page's prose quotes the marker form in a span).
    opened = re.findall(r"^<!-- generated: ([\w.-]+) -->$", text, re.MULTILINE)
    closed = re.findall(r"^<!-- end generated: ([\w.-]+) -->$", text, re.MULTILINE)
    assert sorted(opened) == sorted(closed) == sorted(set(opened)), "unpaired or repeated"
    assert set(opened) == set(BLOCKS), (
        "docs/benchmarks.md and benchmarks/doc_blocks.py BLOCKS disagree: "
        f"only in the page {set(opened) - set(BLOCKS)}, only in BLOCKS {set(BLOCKS) - set(opened)}"
    )


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_block_is_written_by_its_benchmark(name: str) -> None:
    module = importlib.import_module(BLOCKS[name])
    assert name == module.BLOCK
    main = inspect.getsource(module.main)
    # The module's command line takes --write and its main publishes the block.
    assert "add_write_flag(" in main and "publish(" in main


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_block_has_the_table_its_benchmark_writes_now(name: str) -> None:
    """A benchmark whose table changed (columns added, renamed) makes its block stale."""
    header = importlib.import_module(BLOCKS[name]).HEADER
    stale = f"block {name!r} is stale: python -m {BLOCKS[name]} --write"
    assert header in block(DOC, name).splitlines(), stale


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_block_holds_a_table_and_how_it_was_measured(name: str) -> None:
    body = block(DOC, name)
    stale = f"block {name!r} is not filled: python -m {BLOCKS[name]} --write"
    assert body.strip(), stale
    assert re.search(r"^\|[-:|]+\|$", body, re.MULTILINE), f"{name}: no table"
    line = body.splitlines()[-1]
    assert line.startswith(MEASURED), f"{name}: its last line is not the measurement line"
    pattern = (
        rf"{MEASURED}\d{{4}}-\d{{2}}-\d{{2}} by `python -m {re.escape(BLOCKS[name])}( [^`]*)? "
        rf"--write`: .+; \d+ cores, load average \(1/5/15 min\) {LOADS} before, {LOADS} after; "
        r"Python 3\.\d+\.\d+"
    )
    assert re.match(pattern, line), f"{name}: measurement line {line!r}"
    # A figure for a database names its version.
    if re.search(r"^\| postgresql", body, re.MULTILINE | re.IGNORECASE):
        assert re.search(r"PostgreSQL \d+", line), f"{name}: no PostgreSQL version"
    if re.search(r"^\| sqlite", body, re.MULTILINE | re.IGNORECASE):
        assert re.search(r"SQLite \d+\.\d+", line), f"{name}: no SQLite version"
