"""Model and accelerator catalogs: data, each card with the source of its numbers.

The cards are YAML files (registry/planner/cards/, and a team's own through
CAPGATE_CATALOG_PATH), read and validated by registry.planner.card_files; this module looks
them up and resolves a provider's model from its profile, config.json and card.

The provider profile is authoritative for the numbers it states; the catalog fills in what
a profile does not carry (MLP width, vocabulary, expert layout) so that FLOPs, activation
memory and mixture-of-experts weight reads can be estimated. A profile may also carry the
model's Hugging Face ``config.json`` (``model.hf_config``), which is read as is and wins
over the catalog for the model's shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.planner import card_files
from registry.planner.architectures import language_config, refusal
from registry.planner.card_files import AcceleratorCardFile, EfficiencyEntry, ModelCardFile
from registry.records.provider import DType, InterconnectKind, ProviderProfile


@dataclass(frozen=True)
class ModelCard:
    """A transformer's shape and parameter counts, with where they were read."""

    name: str
    aliases: tuple[str, ...]
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    total_params_b: float
    active_params_b: float
    max_context_tokens: int
    num_experts: int = 1
    experts_per_token: int = 1
    tied_embeddings: bool = False
    source: str = ""


@dataclass(frozen=True)
class AcceleratorCard:
    """Spec-sheet figures of one accelerator (dense, not sparse), with their source."""

    name: str
    aliases: tuple[str, ...]
    memory_gib: float
    memory_bandwidth_gb_s: float
    dense_tflops: Mapping[str, float]
    interconnect: InterconnectKind
    interconnect_gb_s: float
    source: str
    verify: bool = False
    # What CUDA reports as the device total (torch.cuda.mem_get_info()[1]), the figure vLLM
    # multiplies by gpu_memory_utilization; None when no public start-up log was found.
    exposed_memory_gib: float | None = None
    exposed_source: str = ""
    family: str = ""
    # Kernel efficiencies per weight dtype ("bf16", "fp8"), each with its measurements.
    efficiency: Mapping[str, EfficiencyEntry] = field(default_factory=dict)


def _model(card: ModelCardFile) -> ModelCard:
    fields = card.model_dump(exclude={"kind"})
    return ModelCard(**{**fields, "aliases": tuple(card.aliases)})


def _accelerator(card: AcceleratorCardFile) -> AcceleratorCard:
    fields = card.model_dump(exclude={"kind", "efficiency", "family"})
    # Read-only views: one card object is shared by every lookup of a catalog (_catalog).
    tflops = MappingProxyType({str(dtype): value for dtype, value in card.dense_tflops.items()})
    return AcceleratorCard(
        **{**fields, "aliases": tuple(card.aliases), "dense_tflops": tflops},
        family=card.family or card.name,
        efficiency=MappingProxyType({str(d): entry for d, entry in card.efficiency.items()}),
    )


@dataclass(frozen=True)
class _Built:
    """The cards of one reading of the catalog, as the planner's dataclasses."""

    loaded: tuple[card_files.LoadedCard, ...]
    models: tuple[ModelCard, ...]
    accelerators: tuple[AcceleratorCard, ...]


_built: _Built | None = None


def _catalog() -> _Built:
    """The dataclasses of the catalog in force, built once per reading of it.

    A recomputation looks cards up dozens of times (every step model, memory fit and
    efficiency default); rebuilding them from the validated card files on each lookup cost
    a pydantic dump per card per call. card_files.current() reads the files once per value
    of CAPGATE_CATALOG_PATH and returns the same tuple for it, so the dataclasses are kept
    while that tuple is the one in force: another value of the variable is another tuple,
    and its cards are built afresh.
    """
    global _built
    loaded = card_files.current()
    built = _built
    if built is None or built.loaded is not loaded:
        built = _Built(
            loaded=loaded,
            models=tuple(_model(e.card) for e in loaded if isinstance(e.card, ModelCardFile)),
            accelerators=tuple(
                _accelerator(e.card) for e in loaded if isinstance(e.card, AcceleratorCardFile)
            ),
        )
        _built = built
    return built


def models() -> tuple[ModelCard, ...]:
    """The model cards in force (registry.planner.card_files: shipped, then the user's)."""
    return _catalog().models


def accelerators() -> tuple[AcceleratorCard, ...]:
    """The accelerator cards in force."""
    return _catalog().accelerators


def _key(name: str) -> str:
    return name.lower().rsplit("/", 1)[-1].replace("_", "-")


def find_model(name: str) -> ModelCard | None:
    """The catalog card whose name or alias matches ``name`` (case and org insensitive)."""
    key = _key(name)
    for card in models():
        if key == _key(card.name) or key in card.aliases:
            return card
    return None


def find_accelerator(name: str) -> AcceleratorCard | None:
    key = name.lower()
    for card in accelerators():
        if key == card.name.lower() or key in card.aliases:
            return card
    # Spec names vary ("H100-SXM-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"): a
    # card matches when every word of one of its aliases is a word of the name (so "l4"
    # is not found in "l40s") and the memory the name states, if any, is the card's; the
    # alias with the most words wins ("h100-pcie" over "h100").
    words = set(_words(key))
    best: tuple[int, AcceleratorCard] | None = None
    for card in accelerators():
        if card.memory_gib != _memory_hint(key, card.memory_gib):
            continue
        for alias in card.aliases:
            alias_words = _words(alias)
            if set(alias_words) <= words and (best is None or len(alias_words) > best[0]):
                best = (len(alias_words), card)
    return None if best is None else best[1]


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _memory_hint(key: str, default: float) -> float:
    for token in key.replace("-", " ").split():
        if token.endswith("gb") and token[:-2].isdigit():
            return float(token[:-2])
    return default


# An "80 GB" HBM part exposes 79.19 GiB to CUDA (H100; A100-80GB 79.15): ECC and the driver
# keep the rest. Parts without a measured figure get the same ratio, which GDDR parts with
# ECC enabled (L4, L40S) may still undershoot.
_EXPOSED_RATIO = 79.19 / 80.0


def exposed_memory_gib(memory_gib: float, name: str | None = None) -> tuple[float, str]:
    """The memory CUDA reports for a device stated as ``memory_gib``, and where it comes from.

    vLLM multiplies ``torch.cuda.mem_get_info()`` total, not the datasheet figure, by
    ``gpu_memory_utilization``. A stated figure that equals a catalog card's datasheet memory
    is read as that card's nominal size; any other figure is taken as already measured.
    """
    cards = [c for c in accelerators() if c.memory_gib == memory_gib]
    if name is not None:
        named = find_accelerator(name)
        if named is not None and named.memory_gib == memory_gib:
            cards = [named]
    if not cards:
        return memory_gib, f"{memory_gib:g} GiB as stated (not a catalog datasheet figure)"
    measured = [c for c in cards if c.exposed_memory_gib is not None]
    if measured:
        card = min(measured, key=lambda c: c.exposed_memory_gib or 0.0)
        assert card.exposed_memory_gib is not None
        return card.exposed_memory_gib, f"{card.name}: {card.exposed_source}"
    return (
        round(memory_gib * _EXPOSED_RATIO, 2),
        f"{memory_gib:g} GiB datasheet x {_EXPOSED_RATIO:.4f} (the H100 ratio; no public "
        "start-up log found for this device)",
    )


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


def _int(config: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _mla_dims(config: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """(kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim) of a latent-attention
    config (DeepSeek V2/V3/R1, Kimi K2), or None."""
    rank = _int(config, "kv_lora_rank")
    if rank is None:
        return None
    rope = _int(config, "qk_rope_head_dim") or 0
    nope = _int(config, "qk_nope_head_dim") or 0
    return rank, rope, nope, _int(config, "v_head_dim") or nope


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
    q_rank = _int(config, "q_lora_rank")
    query = hidden * q_rank + q_rank * heads * qk if q_rank else hidden * heads * qk
    return query + hidden * (rank + rope) + rank * heads * (nope + v) + heads * v * hidden


def _moe_layers(config: Mapping[str, Any], layers: int) -> int:
    """How many layers route to experts; the others run the dense MLP (DeepSeek's first
    ``first_k_dense_replace``, Qwen3-MoE's ``mlp_only_layers``, every ``decoder_sparse_step``
    -th layer in Qwen2-MoE, every ``interleave_moe_layer_step``-th in Llama 4)."""
    first_dense = _int(config, "first_k_dense_replace") or 0
    dense_listed = config.get("mlp_only_layers") or []
    only = (
        {i for i in dense_listed if isinstance(i, int)} if isinstance(dense_listed, list) else set()
    )
    step = _int(config, "decoder_sparse_step", "interleave_moe_layer_step") or 1
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
    hidden = _int(config, "hidden_size", "d_model", "n_embd")
    layers = _int(config, "num_hidden_layers", "n_layers", "n_layer")
    heads = _int(config, "num_attention_heads", "n_heads", "n_head")
    inter = _int(config, "intermediate_size", "ffn_dim")
    vocab = _int(config, "vocab_size")
    if None in (hidden, layers, heads, inter, vocab):
        return None
    assert hidden and layers and heads and inter and vocab
    kv = _int(config, "num_key_value_heads") or heads
    head_dim = _int(config, "head_dim") or hidden // heads
    experts = _int(config, "num_local_experts", "num_experts", "n_routed_experts") or 1
    top_k = min(_int(config, "num_experts_per_tok") or 1, experts)
    attn = _attention_params(config, hidden, heads, kv, head_dim)
    # Gated MLP (gate, up, down) for Llama-family configs; ffn_dim models use two matrices.
    mats = 3 if "intermediate_size" in config else 2
    dense_mlp = mats * hidden * inter
    moe_layers = _moe_layers(config, layers) if experts > 1 else 0
    width = _int(config, "moe_intermediate_size") or inter
    shared_width = (_int(config, "n_shared_experts") or 0) * width + (
        _int(config, "shared_expert_intermediate_size") or 0
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
    pattern = _int(config, "sliding_window_pattern") or _DEFAULT_PATTERN.get(model_type)
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
    window = _int(config, "sliding_window")
    longest = _int(config, "max_position_embeddings")
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
        and _int(language_config(spec.hf_config), "intermediate_size", "ffn_dim")
        and _int(language_config(spec.hf_config), "vocab_size")
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
        layers = _int(cfg, "num_hidden_layers", "n_layers", "n_layer") or layers
        hidden = _int(cfg, "hidden_size", "d_model", "n_embd") or hidden
        heads = _int(cfg, "num_attention_heads", "n_heads", "n_head") or heads
        kv = _int(cfg, "num_key_value_heads") or (heads if "num_attention_heads" in cfg else kv)
        head_dim = _int(cfg, "head_dim") or hidden // heads
        inter = _int(cfg, "intermediate_size", "ffn_dim") or inter
        vocab = _int(cfg, "vocab_size") or vocab
        experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts") or 1
        top_k = _int(cfg, "num_experts_per_tok") or 1
        max_ctx = _int(cfg, "max_position_embeddings") or max_ctx
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
