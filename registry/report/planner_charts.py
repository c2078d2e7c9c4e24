"""The report's charts of how the recomputation got its figures: the warm-up timeline at the
fastest growth, the calibration's predicted against measured latency, and memory per GPU.
"""

from __future__ import annotations

from registry.planner.result import PlanRecomputation
from registry.report import svg
from registry.report.chart import (
    METRICS,
    Chart,
    make_bar_chart,
    make_line_chart,
    ms_text,
)
from registry.report.svg_scales import format_number as fmt
from registry.report.warmup import WarmupTimeline


def warmup(line: WarmupTimeline, prefix: str) -> Chart:
    rules = []
    if line.start_capacity_rps is not None:
        rules.append(
            svg.Rule(
                f"{line.start_replicas} ready replicas carry {fmt(line.start_capacity_rps)} req/s",
                line.start_capacity_rps,
            )
        )
        assert line.zone_lost_capacity_rps is not None
        rules.append(
            svg.Rule(
                f"largest zone lost: {line.zone_lost_replicas} carry "
                f"{fmt(line.zone_lost_capacity_rps)} req/s",
                line.zone_lost_capacity_rps,
            )
        )
    x_rules = []
    if line.scale_up_at_s > 0:
        x_rules.append(svg.Rule(f"scale-up asked {fmt(line.scale_up_at_s)} s", line.scale_up_at_s))
    x_rules.append(svg.Rule(f"new replica ready {fmt(line.ready_at_s)} s", line.ready_at_s))
    if line.probe_gives_up_at_s is not None:
        x_rules.append(
            svg.Rule(
                f"startup probe gives up {fmt(line.probe_gives_up_at_s)} s",
                line.probe_gives_up_at_s,
            )
        )
    title = "Warm-up at the fastest growth: offered load and ready capacity"
    capacity = "No replica count met the SLOs, so the capacity of a ready replica is unknown."
    if line.per_replica_rps is not None:
        capacity = (
            f"The {line.start_replicas} replicas ready at the start ({line.start_basis}) carry "
            f"{fmt(line.start_replicas * line.per_replica_rps)} req/s within the SLOs "
            f"({fmt(line.per_replica_rps)} req/s each), "
            f"{fmt(line.zone_lost_replicas * line.per_replica_rps)} req/s with the largest "
            "zone lost."
        )
    probe = (
        " The startup probe gives up before the replica is ready: it would be restarted."
        if line.probe_too_short
        else ""
    )
    summary = (
        f"The load rises from {fmt(line.mean_rps)} to {fmt(line.peak_rps)} req/s within "
        f"{fmt(line.rise_s)} s. A replica asked for when it begins (after the autoscaler's "
        f"scale-up stabilisation of {fmt(line.scale_up_at_s)} s) is ready "
        f"{fmt(line.warmup_s)} s later ({line.warmup_basis}), at {fmt(line.ready_at_s)} s, "
        f"when the load is {fmt(line.load_at_ready_rps)} req/s. {capacity}"
        f" The recomputation's warm-up headroom is {line.headroom_replicas} replica(s).{probe}"
    )
    chart_id = f"{prefix}-warmup"
    return make_line_chart(
        chart_id,
        title,
        summary,
        x_label="seconds since the load began to rise",
        y_label="req/s",
        series=[svg.Series("offered load", line.load)],
        y_rules=rules,
        x_rules=x_rules,
        points=[
            svg.Point(
                f"load when the new replica is ready: {fmt(line.load_at_ready_rps)} req/s",
                line.ready_at_s,
                line.load_at_ready_rps,
            )
        ],
        x_zero=True,
    )


def calibration(result: PlanRecomputation, prefix: str) -> Chart | None:
    c = result.calibration
    residuals = [r for r in c.residuals if r.predicted_ms is not None and r.measured_ms > 0]
    if not residuals:
        return None
    groups: dict[str, list[tuple[float, float]]] = {}
    for r in residuals:
        family = r.metric.split("_", 1)[0]
        groups.setdefault(family, []).append((r.measured_ms, r.predicted_ms or 0.0))
    names = dict(METRICS)
    series = [
        svg.Series(f"{names.get(family, family)} percentiles", pts, connect=False)
        for family, pts in groups.items()
    ]
    values = [v for pts in groups.values() for point in pts for v in point]
    lo, hi = min(values), max(values)
    series.append(svg.Series("predicted = measured", [(lo, lo), (hi, hi)], markers=False))
    worst = max(residuals, key=lambda r: abs(r.relative_error or 0.0))
    title = "Calibration: predicted against measured latency"
    state = (
        f"fitted: MBU {c.mbu:.3f}, MFU {c.mfu:.3f}"
        if c.fitted
        else "not fitted (defaults kept" + (f": {c.rejected}" if c.rejected else "") + ")"
    )
    error = "none" if c.fit_error is None else f"{c.fit_error:.4f}"
    summary = (
        f"{len(residuals)} measured percentiles from {len(c.source_evidence)} evidence "
        f"record(s) replayed by the planner; {state}; RMS log error {error}. The largest "
        f"miss: {worst.traffic_class} {worst.metric} of {worst.evidence}, measured "
        f"{fmt(worst.measured_ms)} ms, predicted {ms_text(worst.predicted_ms)} "
        f"({fmt(100 * (worst.relative_error or 0.0))} %)."
    )
    chart_id = f"{prefix}-calibration"
    return make_line_chart(
        chart_id,
        title,
        summary,
        x_label="measured (ms, log scale)",
        y_label="predicted (ms, log scale)",
        series=series,
        log_x=True,
        log_y=True,
    )


def memory(result: PlanRecomputation, prefix: str) -> Chart:
    m = result.memory
    held_back = max(0.0, m.total_gib - m.usable_gib)
    left = m.usable_gib - m.weights_gib - m.activation_peak_gib - m.runtime_overhead_gib
    left -= m.kv_cache_gib
    bars = [
        svg.Bar("weights", m.weights_gib),
        svg.Bar("activation peak", m.activation_peak_gib),
        svg.Bar("runtime overhead", m.runtime_overhead_gib),
        svg.Bar("KV cache", m.kv_cache_gib, f"({m.kv_tokens:,} tokens)"),
        svg.Bar("held back (1 - gpu_memory_utilization)", held_back),
    ]
    if abs(left) >= 0.05:
        bars.append(svg.Bar("usable, not allocated" if left > 0 else "over usable", left))
    title = f"Memory per GPU at TP={m.tensor_parallel}"
    summary = (
        f"Of {fmt(m.total_gib)} GiB per GPU, {fmt(m.usable_gib)} GiB are usable: weights "
        f"{fmt(m.weights_gib)}, activation peak {fmt(m.activation_peak_gib)}, runtime "
        f"{fmt(m.runtime_overhead_gib)}, KV cache {fmt(m.kv_cache_gib)} GiB "
        f"({m.kv_tokens:,} tokens, {m.max_concurrency_at_p99_context} requests at the p99 "
        f"context). {'Fits' if m.fits else 'Does not fit'}: {m.reason}."
    )
    chart_id = f"{prefix}-memory"
    return make_bar_chart(
        chart_id,
        title,
        summary,
        bars=bars,
        value_label="GiB per GPU",
        unit=" GiB",
        label_width=270,
    )
