"""AIBrix's PodAutoscaler (autoscaling.aibrix.ai/v1alpha1), read as the plan's autoscaling.

It scales a workload (``scaleTargetRef``) between ``minReplicas`` and ``maxReplicas`` on
the metric of its ``metricsSources``, with one of three strategies: ``HPA`` (AIBrix
creates a Kubernetes HPA from it), ``KPA`` (Knative's stable and panic windows) and
``APA`` (AIBrix's own, with fluctuation tolerances). The bounds, the metric and its
target map to the plan as an HPA's do. A source that is not a pod's vLLM metric (a
``domain`` or ``external`` endpoint such as AIBrix's GPU optimizer, which computes the
replicas itself) has no plan field: it is refused, naming the resource and why. The
KPA and APA windows and tolerances have no plan field either: they are noted, and the
plan's stabilization windows are left to the overlay.
"""

from __future__ import annotations

from registry.manifests.loading import Manifest
from registry.manifests.metrics import metric_name, quantity
from registry.manifests.pods import Fields

AIBRIX = ("autoscaling.aibrix.ai", "PodAutoscaler")
STRATEGIES = ("HPA", "KPA", "APA")
# Sources whose metric AIBrix reads from the scaled pods (pod) or the cluster's metrics
# API (resource: cpu); the others come from an endpoint the manifests do not describe.
POD_SOURCES = ("pod", "resource")


def aibrix_fields(scaler: Manifest, notes: list[str]) -> Fields:
    spec = scaler.root.mapping("spec")
    if spec is None:
        scaler.root.fail("PodAutoscaler needs a spec")
    title = f"{scaler.file}: {scaler.title}"
    fields: Fields = {}
    max_replicas = spec.integer("maxReplicas")
    if max_replicas is None:
        spec.fail("maxReplicas is required")
    min_replicas = spec.integer("minReplicas")
    if min_replicas is None:
        notes.append(f"{title} states no minReplicas; 1 is used, as for an HPA")
    fields["autoscaling.min_replicas"] = (
        1 if min_replicas is None else min_replicas.value,
        (min_replicas or spec).where,
    )
    fields["autoscaling.max_replicas"] = (max_replicas.value, max_replicas.where)
    strategy = spec.string("scalingStrategy")
    if strategy is not None and strategy.value not in STRATEGIES:
        strategy.fail(f"scalingStrategy {strategy.value!r} is not one of {', '.join(STRATEGIES)}")
    if strategy is not None and strategy.value in ("KPA", "APA"):
        notes.append(
            f"{strategy.where}: {scaler.title} scales with AIBrix's {strategy.value}, whose "
            "windows and tolerances (annotations) have no plan field and are not read; the "
            "plan's stabilization windows come from the overlay or the plan's defaults"
        )
    sources = spec.items("metricsSources")
    if not sources:
        spec.fail("metricsSources is required: a PodAutoscaler scales on a metric")
    if len(sources) > 1:
        sources[1].fail("the plan holds one autoscaling metric; this PodAutoscaler has several")
    source = sources[0]
    kind = source.string("metricSourceType")
    if kind is None:
        source.fail("metricSourceType is required")
    metric = source.string("targetMetric")
    if metric is None:
        source.fail("targetMetric is required")
    if kind.value not in POD_SOURCES:
        where = source.string("endpoint")
        endpoint = f" at {where.value}" if where is not None else ""
        kind.fail(
            f"{scaler.title} scales on {metric.value}, a {kind.value} metric source{endpoint} "
            "(the replicas an outside service asks for), which no plan field holds; scale on "
            "a pod metric (vllm:num_requests_waiting, vllm:kv_cache_usage_perc) or leave "
            "the PodAutoscaler out of the manifests and state autoscaling in the overlay"
        )
    if kind.value == "resource" and metric.value != "cpu":
        metric.fail("only a cpu resource metric maps to the plan")
    name = metric_name(metric, notes, bare="vllm:")
    target = source.child("targetValue")
    if target is None:
        source.fail("targetValue is required")
    fields["autoscaling.metric"] = (name, source.where)
    fields["autoscaling.target"] = (quantity(target), target.where)
    return fields
