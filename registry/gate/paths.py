"""File paths shortened for a reader: the folder they share said once, not on every line.

A decision that compared manifests names each file by the path the check was given
(``deploy/overlays/production/deployment.yaml``, or an absolute path); listed in full,
the same long folder repeats on every line and pushes the file names out of view. The
text verdict states the shared folder once; pages show each file's path below it and
keep the full path in a ``title`` attribute.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def shared_folder(paths: Iterable[str]) -> str:
    """The folder (ending in "/") every path lies in, "" when they share none.

    Whole path segments only (``deploy/a.yaml`` and ``deploy-b/c.yaml`` share nothing),
    and never a file's whole path: one path's folder is its own shared folder."""
    split = [p.replace("\\", "/").split("/") for p in paths]
    if not split:
        return ""
    folders = [parts[:-1] for parts in split]
    shared: list[str] = []
    for segments in zip(*folders, strict=False):
        if any(s != segments[0] for s in segments):
            break
        shared.append(segments[0])
    return "/".join(shared) + "/" if shared else ""


@dataclass(frozen=True)
class ShortPath:
    full: str
    short: str  # the path below the shared folder


def shortened(paths: Iterable[str], folder: str | None = None) -> list[ShortPath]:
    """Each path below ``folder`` (default: the folder they all share)."""
    listed = list(paths)
    base = shared_folder(listed) if folder is None else folder
    return [
        ShortPath(p, p[len(base) :] if base and p.startswith(base) and p != base else p)
        for p in listed
    ]
