"""The report's charts, built from its data with the SVG primitives (registry.report.svg).

Each chart comes with a summary in words: the chart's text alternative (its ``<desc>``),
also printed as the figure's caption, so what the chart shows can be read without it.
A chart the data cannot give is None, with a note saying why.

This module assembles them; the charts themselves are in ``registry.report.latency_charts``
and ``registry.report.planner_charts``, on ``registry.report.chart``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from registry.report.chart import (
    Chart,
)
from registry.report.data import ReportData
from registry.report.latency_charts import distributions, latency_vs_load, scenarios
from registry.report.planner_charts import calibration, memory, warmup
from registry.report.warmup import timeline


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
