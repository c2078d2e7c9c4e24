"""Architectures the planner cannot price are refused by name, never priced as a dense
transformer (issue 28): from config.json when the profile carries it, else from the name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.planner.architectures import refusal
from registry.planner.catalog import models
from tests.factories import example
from tests.planner.sizing_cli import size_with_provider

# Shortened from the published config.json files (the fields that decide).
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
    "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "n_shared_experts": 1, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3,
}  # fmt: skip
GEMMA_3 = {
    "model_type": "gemma3_text", "num_hidden_layers": 6, "sliding_window": 1024,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "max_position_embeddings": 131072,
}  # fmt: skip
MISTRAL_V01 = {"model_type": "mistral", "sliding_window": 4096, "max_position_embeddings": 32768}
JAMBA = {"model_type": "jamba", "attn_layer_period": 8, "attn_layer_offset": 4}
NEMOTRON_H = {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M-M-MM*-"}
LLAMA_4 = {"model_type": "llama4_text", "attention_chunk_size": 8192}
NEMOTRON_SUPER = {"model_type": "nemotron-nas", "block_configs": [{"attention": {}}]}
QWEN2_MOE = {"model_type": "qwen2_moe", "shared_expert_intermediate_size": 5632}
QWEN3_MOE = {"model_type": "qwen3_moe", "mlp_only_layers": [0, 1]}

# Dense configs that must still be priced.
LLAMA_31 = {"model_type": "llama", "num_hidden_layers": 32, "num_key_value_heads": 8}
QWEN25 = {
    "model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": False,
    "max_position_embeddings": 32768,
}  # fmt: skip
QWEN3 = {"model_type": "qwen3", "sliding_window": None, "layer_types": ["full_attention"] * 64}
MISTRAL_V03 = {"model_type": "mistral", "sliding_window": None}
MIXTRAL = {"model_type": "mixtral", "num_local_experts": 8, "sliding_window": None}


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (DEEPSEEK_V3, "multi-head latent attention (kv_lora_rank 512, qk_rope_head_dim 64)"),
        (GEMMA_3, "sliding-window attention in 5 of 6 layers (layer_types, window 1024)"),
        (MISTRAL_V01, "sliding-window attention (sliding_window 4096)"),
        (JAMBA, "state-space or linear-attention layers (model_type jamba)"),
        (NEMOTRON_H, "state-space or linear-attention layers (model_type nemotron_h)"),
        ({"layers_block_type": ["mamba", "attention"]}, "layers of kind mamba"),
        (LLAMA_4, "chunked local attention (attention_chunk_size 8192)"),
        (NEMOTRON_SUPER, "layers that differ (block_configs)"),
        (QWEN2_MOE, "a mixture of experts with shared experts and no active_params_b"),
        (QWEN3_MOE, "dense layers among mixture-of-experts ones (mlp_only_layers)"),
    ],
)
def test_fail_each_unpriced_architecture_is_named(config: dict[str, Any], said: str) -> None:
    found = refusal("org/any-model", config, active_stated=False)
    assert found is not None and found.startswith(f"config.json: {said}")


@pytest.mark.parametrize("config", [LLAMA_31, QWEN25, QWEN3, MISTRAL_V03, MIXTRAL])
def test_success_dense_configs_are_priced(config: dict[str, Any]) -> None:
    assert refusal("org/any-model", config, active_stated=False) is None


def test_success_shared_experts_with_stated_active_params_are_priced() -> None:
    assert refusal("Qwen/Qwen1.5-MoE-A2.7B", QWEN2_MOE, active_stated=True) is None


@pytest.mark.parametrize(
    "name",
    ["deepseek-ai/DeepSeek-V3", "google/gemma-3-27b-it", "ai21labs/AI21-Jamba-1.5-Mini",
     "nvidia/Llama-3_3-Nemotron-Super-49B-v1", "Qwen/Qwen3-Next-80B-A3B-Instruct",
     "openai/gpt-oss-120b", "mistralai/Mistral-7B-v0.1"],
)  # fmt: skip
def test_fail_a_known_family_is_refused_by_name_without_a_config(name: str) -> None:
    found = refusal(name, None, active_stated=False)
    assert found is not None and found.startswith(f"the name {name!r} is a model with ")
    assert found.endswith("(give model.hf_config to be sure)")


def test_success_no_shipped_model_card_is_refused() -> None:
    for card in models():
        assert refusal(card.name, None, active_stated=False) is None, card.name
        for alias in card.aliases:
            assert refusal(alias, None, active_stated=False) is None, alias


def test_fail_plan_size_refuses_a_latent_attention_model(tmp_path: Path) -> None:
    provider = example("provider")
    provider["model"] = {
        **provider["model"],
        "name": "deepseek-ai/DeepSeek-V3",
        "hf_config": DEEPSEEK_V3,
    }
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "model.hf_config: provider llama31-8b-h100-vllm: the planner cannot price "
        "deepseek-ai/DeepSeek-V3, config.json: multi-head latent attention (kv_lora_rank 512"
    ) in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
