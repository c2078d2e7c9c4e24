"""`capgate ARGS` as a user runs it: a real process of this checkout's CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CAPGATE = [sys.executable, "-m", "cli.main"]


def capgate(
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """The CLI as a process; from another folder (``cwd``) it still runs this checkout."""
    if cwd is not None:
        env = {
            **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        }
    return subprocess.run(
        [*CAPGATE, *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
