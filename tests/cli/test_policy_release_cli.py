"""Policy releases as a user runs them, and an edited installed bundle refused on every
path: the CLI on the local registry, the API, and the CLI's thin client (--server)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from registry.policy.bundle import load_bundle, policies_root, read_bundle
from tests.cli.test_gate_cli import CAPGATE, capgate
from tests.support.cli_runner import capgate_in_process
from tests.support.serve import capgate_serve

# Started first by tests/conftest.py: release journeys; the refusals and the edited install
# are real processes, the commands that set a release up and read what it did run in
# process (tests/support/cli_runner.py): 20 s of an idle core when all were processes;
# 9 s instead of 23 s on the same machine (load 2) since.
pytestmark = pytest.mark.long(8)

run = capgate_in_process

RELEASE = "capgate-policies@v1"


def _as(base: dict[str, str], who: str) -> dict[str, str]:
    return {**base, "CAPGATE_PRINCIPAL": who}


def _governed(env: dict[str, str]) -> None:
    """The installed bundle submitted by alice and approved by bob."""
    submitted = run(
        "policy", "release", "submit", "capgate-policies", "--notes", "first", env=_as(env, "alice")
    )
    assert submitted.returncode == 0, submitted.stderr
    assert f"submitted {RELEASE} ({load_bundle().revision}" in submitted.stdout
    approved = run("policy", "release", "approve", RELEASE, env=_as(env, "bob"))
    assert approved.returncode == 0, approved.stderr
    assert f"approved {RELEASE} (submitted by alice) as bob: in force" in approved.stdout
    assert "rechecked 0 plans" in approved.stdout  # decided under this bundle, or not at all


def _edited_install(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the installed policies package with retry_max_attempts 20 (the issue's
    edit), in a directory a process started there imports first; and its revision."""
    root = tmp_path / "edited"
    shutil.copytree(
        policies_root(), root / "policies", ignore=shutil.ignore_patterns("__pycache__")
    )
    data_file = root / "policies" / "data.json"
    data = json.loads(data_file.read_text())
    data["capgate"]["thresholds"]["retry_max_attempts"] = 20
    data_file.write_text(json.dumps(data, indent=2))
    probe = subprocess.run(
        [
            CAPGATE[0],
            "-c",
            "from registry.policy.bundle import load_bundle; print(load_bundle().revision)",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    revision = probe.stdout.strip()
    assert revision.startswith("sha256:") and revision != load_bundle().revision
    return root, revision


def _decision_count(env: dict[str, str]) -> int:
    listed = run("gate", "list", "--json", "--limit", "500", env=env)
    assert listed.returncode == 0, listed.stderr
    return len(json.loads(listed.stdout)["items"])


def test_success_release_journey(env: dict[str, str], tmp_path: Path) -> None:
    ungoverned = run("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    assert ungoverned.returncode == 0, ungoverned.stderr
    assert json.loads(ungoverned.stdout)["policy_release"] is None
    _governed(env)
    checked = run("gate", "check", "chat-assistant-prod", "--format", "json", env=env)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["policy_release"] == RELEASE
    pinned = run("gate", "check", "chat-assistant-prod", "--policy-release", RELEASE, env=env)
    assert pinned.returncode == 0, pinned.stderr
    listed = run("policy", "release", "list", env=env)
    assert RELEASE in listed.stdout and "bob" in listed.stdout
    # export writes the release as installable files: the same revision, read back.
    target = tmp_path / "installed"
    exported = run("policy", "release", "export", RELEASE, str(target), env=env)
    assert exported.returncode == 0, exported.stderr
    assert read_bundle(target).revision == load_bundle().revision
    again = capgate("policy", "release", "export", RELEASE, str(target), env=env)
    assert again.returncode == 2 and "is not empty" in again.stderr
    verified = run("audit", "verify", env=env)
    assert verified.returncode == 0, verified.stdout
    assert "decisions were taken before any policy release was approved" in verified.stdout


def test_fail_pin_of_another_release_exits_2(env: dict[str, str]) -> None:
    submitted = run("policy", "release", "submit", "capgate-policies", env=_as(env, "alice"))
    assert submitted.returncode == 0, submitted.stderr
    self_approval = capgate("policy", "release", "approve", RELEASE, env=_as(env, "alice"))
    assert self_approval.returncode == 2
    assert "may not approve it too" in self_approval.stderr
    approved = run("policy", "release", "approve", RELEASE, env=_as(env, "bob"))
    assert approved.returncode == 0, approved.stderr
    result = capgate(
        "gate", "check", "chat-assistant-prod", "--policy-release", "capgate-policies@v7", env=env
    )
    assert result.returncode == 2
    assert "no policy release capgate-policies@v7" in result.stderr


def test_fail_edited_install_is_an_error_on_every_path(
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    _governed(env)
    root, edited = _edited_install(tmp_path)
    approved = load_bundle().revision
    before = _decision_count(env)

    local = subprocess.run(
        [*CAPGATE, "gate", "check", "chat-assistant-prod"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert local.returncode == 2, local.stdout + local.stderr
    assert edited in local.stderr and approved in local.stderr and RELEASE in local.stderr

    with capgate_serve(env, "--insecure-local", cwd=root) as url:
        answer = httpx.post(
            f"{url}/v1/gate/checks", json={"plan": "chat-assistant-prod"}, timeout=60
        )
        assert answer.status_code == 503, answer.text
        assert edited in answer.text and approved in answer.text
        thin = capgate("gate", "check", "chat-assistant-prod", "--server", url, env=env)
        assert thin.returncode == 2, thin.stdout + thin.stderr
        assert edited in thin.stderr and approved in thin.stderr
    assert _decision_count(env) == before
