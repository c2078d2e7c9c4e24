"""The H100 (FP8), H200 and B200 cards' kernel efficiencies and the held-out replay's random
lengths (benchmarks/planner/heldout/point.py, hopper_blackwell.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.planner.heldout.point import Bench, length_distribution, predict
from registry.planner.efficiency import FALLBACK, kernel_efficiency
from registry.planner.sampling import sample_lengths
from registry.records.common import Distribution


@pytest.mark.parametrize(
    ("accelerator", "weight_bytes", "key"),
    [
        ("h100", 1.0, "H100-SXM-80GB fp8"),
        ("h200", 2.0, "H200-SXM-141GB bf16"),
        ("h200", 1.0, "H200-SXM-141GB fp8"),
        ("b200", 2.0, "B200-HGX-180GB bf16"),
        ("b200", 1.0, "B200-HGX-180GB fp8"),
    ],
)
def test_success_hopper_and_blackwell_entries_are_measured_not_fallback(
    accelerator: str, weight_bytes: float, key: str
) -> None:
    entry, found = kernel_efficiency(accelerator, weight_bytes)
    assert found == key
    assert entry is not FALLBACK and entry.measured
    # Each names the kernel table it was read from.
    assert "ai-dynamo/aiconfigurator@" in entry.source


def test_success_h200_streams_less_of_its_peak_than_h100() -> None:
    # The measured H200 share is below H100's: its bandwidth gain over H100 (4.8 / 3.35)
    # is not fully realised by the decode kernels.
    h100, _ = kernel_efficiency("h100", 2.0)
    h200, _ = kernel_efficiency("h200", 2.0)
    assert h200.mbu < h100.mbu
    assert 4800 * h200.mbu / (3350 * h100.mbu) < 4800 / 3350


def test_success_random_lengths_span_the_range_ratio() -> None:
    dist = Distribution.model_validate(length_distribution(1024, 0.8))
    drawn = sample_lengths(dist, 20000, np.random.default_rng(0), log_space=False)
    assert drawn.min() >= 819 and drawn.max() <= 1024
    assert abs(float(drawn.mean()) - (819 + 1024) / 2) < 5
    fixed = Distribution.model_validate(length_distribution(1024, 1.0))
    assert fixed.quantiles is not None and set(fixed.quantiles.values()) == {1024}


def test_success_random_lengths_desynchronise_a_closed_loop() -> None:
    # Fixed lengths keep four clients in lock step, so every prefill waits for the other
    # three; lengths drawn from [0.8 L, L] spread them out, as benchmark_serving's do.
    def run(ratio: float) -> dict[str, float]:
        bench = Bench(
            model="llama-3.1-8b",
            accelerator="H100-SXM-80GB",
            prompt=2048,
            output=256,
            clients=4,
            requests=200,
            length_ratio=ratio,
        )
        return predict(bench)

    fixed, spread = run(1.0), run(0.8)
    assert spread["ttft_p50_ms"] < 0.8 * fixed["ttft_p50_ms"]


def test_fail_a_range_ratio_outside_0_1_is_refused() -> None:
    with pytest.raises(ValueError, match="length_ratio"):
        length_distribution(1024, 0.0)


def test_success_a_replayed_async_scheduling_run_hides_the_cpu_time_per_token() -> None:
    # Four clients of a 70B FP8 model on one H200: the scheduled-ahead engine's TPOT is
    # shorter by about the CPU's time per step (1.04 ms + 4 x 0.038 ms), the rest unchanged.
    def tpot(ahead: bool) -> float:
        bench = Bench(
            model="llama-3.3-70b",
            accelerator="H200-SXM-141GB",
            prompt=1024,
            output=256,
            clients=4,
            requests=40,
            weights="fp8",
            kv="fp8",
            async_scheduling=ahead,
        )
        return predict(bench)["tpot_p50_ms"]

    assert tpot(False) - tpot(True) == pytest.approx(1.04 + 4 * 0.038, abs=0.15)


def test_success_b200_fp8_prices_a_fixed_time_per_gemm_apart_from_the_stream() -> None:
    # B200's fp8 GEMMs at 1-16 tokens: ~10 us each plus a stream at ~0.77 of peak (CUTLASS,
    # AIConfigurator's table): the card carries the fixed part in layer_us (four GEMMs a
    # layer) and the stream in mbu, where bf16's fixed part is small.
    fp8, _ = kernel_efficiency("b200", 1.0)
    bf16, _ = kernel_efficiency("b200", 2.0)
    h100, _ = kernel_efficiency("h100", 2.0)
    assert fp8.layer_us > bf16.layer_us + 4 * 8 and bf16.layer_us == h100.layer_us
    assert fp8.mbu >= bf16.mbu and "CutlassFP8ScaledMMLinearKernel" in fp8.source
