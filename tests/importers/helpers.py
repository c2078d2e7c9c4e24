"""Loading result files for the importer tests.

Third-party files come from ../shared/fixtures (the test skips when absent); files named
``synthetic__*`` are the project's own, under tests/fixtures/load-tests.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from registry.importers import ImportedStage, import_result_file_with_findings
from tests.support import fixtures

WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def path_of(rel: str) -> Path:
    """``tool/file.json``: an own synthetic file, or a shared real one (skips when absent)."""
    if rel.split("/")[-1].startswith("synthetic__"):
        return fixtures.own(f"load-tests/{rel}")
    return fixtures.shared(f"load-tests/{rel}")


def load(rel: str, **kw: object) -> list[ImportedStage]:
    path = path_of(rel)
    args: dict[str, object] = {
        "workload": "chat@v1",
        "provider": "h100@v1",
        "measured_at": WHEN,
        "replicas": 1,
    }
    args.update(kw)
    return import_result_file_with_findings(
        path.read_bytes(),
        file_name=path.name,
        **args,  # type: ignore[arg-type]
    )


def one(rel: str, **kw: object) -> ImportedStage:
    stages = load(rel, **kw)
    assert len(stages) == 1
    return stages[0]
