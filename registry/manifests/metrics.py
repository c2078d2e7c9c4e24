"""Autoscaling metrics and targets as manifests write them: Kubernetes quantities and
metric names in the spellings of the adapters that serve them to an autoscaler."""

from __future__ import annotations

import re

from registry.manifests.loading import Node
from registry.manifests.pods import whole
from registry.records.autoscaling_metric import AutoscalingMetric

_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(m|k|M|G|Ki|Mi|Gi)?")
_SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
KNOWN_METRICS = {metric.value for metric in AutoscalingMetric}
# vLLM's earlier name of the KV-cache gauge (AIBrix's samples still scale on it).
METRIC_ALIASES = {"vllm:gpu_cache_usage_perc": AutoscalingMetric.kv_cache_usage_perc.value}
# Google Cloud Managed Service for Prometheus names a metric to the HPA (through its
# Stackdriver adapter) as prometheus.googleapis.com|NAME|KIND.
_GMP = re.compile(
    r"prometheus\.googleapis\.com\|([^|]+)\|(gauge|counter|histogram|summary|unknown)"
)


def quantity(node: Node) -> int | float:
    """A Kubernetes quantity: 8, "8", "500m", "1k"."""
    value = node.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    match = _QUANTITY.fullmatch(str(value).strip())
    if match is None:
        node.fail(f"{value!r} is not a quantity")
    return whole(float(match.group(1)) * _SCALE[match.group(2)])


def _known(name: str) -> str | None:
    """``vllm:x``, or ``vllm_x`` as Prometheus adapters often rename it, as the plan's
    metric; vLLM's earlier name of one as its current one."""
    for written, known in (*((k, k) for k in KNOWN_METRICS), *METRIC_ALIASES.items()):
        if name in (written, written.replace(":", "_")):
            return known
    return None


def metric_name(node: Node, notes: list[str], *, bare: str = "") -> str:
    """The plan's metric for a metric name as an HPA (or AIBrix) writes it: ``vllm:x``,
    ``vllm_x``, Managed Prometheus's ``prometheus.googleapis.com|vllm:x|gauge``.
    ``bare``: the prefix a name without one is read with (AIBrix's ``kv_cache_usage_perc``
    is the pods' ``vllm:kv_cache_usage_perc``)."""
    name = str(node.value)
    gmp = _GMP.fullmatch(name)
    inner = gmp.group(1) if gmp else name
    known = _known(inner)
    if known is None and bare and ":" not in inner and inner != "cpu":
        known = _known(bare + inner)
    if known is None:
        node.fail(
            f"metric {name!r} is not one a plan can hold ({', '.join(sorted(KNOWN_METRICS))})"
        )
    if gmp is not None:
        if gmp.group(2) != "gauge" or known == "cpu":
            # GMP keeps the kind of the series it ingested: vLLM's are gauges.
            node.fail(
                f"metric {name!r}: {known} is a gauge, which Managed Prometheus names "
                f"prometheus.googleapis.com|{inner}|gauge"
            )
        notes.append(
            f"{node.where}: autoscaling metric {name} (Google Cloud Managed Service for "
            f"Prometheus's spelling) read as {known}"
        )
    elif known != inner and known.replace(":", "_") != inner:
        notes.append(f"{node.where}: autoscaling metric {name} read as {known}")
    return known
