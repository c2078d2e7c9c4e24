"""A registry that cannot be written: reads go on, writes and gate checks fail closed.

tests/storage/test_contention.py covers a registry on a read-only bind mount opened
afresh (reads, `workload submit` refused). Here:

* the registry's file (0444) and directory (0555) are read-only to the CLI run as an
  unprivileged user (`setpriv --reuid=65534`: for root, modes stop nothing): reads
  work, and `gate check`, which must store its decision, exits 2 in one line;
* the filesystem turns read-only under a running server (its bind mount remounted
  read-only while it is idle, as `errors=remount-ro` does): the server reads on,
  gate checks and writes are 503s in the error shape naming the cause, a fresh CLI
  exits 2, and once the mount is writable again the same server carries on, nothing
  lost and nothing phantom.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.policy.bundle import load_bundle
from registry.policy.wasm_build import compiled_policy
from registry.storage import migrate
from registry.storage.database import Database
from tests.factories import example
from tests.faults.common import (
    PLAN,
    Ledger,
    assert_cli_error,
    assert_http_error,
    assert_registry_whole,
    capgate,
    cli_env,
    embedded_settings,
    seed,
)
from tests.support.auth import bearer, token_for

NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can reach (pytest's tmp_path is root's 0700)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as an unprivileged user")
    path = Path(tempfile.mkdtemp(prefix="capgate-faults-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for directory, _dirs, _files in os.walk(path):
            Path(directory).chmod(0o755)
        shutil.rmtree(path, ignore_errors=True)


def _policy_cache_for(
    user_dir: Path, opa_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The user's own OPA and compiled bundle (root's cache is out of their reach): the
    embedded engine finds the module compiled, so the gate reaches the registry."""
    opa = user_dir / "opa"
    shutil.copy2(opa_binary, opa)
    opa.chmod(0o755)
    cache = user_dir / "cache"
    monkeypatch.setenv("CAPGATE_CACHE", str(cache))
    compiled_policy(load_bundle())
    for directory, _dirs, names in os.walk(cache):
        Path(directory).chmod(0o755)
        for name in names:
            (Path(directory) / name).chmod(0o644)
    return {"CAPGATE_OPA_BINARY": str(opa), "CAPGATE_CACHE": str(cache)}


def test_read_only_files_refuse_the_gate_for_an_unprivileged_user(
    shared_dir: Path, opa_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = shared_dir / "registry" / "registry.db"
    registry.parent.mkdir()
    url = f"sqlite:///{registry}"
    migrate.upgrade(url)
    database = Database(url)
    seed(database)
    database.engine.dispose()  # closed cleanly: no -wal or -shm left beside it
    before = assert_registry_whole(database)
    database.engine.dispose()
    home = shared_dir / "home"  # the user's own (writable) data directory
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    document = shared_dir / "workload.json"
    document.write_text(json.dumps(example("workload", description="refused")))
    document.chmod(0o644)
    registry.chmod(0o444)
    registry.parent.chmod(0o555)
    policy = _policy_cache_for(shared_dir, opa_binary, monkeypatch)
    env = cli_env(url, HOME=str(home), XDG_DATA_HOME=str(home), **policy)

    read = capgate("audit", "verify", env=env, uid=NOBODY)  # reads every row
    assert read.returncode == 0, read.stdout + read.stderr
    assert read.stdout.startswith(f"intact: {before['events']} events"), read.stdout
    gate = capgate("gate", "check", PLAN, env=env, uid=NOBODY)
    assert_cli_error(gate, "read-only", "writes are refused")
    submit = capgate("workload", "submit", str(document), env=env, uid=NOBODY)
    assert_cli_error(submit, "read-only")

    after = assert_registry_whole(Database(url), Ledger(refused={"refused"}))
    assert after == before  # no decision, no event, no version


@pytest.fixture
def remountable(tmp_path: Path) -> Iterator[Path]:
    """A directory bind-mounted onto itself's twin, to be remounted read-only later."""
    source, target = tmp_path / "source", tmp_path / "mounted"
    source.mkdir()
    target.mkdir()
    bound = subprocess.run(["mount", "--bind", str(source), str(target)], check=False)
    if bound.returncode != 0:
        pytest.skip("cannot bind-mount here (needs root or CAP_SYS_ADMIN)")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _remount(target: Path, mode: str) -> None:
    done = subprocess.run(
        ["mount", "-o", f"remount,bind,{mode}", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot remount {mode} here: {done.stderr.strip()}")


def test_filesystem_turning_read_only_under_a_server_fails_closed(remountable: Path) -> None:
    url = f"sqlite:///{remountable / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)  # opened writable: the server started on a writable disk
    seed(database)
    client = TestClient(
        create_app(database, embedded_settings()), headers=bearer(token_for(database, "release"))
    )
    ledger = Ledger()
    allowed = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert allowed.status_code == 200 and allowed.json()["outcome"] == "allow", allowed.text
    ledger.decisions.add(allowed.json()["id"])
    before = assert_registry_whole(database, ledger)
    database.engine.dispose()  # idle: a writer's open file would keep the mount busy

    _remount(remountable, "ro")
    try:
        # The same server reads on (it reopens the file read-only) and says why it
        # refuses the gate check, which must store its decision, and the write.
        ready = client.get("/readyz")
        assert ready.status_code == 200, ready.text
        shown = client.get("/v1/workloads/chat-assistant")
        assert shown.status_code == 200, shown.text
        gate = client.post("/v1/gate/checks", json={"plan": PLAN})
        assert_http_error(gate, 503, "read-only", "its filesystem is mounted read-only")
        refused = client.post("/v1/workloads", json=example("workload", description="refused"))
        assert_http_error(refused, 503, "read-only")
        ledger.refused.add("refused")
        # A process started now sees the read-only filesystem and says so.
        env = cli_env(url)
        assert_cli_error(capgate("gate", "check", PLAN, env=env), "read-only")
    finally:
        _remount(remountable, "rw")

    added = client.post("/v1/workloads", json=example("workload", description="after"))
    assert added.status_code == 201, added.text
    ledger.acknowledged.add("after")
    again = client.post("/v1/gate/checks", json={"plan": PLAN})
    assert again.status_code == 200 and again.json()["outcome"] == "allow", again.text
    ledger.decisions.add(again.json()["id"])
    after = assert_registry_whole(database, ledger)
    assert after["decisions"] == before["decisions"] | {again.json()["id"]}
    database.engine.dispose()
