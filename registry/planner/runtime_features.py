"""What the provider's serving runtime (its version and flags) changes in the step model.

A provider profile states its runtime as ``runtime: {name, version, args}``. Most of vLLM's
flags that matter to sizing are plan fields (batch limits, TP); this module reads the ones
that change how a step's time is made up, so a provider on a newer vLLM is not priced with
an older vLLM's engine loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.planner.quant_pricing import Fusions
from registry.planner.runtime_version import release
from registry.planner.step_time import StepModel
from registry.records.provider import DType, ModelSpec, RuntimeSpec

# vLLM v0.14.0's release notes, "Breaking Changes": async scheduling is enabled by default
# (vllm-project/vllm#27614), except with pipeline parallelism, the CPU backend and
# speculative decoding other than MTP/Eagle; `--no-async-scheduling` turns it off. Before
# 0.14 it is off unless `--async-scheduling` is passed (vllm-project/vllm#19970).
ASYNC_DEFAULT_SINCE = (0, 14)
_ON = ("async-scheduling", "async_scheduling")
_OFF = ("no-async-scheduling", "no_async_scheduling")


@dataclass(frozen=True)
class RuntimeFeature:
    """One engine behaviour the runtime turns on or off, and why the planner thinks so."""

    enabled: bool
    reason: str


def _flag(args: Mapping[str, object], names: tuple[str, ...]) -> bool | None:
    """A boolean flag as a profile may write it (``async-scheduling: true``, ``"false"``);
    None when the profile does not set it."""
    for name in names:
        for key in (name, f"--{name}"):
            if key in args:
                value = args[key]
                if isinstance(value, str):
                    return value.strip().lower() not in {"false", "0", "no", "off"}
                return bool(value)
    return None


def async_scheduling(runtime: RuntimeSpec) -> RuntimeFeature:
    """Whether vLLM schedules step N+1 while step N runs on the GPU, hiding the engine's
    CPU time per step: the profile's flag if it sets one, else vLLM's default for its
    version. Other runtimes are priced as vLLM without it."""
    if runtime.name.strip().lower() != "vllm":
        return RuntimeFeature(False, f"runtime {runtime.name}: priced without async scheduling")
    on, off = _flag(runtime.args, _ON), _flag(runtime.args, _OFF)
    if off:
        return RuntimeFeature(False, "runtime.args sets no-async-scheduling")
    if on is not None:
        state = "on" if on else "off"
        return RuntimeFeature(on, f"runtime.args sets async-scheduling {state}")
    if (release(runtime.version) or (0, 0)) >= ASYNC_DEFAULT_SINCE:
        return RuntimeFeature(
            True,
            f"vLLM {runtime.version} schedules asynchronously by default (since 0.14.0): "
            "the engine's CPU time per step is hidden behind the GPU step",
        )
    return RuntimeFeature(
        False,
        f"vLLM {runtime.version} schedules synchronously unless --async-scheduling is "
        "passed (default from 0.14.0): the engine's CPU time per step adds to the GPU step",
    )


def async_finding(reason: str, step: StepModel) -> str:
    """The recomputation's note on async scheduling: on, and the batch size from which a
    decode step with no context is CPU bound (StepModel.cpu_bound_at), if the plan allows
    one."""
    if step.cpu_bound_at is None:
        return f"async scheduling on: {reason}"
    batch, cpu, gpu = step.cpu_bound_at
    return (
        f"async scheduling on: {reason}; from {batch} sequences a step's CPU time "
        f"({cpu * 1e3:.2f} ms) can outlast the GPU's ({gpu * 1e3:.2f} ms with no context), "
        "and there the CPU's time sets the step"
    )


# vLLM's --compilation-config (-O): a JSON object, or a bare optimisation level; as a
# profile writes it under runtime.args, a JSON string or a mapping.
_COMPILATION = ("compilation-config", "compilation_config", "O")
# CompilationLevel.PIECEWISE: the only level at which vLLM 0.10's Inductor passes (the
# fusions among them, vllm/compilation/pass_manager.py) run; V1's default unless
# --enforce-eager (then NO_COMPILATION) (VllmConfig.__post_init__, vLLM 0.10.2).
_PIECEWISE = 3
_PASSES = {
    "enable_fi_allreduce_fusion": "allreduce",
    "enable_attn_fusion": "attention",
    "enable_fusion": "norm_quant",
}


@dataclass(frozen=True)
class CompilationFeatures:
    """The fusions vLLM's compilation passes apply for this provider, and why the planner
    thinks so (one line per fusion the profile asked for, applied or not)."""

    fusions: Fusions
    reasons: tuple[str, ...]


def _bad(field: str, message: str) -> InvalidInput:
    return InvalidInput(
        "runtime.args cannot be read",
        problems=[FieldProblem(f"runtime.args.{field}", message)],
    )


def _compilation_value(args: Mapping[str, object]) -> tuple[str, object] | None:
    for name in _COMPILATION:
        for key in (name, f"--{name}", f"-{name}"):
            if key in args:
                return key, args[key]
    return None


def _read_compilation(key: str, value: object) -> tuple[int | None, Mapping[str, Any]]:
    """The level and the mapping a --compilation-config value states; InvalidInput naming
    the field when it is neither a JSON object, a mapping nor a level."""
    if isinstance(value, bool):
        raise _bad(key, "must be a JSON object or an optimisation level, not a boolean")
    if isinstance(value, int):
        return value, {}
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text), {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(key, f"is not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, Mapping):
        raise _bad(key, f"must be a JSON object or a level, not {type(value).__name__}")
    level = value.get("level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
        raise _bad(f"{key}.level", f"must be an integer, not {level!r}")
    passes = value.get("pass_config", {})
    if not isinstance(passes, Mapping):
        raise _bad(f"{key}.pass_config", "must be a JSON object")
    for name in _PASSES:
        if name in passes and not isinstance(passes[name], bool):
            raise _bad(f"{key}.pass_config.{name}", f"must be true or false, not {passes[name]!r}")
    return level, passes


def static_fp8_activations(model: ModelSpec) -> bool:
    """Whether the checkpoint quantises the GEMMs' inputs to fp8 with static per-tensor
    scales, the only scheme vLLM 0.10's fusion passes match: ModelOpt's fp8 (its linear
    method runs Fp8LinearOp(act_quant_static=True)), or a quantization_config in the
    model's config.json stating static activations (vLLM's fp8 format: activation_scheme
    "static"; compressed-tensors: input_activations not dynamic, per tensor)."""
    if model.weights_dtype is not DType.fp8:
        return False
    if (model.quantization or "").strip().lower() == "modelopt":
        return True
    config = (model.hf_config or {}).get("quantization_config")
    if not isinstance(config, Mapping):
        return False
    method = str(config.get("quant_method", "")).lower()
    if method == "modelopt":
        return str(config.get("quant_algo", "")).upper() == "FP8"
    if method == "fp8":
        return config.get("activation_scheme") == "static"
    if method == "compressed-tensors":
        groups = config.get("config_groups")
        if not isinstance(groups, Mapping) or not groups:
            return False
        for group in groups.values():
            acts = group.get("input_activations") if isinstance(group, Mapping) else None
            if not isinstance(acts, Mapping):
                return False
            if acts.get("dynamic") is not False or acts.get("strategy") != "tensor":
                return False
            if acts.get("type") != "float" or acts.get("num_bits") != 8:
                return False
        return True
    return False


def compilation_fusions(runtime: RuntimeSpec, model: ModelSpec) -> CompilationFeatures:
    """The fusions vLLM compiles in for this provider: those ``--compilation-config``'s
    ``pass_config`` turns on (all off by default in vLLM 0.10 on the V1 engine), kept only
    where vLLM would apply them: compiled at the piecewise level, fp8 GEMMs with static
    activation scales, and for the attention fusion an fp8 KV cache. Bad input raises
    InvalidInput naming the field."""
    found = _compilation_value(runtime.args)
    if found is None or runtime.name.strip().lower() != "vllm":
        return CompilationFeatures(Fusions(), ())
    key, value = found
    level, passes = _read_compilation(key, value)
    asked = [name for name in _PASSES if passes.get(name) is True]
    if not asked:
        return CompilationFeatures(Fusions(), ())
    eager = _flag(runtime.args, ("enforce-eager", "enforce_eager"))
    if level is None and eager:
        level = 0
    if level is not None and level != _PIECEWISE:
        return CompilationFeatures(
            Fusions(),
            (
                f"{', '.join(asked)} asked for but not applied: vLLM runs its fusion passes "
                f"only at compilation level {_PIECEWISE}, this profile compiles at {level}",
            ),
        )
    if not static_fp8_activations(model):
        return CompilationFeatures(
            Fusions(),
            (
                f"{', '.join(asked)} asked for but not priced: vLLM's fusion passes match "
                "fp8 GEMMs with static per-tensor activation scales only, and the model "
                "states none (model.quantization modelopt, or a quantization_config in "
                "hf_config saying static)",
            ),
        )
    on = {_PASSES[name] for name in asked}
    reasons = [f"runtime.args {key} turns on {', '.join(asked)}"]
    if "attention" in on and model.kv_dtype is not DType.fp8:
        on.discard("attention")
        reasons.append(
            "enable_attn_fusion not applied: the attention kernel writes fp8 output only "
            "with an fp8 KV cache (model.kv_dtype)"
        )
    fusions = Fusions(
        allreduce="allreduce" in on, attention="attention" in on, norm_quant="norm_quant" in on
    )
    return CompilationFeatures(fusions, tuple(reasons))


def fusion_findings(features: CompilationFeatures, step: StepModel) -> list[str]:
    """The recomputation's notes on vLLM's compilation fusions: what the profile turns on,
    which the planner priced (and how much), and which it did not, with the reason."""
    notes = [f"compilation fusions: {reason}" for reason in features.reasons]
    pricing = step.fusion
    notes.extend(f"compilation fusion priced: {line}" for line in pricing.priced)
    notes.extend(f"compilation fusion not priced: {line}" for line in pricing.unpriced)
    fused_us = pricing.removed_us_per_step - pricing.scale_us
    if fused_us > 0:
        notes.append(
            f"compilation fusions take {fused_us:.0f} us of quantisation kernels out of every step"
        )
    notes.extend(pricing.scales)
    if pricing.allreduce_us is not None:
        notes.append(
            "vLLM runs the unfused all-reduce above FlashInfer's size threshold (a step of "
            "about a thousand tokens or more: large prefill chunks); the planner prices "
            "every step fused"
        )
    return notes
