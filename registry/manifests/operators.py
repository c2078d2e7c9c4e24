"""Resources an operator turns into pods, which capgate does not read: never dropped
silently.

A NIMService runs NVIDIA NIM, not vLLM; a KServe LLMInferenceService gets its vLLM
command from presets in the cluster; a RayService runs vLLM inside a Ray Serve
application. Each is named in a note saying it is not read and why, and so is any other
custom resource shaped like a workload (one that names containers, an image or an
accelerator). When the manifests hold such resources and no vLLM server, the error
that no serving workload was found names them: an empty or default plan would not be
the plan of what ships.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.manifests.loading import Manifest
from registry.manifests.pods import GPU_RESOURCES, TPU_RESOURCE

STATE_PLAN = "state the plan in a plan file or an overlay"
# (API group, kind) -> why its pods are not read from the manifests.
NOT_READ = {
    ("apps.nvidia.com", "NIMService"): (
        "it runs NVIDIA NIM, not vLLM: its model comes from a NIMCache and its engine "
        f"and settings from the NIM container's profile; {STATE_PLAN}"
    ),
    ("apps.nvidia.com", "NIMPipeline"): (
        f"its services run NVIDIA NIM, not vLLM, configured by the operator; {STATE_PLAN}"
    ),
    ("serving.kserve.io", "LLMInferenceService"): (
        "KServe builds its pods from presets in the cluster (LLMInferenceServiceConfig), "
        f"which hold its vLLM command, flags and probes; {STATE_PLAN}"
    ),
    ("ray.io", "RayService"): (
        "it runs vLLM inside a Ray Serve application, whose engine arguments and "
        f"autoscaling are in the Serve config, not a vLLM command; {STATE_PLAN}"
    ),
    ("kaito.sh", "Workspace"): (
        f"KAITO builds its pods from a model preset in the cluster; {STATE_PLAN}"
    ),
}
# Kinds that hold no pods of their own (caches, configuration, routing): ignored.
NOT_WORKLOADS = {
    ("apps.nvidia.com", "NIMCache"),
    ("serving.kserve.io", "LLMInferenceServiceConfig"),
}
ACCELERATORS = (*GPU_RESOURCES, TPU_RESOURCE)


def _keys(value: Any) -> Iterator[str]:
    """Every mapping key under ``value``, at any depth."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            for key, child in current.items():
                yield str(key)
                stack.append(child)
        elif isinstance(current, list):
            stack.extend(current)


def workload_shaped(manifest: Manifest) -> bool:
    """A custom resource whose spec names containers, an image or an accelerator: an
    operator makes pods of it."""
    if "." not in manifest.api_group or manifest.api_group.endswith(".k8s.io"):
        return False  # Kubernetes' own groups (apps, batch, networking.k8s.io...)
    keys = set(_keys(manifest.content.get("spec")))
    return bool(keys & {"containers", "image", *ACCELERATORS})


def not_read(manifest: Manifest) -> str | None:
    """Why ``manifest`` is not read, for a resource that makes serving pods; None for
    any other."""
    key = (manifest.api_group, manifest.kind)
    if key in NOT_WORKLOADS:
        return None
    why = NOT_READ.get(key)
    if why is None and workload_shaped(manifest):
        why = (
            "a custom resource whose operator makes its pods (it names containers, an "
            "image or an accelerator); capgate reads Deployments, StatefulSets, "
            f"LeaderWorkerSets and KServe InferenceServices: if it serves with vLLM, {STATE_PLAN}"
        )
    return why


def note(manifest: Manifest, why: str) -> str:
    return f"{manifest.file}: {manifest.title} is not read: {why}"


def no_workload(unread: list[tuple[Manifest, str]]) -> InvalidInput:
    """The error for manifests with no vLLM server, naming each resource not read."""
    message = (
        "no serving workload in the manifests: no Deployment, StatefulSet, "
        "LeaderWorkerSet or InferenceService runs vLLM"
    )
    if not unread:
        return InvalidInput(message)
    # The message first, then each resource on a line of its own (the CLI prints them all).
    problems = [FieldProblem("", f"{message}; the manifests hold only resources it does not read")]
    problems += [
        FieldProblem(
            f"{m.file}:{m.where('').line} (document {m.document})", f"{m.title} is not read: {why}"
        )
        for m, why in unread
    ]
    return InvalidInput(message, problems=problems)
