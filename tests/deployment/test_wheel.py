"""The wheel a pipeline installs: built from this checkout, installed bare into a fresh
virtual environment (the thin client: typer, PyYAML, platformdirs from the index), and run
against a live server as docs/ci.md's jobs run it. A command that needs the registry says
to install the `server` extra instead of failing with a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cli.test_ci_docs import CI_DOC, yaml_blocks
from tests.cli.test_remote_gate import ALLOWS, DENIES, K8S, Remote, remote

__all__ = ["remote"]  # the fixture this module borrows

REPOSITORY = Path(__file__).resolve().parents[2]
SERVER_ONLY = ("sqlalchemy", "pydantic", "fastapi", "numpy", "httpx", "opapywasm")


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        argv, capture_output=True, text=True, timeout=600, check=False, **kwargs
    )


@pytest.fixture(scope="module")
def thin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A virtual environment holding only the built wheel and its own dependencies."""
    folder = tmp_path_factory.mktemp("wheel")
    print("building the wheel and a fresh venv (about 30 s) ...", file=sys.stderr)
    built = _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(folder / "dist"), "."],
        cwd=REPOSITORY,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (folder / "dist").glob("capgate-*-py3-none-any.whl")
    venv.create(folder / "venv", with_pip=True)
    bin_dir = folder / "venv" / "bin"
    # docs/ci.md's jobs' install step, as written, with CAPGATE_WHEEL the wheel just built.
    (line,) = set(install_lines())
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.defpath}", "CAPGATE_WHEEL": str(wheel)}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "NO_"))})
    installed = _run(["bash", "-c", f"{line} --quiet"], env=env, cwd=folder)
    assert installed.returncode == 0, installed.stderr[-2000:]
    yield bin_dir


def install_lines() -> list[str]:
    """The pip install steps of docs/ci.md's jobs (one per job)."""
    lines = [
        match.group(1)
        for block in yaml_blocks(CI_DOC.read_text(encoding="utf-8"))
        for match in re.finditer(r"^\s*(?:-\s+|run:\s+)(python -m pip install .*)$", block, re.M)
    ]
    assert len(lines) == 2, lines
    return lines


def test_the_jobs_install_the_wheel_they_name() -> None:
    """Each job installs CAPGATE_WHEEL and says where it comes from, never an index name
    capgate does not publish."""
    assert set(install_lines()) == {'python -m pip install "$CAPGATE_WHEEL"'}
    github, gitlab = (yaml.safe_load(b) for b in yaml_blocks(CI_DOC.read_text(encoding="utf-8")))
    assert github["jobs"]["capgate"]["env"]["CAPGATE_WHEEL"].endswith("-py3-none-any.whl")
    assert gitlab["capgate"]["variables"]["CAPGATE_WHEEL"].endswith("-py3-none-any.whl")


def _clean_env(remote: Remote) -> dict[str, str]:
    # Nothing of the suite's own environment leaks in: no PYTHONPATH to this checkout.
    env = {k: v for k, v in remote.env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.defpath
    return env


def test_the_bare_wheel_holds_no_server_dependency(thin: Path) -> None:
    found = _run(
        [
            str(thin / "python"),
            "-c",
            "import importlib.util, json, sys; "
            "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))",
            *SERVER_ONLY,
        ]
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"


def test_the_thin_client_checks_through_the_server(
    thin: Path, remote: Remote, tmp_path: Path
) -> None:
    """Outside the checkout (so nothing is imported from it), with the policy bundle, the
    planner and the ORM absent: the server decides, the exit code says how."""
    env = _clean_env(remote)
    allow = _run(
        [str(thin / "capgate"), "gate", "check", ALLOWS, "--server", remote.url,
         "--manifests", str(K8S), "--format", "sarif"],
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert allow.returncode == 0, allow.stderr
    assert allow.stderr.startswith(f"ALLOW {ALLOWS} (decision ")
    assert '"version": "2.1.0"' in allow.stdout
    deny = _run(
        [str(thin / "capgate"), "gate", "check", DENIES, "--server", remote.url],
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert deny.returncode == 1, deny.stderr
    assert deny.stdout.startswith(f"DENY {DENIES}"), deny.stdout  # the text report


def test_a_registry_command_on_the_bare_wheel_names_the_extra(
    thin: Path, remote: Remote, tmp_path: Path
) -> None:
    listed = _run([str(thin / "capgate"), "plan", "list"], cwd=tmp_path, env=_clean_env(remote))
    assert listed.returncode == 2
    assert listed.stdout == ""
    (line,) = listed.stderr.splitlines()
    assert line.startswith("capgate: error: this command needs capgate's server dependencies")
    assert "pip install 'capgate[server]'" in line
