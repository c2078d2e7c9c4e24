"""Step-time model: closed forms against brute force, mixed steps, per-accelerator
efficiencies and tensor-parallel behaviour."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.planner import profiles
from benchmarks.planner.heldout.point import Bench, _provider, predict
from registry.planner.catalog import find_accelerator
from registry.planner.efficiency import FALLBACK, kernel_efficiency
from registry.planner.model_shape import resolve_model
from registry.planner.quant_pricing import Fusions
from registry.planner.step_time import (
    Efficiency,
    StepModel,
    efficiency_sources,
    lines_sum,
    steps_within,
)


def model(name: str, accel: str, tp: int) -> StepModel:
    prov = profiles.provider(name, accel)
    return StepModel(
        resolve_model(prov), prov.accelerator, tensor_parallel=tp, efficiency=Efficiency()
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    a1=st.floats(0, 1),
    b1=st.floats(0, 0.01),
    a2=st.floats(0, 1),
    b2=st.floats(0, 0.01),
    k=st.integers(0, 300),
    c=st.floats(0, 0.1),
)
def test_lines_sum_equals_brute_force(
    a1: float, b1: float, a2: float, b2: float, k: int, c: float
) -> None:
    brute = sum(c + max(a1 + b1 * i, a2 + b2 * i) for i in range(k))
    assert abs(lines_sum(c, a1, b1, a2, b2, k) - brute) <= 1e-9 * max(1.0, brute)
    if k:
        elapsed = brute * 0.6
        j = steps_within(c, a1, b1, a2, b2, elapsed, k)
        assert lines_sum(c, a1, b1, a2, b2, j) <= elapsed + 1e-12
        assert j == k or lines_sum(c, a1, b1, a2, b2, j + 1) > elapsed


def test_decode_is_bandwidth_bound_and_prefill_compute_bound() -> None:
    m = model("llama-3.1-8b", "H100-SXM-80GB", 1)
    # Batch 1 decode: the 15.0 GB of non-embedding weights over 77% of 3.35 TB/s (5.8 ms),
    # plus 1.1 ms of CPU and 0.6 ms of small per-layer kernels.
    assert 7.0e-3 < m.step(0, 0.0, 1, 100.0) < 8.0e-3
    # Doubling a long prefill roughly doubles its time (compute bound), a bit more for the
    # quadratic attention.
    t4k, t8k = m.step(4096, 4096 * 2048.0, 0, 0.0), m.step(8192, 8192 * 4096.0, 0, 0.0)
    assert 2.0 < t8k / t4k < 2.3


def test_decodes_in_a_prefill_step_add_only_their_kv_reads_and_rows() -> None:
    m = model("llama-3.1-8b", "H100-SXM-80GB", 1)
    chunk = m.step(2048, 2048 * 1024.0, 0, 0.0)
    decode = m.step(0, 0.0, 64, 64 * 1000.0)
    mixed = m.step(2048, 2048 * 1024.0, 64, 64 * 1000.0)
    # The weights are read once for the whole step, not once more for the decodes ...
    assert mixed < chunk + decode - 0.9 * m.weight_time(64)
    # ... and the decodes add their KV read, their GEMM rows, LM head and CPU time.
    added = mixed - chunk
    kv = m.kv_time_per_token * 64 * 1000.0
    assert (
        kv
        < added
        < kv + 64 * (m.flop_time_per_token + m.head_time_per_sample + m.per_sequence) + 1e-12
    )


def test_defaults_come_per_accelerator_with_a_source_and_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h100 = model("llama-3.1-8b", "H100-SXM-80GB", 1).resolved
    a100 = model("llama-3.1-8b", "A100-SXM-80GB", 1).resolved
    card = find_accelerator("H100-SXM-80GB")
    assert card is not None and card.family == "H100"
    assert (h100.mbu, h100.mfu) == (card.efficiency["bf16"].mbu, card.efficiency["bf16"].mfu)
    assert "vidur" in h100.source and "FlashAttention" in h100.source
    assert a100.mfu != h100.mfu and "a100" in a100.source
    assert kernel_efficiency("h100", 1.0)[1] == "H100-SXM-80GB fp8"
    # A team's card without measurements is priced with the fallback, and says so; one
    # with an entry is priced with it.
    folder = tmp_path / "cards"
    folder.mkdir()
    spec = (
        "kind: accelerator\nname: Lab-GPU-32GB\naliases: [lab-gpu]\nmemory_gib: 32\n"
        "memory_bandwidth_gb_s: 1000\ndense_tflops: {bf16: 200}\ninterconnect: pcie\n"
        "interconnect_gb_s: 64\nsource: the lab's own datasheet, 2026\n"
    )
    (folder / "lab.yaml").write_text(spec)
    (folder / "lab8.yaml").write_text(
        spec.replace("Lab-GPU-32GB", "Lab-GPU8-32GB").replace("lab-gpu]", "lab-gpu8]")
        + "efficiency:\n  fp8: {mfu: 0.4, mbu: 0.65, attn_mfu: 0.3, layer_us: 25, "
        'measured: true, source: "the lab\'s microbenchmarks, 2026"}\n'
    )
    monkeypatch.setenv("CAPGATE_CATALOG_PATH", str(folder))
    entry, key = kernel_efficiency("lab-gpu", 2.0)
    assert (entry, key) == (FALLBACK, "fallback") and not entry.measured
    entry, key = kernel_efficiency("lab-gpu8", 1.0)
    assert (entry.mbu, entry.measured, key) == (0.65, True, "Lab-GPU8-32GB fp8")
    assert kernel_efficiency("lab-gpu8", 2.0)[1] == "fallback"  # no bf16 entry
    # A stated fraction wins over the table; the sources say which.
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    given = Efficiency(mbu=0.5)
    assert given.resolve(prov.accelerator, 2.0).mbu == 0.5
    sources = efficiency_sources(given, prov.accelerator, 2.0)
    assert sources["mbu"] == "given" and "H100-SXM-80GB bf16" in sources["mfu"]


def test_decode_lines_match_single_steps() -> None:
    m = model("mixtral-8x7b", "H100-SXM-80GB", 2)
    c, a1, b1, a2, b2 = m.decode_lines(48, 48 * 700.0)
    for i in range(5):
        single = m.step(0, 0.0, 48, 48 * 700.0 + 48 * i)
        assert abs(c + max(a1 + b1 * i, a2 + b2 * i) - single) < 1e-12


def test_tensor_parallel_gains_are_sublinear_and_worse_on_pcie() -> None:
    def decode(accel: str, tp: int) -> float:
        return model("llama-3.1-8b", accel, tp).step(0, 0.0, 64, 64 * 1000.0)

    # Doubling GPUs never halves the step: all-reduce cost and lower MBU per GPU.
    for accel in ("H100-SXM-80GB", "L40S-48GB"):
        for tp in (1, 2, 4):
            assert decode(accel, 2 * tp) > 0.5 * decode(accel, tp)

    # The all-reduce share of a step is larger on PCIe than on NVLink, and grows with TP.
    def comm_share(accel: str, tp: int) -> float:
        m = model("llama-3.1-8b", accel, tp)
        return (m.comm_fixed + m.comm_per_token * 64) / decode(accel, tp)

    assert comm_share("L40S-48GB", 4) > 1.4 * comm_share("H100-SXM-80GB", 4)
    assert comm_share("L40S-48GB", 8) > comm_share("L40S-48GB", 4)
    assert decode("L40S-48GB", 4) / decode("L40S-48GB", 8) < 1.6


def test_mixture_of_experts_reads_fewer_weights_at_batch_one() -> None:
    m = model("mixtral-8x7b", "H100-SXM-80GB", 2)
    assert m.weight_time(1) < 0.5 * m.weight_time(256)


def test_async_scheduling_hides_the_cpu_time_of_a_step_but_not_the_gpus() -> None:
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    shape = resolve_model(prov)

    def build(eff: Efficiency) -> StepModel:
        # At most 32 sequences a step: the GPU's step is the longer at every batch size.
        return StepModel(
            shape, prov.accelerator, tensor_parallel=1, efficiency=eff, max_num_seqs=32
        )

    sync, ahead = build(Efficiency()), build(Efficiency(async_scheduling=True))
    assert ahead.cpu_floor > 0.0 and ahead.cpu_bound_at is None
    cpu = Efficiency().step_overhead_ms / 1e3 + 32 * Efficiency().sequence_overhead_ms / 1e3
    # 32 decodes: the scheduled-ahead step costs the GPU's time alone (the per-layer kernels
    # and the weight and KV reads stay), the synchronous one adds the CPU's 2.26 ms.
    step_sync, step_ahead = sync.step(0, 0.0, 32, 32 * 500.0), ahead.step(0, 0.0, 32, 32 * 500.0)
    assert step_sync - step_ahead == pytest.approx(cpu, rel=1e-9)
    assert step_ahead > sync.weight_time(32) + sync.overhead - Efficiency().step_overhead_ms / 1e3
    c, base, _ = ahead.decode_terms(32)
    assert c + base + ahead.kv_time_per_token * 32 * 500.0 == pytest.approx(step_ahead)
    sources = efficiency_sources(Efficiency(async_scheduling=True), prov.accelerator, 2.0)
    assert "vllm-project/vllm#19970" in sources["step_overhead_ms"]
    assert "Vidur" not in sources["sequence_overhead_ms"]
    assert "vidur" in efficiency_sources(Efficiency(), prov.accelerator, 2.0)["step_overhead_ms"]


def test_edge_under_async_scheduling_a_step_takes_the_longer_of_cpu_and_gpu() -> None:
    # The 8B on an H100 at up to 256 sequences: from 143 decodes with no context, the CPU's
    # 1.04 ms + 0.038 ms a sequence outlasts the GPU's weight read, so such a step takes the
    # CPU's time; with a long context the KV read makes the GPU's the longer again.
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    shape = resolve_model(prov)
    eff = Efficiency(async_scheduling=True)
    ahead = StepModel(shape, prov.accelerator, tensor_parallel=1, efficiency=eff)
    sync = StepModel(shape, prov.accelerator, tensor_parallel=1, efficiency=Efficiency())
    assert ahead.cpu_bound_at is not None
    batch, cpu, gpu = ahead.cpu_bound_at
    assert 1 < batch <= 256 and cpu > gpu
    assert cpu == pytest.approx((eff.step_overhead_ms + batch * eff.sequence_overhead_ms) / 1e3)
    assert ahead.step(0, 0.0, batch, 0.0) == pytest.approx(cpu, rel=1e-12)
    assert ahead.step(0, 0.0, batch, 0.0) < sync.step(0, 0.0, batch, 0.0)
    long = ahead.step(0, 0.0, batch, batch * 4000.0)
    assert long > cpu
    assert long == pytest.approx(sync.step(0, 0.0, batch, batch * 4000.0) - cpu, rel=1e-12)
    narrow = StepModel(
        shape, prov.accelerator, tensor_parallel=1, efficiency=eff, max_num_seqs=batch - 1
    )
    assert narrow.cpu_bound_at is None


def test_edge_a_cpu_bound_batch_decodes_at_the_cpus_pace_in_the_simulator() -> None:
    # 200 streams of 10-token prompts on the 8B: each decode step's GPU time (the weight
    # read, a short KV read) is under the CPU's 1.04 + 200 x 0.038 = 8.64 ms, so under async
    # scheduling a token takes the CPU's time, not the GPU's alone (the simulator's
    # closed-form stretches honour the floor) nor both added (synchronous).
    def tpot(async_: bool) -> float:
        bench = Bench(
            model="llama-3.1-8b",
            accelerator="H100-SXM-80GB",
            prompt=10,
            output=100,
            clients=200,
            max_num_seqs=256,
            requests=400,
            async_scheduling=async_,
        )
        return predict(bench)["tpot_p50_ms"]

    eff = Efficiency()
    floor_ms = eff.step_overhead_ms + 200 * eff.sequence_overhead_ms
    ahead, sync = tpot(True), tpot(False)
    assert floor_ms <= ahead < 1.05 * floor_ms
    assert sync > ahead + 0.5 * floor_ms


def test_all_reduce_latency_comes_from_the_card_when_it_measured_one() -> None:
    # MI300X's card states RCCL's small-message time (14 us); an H100's has none, so NVLink's
    # default (8 us) prices it; a given figure overrides both.
    mi300x, h100 = model("llama-3.1-70b", "MI300X-192GB", 8), model("llama-3.1-70b", "h100", 8)
    collectives = 2 * 80
    assert mi300x.comm_fixed == pytest.approx(collectives * 14e-6)
    assert h100.comm_fixed == pytest.approx(collectives * 8e-6)
    prov = profiles.provider("llama-3.1-70b", "MI300X-192GB")
    given_ = StepModel(
        resolve_model(prov),
        prov.accelerator,
        tensor_parallel=8,
        efficiency=Efficiency(allreduce_latency_us=5.0),
    )
    assert given_.comm_fixed == pytest.approx(collectives * 5e-6)
    sources = efficiency_sources(Efficiency(), prov.accelerator, 1.0)
    assert sources["allreduce_latency_us"].startswith("accelerator card: RCCL against NCCL")
    h100_spec = profiles.provider("llama-3.1-70b", "h100").accelerator
    assert "assumed" in efficiency_sources(Efficiency(), h100_spec, 2.0)["allreduce_latency_us"]


def test_a_card_that_prices_shards_per_gemm_is_not_lowered_again_by_the_tp_degree() -> None:
    # B200 fp8's layer_us holds each GEMM's fixed time fitted over TP1 and TP2 shards, so at
    # TP2 each GPU streams half the weights at the card's mbu (no TP^-0.1); its bf16 entry
    # (layer_us carried over from H100) keeps the decay, and so does a given layer_us.
    def b200(weights: str, tp: int, efficiency: Efficiency) -> StepModel:
        prov = _provider(Bench("llama-3.3-70b", "B200-HGX-180GB", 1024, 1024, weights=weights))
        return StepModel(
            resolve_model(prov), prov.accelerator, tensor_parallel=tp, efficiency=efficiency
        )

    plain = Efficiency()
    fp8_1, fp8_2 = b200("fp8", 1, plain), b200("fp8", 2, plain)
    assert fp8_2.resolved.shards_priced
    assert fp8_2.dense_weight_time == pytest.approx(fp8_1.dense_weight_time / 2)
    assert fp8_2.layer_time == fp8_1.layer_time
    bf16_1, bf16_2 = b200("bf16", 1, plain), b200("bf16", 2, plain)
    assert not bf16_2.resolved.shards_priced
    assert bf16_2.dense_weight_time == pytest.approx(bf16_1.dense_weight_time / 2 * 2**0.1)
    given_ = b200("fp8", 2, Efficiency(layer_overhead_us=56.0))
    assert given_.dense_weight_time == pytest.approx(fp8_1.dense_weight_time / 2 * 2**0.1)
    accel = find_accelerator("b200")
    assert accel is not None and accel.collectives is not None
    assert fp8_2.comm_fixed == pytest.approx(2 * 80 * accel.collectives.allreduce_latency_us / 1e6)
    spec = profiles.provider("llama-3.3-70b", "B200-HGX-180GB").accelerator
    assert efficiency_sources(plain, spec, 1.0)["tp_efficiency_decay"].startswith("not applied")
    assert efficiency_sources(plain, spec, 2.0)["tp_efficiency_decay"].startswith("Databricks")


def _b200(
    weights: str, tp: int, efficiency: Efficiency, accel: str = "B200-HGX-180GB"
) -> StepModel:
    prov = _provider(Bench("llama-3.3-70b", accel, 1024, 1024, weights=weights, kv="fp8"))
    return StepModel(
        resolve_model(prov), prov.accelerator, tensor_parallel=tp, efficiency=efficiency
    )


def _card_figures() -> tuple[float, float, dict[int, float]]:
    accel = find_accelerator("b200")
    assert accel is not None and accel.collectives is not None
    fused = accel.collectives.fused_allreduce
    quant = accel.efficiency["fp8"].activation_quant
    assert fused is not None and quant is not None
    return accel.collectives.allreduce_latency_us, fused.latency_us, dict(quant.kernel_us)


def test_fusions_all_reduce_fusion_prices_the_fused_kernel_and_drops_two_quants_a_layer() -> None:
    # Llama-3.3-70B: 80 layers of hidden 8192. At TP2 each of the 160 all-reduces runs the
    # card's fused kernel, and the QKV (but the first layer's, after the embedding) and
    # gate-up inputs' quantisations (width 8192) leave layer_us.
    plain_us, fused_us, quant = _card_figures()
    plain = _b200("fp8", 2, Efficiency())
    fused = _b200("fp8", 2, Efficiency(fusions=Fusions(allreduce=True)))
    assert plain.comm_fixed == pytest.approx(160 * plain_us / 1e6)
    assert fused.comm_fixed == pytest.approx(160 * fused_us / 1e6)
    assert fused.fusion.quant_kernels_per_step == 159
    assert plain.layer_time - fused.layer_time == pytest.approx(159 * quant[8192] / 1e6)
    assert fused.step(0, 0.0, 8, 8000.0) < plain.step(0, 0.0, 8, 8000.0)
    assert len(fused.fusion.priced) == 2 and not fused.fusion.unpriced
    assert f"{fused_us:g} us" in fused.fusion.priced[0]
    # A given all-reduce latency still wins over the card's fused kernel.
    given_ = _b200("fp8", 2, Efficiency(allreduce_latency_us=9.0, fusions=Fusions(allreduce=True)))
    assert given_.comm_fixed == pytest.approx(160 * 9.0 / 1e6)
    assert "latency is given" in given_.fusion.unpriced[0]
    # At TP1 there is no all-reduce: nothing changes, and the pricing says why.
    tp1 = _b200("fp8", 1, Efficiency(fusions=Fusions(allreduce=True)))
    assert tp1.layer_time == _b200("fp8", 1, Efficiency()).layer_time
    assert "TP1" in tp1.fusion.unpriced[0]


def test_fusions_attention_fusion_drops_the_o_projections_quant_on_blackwell_only() -> None:
    _, _, quant = _card_figures()
    for tp, width in ((1, 8192), (2, 4096)):
        plain = _b200("fp8", tp, Efficiency())
        fused = _b200("fp8", tp, Efficiency(fusions=Fusions(attention=True)))
        assert plain.layer_time - fused.layer_time == pytest.approx(80 * quant[width] / 1e6)
        assert fused.comm_fixed == plain.comm_fixed
    # Hopper's default attention backend (FlashAttention) cannot write fp8: not applied.
    h100 = _b200("fp8", 2, Efficiency(fusions=Fusions(attention=True)), "H100-SXM-80GB")
    assert h100.layer_time == _b200("fp8", 2, Efficiency(), "H100-SXM-80GB").layer_time
    assert "not applied on H100" in h100.fusion.unpriced[0]


def test_fusions_norm_quant_fusion_drops_the_norm_and_silu_quants() -> None:
    # enable_fusion: QKV and gate-up after each RMSNorm (160), down after SiluMul (80, width
    # 28672 / TP); with the all-reduce fusion on as well no quantisation is counted twice.
    _, _, quant = _card_figures()
    plain = _b200("fp8", 2, Efficiency())
    both = _b200("fp8", 2, Efficiency(fusions=Fusions(allreduce=True, norm_quant=True)))
    removed = 160 * quant[8192] + 80 * quant[12288]  # 14336 is measured as 12288's kernel
    assert both.fusion.quant_kernels_per_step == 240
    assert plain.layer_time - both.layer_time == pytest.approx(removed / 1e6)


def test_fusions_only_a_card_whose_layer_us_holds_the_quant_prices_a_saving() -> None:
    fusions = Fusions(allreduce=True, attention=True, norm_quant=True)
    # bf16 weights have no fp8 quantisation; H100's fp8 entry states no quant kernel; a
    # given layer_us may hold none: each keeps its layer time and says why.
    cases = [
        (_b200("bf16", 2, Efficiency()), _b200("bf16", 2, Efficiency(fusions=fusions))),
        (
            _b200("fp8", 2, Efficiency(), "H100-SXM-80GB"),
            _b200("fp8", 2, Efficiency(fusions=fusions), "H100-SXM-80GB"),
        ),
        (
            _b200("fp8", 2, Efficiency(layer_overhead_us=56.0)),
            _b200("fp8", 2, Efficiency(layer_overhead_us=56.0, fusions=fusions)),
        ),
    ]
    for plain, fused in cases:
        assert fused.layer_time == plain.layer_time
        assert fused.fusion.removed_us_per_step == 0.0
        assert any("no quantisation saving priced" in line for line in fused.fusion.unpriced)
    assert "layer_us is given" in cases[2][1].fusion.unpriced[-1]
    # H100's card measures no fused all-reduce either: the plain one prices it.
    assert cases[1][1].comm_fixed == cases[1][0].comm_fixed
    assert any("measures no fused all-reduce" in line for line in cases[1][1].fusion.unpriced)
    b200 = profiles.provider("llama-3.3-70b", "B200-HGX-180GB").accelerator
    sources = efficiency_sources(Efficiency(fusions=fusions), b200, 1.0)
    assert "scale_matrix_perf" in sources["fused_quant_us"]
    assert "trtllm" in sources["fused_allreduce_us"]


def test_fusions_a_benchmark_passes_its_compilation_config_through_the_runtime_args() -> None:
    # InferenceMAX's B200 runs compile FlashInfer's fused all-reduce and the attention fusion:
    # Bench.runtime_args carries the serving command's compilation-config to the planner,
    # which prices it from the card; a dynamic-scale checkpoint (no quantization stated)
    # gets none of it (nor the static scales' saving).
    config = json.dumps(
        {"pass_config": {"enable_fi_allreduce_fusion": True, "enable_attn_fusion": True}}
    )
    point = Bench(
        "llama-3.3-70b",
        "B200-HGX-180GB",
        1024,
        256,
        tp=2,
        clients=4,
        weights="fp8",
        kv="fp8",
        requests=8,
        max_model_len=2048,
        quantization="modelopt",
    )
    plain = predict(point)["tpot_p50_ms"]
    fused = predict(replace(point, runtime_args=(("compilation-config", config),)))
    unknown = predict(
        replace(point, quantization=None, runtime_args=(("compilation-config", config),))
    )
    assert fused["tpot_p50_ms"] < plain
    assert unknown["tpot_p50_ms"] == predict(replace(point, quantization=None))["tpot_p50_ms"]
    # 160 all-reduces a step each (7.1 - 5.2) us shorter, 159 + 80 quantisations fewer.
    _, _, quant = _card_figures()
    saved_ms = (160 * 1.9 + 159 * quant[8192] + 80 * quant[4096]) / 1e3
    assert plain - fused["tpot_p50_ms"] == pytest.approx(saved_ms, rel=0.1)


def test_static_scales_leave_the_cards_scale_computation_out_of_every_gemm() -> None:
    """A checkpoint with static activation scales (ModelOpt fp8) does not compute a scale
    per call, which the B200 card's GEMM timings did: per layer, the card's
    dynamic_scale_us at each of the four GEMMs' input widths leaves layer_us; H100's fp8
    entry states none, so nothing moves there."""
    accel = find_accelerator("b200")
    assert accel is not None
    quant = accel.efficiency["fp8"].activation_quant
    assert quant is not None and quant.dynamic_scale_us is not None
    scale = dict(quant.dynamic_scale_us)
    for tp, widths in ((1, (8192, 8192, 8192, 16384)), (2, (8192, 4096, 8192, 12288))):
        dynamic = _b200("fp8", tp, Efficiency())
        static = _b200("fp8", tp, Efficiency(static_fp8_scales=True))
        per_layer = sum(scale[w] for w in widths)  # down: 28672 / tp, the width measured below
        assert dynamic.layer_time - static.layer_time == pytest.approx(80 * per_layer / 1e6)
        assert static.fusion.scales and "scale computation" in static.fusion.scales[0]
    h100 = _b200("fp8", 2, Efficiency(static_fp8_scales=True), "H100-SXM-80GB")
    assert h100.layer_time == _b200("fp8", 2, Efficiency(), "H100-SXM-80GB").layer_time
    given = _b200("fp8", 2, Efficiency(static_fp8_scales=True, layer_overhead_us=30.0))
    assert given.layer_time == _b200("fp8", 2, Efficiency(layer_overhead_us=30.0)).layer_time
    assert "layer_us is given" in given.fusion.scales[0]
