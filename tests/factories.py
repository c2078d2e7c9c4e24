"""Plain functions that build records for tests, starting from the worked example."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.records.documents import load_document
from registry.records.kinds import RecordKind

if TYPE_CHECKING:
    from registry.storage.database import Database

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "chat-assistant"


def example(kind: RecordKind | str, **changes: Any) -> dict[str, Any]:
    """The worked example's document for `kind`, with top-level fields replaced."""
    kind = RecordKind(kind)
    document = copy.deepcopy(load_document(EXAMPLE_DIR / f"{kind.value}.yaml"))
    document.update(changes)
    return document


def example_path(kind: RecordKind | str) -> Path:
    return EXAMPLE_DIR / f"{RecordKind(kind).value}.yaml"


def short_grace_plan() -> dict[str, Any]:
    """The example plan with a grace period shorter than its longest streams: the
    drain_configured policy denies it."""
    plan = example("plan")
    plan["drain"]["termination_grace_period_s"] = 30
    plan["drain"]["pre_stop"]["timeout_s"] = 20
    return plan


def short_grace_plan_file(folder: Path) -> Path:
    """short_grace_plan() as a YAML file in ``folder``, for the CLI."""
    import yaml

    path = folder / "plan-short-grace.yaml"
    path.write_text(yaml.safe_dump(short_grace_plan()))
    return path


# The kinds the worked example has a file for (waivers are exceptions it does not need).
EXAMPLE_KINDS = [RecordKind.workload, RecordKind.provider, RecordKind.plan, RecordKind.evidence]


# ---- the worked example's load test, imported as a user imports it ----------------------

LOAD_TEST_DIR = EXAMPLE_DIR / "load-test"
EXAMPLE_EVIDENCE = "chat-assistant-h100-mixed-2026-11"
# When the example's load test ran (its files' own clock has no zone; this is what the
# worked example passes as --measured-at).
EXAMPLE_MEASURED_AT = "2026-11-24T14:05:00+00:00"


def load_test_bytes(traffic_class: str, run: int = 0) -> bytes:
    """One class's result file of the example's load test; run N > 0 is a re-run of it.

    A re-run is another load test with the same figures: another file, other bytes (its
    benchmark id differs), as a real re-run's file would be.
    """
    data = (LOAD_TEST_DIR / f"{traffic_class}.profile_export_aiperf.json").read_bytes()
    if run:
        doc = json.loads(data)
        doc["benchmark_id"] = f"{doc['benchmark_id']}-rerun-{run}"
        data = json.dumps(doc, indent=1).encode()
    return data


# The instant this test process started: example_import dates the load test from it, not
# from each call's clock, so every test of a worker uploads the same evidence content and
# the planner's in-process cache (keyed by the plan's inputs, the evidence's time among
# them) sizes the example once per worker, not once per test (seconds each). A session
# lasts minutes: "6 days ago" stays 6 days ago to within that.
PROCESS_STARTED = datetime.now(UTC)


def example_import(plan: str = "chat-assistant-prod", days_ago: float = 6) -> dict[str, Any]:
    """``POST /v1/evidence/import`` arguments (form data and files) for the example's load
    test against ``plan``, measured ``days_ago`` (within the 90-day freshness limit), as a
    pipeline uploads it."""
    classes = ("interactive", "batch")
    return {
        "data": {
            "workload": "chat-assistant",
            "provider": "llama31-8b-h100-vllm",
            "plan": plan,
            "replicas": "1",
            "measured_at": (PROCESS_STARTED - timedelta(days=days_ago)).isoformat(),
            "name": EXAMPLE_EVIDENCE,
            "traffic_class": [f"{c}={c}.json" for c in classes],
        },
        "files": [
            ("files", (f"{c}.json", load_test_bytes(c), "application/json")) for c in classes
        ],
    }


def write_load_test(folder: Path, run: int = 0) -> list[str]:
    """Write the example's two result files into `folder`; the CLI's --class arguments."""
    args: list[str] = []
    for traffic_class in ("interactive", "batch"):
        path = folder / f"{traffic_class}-run{run}.profile_export_aiperf.json"
        path.write_bytes(load_test_bytes(traffic_class, run))
        args += ["--class", f"{traffic_class}={path}"]
    return args


def import_example_evidence(
    database: Any,
    *,
    measured_at: str = EXAMPLE_MEASURED_AT,
    workload: str = "chat-assistant",
    provider: str = "llama31-8b-h100-vllm",
    plan: str | None = "chat-assistant-prod",
    run: int = 0,
    principal: str = "alice",
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Import the example's load test (both classes, run together) through the import path.

    ``edit`` changes each class's result file (its parsed JSON) before the import: the same
    test run another way, as a user's own file would differ.
    """
    from datetime import datetime

    from registry.importers.service import ImportFile, ImportOptions, import_files

    def data(traffic_class: str) -> bytes:
        raw = load_test_bytes(traffic_class, run)
        if edit is None:
            return raw
        doc = json.loads(raw)
        edit(doc)
        return json.dumps(doc, indent=1).encode()

    files = [
        ImportFile(name=f"{c}.profile_export_aiperf.json", data=data(c), traffic_class=c)
        for c in ("interactive", "batch")
    ]
    options = ImportOptions(
        workload=workload,
        provider=provider,
        plan=plan,
        replicas=1,
        measured_at=datetime.fromisoformat(measured_at),
        name=EXAMPLE_EVIDENCE,
        mixed=True,
    )
    (result,) = import_files(database, files, options, principal=principal)
    return result


# ---- a vLLM bench summary, for import options every tool shares -------------------------

VLLM_END = datetime(2026, 11, 20, 12, 0, 0)  # vLLM writes its date when the run ends


def vllm_summary(
    *, end: datetime = VLLM_END, duration: float = 600.0, rate: float = 4.0, **kw: Any
) -> bytes:
    doc: dict[str, Any] = {
        "date": end.strftime("%Y%m%d-%H%M%S"),
        "backend": "vllm",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 2400,
        "request_rate": rate,
        "burstiness": 1.0,
        "duration": duration,
        "completed": 2376,
        "failed": 24,
        "total_input_tokens": 2376 * 700,
        "total_output_tokens": 2376 * 180,
        "request_throughput": 3.96,
        "output_throughput": 712.8,
        "total_token_throughput": 3484.8,
        "mean_ttft_ms": 80.0,
        "median_ttft_ms": 60.0,
        "p99_ttft_ms": 420.0,
        "mean_tpot_ms": 16.0,
        "median_tpot_ms": 15.0,
        "p99_tpot_ms": 29.0,
        "mean_itl_ms": 15.5,
        "median_itl_ms": 14.0,
        "p99_itl_ms": 40.0,
        "mean_e2el_ms": 3000.0,
        "median_e2el_ms": 2600.0,
        "p99_e2el_ms": 9000.0,
    }
    doc.update(kw)
    return json.dumps(doc).encode()


def approve_waiver(
    database: Database, ref: str, *, by: str = "approver-carol", at: datetime | None = None
) -> None:
    """The second pair of eyes: a waiver applies only once someone else approves it."""
    from registry.gate.waiver_approvals import approve

    database.write(
        lambda ctx: approve(ctx, ref=ref, comment="reviewed"),
        principal=by,
        now=(lambda: at) if at is not None else None,
    )
