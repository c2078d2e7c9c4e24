"""Accelerators beyond H100 (issue 28): the cards a team would buy, names matched word by
word, and the backends the planner does not model refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.planner.backends import unmodelled_backend
from registry.planner.catalog import find_accelerator
from tests.factories import example
from tests.planner.sizing_cli import size_with_provider


@pytest.mark.parametrize(
    ("name", "card"),
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
        ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
        ("nvidia-h100-nvl-94gb", "H100-NVL-94GB"),
        ("NVIDIA-L40S", "L40S-48GB"),  # "l4" is a word of neither
        ("NVIDIA L40", "L40-48GB"),
        ("nvidia-l4", "L4-24GB"),
        ("AMD Instinct MI325X", "MI325X-256GB"),
        ("AMD Instinct MI300X", "MI300X-192GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
        ("NVIDIA A10G", "A10G-24GB"),
    ],
)
def test_success_spec_names_find_their_card(name: str, card: str) -> None:
    found = find_accelerator(name)
    assert found is not None and found.name == card


def test_fail_a_stated_memory_that_is_no_cards_finds_none() -> None:
    assert find_accelerator("NVIDIA H100 64GB") is None
    assert find_accelerator("NVIDIA A10G 48GB") is None
    assert find_accelerator("NVIDIA A10") is None  # the A10 is not the A10G: no card


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("TPU-v5e", "a Google TPU"),
        ("tpu-v6e-slice", "a Google TPU"),
        ("v5litepod-8", "a Google TPU"),
        ("Gaudi3-128GB", "an Intel Gaudi"),
        ("HL-325L", "an Intel Gaudi"),
        ("trn1", "an AWS Trainium or Inferentia"),
    ],
)
def test_fail_unmodelled_backends_are_named(name: str, what: str) -> None:
    found = unmodelled_backend(name)
    assert found is not None and found.startswith(what)


@pytest.mark.parametrize("name", ["H100-SXM-80GB", "MI325X-256GB", "L4-24GB", "GH200", "RTX-3090"])
def test_success_gpus_are_modelled(name: str) -> None:
    assert unmodelled_backend(name) is None


def test_fail_plan_size_refuses_a_tpu(tmp_path: Path) -> None:
    provider = example("provider")
    provider["accelerator"] = {
        **provider["accelerator"],
        "name": "TPU-v6e",
        "memory_gib": 32,
        "memory_bandwidth_gb_s": 1640,
        "dense_tflops": {"bf16": 918},
    }
    result = size_with_provider(tmp_path, provider)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "accelerator.name: provider llama31-8b-h100-vllm: TPU-v6e is a Google TPU, served by "
        "vLLM's TPU backend"
    ) in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
