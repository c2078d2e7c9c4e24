"""Architectures the planner cannot price yet, refused by name rather than priced wrongly.

The planner prices a model as a stack of identical transformer layers, each holding
2 x KV heads x head dim values per token in the KV cache and attending to the whole context.
Models that break that shape would be priced with the wrong KV size, the wrong attention
cost, or both, and a plan sized on that is a guess presented as a recomputation:

- multi-head latent attention (DeepSeek V2/V3/R1, Kimi K2): the cache holds one latent of
  ``kv_lora_rank + qk_rope_head_dim`` per token and layer, replicated on every TP rank;
- sliding-window or chunked local attention shorter than the context (Mistral 7B v0.1,
  Gemma 2/3, gpt-oss, Llama 4, Starcoder2): local layers keep only their window;
- state-space or linear-attention layers (Jamba, Nemotron-H, Falcon-H1, Granite 4.0-H,
  Qwen3-Next, Mamba): a constant state per sequence instead of a KV cache;
- layers that differ (Nemotron Super/Ultra ``block_configs``, dense layers among MoE ones);
- a mixture of experts with shared experts whose active parameters the profile does not state
  (the split between shared and routed weights cannot then be read from the counts).

Each is found in the model's config.json (``model.hf_config``) when the profile carries it,
else by the model's name. Nothing here guesses a price: ``refusal`` says what the planner
cannot price and why, and the caller refuses the model (exit 2, HTTP 422).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# model_type values of config.json whose layers are not all attention with a KV cache.
_STATE_SPACE_TYPES = frozenset(
    {
        "bamba", "falcon_h1", "granitemoehybrid", "jamba", "lfm2", "mamba", "mamba2",
        "minimax", "nemotron_h", "plamo2", "qwen3_next", "zamba", "zamba2",
    }
)  # fmt: skip
# Layer kinds of ``layer_types`` / ``layers_block_type`` the planner prices as it should.
_FULL_ATTENTION = frozenset({"full_attention", "attention"})

# By name, for a profile without config.json: (pattern on the lower-cased name, what it is).
_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"deepseek-(v2|v3|r1)|kimi-k2", "multi-head latent attention"),
    (r"gemma-?[23]|gpt-oss|llama-4|mistral-7b(-instruct)?-v0\.1|starcoder2", "local attention"),
    (
        r"jamba|nemotron-h|falcon-h1|granite-4\.0-h|qwen3-next|mamba|zamba",
        "state-space or linear-attention layers",
    ),
    (r"nemotron-(super|ultra)|llama-3_[13]-nemotron-(super|ultra)", "layers that differ"),
)


def _int(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _local_window(config: Mapping[str, Any]) -> str | None:
    """Why the config's attention is local for part of the context, or None."""
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and "sliding_attention" in layer_types:
        local = sum(1 for kind in layer_types if kind == "sliding_attention")
        return (
            f"sliding-window attention in {local} of {len(layer_types)} layers "
            f"(layer_types, window {config.get('sliding_window')})"
        )
    chunk = _int(config, "attention_chunk_size")
    if chunk is not None:
        return f"chunked local attention (attention_chunk_size {chunk})"
    window = _int(config, "sliding_window")
    longest = _int(config, "max_position_embeddings")
    used = config.get("use_sliding_window", True) is not False
    if window is not None and used and (longest is None or window < longest):
        return f"sliding-window attention (sliding_window {window})"
    return None


def _state_layers(config: Mapping[str, Any]) -> str | None:
    model_type = str(config.get("model_type", ""))
    if model_type in _STATE_SPACE_TYPES:
        return f"state-space or linear-attention layers (model_type {model_type})"
    for key in ("layer_types", "layers_block_type"):
        kinds = config.get(key)
        if isinstance(kinds, list):
            other = sorted({str(k) for k in kinds} - _FULL_ATTENTION - {"sliding_attention"})
            if other:
                return f"layers of kind {', '.join(other)} ({key})"
    for key in ("hybrid_override_pattern", "attn_layer_period", "mamba_d_state", "ssm_state_size"):
        if key in config:
            return f"state-space layers ({key})"
    return None


def _uneven_layers(config: Mapping[str, Any]) -> str | None:
    if isinstance(config.get("block_configs"), list):
        return "layers that differ (block_configs)"
    if config.get("mlp_only_layers"):
        return "dense layers among mixture-of-experts ones (mlp_only_layers)"
    for key in ("first_k_dense_replace", "interleave_moe_layer_step"):
        value = _int(config, key)
        if value is not None and value > (0 if key == "first_k_dense_replace" else 1):
            return f"dense layers among mixture-of-experts ones ({key} {value})"
    return None


def _shared_experts(config: Mapping[str, Any], active_stated: bool) -> str | None:
    shared = _int(config, "n_shared_experts") or _int(config, "shared_expert_intermediate_size")
    if shared and not active_stated:
        return (
            "a mixture of experts with shared experts and no active_params_b in the profile "
            "(the shared and routed weights cannot be told apart from the counts)"
        )
    return None


def config_refusal(config: Mapping[str, Any], *, active_stated: bool) -> str | None:
    """What in config.json the planner cannot price, or None."""
    rank = _int(config, "kv_lora_rank")
    if rank is not None:
        rope = _int(config, "qk_rope_head_dim")
        return (
            f"multi-head latent attention (kv_lora_rank {rank}"
            f"{f', qk_rope_head_dim {rope}' if rope is not None else ''})"
        )
    for found in (
        _state_layers(config),
        _local_window(config),
        _uneven_layers(config),
        _shared_experts(config, active_stated),
    ):
        if found is not None:
            return found
    return None


def name_refusal(name: str) -> str | None:
    """What the model's name says the planner cannot price, or None."""
    lowered = name.lower().rsplit("/", 1)[-1]
    for pattern, what in _FAMILIES:
        if re.search(pattern, lowered):
            return what
    return None


def refusal(name: str, config: Mapping[str, Any] | None, *, active_stated: bool) -> str | None:
    """Why the model cannot be priced as the planner prices models, or None. A config.json
    decides when given (it says what the layers are); the name only without one."""
    if config:
        found = config_refusal(config, active_stated=active_stated)
        return None if found is None else f"config.json: {found}"
    found = name_refusal(name)
    if found is None:
        return None
    return f"the name {name!r} is a model with {found} (give model.hf_config to be sure)"
