"""How AIPerf names its metrics and errors, shared by the aggregate and the per-request export:
the short names early versions wrote, an ``error_summary`` entry as a failure reason, and which
errors are client cancellations (HTTP 499, ``RequestCancellationError``).
"""

from __future__ import annotations

from typing import Any

from registry.importers.json_values import count, obj
from registry.importers.parsed_stage import ParsedStage

TOOL = "aiperf"

# Full name -> the short names early AIPerf versions wrote.
_ALIASES = {
    "time_to_first_token": ("time_to_first_token", "ttft"),
    "time_to_second_token": ("time_to_second_token", "ttst"),
    "request_latency": ("request_latency",),
    "inter_token_latency": ("inter_token_latency",),
    "inter_chunk_latency": ("inter_chunk_latency",),
    "input_sequence_length": ("input_sequence_length", "isl"),
    "output_sequence_length": ("output_sequence_length", "osl"),
}


def get_metric(metrics: dict[str, Any], name: str) -> Any:
    for alias in _ALIASES.get(name, (name,)):
        if alias in metrics:
            return metrics[alias]
    return None


def error_reason(entry: dict[str, Any]) -> str | None:
    """``20 x TimeoutError (HTTP 504): message`` from one ``error_summary`` entry."""
    details = obj(entry.get("error_details")) or entry
    kind = details.get("type")
    code = details.get("code")
    message = details.get("message")
    parts = [str(kind) if isinstance(kind, str) and kind else "error"]
    if isinstance(code, int) and not isinstance(code, bool):
        parts.append(f"(HTTP {code})")
    text = " ".join(parts)
    if isinstance(message, str) and message.strip() and message.strip() != kind:
        short = message.strip().splitlines()[0]
        text += f": {short if len(short) <= 80 else short[:77] + '...'}"
    n = count(entry.get("count"))
    return f"{n} x {text}" if n is not None else text


def is_cancel(error: Any) -> bool:
    err = obj(error)
    if err is None:
        return False
    details = obj(err.get("error_details")) or err
    return details.get("code") == 499 or details.get("type") == "RequestCancellationError"


def cancellation_findings(stage: ParsedStage) -> None:
    configured = stage.cancellation_rate
    if configured is not None:
        stage.cancellations_exercised = configured > 0 and bool(stage.cancelled)
    elif stage.cancelled is not None:
        stage.cancellations_exercised = stage.cancelled > 0
    stage.cancellation_basis = (
        "AIPerf client cancellations (--request-cancellation-rate), counted from errors with "
        "HTTP 499 / RequestCancellationError"
    )
    stage.priority_classes = 1
    stage.priority_basis = "AIPerf sends one request stream without priorities"
