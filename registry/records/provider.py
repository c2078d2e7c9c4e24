"""Provider profile: the model, the accelerator, the serving runtime, zones and warm-up."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import Field, model_validator

from registry.records.common import (
    Basis,
    Metadata,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Record,
    Sha256,
    Text,
)


class DType(StrEnum):
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"

    @property
    def bytes(self) -> float:
        return _DTYPE_BYTES[self]


_DTYPE_BYTES = {
    DType.fp32: 4.0,
    DType.bf16: 2.0,
    DType.fp16: 2.0,
    DType.fp8: 1.0,
    DType.int8: 1.0,
    DType.int4: 0.5,
}


class ModelSpec(Record):
    """The transformer's shape: enough to compute weight bytes, KV bytes and FLOPs."""

    name: Text = Field(description="Model id, e.g. meta-llama/Llama-3.1-8B-Instruct.")
    weights_digest: Sha256 | None = Field(
        default=None, description="sha256 of the weights actually served."
    )
    layers: PositiveInt
    hidden_size: PositiveInt
    attention_heads: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt
    total_params_b: PositiveFloat = Field(description="Total parameters, in billions.")
    active_params_b: PositiveFloat | None = Field(
        default=None, description="Parameters active per token (mixture of experts), in billions."
    )
    weights_dtype: DType = DType.bf16
    kv_dtype: DType = DType.bf16
    quantization: Text | None = Field(
        default=None, description="e.g. fp8, awq, gptq; none if absent."
    )
    max_context_tokens: PositiveInt
    hf_config: dict[str, Any] | None = Field(
        default=None, description="The model's Hugging Face config.json, kept as is."
    )

    @model_validator(mode="after")
    def _heads(self) -> Self:
        if self.kv_heads > self.attention_heads:
            raise ValueError(
                f"kv_heads ({self.kv_heads}) exceeds attention_heads ({self.attention_heads})"
            )
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) is not a multiple of kv_heads "
                f"({self.kv_heads})"
            )
        if self.active_params_b is not None and self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b exceeds total_params_b")
        return self


class InterconnectKind(StrEnum):
    nvlink = "nvlink"
    pcie = "pcie"
    infinity_fabric = "infinity_fabric"


class Interconnect(Record):
    kind: InterconnectKind
    bandwidth_gb_s: PositiveFloat = Field(
        description="Per-GPU bandwidth to its peers, GB/s (bidirectional, as spec sheets state)."
    )


class AcceleratorSpec(Record):
    name: Text = Field(description="e.g. H100-SXM-80GB.")
    memory_gib: PositiveFloat
    memory_bandwidth_gb_s: PositiveFloat
    dense_tflops: dict[DType, PositiveFloat] = Field(
        description="Dense peak TFLOP/s per dtype (not the sparse figure)."
    )
    interconnect: Interconnect
    per_node: PositiveInt = Field(default=8, description="Accelerators per worker node.")

    @model_validator(mode="after")
    def _has_flops(self) -> Self:
        if not self.dense_tflops:
            raise ValueError("dense_tflops needs at least one dtype")
        return self


# major.minor[.patch] with an optional suffix (0.8.5, 0.10.2+cu128, 0.6.4.post1); evidence
# states the runtime it measured in the same form (registry.records.evidence.RuntimeInfo).
RUNTIME_VERSION_PATTERN = r"^\d+\.\d+(\.\d+)?([.+-][0-9A-Za-z.+-]+)?$"


class RuntimeSpec(Record):
    name: Text = Field(description="Serving runtime, e.g. vllm.")
    version: Text = Field(pattern=RUNTIME_VERSION_PATTERN)
    image: Text | None = None
    args: dict[str, str | int | float | bool | dict[str, Any]] = Field(
        default_factory=dict,
        description="Extra runtime flags that are not part of a plan; a flag that takes "
        "JSON (vLLM's compilation-config) may be written as a mapping.",
    )


class Warmup(Record):
    """Cold start to ready: image pull, weight load, profiling and graph capture."""

    basis: Basis = Basis.measured
    cold_start_to_ready_s: PositiveFloat
    samples: NonNegativeInt | None = None
    reason: Text | None = None

    @model_validator(mode="after")
    def _provenance(self) -> Self:
        if self.basis is Basis.measured and not self.samples:
            raise ValueError(
                "a measured warm-up needs its sample count (samples > 0); one nobody measured "
                "is marked basis: assumed, with the reason in 'reason'"
            )
        if self.basis is Basis.assumed and not self.reason:
            raise ValueError("an assumed warm-up must say why in 'reason'")
        return self


class ProviderProfile(Metadata):
    """Where and on what the workload runs."""

    model: ModelSpec
    accelerator: AcceleratorSpec
    runtime: RuntimeSpec
    zones: list[Name] = Field(min_length=1)
    warmup: Warmup
    price_per_accelerator_hour_usd: NonNegativeFloat | None = None
    max_nodes_per_zone: NonNegativeInt | None = Field(
        default=None, description="Capacity available in each zone, if bounded."
    )

    @model_validator(mode="after")
    def _zones_unique(self) -> Self:
        if len(set(self.zones)) != len(self.zones):
            raise ValueError("zones must be unique")
        return self
