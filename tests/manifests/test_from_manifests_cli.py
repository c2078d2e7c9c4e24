"""`capgate plan from-manifests` as a user runs it: a real process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from tests.manifests.helpers import EXAMPLE, K8S, OVERLAY, PROVIDER, WORKLOAD
from tests.support.cli_process import capgate as run_cli

ROOT = Path(__file__).parents[2]
EXAMPLE_ARGS = [str(K8S), "--overlay", str(OVERLAY), "--workload", WORKLOAD]
EXAMPLE_ARGS += ["--provider", PROVIDER]


def capgate(
    *args: str, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env, stdin=stdin, cwd=ROOT)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A fresh local registry, migrated by `capgate db upgrade`, acting as `ci`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path}/registry.db", CAPGATE_PRINCIPAL="ci")
    return env


def _migrated(env: dict[str, str]) -> dict[str, str]:
    assert capgate("db", "upgrade", env=env).returncode == 0
    return env


def _plan(text: str) -> dict[str, object]:
    return validate_record(RecordKind.plan, yaml.safe_load(text)).model_dump(mode="json")


def test_the_example_prints_the_example_plan(env: dict[str, str]) -> None:
    result = capgate("plan", "from-manifests", *EXAMPLE_ARGS, env=env)
    assert result.returncode == 0, result.stderr
    assert _plan(result.stdout) == _plan((EXAMPLE / "plan.yaml").read_text())
    assert "note: runtime: vllm/vllm-openai:v0.10.2" in result.stderr
    assert "source: serving.max_num_seqs" in result.stderr


def test_json_output_holds_plan_sources_and_notes(env: dict[str, str]) -> None:
    result = capgate("plan", "from-manifests", *EXAMPLE_ARGS, "--json", env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["plan"]["replicas_per_zone"] == {"us-east1-b": 3, "us-east1-c": 3, "us-east1-d": 3}
    assert out["sources"]["autoscaling.target"]["file"].endswith("hpa.yaml")
    assert out["submitted"] is None


def test_stdin(env: dict[str, str]) -> None:
    # What `helm template` or `kustomize build` writes: every manifest in one stream.
    stream = "---\n".join((K8S / n).read_text() for n in ("deployment.yaml", "hpa.yaml"))
    result = capgate(
        "plan", "from-manifests", "-", "--overlay", str(OVERLAY), "--workload", WORKLOAD,
        "--provider", PROVIDER, "--json", env=env, stdin=stream,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # Lines count in the whole stream, as an editor on the rendered output shows them.
    line = next(i for i, t in enumerate(stream.splitlines(), 1) if "maxReplicas: 18" in t)
    assert out["sources"]["autoscaling.max_replicas"] == {
        "file": "<stdin>",
        "document": 2,
        "line": line,
    }
    # No PDB in the stream: the overlay has none either, so the plan has none.
    assert "disruption_budget" not in out["plan"]["drain"]


def test_submit_registers_the_same_plan_as_the_example(env: dict[str, str]) -> None:
    _migrated(env)
    for kind, name in (("workload", "workload.yaml"), ("provider", "provider.yaml")):
        assert capgate(kind, "submit", str(EXAMPLE / name), env=env).returncode == 0
    result = capgate("plan", "from-manifests", *EXAMPLE_ARGS, "--submit", env=env)
    assert result.returncode == 0, result.stderr
    assert "# submitted: chat-assistant-prod@v1  sha256:" in result.stdout
    # The hand-written plan is the very same record: same digest, no new version.
    again = capgate("plan", "submit", str(EXAMPLE / "plan.yaml"), env=env)
    assert "chat-assistant-prod@v1" in again.stdout
    assert "unchanged, existing version" in again.stdout


def test_a_bad_manifest_exits_2_with_one_line_and_submits_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    _migrated(env)
    bad = tmp_path / "k8s"
    bad.mkdir()
    text = (K8S / "deployment.yaml").read_text().replace("replicas: 9", 'replicas: "three"')
    (bad / "deployment.yaml").write_text(text)
    result = capgate(
        "plan", "from-manifests", str(bad), "--overlay", str(OVERLAY), "--workload", WORKLOAD,
        "--provider", PROVIDER, "--submit", env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "replicas: " in t)
    assert result.stderr == (
        f"capgate: error: {bad / 'deployment.yaml'} (document 0, line {line}): "
        "spec.replicas: must be an integer, not a string ('three')\n"
    )
    listed = capgate("plan", "list", env=env)
    assert "chat-assistant-prod" not in listed.stdout


def test_invalid_yaml_exits_2_naming_the_line(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Service\n  bad: indent\n")
    result = capgate(
        "plan", "from-manifests", str(tmp_path / "broken.yaml"), "--workload", WORKLOAD,
        "--provider", PROVIDER, env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"capgate: error: {tmp_path / 'broken.yaml'} (document 0, line 3)"
    )
    assert result.stderr.count("\n") == 1


def test_output_writes_the_plan_file_and_stdout_says_where(
    env: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "plan.yaml"
    result = capgate("plan", "from-manifests", *EXAMPLE_ARGS, "--output", str(target), env=env)
    assert result.returncode == 0, result.stderr
    written = _plan(target.read_text(encoding="utf-8"))
    printed = capgate("plan", "from-manifests", *EXAMPLE_ARGS, env=env)
    assert written == _plan(printed.stdout)
    assert result.stdout == f"wrote plan {written['name']} to {target}\n"
    assert "source: " in result.stderr  # where each field came from, as without --output


def test_output_that_cannot_be_written_exits_2(env: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "missing-folder" / "plan.yaml"
    result = capgate("plan", "from-manifests", *EXAMPLE_ARGS, "--output", str(target), env=env)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("capgate: error:") and str(target) in result.stderr
