"""Manifests written for a test: a vLLM Deployment with the parts each test changes."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import yaml

from registry.manifests import ManifestPlan, plan_from_manifests

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat-assistant"
K8S = EXAMPLE / "k8s"
OVERLAY = K8S / "overlay.yaml"
WORKLOAD = "chat-assistant@v1"
PROVIDER = "llama31-8b-h100-vllm@v1"

# What manifests never say, so a test's manifests need only what it checks.
MINIMAL_OVERLAY: dict[str, Any] = {
    "name": "test-plan",
    "serving": {
        "max_num_seqs": 128,
        "max_model_len": 8192,
        "max_num_batched_tokens": 8192,
        "gpu_memory_utilization": 0.9,
    },
    "warmup": {"startup_probe_budget_s": 600},
}


def edited_example_manifests(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> Path:
    """A copy of the example's manifests in ``tmp_path/k8s`` with each file's (old, new)
    replacements made; every old text must be there, so an edit of the example shows."""
    folder = tmp_path / "k8s"
    folder.mkdir()
    for name in ("deployment.yaml", "hpa.yaml", "pdb.yaml"):
        shutil.copyfile(K8S / name, folder / name)
    for name, replacements in edits.items():
        path = folder / name
        text = path.read_text(encoding="utf-8")
        for old, new in replacements:
            assert old in text, f"{name}: {old!r}"
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    return folder


ZONES = """
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: topology.kubernetes.io/zone, operator: In, values: [z-a, z-b, z-c]}
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
"""


def deployment(
    container: str,
    *,
    replicas: str = "3",
    gpus: int = 1,
    pod: str = ZONES,
    name: str = "llm",
    kind: str = "Deployment",
) -> str:
    """A Deployment (or StatefulSet) whose one container is ``container`` (YAML lines
    after ``- name: vllm``, indented as a container's fields)."""
    body = textwrap.indent(textwrap.dedent(container).strip("\n"), " " * 10)
    pod_fields = textwrap.indent(textwrap.dedent(pod).strip("\n"), " " * 6)
    return f"""apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{pod_fields}
      containers:
        - name: vllm
{body}
          resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def write(tmp_path: Path, files: dict[str, str], overlay: dict[str, Any] | None = None) -> Path:
    """The manifests in a folder, and an overlay beside it (outside the folder read)."""
    folder = tmp_path / "k8s"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (tmp_path / "overlay.yaml").write_text(
        yaml.safe_dump(MINIMAL_OVERLAY if overlay is None else overlay)
    )
    return folder


def build(tmp_path: Path, files: dict[str, str], **overlay: Any) -> ManifestPlan:
    folder = write(tmp_path, files, {**MINIMAL_OVERLAY, **overlay})
    return plan_from_manifests(
        [str(folder)],
        overlay=tmp_path / "overlay.yaml",
        workload=WORKLOAD,
        provider=PROVIDER,
    )


def line_of(path: Path, text: str, after: str | None = None) -> int:
    """The 1-based line of the first occurrence of ``text`` (after ``after``, if given)."""
    lines = path.read_text().splitlines()
    start = 0 if after is None else next(i for i, line in enumerate(lines) if after in line)
    return next(i for i, line in enumerate(lines) if i >= start and text in line) + 1
