"""The model as the planner prices it (``ModelShape``), resolved from a provider profile,
its config.json and the catalog's card, in that order of authority."""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.errors import FieldProblem, InvalidInput
from registry.planner.architectures import language_config, refusal
from registry.planner.catalog import find_model
from registry.planner.hf_config import (
    AttentionLayout,
    attention_layout,
    config_int,
    count_hf_config,
)
from registry.records.provider import DType, ProviderProfile


@dataclass(frozen=True)
class ModelShape:
    """Everything the planner needs about the model, resolved from profile, config and catalog."""

    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    total_params: float
    active_params: float
    weight_bytes: float
    kv_bytes: float
    max_context_tokens: int
    num_experts: int = 1
    experts_per_token: int = 1
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    tied_embeddings: bool = False
    # Cached planes per KV head: 2 (a key and a value) for multi-head and grouped-query
    # attention; 1 for multi-head latent attention, whose cache is one latent per token and
    # layer (kv_heads 1, head_dim kv_lora_rank + qk_rope_head_dim, as vLLM's MLAAttentionSpec
    # states it: num_kv_heads=1, head_size 576 for DeepSeek-V3, no key/value pair).
    kv_planes: int = 2
    # Attention compute per head, when it differs from head_dim (0: head_dim): the query/key
    # width and the value width (DeepSeek MLA prefill: 128 + 64 and 128).
    qk_head_dim: int = 0
    v_head_dim: int = 0
    # Multi-head latent attention: the latent rank (0 for other attention). Decode attends
    # over the latent with the up-projections absorbed into the query and the output.
    kv_lora_rank: int = 0
    # Sliding-window layers: how many of ``layers`` attend to the last ``sliding_window``
    # tokens only (Gemma 2/3, gpt-oss, Mistral 7B v0.1); the others attend to all of them.
    sliding_window: int | None = None
    sliding_layers: int = 0

    @property
    def attn_qk_dim(self) -> int:
        return self.qk_head_dim or self.head_dim

    @property
    def attn_v_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def full_layers(self) -> int:
        """Layers that keep (and attend to) the whole context."""
        return self.layers - self.sliding_layers

    @property
    def embedding_params(self) -> float:
        """Input embedding plus LM head (one matrix when tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def weights_total_bytes(self) -> float:
        """Checkpoint bytes as vLLM loads them.

        Quantized checkpoints (FP8 compressed-tensors/ModelOpt, AWQ/GPTQ) keep the embedding
        and the LM head in 16 bits: RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic loads 67.72 GiB
        on one GPU, i.e. 68.5B params x 1 B + 2.1B x 2 B, not 70.6B x 1 B (65.8 GiB).
        """
        if self.weight_bytes >= 2.0:
            return self.total_params * self.weight_bytes
        embed = min(self.embedding_params, self.total_params)
        return (self.total_params - embed) * self.weight_bytes + embed * 2.0

    @property
    def expert_params(self) -> float:
        """Parameters inside the routed experts (zero for dense models)."""
        if self.num_experts <= self.experts_per_token:
            return 0.0
        per_expert = (self.total_params - self.active_params) / (
            self.num_experts - self.experts_per_token
        )
        return per_expert * self.num_experts


def resolve_model(provider: ProviderProfile) -> ModelShape:
    """The model's shape: hf_config (as is) over the profile's fields over the catalog.

    Raises InvalidInput for a model whose layers the planner cannot price
    (registry.planner.architectures): refused by name, never priced as a dense transformer.
    """
    spec = provider.model
    why = refusal(spec.name, spec.hf_config, active_stated=spec.active_params_b is not None)
    if why is not None:
        loc = "model.hf_config" if spec.hf_config else "model.name"
        raise InvalidInput(
            f"the planner cannot price {spec.name}",
            problems=[
                FieldProblem(
                    loc,
                    f"provider {provider.name}: the planner cannot price {spec.name}, "
                    f"{why}: the planner prices grouped-query, latent and sliding-window "
                    "attention layers as config.json states them; pricing this model as one "
                    "of those would misstate its memory and step time, so it is refused "
                    "rather than priced wrongly",
                )
            ],
        )
    card = find_model(spec.name)
    sources = ["provider profile model fields"]
    notes: list[str] = []
    layers, hidden, heads, kv, head_dim = (
        spec.layers,
        spec.hidden_size,
        spec.attention_heads,
        spec.kv_heads,
        spec.head_dim,
    )
    inter = card.intermediate_size if card else 4 * spec.hidden_size
    vocab = card.vocab_size if card else 32000
    experts = card.num_experts if card else 1
    top_k = card.experts_per_token if card else 1
    max_ctx = spec.max_context_tokens
    tied = card.tied_embeddings if card else False
    if card is not None:
        sources.append(f"catalog {card.name}: {card.source}")
    elif not (
        spec.hf_config
        and config_int(language_config(spec.hf_config), "intermediate_size", "ffn_dim")
        and config_int(language_config(spec.hf_config), "vocab_size")
    ):
        notes.append(
            f"model {spec.name!r} is not in the catalog: MLP width taken as 4x hidden and "
            "vocabulary as 32000 (only activation-memory and FLOP estimates use them)"
        )
    total = spec.total_params_b * 1e9
    active = (spec.active_params_b or spec.total_params_b) * 1e9
    layout = AttentionLayout(kv_heads=kv, head_dim=head_dim)
    cfg = language_config(spec.hf_config) if spec.hf_config else None
    if cfg:
        sources.insert(0, "provider profile model.hf_config (config.json, read as is)")
        layers = config_int(cfg, "num_hidden_layers", "n_layers", "n_layer") or layers
        hidden = config_int(cfg, "hidden_size", "d_model", "n_embd") or hidden
        heads = config_int(cfg, "num_attention_heads", "n_heads", "n_head") or heads
        kv = config_int(cfg, "num_key_value_heads") or (
            heads if "num_attention_heads" in cfg else kv
        )
        head_dim = config_int(cfg, "head_dim") or hidden // heads
        inter = config_int(cfg, "intermediate_size", "ffn_dim") or inter
        vocab = config_int(cfg, "vocab_size") or vocab
        experts = config_int(cfg, "num_local_experts", "num_experts", "n_routed_experts") or 1
        top_k = config_int(cfg, "num_experts_per_tok") or 1
        max_ctx = config_int(cfg, "max_position_embeddings") or max_ctx
        if "tie_word_embeddings" in cfg:
            tied = bool(cfg["tie_word_embeddings"])
        layout = attention_layout(cfg, layers=layers, heads=heads, kv=kv, head_dim=head_dim)
        if layout.note is not None:
            notes.append(layout.note)
        counted = count_hf_config(cfg)
        if counted is not None:
            if abs(counted.total - total) / total > 0.05:
                notes.append(
                    f"parameters counted from config.json ({counted.total / 1e9:.2f}B) differ "
                    f"from the profile's total_params_b ({total / 1e9:.2f}B) by more than 5%; "
                    "the profile's figure is used for weight memory"
                )
            if spec.active_params_b is None and experts > 1:
                active = counted.active * total / counted.total
                notes.append(
                    f"active parameters counted from config.json: {counted.active / 1e9:.2f}B "
                    f"of {counted.total / 1e9:.2f}B ({top_k} routed experts of {experts} in "
                    f"{counted.moe_layers} of {layers} layers, shared experts and dense "
                    "layers included), scaled to the profile's total"
                )
            if experts > 1:
                inter = counted.width_per_slot
        theirs_ours = [("layers", spec.layers, layers)]
        if layout.kv_planes == 2:  # a latent cache has no KV heads to compare
            theirs_ours += [("kv_heads", spec.kv_heads, kv), ("head_dim", spec.head_dim, head_dim)]
        for key, theirs, ours in theirs_ours:
            if theirs != ours:
                notes.append(
                    f"config.json gives {key}={ours}, the profile says {theirs}; "
                    "config.json is used"
                )
    weight_bytes = spec.weights_dtype.bytes
    if spec.quantization and spec.weights_dtype in (DType.bf16, DType.fp16, DType.fp32):
        notes.append(
            f"quantization {spec.quantization!r} stated but weights_dtype is "
            f"{spec.weights_dtype.value}; weight bytes follow weights_dtype"
        )
    return ModelShape(
        name=spec.name,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=layout.kv_heads,
        head_dim=layout.head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        total_params=total,
        active_params=active,
        weight_bytes=weight_bytes,
        kv_bytes=spec.kv_dtype.bytes,
        max_context_tokens=max_ctx,
        num_experts=experts,
        experts_per_token=top_k,
        sources=tuple(sources),
        notes=tuple(notes),
        tied_embeddings=tied,
        kv_planes=layout.kv_planes,
        qk_head_dim=layout.qk_head_dim,
        v_head_dim=layout.v_head_dim,
        kv_lora_rank=layout.kv_lora_rank,
        sliding_window=layout.sliding_window,
        sliding_layers=layout.sliding_layers,
    )
