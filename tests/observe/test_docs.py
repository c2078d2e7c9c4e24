"""docs/observe.md (the production-signal page) says what the code does."""

from __future__ import annotations

import re
from pathlib import Path

from registry.observe.catalog import markdown_table

PAGE = Path(__file__).parents[2] / "docs" / "observe.md"


def readme_block(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"docs/observe.md has no {name} block"
    return match.group(1)


def test_series_table_is_generated_from_the_catalog() -> None:
    assert readme_block("observe-metrics").strip() == markdown_table(), (
        "docs/observe.md's series table is out of date: python -m registry.observe.catalog"
    )


def documented_queries(selector: str, label: str, window: str, step: str) -> list[str]:
    """The page's PromQL table with S, L, W and D filled in."""
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("| what | query |") : text.index("Every query sent is stored")]
    queries = []
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        if len(cells) < 4:
            continue  # the blank line after the table
        for query in re.findall(r"`([^`]*\(.*?)`", cells[2]):
            queries.append(
                query.replace("{S}", "{" + selector + "}")
                .replace("(le, L)", f"(le, {label})")
                .replace("(finished_reason, L)", f"(finished_reason, {label})")
                .replace("by (L)", f"by ({label})")
                .replace("[W]", f"[{window}]")
                .replace("[W:D]", f"[{window}:{step}]")
            )
    return queries
