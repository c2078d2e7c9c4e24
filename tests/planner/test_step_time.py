"""Step-time model: closed forms against brute force, and tensor-parallel behaviour."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.planner import profiles
from registry.planner.catalog import resolve_model
from registry.planner.step_time import Efficiency, StepModel, lines_sum, steps_within


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
    # Batch 1 decode: about the weights over 60% of 3.35 TB/s.
    assert 7.5e-3 < m.step(0, 0.0, 1, 100.0) < 9.5e-3
    # Doubling a long prefill roughly doubles its time (compute bound).
    t4k, t8k = m.step(4096, 4096 * 2048.0, 0, 0.0), m.step(8192, 8192 * 4096.0, 0, 0.0)
    assert 1.9 < t8k / t4k < 2.3


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
