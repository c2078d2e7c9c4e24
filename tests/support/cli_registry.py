"""A local registry holding the worked example, registered through the CLI as a user does.

`seed_worked_example` runs `capgate` through its console entry point in this process
(tests/support/cli_runner.py; no interpreter start per command): migrate, submit the
workload, provider and plan, import the example's load test dated last week, and size
the plan once, so that the stored recomputation is reused by every `gate check` of that
plan version (the planner runs once per template, not once per test).
tests/conftest.py builds it once per test session as a template file; each test gets a
copy (the `env` fixture).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.factories import EXAMPLE_EVIDENCE, write_load_test
from tests.support.cli_process import capgate
from tests.support.cli_runner import capgate_in_process as run
from tests.support.worked_example import submit_records

PLAN = "chat-assistant-prod"


def local_env(db: Path) -> dict[str, str]:
    """The environment of `capgate` on the SQLite registry at ``db``, as principal "ci"."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    base.update(CAPGATE_DATABASE_URL=f"sqlite:///{db}", CAPGATE_PRINCIPAL="ci")
    return base


def import_load_test(
    tmp_path: Path,
    env: dict[str, str],
    *,
    days_ago: int,
    run: int = 0,
    name: str = EXAMPLE_EVIDENCE,
    cli: Callable[..., subprocess.CompletedProcess[str]] = capgate,
    **refs: str,
) -> subprocess.CompletedProcess[str]:
    """`capgate evidence import` of the example's load test, as the worked example runs it
    (``cli``: a real process, or tests/support/cli_runner.py's `capgate_in_process`)."""
    when = (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()
    targets = {"workload": "chat-assistant", "plan": PLAN, **refs}
    return cli(
        "evidence",
        "import",
        "--workload",
        targets["workload"],
        "--provider",
        "llama31-8b-h100-vllm",
        "--plan",
        targets["plan"],
        "--replicas",
        "1",
        "--measured-at",
        when,
        "--name",
        name,
        *write_load_test(tmp_path, run),
        env=env,
    )


def migrate_and_submit(env: dict[str, str]) -> None:
    """Migrate the registry ``env`` names and submit the example's workload, provider and
    plan (tests/support/worked_example.py), in this process, each command checked."""

    def checked(*args: str) -> None:
        result = run(*args, env=env)
        assert result.returncode == 0, result.stderr

    checked("db", "upgrade")
    submit_records(checked)


def seed_worked_example(folder: Path) -> Path:
    """The worked example registered and sized in ``folder``/registry.db; its path."""
    db = folder / "registry.db"
    env = local_env(db)
    migrate_and_submit(env)
    # The example's load test is illustrative: date it within the 90-day freshness limit.
    result = import_load_test(folder, env, days_ago=6, cli=run)
    assert result.returncode == 0, result.stderr
    sized = run("plan", "size", PLAN, env=env)
    assert sized.returncode == 0, sized.stderr
    return db


def copy_registry(db: Path, folder: Path) -> Path:
    """A copy of the SQLite registry ``db`` (and its WAL files) in ``folder``."""
    for suffix in ("", "-wal", "-shm"):
        source = db.with_name(db.name + suffix)
        if source.exists():
            shutil.copyfile(source, folder / source.name)
    return folder / db.name
