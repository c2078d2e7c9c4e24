"""The report's charts of predicted latency against the SLOs: p99 against offered load, each
class's distribution by percentile beside the fresh evidence's measured one, and every failure
scenario's p99 as a share of its SLO.
"""

from __future__ import annotations

import math

from registry.planner.result import PlanRecomputation
from registry.records.common import quantile_level
from registry.records.evidence import LoadTestEvidence, Percentiles
from registry.report import svg
from registry.report.chart import (
    METRICS,
    SCENARIO_NAMES,
    Chart,
    in_order,
    make_bar_chart,
    make_line_chart,
    ms_text,
    wide,
)
from registry.report.svg_scales import format_number as fmt

MAX_EVIDENCE_LINES = 3


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
                f"{cname}: {ms_text(at_peak)} at the plan's peak against an SLO of {ms_text(slo)}, "
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
            make_line_chart(
                chart_id,
                title,
                summary,
                x_label="offered load (req/s)",
                y_label=f"p99 {name} (ms{', log scale' if wide(ys) else ''})",
                series=series,
                y_rules=rules,
                x_rules=x_rules,
                points=points,
                log_y=wide(ys),
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
                f"{ms_text(getattr(prediction, f'{key}_p50_ms'))}, p90 "
                f"{ms_text(getattr(prediction, f'{key}_p90_ms'))}, p99 {ms_text(p99)}"
                + (f" against a p99 SLO of {ms_text(slo)}" if slo is not None else "")
                + (
                    f"; {len(series) - predicted} measured distribution(s) beside it"
                    if len(series) > predicted
                    else "; no fresh evidence measured this class"
                )
                + "."
            )
            chart_id = f"{prefix}-dist-{cname}-{key}"
            charts.append(
                make_line_chart(
                    chart_id,
                    title,
                    summary,
                    x_label="percentile (tail scale)",
                    y_label=f"{name} (ms{', log scale' if wide(ys) else ''})",
                    series=series,
                    y_rules=rules,
                    log_y=wide(ys),
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
            make_bar_chart(
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
