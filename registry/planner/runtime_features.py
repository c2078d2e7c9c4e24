"""What the provider's serving runtime (its version and flags) changes in the step model.

A provider profile states its runtime as ``runtime: {name, version, args}``. Most of vLLM's
flags that matter to sizing are plan fields (batch limits, TP); this module reads the ones
that change how a step's time is made up, so a provider on a newer vLLM is not priced with
an older vLLM's engine loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.planner.runtime_version import release
from registry.planner.step_time import StepModel
from registry.records.provider import RuntimeSpec

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


def _flag(args: dict[str, str | int | float | bool], names: tuple[str, ...]) -> bool | None:
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
