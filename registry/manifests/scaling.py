"""Autoscaling (HorizontalPodAutoscaler, AIBrix's PodAutoscaler) and disruption budgets
(PodDisruptionBudget) of the serving workloads."""

from __future__ import annotations

from collections.abc import Iterable

from registry.manifests.aibrix import AIBRIX, aibrix_fields
from registry.manifests.loading import Manifest, Node
from registry.manifests.metrics import metric_name, quantity
from registry.manifests.pods import Fields
from registry.manifests.workloads import ServingWorkload, scaled

HPA = ("autoscaling", "HorizontalPodAutoscaler")
# What scales a workload: read alike (bounds, one metric, target).
SCALER_KINDS = {HPA, AIBRIX}


def _target(metric: Node, section: str, notes: list[str]) -> tuple[str, int | float, Node]:
    block = metric.mapping(section)
    if block is None:
        metric.fail(f"a {metric.value.get('type')} metric needs {section}")
    if section == "resource":
        name = block.string("name")
        if name is None or name.value != "cpu":
            block.fail("only a cpu resource metric maps to the plan")
        target = block.mapping("target")
        utilization = target.integer("averageUtilization") if target else None
        if utilization is None:
            block.fail("a cpu metric needs target.averageUtilization")
        return "cpu", utilization.value, utilization
    described = block.mapping("metric")
    name = described.string("name") if described else None
    if name is None:
        block.fail("metric.name is required")
    target = block.mapping("target")
    value = None
    if target is not None:
        value = target.child("averageValue") or target.child("value")
    if value is None:
        block.fail("target.averageValue or target.value is required")
    return metric_name(name, notes), quantity(value), value


def _window(behavior: Node | None, direction: str) -> Node | None:
    rules = behavior.mapping(direction) if behavior else None
    return rules.integer("stabilizationWindowSeconds") if rules else None


def _hpa_fields(hpa: Manifest, notes: list[str]) -> Fields:
    if (hpa.api_group, hpa.kind) == AIBRIX:
        return aibrix_fields(hpa, notes)
    spec = hpa.root.mapping("spec")
    if spec is None:
        hpa.root.fail("HorizontalPodAutoscaler needs a spec")
    fields: Fields = {}
    max_replicas = spec.integer("maxReplicas")
    if max_replicas is None:
        spec.fail("maxReplicas is required")
    min_replicas = spec.integer("minReplicas")
    # Kubernetes' default minReplicas is 1.
    fields["autoscaling.min_replicas"] = (
        1 if min_replicas is None else min_replicas.value,
        (min_replicas or spec).where,
    )
    fields["autoscaling.max_replicas"] = (max_replicas.value, max_replicas.where)
    if hpa.content.get("apiVersion") == "autoscaling/v1":
        cpu = spec.integer("targetCPUUtilizationPercentage")
        if cpu is not None:
            fields["autoscaling.metric"] = ("cpu", cpu.where)
            fields["autoscaling.target"] = (cpu.value, cpu.where)
        return fields
    metrics = spec.items("metrics")
    if len(metrics) > 1:
        # The HPA follows whichever metric asks for most replicas; a plan holds one.
        metrics[1].fail("the plan holds one autoscaling metric; this HPA has several")
    for metric in metrics:
        kind = metric.string("type")
        if kind is None:
            metric.fail("type is required")
        section = {
            "Pods": "pods",
            "External": "external",
            "Object": "object",
            "Resource": "resource",
        }.get(kind.value)
        if section is None:
            kind.fail(f"metric type {kind.value!r} does not map to the plan")
        name, value, at = _target(metric, section, notes)
        fields["autoscaling.metric"] = (name, metric.where)
        fields["autoscaling.target"] = (value, at.where)
    behavior = spec.mapping("behavior")
    for direction, field in (
        ("scaleUp", "autoscaling.scale_up_stabilization_s"),
        ("scaleDown", "autoscaling.scale_down_stabilization_s"),
    ):
        window = _window(behavior, direction)
        if window is not None:
            fields[field] = (window.value, window.where)
    return fields


def targets(hpa: Manifest, workload: ServingWorkload) -> bool:
    spec = hpa.root.mapping("spec")
    ref = spec.mapping("scaleTargetRef") if spec else None
    if ref is None:
        return False
    kind, name = ref.string("kind"), ref.string("name")
    return (kind.value if kind else "", name.value if name else "") == workload.ref


def hpa_floor(hpas: Iterable[Manifest], workload: ServingWorkload) -> Node | None:
    """minReplicas of the HPA scaling ``workload``: the replicas it keeps at least."""
    for hpa in hpas:
        spec = hpa.root.mapping("spec")
        if spec is not None and targets(hpa, workload):
            return spec.integer("minReplicas")
    return None


def autoscaling(
    hpas: Iterable[Manifest], workloads: list[ServingWorkload], notes: list[str] | None = None
) -> Fields:
    """The autoscaling fields; per-zone workloads with one HPA each add their bounds.
    ``hpas``: HorizontalPodAutoscalers and AIBrix PodAutoscalers alike."""
    notes = [] if notes is None else notes
    found = [hpa for hpa in hpas if any(targets(hpa, w) for w in workloads)]
    for hpa in hpas:
        if hpa not in found:
            notes.append(f"{hpa.file}: {hpa.title} scales no serving workload; ignored")
    if not found:
        return {}
    fields = _hpa_fields(found[0], notes)
    for other in found[1:]:
        more = _hpa_fields(other, notes)
        for field in ("autoscaling.min_replicas", "autoscaling.max_replicas"):
            value, where = fields[field]
            fields[field] = (value + more[field][0], where)
        for field, (value, _) in more.items():
            if field in fields and "_replicas" not in field and fields[field][0] != value:
                other.root.fail(
                    f"{field} differs from the HPA at {fields[field][1]}: "
                    "the plan holds one autoscaling setting"
                )
    return fields


def _selects(selector: Node, labels: dict[str, str]) -> bool:
    match_labels = selector.mapping("matchLabels")
    if match_labels and any(labels.get(k) != str(v.value) for k, v in match_labels.entries()):
        return False
    for expression in selector.items("matchExpressions"):
        key = expression.string("key")
        operator = expression.string("operator")
        if key is None or operator is None:
            expression.fail("key and operator are required")
        values = [str(v.value) for v in expression.items("values")]
        present = key.value in labels
        chosen = {
            "In": present and labels.get(key.value) in values,
            "NotIn": not present or labels.get(key.value) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(operator.value)
        if chosen is None:
            operator.fail(f"unknown operator {operator.value!r}")
        if not chosen:
            return False
    return bool(match_labels) or bool(selector.items("matchExpressions"))


def disruption_budget(pdbs: Iterable[Manifest], workloads: list[ServingWorkload]) -> Fields:
    """drain.disruption_budget.max_unavailable: what the budgets let evictions take
    from the serving pods (a percentage rounded up, as the disruption controller does)."""
    total, first = 0, None
    for pdb in pdbs:
        spec = pdb.root.mapping("spec")
        selector = spec.mapping("selector") if spec else None
        if spec is None or selector is None:
            continue
        selected = [w for w in workloads if _selects(selector, w.labels)]
        if not selected:
            continue
        pods = sum(w.replicas for w in selected)
        max_unavailable = spec.int_or_string("maxUnavailable")
        min_available = spec.int_or_string("minAvailable")
        if max_unavailable is not None:
            allowed, at = scaled(max_unavailable, pods, round_up=True), max_unavailable
        elif min_available is not None:
            needed = scaled(min_available, pods, round_up=True)
            allowed, at = max(pods - needed, 0), min_available
        else:
            continue
        total += allowed
        first = first or at
    if first is None:
        return {}
    return {"drain.disruption_budget.max_unavailable": (total, first.where)}
