"""`capgate plan from-manifests` and `capgate gate check --manifests` as a user runs them,
on manifests as they are written: a templated Secret beside the workload, YAML aliases,
several problems at once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_gate_cli import capgate
from tests.manifests.helpers import OVERLAY, PROVIDER, WORKLOAD, edited_example_manifests, line_of
from tests.manifests.test_loading_as_written import LAUGHS, SECRET

PLAN = "chat-assistant-prod"


ALIASES = {
    "deployment.yaml": [
        ("  labels:\n    app.kubernetes.io/name", "  labels: &labels\n    app.kubernetes.io/name"),
        (
            "    matchLabels:\n      app.kubernetes.io/name: chat-assistant\n  strategy:",
            "    matchLabels: *labels\n  strategy:",
        ),
        (
            "      labels:\n        app.kubernetes.io/name: chat-assistant\n"
            "        app.kubernetes.io/component: vllm\n",
            "      labels: *labels\n",
        ),
    ]
}


def _from_manifests(
    folder: Path, env: dict[str, str], *more: str, overlay: Path = OVERLAY
) -> tuple[int, str, str]:
    result = capgate(
        "plan", "from-manifests", str(folder), "--overlay", str(overlay),
        "--workload", WORKLOAD, "--provider", PROVIDER, *more, env=env,
    )  # fmt: skip
    return result.returncode, result.stdout, result.stderr


def _decisions(env: dict[str, str]) -> int:
    listed = capgate("gate", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return len(json.loads(listed.stdout)["items"])


def test_a_templated_secret_beside_the_workload_is_skipped(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = edited_example_manifests(tmp_path, {})
    (folder / "secret.yaml").write_text(SECRET)
    code, stdout, stderr = _from_manifests(folder, env)
    assert code == 0, stderr
    assert "replicas_per_zone:" in stdout
    assert (
        f"note: {folder / 'secret.yaml'} (document 0, line 6): Secret hf-token (core) skipped: "
        "capgate does not read this kind, and it cannot be decoded (not valid YAML: found "
        "unhashable key)\n"
    ) in stderr

    checked = capgate("gate", "check", PLAN, "--manifests", str(folder), "--json", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["outcome"] == "allow"


def test_aliases_are_read_by_both_commands(env: dict[str, str], tmp_path: Path) -> None:
    folder = edited_example_manifests(tmp_path, ALIASES)
    code, _, stderr = _from_manifests(folder, env, "--json")
    assert code == 0, stderr
    checked = capgate("gate", "check", PLAN, "--manifests", str(folder), "--json", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["outcome"] == "allow"


def test_a_billion_laughs_is_refused_and_nothing_stored(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = edited_example_manifests(tmp_path, {})
    (folder / "laughs.yaml").write_text(LAUGHS)
    before = _decisions(env)
    expected = (
        f"capgate: error: {folder / 'laughs.yaml'} (document 0, line 1): aliases expand this "
        "document by "
    )
    code, stdout, stderr = _from_manifests(folder, env, "--submit")
    assert (code, stdout) == (2, "")
    assert stderr.startswith(expected) and "(the bound on alias expansion)\n" in stderr
    checked = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert checked.returncode == 2
    assert expected in checked.stderr
    assert _decisions(env) == before


def test_every_problem_is_printed_once_by_both_commands(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = edited_example_manifests(
        tmp_path,
        {
            "deployment.yaml": [
                ("terminationGracePeriodSeconds: 300", 'terminationGracePeriodSeconds: "300"')
            ],
            "hpa.yaml": [("maxReplicas: 18", 'maxReplicas: "x"')],
        },
    )
    (folder / "broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    deployment, hpa = folder / "deployment.yaml", folder / "hpa.yaml"
    lines = [
        f"{folder / 'broken.yaml'} (document 0, line 3): not valid YAML: ",
        f"{deployment} (document 0, line {line_of(deployment, 'terminationGrace')}): "
        "spec.template.spec.terminationGracePeriodSeconds: must be an integer, not a string "
        "('300')",
        f"{hpa} (document 0, line {line_of(hpa, 'maxReplicas:')}): spec.maxReplicas: must be "
        "an integer, not a string ('x')",
    ]
    before = _decisions(env)
    code, stdout, plan_stderr = _from_manifests(folder, env, "--submit")
    checked = capgate("gate", "check", PLAN, "--manifests", str(folder), env=env)
    assert (code, stdout, checked.returncode) == (2, "", 2)
    # (An HPA is read with the workload it scales: the grace period is a field of a
    # workload that was read, so its HPA is read too.)
    for stderr in (plan_stderr, checked.stderr):
        first, *rest = stderr.splitlines()
        assert first.startswith(f"capgate: error: {lines[0]}")
        assert first.endswith("(and 2 more problems)")
        assert rest == [f"  {line}" for line in lines[1:]]
    # A pipeline that reads only its report sees every problem there too.
    github = capgate(
        "gate", "check", PLAN, "--manifests", str(folder), "--format", "github", env=env
    )
    assert github.returncode == 2
    (annotation,) = [row for row in github.stdout.splitlines() if row.startswith("::error")]
    for line in lines:
        assert line in annotation, line
    assert _decisions(env) == before


def test_an_overlay_that_contradicts_the_replicas_is_reported_at_the_replicas_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = edited_example_manifests(
        tmp_path, {"deployment.yaml": [("  replicas: 9\n", "  replicas: 1\n")]}
    )
    deployment = folder / "deployment.yaml"
    overlay = tmp_path / "overlay.yaml"
    zones = "replicas_per_zone: {us-east1-b: 3, us-east1-c: 3, us-east1-d: 3}\n"
    overlay.write_text(OVERLAY.read_text() + zones)
    code, _, stderr = _from_manifests(folder, env, overlay=overlay)
    assert code == 2
    assert stderr == (
        f"capgate: error: {deployment} (document 0, line {line_of(deployment, 'replicas: 1')}): "
        f"replicas_per_zone: the manifests run 1 replicas, but the overlay places 9 "
        f"({overlay}:{line_of(overlay, 'replicas_per_zone')})\n"
    )
