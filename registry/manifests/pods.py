"""What one pod template says about serving: accelerators, vLLM flags, probes, drain.

Each reader returns plan fields (dotted) with the value and the position it came from.
Kubernetes' own defaults (probe periods, the grace period when a probe is written) are
what ships and are used; vLLM's defaults are not: a flag the manifests do not pass must
be given in the overlay.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from registry.manifests.loading import Node, Where
from registry.manifests.vllm_args import (
    SHORT_FLAGS,
    Flag,
    VllmCommand,
    command_words,
    container_env,
)

Fields = dict[str, tuple[Any, Where]]

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
TPU_RESOURCE = "google.com/tpu"


def whole(value: float) -> int | float:
    """10.0 as 10: durations and targets print as the manifests wrote them."""
    return int(value) if value.is_integer() else value


def _integer(text: str) -> int:
    return int(text, 10)


def _model_len(text: str) -> int:
    """vLLM reads ``16k`` as 16,000 and ``16K`` as 16,384."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)", text)
    if match is None:
        raise ValueError(text)
    number, unit = match.groups()
    scale = {"": 1, "k": 1000, "m": 10**6, "g": 10**9, "K": 1024, "M": 2**20, "G": 2**30}
    return int(float(number) * scale[unit])


def _policy(text: str) -> str:
    if text not in {"fcfs", "priority"}:
        raise ValueError(text)
    return text


SERVING_FLAGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "tensor-parallel-size": ("parallelism.tensor_parallel", _integer),
    "max-num-seqs": ("serving.max_num_seqs", _integer),
    "max-num-batched-tokens": ("serving.max_num_batched_tokens", _integer),
    "gpu-memory-utilization": ("serving.gpu_memory_utilization", float),
    "max-model-len": ("serving.max_model_len", _model_len),
    "block-size": ("serving.block_size", _integer),
    "scheduling-policy": ("serving.scheduling_policy", _policy),
}
BOOLEAN_SERVING_FLAGS = {
    "enable-prefix-caching": "serving.enable_prefix_caching",
    "enable-chunked-prefill": "serving.enable_chunked_prefill",
}


def flag_value(flag: Flag, convert: Callable[[str], Any]) -> Any:
    if not isinstance(flag.value, str):
        flag.node.fail(f"{flag.name} needs a value")
    if "$" in flag.value:
        flag.node.fail(
            f"{flag.name} is {flag.value!r}, a variable the manifests give no value: "
            "set it in the container's env"
        )
    try:
        return convert(flag.value)
    except ValueError:
        flag.node.fail(f"{flag.name}: {flag.value!r} is not a valid value")


def serving_fields(command: VllmCommand, notes: list[str]) -> Fields:
    fields: Fields = {}
    for name, (field, convert) in SERVING_FLAGS.items():
        flag = command.flags.get(name)
        if flag is not None:
            written = flag.name.lstrip("-").replace("_", "-").lower()
            if written != name and written not in SHORT_FLAGS:  # an abbreviation
                notes.append(f"{flag.word.where}: {flag.name} read as --{name}")
            fields[field] = (flag_value(flag, convert), flag.word.where)
    for name, field in BOOLEAN_SERVING_FLAGS.items():
        flag = command.flags.get(name)
        if flag is not None:
            if not isinstance(flag.value, bool):
                flag.node.fail(f"{flag.name}: {flag.value!r} is not true or false")
            fields[field] = (flag.value, flag.word.where)
    return fields


def pipeline_parallel(command: VllmCommand) -> int | None:
    flag = command.flags.get("pipeline-parallel-size")
    return None if flag is None else int(flag_value(flag, _integer))


def _count(node: Node) -> int:
    """An accelerator count: an integer, or a quantity string of one ("1")."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | str):
        node.fail(f"must be a whole number of devices, not {value!r}")
    if isinstance(value, str):
        if not value.isdigit():
            node.fail(f"must be a whole number of devices, not {value!r}")
        value = int(value)
    return value


def accelerator_resource(node: Node) -> str:
    """The extended resource (nvidia.com/gpu...) an accelerator count is written under."""
    return next(k for k in (*GPU_RESOURCES, TPU_RESOURCE) if node.path.endswith(f".{k}"))


def accelerators(containers: list[Node], notes: list[str]) -> tuple[int, Node | None]:
    """Accelerators one pod holds (every container's limits, else requests) and where the
    first is written."""
    total, first = 0, None
    for container in containers:
        resources = container.mapping("resources")
        if resources is None:
            continue
        for section in ("limits", "requests"):
            block = resources.mapping(section)
            found = [
                (key, node)
                for key, node in (block.entries() if block else [])
                if key in (*GPU_RESOURCES, TPU_RESOURCE)
            ]
            if not found:
                continue
            for key, node in found:
                total += _count(node)
                first = first or node
                if key == TPU_RESOURCE:
                    notes.append(f"{node.where}: {key}: TPU chips counted as accelerators")
            break  # extended resources: limits and requests must be equal
    return total, first


def _seconds(text: str, node: Node) -> int | float:
    """A ``sleep`` or ``timeout`` duration: ``10``, ``10s``, ``1.5``, ``2m``."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text)
    if match is None:
        node.fail(f"cannot read {text!r} as a duration")
    return whole(float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)])


# A pre-stop script that polls vLLM's running/waiting gauges waits for the server to idle.
# (Also written as one pattern: num_requests_(running|waiting).)
_IDLE_WAIT = re.compile(r"num_requests_\(?(running|waiting)")


def pre_stop(container: Node, notes: list[str]) -> Fields:
    """drain.pre_stop from the lifecycle hook, as well as it maps: the first ``sleep N``,
    ``timeout N`` around a wait, and whether it polls vLLM for idleness."""
    lifecycle = container.mapping("lifecycle")
    hook = lifecycle.mapping("preStop") if lifecycle else None
    if hook is None:
        return {}
    sleep_action = hook.mapping("sleep")
    if sleep_action is not None:  # Kubernetes' own sleep action (1.30+)
        seconds = sleep_action.integer("seconds")
        if seconds is None:
            sleep_action.fail("a sleep action needs seconds")
        return {
            "drain.pre_stop.sleep_s": (seconds.value, seconds.where),
            "drain.pre_stop.wait_for_idle": (False, hook.where),
        }
    action = hook.mapping("exec")
    if action is None:
        notes.append(
            f"{hook.where}: a preStop that is not exec or sleep cannot be read; "
            "give drain.pre_stop in the overlay"
        )
        return {}
    words = command_words(action.strings("command"), container_env(container))
    texts = [w.text for w in words]
    fields: Fields = {}
    for index, text in enumerate(texts[:-1]):
        if text == "sleep" and "drain.pre_stop.sleep_s" not in fields:
            value = _seconds(texts[index + 1], words[index].node)
            fields["drain.pre_stop.sleep_s"] = (value, words[index].where)
        elif text == "timeout" and "drain.pre_stop.timeout_s" not in fields:
            value = _seconds(texts[index + 1], words[index].node)
            fields["drain.pre_stop.timeout_s"] = (value, words[index].where)
    polls = next((w for w in words if _IDLE_WAIT.search(w.text)), None)
    fields["drain.pre_stop.wait_for_idle"] = (
        polls is not None,
        action.where if polls is None else polls.where,
    )
    if "drain.pre_stop.sleep_s" not in fields:
        notes.append(f"{action.where}: the preStop command has no sleep; sleep_s from the overlay")
    return fields


def _probe_seconds(probe: Node, key: str, default: int) -> int:
    node = probe.integer(key)
    return default if node is None else node.value


def probes(container: Node) -> Fields:
    fields: Fields = {}
    startup = container.mapping("startupProbe")
    if startup is not None:
        # How long the kubelet lets the server load before it restarts it (Kubernetes
        # defaults: no initial delay, every 10 s, 3 failures).
        budget = _probe_seconds(startup, "initialDelaySeconds", 0) + _probe_seconds(
            startup, "failureThreshold", 3
        ) * _probe_seconds(startup, "periodSeconds", 10)
        fields["warmup.startup_probe_budget_s"] = (budget, startup.where)
    readiness = container.mapping("readinessProbe")
    # vLLM's server opens its port only once the model is loaded, so any readiness probe
    # of the server container gates readiness on the model; without one the pod is Ready
    # as soon as it starts.
    fields["warmup.readiness_requires_model_loaded"] = (
        readiness is not None,
        (readiness or container).where,
    )
    return fields


# Kubernetes gives a pod 30 s from TERM to KILL unless it says otherwise.
DEFAULT_GRACE_PERIOD_S = 30


def grace_period(pod: Node, notes: list[str]) -> Fields:
    node = pod.integer("terminationGracePeriodSeconds")
    if node is None:
        notes.append(
            f"{pod.where}: no terminationGracePeriodSeconds; Kubernetes' default "
            f"({DEFAULT_GRACE_PERIOD_S} s) is what ships"
        )
        return {"drain.termination_grace_period_s": (DEFAULT_GRACE_PERIOD_S, pod.where)}
    return {"drain.termination_grace_period_s": (node.value, node.where)}
