"""Calibrating the achievable bandwidth and compute fractions from load-test evidence.

Each usable evidence record (same accelerator and serving runtime as the plan's provider)
is replayed as it ran: the simulation offers what the test offered (its rate and arrival
process, or its fixed concurrency as a closed loop of clients; its replicas, classes and
length distributions) and predicts the per-class TTFT and TPOT percentiles the
test measured. The fractions (MBU, MFU) minimising the sum of squared log errors are found
by a coarse grid and one refinement around its best point (the simulation is piecewise
constant in the parameters, so derivative-based least squares would stall); at each point
the API server's time per request, which only shifts TTFT, is fitted on top without
rerunning the simulation. The fit error reported is the root mean square of the log errors.

A fit must earn its place, figure group by figure group: it is checked by leave-one-out
over the fitted figures, a group at a time (one metric of one class of one test: its p50,
p90 and p99 move together, so holding out one percentile alone would test little). Each
group is predicted by the best of the simulated points fitted to the other groups, shrunk
toward the defaults by a share alpha (1, 0.75, 0.5, 0.25: the fractions in log space, the
API server time linearly), and its root mean square log error is compared with the
defaults' on the same group. The largest alpha at which no held-out group does worse than
the defaults (and the held-out error as a whole is lower) is the share of the full fit that
is used; when there is none the defaults stay. An RMS alone would let a fit trade one
figure for another (issue 28: TTFT p50 +31 % for the tail points), which is what a fit
must not do: it is used only as far as every group it could be checked on supports it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from registry.planner.calibration_check import (
    SHRINKAGE,
    Fit,
    Point,
    choose_shrinkage,
    fold_fits,
    shrink,
)
from registry.planner.calibration_loss import (
    FRONTEND_MAX_MS,
    Engine,
    as_residuals,
    best_frontend,
    frontend_prior,
    rms,
    total_loss,
)
from registry.planner.efficiency import frontend_time
from registry.planner.model_shape import ModelShape, resolve_model
from registry.planner.parallel import ordered_map
from registry.planner.result import Calibration
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
# Latency percentiles each test is fitted on (p99 pins the queueing, and so the prefill cost).
FIT_PERCENTILES = (50, 90, 99)
# Gamma inter-arrivals of this CV are evenly spaced to within 0.1 %: a constant-rate test.
CONSTANT_CV = 1e-3


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
    clients: int = 0  # closed-loop tests: the concurrency they held


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
    clients = 0
    if offered.request_rate_rps is None:
        if offered.concurrency:
            # A fixed concurrency (also an unbounded rate capped by --max-concurrency).
            clients = offered.concurrency
        elif offered.rate_unbounded:
            # Every request sent at once: a closed loop with one client per request.
            clients = offered.requests or CAL_REQUESTS
        else:
            return "states neither an offered request rate nor a concurrency"
    names = offered.classes or [c.name for c in workload.classes]
    classes = [c for c in workload.classes if c.name in names]
    if not classes:
        return "none of its classes is in the workload"
    total = sum(c.arrival.peak_rps for c in classes)
    # The test's own arrivals: its gamma shape, evenly spaced for a constant-rate test, and
    # the workload's burstiness only when the file says nothing about them.
    if offered.constant_arrivals:
        cv: float | None = CONSTANT_CV
    elif offered.burstiness:
        cv = 1.0 / math.sqrt(offered.burstiness)
    else:
        cv = None
    replayed = []
    for c in classes:
        # Closed loops keep the workload's mix; the clients set the load.
        offered_rps = offered.request_rate_rps or total
        rate = offered_rps * c.arrival.peak_rps / total
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
    # Engine-only latencies: the API server's time is fitted on top (see best_frontend).
    evaluator = Evaluator(
        plan,
        wl,
        ev_provider,
        ev_shape,
        efficiency,
        seed=seed,
        requests=CAL_REQUESTS,
        frontend_ms=0.0,
    )
    targets: list[tuple[str, str, float]] = []
    for cname, res in ev.results.per_class.items():
        if cname not in {c.name for c in classes}:
            continue
        for metric, pct in (("ttft", res.ttft_ms), ("tpot", res.tpot_ms)):
            if pct is None:
                continue
            for q in FIT_PERCENTILES:
                value = pct.at(q)
                if value is not None and value > 0:
                    targets.append((cname, f"{metric}_p{q}_ms", value))
    if not targets:
        return "no TTFT or TPOT percentiles to fit"
    return _Case(
        ev.name, evaluator, plan.parallelism.tensor_parallel, offered.replicas, targets, clients
    )


def _engine_predictions(
    cases: Sequence[_Case], eff: Efficiency
) -> list[tuple[str, str, str, float, float | None]]:
    """(evidence, class, metric, measured, engine-predicted) for every target at ``eff``."""
    out = []
    for case in cases:
        case.evaluator.set_efficiency(eff)
        preds = case.evaluator.run(case.tp, case.replicas, clients=case.clients).per_class
        for cname, key, measured in case.targets:
            out.append((case.name, cname, key, measured, getattr(preds[cname], key)))
    return out


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
    """Fit MBU, MFU and the API server's time to the usable evidence; return the
    efficiency and the report (its ``frontend_ms`` is what the recomputation adds)."""
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
    frontend = frontend_time(provider.runtime.name)
    sources["frontend_ms"] = frontend.source
    defaults = base.resolve(provider.accelerator, shape.weight_bytes)
    default_frontend = frontend.ms
    unfitted = Calibration(
        source_evidence=[],
        ignored_evidence=ignored,
        fitted=False,
        mbu=defaults.mbu,
        mfu=defaults.mfu,
        step_overhead_ms=base.step_overhead_ms,
        fit_error=None,
        sources=sources,
        frontend_ms=default_frontend,
    )
    if not cases:
        return base, unfitted

    # Every point simulated, kept for the leave-one-out check (it reruns no simulation).
    simulated: dict[tuple[float, float], Engine] = {}

    def simulate_points(points: Sequence[Point]) -> dict[Point, Engine]:
        """The replays at each point, once each, on the machine's cores (they are seeded:
        a point simulated again would give the same figures)."""
        unique = list(dict.fromkeys(points))
        runs = ordered_map(lambda p: _engine_predictions(cases, base.with_fractions(*p)), unique)
        return dict(zip(unique, runs, strict=True))

    def point(mbu: float, mfu: float) -> tuple[float, float, float, float]:
        engine = simulated[(mbu, mfu)]
        front = best_frontend(engine, default_frontend)
        loss = total_loss(as_residuals(engine, front)) + frontend_prior(front, default_frontend)
        return loss, mbu, mfu, front

    # The grid's points, and the defaults' (not kept, see below), are independent: they are
    # simulated as one batch, then scored in the grid's order as before.
    grid = [(mbu, mfu) for mbu in MBU_GRID for mfu in MFU_GRID]
    at_default_point = (defaults.mbu, defaults.mfu)
    first = simulate_points([*grid, at_default_point])
    default_engine = first[at_default_point]
    simulated.update((p, first[p]) for p in grid)
    best = min((point(mbu, mfu) for mbu, mfu in grid), key=lambda p: p[0])
    _, mbu0, mfu0, _ = best
    around = [
        (min(0.9, max(0.2, mbu0 + dm)), min(0.9, max(0.15, mfu0 + df)))
        for dm in (-0.075, 0.0, 0.075)
        for df in (-0.075, 0.0, 0.075)
        if (dm, df) != (0.0, 0.0)
    ]
    # The refinement clamped at a grid edge may repeat grid points: not replayed.
    simulated.update(simulate_points([p for p in around if p not in simulated]))
    for mbu, mfu in around:
        cand = point(mbu, mfu)
        if cand[0] < best[0]:
            best = cand
    _, mbu, mfu, frontend_ms = best
    implausible = _outside_physical(mbu, mfu, frontend_ms)
    if implausible:
        names = ", ".join(c.name for c in cases)
        why = (
            f"the fit to {names} needs {implausible}: the step-time model does not explain "
            "these tests (another bottleneck, or a replay unlike the test); the defaults stay"
        )
        return base, unfitted.model_copy(update={"rejected": why})
    # Not kept: the leave-one-out folds choose among the fit's own points only.
    default_error = rms(as_residuals(default_engine, default_frontend))
    fits = fold_fits(simulated, default_frontend)
    if not fits:
        why = (
            "the evidence gives one group of figures (one metric of one class), so the fit "
            "cannot be checked on figures it was not fitted to; the defaults stay"
        )
        return base, unfitted.model_copy(update={"default_error": default_error, "rejected": why})
    engines = {**simulated, at_default_point: default_engine}

    def simulate(points: Sequence[Point]) -> None:
        engines.update(simulate_points([p for p in points if p not in engines]))

    default = Fit(at_default_point, default_frontend)
    chosen = choose_shrinkage(fits, default, engines, simulate)
    checked = unfitted.model_copy(
        update={
            "held_out_error": chosen.held_out_error,
            "default_error": default_error,
            "held_out_groups": chosen.groups,
            "worst_group": chosen.worst,
        }
    )
    if chosen.alpha is None:
        w = chosen.worst
        why = (
            f"no share of the fit predicts every held-out group at least as well as the "
            f"defaults (leave-one-out RMS log error {chosen.held_out_error:.3f} against the "
            f"defaults' {default_error:.3f}; worst group {w.evidence} {w.traffic_class} "
            f"{w.metric}: {w.held_out_error:.3f} against {w.default_error:.3f} at the full "
            f"fit, and no share down to {min(SHRINKAGE):g} of it is safe); the defaults stay"
        )
        return base, checked.model_copy(update={"rejected": why})
    used = shrink(Fit((mbu, mfu), frontend_ms), default, chosen.alpha)
    simulate([used.point])
    fitted = base.with_fractions(*used.point)
    residuals = as_residuals(engines[used.point], used.frontend_ms)
    sources["mbu"] = sources["mfu"] = (
        "least-squares fit (log error) to load-test evidence: " + ", ".join(c.name for c in cases)
    )
    if chosen.alpha < 1.0:
        sources["mbu"] = sources["mfu"] = sources["mbu"] + (
            f", shrunk to {chosen.alpha:g} of the way from the defaults (MBU {defaults.mbu:g}, "
            f"MFU {defaults.mfu:g}) to the fit (MBU {mbu:g}, MFU {mfu:g}, API server "
            f"{frontend_ms:g} ms)"
        )
    if used.frontend_ms != default_frontend:
        sources["frontend_ms"] = sources["mbu"] + " (it shifts TTFT only)"
    return fitted, checked.model_copy(
        update={
            "source_evidence": [c.name for c in cases],
            "fitted": True,
            "mbu": round(used.point[0], 4),
            "mfu": round(used.point[1], 4),
            "step_overhead_ms": fitted.step_overhead_ms,
            "fit_error": rms(residuals),
            "residuals": residuals,
            "sources": sources,
            "frontend_ms": used.frontend_ms,
            "shrinkage": chosen.alpha,
        }
    )


def _outside_physical(mbu: float, mfu: float, frontend_ms: float) -> str | None:
    """Which fitted figure lies at or beyond what a real server reaches, if any."""
    problems = [
        f"{name} {value:.3f} (physical range {low:g} to {high:g})"
        for name, value, (low, high) in (("MBU", mbu, PHYSICAL_MBU), ("MFU", mfu, PHYSICAL_MFU))
        if not low < value < high
    ]
    if frontend_ms >= FRONTEND_MAX_MS:
        problems.append(f"an API server time of {frontend_ms:g} ms per request or more")
    return " and ".join(problems) or None
