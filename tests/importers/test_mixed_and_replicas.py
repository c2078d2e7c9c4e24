"""Import options every tool shares: replicas, failed runs, and mixed-class tests.

The result files here are synthetic vLLM summaries written by the tests themselves (the
tool's documented keys), so each figure is known exactly; real files are tested per tool.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import pytest

from registry.errors import InvalidInput
from registry.importers import import_class_files, import_result_file_with_findings
from registry.records.evidence import EntryKind
from tests.factories import VLLM_END as END
from tests.factories import vllm_summary


def imported(data: bytes, **kw: Any) -> Any:
    args: dict[str, Any] = {"file_name": "run.json", "workload": "w@v1", "provider": "p@v1"}
    args.update(kw)
    return import_result_file_with_findings(data, **args)


def test_replicas_are_required_when_the_file_does_not_state_them() -> None:
    with pytest.raises(InvalidInput) as error:
        imported(vllm_summary())
    assert error.value.problems[0].loc == "--replicas"
    assert "pass --replicas N" in error.value.one_line()
    (stage,) = imported(vllm_summary(), replicas=4)
    assert stage.evidence.offered.replicas == 4
    assert stage.evidence.provenance.replicas_source == "flag"
    assert stage.evidence.provenance.entry is EntryKind.imported


def test_a_run_with_no_completed_request_is_refused_naming_the_file() -> None:
    zero = vllm_summary(completed=0, failed=8, num_prompts=8, mean_ttft_ms=0.0, p99_ttft_ms=0.0)
    with pytest.raises(InvalidInput) as error:
        imported(zero, file_name="failed-run.json", replicas=1)
    line = error.value.one_line()
    assert line.startswith("failed-run.json")
    assert "completed: 0" in line
    assert "failed: 8" in line


def test_failures_are_kept_so_the_error_rate_can_be_judged() -> None:
    (stage,) = imported(vllm_summary(), replicas=1)
    result = stage.evidence.results.per_class["default"]
    assert (result.completed, result.failed) == (2376, 24)


def test_mixed_classes_run_together_become_one_record() -> None:
    chat = vllm_summary(rate=6.0)
    batch = vllm_summary(rate=2.0, end=END + timedelta(seconds=30), completed=1180, failed=0)
    stage = import_class_files(
        [("interactive", "chat.json", chat), ("batch", "batch.json", batch)],
        workload="w@v1",
        provider="p@v1",
        replicas=2,
    )
    ev = stage.evidence
    assert ev.offered.classes == ["interactive", "batch"]
    assert ev.offered.request_rate_rps == 8.0  # the two generators' rates add up
    assert ev.offered.replicas == 2
    assert set(ev.results.per_class) == {"interactive", "batch"}
    assert ev.results.per_class["batch"].completed == 1180
    assert ev.results.per_class["interactive"].failed == 24
    # The window spans both runs: from the earlier start to the later end (630 s).
    assert ev.offered.duration_s == pytest.approx(630.0)
    assert ev.measured_at == (END - timedelta(seconds=600)).replace(tzinfo=UTC)
    assert [f.traffic_class for f in ev.provenance.files] == ["interactive", "batch"]
    assert len({f.sha256 for f in ev.provenance.files}) == 2
    assert ev.provenance.entry is EntryKind.imported
    assert any("common window 570 s" in n for n in ev.findings.notes)


def test_mixed_classes_from_different_runs_are_refused() -> None:
    chat = vllm_summary()
    later = vllm_summary(end=END + timedelta(hours=2))
    with pytest.raises(InvalidInput) as error:
        import_class_files(
            [("interactive", "chat.json", chat), ("batch", "batch.json", later)],
            workload="w@v1",
            provider="p@v1",
            replicas=1,
        )
    assert error.value.problems[0].loc == "--class"
    assert "do not overlap" in error.value.one_line()


def test_mixed_class_files_must_agree_on_replicas() -> None:
    chat = vllm_summary()
    with pytest.raises(InvalidInput) as error:
        import_class_files(
            [("interactive", "chat.json", chat), ("interactive", "again.json", chat)],
            workload="w@v1",
            provider="p@v1",
            replicas=1,
        )
    assert "more than one file" in error.value.one_line()


def test_files_that_name_their_class_combine_without_flags() -> None:
    chat = vllm_summary(rate=6.0, traffic_class="interactive")
    batch = vllm_summary(rate=2.0, traffic_class="batch")
    stage = import_class_files(
        [("", "chat.json", chat), ("", "batch.json", batch)],
        workload="w@v1",
        provider="p@v1",
        replicas=1,
    )
    assert stage.evidence.offered.classes == ["interactive", "batch"]
    assert stage.evidence.offered.request_rate_rps == 8.0
    unlabelled = vllm_summary(rate=2.0)
    with pytest.raises(InvalidInput) as error:
        import_class_files(
            [("", "chat.json", chat), ("", "plain.json", unlabelled)],
            workload="w@v1",
            provider="p@v1",
            replicas=1,
        )
    assert error.value.source == "plain.json"
    assert "names no traffic class" in error.value.one_line()
