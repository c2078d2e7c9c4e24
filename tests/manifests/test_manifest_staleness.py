"""A manifest change that makes the plan materially different stales the plan's evidence.

End to end as a user runs it, on both databases: the worked example's plan is built from
its Kubernetes manifests and submitted, its load test is imported against that plan, then
a copy of the manifests is edited and submitted again. The CLI runs in-process
(typer's CliRunner) on the local registry.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.manifests.helpers import EXAMPLE, K8S, PROVIDER, WORKLOAD
from tests.support.cli_runner import Capgate as InProcess

PLAN = "chat-assistant-prod"
EVIDENCE = "chat-assistant-h100-mixed-2026-11"
LOAD_TEST = EXAMPLE / "load-test"


class Capgate(InProcess):
    """`capgate ARGS` in this process, on one registry, with the manifests' command."""

    def from_manifests(self, folder: Path) -> Result:
        # As the README runs it: the overlay beside the manifests, never read as one.
        return self(
            "plan", "from-manifests", str(folder), "--overlay", str(folder / "overlay.yaml"),
            "--workload", WORKLOAD, "--provider", PROVIDER, "--submit",
        )  # fmt: skip


@pytest.fixture
def capgate(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Capgate:
    """The worked example registered: workload, provider, the plan built from its
    manifests (v1), and its load test imported against that plan."""
    for name in (
        "CAPGATE_SERVER",
        "CAPGATE_TOKEN",
        "CAPGATE_TOKEN_FILE",
        "CAPGATE_POLICY_ENGINE",
        "CAPGATE_OPA_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAPGATE_DATABASE_URL", database_url)
    monkeypatch.setenv("CAPGATE_PRINCIPAL", "alice")
    run = Capgate()
    run("workload", "submit", str(EXAMPLE / "workload.yaml"))
    run("provider", "submit", str(EXAMPLE / "provider.yaml"))
    built = run.from_manifests(K8S)
    assert f"# submitted: {PLAN}@v1  sha256:" in built.stdout
    # Within the 90-day limit, as scripts/demo.sh imports it.
    measured_at = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%dT00:00:00Z")
    imported = run(
        "evidence", "import", "--workload", "chat-assistant", "--provider", "llama31-8b-h100-vllm",
        "--plan", PLAN, "--replicas", "1", "--measured-at", measured_at,
        "--class", f"interactive={LOAD_TEST / 'interactive.profile_export_aiperf.json'}",
        "--class", f"batch={LOAD_TEST / 'batch.profile_export_aiperf.json'}",
        "--name", EVIDENCE,
    )  # fmt: skip
    assert imported.stdout.startswith(f"{EVIDENCE}@v1  sha256:")
    shown = run.json("evidence", "show", EVIDENCE)
    assert shown["references"]["plan"] == f"{PLAN}@v1"
    return run


def edited(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> Path:
    """A copy of the example's k8s folder with ``edits`` (file: [(old, new)]) applied."""
    folder = tmp_path / "k8s"
    shutil.copytree(K8S, folder)
    for name, replacements in edits.items():
        path = folder / name
        text = path.read_text()
        for old, new in replacements:
            assert old in text, f"{old!r} not in {name}"
            text = text.replace(old, new)
        path.write_text(text)
    return folder


def stale(capgate: Capgate) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = capgate.json("evidence", "list", "--stale")["items"]
    return items


# A material change, and what it must read as: (field, old value, new value, rule).
MATERIAL = {
    "max-num-seqs": (
        {"deployment.yaml": [("--max-num-seqs=256", "--max-num-seqs=128")]},
        [("serving.max_num_seqs", 256, 128, "serving config changed")],
    ),
    "tensor-parallel-with-gpus": (
        {
            "deployment.yaml": [
                ("--tensor-parallel-size=1", "--tensor-parallel-size=2"),
                ("nvidia.com/gpu: 1}", "nvidia.com/gpu: 2}"),  # requests and limits
            ]
        },
        [
            ("parallelism.tensor_parallel", 1, 2, "accelerators per replica changed"),
            ("parallelism.gpus_per_replica", 1, 2, "accelerators per replica changed"),
        ],
    ),
}


@pytest.mark.parametrize("case", list(MATERIAL))
def test_a_material_manifest_change_stales_the_evidence_and_the_gate_denies(
    capgate: Capgate, tmp_path: Path, case: str
) -> None:
    edits, expected = MATERIAL[case]
    before = capgate.json("gate", "check", PLAN)
    assert (before["outcome"], before["plan"]) == ("allow", f"{PLAN}@v1")
    assert stale(capgate) == []

    built = capgate.from_manifests(edited(tmp_path, edits))
    assert f"# submitted: {PLAN}@v2  sha256:" in built.stdout
    assert "(created)" in built.stdout
    versions = capgate.json("plan", "versions", PLAN)
    assert [v["version"] for v in versions["items"]] == [1, 2]
    plan = capgate.json("plan", "show", PLAN)["content"]
    for field, _, new, _ in expected:
        section, key = field.split(".")
        assert plan[section][key] == new

    # Listed stale, naming the plan versions, each field and both values.
    [item] = stale(capgate)
    assert item["ref"] == f"{EVIDENCE}@v1"
    assert not item["expired"]
    [entry] = item["staleness"]
    assert (entry["cause_kind"], entry["cause"]) == ("plan", f"{PLAN}@v2")
    assert (entry["measured_kind"], entry["measured"]) == ("plan", f"{PLAN}@v1")
    assert [(c["field"], c["old"], c["new"], c["rule"]) for c in entry["changes"]] == expected
    described = "; ".join(f"{f}: {old!r} -> {new!r}, {rule}" for f, old, new, rule in expected)
    reason = f"plan {PLAN}@v1 -> {PLAN}@v2: {described}"
    assert item["reasons"] == [reason]
    listed = capgate("evidence", "list", "--stale").stdout
    assert f"{EVIDENCE}@v1" in listed and reason in listed
    history = capgate("evidence", "history", EVIDENCE).stdout.splitlines()
    assert history[0] == f"{EVIDENCE}@v1  STALE"
    assert history[1].startswith("measured ")
    assert history[2].endswith(f"  plan {PLAN}@v1 -> {PLAN}@v2")
    assert history[3:] == [f"    {f}: {old!r} -> {new!r}, {rule}" for f, old, new, rule in expected]

    # The next gate check of the plan denies on evidence freshness: nothing else is fresh.
    after = capgate.json("gate", "check", PLAN, code=1)
    assert (after["outcome"], after["plan"]) == ("deny", f"{PLAN}@v2")
    fresh = [v for v in after["violations"] if v["policy"] == "evidence_fresh"]
    # The gate gives one reason per change.
    reasons = [
        f"{PLAN}@v1 -> {PLAN}@v2: {f}: {old!r} -> {new!r}, {rule}" for f, old, new, rule in expected
    ]
    assert fresh == [
        {
            "policy": "evidence_fresh",
            "rule": "evidence_stale",
            "severity": "high",
            "message": f"evidence {EVIDENCE}@v1 is stale: " + "; ".join(reasons),
            "details": {"evidence": f"{EVIDENCE}@v1", "stale_reasons": reasons},
        }
    ]


def test_replicas_and_hpa_floor_make_a_new_version_and_stale_nothing(
    capgate: Capgate, tmp_path: Path
) -> None:
    folder = edited(
        tmp_path,
        {
            "deployment.yaml": [("replicas: 9", "replicas: 12")],
            "hpa.yaml": [("minReplicas: 9", "minReplicas: 12")],
        },
    )
    built = capgate.from_manifests(folder)
    assert f"# submitted: {PLAN}@v2  sha256:" in built.stdout
    plan = capgate.json("plan", "show", f"{PLAN}@v2")["content"]
    assert plan["replicas_per_zone"] == {"us-east1-b": 4, "us-east1-c": 4, "us-east1-d": 4}
    assert plan["autoscaling"]["min_replicas"] == 12

    assert stale(capgate) == []
    assert capgate("evidence", "list", "--stale").stdout == "no stale evidence\n"
    history = capgate.json("evidence", "history", EVIDENCE)
    assert (history["stale"], history["entries"], history["reasons"]) == (False, [], [])
    decision = capgate.json("gate", "check", PLAN)
    assert (decision["outcome"], decision["plan"]) == ("allow", f"{PLAN}@v2")
    assert decision["violations"] == []

    # A later material change is still judged from the version the evidence was measured
    # against (v1), through the immaterial v2.
    (folder / "deployment.yaml").write_text(
        (folder / "deployment.yaml").read_text().replace("--block-size=16", "--block-size=32")
    )
    assert f"# submitted: {PLAN}@v3  sha256:" in capgate.from_manifests(folder).stdout
    [item] = stale(capgate)
    [entry] = item["staleness"]
    assert (entry["measured"], entry["cause"]) == (f"{PLAN}@v1", f"{PLAN}@v3")
    assert item["reasons"] == [
        f"plan {PLAN}@v1 -> {PLAN}@v3: serving.block_size: 16 -> 32, serving config changed"
    ]


def test_a_comment_in_a_manifest_is_the_same_plan(capgate: Capgate, tmp_path: Path) -> None:
    # Sources (file, line) are not part of the plan: moving lines makes no new version.
    folder = edited(
        tmp_path, {"deployment.yaml": [("apiVersion: apps/v1", "# reviewed\napiVersion: apps/v1")]}
    )
    built = capgate.from_manifests(folder)
    assert f"# submitted: {PLAN}@v1  sha256:" in built.stdout
    assert "(unchanged, existing version)" in built.stdout
    assert stale(capgate) == []
