"""The embedded SQLite registry's file: where it is, whether it can be written, and how
to open it read-only, with the standard library alone.

The single-record reads that use it without SQLAlchemy (for a fast `capgate plan show`)
are registry.records.sqlite_reads.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote


def sqlite_path(url: str) -> Path | None:
    """The file of a `sqlite:///path` URL, or None for any other database."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    return Path(url[len(prefix) :])


def _filesystem_read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def sqlite_read_only_reason(path: Path) -> str | None:
    """Why the SQLite registry at `path` cannot be written, or None when it can.

    A missing file is writable (it is created). SQLite in WAL mode writes beside the
    file (`-wal`, `-shm`), so an unwritable directory makes the registry read-only too.
    `os.access` and the filesystem's read-only flag both hold for root as well.
    """
    if not path.exists():
        return None
    directory = path.parent
    if _filesystem_read_only(path):
        return "its filesystem is mounted read-only"
    if not os.access(path, os.W_OK):
        return "its file is not writable"
    if not os.access(directory, os.W_OK | os.X_OK):
        return "its directory is not writable"
    return None


def read_only_uri(path: Path) -> str:
    """A SQLite URI that opens `path` without ever writing it (or beside it).

    With a writable directory (or existing `-shm`/`-wal` files), `mode=ro` reads the
    file and any WAL content safely while other processes write. Without one, SQLite
    cannot set up WAL shared memory; `immutable=1` then reads the file as it stands
    (nothing can be writing it: its directory and WAL files are not writable).
    """
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    shm = path.with_name(path.name + "-shm")
    writable_dir = os.access(path.parent, os.W_OK | os.X_OK)
    if _filesystem_read_only(path) or (not shm.exists() and not writable_dir):
        uri += "&immutable=1"
    return uri
