"""The load an AIPerf run offered, read from its ``input_config``: ``phases`` (v0.10 on, warm-up
phases with ``exclude_from_results`` left out) or ``loadgen`` (earlier versions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.importers.json_values import count, num, obj, pos
from registry.importers.parsed_stage import ParsedStage

# Phase types that schedule requests at a rate (AIPerf src/aiperf/config/phases.py).
_RATE_PHASES = ("poisson", "gamma", "constant", "request_rate", "user_centric")


@dataclass
class LoadSetting:
    """What ``input_config`` says was offered; ``stated`` is False when it says nothing."""

    stated: bool = False
    kind: str | None = None  # phase type or request_rate_mode
    concurrency: int | None = None
    rate: float | None = None
    burstiness: float | None = None
    constant: bool = False
    requests: int | None = None
    duration_s: float | None = None
    cancellation_pct: float | None = None


def _phase_setting(phase: dict[str, Any], setting: LoadSetting, notes: list[str]) -> None:
    kind = str(phase.get("type") or "")
    setting.kind = kind or None
    conc = count(phase.get("concurrency"))
    if kind == "concurrency" and not conc:
        conc = 1  # AIPerf's ConcurrencyPhase default
        notes.append("concurrency phase states no concurrency: AIPerf's default, 1")
    setting.concurrency = conc if conc else None
    if kind in _RATE_PHASES:
        setting.rate = pos(phase.get("rate")) or pos(phase.get("request_rate"))
        pattern = str(phase.get("arrival_pattern") or kind)
        if pattern == "poisson":
            setting.burstiness = 1.0  # Poisson arrivals are gamma arrivals of shape 1
        elif pattern == "gamma":
            # AIPerf's smoothness is the gamma shape (1.0 Poisson, < 1 burstier).
            shape = pos(phase.get("smoothness")) or pos(phase.get("arrival_smoothness"))
            setting.burstiness = shape if shape is not None else 1.0
        elif pattern == "constant":
            setting.constant = True
            notes.append("AIPerf constant arrivals: evenly spaced, no burstiness figure")
        if conc:
            notes.append(f"AIPerf rate phase capped at {conc} concurrent requests")
    elif kind == "fixed_schedule":
        notes.append("AIPerf fixed_schedule phase: requests replayed at trace timestamps")
    setting.requests = count(phase.get("requests"))
    setting.duration_s = pos(phase.get("duration"))
    cancel = obj(phase.get("cancellation"))
    rate = num(cancel.get("rate")) if cancel is not None else 0.0
    setting.cancellation_pct = rate


def load_setting(config: dict[str, Any], notes: list[str]) -> LoadSetting:
    setting = LoadSetting()
    phases = config.get("phases")
    if isinstance(phases, list) and phases:
        profiling: list[dict[str, Any]] = []
        for phase in (p for p in phases if isinstance(p, dict)):
            name = phase.get("name")
            warmup = (
                phase.get("exclude_from_results") is True
                or phase.get("kind") == "warmup"
                or (name == "warmup" and phase.get("kind") is None)
            )
            if warmup:
                n = count(phase.get("requests"))
                size = f", {n} requests" if n else ""
                notes.append(f"AIPerf warm-up phase {name!r}{size} excluded from the results")
            else:
                profiling.append(phase)
        setting.stated = True
        if len(profiling) == 1:
            _phase_setting(profiling[0], setting, notes)
        elif profiling:
            # Several measured phases are aggregated together: no single load stands for them.
            names = ", ".join(str(p.get("name")) for p in profiling)
            notes.append(f"{len(profiling)} profiling phases ({names}) aggregated in one export")
            settings = []
            for p in profiling:
                s = LoadSetting(stated=True)
                _phase_setting(p, s, [])
                settings.append(s)
            if all(s == settings[0] for s in settings):
                _phase_setting(profiling[0], setting, notes)
            else:
                setting.cancellation_pct = max((s.cancellation_pct or 0.0) for s in settings)
        return setting
    loadgen = obj(config.get("loadgen"))
    if loadgen is None and any(k in config for k in ("concurrency", "request_rate")):
        loadgen = config  # the oldest exports keep the load keys at the top
    if loadgen is None:
        return setting
    setting.stated = True
    conc = count(loadgen.get("concurrency"))
    setting.concurrency = conc if conc else None
    setting.rate = pos(loadgen.get("request_rate"))
    mode = loadgen.get("request_rate_mode")
    if isinstance(mode, str):
        setting.kind = mode
        notes.append(f"AIPerf request_rate_mode {mode}")
        if setting.rate is not None and mode.lower() == "poisson":
            setting.burstiness = 1.0
    setting.requests = count(loadgen.get("request_count"))
    setting.duration_s = pos(loadgen.get("benchmark_duration"))
    rate = num(loadgen.get("request_cancellation_rate"))
    setting.cancellation_pct = rate if rate is not None else 0.0
    return setting


def fill_offered(stage: ParsedStage, setting: LoadSetting) -> None:
    stage.concurrency = setting.concurrency
    stage.request_rate_rps = setting.rate
    stage.burstiness = setting.burstiness
    stage.constant_arrivals = setting.constant and setting.rate is not None
    pct = setting.cancellation_pct
    if setting.stated and pct is not None and 0 <= pct <= 100:
        stage.cancellation_rate = pct / 100.0  # AIPerf takes a percentage
        if pct > 0:
            stage.notes.append(f"configured request cancellation rate {pct:g} %")
