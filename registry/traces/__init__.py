"""Workload profiles measured from request traces (Azure, Mooncake, generic CSV/JSONL)."""

from __future__ import annotations

from registry.traces.fit import TraceFit, fit_trace, workload_from_trace

__all__ = ["TraceFit", "fit_trace", "workload_from_trace"]
