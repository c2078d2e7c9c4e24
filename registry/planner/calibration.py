"""Calibrating the achievable bandwidth and compute fractions from load-test evidence.

Each usable evidence record (same accelerator and serving runtime as the plan's provider)
is replayed: the simulation offers what the test offered (rate, burstiness, replicas,
classes, length distributions) and predicts the per-class TTFT and TPOT percentiles the
test measured. The fractions (MBU, MFU) minimising the sum of squared log errors are found
by a coarse grid and one refinement around its best point (the simulation is piecewise
constant in the parameters, so derivative-based least squares would stall). The fit error
reported is the root mean square of those log errors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from registry.planner.catalog import ModelShape, resolve_model
from registry.planner.result import Calibration, CalibrationResidual
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency, efficiency_sources
from registry.records.evidence import LoadTestEvidence
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import Arrival, WorkloadProfile

EvidenceItem = LoadTestEvidence | tuple[LoadTestEvidence, ProviderProfile]

MBU_GRID = (0.3, 0.45, 0.6, 0.75, 0.9)
MFU_GRID = (0.2, 0.35, 0.5, 0.65, 0.8)
# Fractions a real replica can reach. Kernel benchmarks top out near 90 % of HBM bandwidth
# and 80 % of dense peak (registry/planner/efficiency.py); below a quarter of either, the
# engine is not what the test measured (a client, an API server, a network). A fit at or
# beyond these is the model explaining the wrong thing: it is rejected, never used.
PHYSICAL_MBU = (0.25, 0.9)
PHYSICAL_MFU = (0.2, 0.8)
CAL_REQUESTS = 1500


def _ref_name(ref: str) -> str:
    return ref.split("@", 1)[0]


def _same_runtime(a: ProviderProfile, b: ProviderProfile) -> str | None:
    if a.accelerator.name != b.accelerator.name:
        return f"accelerator {a.accelerator.name} differs from {b.accelerator.name}"
    if (a.runtime.name, a.runtime.version) != (b.runtime.name, b.runtime.version):
        return (
            f"runtime {a.runtime.name} {a.runtime.version} differs from "
            f"{b.runtime.name} {b.runtime.version}"
        )
    return None


@dataclass
class _Case:
    name: str
    evaluator: Evaluator
    tp: int
    replicas: int
    targets: list[tuple[str, str, float]]  # (class, metric key e.g. ttft_p50_ms, measured ms)


def _case(
    ev: LoadTestEvidence,
    ev_provider: ProviderProfile,
    plan: CapacityPlan,
    workload: WorkloadProfile,
    shape: ModelShape,
    efficiency: Efficiency,
    seed: int,
) -> _Case | str:
    offered = ev.offered
    if offered.request_rate_rps is None:
        return "no offered request rate (closed-loop or unbounded run)"
    names = offered.classes or [c.name for c in workload.classes]
    classes = [c for c in workload.classes if c.name in names]
    if not classes:
        return "none of its classes is in the workload"
    total = sum(c.arrival.peak_rps for c in classes)
    cv = 1.0 / math.sqrt(offered.burstiness) if offered.burstiness else None
    replayed = []
    for c in classes:
        rate = offered.request_rate_rps * c.arrival.peak_rps / total
        update: dict[str, object] = {
            "arrival": Arrival.model_construct(
                basis=c.arrival.basis,
                mean_rps=rate,
                peak_rps=rate,
                peak_window_s=c.arrival.peak_window_s,
                interarrival_cv=cv if cv is not None else c.arrival.interarrival_cv,
            ),
        }
        if offered.prompt_tokens is not None:
            update["prompt_tokens"] = offered.prompt_tokens
        if offered.output_tokens is not None:
            update["output_tokens"] = offered.output_tokens
        if offered.cancellation_rate is not None:
            # The test states what it offered: that replaces a rate the workload left unknown.
            update["cancellation_rate"] = offered.cancellation_rate
            update["unknown"] = {k: v for k, v in c.unknown.items() if k != "cancellation_rate"}
        replayed.append(c.model_copy(update=update))
    wl = workload.model_copy(update={"classes": replayed})
    ev_shape = shape if ev_provider.model.name == shape.name else resolve_model(ev_provider)
    evaluator = Evaluator(
        plan, wl, ev_provider, ev_shape, efficiency, seed=seed, requests=CAL_REQUESTS
    )
    targets: list[tuple[str, str, float]] = []
    for cname, res in ev.results.per_class.items():
        if cname not in {c.name for c in classes}:
            continue
        for metric, pct in (("ttft", res.ttft_ms), ("tpot", res.tpot_ms)):
            if pct is None:
                continue
            for q in (50, 90):
                value = pct.at(q)
                if value is not None and value > 0:
                    targets.append((cname, f"{metric}_p{q}_ms", value))
    if not targets:
        return "no TTFT or TPOT percentiles to fit"
    return _Case(ev.name, evaluator, plan.parallelism.tensor_parallel, offered.replicas, targets)


def _residuals(cases: Sequence[_Case], eff: Efficiency) -> list[CalibrationResidual]:
    out = []
    for case in cases:
        case.evaluator.set_efficiency(eff)
        preds = case.evaluator.run(case.tp, case.replicas).per_class
        for cname, key, measured in case.targets:
            predicted = getattr(preds[cname], key)
            rel = None if predicted is None else predicted / measured - 1.0
            out.append(
                CalibrationResidual(
                    evidence=case.name,
                    traffic_class=cname,
                    metric=key,
                    measured_ms=measured,
                    predicted_ms=predicted,
                    relative_error=None if rel is None else round(rel, 4),
                )
            )
    return out


def _loss(res: Sequence[CalibrationResidual]) -> float:
    total = 0.0
    for r in res:
        if r.predicted_ms is None or r.predicted_ms <= 0:
            total += 25.0  # a class that completed nothing is a very poor fit
        else:
            total += math.log(r.predicted_ms / r.measured_ms) ** 2
    return total


def calibrate(
    evidence: Sequence[EvidenceItem],
    *,
    plan: CapacityPlan,
    workload: WorkloadProfile,
    provider: ProviderProfile,
    shape: ModelShape,
    base: Efficiency,
    seed: int = 0,
) -> tuple[Efficiency, Calibration]:
    """Fit MBU and MFU to the usable evidence; return the efficiency and the report."""
    cases: list[_Case] = []
    ignored: dict[str, str] = {}
    for item in evidence:
        ev, ev_provider = item if isinstance(item, tuple) else (item, None)
        if ev_provider is None:
            if _ref_name(ev.measured_against.provider) != provider.name:
                ignored[ev.name] = (
                    f"measured against provider {ev.measured_against.provider}, "
                    f"not {provider.name}, and no profile was given for it"
                )
                continue
            ev_provider = provider
        mismatch = _same_runtime(ev_provider, provider)
        if mismatch:
            ignored[ev.name] = mismatch
            continue
        built = _case(ev, ev_provider, plan, workload, shape, base, seed)
        if isinstance(built, str):
            ignored[ev.name] = built
        else:
            cases.append(built)
    # The defaults are per accelerator and dtype (registry/planner/efficiency.py).
    sources = efficiency_sources(base, provider.accelerator, shape.weight_bytes)
    defaults = base.resolve(provider.accelerator, shape.weight_bytes)
    unfitted = Calibration(
        source_evidence=[],
        ignored_evidence=ignored,
        fitted=False,
        mbu=defaults.mbu,
        mfu=defaults.mfu,
        step_overhead_ms=base.step_overhead_ms,
        fit_error=None,
        sources=sources,
    )
    if not cases:
        return base, unfitted
    best: tuple[float, float, float] | None = None
    for mbu in MBU_GRID:
        for mfu in MFU_GRID:
            loss = _loss(_residuals(cases, base.with_fractions(mbu, mfu)))
            if best is None or loss < best[0]:
                best = (loss, mbu, mfu)
    assert best is not None
    _, mbu0, mfu0 = best
    for dm in (-0.075, 0.0, 0.075):
        for df in (-0.075, 0.0, 0.075):
            mbu, mfu = min(0.9, max(0.2, mbu0 + dm)), min(0.9, max(0.15, mfu0 + df))
            if (dm, df) == (0.0, 0.0):
                continue
            loss = _loss(_residuals(cases, base.with_fractions(mbu, mfu)))
            if loss < best[0]:
                best = (loss, mbu, mfu)
    loss, mbu, mfu = best
    implausible = _outside_physical(mbu, mfu)
    if implausible:
        names = ", ".join(c.name for c in cases)
        why = (
            f"the fit to {names} needs {implausible}: the step-time model does not explain "
            "these tests (another bottleneck, or a replay unlike the test); the defaults stay"
        )
        return base, unfitted.model_copy(update={"rejected": why})
    fitted = base.with_fractions(mbu, mfu)
    residuals = _residuals(cases, fitted)
    rms = math.sqrt(_loss(residuals) / max(1, len(residuals)))
    sources["mbu"] = sources["mfu"] = (
        "least-squares fit (log error) to load-test evidence: " + ", ".join(c.name for c in cases)
    )
    return fitted, Calibration(
        source_evidence=[c.name for c in cases],
        ignored_evidence=ignored,
        fitted=True,
        mbu=round(mbu, 4),
        mfu=round(mfu, 4),
        step_overhead_ms=fitted.step_overhead_ms,
        fit_error=round(rms, 4),
        residuals=residuals,
        sources=sources,
    )


def _outside_physical(mbu: float, mfu: float) -> str | None:
    """Which fitted fraction lies at or beyond what a GPU can reach, if any."""
    problems = [
        f"{name} {value:.3f} (physical range {low:g} to {high:g})"
        for name, value, (low, high) in (("MBU", mbu, PHYSICAL_MBU), ("MFU", mfu, PHYSICAL_MFU))
        if not low < value < high
    ]
    return " and ".join(problems) or None
