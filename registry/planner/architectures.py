"""Which architectures the planner prices, and a refusal by name for those it cannot.

The planner prices a model as a stack of transformer layers whose KV cache and attention it
reads from the model's config.json (``model.hf_config``, registry.planner.catalog):

- grouped-query and multi-head attention: 2 x KV heads x head dim values per token and layer;
- multi-head latent attention (DeepSeek V2/V3/R1, Kimi K2: ``kv_lora_rank``): one latent of
  ``kv_lora_rank + qk_rope_head_dim`` per token and layer, replicated on every TP rank;
- sliding-window attention (Mistral 7B v0.1, Gemma 2/3, gpt-oss: ``sliding_window`` with
  ``layer_types`` or ``sliding_window_pattern``): local layers keep their window only;
- mixtures of experts with shared experts and dense layers among the routed ones
  (``n_shared_experts``, ``shared_expert_intermediate_size``, ``first_k_dense_replace``,
  ``mlp_only_layers``): active parameters counted layer by layer from the config.

What it still cannot price would be priced with the wrong KV size, the wrong attention
cost, or both, and a plan sized on that is a guess presented as a recomputation:

- chunked local attention (Llama 4 ``attention_chunk_size``) and sliding windows on some
  layers chosen by ``max_window_layers`` (Qwen2 with ``use_sliding_window``);
- state-space or linear-attention layers (Jamba, Nemotron-H, Falcon-H1, Granite 4.0-H,
  Qwen3-Next, Mamba): a constant state per sequence instead of a KV cache;
- layers that differ in shape (Nemotron Super/Ultra ``block_configs``) or reuse another
  layer's KV cache (Gemma 3n ``num_kv_shared_layers``);
- sparse or compressed latent attention (DeepSeek V3.2 ``index_topk``, DeepSeek V4);
- a mixture of experts with shared experts whose config lacks the fields to count them and
  whose profile does not state ``active_params_b``.

Each is found in config.json when the profile carries it (a multimodal checkpoint's
``text_config`` read over its top level). Without one, a family whose
layout only config.json gives (latent or local attention, state-space layers, differing
layers) is refused by its name. Nothing here guesses a price: ``refusal`` says what the
planner cannot price and why, and the caller refuses the model (exit 2, HTTP 422).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# model_type values of config.json whose layers are not all attention with a KV cache.
_STATE_SPACE_TYPES = frozenset(
    {
        "bamba", "falcon_h1", "granitemoehybrid", "jamba", "kimi_linear", "lfm2", "mamba",
        "mamba2", "minimax", "nemotron_h", "plamo2", "qwen3_next", "zamba", "zamba2",
    }
)  # fmt: skip
# Layer kinds of ``layer_types`` / ``layers_block_type`` the planner prices as it should.
_FULL_ATTENTION = frozenset({"full_attention", "attention"})

# By name, for a profile without config.json: (pattern on the lower-cased name, what it is,
# whether config.json would let the planner price it).
_FAMILIES: tuple[tuple[str, str, bool], ...] = (
    (r"deepseek-(v2|v3|r1)|kimi-k2", "multi-head latent attention", True),
    (r"gemma-?[23]|gpt-oss|mistral-7b(-instruct)?-v0\.1|starcoder2", "local attention", True),
    (r"llama-4", "chunked local attention", False),
    (
        r"jamba|nemotron-h|falcon-h1|granite-4\.0-h|qwen3-next|mamba|zamba",
        "state-space or linear-attention layers",
        False,
    ),
    (r"nemotron-(super|ultra)|llama-3_[13]-nemotron-(super|ultra)", "layers that differ", False),
)


def language_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config.json: a multimodal checkpoint's
    ``text_config`` (Gemma 3, Llama 4, Mistral 3) over its top level, as vLLM reads it
    (``hf_text_config``); the config itself otherwise."""
    text = config.get("text_config")
    if isinstance(text, Mapping):
        return {**config, **text}
    return config


def _int(config: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _local_window(config: Mapping[str, Any]) -> str | None:
    """Why the config's local attention is not priced, or None (sliding windows are)."""
    chunk = _int(config, "attention_chunk_size")
    if chunk is not None:
        return f"chunked local attention (attention_chunk_size {chunk})"
    window = _int(config, "sliding_window")
    layers = _int(config, "num_hidden_layers")
    split = _int(config, "max_window_layers")
    if (
        window is not None
        and config.get("use_sliding_window") is True
        and split is not None
        and layers is not None
        and 0 < split < layers
        and not isinstance(config.get("layer_types"), list)
    ):
        return f"sliding-window attention on part of the layers (max_window_layers {split})"
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
    shared = _int(config, "num_kv_shared_layers")
    if shared:
        return f"layers that reuse another layer's KV cache (num_kv_shared_layers {shared})"
    return None


# The fields hf_config.count_hf_config needs to count parameters layer by layer.
_COUNTED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def _shared_experts(config: Mapping[str, Any], active_stated: bool) -> str | None:
    shared = _int(config, "n_shared_experts") or _int(config, "shared_expert_intermediate_size")
    countable = all(_int(config, key) for key in _COUNTED) and _int(
        config, "intermediate_size", "moe_intermediate_size"
    )
    if shared and not active_stated and not countable:
        return (
            "a mixture of experts with shared experts, no active_params_b in the profile and "
            f"a config.json without {', '.join(_COUNTED)} and intermediate_size to count them"
        )
    return None


def _sparse_attention(config: Mapping[str, Any]) -> str | None:
    """Latent attention over a selected subset of the context (DeepSeek V3.2's lightning
    indexer, V4's compressed caches): another cache layout and another attention cost."""
    top_k = _int(config, "index_topk")
    if top_k is not None:
        return f"sparse attention over selected tokens (index_topk {top_k})"
    model_type = str(config.get("model_type", ""))
    if model_type in ("deepseek_v32", "deepseek_v4"):
        return f"sparse or compressed latent attention (model_type {model_type})"
    return None


def _latent_without_dims(config: Mapping[str, Any]) -> str | None:
    rank = _int(config, "kv_lora_rank")
    if rank is None:
        return None
    missing = [k for k in _LATENT_DIMS if _int(config, k) is None]
    if missing:
        return (
            f"multi-head latent attention (kv_lora_rank {rank}) without "
            f"{', '.join(missing)}: its cache and attention cannot be sized"
        )
    return None


# What latent attention's cache (rank + rope) and compute (nope + rope, v) are sized from.
_LATENT_DIMS = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def config_refusal(config: Mapping[str, Any], *, active_stated: bool) -> str | None:
    """What in config.json the planner cannot price, or None."""
    for found in (
        _sparse_attention(config),
        _latent_without_dims(config),
        _state_layers(config),
        _local_window(config),
        _uneven_layers(config),
        _shared_experts(config, active_stated),
    ):
        if found is not None:
            return found
    return None


def name_refusal(name: str) -> tuple[str, bool] | None:
    """What the model's name says its layers are, and whether config.json would let the
    planner price them; None for a name of no such family."""
    lowered = name.lower().rsplit("/", 1)[-1]
    for pattern, what, with_config in _FAMILIES:
        if re.search(pattern, lowered):
            return what, with_config
    return None


def refusal(name: str, config: Mapping[str, Any] | None, *, active_stated: bool) -> str | None:
    """Why the model cannot be priced as the planner prices models, or None. A config.json
    decides when given (it says what the layers are); the name only without one."""
    if config:
        found = config_refusal(language_config(config), active_stated=active_stated)
        return None if found is None else f"config.json: {found}"
    named = name_refusal(name)
    if named is None:
        return None
    what, with_config = named
    if with_config:
        return (
            f"the name {name!r} is a model with {what}, which the planner prices from its "
            "config.json only (give model.hf_config)"
        )
    return f"the name {name!r} is a model with {what} (give model.hf_config to be sure)"
