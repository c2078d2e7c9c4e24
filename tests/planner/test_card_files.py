"""The catalogs as data: the shipped cards, a team's own through CAPGATE_CATALOG_PATH, and
`capgate catalog list|show|validate`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from registry.errors import InvalidInput
from registry.planner import card_files
from registry.planner.catalog import accelerators, find_accelerator, find_model, models
from tests.support.cli_process import capgate

# A GPU capgate does not ship a card for, as a team would add it.
A30 = {
    "kind": "accelerator",
    "name": "A30-24GB",
    "aliases": ["a30"],
    "memory_gib": 24,
    "memory_bandwidth_gb_s": 933,
    "dense_tflops": {"bf16": 165, "fp16": 165},
    "interconnect": "pcie",
    "interconnect_gb_s": 64,
    "source": "NVIDIA A30 figures as a team states them (test card)",
}


def _folder(tmp_path: Path, **cards: dict[str, object]) -> Path:
    folder = tmp_path / "catalog" / "accelerators"
    folder.mkdir(parents=True, exist_ok=True)
    for name, card in cards.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(card))
    return tmp_path / "catalog"


def _env(folder: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != card_files.PATH_VARIABLE}
    return env if folder is None else {**env, card_files.PATH_VARIABLE: str(folder)}


def test_success_every_shipped_card_loads_with_its_source() -> None:
    loaded = card_files.load()
    files = sorted(card_files.SHIPPED.glob("*/*.yaml"))
    assert [e.file for e in loaded] == sorted(files, key=lambda p: (p.parent.name != "models", p))
    assert all(e.shipped and len(e.card.source) >= 10 for e in loaded)
    h100 = find_accelerator("h100")
    assert h100 is not None and h100.memory_bandwidth_gb_s == 3350
    assert h100.dense_tflops["fp8"] == 1979 and h100.exposed_memory_gib == 79.19
    mixtral = find_model("mixtral-8x7b-instruct-v0.1")
    assert mixtral is not None and (mixtral.num_experts, mixtral.experts_per_token) == (8, 2)
    assert len(models()) + len(accelerators()) == len(loaded)


def test_success_a_teams_card_adds_a_gpu_without_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_accelerator("a30") is None
    monkeypatch.setenv(card_files.PATH_VARIABLE, str(_folder(tmp_path, a30=A30)))
    card = find_accelerator("A30")
    assert card is not None and card.memory_bandwidth_gb_s == 933
    assert card.dense_tflops == {"bf16": 165, "fp16": 165}


def test_success_lookups_reuse_the_cards_until_the_catalog_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(card_files.PATH_VARIABLE, raising=False)
    shipped = accelerators()
    h100 = find_accelerator("h100")
    assert accelerators() is shipped and find_accelerator("h100") is h100
    assert models() is models()
    with pytest.raises(TypeError):  # one card object serves every lookup: read-only
        h100.dense_tflops["bf16"] = 1.0  # type: ignore[index,union-attr]
    monkeypatch.setenv(card_files.PATH_VARIABLE, str(_folder(tmp_path, a30=A30)))
    assert accelerators() is not shipped and find_accelerator("a30") is not None
    monkeypatch.delenv(card_files.PATH_VARIABLE)
    assert find_accelerator("a30") is None and len(accelerators()) == len(shipped)


def test_fail_a_card_may_not_take_a_shipped_name(tmp_path: Path) -> None:
    thief = {**A30, "name": "H100-SXM-80GB", "aliases": ["a30", "h100"]}
    folder = _folder(tmp_path, thief=thief)
    with pytest.raises(InvalidInput) as caught:
        card_files.load([folder])
    messages = [p.message for p in caught.value.problems]
    assert len(messages) == 2
    assert "accelerator name 'h100-sxm-80gb' is already" in messages[0]
    assert "H100-SXM-80GB.yaml's: a card may add names, not replace one" in messages[0]
    assert "accelerator name 'h100' is already" in messages[1]


def test_fail_validate_names_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = {**A30, "memory_gib": -1, "dense_tflops": {"bf17": 1}, "colour": "green"}
    del bad["source"]
    path = _folder(tmp_path, bad=bad) / "accelerators" / "bad.yaml"
    result = capgate("catalog", "validate", str(path), env=_env(None))
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    for loc in (
        "source: field required",
        "memory_gib: Input should be greater than 0",
        "dense_tflops.bf17.[key]",
        "colour: unknown field",
    ):
        assert any(line.startswith(f"{path}: ") and loc in line for line in lines), (loc, lines)
    assert result.stdout == ""

    model = {
        "kind": "model",
        "name": "x/y",
        "source": "a config.json somewhere",
        "layers": 2,
        "hidden_size": 64,
        "attention_heads": 6,
        "kv_heads": 4,
        "head_dim": 16,
        "intermediate_size": 128,
        "vocab_size": 100,
        "total_params_b": 1,
        "active_params_b": 2,
        "max_context_tokens": 1024,
    }
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(model))
    result = capgate("catalog", "validate", str(path), "--json", env=_env(None))
    assert result.returncode == 2
    problems = json.loads(result.stdout)["problems"]
    assert [p["message"] for p in problems] == ["kv_heads (4) must divide attention_heads (6)"]


def test_success_list_show_and_validate_read_the_teams_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path, a30=A30)
    env = _env(folder)
    listed = capgate("catalog", "list", "--kind", "accelerator", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["A30-24GB"]["file"] == str(folder / "accelerators" / "a30.yaml")
    assert rows["H100-SXM-80GB"]["shipped"] is True
    assert all(row["kind"] == "accelerator" for row in rows.values())

    shown = capgate("catalog", "show", "a30", env=env)
    assert shown.returncode == 0, shown.stderr
    card = yaml.safe_load(shown.stdout)
    assert (card["name"], card["memory_bandwidth_gb_s"]) == ("A30-24GB", 933)
    assert card["file"] == str(folder / "accelerators" / "a30.yaml")

    checked = capgate("catalog", "validate", env=env)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == f"ok  {len(card_files.load([folder]))} card(s)"

    missing = capgate("catalog", "show", "a30", env=_env(None))
    assert missing.returncode == 2
    assert "no catalog card is named 'a30'" in missing.stderr


def test_collectives_a_card_states_its_all_reduce_latency_with_a_source(tmp_path: Path) -> None:
    mi300x = find_accelerator("mi300x")
    assert mi300x is not None and mi300x.collectives is not None
    assert mi300x.collectives.allreduce_latency_us == 14 and mi300x.collectives.measured
    assert "RCCL" in mi300x.collectives.source
    h100 = find_accelerator("h100")
    assert h100 is not None and h100.collectives is None

    ok = {
        **A30,
        "collectives": {
            "allreduce_latency_us": 30,
            "measured": False,
            "source": "nccl-tests on our PCIe box (test card)",
        },
    }
    path = _folder(tmp_path, ok=ok) / "accelerators" / "ok.yaml"
    card = card_files.read_card(path)
    assert isinstance(card, card_files.AcceleratorCardFile) and card.collectives is not None
    assert card.collectives.allreduce_latency_us == 30

    bad = {**A30, "collectives": {"allreduce_latency_us": 0, "measured": True}}
    path = _folder(tmp_path, bad=bad) / "accelerators" / "bad.yaml"
    with pytest.raises(InvalidInput) as caught:
        card_files.read_card(path)
    locs = {(p.loc, p.message) for p in caught.value.problems}
    assert ("collectives.allreduce_latency_us", "Input should be greater than 0") in locs
    assert ("collectives.source", "field required") in locs


_ENTRY = {
    "mfu": 0.5,
    "mbu": 0.7,
    "attn_mfu": 0.4,
    "layer_us": 40,
    "measured": True,
    "source": "our GEMM timings of the fp8 linear (test card)",
}
_QUANT = {
    "kernel_us": {4096: 2.0, 8192: 2.5},
    "in_layer_us": True,
    "measured": True,
    "source": "our scaled_fp8_quant timings (test card)",
}


def test_fusions_a_card_states_its_quant_kernel_and_fused_all_reduce(tmp_path: Path) -> None:
    b200 = find_accelerator("b200")
    assert b200 is not None and b200.collectives is not None
    fused = b200.collectives.fused_allreduce
    assert fused is not None and fused.latency_us == 5.2 and "trtllm" in fused.source
    quant = b200.efficiency["fp8"].activation_quant
    assert quant is not None and quant.in_layer_us and quant.kernel_us[8192] == 2.56
    assert "scale_matrix_perf" in quant.source
    assert b200.efficiency["bf16"].activation_quant is None

    ok = {
        **A30,
        "efficiency": {"fp8": {**_ENTRY, "activation_quant": _QUANT}},
        "collectives": {
            "allreduce_latency_us": 30,
            "measured": False,
            "source": "nccl-tests on our PCIe box (test card)",
            "fused_allreduce": {"latency_us": 20, "measured": True, "source": "our fused runs"},
        },
    }
    card = card_files.read_card(_folder(tmp_path, ok=ok) / "accelerators" / "ok.yaml")
    assert isinstance(card, card_files.AcceleratorCardFile) and card.collectives is not None
    assert card.efficiency["fp8"].activation_quant is not None
    assert card.efficiency["fp8"].activation_quant.kernel_us == {4096: 2.0, 8192: 2.5}
    assert card.collectives.fused_allreduce is not None
    assert card.collectives.fused_allreduce.latency_us == 20


def test_fusions_a_bad_quant_entry_is_named_by_its_field(tmp_path: Path) -> None:
    bad = {
        **A30,
        "efficiency": {
            "bf16": {**_ENTRY, "activation_quant": _QUANT},
            "fp8": {**_ENTRY, "activation_quant": {**_QUANT, "kernel_us": {4096: 0}}},
        },
        "collectives": {
            "allreduce_latency_us": 30,
            "measured": False,
            "source": "nccl-tests on our PCIe box (test card)",
            "fused_allreduce": {"latency_us": 5, "measured": True},
        },
    }
    with pytest.raises(InvalidInput) as caught:
        card_files.read_card(_folder(tmp_path, bad=bad) / "accelerators" / "bad.yaml")
    locs = {(p.loc, p.message) for p in caught.value.problems}
    assert (
        "efficiency.fp8.activation_quant.kernel_us.4096",
        "Input should be greater than 0",
    ) in locs
    assert ("collectives.fused_allreduce.source", "field required") in locs

    only_bf16 = {**A30, "efficiency": {"bf16": {**_ENTRY, "activation_quant": _QUANT}}}
    with pytest.raises(InvalidInput) as caught:
        card_files.read_card(_folder(tmp_path, only=only_bf16) / "accelerators" / "only.yaml")
    assert any("efficiency.bf16.activation_quant" in p.message for p in caught.value.problems)
