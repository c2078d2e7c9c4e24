"""The worked example's section of docs/planner.md, generated from a recomputation.

    python -m benchmarks.planner.example_doc     # rewrite the section

Figures quoted by hand went stale with every model change; this recomputes the example
plan (examples/chat-assistant/) without evidence and calibrated on its load test, and
writes what a reader would check.
"""

from __future__ import annotations

from pathlib import Path

from registry.planner.recomputation import recompute
from registry.planner.result import PlanRecomputation
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "planner.md"
EXAMPLE = ROOT / "examples" / "chat-assistant"
START, END = "<!-- generated: worked example -->", "<!-- end generated: worked example -->"


def _load(kind: RecordKind) -> object:
    return validate_record(kind, load_document(EXAMPLE / f"{kind.value}.yaml"))


def recomputations() -> tuple[PlanRecomputation, PlanRecomputation]:
    plan, workload, provider = (
        _load(RecordKind.plan),
        _load(RecordKind.workload),
        _load(RecordKind.provider),
    )
    evidence = _load(RecordKind.evidence)
    bare = recompute(plan, workload, provider, seed=0)  # type: ignore[arg-type]
    calibrated = recompute(plan, workload, provider, evidence=[evidence], seed=0)  # type: ignore[arg-type,list-item]
    return bare, calibrated


def _summary(result: PlanRecomputation) -> str:
    sizing = result.sizing
    options = ", ".join(
        f"TP={o.tensor_parallel} needs {o.gpus_at_peak} GPUs"
        for o in sizing.tp_options
        if o.gpus_at_peak is not None
    )
    scenarios = "; ".join(
        f"{s.name} ({s.ready_replicas} ready): {'SLOs met' if s.slo_met else 'SLOs missed'}"
        for s in result.scenarios.values()
    )
    peak = result.scenarios["peak"].per_class
    p99 = "; ".join(
        f"{name} TTFT {p.ttft_p99_ms:.0f} ms, TPOT {p.tpot_p99_ms:.1f} ms, "
        f"e2e {p.e2e_p99_ms:.0f} ms"
        for name, p in peak.items()
        if p.ttft_p99_ms is not None and p.tpot_p99_ms is not None and p.e2e_p99_ms is not None
    )
    cal = result.calibration
    fit = (
        f"calibrated to MBU {cal.mbu:.2f}, MFU {cal.mfu:.2f} on {', '.join(cal.source_evidence)}"
        f" (RMS log error {cal.fit_error:.3f})"
        if cal.fitted and cal.fit_error is not None
        else f"default efficiencies (MBU {cal.mbu:.2f}, MFU {cal.mfu:.2f})"
    )
    return (
        f"{fit}: **{sizing.min_ready_replicas_at_peak}** ready replicas at peak, "
        f"{sizing.warmup_headroom_replicas} of warm-up headroom, recommended "
        f"{sizing.recommended_total_replicas} ("
        + ", ".join(f"{z} {n}" for z, n in sizing.recommended_replicas_per_zone.items())
        + "); "
        f"TP={sizing.tensor_parallel} chosen ({options}). Scenarios: {scenarios}. Peak p99: "
        f"{p99}. KV cache {result.memory.kv_cache_gib:.1f} GiB per replica."
    )


def section(results: tuple[PlanRecomputation, PlanRecomputation] | None = None) -> str:
    bare, calibrated = results or recomputations()
    return "\n".join(
        [
            f"The plan runs {bare.sizing.plan_total_replicas} replicas over "
            f"{len(bare.sizing.recommended_replicas_per_zone)} zones "
            f"(`{bare.planner_version}`).",
            "",
            f"- Without evidence, {_summary(bare)}",
            f"- With `evidence.yaml`, {_summary(calibrated)}",
        ]
    )


def render(text: str, results: tuple[PlanRecomputation, PlanRecomputation] | None = None) -> str:
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{section(results)}\n{END}{after}"


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
