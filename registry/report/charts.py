"""The report's charts, built from its data with the SVG primitives (registry.report.svg).

Each chart comes with a summary in words: the chart's text alternative (its ``<desc>``),
also printed as the figure's caption, so what the chart shows can be read without it.
A chart the data cannot give is None, with a note saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from registry.planner.result import PlanRecomputation, Scenario
from registry.records.common import quantile_level
from registry.records.evidence import LoadTestEvidence, Percentiles
from registry.report import svg
from registry.report.data import ReportData
from registry.report.svg import format_number as fmt
from registry.report.warmup import WarmupTimeline, timeline

METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "end-to-end"))
SCENARIO_NAMES = {
    "peak": "peak",
    "one_worker_lost": "one worker lost",
    "largest_zone_lost": "largest zone lost",
}
MAX_EVIDENCE_LINES = 3


def in_order(result: PlanRecomputation) -> list[tuple[str, Scenario]]:
    """The scenarios from all ready to the worst failure, then any others by name."""
    rank = {name: i for i, name in enumerate(SCENARIO_NAMES)}
    return sorted(result.scenarios.items(), key=lambda item: (rank.get(item[0], 99), item[0]))


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    summary: str
    svg: str


def _line(chart_id: str, title: str, summary: str, **options: Any) -> Chart:
    """A line chart whose title and summary are also its SVG's title and description."""
    return Chart(
        chart_id,
        title,
        summary,
        svg.line_chart(chart_id=chart_id, title=title, description=summary, **options),
    )


def _bars(chart_id: str, title: str, summary: str, **options: Any) -> Chart:
    """A bar chart whose title and summary are also its SVG's title and description."""
    return Chart(
        chart_id,
        title,
        summary,
        svg.bar_chart(chart_id=chart_id, title=title, description=summary, **options),
    )


@dataclass(frozen=True)
class Charts:
    latency_vs_load: list[Chart] = field(default_factory=list)
    distributions: list[Chart] = field(default_factory=list)
    scenarios: list[Chart] = field(default_factory=list)
    warmup: Chart | None = None
    calibration: Chart | None = None
    memory: Chart | None = None
    notes: dict[str, str] = field(default_factory=dict)  # section -> why a chart is missing

    @property
    def all(self) -> list[Chart]:
        single = [c for c in (self.warmup, self.calibration, self.memory) if c is not None]
        return [*self.latency_vs_load, *self.distributions, *self.scenarios, *single]


def _ms(value: float | None) -> str:
    return "none" if value is None else f"{fmt(value)} ms"


def _wide(values: list[float]) -> bool:
    """A log scale when the values span more than 20x."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return bool(positive) and max(positive) / min(positive) > 20


def latency_vs_load(result: PlanRecomputation, prefix: str) -> list[Chart]:
    curve = result.load_curve
    if not curve:
        return []
    peak = result.scenarios.get("peak")
    replicas = curve[0].ready_replicas
    charts = []
    for key, name in METRICS[:2]:
        classes = sorted({c for p in curve for c in getattr(p, f"per_class_{key}_p99_ms")})
        series, rules, points, said = [], [], [], []
        for cname in classes:
            pts = [
                (p.offered_rps, v)
                for p in curve
                if (v := getattr(p, f"per_class_{key}_p99_ms").get(cname)) is not None
            ]
            series.append(svg.Series(f"{cname} p99 {name}", pts))
            slo = result.slos.get(cname, {}).get(f"{key}_p99_ms")
            if slo is not None:
                rules.append(svg.Rule(f"{cname} SLO {fmt(slo)} ms", slo))
            at_peak = None
            if peak is not None and cname in peak.per_class:
                at_peak = getattr(peak.per_class[cname], f"{key}_p99_ms")
                if at_peak is not None:
                    points.append(
                        svg.Point(
                            f"{cname} at the plan's peak: {fmt(at_peak)} ms",
                            peak.offered_rps,
                            at_peak,
                        )
                    )
            over = [x for x, v in pts if slo is not None and v > slo]
            crossing = (
                f"above it from {fmt(over[0])} req/s" if over else "within it at every load shown"
            )
            said.append(
                f"{cname}: {_ms(at_peak)} at the plan's peak against an SLO of {_ms(slo)}, "
                f"{crossing}"
            )
        ys = [v for s in series for _, v in s.points] + [r.value for r in rules]
        peak_rps = peak.offered_rps if peak is not None else None
        x_rules = [svg.Rule(f"plan's peak {fmt(peak_rps)} req/s", peak_rps)] if peak_rps else []
        title = f"p99 {name} against offered load, {replicas} ready replicas"
        summary = (
            f"p99 {name} per class as the recomputation predicts it from "
            f"{fmt(curve[0].offered_rps)} to {fmt(curve[-1].offered_rps)} req/s on {replicas} "
            f"ready replicas. " + "; ".join(said) + "."
        )
        chart_id = f"{prefix}-load-{key}"
        charts.append(
            _line(
                chart_id,
                title,
                summary,
                x_label="offered load (req/s)",
                y_label=f"p99 {name} (ms{', log scale' if _wide(ys) else ''})",
                series=series,
                y_rules=rules,
                x_rules=x_rules,
                points=points,
                log_y=_wide(ys),
                x_zero=True,
            )
        )
    return charts


def _tail(level: float) -> float:
    """Where percentile ``level`` sits on a tail axis: p50 0.3, p90 1, p99 2, p99.9 3."""
    return -math.log10(1 - min(level, 99.99) / 100)


def _measured(percentiles: Percentiles | None) -> list[tuple[float, float]]:
    if percentiles is None:
        return []
    out = []
    for key, value in percentiles.quantiles.items():
        level = quantile_level(key)
        if 50 <= level < 100:  # the median and the tail
            out.append((_tail(level), value))
    return sorted(out)


def distributions(
    result: PlanRecomputation, evidence: list[tuple[str, LoadTestEvidence]], prefix: str
) -> tuple[list[Chart], str]:
    """Per class and metric: the predicted p50/p90/p99 at peak and with the largest zone
    lost, beside the fresh evidence's measured percentiles, against the p99 SLO."""
    peak = result.scenarios.get("peak")
    if peak is None:
        return [], "the recomputation holds no peak scenario"
    zone = result.scenarios.get("largest_zone_lost")
    missing = []
    charts = []
    shown = evidence[:MAX_EVIDENCE_LINES]
    for cname, prediction in peak.per_class.items():
        if prediction.completed == 0 or prediction.ttft_p50_ms is None:
            missing.append(cname)
            continue
        for key, name in METRICS:
            series = []
            for label, scenario in (
                ("predicted at peak", peak),
                ("predicted, largest zone lost", zone),
            ):
                if scenario is None or cname not in scenario.per_class:
                    continue
                p = scenario.per_class[cname]
                pts = [
                    (_tail(level), v)
                    for level, v in (
                        (50, getattr(p, f"{key}_p50_ms")),
                        (90, getattr(p, f"{key}_p90_ms")),
                        (99, getattr(p, f"{key}_p99_ms")),
                    )
                    if v is not None
                ]
                series.append(svg.Series(f"{label} ({scenario.ready_replicas} ready)", pts))
            predicted = len(series)
            for ref, model in shown:
                result_class = model.results.per_class.get(cname)
                pts = _measured(getattr(result_class, f"{key}_ms", None) if result_class else None)
                if pts:
                    rate = model.offered.request_rate_rps
                    at = f", {fmt(rate / model.offered.replicas)} req/s per replica" if rate else ""
                    series.append(svg.Series(f"measured: {ref}{at}", pts))
            slo = result.slos.get(cname, {}).get(f"{key}_p99_ms")
            rules = [svg.Rule(f"p99 SLO {fmt(slo)} ms", slo)] if slo is not None else []
            levels = sorted({x for s in series for x, _ in s.points})
            ticks = [(x, _label(x)) for x in levels]
            ys = [v for s in series for _, v in s.points] + [r.value for r in rules]
            p99 = getattr(prediction, f"{key}_p99_ms")
            title = f"{cname}: {name} latency by percentile"
            summary = (
                f"{cname} {name}: predicted at the plan's peak p50 "
                f"{_ms(getattr(prediction, f'{key}_p50_ms'))}, p90 "
                f"{_ms(getattr(prediction, f'{key}_p90_ms'))}, p99 {_ms(p99)}"
                + (f" against a p99 SLO of {_ms(slo)}" if slo is not None else "")
                + (
                    f"; {len(series) - predicted} measured distribution(s) beside it"
                    if len(series) > predicted
                    else "; no fresh evidence measured this class"
                )
                + "."
            )
            chart_id = f"{prefix}-dist-{cname}-{key}"
            charts.append(
                _line(
                    chart_id,
                    title,
                    summary,
                    x_label="percentile (tail scale)",
                    y_label=f"{name} (ms{', log scale' if _wide(ys) else ''})",
                    series=series,
                    y_rules=rules,
                    log_y=_wide(ys),
                    x_ticks=ticks,
                    width=460,
                    height=260,
                )
            )
    note = (
        "From the median to the tail. The recomputation keeps three points of each predicted "
        "distribution (p50, p90 and p99), joined here; measured lines are the load tests' own "
        "percentiles at the rate they ran, not at the plan's peak."
    )
    if len(evidence) > MAX_EVIDENCE_LINES:
        note += (
            f" {len(evidence) - MAX_EVIDENCE_LINES} more fresh evidence record(s) are listed "
            "under Evidence, not drawn."
        )
    if missing:
        note += (
            " The recomputation holds no latency distribution for "
            + ", ".join(missing)
            + ": no request of that class completed at peak."
        )
    return charts, note


def _label(x: float) -> str:
    level = 100 * (1 - 10 ** (-x))
    return f"p{fmt(level, 4)}"


def scenarios(result: PlanRecomputation, prefix: str) -> list[Chart]:
    charts = []
    for key, name in METRICS:
        bars, over = [], []
        for sname, scenario in in_order(result):
            for cname, p in sorted(scenario.per_class.items()):
                value = getattr(p, f"{key}_p99_ms")
                slo = result.slos.get(cname, {}).get(f"{key}_p99_ms")
                if value is None or not slo:
                    continue
                share = 100 * value / slo
                where = SCENARIO_NAMES.get(sname, sname)
                label = f"{where} ({scenario.ready_replicas} ready) · {cname}"
                note = f"({fmt(value)} of {fmt(slo)} ms)"
                if share > 100:
                    note += " OVER"
                    over.append(label)
                bars.append(svg.Bar(label, share, note))
        if not bars:
            continue
        title = f"p99 {name} in each failure scenario, as a share of the SLO"
        summary = (
            f"p99 {name} per scenario and class as a percentage of the class's SLO "
            f"(100 % is the SLO): "
            + "; ".join(f"{b.label} {fmt(b.value)} % {b.note}" for b in bars)
            + (f". Over the SLO: {', '.join(over)}." if over else ". Every bar is within its SLO.")
        )
        chart_id = f"{prefix}-scenario-{key}"
        charts.append(
            _bars(
                chart_id,
                title,
                summary,
                bars=bars,
                value_label=f"p99 {name} as % of the SLO",
                rules=[svg.Rule("SLO (100 %)", 100.0)],
                unit=" %",
                label_width=250,
                width=680,
            )
        )
    return charts


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
    return _line(
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
        f"{fmt(worst.measured_ms)} ms, predicted {_ms(worst.predicted_ms)} "
        f"({fmt(100 * (worst.relative_error or 0.0))} %)."
    )
    chart_id = f"{prefix}-calibration"
    return _line(
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
    return _bars(
        chart_id,
        title,
        summary,
        bars=bars,
        value_label="GiB per GPU",
        unit=" GiB",
        label_width=270,
    )


def build(data: ReportData, prefix: str = "chart") -> Charts:
    """Every chart the data gives, with a note for each that it cannot."""
    notes: dict[str, str] = {}
    recomputed = data.recomputation
    line = timeline(
        data.plan, data.workload, data.provider, recomputed.result if recomputed else None
    )
    if recomputed is None:
        notes["recomputation"] = "no recomputation: the charts of predicted latency are absent"
        return Charts(warmup=warmup(line, prefix), notes=notes)
    result = recomputed.result
    fresh = [(e.ref, e.model) for e in data.evidence if e.fresh and e.model is not None]
    load = latency_vs_load(result, prefix)
    if not load:
        notes["load"] = (
            "The recomputation holds no load curve: the plan's configuration does not fit in "
            "memory, so no load was simulated."
        )
    dist, notes["distributions"] = distributions(result, fresh, prefix)
    calib = calibration(result, prefix)
    if calib is None:
        notes["calibration"] = (
            "No calibration points: no fresh evidence was replayed, the planner's default "
            "efficiencies were used."
        )
    return Charts(
        latency_vs_load=load,
        distributions=dist,
        scenarios=scenarios(result, prefix),
        warmup=warmup(line, prefix),
        calibration=calib,
        memory=memory(result, prefix),
        notes=notes,
    )
