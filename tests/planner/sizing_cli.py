"""`capgate plan size` of the worked example's plan against an edited provider, as a user
runs it: a fresh local registry, the workload and the provider submitted, then sized."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.factories import example_path
from tests.support.cli_process import capgate


def size_with_provider(
    tmp_path: Path, provider: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "provider.yaml"
    path.write_text(yaml.safe_dump(provider))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path / 'r.db'}", CAPGATE_PRINCIPAL="alice")
    assert capgate("db", "upgrade", env=env).returncode == 0
    assert capgate("workload", "submit", str(example_path("workload")), env=env).returncode == 0
    assert capgate("provider", "submit", str(path), env=env).returncode == 0
    return capgate("plan", "size", str(example_path("plan")), env=env)
