"""The serving workloads: Deployments, StatefulSets, LeaderWorkerSets and KServe
InferenceServices whose pods run vLLM, read into one shape.

An InferenceService's model runs in the container of the ServingRuntime (or
ClusterServingRuntime) it names: when that runtime is among the manifests, its container
and placement are merged in as KServe merges them (registry.manifests.vllm_args), so
flags set once in the runtime are read too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from registry.manifests.loading import Manifest, Node, Where
from registry.manifests.pods import accelerator_resource, accelerators
from registry.manifests.vllm_args import VllmCommand, vllm_command

APPS = "apps"
LWS = "leaderworkerset.x-k8s.io"
KSERVE = "serving.kserve.io"
WORKLOAD_KINDS = {
    (APPS, "Deployment"),
    (APPS, "StatefulSet"),
    (LWS, "LeaderWorkerSet"),
    (KSERVE, "InferenceService"),
}
RUNTIME_KINDS = {(KSERVE, "ServingRuntime"), (KSERVE, "ClusterServingRuntime")}
# KServe's huggingface runtime serves generative models with vLLM unless told otherwise.
KSERVE_VLLM_BACKENDS = frozenset({"vllm", "auto"})
# The ClusterServingRuntime a KServe install selects for a model format (its
# kserve-huggingfaceserver serves huggingface models with vLLM).
KSERVE_DEFAULT_RUNTIMES = {"huggingface": "kserve-huggingfaceserver", "vllm": "kserve-vllmserver"}


@dataclass(frozen=True)
class ServingWorkload:
    manifest: Manifest
    replicas: int  # serving replicas: pods, or LWS groups
    replicas_at: Where
    replicas_stated: bool  # False when Kubernetes' default (1) applies
    pod: Node  # the pod spec that runs vLLM (the leader's, for an LWS)
    labels: dict[str, str]  # that pod's labels, which PDBs select
    vllm: VllmCommand
    gpus_per_replica: int
    gpus_at: Where | None
    accelerator: str | None  # the resource they are requested as: nvidia.com/gpu...
    rollout_max_unavailable: tuple[int, Where] | None
    # Where the pods' nodeSelector and node affinity are written: the pod spec, or the
    # KServe runtime's when the InferenceService states neither (KServe merges them in).
    placement: Node | None = None

    @property
    def placed_by(self) -> Node:
        return self.placement or self.pod

    @property
    def ref(self) -> tuple[str, str]:
        return self.manifest.kind, self.manifest.name


def scaled(node: Node, total: int, *, round_up: bool) -> int:
    """An IntOrString count of ``total``: 2, or "25%" rounded as Kubernetes rounds it."""
    value = node.value
    if isinstance(value, int):
        return value
    text = value.strip()
    if not text.endswith("%") or not text[:-1].isdigit():
        node.fail(f"must be an integer or a percentage like '25%', not {value!r}")
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def _replicas(spec: Node, key: str = "replicas") -> tuple[int, Where, bool]:
    node = spec.integer(key)
    if node is None:
        return 1, spec.where, False
    if node.value < 0:
        node.fail("must not be negative")
    return node.value, node.where, True


def _labels(template: Node) -> dict[str, str]:
    metadata = template.mapping("metadata")
    labels = metadata.mapping("labels") if metadata else None
    return {key: str(node.value) for key, node in labels.entries()} if labels else {}


def _template_pod(spec: Node, key: str) -> tuple[Node, dict[str, str]]:
    template = spec.mapping(key)
    if template is None:
        spec.fail(f"{key} is required")
    pod = template.mapping("spec")
    if pod is None:
        template.fail("spec is required")
    return pod, _labels(template)


def _containers(pod: Node) -> list[Node]:
    containers = pod.items("containers")
    for container in containers:
        if not isinstance(container.value, dict):
            container.fail("must be a mapping (a container)")
    return containers


def _vllm(
    manifest: Manifest,
    containers: list[Node],
    *,
    entrypoint_is_vllm: bool = False,
    runtime: Node | None = None,
) -> VllmCommand | None:
    commands = [
        vllm_command(c, entrypoint_is_vllm=entrypoint_is_vllm, runtime=runtime) for c in containers
    ]
    running = [c for c in commands if c is not None]
    if len(running) > 1:
        running[1].container.fail(f"{manifest.title} runs vLLM in more than one container")
    return running[0] if running else None


def _rolling(
    strategy: Node | None,
    replicas: int,
    default: int | str,
    where: Where,
    update: str,
    notes: list[str],
) -> tuple[int, Where] | None:
    """maxUnavailable of a rolling update (Kubernetes rounds a percentage down); all
    replicas for Recreate; None for OnDelete, which never replaces pods by itself."""
    kind = strategy.string("type") if strategy else None
    if kind is not None and kind.value == "Recreate":
        return replicas, kind.where
    if kind is not None and kind.value == "OnDelete":
        return None
    rolling = strategy.mapping(update) if strategy else None
    node = rolling.int_or_string("maxUnavailable") if rolling else None
    if node is None:
        notes.append(f"{where}: no rollout maxUnavailable; Kubernetes' default ({default}) is used")
        if isinstance(default, int):
            return default, where
        return math.floor(int(default[:-1]) * replicas / 100), where
    return scaled(node, replicas, round_up=False), node.where


def serving_runtimes(manifests: list[Manifest]) -> dict[str, Manifest]:
    """KServe runtimes by name; a namespaced ServingRuntime over a ClusterServingRuntime of
    the same name, the one KServe looks up first."""
    found: dict[str, Manifest] = {}
    for manifest in manifests:
        if (manifest.api_group, manifest.kind) not in RUNTIME_KINDS:
            continue
        if manifest.kind == "ServingRuntime" or manifest.name not in found:
            found[manifest.name] = manifest
    return found


def _runtime_container(
    model: Node,
    runtimes: Mapping[str, Manifest],
    notes: list[str],
    selected: Manifest | None = None,
) -> tuple[Node, Node] | None:
    """The container and pod spec of the runtime ``model`` names (or KServe ``selected``
    for it), if it is among the manifests. KServe runs the model in the runtime's
    `kserve-container`, else its first."""
    name = model.string("runtime")
    if name is None and selected is None:
        return _auto_selected(model, runtimes, notes)
    runtime = selected if name is None else runtimes.get(name.value)
    if runtime is None:
        assert name is not None
        notes.append(
            f"{name.where}: runtime {name.value} is not in the manifests; only the "
            "InferenceService's own container is read"
        )
        return None
    spec = runtime.root.mapping("spec")
    if spec is None:
        runtime.root.fail(f"{runtime.kind} needs a spec")
    containers = _containers(spec)
    if not containers:
        spec.fail("a serving runtime needs a container")
    named = [c for c in containers if (n := c.string("name")) and n.value == "kserve-container"]
    return (named or containers)[0], spec


def _formats(runtime: Manifest) -> list[str]:
    """The model formats a runtime lets KServe select it for (``autoSelect: true``)."""
    spec = runtime.root.mapping("spec")
    found = []
    for item in spec.items("supportedModelFormats") if spec else []:
        name, auto = item.string("name"), item.child("autoSelect")
        if name is not None and auto is not None and auto.value is True:
            found.append(name.value.lower())
    return found


def _auto_selected(
    model: Node, runtimes: Mapping[str, Manifest], notes: list[str]
) -> tuple[Node, Node] | None:
    """The runtime KServe selects for a model that names none: one supporting its
    ``modelFormat`` with ``autoSelect`` (a namespaced ServingRuntime first). One not
    among the manifests is noted: the model's own container is read alone."""
    described = model.mapping("modelFormat")
    model_format = described.string("name") if described else None
    if model_format is None:
        return None
    chosen = [r for r in runtimes.values() if model_format.value.lower() in _formats(r)]
    chosen.sort(key=lambda r: r.kind != "ServingRuntime")
    if not chosen:
        default = KSERVE_DEFAULT_RUNTIMES.get(model_format.value.lower())
        named = f" (KServe's default is {default})" if default else ""
        notes.append(
            f"{model_format.where}: no runtime is named and none among the manifests "
            f"supports modelFormat {model_format.value}: KServe selects a "
            f"ClusterServingRuntime in the cluster{named}, which is not read; only the "
            "InferenceService's own container is read"
        )
        return None
    notes.append(
        f"{model_format.where}: runtime {chosen[0].name} ({chosen[0].file}) is the one "
        f"KServe selects for modelFormat {model_format.value}"
    )
    return _runtime_container(model, runtimes, notes, chosen[0])


def _kserve_model(
    manifest: Manifest, pod: Node, model: Node, runtimes: Mapping[str, Manifest], notes: list[str]
) -> tuple[VllmCommand | None, list[Node], Node | None]:
    """The vLLM command of an InferenceService's model, the containers that hold its
    accelerators, and the runtime's pod spec when it places the pods."""
    found = _runtime_container(model, runtimes, notes)
    runtime, runtime_spec = found if found else (None, None)
    image = model.string("image") or (runtime.string("image") if runtime else None)
    # Without a runtime in the manifests the model is taken to run on KServe's huggingface
    # runtime, as before; a named one runs vLLM if its command or image says so.
    huggingface = image is not None and "huggingfaceserver" in image.value
    command = _vllm(
        manifest, [model], entrypoint_is_vllm=runtime is None or huggingface, runtime=runtime
    )
    backend = command.flags.get("backend") if command else None
    if backend is not None and str(backend.value).lower() not in KSERVE_VLLM_BACKENDS:
        notes.append(f"{backend.word.where}: --backend {backend.value} serves without vLLM")
        command = None
    holders = [model]
    if runtime is not None and not accelerators([model], [])[0]:
        holders = [runtime]  # KServe merges resources in: the runtime's GPUs apply
    placed = any(pod.child(key) is not None for key in ("nodeSelector", "affinity"))
    return command, holders, None if placed else runtime_spec


def read_workload(
    manifest: Manifest, notes: list[str], runtimes: Mapping[str, Manifest] | None = None
) -> ServingWorkload | None:
    """The serving workload this manifest declares, None if its pods do not run vLLM.
    ``runtimes``: the KServe serving runtimes among the manifests, by name."""
    group, kind = manifest.api_group, manifest.kind
    placement = None
    spec = manifest.root.mapping("spec")
    if spec is None:
        manifest.root.fail(f"{kind} needs a spec")
    if kind in ("Deployment", "StatefulSet") and group == APPS:
        replicas, at, stated = _replicas(spec)
        pod, labels = _template_pod(spec, "template")
        containers = _containers(pod)
        if kind == "Deployment":
            rollout = _rolling(
                spec.mapping("strategy"), replicas, "25%", spec.where, "rollingUpdate", notes
            )
        else:
            rollout = _rolling(
                spec.mapping("updateStrategy"), replicas, 1, spec.where, "rollingUpdate", notes
            )
        command = _vllm(manifest, containers)
        gpus, gpus_node = accelerators(containers, notes)
    elif kind == "LeaderWorkerSet" and group == LWS:
        # One serving replica is a group: a leader running the vLLM server and size - 1
        # workers running its Ray workers.
        replicas, at, stated = _replicas(spec)
        template = spec.mapping("leaderWorkerTemplate")
        if template is None:
            spec.fail("leaderWorkerTemplate is required")
        size_node = template.integer("size")
        size = 1 if size_node is None else size_node.value
        if size < 1:
            (size_node or template).fail("size must be at least 1")
        worker_pod, worker_labels = _template_pod(template, "workerTemplate")
        if template.mapping("leaderTemplate") is not None:
            pod, labels = _template_pod(template, "leaderTemplate")
        else:
            pod, labels = worker_pod, worker_labels
        containers = _containers(pod)
        command = _vllm(manifest, containers)
        leader_gpus, gpus_node = accelerators(containers, notes)
        worker_gpus, worker_node = accelerators(_containers(worker_pod), notes)
        gpus = leader_gpus + (size - 1) * worker_gpus
        gpus_node = gpus_node or worker_node
        strategy = spec.mapping("rolloutStrategy")
        rollout = _rolling(strategy, replicas, 1, spec.where, "rollingUpdateConfiguration", notes)
    elif kind == "InferenceService" and group == KSERVE:
        predictor = spec.mapping("predictor")
        if predictor is None:
            spec.fail("predictor is required")
        # A predictor is a pod spec with KServe's fields inline.
        pod = predictor
        if pod.child("workerSpec") is not None:
            # KServe's controller sets a multi-node service's parallelism (and the
            # environment its runtime script reads) from workerSpec: not in the manifests.
            notes.append(
                f"{manifest.file}: {manifest.title} is not read: a multi-node service "
                "(predictor.workerSpec) gets its parallelism from KServe's controller"
            )
            return None
        min_replicas = pod.integer("minReplicas")
        replicas = 1 if min_replicas is None else min_replicas.value
        at = (min_replicas or pod).where
        stated = min_replicas is not None
        labels = {}
        model = pod.mapping("model")
        if model is not None:
            command, containers, placement = _kserve_model(
                manifest, pod, model, runtimes or {}, notes
            )
        else:
            containers = _containers(pod)
            command = _vllm(manifest, containers)
        gpus, gpus_node = accelerators(containers, notes)
        rollout = None
    else:
        return None
    if command is None:
        notes.append(f"{manifest.file}: {manifest.title} runs no vLLM server; ignored")
        return None
    return ServingWorkload(
        manifest=manifest,
        replicas=replicas,
        replicas_at=at,
        replicas_stated=stated,
        pod=pod,
        labels=labels,
        vllm=command,
        gpus_per_replica=gpus,
        gpus_at=gpus_node.where if gpus_node else None,
        accelerator=accelerator_resource(gpus_node) if gpus_node else None,
        rollout_max_unavailable=rollout,
        placement=placement,
    )
