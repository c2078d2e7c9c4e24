"""A result file's model, GPUs and server version, held against the provider it is imported for.

Real files from ../shared/fixtures (skipped when absent): each tool that states a model is
imported for a provider serving another model (refused, exit 2 / HTTP 422, naming both) and
for one serving its own (stored as `measured_model`). A served alias or a local path cannot
be compared: a note, never a refusal. The case from issue 27: a Llama-3.1-8B test on H100
imported for a Llama-3.1-70B FP8 provider on H200 with vLLM 0.11.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.importers import _parse
from registry.importers.identity import Identity, check_models, hf_id, names
from registry.importers.runtime import parse_runtime
from registry.importers.service import ImportFile, ImportOptions, ImportResult, import_files
from registry.manifests.identity import accelerator_family
from registry.records.documents import validate_record
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.provider import ProviderProfile
from registry.storage.database import Database
from tests.cli.test_cli import capgate
from tests.factories import EXAMPLE_EVIDENCE, example, import_example_evidence
from tests.importers.helpers import (
    EXAMPLE_PROVIDER,
    WHEN,
    path_of,
    provider_for,
    register_provider,
    register_providers,
    serving,
)
from tests.importers.test_import_service import submit_example
from tests.support.auth import client_for

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
# Issue 27's provider: another model, another accelerator, another vLLM minor version.
H200 = {
    "name": "H200-SXM-141GB",
    "memory_gib": 141,
    "memory_bandwidth_gb_s": 4800,
    "dense_tflops": {"bf16": 989, "fp8": 1979},
    "interconnect": {"kind": "nvlink", "bandwidth_gb_s": 900},
    "per_node": 8,
}
BIG = "llama31-70b-h200"
BIG_MODEL = "meta-llama/Llama-3.1-70B-Instruct-FP8"

# (file, the model it states, the key it is read from): one per tool and layout with a model.
STATED = [
    (
        "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json",
        LLAMA_8B,
        "model_id",
    ),
    (
        "vllm-bench/er0080__vllm-benchmarking__sweep-v0251-max-num-seqs-8-summary.json",
        "facebook/opt-125m",
        "item 0.model_id",
    ),
    (
        "guidellm/danielkorat__guidellm-bench__qwen3-4b-thinking-tp2-fp8-xpu-synchronous.json",
        "Qwen/Qwen3-4B-Thinking-2507",
        "benchmarks[0].config.backend.model",
    ),
    (
        "aiperf/ai-dynamo__aiperf__examples-run1-profile_export_aiperf.json",
        "openai/gpt-oss-20b",
        "input_config.endpoint.model_names",
    ),
    (
        "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-sdk2501.json",
        "openai/gpt-oss-20b",
        "input_config.model",
    ),
    (
        "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-telemetry-sdk2507.json",
        "openai/gpt-oss-20b",
        "input_config.model_names",
    ),
]
# Names that cannot be compared: an AIPerf served alias (0.11 items layout), a local path.
ALIAS = "aiperf/akamaslabs__vllm-benchmark__g7-4500-no-mig-concurrency64.json"
LOCAL_PATH = "vllm-bench/nv-action__vllm-benchmarks__ascend-llama8b-tp1-qps-inf.json"
EXP7 = STATED[0][0]
AIPERF = STATED[3][0]
NO_MODEL = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json"


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)
    register_providers(database)
    register_provider(database, big_provider())
    return database


def big_provider() -> dict[str, Any]:
    record = serving(BIG_MODEL, name=BIG, accelerator=H200)
    record["runtime"] = {"name": "vllm", "version": "0.11.0"}
    return record


def options_for(rel: str, data: bytes, provider: str, **kw: Any) -> ImportOptions:
    """What a user passes for this file: --replicas unless it states them, --measured-at
    unless it states a zoned time."""
    stage = _parse(data, file_name=path_of(rel).name, tool="auto")[0]
    zoned = stage.measured_at is not None and not stage.measured_at_naive
    args: dict[str, Any] = {
        "workload": "chat-assistant",
        "provider": provider,
        "traffic_class": "interactive",
        "replicas": None if stage.replicas is not None else 1,
        "measured_at": None if zoned else WHEN,
        **kw,
    }
    return ImportOptions(**args)


def run(
    database: Database, rel: str, provider: str, *, data: bytes | None = None, **kw: Any
) -> list[ImportResult]:
    data = path_of(rel).read_bytes() if data is None else data
    files = [ImportFile(name=path_of(rel).name, data=data)]
    options = options_for(rel, data, provider, **kw)
    return import_files(database, files, options, principal="alice")


def edited(rel: str, change: Any) -> bytes:
    doc = json.loads(path_of(rel).read_bytes())
    change(doc)
    return json.dumps(doc).encode()


def findings_notes(result: ImportResult) -> list[str]:
    return list(result.record.content["findings"]["notes"])


# ---- each tool's model ----------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "model", "key"), STATED, ids=[s[0].split("/")[0] for s in STATED])
def test_another_model_is_refused_naming_both(
    registry: Database, rel: str, model: str, key: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        run(registry, rel, BIG)
    error = caught.value
    assert (error.exit_code, error.status_code) == (2, 422)
    (problem,) = error.problems
    assert problem.loc == "model"
    assert problem.message.startswith(
        f"the file measured {model} ({key}); provider {BIG}@v1 serves {BIG_MODEL}"
    )
    assert error.source == path_of(rel).name


@pytest.mark.parametrize(("rel", "model", "key"), STATED, ids=[s[0].split("/")[0] for s in STATED])
def test_the_provider_serving_the_model_accepts_it_and_stores_it(
    registry: Database, rel: str, model: str, key: str
) -> None:
    results = run(registry, rel, provider_for(rel))
    for result in results:
        assert result.record.content["measured_model"] == model
        assert f"model {model}, from the file (" in " ".join(findings_notes(result))
        assert not any("model" in note for note in result.notes)


def test_a_file_without_a_model_is_not_compared(registry: Database) -> None:
    (result,) = run(registry, NO_MODEL, BIG)
    content = result.record.content
    assert "measured_model" not in content and "measured_accelerators" not in content
    assert not any("model" in note for note in result.notes)


def test_model_ids_compare_case_insensitively(registry: Database) -> None:
    data = edited(EXP7, lambda doc: doc.update(model_id=LLAMA_8B.lower()))
    (result,) = run(registry, EXP7, EXAMPLE_PROVIDER, data=data)
    assert result.record.content["measured_model"] == LLAMA_8B.lower()
    assert result.notes == []


def test_a_hugging_face_cache_path_is_read_as_its_repo(registry: Database) -> None:
    cached = "/data/hf/hub/models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e"
    data = edited(EXP7, lambda doc: doc.update(model_id=cached))
    (result,) = run(registry, EXP7, EXAMPLE_PROVIDER, data=data)
    assert result.record.content["measured_model"] == cached
    with pytest.raises(InvalidInput) as caught:
        run(registry, EXP7, BIG, data=data)
    assert caught.value.problems[0].loc == "model"


# ---- names that cannot be compared: a note, never a refusal ----------------------------------


def test_a_served_alias_is_a_note_naming_the_tokenizer(registry: Database) -> None:
    (result,) = run(registry, ALIAS, EXAMPLE_PROVIDER)
    assert result.record.content["measured_model"] == "qwen3-4b"
    name = path_of(ALIAS).name
    assert result.notes == [
        f"{name}: the file names the model 'qwen3-4b' (input_config.models.items[].name), a "
        "served alias or local path rather than a Hugging Face id (org/name): it cannot be "
        f"compared with {LLAMA_8B}, which provider {EXAMPLE_PROVIDER}@v1 serves",
        f"{name}: the tool counted tokens with Qwen/Qwen3-4B-Instruct-2507-FP8 "
        "(input_config.tokenizer.name)",
    ]
    # The record says the same to an auditor.
    assert [n for n in findings_notes(result) if "cannot be compared" in n] == [
        result.notes[0].removeprefix(f"{name}: ")
    ]


def test_a_local_path_is_a_note(registry: Database) -> None:
    (result,) = run(registry, LOCAL_PATH, BIG)
    # The path the fixture's own run served from (its model_id), read from the file.
    model = json.loads(path_of(LOCAL_PATH).read_text())["model_id"]
    assert model.startswith("/")
    assert result.record.content["measured_model"] == model
    (note,) = [n for n in result.notes if "cannot be compared" in n]
    assert f"the file names the model {model!r} (model_id)" in note


def test_a_provider_model_name_that_is_no_repo_id_is_a_note(registry: Database) -> None:
    register_provider(registry, serving("llama-8b", name="llama-alias"))
    (result,) = run(registry, EXP7, "llama-alias")
    assert result.notes == [
        f"{path_of(EXP7).name}: the provider's model.name 'llama-8b' (llama-alias@v1) is not a "
        f"Hugging Face id (org/name), so the file's model {LLAMA_8B} (model_id) cannot be "
        "compared with it"
    ]


# ---- what a repo id means -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "repo"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("Qwen/Qwen3-4B-Instruct-2507-FP8", "Qwen/Qwen3-4B-Instruct-2507-FP8"),
        ("/models/hub/models--Qwen--Qwen3-8B/snapshots/9c9", "Qwen/Qwen3-8B"),
        ("qwen3-4b", None),  # a served alias
        ("llama3.1:8b", None),  # an Ollama tag
        ("/models/Meta-Llama-3-8B-Instruct", None),
        ("./weights/llama", None),
        ("~/models/llama", None),
        ("https://huggingface.co/meta-llama/Llama-3.1-8B", None),
    ],
)
def test_hf_id(name: str, repo: str | None) -> None:
    assert hf_id(name) == repo


def provider_model(model: str) -> ProviderProfile:
    return ProviderProfile.model_validate(serving(model))


@pytest.mark.parametrize(
    ("measured", "served", "same"),
    [
        (LLAMA_8B, LLAMA_8B, True),
        (LLAMA_8B, LLAMA_8B.upper(), True),
        ("meta-llama/Llama-3.1-8B", LLAMA_8B, False),  # base vs instruct
        (LLAMA_8B, "meta-llama/Llama-3.1-8B-Instruct-FP8", False),  # another quantisation
        ("RedHatAI/Llama-3.1-8B-Instruct-FP8", "RedHatAI/Llama-3.1-8B-Instruct-FP8", True),
        ("hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", LLAMA_8B, False),
    ],
)
def test_a_quantised_instruct_or_base_variant_is_another_model(
    measured: str, served: str, same: bool
) -> None:
    identity = Identity(models=names(measured, "model_id"))
    if same:
        assert check_models(identity, provider_model(served), ref="p@v1", source="f") == []
        return
    with pytest.raises(InvalidInput) as caught:
        check_models(identity, provider_model(served), ref="p@v1", source="f")
    assert caught.value.problems[0].loc == "model"


# ---- GPUs: AIPerf's DCGM telemetry ------------------------------------------------------------


def with_gpus(*gpu_names: str) -> bytes:
    """The AIPerf example run as if `--gpu-telemetry` had reached DCGM (aiperf's
    TelemetryExportData: endpoints -> gpus -> gpu_name)."""

    def change(doc: dict[str, Any]) -> None:
        gpus = {
            f"GPU-{i:04d}": {"gpu_index": i, "gpu_name": n, "gpu_uuid": f"GPU-{i:04d}"}
            for i, n in enumerate(gpu_names)
        }
        doc["telemetry_data"] = {
            "summary": {"endpoints_configured": ["http://localhost:9401/metrics"]},
            "endpoints": {"localhost:9401": {"gpus": gpus}},
        }

    return edited(AIPERF, change)


@pytest.mark.parametrize(
    ("gpu_name", "family"),
    [  # DCGM's modelName, as AIPerf exports it, reads as the manifests' family
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 PCIe", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA A10G", "A10G"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA GeForce RTX 5090", None),
    ],
)
def test_dcgm_gpu_names_have_the_manifests_families(gpu_name: str, family: str | None) -> None:
    found = accelerator_family(gpu_name)
    assert (found.name if found else None) == family


def test_gpus_of_the_providers_family_are_stored(registry: Database) -> None:
    provider = provider_for(AIPERF)  # H100-SXM-80GB
    (result,) = run(registry, AIPERF, provider, data=with_gpus(*["NVIDIA H100 80GB HBM3"] * 8))
    assert result.record.content["measured_accelerators"] == ["NVIDIA H100 80GB HBM3"]
    assert "GPUs NVIDIA H100 80GB HBM3 x8, from the file (telemetry_data" in " ".join(
        findings_notes(result)
    )
    assert result.notes == []


def test_gpus_of_another_family_are_refused_naming_both(registry: Database) -> None:
    big = serving("openai/gpt-oss-20b", name="gpt-oss-h200", accelerator=H200)
    register_provider(registry, big)
    with pytest.raises(InvalidInput) as caught:
        run(registry, AIPERF, "gpt-oss-h200", data=with_gpus("NVIDIA H100 80GB HBM3"))
    (problem,) = caught.value.problems
    assert problem.loc == "accelerator"
    assert problem.message.startswith(
        "the file's GPU telemetry names NVIDIA H100 80GB HBM3 "
        "(telemetry_data.endpoints.*.gpus.*.gpu_name); provider gpt-oss-h200@v1 runs "
        "H200-SXM-141GB (H200, not H100)"
    )


def test_gpus_that_include_the_providers_family_or_have_none_are_notes(
    registry: Database,
) -> None:
    provider = provider_for(AIPERF)
    (mixed,) = run(registry, AIPERF, provider, data=with_gpus("NVIDIA H100 PCIe", "NVIDIA A10G"))
    assert "also names NVIDIA A10G" in " ".join(mixed.notes)
    (unknown,) = run(registry, AIPERF, provider, data=with_gpus("NVIDIA GeForce RTX 5090"))
    assert "not all of an accelerator family capgate knows: not compared" in " ".join(unknown.notes)


# ---- the serving runtime --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "note"),
    [
        ("vllm==0.10.2", None),
        (
            "vllm==0.10.1",
            "measured vllm 0.10.1; provider llama31-8b-h100-vllm@v1 runs vllm 0.10.2: another "
            "release of the same minor version, so the evidence stands for it (the gate "
            "compares major.minor)",
        ),
        (
            "vllm==0.9.2",
            "measured vllm 0.9.2; provider llama31-8b-h100-vllm@v1 runs vllm 0.10.2 (another "
            "minor version): not representative of it, so the gate counts this evidence stale "
            "for plans on llama31-8b-h100-vllm",
        ),
        ("sglang==0.4.4", "(another serving runtime): not representative of it"),
    ],
)
def test_a_runtime_release_apart_is_a_note(
    registry: Database, runtime: str, note: str | None
) -> None:
    stated = parse_runtime(runtime, loc="--runtime")
    (result,) = run(registry, EXP7, EXAMPLE_PROVIDER, runtime=stated)
    held = [n for n in result.notes if "runtime" in n or "measured " in n]
    if note is None:
        assert held == []
        return
    (shown,) = held
    assert note in shown
    assert shown.removeprefix(f"{path_of(EXP7).name}: ") in findings_notes(result)


# ---- the CLI and the API ----------------------------------------------------------------------


def test_cli_issue_27_llama_8b_on_h100_for_a_70b_h200_provider_exits_2(
    env: dict[str, str], database_url: str
) -> None:
    database = Database(database_url)
    register_provider(database, big_provider())
    database.engine.dispose()
    path = path_of(EXP7)
    # The file states no replica count; its run had two (llm-d's experiment 7).
    against = ("--workload", "chat-assistant", "--class", "interactive", "--replicas", "2")
    result = capgate("evidence", "import", str(path), *against, "--provider", BIG, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert f"model: the file measured {LLAMA_8B} (model_id); provider {BIG}@v1 serves" in line
    assert BIG_MODEL in line
    ok = capgate(
        "evidence", "import", str(path), *against, "--provider", EXAMPLE_PROVIDER, "--json", env=env
    )
    assert ok.returncode == 0, ok.stderr
    (item,) = json.loads(ok.stdout)
    assert item["record"]["content"]["measured_model"] == LLAMA_8B


def test_cli_alias_note_is_on_stderr(env: dict[str, str]) -> None:
    path = path_of(ALIAS)
    result = capgate(
        "evidence",
        "import",
        str(path),
        *("--workload", "chat-assistant", "--provider", EXAMPLE_PROVIDER),
        *("--class", "interactive", "--replicas", "1"),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert f"note: {path}: the file names the model 'qwen3-4b'" in result.stderr


def test_api_another_model_is_422_naming_the_field(registry: Database) -> None:
    path = path_of(EXP7)
    data = {
        "workload": "chat-assistant",
        "provider": BIG,
        "traffic_class": "interactive",
        "replicas": "2",
    }
    files = [("files", (path.name, path.read_bytes(), "application/json"))]
    with client_for(registry, "ci-bot") as client:
        response = client.post("/v1/evidence/import", files=files, data=data)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "InvalidInput"
    (problem,) = body["problems"]
    assert problem["loc"] == "model"
    assert LLAMA_8B in problem["message"] and BIG_MODEL in problem["message"]


# ---- the worked example, mixed tests, old records ---------------------------------------------


def test_the_worked_example_still_imports_with_its_model(registry: Database) -> None:
    result = import_example_evidence(registry)
    content = result.record.content
    assert result.record.ref == f"{EXAMPLE_EVIDENCE}@v1"
    assert content["measured_model"] == LLAMA_8B
    assert result.notes == []
    notes = content["findings"]["notes"]
    assert f"[interactive] model {LLAMA_8B}, from the file (input_config.models.items[].name)" in (
        notes
    )


def test_a_mixed_test_whose_files_name_two_models_is_refused(registry: Database) -> None:
    def qwen(doc: dict[str, Any]) -> None:
        doc["input_config"]["models"]["items"] = [{"name": "Qwen/Qwen3-8B"}]

    with pytest.raises(InvalidInput) as caught:
        import_example_evidence(registry, edit=qwen)
    (problem,) = caught.value.problems
    assert problem.loc == "model"
    assert "Qwen/Qwen3-8B" in problem.message


def test_a_mixed_test_for_another_models_provider_is_refused(registry: Database) -> None:
    with pytest.raises(InvalidInput) as caught:
        import_example_evidence(registry, provider=BIG, plan=None)
    assert caught.value.problems[0].loc == "model"


def test_records_without_the_fields_dump_as_before() -> None:
    record = validate_record(RecordKind.evidence, example(RecordKind.evidence))
    assert isinstance(record, LoadTestEvidence)
    dumped = record.model_dump(mode="json")
    assert "measured_model" not in dumped and "measured_accelerators" not in dumped
    stated = record.model_copy(update={"measured_model": LLAMA_8B})
    assert stated.model_dump(mode="json")["measured_model"] == LLAMA_8B
