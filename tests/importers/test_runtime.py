"""The serving runtime an imported test measured: from the file, or stated at import.

Only vLLM bench files can state it, through ``--metadata`` (``vllm_version=0.8.5``,
``runtime=NAME==VERSION``, or ``runtime_name`` with ``runtime_version``); no tool writes
the server's version by itself. Every other format states none: ``--runtime`` says it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.importers import import_class_files, import_result_file_with_findings
from registry.importers.runtime import parse_runtime
from registry.importers.service import ImportFile, ImportOptions, import_files
from registry.records import service
from registry.records.evidence import LoadTestEvidence, RuntimeInfo
from registry.records.kinds import RecordKind
from registry.storage.database import Database
from tests.factories import VLLM_END, load_test_bytes, vllm_summary
from tests.importers.helpers import load
from tests.importers.test_import_service import submit_example

VLLM_085 = RuntimeInfo(name="vllm", version="0.8.5")


def imported(data: bytes, **kw: Any) -> LoadTestEvidence:
    args: dict[str, Any] = {
        "file_name": "run.json",
        "workload": "w@v1",
        "provider": "p@v1",
        "replicas": 1,
    }
    args.update(kw)
    (stage,) = import_result_file_with_findings(data, **args)
    return stage.evidence


# ---- from the file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "runtime", "basis"),
    [
        ({"vllm_version": "0.8.5"}, VLLM_085, "metadata vllm_version"),
        ({"vllm_version": "v0.8.5"}, VLLM_085, "metadata vllm_version"),
        (
            {"runtime": "sglang==0.4.4.post1"},
            RuntimeInfo(name="sglang", version="0.4.4.post1"),
            "metadata runtime",
        ),
        (
            {"runtime_name": "vllm", "runtime_version": "0.10.2+cu128"},
            RuntimeInfo(name="vllm", version="0.10.2+cu128"),
            "metadata runtime_name, runtime_version",
        ),
        (
            {"vllm_version": "0.8.5", "runtime": "vllm==0.8.5"},
            VLLM_085,
            "metadata vllm_version, runtime",
        ),
    ],
    ids=["vllm_version", "image tag form", "runtime", "name and version", "two that agree"],
)
def test_vllm_metadata_states_the_runtime(
    metadata: dict[str, str], runtime: RuntimeInfo, basis: str
) -> None:
    evidence = imported(vllm_summary(**metadata))
    assert evidence.runtime == runtime
    assert evidence.findings is not None
    assert f"serving runtime {runtime.describe()}, from the file ({basis})" in (
        evidence.findings.notes
    )
    # Read, so no longer listed among the unknown --metadata keys.
    assert not any(n.startswith("keys from --metadata") for n in evidence.findings.notes)
    # The tool is vLLM's client; its version is not the server's.
    assert evidence.tool.name == "vllm-bench" and evidence.tool.version is None


@pytest.mark.parametrize(
    ("metadata", "loc", "says"),
    [
        ({"vllm_version": "latest"}, "vllm_version", "'latest' is not a runtime version"),
        ({"runtime": "vllm"}, "runtime", "is not NAME==VERSION"),
        ({"runtime_name": "vllm", "runtime_version": "nightly"}, "runtime_version", "nightly"),
        ({"vllm_version": "0.8.5", "runtime": "sglang==0.4.4"}, "runtime", "vllm 0.8.5"),
    ],
    ids=["not a version", "no version", "pair", "two that disagree"],
)
def test_unreadable_or_contradicting_runtime_metadata_is_refused(
    metadata: dict[str, str], loc: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as error:
        imported(vllm_summary(**metadata))
    assert error.value.problems[0].loc == loc
    assert says in error.value.one_line()


def test_half_a_runtime_in_metadata_is_noted_not_read() -> None:
    evidence = imported(vllm_summary(runtime_version="0.8.5"))
    assert evidence.runtime is None
    assert evidence.findings is not None
    assert any("runtime_version=0.8.5 without runtime_name" in n for n in evidence.findings.notes)


def test_each_appended_result_states_its_own_runtime() -> None:
    rows = [
        json.loads(vllm_summary(vllm_version="0.8.5")),
        json.loads(vllm_summary(vllm_version="latest")),
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    with pytest.raises(InvalidInput) as error:
        import_result_file_with_findings(
            data, file_name="runs.jsonl", workload="w@v1", provider="p@v1", replicas=1
        )
    assert error.value.problems[0].loc == "line 2.vllm_version"


def test_a_real_vllm_file_framework_key_is_not_a_runtime() -> None:
    """`framework` (a user's own --metadata key, a name without a version) is kept as a note."""
    stages = load(
        "vllm-bench/nerdalert__vllm-benchmark-graphs__h100-llama31-8b-vllm-vs-sgl-appended-results.json"
    )
    assert all(s.evidence.runtime is None for s in stages)
    assert any("framework=sgl" in n for s in stages for n in s.findings.notes)


@pytest.mark.parametrize(
    "rel",
    [
        "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json",
        "guidellm/llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json",
        "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-sdk2501.json",
        "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json",
        "aiperf/akamaslabs__vllm-benchmark__g7-4500-no-mig-concurrency64.json",
    ],
)
def test_real_files_state_no_runtime_and_the_flag_says_it(rel: str) -> None:
    stages = load(rel)
    assert all(s.evidence.runtime is None for s in stages)
    assert all("runtime" not in s.evidence.model_dump(mode="json") for s in stages)
    stated = load(rel, runtime=VLLM_085)
    assert all(s.evidence.runtime == VLLM_085 for s in stated)
    assert all(
        "serving runtime vllm 0.8.5, stated at import (--runtime)" in s.findings.notes
        for s in stated
    )


# ---- stated at import ------------------------------------------------------------------


def test_a_stated_runtime_is_stored_and_may_repeat_the_file() -> None:
    assert imported(vllm_summary(), runtime=VLLM_085).runtime == VLLM_085
    same = RuntimeInfo(name="vLLM", version="0.8.5")
    assert imported(vllm_summary(vllm_version="0.8.5"), runtime=same).runtime == VLLM_085


def test_a_stated_runtime_contradicting_the_file_is_refused_naming_both() -> None:
    with pytest.raises(InvalidInput) as error:
        imported(
            vllm_summary(vllm_version="0.8.5"),
            runtime=RuntimeInfo(name="vllm", version="0.6.3"),
        )
    assert error.value.problems[0].loc == "--runtime"
    line = error.value.one_line()
    assert line.startswith("run.json: --runtime: ")
    assert "the file states runtime vllm 0.8.5 (metadata vllm_version)" in line
    assert "--runtime vllm==0.6.3 was given" in line


@pytest.mark.parametrize(
    ("text", "runtime"),
    [
        ("vllm==0.8.5", VLLM_085),
        (" vllm == v0.8.5 ", VLLM_085),
        ("sglang==0.4.4.post1", RuntimeInfo(name="sglang", version="0.4.4.post1")),
    ],
)
def test_runtime_syntax(text: str, runtime: RuntimeInfo) -> None:
    assert parse_runtime(text, loc="--runtime") == runtime


@pytest.mark.parametrize("text", ["vllm", "vllm=0.8.5", "==0.8.5", "vllm==", "vllm==latest"])
def test_bad_runtime_syntax_names_the_field(text: str) -> None:
    with pytest.raises(InvalidInput) as error:
        parse_runtime(text, loc="--runtime")
    assert error.value.problems[0].loc == "--runtime"
    assert error.value.one_line().startswith("--runtime: ")


# ---- mixed tests -----------------------------------------------------------------------


def mixed(chat: bytes, batch: bytes, **kw: Any) -> LoadTestEvidence:
    return import_class_files(
        [("interactive", "chat.json", chat), ("batch", "batch.json", batch)],
        workload="w@v1",
        provider="p@v1",
        replicas=1,
        **kw,
    ).evidence


def later(**kw: Any) -> bytes:
    return vllm_summary(rate=2.0, end=VLLM_END + timedelta(seconds=30), **kw)


def test_a_mixed_test_runs_one_runtime() -> None:
    assert mixed(vllm_summary(vllm_version="0.8.5"), later()).runtime == VLLM_085
    assert mixed(vllm_summary(), later(), runtime=VLLM_085).runtime == VLLM_085
    assert mixed(vllm_summary(), later()).runtime is None
    with pytest.raises(InvalidInput) as error:
        mixed(vllm_summary(vllm_version="0.8.5"), later(vllm_version="0.9.0"))
    assert error.value.problems[0].loc == "--runtime"
    assert "interactive: vllm 0.8.5, batch: vllm 0.9.0" in error.value.one_line()


# ---- through the import service, on both databases -------------------------------------


@pytest.fixture
def registry(database: Database) -> Database:
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit_example(database, kind)
    return database


def options(**kw: Any) -> ImportOptions:
    args: dict[str, Any] = {
        "workload": "chat-assistant",
        "provider": "llama31-8b-h100-vllm",
        "replicas": 1,
        "measured_at": datetime(2026, 11, 24, 14, 5, tzinfo=UTC),
        "mixed": True,
        "name": "mixed-on-vllm-0-8",
    }
    args.update(kw)
    return ImportOptions(**args)


def example_files() -> list[ImportFile]:
    return [
        ImportFile(f"{c}.profile_export_aiperf.json", load_test_bytes(c), c)
        for c in ("interactive", "batch")
    ]


def test_the_stated_runtime_is_stored_on_the_record(registry: Database) -> None:
    (result,) = import_files(
        registry, example_files(), options(runtime=VLLM_085), principal="importer"
    )
    with registry.reading() as session:
        view = service.get(session, kind=RecordKind.evidence, ref=result.record.ref)
    assert view.content["runtime"] == {"name": "vllm", "version": "0.8.5"}
    # Without --runtime the same files are another record, which states none.
    (plain,) = import_files(
        registry, example_files(), options(name="mixed-unknown-runtime"), principal="importer"
    )
    with registry.reading() as session:
        view = service.get(session, kind=RecordKind.evidence, ref=plain.record.ref)
    assert "runtime" not in view.content
