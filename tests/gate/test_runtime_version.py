"""The gate end to end: a load test measured on another serving runtime minor version.

The worked example's provider runs vllm 0.10.2. Its load test (AIPerf files, which do not
state the server's version) is imported with `--runtime`, as a user states it. Freshness
feeds the gate input's `fresh`/`stale_reasons`, and the existing evidence_fresh policy
reports it: a violation naming the reason when no other evidence is fresh, a warning when
fresh evidence also supports the plan.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from registry.gate.views import Outcome
from registry.importers.runtime import parse_runtime
from registry.importers.service import ImportFile, ImportOptions, import_files
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from tests.factories import (
    EXAMPLE_EVIDENCE,
    EXAMPLE_MEASURED_AT,
    example,
    import_example_evidence,
    load_test_bytes,
)
from tests.gate.test_gate_flow import gate, submit

PROVIDER = "llama31-8b-h100-vllm"


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


@pytest.fixture
def registered(database: Database) -> Database:
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    return database


def import_measured_on(
    database: Database,
    runtime: str,
    *,
    name: str = EXAMPLE_EVIDENCE,
    run: int = 0,
    provider: str = PROVIDER,
    plan: str = "chat-assistant-prod",
) -> str:
    """The example's load test (both classes, run together), stated to have run `runtime`."""
    files = [
        ImportFile(f"{c}.profile_export_aiperf.json", load_test_bytes(c, run), c)
        for c in ("interactive", "batch")
    ]
    options = ImportOptions(
        workload="chat-assistant",
        provider=provider,
        plan=plan,
        replicas=1,
        measured_at=datetime.fromisoformat(EXAMPLE_MEASURED_AT),
        runtime=parse_runtime(runtime, loc="--runtime"),
        name=name,
        mixed=True,
    )
    (result,) = import_files(database, files, options, principal="alice")
    return str(result.record.ref)


def evidence_fresh(decision: Any) -> list[dict[str, Any]]:
    return [v for v in decision.violations if v["policy"] == "evidence_fresh"]


def test_the_same_minor_version_supports_the_plan(
    registered: Database, engine: EmbeddedEngine
) -> None:
    import_measured_on(registered, "vllm==0.10.0")
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.allow, decision.violations
    assert [e["fresh"] for e in decision.inputs["evidence"]] == [True]


def test_only_evidence_on_another_minor_version_is_denied_naming_why(
    registered: Database, engine: EmbeddedEngine
) -> None:
    ref = import_measured_on(registered, "vllm==0.9.2")
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.deny
    (violation,) = evidence_fresh(decision)
    reason = (
        f"measured on vllm 0.9.2; the plan's provider {PROVIDER}@v1 runs vllm 0.10.2 "
        "(minor version differs)"
    )
    assert violation["rule"] == "evidence_stale"
    assert violation["message"] == f"evidence {ref} is stale: {reason}"
    assert violation["details"]["stale_reasons"] == [reason]
    (item,) = decision.inputs["evidence"]
    assert item["ref"] == ref and item["fresh"] is False


def test_beside_fresh_evidence_it_is_a_warning(
    registered: Database, engine: EmbeddedEngine
) -> None:
    import_example_evidence(registered)  # states no runtime: the provider's, vllm 0.10.2
    old = import_measured_on(registered, "vllm==0.9.2", name="chat-assistant-on-vllm-0-9", run=1)
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.allow, decision.violations
    assert evidence_fresh(decision) == []
    reason = (
        f"measured on vllm 0.9.2; the plan's provider {PROVIDER}@v1 runs vllm 0.10.2 "
        "(minor version differs)"
    )
    # The policy's note (besides the registry's own line on stale evidence).
    assert f"evidence_fresh.evidence_stale: evidence {old} is stale: {reason}" in (
        decision.warnings
    )
    fresh = {e["ref"]: e["fresh"] for e in decision.inputs["evidence"]}
    assert fresh == {f"{EXAMPLE_EVIDENCE}@v1": True, f"{old}": False}


def test_a_test_run_on_the_old_runtime_after_an_upgrade_is_denied(
    registered: Database, engine: EmbeddedEngine
) -> None:
    """The provider moves to vllm 0.11.0 and the plan with it; the new test is imported
    against the new provider version, but the cluster still ran 0.10: it says so."""
    provider = example("provider")
    provider["runtime"] = {**provider["runtime"], "version": "0.11.0"}
    provider["runtime"]["image"] = "vllm/vllm-openai:v0.11.0"
    assert submit(registered, "provider", provider) == f"{PROVIDER}@v2"
    plan = example("plan", provider=f"{PROVIDER}@v2")
    assert submit(registered, "plan", plan) == "chat-assistant-prod@v2"
    import_measured_on(
        registered, "vllm==0.10.2", provider=f"{PROVIDER}@v2", plan="chat-assistant-prod@v2"
    )
    decision = gate(registered, engine)
    assert decision.outcome is Outcome.deny
    (violation,) = evidence_fresh(decision)
    assert violation["details"]["stale_reasons"] == [
        f"measured on vllm 0.10.2; the plan's provider {PROVIDER}@v2 runs vllm 0.11.0 "
        "(minor version differs)"
    ]
