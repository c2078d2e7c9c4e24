"""Paths as CI systems name them: relative to the repository's root.

GitHub code scanning and annotations, and GitLab Code Quality, place a finding on a file
named from the root of the repository, whatever folder the job runs the check in. The
root is git's top level (``git rev-parse --show-toplevel``), else the working directory.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path


def repository_root(cwd: Path) -> Path:
    """The top level of the git work tree holding ``cwd``; ``cwd`` when there is none
    (no git, not a repository, or one git refuses to read)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return cwd
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else cwd


def repo_relative(cwd: Path | None = None) -> Callable[[str], str]:
    """A function writing a path (relative to ``cwd``, or absolute) relative to the
    repository root; a path outside the repository, or a name that is no path
    (``<stdin>``), is kept as given."""
    here = (cwd or Path.cwd()).resolve()
    root = repository_root(here).resolve()

    def relative(path: str) -> str:
        if not path or path.startswith("<"):
            return path
        full = Path(os.path.normpath(here / path))
        for candidate in (full, full.resolve()):
            try:
                return candidate.relative_to(root).as_posix()
            except ValueError:
                continue
        return path

    return relative
