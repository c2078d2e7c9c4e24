"""config.json files of models whose attention is not grouped-query (latent, sliding
window), rewritten from the published files with the fields the planner reads; used by the
validation cases and the tests (tests/planner/test_architectures.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.planner import profiles
from registry.planner.catalog import find_accelerator
from registry.records.provider import ProviderProfile

# Rewritten from the published config.json files on the Hugging Face Hub (deepseek-ai/DeepSeek-V3,
# deepseek-ai/DeepSeek-V2-Lite-Chat, google/gemma-3-27b-it text_config, openai/gpt-oss-120b),
# keeping the fields that decide.
DEEPSEEK_V3: dict[str, Any] = {
    "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}  # fmt: skip
DEEPSEEK_V2_LITE: dict[str, Any] = {
    "model_type": "deepseek_v2", "vocab_size": 102400, "hidden_size": 2048,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2,
    "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
    "q_lora_rank": None, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}  # fmt: skip
GEMMA_3_27B: dict[str, Any] = {
    "model_type": "gemma3_text", "vocab_size": 262208, "hidden_size": 5376,
    "intermediate_size": 21504, "num_hidden_layers": 62, "num_attention_heads": 32,
    "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024,
    "sliding_window_pattern": 6, "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
}  # fmt: skip
GPT_OSS_120B: dict[str, Any] = {
    "model_type": "gpt_oss", "vocab_size": 201088, "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128,
    "num_experts_per_tok": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072, "tie_word_embeddings": False,
}  # fmt: skip


def provider(
    name: str, config: dict[str, Any], total_b: float, accelerator: str, **model: Any
) -> ProviderProfile:
    """A provider profile serving ``name`` from its config.json on a catalog accelerator;
    the profile's shape fields are the config's, as a user copies them."""
    a = find_accelerator(accelerator)
    assert a is not None, accelerator
    heads = config["num_attention_heads"]
    return ProviderProfile.model_validate(
        {
            "name": "bench-provider",
            "model": {
                "name": name,
                "hf_config": config,
                "total_params_b": total_b,
                "layers": config["num_hidden_layers"],
                "hidden_size": config["hidden_size"],
                "attention_heads": heads,
                "kv_heads": config["num_key_value_heads"],
                "head_dim": config.get("head_dim", config["hidden_size"] // heads),
                "max_context_tokens": config["max_position_embeddings"],
                **model,
            },
            "accelerator": profiles.accelerator_doc(a),
            "runtime": {"name": "vllm", "version": "0.10.2"},
            "zones": ["z-a"],
            "warmup": {"basis": "assumed", "cold_start_to_ready_s": 240.0, "reason": "benchmark"},
        }
    )
