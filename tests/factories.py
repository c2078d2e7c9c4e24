"""Plain functions that build records for tests, starting from the worked example."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from registry.records.documents import load_document
from registry.records.kinds import RecordKind

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "chat-assistant"


def example(kind: RecordKind | str, **changes: Any) -> dict[str, Any]:
    """The worked example's document for `kind`, with top-level fields replaced."""
    kind = RecordKind(kind)
    document = copy.deepcopy(load_document(EXAMPLE_DIR / f"{kind.value}.yaml"))
    document.update(changes)
    return document


def example_path(kind: RecordKind | str) -> Path:
    return EXAMPLE_DIR / f"{RecordKind(kind).value}.yaml"


# The kinds the worked example has a file for (waivers are exceptions it does not need).
EXAMPLE_KINDS = [RecordKind.workload, RecordKind.provider, RecordKind.plan, RecordKind.evidence]
