"""The plan fields a set of manifests states, as the JSON a gate check sends.

Standard library and YAML only: `gate check --server --manifests` reads the manifests
with this and sends the result as it is; the server validates it
(registry.manifests.consistency.StatedManifests) and compares it with the plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from registry.manifests.from_manifests import read_compared
from registry.manifests.loading import STDIN_NAME


def stated_document(paths: Sequence[str]) -> dict[str, Any]:
    """``{"fields": {dotted plan field: {value, file, document, line}}, "files": {file:
    sha256}}`` for ``paths``,
    with ``total_replicas`` (the serving replicas in all, at their ``replicas:`` line)
    however they spread over zones, what they serve as written (``provider.*``: model,
    image, accelerator, dtype flags) and the spot capacity they run on (``capacity.*``).

    Raises InvalidInput naming file, document and line for a manifest that cannot be
    read, as `plan from-manifests` does; needs no overlay.
    """
    fields, files = read_compared(paths)
    stated: dict[str, dict[str, Any]] = {}
    for name, (value, where) in sorted(fields.items()):
        if isinstance(value, dict | list):
            continue  # the whole replicas_per_zone map: its zones are stated one by one
        stated[name] = {
            "value": value,
            "file": where.file,
            "document": where.document,
            "line": where.line,
        }
    return {"fields": stated, "files": _digests(files)}


def _digests(files: Iterable[str]) -> dict[str, str]:
    """The sha256 of each manifest file read (stdin has no file to name), so a decision
    records exactly which files it compared."""
    found = {}
    for name in sorted(set(files)):
        if name == STDIN_NAME:
            continue
        try:
            found[name] = "sha256:" + hashlib.sha256(Path(name).read_bytes()).hexdigest()
        except OSError:
            continue  # read a moment ago; gone now: named without a digest is worse
    return found
