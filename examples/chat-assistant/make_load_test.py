"""Write the worked example's load-test result files (SYNTHETIC, in AIPerf's export format).

The example's load test is illustrative: one replica of the planned serving config at
1.2x the per-replica peak, both classes mixed, gamma (bursty) arrivals and client
cancellations, run as two AIPerf load generators at the same time (one per class). Its
TTFT, TPOT and end-to-end p50/p90/p99 are the planner's prediction for that test (seed 0)
on a replica that reaches 68 % of the H100's memory bandwidth and 50 % of its compute,
behind an API server taking 20 ms per request (the calibration recovers those from it); the other figures are set by hand.
They are written in the shape AIPerf 0.11 writes ``profile_export_aiperf.json`` (phases in ``input_config``, metric blocks with
``unit, avg, pNN, min, max, std, count``), so the worked example goes through the same
import path as a real file. Rerun after changing a figure:

    .venv/bin/python examples/chat-assistant/make_load_test.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "load-test"
SMOOTHNESS = 0.4  # gamma shape of the arrivals (1.0 Poisson; lower is burstier)
LEVELS = (1, 5, 10, 25, 50, 75, 90, 95, 99)
DURATION_S = 600.0

# Per class: offered rate, smoothness (gamma shape), cancellation %, counts, and the
# predicted distributions as (level -> value) anchors with their mean, min and max.
CLASSES: dict[str, dict[str, Any]] = {
    "interactive": {
        "rate": 7.84,
        "cancel_pct": 4.0,
        "completed": 4512,
        "cancelled": 188,
        "ttft": ({0: 21.0, 50: 58.0, 90: 204.0, 99: 497.0, 100: 903.0}, 96.0),
        "tpot": ({0: 9.8, 50: 15.2, 90: 19.6, 99: 30.8, 100: 44.1}, 15.9),
        "itl": ({0: 0.4, 50: 14.1, 90: 19.0, 99: 41.5, 100: 96.0}, 15.6),
        "e2e": ({0: 95.0, 50: 2890.0, 90: 9950.0, 99: 19400.0, 100: 31800.0}, 4120.0),
        "isl": ({0: 4.0, 50: 620.0, 90: 2100.0, 99: 6100.0, 100: 7950.0}, 1050.0),
        "osl": ({0: 1.0, 50: 180.0, 90: 520.0, 99: 1100.0, 100: 2048.0}, 255.0),
    },
    "batch": {
        "rate": 1.76,
        "cancel_pct": 1.0,
        "completed": 1049,
        "cancelled": 11,
        "ttft": ({0: 30.0, 50: 76.0, 90: 246.0, 99: 742.0, 100: 1210.0}, 121.0),
        "tpot": ({0: 10.1, 50: 15.3, 90: 19.9, 99: 28.9, 100: 39.5}, 16.0),
        "itl": ({0: 0.5, 50: 14.3, 90: 19.2, 99: 40.2, 100: 90.0}, 15.8),
        "e2e": ({0: 410.0, 50: 3370.0, 90: 8890.0, 99: 18200.0, 100: 30100.0}, 4400.0),
        "isl": ({0: 180.0, 50: 2400.0, 90: 5200.0, 99: 7600.0, 100: 7990.0}, 2750.0),
        "osl": ({0: 8.0, 50: 350.0, 90: 800.0, 99: 1500.0, 100: 2048.0}, 420.0),
    },
}


# Fractions of peak the example's replica reaches and its API server's time per request
# (what calibration should recover).
MBU, MFU, FRONTEND_MS = 0.68, 0.50, 20.0


def predicted() -> dict[str, dict[str, dict[int, float]]]:
    """The planner's p50/p90/p99 (ms) per class and metric for the example's load test."""
    from datetime import UTC, datetime

    from registry.planner.calibration import _case
    from registry.planner.catalog import resolve_model
    from registry.planner.step_time import Efficiency
    from registry.records.documents import load_document
    from registry.records.evidence import (
        ClassResult,
        LoadTestEvidence,
        MeasuredAgainst,
        Offered,
        Percentiles,
        Results,
        ToolInfo,
    )
    from registry.records.plan import CapacityPlan
    from registry.records.provider import ProviderProfile
    from registry.records.workload import WorkloadProfile

    root = HERE.parent
    workload = WorkloadProfile.model_validate(load_document(root / "workload.yaml"))
    provider = ProviderProfile.model_validate(load_document(root / "provider.yaml"))
    plan = CapacityPlan.model_validate(load_document(root / "plan.yaml"))
    rate = sum(spec["rate"] for spec in CLASSES.values())
    test = LoadTestEvidence(
        name="example-load-test",
        measured_against=MeasuredAgainst(workload="w@v1", provider="p@v1"),
        tool=ToolInfo(name="aiperf"),
        measured_at=datetime(2026, 11, 24, 14, 5, tzinfo=UTC),
        offered=Offered(
            request_rate_rps=rate,
            burstiness=SMOOTHNESS,
            replicas=1,
            classes=list(CLASSES),
            cancellation_rate=sum(s["rate"] * s["cancel_pct"] for s in CLASSES.values())
            / rate
            / 100.0,
        ),
        # Placeholder results: only the replay's set-up matters for the prediction.
        results=Results(
            per_class={
                name: ClassResult(ttft_ms=Percentiles(quantiles={"p50": 1.0})) for name in CLASSES
            }
        ),
    )
    efficiency = Efficiency(mbu=MBU, mfu=MFU)
    case = _case(test, provider, plan, workload, resolve_model(provider), efficiency, 0)
    assert not isinstance(case, str), case
    case.evaluator.set_efficiency(efficiency)
    # The replay predicts the engine alone; a real server adds its API server's time.
    case.evaluator.frontend_s = FRONTEND_MS / 1e3
    per_class = case.evaluator.run(case.tp, case.replicas).per_class
    out: dict[str, dict[str, dict[int, float]]] = {}
    for name in CLASSES:
        p = per_class[name]
        out[name] = {
            metric: {
                q: round(float(getattr(p, f"{metric}_p{q}_ms")), 3) for q in (50, 90, 99)
            }
            for metric in ("ttft", "tpot", "e2e")
        }
    return out


def _at(anchors: dict[int, float], level: float) -> float:
    """Piecewise-linear quantile between the anchors (the example's figures)."""
    points = sorted(anchors.items())
    for (lo, lo_v), (hi, hi_v) in zip(points, points[1:], strict=False):
        if lo <= level <= hi:
            return lo_v + (hi_v - lo_v) * (level - lo) / (hi - lo)
    raise ValueError(level)


def _block(unit: str, spec: tuple[dict[int, float], float], count: int) -> dict[str, Any]:
    anchors, mean = spec
    block: dict[str, Any] = {"unit": unit, "avg": mean}
    block.update({f"p{level}": round(_at(anchors, level), 3) for level in LEVELS})
    block.update(
        {
            "min": anchors[0],
            "max": anchors[100],
            "std": round((anchors[90] - anchors[50]) / 1.2816, 3),
            "count": count,
            "sum": round(mean * count, 3),
        }
    )
    return block


def export(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    done, cancelled = spec["completed"], spec["cancelled"]
    osl_mean = spec["osl"][1]
    return {
        "schema_version": "1.3",
        "aiperf_version": "0.11.0",
        "benchmark_id": f"chat-assistant-example-{name}",
        "request_throughput": {"unit": "requests/sec", "avg": round(done / DURATION_S, 4)},
        "request_count": {"unit": "requests", "avg": float(done)},
        "error_request_count": {"unit": "requests", "avg": float(cancelled)},
        "request_latency": _block("ms", spec["e2e"], done),
        "time_to_first_token": _block("ms", spec["ttft"], done),
        "inter_token_latency": _block("ms", spec["tpot"], done),
        "inter_chunk_latency": _block("ms", spec["itl"], done),
        "input_sequence_length": _block("tokens", spec["isl"], done),
        "output_sequence_length": _block("tokens", spec["osl"], done),
        "output_token_throughput": {
            "unit": "tokens/sec",
            "avg": round(done * osl_mean / DURATION_S, 2),
        },
        "benchmark_duration": {"unit": "sec", "avg": DURATION_S},
        "input_config": {
            "models": {"items": [{"name": "meta-llama/Llama-3.1-8B-Instruct"}]},
            "endpoint": {"urls": ["http://chat-assistant:8000"], "type": "chat", "streaming": True},
            "phases": [
                {
                    "name": "profiling",
                    "type": "gamma",
                    "rate": spec["rate"],
                    "smoothness": SMOOTHNESS,
                    "duration": DURATION_S,
                    "cancellation": {"rate": spec["cancel_pct"], "delay": 2.0},
                }
            ],
        },
        "was_cancelled": False,
        "error_summary": [
            {
                "error_details": {
                    "code": 499,
                    "type": "RequestCancellationError",
                    "message": "Request was cancelled after 2.000 seconds",
                },
                "count": cancelled,
            }
        ],
        "start_time": "2026-11-24T14:05:00.000000",
        "end_time": "2026-11-24T14:15:00.000000",
    }


def _with_prediction(spec: dict[str, Any], prediction: dict[str, dict[int, float]]) -> None:
    """Replace the p50/p90/p99 anchors with the planner's; scale the mean with the p50."""
    for metric, quantiles in prediction.items():
        anchors, mean = spec[metric]
        scaled_mean = round(mean * quantiles[50] / anchors[50], 3)
        anchors = {**anchors, **quantiles}
        anchors[0] = min(anchors[0], anchors[50] * 0.3)
        anchors[100] = max(anchors[100], anchors[99] * 1.4)
        spec[metric] = (anchors, scaled_mean)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, prediction in predicted().items():
        _with_prediction(CLASSES[name], prediction)
    for name, spec in CLASSES.items():
        text = json.dumps(export(name, spec), indent=1) + "\n"
        (HERE / f"{name}.profile_export_aiperf.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
