"""The memory formula pinned on known models, and its monotonicity."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.planner import profiles
from registry.planner.catalog import exposed_memory_gib, find_model
from registry.planner.hf_config import params_from_hf_config
from registry.planner.kv_layout import kv_bytes_per_token
from registry.planner.memory import (
    GIB,
    VLLM_0_10,
    VLLM_0_17,
    VLLM_0_19,
    MemoryParams,
    activation_peak_bytes,
    memory_fit,
    params_for_runtime,
)
from registry.planner.model_shape import resolve_model
from registry.records.provider import ProviderProfile


def shape(model: str, accel: str = "H100-SXM-80GB", dtype: str = "bf16"):  # type: ignore[no-untyped-def]
    prov = profiles.provider(model, accel)
    if dtype != "bf16":
        doc = prov.model_dump(mode="json")
        doc["model"]["weights_dtype"] = dtype
        prov = ProviderProfile.model_validate(doc)
    return resolve_model(prov)


def test_kv_bytes_per_token_matches_published_figures() -> None:
    # Databricks Table 3: Llama-2-70B needs 0.312 GiB per 1024 tokens (2*80*8*128*2 B).
    assert kv_bytes_per_token(shape("llama-2-70b")) == 2 * 80 * 8 * 128 * 2
    assert math.isclose(kv_bytes_per_token(shape("llama-2-70b")) * 1024 / GIB, 0.3125)
    # PagedAttention section 3: OPT-13B needs 800 KB per token (2 x 5120 x 40 x 2 B).
    assert kv_bytes_per_token(shape("opt-13b")) == 2 * 5120 * 40 * 2
    assert kv_bytes_per_token(shape("llama-3.1-8b")) == 128 * 1024


def test_kv_heads_shard_with_tp_and_replicate_beyond_them() -> None:
    s = shape("llama-3.1-70b")
    assert kv_bytes_per_token(s, 8) == kv_bytes_per_token(s) / 8
    # 8 KV heads over 16 ranks: vLLM replicates, each rank keeps one head.
    assert kv_bytes_per_token(s, 16) == kv_bytes_per_token(s, 8)


def test_blocks_follow_vllm_formula() -> None:
    s = shape("llama-3.1-8b")
    fit = memory_fit(
        s,
        memory_gib=80,
        tensor_parallel=1,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        max_model_len=16384,
        p99_context_by_class={"a": 7200},
        accelerator="H100-SXM-80GB",
    )
    # vLLM multiplies what CUDA exposes (79.19 GiB on an "80 GB" H100), not the datasheet.
    assert fit.device_total_gib == 79.19
    kv_bytes = (
        79.19 * 0.9 - fit.weights_gib - fit.activation_peak_gib - fit.runtime_overhead_gib
    ) * GIB
    page = 2 * 16 * 8 * 128 * 2  # one layer's block: K and V, 16 tokens, 8 heads x 128, bf16
    assert fit.kv_blocks == math.floor(kv_bytes / (page * 32))
    assert fit.kv_tokens == fit.kv_blocks * 16
    assert fit.max_concurrency_at_p99_context == fit.kv_blocks // math.ceil(7200 / 16)
    assert math.isclose(fit.weights_gib, 8.03e9 * 2 / GIB)
    assert fit.fits


def test_device_memory_is_what_cuda_exposes() -> None:
    assert exposed_memory_gib(80, "H100-SXM-80GB")[0] == 79.19
    assert exposed_memory_gib(80, "A100-SXM-80GB")[0] == 79.15
    # Without a name an 80 GB part takes the smallest measured 80 GB figure.
    assert exposed_memory_gib(80)[0] == 79.15
    # A figure that is no datasheet size is taken as already measured.
    assert exposed_memory_gib(79.19)[0] == 79.19
    # No public log for the L4: the H100 ratio, and the source says so.
    l4, source = exposed_memory_gib(24, "L4-24GB")
    assert math.isclose(l4, 23.76) and "no public start-up log" in source


def test_fp8_checkpoint_keeps_embeddings_and_lm_head_in_16_bits() -> None:
    # RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic: "Model loading took 67.72 GiB" on one H100.
    s = shape("llama-3.3-70b", dtype="fp8")
    assert s.embedding_params == 2 * 128256 * 8192
    assert abs(s.weights_total_bytes / GIB / 67.72 - 1) < 0.005
    # bf16 weights are untouched.
    assert math.isclose(shape("llama-3.1-8b").weights_total_bytes, 8.03e9 * 2)


def test_activation_peak_is_the_profiling_sampler_at_max_num_seqs() -> None:
    s = shape("llama-3.1-8b")

    def peak(seqs: int, tp: int, params: MemoryParams) -> float:
        return (
            activation_peak_bytes(
                s, tokens=8192, max_num_seqs=seqs, tensor_parallel=tp, params=params
            )
            / GIB
        )

    # Measured on H100: 4.76 GiB on the sort path (vLLM 0.11.1 to 0.16), 1.89 GiB in 0.19.0
    # (Triton), both at 1024 sequences.
    assert abs(peak(1024, 1, MemoryParams()) / 4.76 - 1) < 0.02
    assert abs(peak(1024, 1, VLLM_0_19) / 1.89 - 1) < 0.02
    # The logits are gathered whole on every rank: TP does not shrink the sampler's peak.
    assert peak(1024, 4, VLLM_0_19) == peak(1024, 1, VLLM_0_19)
    # With few sequences the forward pass over 8192 tokens is the peak; it shards with TP.
    assert peak(8, 2, MemoryParams()) < peak(8, 1, MemoryParams())


def test_runtime_version_picks_the_memory_profile() -> None:
    assert params_for_runtime("0.19.0") is VLLM_0_19
    assert params_for_runtime("0.21.1+cu128") is VLLM_0_19
    assert params_for_runtime("0.10.2") is VLLM_0_10  # FlashInfer, as the official image
    assert params_for_runtime("0.11.0") is VLLM_0_10
    assert params_for_runtime("0.13.0") == MemoryParams()  # the sort: FlashInfer turned off
    assert params_for_runtime("0.17.1") is VLLM_0_17
    assert params_for_runtime(None) == MemoryParams()


def test_70b_fp8_does_not_fit_one_80gb_gpu() -> None:
    # vLLM V1 (sort sampler, Jan 2026) on one H100: weights 67.72 GiB + activations 4.84 +
    # non-torch 0.14 leave -1.44 GiB, "No available memory for the cache blocks"; TP2 leaves
    # 32.0 GiB.
    common = dict(
        memory_gib=80,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=8192,
        max_num_seqs=1024,
        max_model_len=16000,
        p99_context_by_class={},
        accelerator="H100-SXM-80GB",
    )
    s = shape("llama-3.3-70b", dtype="fp8")
    one = memory_fit(s, tensor_parallel=1, **common)  # type: ignore[arg-type]
    two = memory_fit(s, tensor_parallel=2, **common)  # type: ignore[arg-type]
    assert not one.fits and "does not fit" in one.reason
    assert two.fits and abs(two.kv_cache_gib / 32.0 - 1) < 0.05


def test_pagedattention_opt13b_slots_within_ten_percent() -> None:
    # PagedAttention Table 1: 12 GB of KV on an A100-40GB = 15.7K token slots.
    s = shape("opt-13b", "A100-SXM-40GB")
    fit = memory_fit(
        s,
        memory_gib=40,
        tensor_parallel=1,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=2560,
        max_num_seqs=256,
        max_model_len=2048,
        p99_context_by_class={},
    )
    assert abs(fit.kv_tokens / 15_700 - 1) < 0.10


def test_does_not_fit_says_so_with_numbers() -> None:
    s = shape("llama-3.1-70b")
    fit = memory_fit(
        s,
        memory_gib=80,
        tensor_parallel=1,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        max_model_len=8192,
        p99_context_by_class={"a": 4000},
    )
    assert not fit.fits
    assert "does not fit" in fit.reason and "131.5 GiB" in fit.reason
    tp4 = memory_fit(
        s,
        memory_gib=80,
        tensor_parallel=4,
        gpu_memory_utilization=0.9,
        block_size=16,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        max_model_len=8192,
        p99_context_by_class={"a": 4000},
    )
    assert tp4.fits and tp4.kv_blocks > 0


def test_hf_config_is_read_as_is_and_counts_parameters() -> None:
    cfg = {
        "architectures": ["MixtralForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
    }
    total, active = params_from_hf_config(cfg) or (0.0, 0.0)
    card = find_model("mixtral-8x7b")
    assert card is not None
    assert abs(total / 1e9 - card.total_params_b) / card.total_params_b < 0.02
    assert abs(active / 1e9 - card.active_params_b) / card.active_params_b < 0.02
    base = profiles.provider("mixtral-8x7b", "H100-SXM-80GB").model_dump(mode="json")
    base["model"]["hf_config"] = dict(cfg, num_key_value_heads=4)
    prov = ProviderProfile.model_validate(base)
    s = resolve_model(prov)
    assert s.kv_heads == 4 and s.num_experts == 8
    assert any("config.json gives kv_heads=4" in n for n in s.notes)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    mem=st.floats(min_value=20, max_value=200),
    extra=st.floats(min_value=0.0, max_value=100),
    util=st.floats(min_value=0.5, max_value=0.95),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_more_memory_never_fewer_kv_blocks(mem: float, extra: float, util: float, tp: int) -> None:
    s = shape("llama-3.1-8b")

    def blocks(m: float) -> int:
        return memory_fit(
            s,
            memory_gib=m,
            tensor_parallel=tp,
            gpu_memory_utilization=util,
            block_size=16,
            max_num_batched_tokens=8192,
            max_num_seqs=256,
            max_model_len=8192,
            p99_context_by_class={},
        ).kv_blocks

    assert blocks(mem + extra) >= blocks(mem)


def _fit(s, *, util: float = 0.9, mml: int = 8192, batched: int = 8192):  # type: ignore[no-untyped-def]
    return memory_fit(
        s,
        memory_gib=80,
        tensor_parallel=1,
        gpu_memory_utilization=util,
        block_size=16,
        max_num_batched_tokens=batched,
        max_num_seqs=1024,
        max_model_len=mml,
        p99_context_by_class={},
        accelerator="H100-SXM-80GB",
        runtime_version="0.11.0",
    )


def test_profile_peak_follows_batched_tokens_not_max_model_len() -> None:
    # vLLM profiles a forward over max_num_batched_tokens (a long context is prefilled in
    # chunks of it): max_model_len changes neither the peak nor the pool, only the verdict.
    s = shape("qwen3-32b")
    short, long = _fit(s, mml=8192), _fit(s, mml=40960)
    assert short.activation_peak_gib == long.activation_peak_gib
    assert short.kv_tokens == long.kv_tokens
    assert short.fits and not long.fits
    # Few sequences leave the forward as the peak, and it grows with the token budget.
    few = [
        memory_fit(
            s,
            memory_gib=80,
            tensor_parallel=1,
            gpu_memory_utilization=0.9,
            block_size=16,
            max_num_batched_tokens=batched,
            max_num_seqs=8,
            max_model_len=8192,
            p99_context_by_class={},
            runtime_version="0.11.0",
        ).activation_peak_gib
        for batched in (8192, 16384)
    ]
    assert few[1] > few[0]


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["qwen3-32b", "llama-3.1-8b", "llama-3.3-70b"]),
    mml=st.integers(min_value=1024, max_value=262_144),
    util=st.floats(min_value=0.3, max_value=0.95),
)
def test_a_refusal_names_what_would_start(model: str, mml: int, util: float) -> None:
    """The remedies a 'does not fit' names are exact: the longest max_model_len starts and
    one block more does not; the utilization it names starts and 0.01 less does not."""
    s = shape(model)
    fit = _fit(s, util=util, mml=mml)
    assert fit.longest_max_model_len == fit.kv_tokens
    if fit.fits:
        return
    assert "it starts with" in fit.reason or "no gpu_memory_utilization" in fit.reason
    if fit.longest_max_model_len > 0:
        assert _fit(s, util=util, mml=fit.longest_max_model_len).fits
        assert not _fit(s, util=util, mml=fit.longest_max_model_len + 16).fits
        assert f"max_model_len <= {fit.longest_max_model_len}" in fit.reason
    u = fit.utilization_for_max_model_len
    if u is None:
        assert not _fit(s, util=1.0, mml=mml).fits
    else:
        assert f"gpu_memory_utilization >= {u:.2f}" in fit.reason
        assert _fit(s, util=u, mml=mml).fits
        assert not _fit(s, util=round(u - 0.01, 2), mml=mml).fits
