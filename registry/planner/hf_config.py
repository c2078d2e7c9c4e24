"""Reading a model's Hugging Face config.json: parameter counts (dense, mixture of experts
with shared experts, multi-head latent attention) and the attention layout (which layers
attend locally, over what window), so no catalog card is needed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def config_int(config: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _mla_dims(config: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """(kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim) of a latent-attention
    config (DeepSeek V2/V3/R1, Kimi K2), or None."""
    rank = config_int(config, "kv_lora_rank")
    if rank is None:
        return None
    rope = config_int(config, "qk_rope_head_dim") or 0
    nope = config_int(config, "qk_nope_head_dim") or 0
    return rank, rope, nope, config_int(config, "v_head_dim") or nope


def _attention_params(
    config: Mapping[str, Any], hidden: int, heads: int, kv: int, head_dim: int
) -> int:
    """One layer's attention weights. Latent attention (DeepSeek-V3 modelling code): the
    query through a rank ``q_lora_rank`` down/up pair (or one projection when it is null),
    keys and values compressed to ``kv_lora_rank`` plus the shared rope key, expanded per
    head to ``qk_nope_head_dim + v_head_dim``, and the output projection."""
    mla = _mla_dims(config)
    if mla is None:
        return hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    rank, rope, nope, v = mla
    qk = nope + rope
    q_rank = config_int(config, "q_lora_rank")
    query = hidden * q_rank + q_rank * heads * qk if q_rank else hidden * heads * qk
    return query + hidden * (rank + rope) + rank * heads * (nope + v) + heads * v * hidden


def _moe_layers(config: Mapping[str, Any], layers: int) -> int:
    """How many layers route to experts; the others run the dense MLP (DeepSeek's first
    ``first_k_dense_replace``, Qwen3-MoE's ``mlp_only_layers``, every ``decoder_sparse_step``
    -th layer in Qwen2-MoE, every ``interleave_moe_layer_step``-th in Llama 4)."""
    first_dense = config_int(config, "first_k_dense_replace") or 0
    dense_listed = config.get("mlp_only_layers") or []
    only = (
        {i for i in dense_listed if isinstance(i, int)} if isinstance(dense_listed, list) else set()
    )
    step = config_int(config, "decoder_sparse_step", "interleave_moe_layer_step") or 1
    return sum(
        1
        for i in range(layers)
        if i >= first_dense and i not in only and (i + 1) % max(1, step) == 0
    )


@dataclass(frozen=True)
class ConfigCounts:
    """Parameter counts and MLP widths read from a config.json."""

    total: float
    active: float
    moe_layers: int
    # The widest MLP a token goes through, as a width per routed expert slot: what the
    # activation estimate multiplies by experts_per_token (routed plus shared experts, or a
    # dense layer's intermediate_size, whichever is wider).
    width_per_slot: int


def count_hf_config(config: Mapping[str, Any]) -> ConfigCounts | None:
    """Parameters of a Llama/Mixtral/Qwen/DeepSeek-style config, counted layer by layer:
    attention (grouped-query or latent), a gated MLP (dense layers) or routed experts
    (``moe_intermediate_size`` wide when given) with their router and shared experts
    (``n_shared_experts`` of the expert width, or one ``shared_expert_intermediate_size``
    wide), embeddings. Active: the routed ``num_experts_per_tok`` plus everything else.

    Returns None when the config lacks the fields (other architectures); the profile's
    stated count is then used alone.
    """
    hidden = config_int(config, "hidden_size", "d_model", "n_embd")
    layers = config_int(config, "num_hidden_layers", "n_layers", "n_layer")
    heads = config_int(config, "num_attention_heads", "n_heads", "n_head")
    inter = config_int(config, "intermediate_size", "ffn_dim")
    vocab = config_int(config, "vocab_size")
    if None in (hidden, layers, heads, inter, vocab):
        return None
    assert hidden and layers and heads and inter and vocab
    kv = config_int(config, "num_key_value_heads") or heads
    head_dim = config_int(config, "head_dim") or hidden // heads
    experts = config_int(config, "num_local_experts", "num_experts", "n_routed_experts") or 1
    top_k = min(config_int(config, "num_experts_per_tok") or 1, experts)
    attn = _attention_params(config, hidden, heads, kv, head_dim)
    # Gated MLP (gate, up, down) for Llama-family configs; ffn_dim models use two matrices.
    mats = 3 if "intermediate_size" in config else 2
    dense_mlp = mats * hidden * inter
    moe_layers = _moe_layers(config, layers) if experts > 1 else 0
    width = config_int(config, "moe_intermediate_size") or inter
    shared_width = (config_int(config, "n_shared_experts") or 0) * width + (
        config_int(config, "shared_expert_intermediate_size") or 0
    )
    expert = mats * hidden * width
    # Each MoE layer also holds its shared experts and its router (Qwen2-MoE's one-output
    # shared-expert gate, hidden_size weights a layer, is left out).
    common = mats * hidden * shared_width + hidden * experts if experts > 1 else 0
    tied = bool(config.get("tie_word_embeddings", False))
    embed = vocab * hidden * (1 if tied else 2)
    dense_layers = layers - moe_layers
    base = layers * attn + dense_layers * dense_mlp + moe_layers * common + embed
    total = base + moe_layers * experts * expert
    active = base + moe_layers * top_k * expert
    widest = max(width * top_k + shared_width, inter if dense_layers else 0)
    return ConfigCounts(
        total=float(total),
        active=float(active),
        moe_layers=moe_layers,
        width_per_slot=-(-widest // top_k),
    )


def params_from_hf_config(config: Mapping[str, Any]) -> tuple[float, float] | None:
    """Total and active parameter counts computed from a config.json (``count_hf_config``)."""
    counted = count_hf_config(config)
    return None if counted is None else (counted.total, counted.active)


@dataclass(frozen=True)
class AttentionLayout:
    """What config.json says about the attention beyond heads x head dim."""

    kv_heads: int
    head_dim: int
    kv_planes: int = 2
    qk_head_dim: int = 0
    v_head_dim: int = 0
    kv_lora_rank: int = 0
    sliding_window: int | None = None
    sliding_layers: int = 0
    note: str | None = None


def _sliding_layers(config: Mapping[str, Any], layers: int) -> int:
    """Layers of a config with a ``sliding_window`` that attend to the window only.

    ``layer_types`` (transformers >= 4.53: Gemma 2/3, gpt-oss, Qwen3) says it per layer;
    older Gemma 3 and Cohere 2 configs give ``sliding_window_pattern`` (every n-th layer
    is global), or leave it to their model type's default; any other config with a window
    (Mistral 7B v0.1, Starcoder2) slides in every layer.
    """
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and kinds:
        return sum(1 for kind in kinds[:layers] if kind == "sliding_attention")
    model_type = str(config.get("model_type", ""))
    pattern = config_int(config, "sliding_window_pattern") or _DEFAULT_PATTERN.get(model_type)
    if pattern is not None and pattern > 0:
        return layers - layers // pattern
    return layers


# Every n-th layer global when config.json says nothing per layer: the transformers
# defaults (Gemma2Config and GptOssConfig alternate, local first; Gemma3TextConfig
# sliding_window_pattern 6; Cohere2Config 4).
_DEFAULT_PATTERN = {
    "gemma2": 2, "gpt_oss": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4,
}  # fmt: skip


def attention_layout(
    config: Mapping[str, Any], *, layers: int, heads: int, kv: int, head_dim: int
) -> AttentionLayout:
    """The KV cache and attention compute a config.json implies (architectures.py has
    already refused what is not priced)."""
    mla = _mla_dims(config)
    if mla is not None:
        rank, rope, nope, v = mla
        return AttentionLayout(
            kv_heads=1,
            head_dim=rank + rope,
            kv_planes=1,
            qk_head_dim=nope + rope,
            v_head_dim=v,
            kv_lora_rank=rank,
            note=(
                f"multi-head latent attention: the KV cache holds one latent of kv_lora_rank "
                f"{rank} + qk_rope_head_dim {rope} = {rank + rope} values per token and layer, "
                "the same on every TP rank (vLLM MLAAttentionSpec: num_kv_heads 1); prefill "
                f"attends as {heads} heads of {nope + rope} (query/key) and {v} (value), "
                "decode over the latent with the up-projections absorbed"
            ),
        )
    window = config_int(config, "sliding_window")
    longest = config_int(config, "max_position_embeddings")
    if (
        window is None
        or config.get("use_sliding_window") is False
        or (longest is not None and window >= longest)
    ):
        return AttentionLayout(kv_heads=kv, head_dim=head_dim)
    local = _sliding_layers(config, layers)
    if local == 0:
        return AttentionLayout(kv_heads=kv, head_dim=head_dim)
    return AttentionLayout(
        kv_heads=kv,
        head_dim=head_dim,
        sliding_window=window,
        sliding_layers=local,
        note=(
            f"sliding-window attention in {local} of {layers} layers (window {window}): they "
            "keep and attend to the last window tokens only (vLLM's hybrid KV cache manager "
            "frees their blocks outside it)"
        ),
    )
