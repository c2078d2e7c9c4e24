"""The provider's runtime version and flags decide whether vLLM's CPU time per step is hidden
(async scheduling), as vLLM's own defaults do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.planner.heldout.hopper_blackwell import B200_COMPILATION_CONFIG
from registry.errors import InvalidInput
from registry.planner.quant_pricing import Fusions
from registry.planner.runtime_features import async_scheduling, compilation_fusions
from registry.records.provider import ModelSpec, RuntimeSpec
from tests.factories import example_path
from tests.planner.sizing_cli import size_with_provider


def _runtime(version: str, **args: Any) -> RuntimeSpec:
    return RuntimeSpec(name="vllm", version=version, args=dict(args))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.5", False),
        ("0.10.2+cu128", False),
        ("0.11.1", False),
        ("0.13.0", False),
        ("0.14.0", True),
        ("0.14", True),
        ("0.19.1.post1", True),
        ("1.0.0", True),
    ],
)
def test_success_the_default_follows_vllms_version(version: str, expected: bool) -> None:
    feature = async_scheduling(_runtime(version))
    assert feature.enabled is expected
    assert version in feature.reason and "0.14.0" in feature.reason


@pytest.mark.parametrize(
    ("version", "args", "expected"),
    [
        ("0.10.2", {"async-scheduling": True}, True),
        ("0.10.2", {"--async-scheduling": "true"}, True),
        ("0.10.2", {"async_scheduling": 1}, True),
        ("0.14.0", {"async-scheduling": False}, False),
        ("0.14.0", {"async-scheduling": "false"}, False),
        ("0.14.0", {"no-async-scheduling": True}, False),
        ("0.10.2", {"async-scheduling": True, "no-async-scheduling": True}, False),
        ("0.14.0", {"no-async-scheduling": False}, True),
    ],
)
def test_success_a_flag_in_the_profile_wins_over_the_default(
    version: str, args: dict[str, str | int | float | bool], expected: bool
) -> None:
    feature = async_scheduling(_runtime(version, **args))
    assert feature.enabled is expected
    assert "runtime.args" in feature.reason or "0.14.0" in feature.reason


def test_edge_another_runtime_is_priced_without_it() -> None:
    feature = async_scheduling(RuntimeSpec(name="sglang", version="0.5.0"))
    assert not feature.enabled and "sglang" in feature.reason


# The compilation-config of InferenceMAX's B200 runs (benchmarks/70b_fp8_b200_docker.sh),
# as the held-out harness replays it.
B200_RUN = B200_COMPILATION_CONFIG


def _fp8_model(**update: object) -> ModelSpec:
    data: dict[str, object] = {
        "name": "nvidia/Llama-3.3-70B-Instruct-FP8",
        "layers": 80,
        "hidden_size": 8192,
        "attention_heads": 64,
        "kv_heads": 8,
        "head_dim": 128,
        "total_params_b": 70.6,
        "weights_dtype": "fp8",
        "kv_dtype": "fp8",
        "quantization": "modelopt",
        "max_context_tokens": 131072,
    }
    return ModelSpec.model_validate({**data, **update})


@pytest.mark.parametrize(
    "args",
    [
        {"compilation-config": json.dumps(B200_RUN)},
        {"--compilation-config": json.dumps(B200_RUN)},
        {"compilation_config": B200_RUN},
        {"-O": json.dumps({**B200_RUN, "level": 3})},
    ],
)
def test_fusions_compilation_config_as_a_json_string_or_a_mapping(args: dict[str, Any]) -> None:
    features = compilation_fusions(_runtime("0.10.2", **args), _fp8_model())
    assert features.fusions == Fusions(allreduce=True, attention=True, norm_quant=False)
    assert "enable_fi_allreduce_fusion, enable_attn_fusion" in features.reasons[0]


def test_fusions_enable_fusion_and_no_config_at_all() -> None:
    on = {"pass_config": {"enable_fusion": True}}
    assert compilation_fusions(
        _runtime("0.10.2", **{"compilation-config": json.dumps(on)}), _fp8_model()
    ).fusions == Fusions(norm_quant=True)
    none = compilation_fusions(_runtime("0.10.2"), _fp8_model())
    assert not none.fusions and none.reasons == ()
    # Passes left at vLLM 0.10's V1 defaults (off) fuse nothing, and say nothing.
    noop = {"pass_config": {"enable_noop": True}}
    quiet = compilation_fusions(
        _runtime("0.10.2", **{"compilation-config": json.dumps(noop)}), _fp8_model()
    )
    assert not quiet.fusions and quiet.reasons == ()


@pytest.mark.parametrize(
    ("level", "flags", "model", "why"),
    [
        # Fusion passes run only at the piecewise level (3): another level, or eager mode.
        (0, {}, {}, "compiles at 0"),
        (2, {}, {}, "compiles at 2"),
        (None, {"enforce-eager": True}, {}, "compiles at 0"),
        # They match static per-tensor fp8 activations only: bf16, or scales not stated.
        (None, {}, {"weights_dtype": "bf16", "quantization": None}, "static per-tensor"),
        (None, {}, {"quantization": None}, "static per-tensor"),
        (
            None,
            {},
            {
                "quantization": None,
                "hf_config": {
                    "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}
                },
            },
            "static per-tensor",
        ),
    ],
)
def test_fusions_not_applied_where_vllm_would_not_apply_them(
    level: int | None, flags: dict[str, Any], model: dict[str, object], why: str
) -> None:
    config = B200_RUN if level is None else {**B200_RUN, "level": level}
    runtime = _runtime("0.10.2", **{"compilation-config": json.dumps(config)}, **flags)
    features = compilation_fusions(runtime, _fp8_model(**model))
    assert not features.fusions
    assert why in features.reasons[0]
    # -O0 alone turns no pass on: nothing to say.
    bare = compilation_fusions(_runtime("0.10.2", **{"-O": "0"}), _fp8_model(**model))
    assert not bare.fusions and bare.reasons == ()


def test_fusions_static_scales_read_from_the_models_quantization_config() -> None:
    static = [
        {"quant_method": "fp8", "activation_scheme": "static"},
        {"quant_method": "modelopt", "quant_algo": "FP8"},
        {
            "quant_method": "compressed-tensors",
            "config_groups": {
                "group_0": {
                    "input_activations": {
                        "dynamic": False,
                        "strategy": "tensor",
                        "type": "float",
                        "num_bits": 8,
                    }
                }
            },
        },
    ]
    runtime = _runtime("0.10.2", **{"compilation-config": json.dumps(B200_RUN)})
    for config in static:
        model = _fp8_model(quantization=None, hf_config={"quantization_config": config})
        assert compilation_fusions(runtime, model).fusions.allreduce
    per_token = {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"input_activations": {"dynamic": True, "strategy": "token"}}},
    }
    model = _fp8_model(quantization=None, hf_config={"quantization_config": per_token})
    assert not compilation_fusions(runtime, model).fusions


def test_fusions_attention_fusion_needs_an_fp8_kv_cache() -> None:
    runtime = _runtime("0.10.2", **{"compilation-config": json.dumps(B200_RUN)})
    features = compilation_fusions(runtime, _fp8_model(kv_dtype="bf16"))
    assert features.fusions == Fusions(allreduce=True)
    assert "fp8 KV cache" in features.reasons[1]


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ("{pass_config: true", "runtime.args.compilation-config", "is not JSON"),
        ("[1, 2]", "runtime.args.compilation-config", "not list"),
        (True, "runtime.args.compilation-config", "not a boolean"),
        ('{"pass_config": 3}', "runtime.args.compilation-config.pass_config", "JSON object"),
        (
            '{"pass_config": {"enable_attn_fusion": "yes"}}',
            "runtime.args.compilation-config.pass_config.enable_attn_fusion",
            "true or false",
        ),
        ('{"level": "3"}', "runtime.args.compilation-config.level", "integer"),
    ],
)
def test_fail_a_bad_compilation_config_is_named_by_its_field(
    value: str | bool, field: str, message: str
) -> None:
    runtime = _runtime("0.10.2", **{"compilation-config": value})
    with pytest.raises(InvalidInput) as caught:
        compilation_fusions(runtime, _fp8_model())
    (problem,) = caught.value.problems
    assert problem.loc == field and message in problem.message


def test_fail_plan_size_refuses_a_bad_compilation_config_with_exit_2(tmp_path: Path) -> None:
    # As a user runs it: the worked example's provider with a compilation-config whose pass
    # is not a boolean; the provider is stored (runtime.args holds any flag), the sizing is
    # refused naming the field, no traceback.
    provider = yaml.safe_load(example_path("provider").read_text())
    provider["runtime"]["args"] = {
        "compilation-config": {"pass_config": {"enable_fi_allreduce_fusion": "yes"}}
    }
    sized = size_with_provider(tmp_path, provider)
    assert sized.returncode == 2, sized.stderr
    assert "runtime.args.compilation-config.pass_config.enable_fi_allreduce_fusion" in sized.stderr
    assert "must be true or false" in sized.stderr and "Traceback" not in sized.stderr
