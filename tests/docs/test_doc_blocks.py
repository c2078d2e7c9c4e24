"""benchmarks/doc_blocks.py: a generated block is replaced in place, only between its own
markers, and a file without them is refused rather than guessed at."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.doc_blocks import MEASURED, ROOT, BlockError, Measurement, block, replace_block

PAGE = """# Page

Prose before.

<!-- generated: speed -->
old table
<!-- end generated: speed -->

Between.

<!-- generated: other -->
kept
<!-- end generated: other -->
Prose after.
"""


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "page.md"
    path.write_text(PAGE, encoding="utf-8")
    return path


def test_replace_block_changes_only_that_block(page: Path) -> None:
    replace_block(page, "speed", "| a | b |\n|---|---|\n| 1 | 2 |\n")
    text = page.read_text(encoding="utf-8")
    assert block(page, "speed") == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert block(page, "other") == "kept"
    assert "old table" not in text
    before, after = PAGE.split("<!-- generated: speed -->")[0], PAGE.split("speed -->\n")[-1]
    assert text.startswith(before) and text.endswith(after)


def test_replace_block_is_idempotent(page: Path) -> None:
    replace_block(page, "speed", "\n\nnew table\n\n")
    once = page.read_text(encoding="utf-8")
    replace_block(page, "speed", "new table")
    assert page.read_text(encoding="utf-8") == once
    replace_block(page, "other", "kept")
    assert page.read_text(encoding="utf-8") == once


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no markers at all\n", "missing"),
        ("<!-- generated: speed -->\nbody\n", "'<!-- end generated: speed -->' is missing"),
        ("body\n<!-- end generated: speed -->\n", "'<!-- generated: speed -->' is missing"),
        (
            "<!-- end generated: speed -->\nbody\n<!-- generated: speed -->\n",
            "comes before",
        ),
        (PAGE + "<!-- generated: speed -->\n", "present 2 times"),
    ],
)
def test_replace_block_refuses_a_file_without_its_markers(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BlockError, match=problem):
        replace_block(path, "speed", "table")
    assert path.read_text(encoding="utf-8") == text  # nothing written
    with pytest.raises(BlockError, match=problem):
        block(path, "speed")


def test_replace_block_refuses_an_empty_table(page: Path) -> None:
    with pytest.raises(BlockError, match="empty"):
        replace_block(page, "speed", "\n  \n")
    assert page.read_text(encoding="utf-8") == PAGE


def test_a_block_name_is_not_matched_as_a_prefix(page: Path) -> None:
    with pytest.raises(BlockError, match="missing"):
        replace_block(page, "spee", "table")


def test_measurement_line_names_the_command_without_write_and_note() -> None:
    measurement = Measurement(
        "quarantine", argv=["--events", "1000", "--write", "--note", "fewer events: time."]
    )
    line = measurement.line("median of 5 runs", ["SQLite 3.40.1"])
    assert line.startswith(
        f"{MEASURED}{measurement.started:%Y-%m-%d} by "
        "`python -m benchmarks.registry.bench_quarantine --events 1000 --write`: "
        "median of 5 runs; "
    )
    assert f"load average (1/5/15 min) {measurement.load_before} before" in line
    assert line.endswith("SQLite 3.40.1. fewer events: time.")


def test_measurement_of_an_unregistered_block_is_refused() -> None:
    with pytest.raises(BlockError, match="not registered"):
        Measurement("no-such-benchmark")


def test_the_runner_refuses_an_unknown_block_before_running_anything() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "benchmarks.doc_blocks", "submissions", "no-such-block"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert answer.returncode == 2
    assert "unknown block(s) no-such-block; known: submissions," in answer.stderr
    assert "python -m benchmarks.registry.bench_submissions" not in answer.stderr
