"""Model and accelerator catalogs: data, each card with the source of its numbers.

The provider profile is authoritative for the numbers it states; the catalog fills in what
a profile does not carry (MLP width, vocabulary, expert layout) so that FLOPs, activation
memory and mixture-of-experts weight reads can be estimated. A profile may also carry the
model's Hugging Face ``config.json`` (``model.hf_config``), which is read as is and wins
over the catalog for the model's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

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


_HF = "Hugging Face config.json of {repo} (model card for parameter counts)"

MODELS: tuple[ModelCard, ...] = (
    ModelCard(
        name="meta-llama/Llama-3.1-8B",
        aliases=("llama-3.1-8b", "llama-3.1-8b-instruct", "llama3.1-8b"),
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate_size=14336,
        vocab_size=128256,
        total_params_b=8.03,
        active_params_b=8.03,
        max_context_tokens=131072,
        source=_HF.format(repo="meta-llama/Llama-3.1-8B"),
    ),
    ModelCard(
        name="meta-llama/Meta-Llama-3-8B",
        aliases=("llama-3-8b", "meta-llama-3-8b-instruct", "llama-3-8b-instruct"),
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate_size=14336,
        vocab_size=128256,
        total_params_b=8.03,
        active_params_b=8.03,
        max_context_tokens=8192,
        source=_HF.format(repo="meta-llama/Meta-Llama-3-8B"),
    ),
    ModelCard(
        name="meta-llama/Llama-3.1-70B",
        aliases=(
            "llama-3.1-70b",
            "llama-3.1-70b-instruct",
            "llama-3.3-70b",
            "llama-3.3-70b-instruct",
        ),
        layers=80,
        hidden_size=8192,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        intermediate_size=28672,
        vocab_size=128256,
        total_params_b=70.6,
        active_params_b=70.6,
        max_context_tokens=131072,
        source=_HF.format(repo="meta-llama/Llama-3.1-70B and meta-llama/Llama-3.3-70B-Instruct"),
    ),
    ModelCard(
        name="meta-llama/Llama-2-70b-hf",
        aliases=("llama-2-70b", "llama-2-70b-chat"),
        layers=80,
        hidden_size=8192,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        intermediate_size=28672,
        vocab_size=32000,
        total_params_b=69.0,
        active_params_b=69.0,
        max_context_tokens=4096,
        source=_HF.format(repo="meta-llama/Llama-2-70b-hf"),
    ),
    ModelCard(
        name="mistralai/Mixtral-8x7B-v0.1",
        aliases=("mixtral-8x7b", "mixtral-8x7b-instruct-v0.1"),
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate_size=14336,
        vocab_size=32000,
        total_params_b=46.7,
        active_params_b=12.9,
        max_context_tokens=32768,
        num_experts=8,
        experts_per_token=2,
        source=_HF.format(repo="mistralai/Mixtral-8x7B-v0.1")
        + "; 46.7B total / 12.9B active from Mistral's Mixtral announcement (Dec 2023)",
    ),
    ModelCard(
        name="Qwen/Qwen2.5-32B",
        aliases=("qwen2.5-32b", "qwen2.5-32b-instruct"),
        layers=64,
        hidden_size=5120,
        attention_heads=40,
        kv_heads=8,
        head_dim=128,
        intermediate_size=27648,
        vocab_size=152064,
        total_params_b=32.5,
        active_params_b=32.5,
        max_context_tokens=131072,
        source=_HF.format(repo="Qwen/Qwen2.5-32B"),
    ),
    ModelCard(
        name="Qwen/Qwen2.5-7B",
        aliases=("qwen2.5-7b", "qwen2.5-7b-instruct"),
        layers=28,
        hidden_size=3584,
        attention_heads=28,
        kv_heads=4,
        head_dim=128,
        intermediate_size=18944,
        vocab_size=152064,
        total_params_b=7.62,
        active_params_b=7.62,
        max_context_tokens=32768,
        source=_HF.format(repo="Qwen/Qwen2.5-7B-Instruct"),
    ),
    ModelCard(
        name="Qwen/Qwen3-32B",
        aliases=("qwen3-32b",),
        layers=64,
        hidden_size=5120,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        intermediate_size=25600,
        vocab_size=151936,
        total_params_b=32.8,
        active_params_b=32.8,
        max_context_tokens=40960,
        source=_HF.format(repo="Qwen/Qwen3-32B"),
    ),
    ModelCard(
        name="facebook/opt-13b",
        aliases=("opt-13b",),
        layers=40,
        hidden_size=5120,
        attention_heads=40,
        kv_heads=40,
        head_dim=128,
        intermediate_size=20480,
        vocab_size=50272,
        total_params_b=12.85,
        active_params_b=12.85,
        max_context_tokens=2048,
        tied_embeddings=True,
        source=_HF.format(repo="facebook/opt-13b") + "; used by PagedAttention (SOSP'23)",
    ),
    ModelCard(
        name="mosaicml/mpt-7b",
        aliases=("mpt-7b",),
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=32,
        head_dim=128,
        intermediate_size=16384,
        vocab_size=50432,
        total_params_b=6.7,
        active_params_b=6.7,
        max_context_tokens=2048,
        tied_embeddings=True,
        source=_HF.format(repo="mosaicml/mpt-7b") + "; used by the Databricks inference blog",
    ),
)
# Qwen2-7B has Qwen2.5-7B's architecture, layer for layer (the same config.json shape).
MODELS += (
    replace(
        next(m for m in MODELS if m.name == "Qwen/Qwen2.5-7B"),
        name="Qwen/Qwen2-7B-Instruct",
        aliases=("qwen2-7b", "qwen2-7b-instruct"),
        source=_HF.format(repo="Qwen/Qwen2-7B-Instruct"),
    ),
)

_H100_EXPOSED = (
    "llm-d-incubation/llm-d-planner@fbd68515a903397a1b785a2189dc7512b0d55680 "
    "accuracy/results/v0.19.0/accuracy_report.md (vLLM 0.19.0 logs, 'physical 79.19 GiB'); "
    "llm-d/llm-d-benchmark@259334868c5075da530cc6c90b43fceb11b6e6a7 "
    "config_explorer/empirical-vllm-memory-results.md (79.18 GiB total)"
)
_NV = "NVIDIA {part} datasheet (dense figures; matches AIConfigurator systems/*.yaml)"

ACCELERATORS: tuple[AcceleratorCard, ...] = (
    AcceleratorCard(
        name="A100-SXM-80GB",
        aliases=("a100-80gb", "a100-sxm4-80gb", "a100"),
        memory_gib=80,
        memory_bandwidth_gb_s=2039,
        dense_tflops={"bf16": 312, "fp16": 312},
        interconnect=InterconnectKind.nvlink,
        interconnect_gb_s=600,
        source=_NV.format(part="A100 80GB SXM"),
        exposed_memory_gib=79.15,
        exposed_source="vLLM 0.6-0.8 start-up lines 'total_gpu_memory (79.15GiB)' on "
        "A100-SXM4-80GB in public notebooks (unpinned; verify)",
    ),
    AcceleratorCard(
        name="A100-SXM-40GB",
        aliases=("a100-40gb", "a100-sxm4-40gb"),
        memory_gib=40,
        memory_bandwidth_gb_s=1555,
        dense_tflops={"bf16": 312, "fp16": 312},
        interconnect=InterconnectKind.nvlink,
        interconnect_gb_s=600,
        source="NVIDIA A100 datasheet (40GB SXM: 1,555 GB/s); not in accelerators.md",
        verify=True,
        exposed_memory_gib=39.39,
        exposed_source="vLLM start-up lines on A100-SXM4-40GB report total_gpu_memory 39.39 to "
        "39.56 GiB (driver dependent); the lowest is used (unpinned; verify)",
    ),
    AcceleratorCard(
        name="H100-SXM-80GB",
        aliases=("h100", "h100-sxm", "h100-80gb"),
        memory_gib=80,
        memory_bandwidth_gb_s=3350,
        dense_tflops={"bf16": 989, "fp16": 989, "fp8": 1979},
        interconnect=InterconnectKind.nvlink,
        interconnect_gb_s=900,
        source=_NV.format(part="H100 SXM"),
        exposed_memory_gib=79.19,
        exposed_source=_H100_EXPOSED,
    ),
    AcceleratorCard(
        name="H200-SXM-141GB",
        aliases=("h200", "h200-sxm"),
        memory_gib=141,
        memory_bandwidth_gb_s=4800,
        dense_tflops={"bf16": 989, "fp16": 989, "fp8": 1979},
        interconnect=InterconnectKind.nvlink,
        interconnect_gb_s=900,
        source=_NV.format(part="H200 SXM"),
    ),
    AcceleratorCard(
        name="B200-HGX-180GB",
        aliases=("b200",),
        memory_gib=180,
        memory_bandwidth_gb_s=7700,
        dense_tflops={"bf16": 2250, "fp16": 2250, "fp8": 4500, "int4": 9000},
        interconnect=InterconnectKind.nvlink,
        interconnect_gb_s=1800,
        source=_NV.format(part="HGX B200") + "; bandwidth stated as ~7.7-8 TB/s, low end used",
    ),
    AcceleratorCard(
        name="L4-24GB",
        aliases=("l4",),
        memory_gib=24,
        memory_bandwidth_gb_s=300,
        dense_tflops={"bf16": 121, "fp16": 121, "fp8": 242},
        interconnect=InterconnectKind.pcie,
        interconnect_gb_s=64,
        source=_NV.format(part="L4") + "; PCIe Gen4 x16 (64 GB/s bidirectional), no NVLink",
    ),
    AcceleratorCard(
        name="L40S-48GB",
        aliases=("l40s",),
        memory_gib=48,
        memory_bandwidth_gb_s=864,
        dense_tflops={"bf16": 362, "fp16": 362, "fp8": 733},
        interconnect=InterconnectKind.pcie,
        interconnect_gb_s=64,
        source=_NV.format(part="L40S") + "; PCIe Gen4 x16 (64 GB/s bidirectional), no NVLink",
    ),
    AcceleratorCard(
        name="RTX-3090-24GB",
        aliases=("rtx-3090", "rtx3090", "geforce-rtx-3090"),
        memory_gib=24,
        memory_bandwidth_gb_s=936,
        dense_tflops={"bf16": 71, "fp16": 71},
        interconnect=InterconnectKind.pcie,
        interconnect_gb_s=64,
        source="NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Appendix A (GeForce RTX "
        "3090: 24 GB GDDR6X, 936 GB/s, 71 dense BF16/FP16 tensor TFLOPS with FP32 accumulate); "
        "PCIe Gen4 x16 (64 GB/s bidirectional)",
        exposed_memory_gib=23.54,
        exposed_source="vLLM 0.17.1 OOM line 'GPU 0 has a total capacity of 23.54 GiB' on an RTX "
        "3090 (driver 580.159.03), TheBuccaneer/vllm-offload-profiles@"
        "1e3f023eae1617eb45b94f676d1f5314f866d730 data/provenance/gpu_memory_configuration/"
        "fixd_llama_gmem090_offload0_failed.log; older drivers report 23.58 GiB",
    ),
    AcceleratorCard(
        name="MI300X-192GB",
        aliases=("mi300x",),
        memory_gib=192,
        memory_bandwidth_gb_s=5300,
        dense_tflops={"bf16": 1307, "fp16": 1307, "fp8": 2615},
        interconnect=InterconnectKind.infinity_fabric,
        interconnect_gb_s=896,
        source="AMD Instinct MI300X datasheet (verify)",
        verify=True,
    ),
)


def _key(name: str) -> str:
    return name.lower().rsplit("/", 1)[-1].replace("_", "-")


def find_model(name: str) -> ModelCard | None:
    """The catalog card whose name or alias matches ``name`` (case and org insensitive)."""
    key = _key(name)
    for card in MODELS:
        if key == _key(card.name) or key in card.aliases:
            return card
    return None


def find_accelerator(name: str) -> AcceleratorCard | None:
    key = name.lower()
    for card in ACCELERATORS:
        if key == card.name.lower() or key in card.aliases:
            return card
    # Spec names vary ("H100-SXM-80GB", "NVIDIA H100 80GB HBM3"): match on the family token.
    for card in ACCELERATORS:
        if card.aliases[0] in key and card.memory_gib == _memory_hint(key, card.memory_gib):
            return card
    return None


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
    cards = [c for c in ACCELERATORS if c.memory_gib == memory_gib]
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


def params_from_hf_config(config: Mapping[str, Any]) -> tuple[float, float] | None:
    """Total and active parameter counts computed from a Llama/Mixtral/Qwen-style config.

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
    experts = _int(config, "num_local_experts", "num_experts") or 1
    top_k = _int(config, "num_experts_per_tok") or 1
    attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    # Gated MLP (gate, up, down) for Llama-family configs; ffn_dim models use two matrices.
    mlp_mats = 3 if "intermediate_size" in config else 2
    mlp = mlp_mats * hidden * inter
    tied = bool(config.get("tie_word_embeddings", False))
    embed = vocab * hidden * (1 if tied else 2)
    total = layers * (attn + mlp * experts) + embed
    active = layers * (attn + mlp * min(top_k, experts)) + embed
    return float(total), float(active)


def resolve_model(provider: ProviderProfile) -> ModelShape:
    """The model's shape: hf_config (as is) over the profile's fields over the catalog."""
    spec = provider.model
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
    else:
        notes.append(
            f"model {spec.name!r} is not in the catalog: MLP width taken as 4x hidden and "
            "vocabulary as 32000 (only activation-memory and FLOP estimates use them)"
        )
    total = spec.total_params_b * 1e9
    active = (spec.active_params_b or spec.total_params_b) * 1e9
    cfg = spec.hf_config
    if cfg:
        sources.insert(0, "provider profile model.hf_config (config.json, read as is)")
        layers = _int(cfg, "num_hidden_layers", "n_layers", "n_layer") or layers
        hidden = _int(cfg, "hidden_size", "d_model", "n_embd") or hidden
        heads = _int(cfg, "num_attention_heads", "n_heads", "n_head") or heads
        kv = _int(cfg, "num_key_value_heads") or (heads if "num_attention_heads" in cfg else kv)
        head_dim = _int(cfg, "head_dim") or hidden // heads
        inter = _int(cfg, "intermediate_size", "ffn_dim") or inter
        vocab = _int(cfg, "vocab_size") or vocab
        experts = _int(cfg, "num_local_experts", "num_experts") or 1
        top_k = _int(cfg, "num_experts_per_tok") or 1
        max_ctx = _int(cfg, "max_position_embeddings") or max_ctx
        if "tie_word_embeddings" in cfg:
            tied = bool(cfg["tie_word_embeddings"])
        counted = params_from_hf_config(cfg)
        if counted is not None:
            c_total, c_active = counted
            if abs(c_total - total) / total > 0.05:
                notes.append(
                    f"parameters counted from config.json ({c_total / 1e9:.2f}B) differ from the "
                    f"profile's total_params_b ({total / 1e9:.2f}B) by more than 5%; the "
                    "profile's figure is used for weight memory"
                )
            if spec.active_params_b is None and experts > 1:
                active = c_active * total / c_total
        for key, ours in (("layers", layers), ("kv_heads", kv), ("head_dim", head_dim)):
            theirs = getattr(spec, key)
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
        kv_heads=kv,
        head_dim=head_dim,
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
    )
