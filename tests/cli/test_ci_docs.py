"""docs/ci.md's jobs run as written: every `capgate` command line of its yaml blocks.

The lines run on a local registry holding the worked example (`--server
"$CAPGATE_SERVER"` is dropped: no server is started) in a folder laid out as the jobs
expect it: the example's manifests in `k8s/`, its plan in `deploy/plan.yaml`. Each must
allow (exit 0) and write its reports (`--format` on stdout, each `--report FORMAT=PATH` in
its file), each parsing in its format.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from tests.cli.test_gate_cli import CAPGATE
from tests.factories import example_path
from tests.gate.test_manifest_consistency import K8S

ROOT = Path(__file__).resolve().parents[2]
CI_DOC = ROOT / "docs" / "ci.md"
PLAN = "chat-assistant-prod"
SERVER = '--server "$CAPGATE_SERVER"'


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def command_lines() -> list[str]:
    """Every line of a yaml block that runs capgate (`run: capgate ...`, `- capgate ...`)."""
    lines = []
    for block in yaml_blocks(CI_DOC.read_text(encoding="utf-8")):
        for line in block.splitlines():
            match = re.match(r"\s*(?:-\s+)?(?:run:\s+)?(capgate\s.*)$", line)
            if match:
                lines.append(match.group(1))
    return lines


def test_the_doc_has_both_jobs_and_they_are_yaml() -> None:
    blocks = yaml_blocks(CI_DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 2
    github, gitlab = (yaml.safe_load(block) for block in blocks)
    steps = github["jobs"]["capgate"]["steps"]
    assert any(
        str(step.get("uses", "")).startswith("github/codeql-action/upload-sarif") for step in steps
    )
    assert gitlab["capgate"]["artifacts"]["reports"] == {
        "codequality": "gl-code-quality-report.json",
        "junit": "capgate-junit.xml",
    }
    formats = {
        chosen for line in command_lines() for chosen, _ in reports(shlex.split(line)) if chosen
    }
    assert formats == {"sarif", "github", "junit", "gitlab", "text"}


def local_argv(line: str) -> list[str]:
    """A documented command line as run here: no server, $PLAN expanded, shell tail cut."""
    assert SERVER in line, line  # every documented check names the server
    line = line.replace(SERVER, "").replace('"$PLAN"', PLAN)
    assert "$" not in line, f"a variable this test does not know: {line}"
    argv = shlex.split(line, comments=True)
    if "||" in argv:
        argv = argv[: argv.index("||")]
    assert argv[:3] == ["capgate", "gate", "check"], line
    return argv[1:]


def reports(argv: list[str]) -> list[tuple[str, str | None]]:
    """Each report a command line asks for: its format and file (None: stdout)."""
    chosen = argv[argv.index("--format") + 1] if "--format" in argv else "text"
    output = argv[argv.index("--output") + 1] if "--output" in argv else None
    extra = [argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--report"]
    return [(chosen, output), *((name, path) for name, path in extra)]


def check_reports(argv: list[str], workdir: Path, stdout: str) -> None:
    for chosen, path in reports(argv):
        check_report(chosen, workdir / path if path else None, stdout)


def check_report(chosen: str, output: Path | None, stdout: str) -> None:
    if output is None:
        lines = stdout.splitlines()
        if chosen == "text":
            assert lines and lines[0].startswith(f"ALLOW {PLAN}@v1 (decision "), stdout
            return
        assert chosen == "github", chosen
        assert lines and all(line.startswith("::") for line in lines), stdout
        assert lines[-1].startswith("::notice file=deploy/plan.yaml,title=capgate ALLOW::")
        return
    assert output.is_file(), output
    text = output.read_text(encoding="utf-8")
    if chosen == "sarif":
        log = json.loads(text)
        assert log["version"] == "2.1.0"
        assert log["runs"][0]["properties"]["outcome"] == "allow"
    elif chosen == "gitlab":
        issues = json.loads(text)
        assert isinstance(issues, list)
        assert all(issue["severity"] in {"info", "minor"} for issue in issues)  # an allow
    elif chosen == "junit":
        suite = ET.fromstring(text)
        assert suite.tag in {"testsuite", "testsuites"}
        assert suite.find(".//testcase") is not None
    else:
        raise AssertionError(f"no check for --format {chosen}")


@pytest.mark.parametrize("line", command_lines())
def test_success_each_documented_command_runs(
    line: str, env: dict[str, str], tmp_path: Path
) -> None:
    workdir = tmp_path / "repo"
    shutil.copytree(K8S, workdir / "k8s")
    (workdir / "deploy").mkdir()
    shutil.copyfile(example_path("plan"), workdir / "deploy" / "plan.yaml")
    argv = local_argv(line)
    result = subprocess.run(
        [*CAPGATE, *argv],
        cwd=workdir,
        env={
            **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.startswith(f"ALLOW {PLAN}@v1")
    check_reports(argv, workdir, result.stdout)
