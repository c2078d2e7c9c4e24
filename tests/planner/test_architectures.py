"""Architectures beyond grouped-query attention (issue 28): multi-head latent attention and
sliding-window attention priced from the model's config.json, and what the planner still
cannot price refused by name, never priced as a dense transformer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.planner import hf_configs, profiles
from benchmarks.planner.hf_configs import DEEPSEEK_V2_LITE, DEEPSEEK_V3, GEMMA_3_27B, GPT_OSS_120B
from registry.planner import recompute
from registry.planner.architectures import refusal
from registry.planner.catalog import models
from registry.planner.hf_config import count_hf_config
from registry.planner.kv_layout import KVGroups, kv_bytes_per_token, kv_groups, kv_pool
from registry.planner.memory import memory_fit
from registry.planner.model_shape import ModelShape, resolve_model
from registry.planner.sampling import draw_class
from registry.planner.scenarios import context_moments
from registry.planner.simulator import ClassLoad, EngineSpec, RetrySpec, simulate
from registry.planner.step_time import Efficiency, StepModel
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile
from tests.factories import example
from tests.planner.sizing_cli import size_with_provider

MISTRAL_V01 = {"model_type": "mistral", "sliding_window": 4096, "max_position_embeddings": 32768}
QWEN2_MOE = {
    "model_type": "qwen2_moe", "vocab_size": 151936, "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60,
    "num_experts_per_tok": 4, "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1, "max_position_embeddings": 8192, "tie_word_embeddings": False,
}  # fmt: skip

# Still refused.
JAMBA = {"model_type": "jamba", "attn_layer_period": 8, "attn_layer_offset": 4}
NEMOTRON_H = {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M-M-MM*-"}
LLAMA_4 = {"model_type": "llama4_text", "attention_chunk_size": 8192}
NEMOTRON_SUPER = {"model_type": "nemotron-nas", "block_configs": [{"attention": {}}]}
QWEN2_PARTIAL_WINDOW = {
    "model_type": "qwen2", "num_hidden_layers": 28, "sliding_window": 4096,
    "use_sliding_window": True, "max_window_layers": 21,
}  # fmt: skip
SHARED_UNCOUNTED = {"model_type": "qwen2_moe", "shared_expert_intermediate_size": 5632}

# Dense configs priced as before.
LLAMA_31 = {"model_type": "llama", "num_hidden_layers": 32, "num_key_value_heads": 8}
QWEN25 = {
    "model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": False,
    "max_position_embeddings": 32768,
}  # fmt: skip
QWEN3 = {"model_type": "qwen3", "sliding_window": None, "layer_types": ["full_attention"] * 64}
MISTRAL_V03 = {"model_type": "mistral", "sliding_window": None}
MIXTRAL = {"model_type": "mixtral", "num_local_experts": 8, "sliding_window": None}


def _provider(name: str, config: dict[str, Any], total_b: float, **model: Any) -> dict[str, Any]:
    """The worked example's provider serving ``name`` with its config.json; the profile's
    own shape fields are the config's (a user copies them), else the example's."""
    provider = example("provider")
    provider["model"] = {
        **provider["model"],
        "name": name,
        "hf_config": config,
        "total_params_b": total_b,
        "layers": config["num_hidden_layers"],
        "hidden_size": config["hidden_size"],
        "attention_heads": config["num_attention_heads"],
        "kv_heads": config["num_key_value_heads"],
        "head_dim": config.get("head_dim", config["hidden_size"] // config["num_attention_heads"]),
        **model,
    }
    return provider


def _shape(provider: dict[str, Any]) -> ModelShape:
    return resolve_model(ProviderProfile.model_validate(provider))


# --- refusals ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "said"),
    [
        (JAMBA, "state-space or linear-attention layers (model_type jamba)"),
        (NEMOTRON_H, "state-space or linear-attention layers (model_type nemotron_h)"),
        ({"layers_block_type": ["mamba", "attention"]}, "layers of kind mamba"),
        (LLAMA_4, "chunked local attention (attention_chunk_size 8192)"),
        (NEMOTRON_SUPER, "layers that differ (block_configs)"),
        (
            QWEN2_PARTIAL_WINDOW,
            "sliding-window attention on part of the layers (max_window_layers 21)",
        ),
        (SHARED_UNCOUNTED, "a mixture of experts with shared experts, no active_params_b"),
        (
            {**DEEPSEEK_V3, "model_type": "deepseek_v32", "index_topk": 2048},
            "sparse attention over selected tokens (index_topk 2048)",
        ),
        (
            {"kv_lora_rank": 512, "qk_rope_head_dim": 64},
            "multi-head latent attention (kv_lora_rank 512) without qk_nope_head_dim, "
            "v_head_dim: its cache and attention cannot be sized",
        ),
    ],
)
def test_fail_each_unpriced_architecture_is_named(config: dict[str, Any], said: str) -> None:
    found = refusal("org/any-model", config, active_stated=False)
    assert found is not None and found.startswith(f"config.json: {said}")


@pytest.mark.parametrize(
    "config",
    [LLAMA_31, QWEN25, QWEN3, MISTRAL_V03, MIXTRAL, DEEPSEEK_V3, DEEPSEEK_V2_LITE, GEMMA_3_27B,
     GPT_OSS_120B, MISTRAL_V01, QWEN2_MOE, {"model_type": "qwen3_moe", "mlp_only_layers": [0]}],
)  # fmt: skip
def test_success_configs_of_priced_architectures_are_not_refused(config: dict[str, Any]) -> None:
    assert refusal("org/any-model", config, active_stated=False) is None


def test_success_shared_experts_with_stated_active_params_are_priced() -> None:
    assert refusal("Qwen/Qwen1.5-MoE-A2.7B", SHARED_UNCOUNTED, active_stated=True) is None


@pytest.mark.parametrize(
    ("name", "priced_with_config"),
    [("deepseek-ai/DeepSeek-V3", True), ("google/gemma-3-27b-it", True),
     ("openai/gpt-oss-120b", True), ("mistralai/Mistral-7B-v0.1", True),
     ("ai21labs/AI21-Jamba-1.5-Mini", False), ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", False),
     ("Qwen/Qwen3-Next-80B-A3B-Instruct", False),
     ("meta-llama/Llama-4-Scout-17B-16E-Instruct", False)],
)  # fmt: skip
def test_fail_a_known_family_is_refused_by_name_without_a_config(
    name: str, priced_with_config: bool
) -> None:
    found = refusal(name, None, active_stated=False)
    assert found is not None and found.startswith(f"the name {name!r} is a model with ")
    if priced_with_config:
        assert found.endswith("prices from its config.json only (give model.hf_config)")
    else:
        assert found.endswith("(give model.hf_config to be sure)")


def test_success_no_shipped_model_card_is_refused() -> None:
    for card in models():
        assert refusal(card.name, None, active_stated=False) is None, card.name
        for alias in card.aliases:
            assert refusal(alias, None, active_stated=False) is None, alias


def test_fail_plan_size_refuses_a_state_space_model(tmp_path: Path) -> None:
    provider = example("provider")
    provider["model"] = {**provider["model"], "name": "ai21labs/Jamba-mini", "hf_config": JAMBA}
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "model.hf_config: provider llama31-8b-h100-vllm: the planner cannot price "
        "ai21labs/Jamba-mini, config.json: state-space or linear-attention layers (model_type "
        "jamba)"
    ) in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_fail_plan_size_refuses_deepseek_by_name_without_its_config(tmp_path: Path) -> None:
    provider = example("provider")
    provider["model"] = {**provider["model"], "name": "deepseek-ai/DeepSeek-V3"}
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "model.name: provider llama31-8b-h100-vllm: the planner cannot price "
        "deepseek-ai/DeepSeek-V3, the name 'deepseek-ai/DeepSeek-V3' is a model with "
        "multi-head latent attention, which the planner prices from its config.json only"
    ) in result.stderr


# --- multi-head latent attention ------------------------------------------------------------
def test_success_deepseek_v3_counts_671b_total_and_37b_active() -> None:
    counted = count_hf_config(DEEPSEEK_V3)
    assert counted is not None
    # DeepSeek-V3 technical report: 671B total, 37B activated per token (the 14B multi-token
    # prediction module is not in the main model vLLM loads).
    assert 670e9 < counted.total < 672e9
    assert 37e9 < counted.active < 38e9
    assert counted.moe_layers == 58


def test_success_deepseek_v3_caches_one_latent_per_token_on_every_tp_rank() -> None:
    shape = _shape(_provider("deepseek-ai/DeepSeek-V3", DEEPSEEK_V3, 671, weights_dtype="fp8"))
    assert (shape.kv_heads, shape.head_dim, shape.kv_planes) == (1, 576, 1)
    # (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes x 61 layers, not sharded by TP.
    assert kv_bytes_per_token(shape, 1) == kv_bytes_per_token(shape, 8) == 576 * 2 * 61
    assert 37.0 < shape.active_params / 1e9 < 38.0
    said = "multi-head latent attention: the KV cache holds one latent of kv_lora_rank 512 + "
    assert any(n.startswith(said + "qk_rope_head_dim 64 = 576 values") for n in shape.notes)
    fp8 = _shape(_provider("deepseek-ai/DeepSeek-V3", DEEPSEEK_V3, 671, kv_dtype="fp8"))
    assert kv_bytes_per_token(fp8, 8) == 576 * 61


def test_success_latent_attention_prefills_as_mha_and_decodes_over_the_latent() -> None:
    provider = _provider("deepseek-ai/DeepSeek-V3", DEEPSEEK_V3, 671, weights_dtype="fp8")
    shape = _shape(provider)
    accel = ProviderProfile.model_validate(provider).accelerator
    for tp in (1, 8):
        step = StepModel(shape, accel, tensor_parallel=tp, efficiency=Efficiency())
        decay = tp**-0.1 if tp > 1 else 1.0
        attn_flops = 989e12 * step.resolved.attn_mfu * decay
        # Prefill: 2 x heads x (qk_nope + qk_rope + v_head_dim) FLOPs per pair and layer.
        expected = 2.0 * 61 * 128 * (192 + 128) / tp / attn_flops
        assert step.attn_time_per_ctx_token == pytest.approx(expected, rel=1e-12)
        # Decode: the slower of reading the latent and 2 x heads x (576 + 512) FLOPs.
        read = 576 * 2 * 61 / (3350e9 * step.resolved.mbu * decay)
        compute = 2.0 * 128 / tp * (576 + 512) * 61 / attn_flops
        assert step.kv_time_per_token == pytest.approx(max(read, compute), rel=1e-12)


def test_success_plan_size_prices_deepseek_v2_lite_end_to_end(tmp_path: Path) -> None:
    provider = _provider("deepseek-ai/DeepSeek-V2-Lite-Chat", DEEPSEEK_V2_LITE, 15.7)
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    said = "model deepseek-ai/DeepSeek-V2-Lite-Chat: 15.7B params (2.66B active), 27 layers"
    assert said + ", 1 KV heads x 576" in out
    assert "multi-head latent attention: the KV cache holds one latent" in out
    shape = _shape(provider)
    fit = memory_fit(
        shape, memory_gib=80, tensor_parallel=1, gpu_memory_utilization=0.9, block_size=16,
        max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=16384,
        p99_context_by_class={}, accelerator="H100-SXM-80GB", runtime_version="0.10.2",
    )  # fmt: skip
    # 27 layers x 576 x 2 bytes per token, nothing divided by TP.
    assert fit.kv_blocks == int(fit.kv_cache_gib * 2**30 // (16 * 27 * 1152))
    assert f"{fit.kv_blocks} blocks x 16 = {fit.kv_tokens:,} tokens" in out


# --- sliding-window attention ---------------------------------------------------------------
def _gemma() -> tuple[ModelShape, ProviderProfile]:
    provider = ProviderProfile.model_validate(_provider("google/gemma-3-27b-it", GEMMA_3_27B, 27))
    return resolve_model(provider), provider


def test_success_gemma_3_layers_are_grouped_as_vllm_groups_them() -> None:
    shape, _ = _gemma()
    # sliding_window_pattern 6: every sixth layer global, 52 of 62 local.
    assert (shape.sliding_window, shape.sliding_layers, shape.full_layers) == (1024, 52, 10)
    # vLLM: groups of the fewer type's 10 layers, 52 local layers padded to 6 groups.
    assert kv_groups(shape) == KVGroups(10, 1, 6, 1024, 62)
    # Before the hybrid manager every layer held every token, as one group.
    assert kv_groups(shape, hybrid=False) == KVGroups(62, 1, 0, None, 62)
    gpt_oss = _shape(_provider("openai/gpt-oss-120b", GPT_OSS_120B, 116.8))
    assert kv_groups(gpt_oss) == KVGroups(18, 1, 1, 128, 36)
    mistral = {**MISTRAL_V01, "num_hidden_layers": 32, "hidden_size": 4096,
               "num_attention_heads": 32, "num_key_value_heads": 8}  # fmt: skip
    assert kv_groups(_shape(_provider("mistralai/Mistral-7B-v0.1", mistral, 7.24))) == KVGroups(
        32, 0, 1, 4096, 32
    )


def test_success_gemma_3_local_layers_hold_at_most_their_window() -> None:
    shape, _ = _gemma()
    groups = kv_groups(shape)
    # A 16k-token request: the full group holds 1024 blocks, each sliding group the window's
    # cdiv(1023 + 1, 16) + 1 = 65, not 1024.
    assert groups.blocks_held(16384, 16) == 1024 + 6 * 65
    assert groups.blocks_held(512, 16) == 7 * 32  # inside the window every group holds all
    # The pool: block ids of 10 layers' pages; vLLM logs num_blocks // 7 x 16 tokens.
    layer = 2 * 16 * 128 * 2  # bytes per token and layer: K and V, 16 KV heads x 128, bf16
    blocks, logged = kv_pool(shape, 20 * 2**30, tensor_parallel=1, block_size=16)
    assert blocks == 20 * 2**30 // (16 * layer * 10)
    assert logged == blocks // 7 * 16
    fit = memory_fit(
        shape, memory_gib=80, tensor_parallel=1, gpu_memory_utilization=0.9, block_size=16,
        max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=16384,
        p99_context_by_class={"long": 16000}, runtime_version="0.10.2",
    )  # fmt: skip
    assert fit.concurrency_by_class["long"] == fit.kv_blocks // (1000 + 6 * 65)
    dense = memory_fit(
        shape, memory_gib=80, tensor_parallel=1, gpu_memory_utilization=0.9, block_size=16,
        max_num_batched_tokens=8192, max_num_seqs=256, max_model_len=16384,
        p99_context_by_class={"long": 16000}, runtime_version="0.9.2",
    )  # fmt: skip
    # vLLM 0.9 kept every token in every layer: a fifth of the requests fit.
    assert dense.concurrency_by_class["long"] < fit.concurrency_by_class["long"] / 4


def _one_request(prompt: int, output: int, kv_blocks: int) -> tuple[float, int, int]:
    """One Gemma 3 request simulated alone: the peak pool tokens it held (less half a block
    per group; the peak is read when a step or stretch starts), its preemptions, and
    whether it completed."""
    shape, provider = _gemma()
    step = StepModel(shape, provider.accelerator, tensor_parallel=1, efficiency=Efficiency())
    engine = EngineSpec(
        step=step, kv_blocks=kv_blocks, block_size=16, max_num_seqs=8,
        max_num_batched_tokens=8192, prefix_caching=False, kv_groups=kv_groups(shape),
    )  # fmt: skip
    wl = profiles.workload(rate=0.01, prompt=profiles.fixed(prompt), output=profiles.fixed(output))
    stream = draw_class(wl.classes[0], 1, np.random.default_rng(0), max_model_len=16384)
    load = ClassLoad(name="c", priority=0, rate_rps=0.01, stream=stream, deadline_s=1e9)
    result = simulate(engine, [load], replicas=1, retry=RetrySpec())
    held = result.kv_usage_peak * kv_blocks * 16 - 7 * 8
    return held, result.preemptions, result.per_class["c"].completed


def test_success_a_simulated_prefill_holds_the_window_in_local_layers() -> None:
    # 3000 prompt tokens: the full group holds them all, each of the six sliding groups 1024.
    held, preemptions, completed = _one_request(3000, 200, kv_blocks=20000)
    assert (held, preemptions, completed) == (3000 + 6 * 1024, 0, 1)


def test_success_a_simulated_decode_stops_growing_local_layers_at_the_window() -> None:
    # 500 + 3000 tokens end holding 3500 + 6 x 1024 = 9644 pool tokens, 9700 with half a
    # block per group: 607 blocks (9712 tokens) are enough. Had the sliding groups kept
    # growing past the window (7 x 3500 = 24500), the request would have been preempted.
    held, preemptions, completed = _one_request(500, 3000, kv_blocks=607)
    assert (preemptions, completed) == (0, 1)
    assert 7 * 1024 <= held <= 3500 + 6 * 1024


def test_success_plan_size_prices_gemma_3_end_to_end(tmp_path: Path) -> None:
    provider = _provider("google/gemma-3-27b-it", GEMMA_3_27B, 27)
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert (
        "model google/gemma-3-27b-it: 27B params (27B active), 62 layers, 16 KV heads x 128" in out
    )
    assert "as vLLM logs it: 1 full and 6 sliding-window groups of 10 layers share the blocks, " \
        "a sliding group holding the last 1024 tokens of a request" in out  # fmt: skip
    assert "sliding-window attention in 52 of 62 layers (window 1024)" in out


def test_success_the_gates_kv_need_counts_local_layers_at_their_window() -> None:
    # What memory_fit's policy compares with kv_tokens (vLLM's logged pool / 7 groups): one
    # 3200-token request holds (3200 + 6 x 1024) / 7 of those tokens, not 3200.
    shape, _ = _gemma()
    fixed = profiles.workload(rate=1, prompt=profiles.fixed(3000), output=profiles.fixed(200))
    plain = context_moments(fixed)["c"]
    held = context_moments(fixed, kv_groups(shape))["c"]
    assert plain.mean == pytest.approx(3200, abs=1)
    assert held.mean == pytest.approx((3200 + 6 * 1024) / 7, abs=1)


# --- shared experts without latent attention --------------------------------------------------
def test_success_qwen_moe_active_params_count_the_shared_expert() -> None:
    counted = count_hf_config(QWEN2_MOE)
    assert counted is not None
    # Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated (its model card).
    assert 14.2e9 < counted.total < 14.4e9
    assert 2.6e9 < counted.active < 2.8e9
    shape = _shape(_provider("Qwen/Qwen1.5-MoE-A2.7B", QWEN2_MOE, 14.3))
    assert shape.active_params == pytest.approx(counted.active * 14.3e9 / counted.total)
    # The activation estimate's widest MLP per token: 4 routed experts plus the shared one.
    assert shape.intermediate_size * shape.experts_per_token == 4 * 1408 + 5632


def test_success_local_layers_attend_to_their_window_only() -> None:
    provider = hf_configs.provider("openai/gpt-oss-120b", GPT_OSS_120B, 116.8, "H100-SXM-80GB")
    step = StepModel(
        resolve_model(provider), provider.accelerator, tensor_parallel=4, efficiency=Efficiency()
    )
    # Half the layers read the whole 1024-token context, half the last 128 tokens.
    assert step.kv_context(1024.0) == 0.5 * 1024 + 0.5 * 128
    assert step.kv_context(100.0) == 100.0
    # A 2048-token prefill: full layers 2048 x 1024 pairs; local ones a triangle up to the
    # window (128 x 64), then 128 per token.
    local = 128 * 128 / 2 + (2048 - 128) * 128
    assert step.prefill_pairs(0.0, 2048.0) == 0.5 * 2048 * 1024 + 0.5 * local


def test_success_deepseek_v3_on_eight_h200_is_recomputed_at_tp8() -> None:
    doc = hf_configs.provider(
        "deepseek-ai/DeepSeek-V3", DEEPSEEK_V3, 671, "H200-SXM-141GB", weights_dtype="fp8"
    ).model_dump(mode="json")
    doc["zones"] = example("provider")["zones"]
    doc["accelerator"]["per_node"] = 8
    plan = example("plan", parallelism={"tensor_parallel": 8, "gpus_per_replica": 8})
    result = recompute(
        CapacityPlan.model_validate(plan),
        WorkloadProfile.model_validate(example("workload")),
        ProviderProfile.model_validate(doc),
        seed=0,
    )
    m = result.memory
    assert m.tensor_parallel == 8 and m.fits
    # Every rank holds the whole latent cache: 70,272 bytes per token, not divided by 8.
    assert m.kv_bytes_per_token == m.kv_bytes_per_token_per_gpu == 576 * 2 * 61
    assert m.kv_blocks == int(m.kv_cache_gib * 2**30 // (16 * 576 * 2 * 61))
    assert result.model.active_params_b == pytest.approx(37.55, abs=0.01)
    assert result.scenarios["peak"].per_class


def test_success_a_multimodal_config_is_read_through_its_text_config() -> None:
    # google/gemma-3-27b-it's config.json nests the language model under text_config, and
    # may leave sliding_window_pattern to Gemma3TextConfig's default of 6.
    text = {k: v for k, v in GEMMA_3_27B.items() if k != "sliding_window_pattern"}
    nested = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
              "text_config": text, "vision_config": {"hidden_size": 1152}}  # fmt: skip
    provider = _provider("google/gemma-3-27b-it", GEMMA_3_27B, 27.4)
    provider["model"]["hf_config"] = nested
    shape = _shape(provider)
    assert (shape.layers, shape.sliding_layers, shape.sliding_window) == (62, 52, 1024)
    llama4 = {"model_type": "llama4", "text_config": {"attention_chunk_size": 8192}}
    found = refusal("meta-llama/Llama-4-Scout-17B-16E-Instruct", llama4, active_stated=False)
    assert found == "config.json: chunked local attention (attention_chunk_size 8192)"
    gemma3n = {"model_type": "gemma3n", "text_config": {"num_kv_shared_layers": 10}}
    found = refusal("google/gemma-3n-E4B-it", gemma3n, active_stated=False)
    assert found == (
        "config.json: layers that reuse another layer's KV cache (num_kv_shared_layers 10)"
    )
