"""Loading result files for the importer tests.

Third-party files come from ../shared/fixtures (the test skips when absent); files named
``synthetic__*`` are the project's own, under tests/fixtures/load-tests.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from registry.errors import InvalidInput
from registry.importers import ImportedStage, import_result_file_with_findings
from registry.importers.common import MeasuredAtSource
from tests.support import fixtures

# --measured-at for files that leave the time to it (no time, or one without a zone). A file
# that states its own time with a zone keeps it, and a --measured-at far from it is refused.
WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def path_of(rel: str) -> Path:
    """``tool/file.json``: an own synthetic file, or a shared real one (skips when absent)."""
    if rel.split("/")[-1].startswith("synthetic__"):
        return fixtures.own(f"load-tests/{rel}")
    return fixtures.shared(f"load-tests/{rel}")


def load(rel: str, **kw: object) -> list[ImportedStage]:
    """Import a file as the user would: ``measured_at=WHEN`` only where the file leaves the
    time to --measured-at (unless ``measured_at`` is given)."""
    path = path_of(rel)
    args: dict[str, object] = {"workload": "chat@v1", "provider": "h100@v1", "replicas": 1}
    args.update(kw)
    file_name = str(args.pop("file_name", path.name))

    def run(**extra: object) -> list[ImportedStage]:
        return import_result_file_with_findings(
            path.read_bytes(),
            file_name=file_name,
            **args,  # type: ignore[arg-type]
            **extra,  # type: ignore[arg-type]
        )

    if "measured_at" in kw:
        return run()
    try:
        stages = run()
    except InvalidInput as exc:
        if exc.problems and exc.problems[0].loc == "--measured-at":
            return run(measured_at=WHEN)  # the file states no time
        raise
    if all(s.measured_at_source is MeasuredAtSource.FILE for s in stages):
        return stages
    return run(measured_at=WHEN)  # a time without a zone yields to --measured-at


def one(rel: str, **kw: object) -> ImportedStage:
    stages = load(rel, **kw)
    assert len(stages) == 1
    return stages[0]


def local_cli_env(database_url: str) -> dict[str, str]:
    """The CLI's environment on the local registry at ``database_url``, as alice."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    environment.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    return environment
