"""Replicas per zone from where the manifests let the scheduler put each pod.

A workload's zones are those its pods are required to run in (node affinity ``In`` on
topology.kubernetes.io/zone, or a nodeSelector on it). One zone takes every replica; several
zones share them only under a hard spread (topologySpreadConstraints on the zone key,
``whenUnsatisfiable: DoNotSchedule``) with ``maxSkew: 1``, and then evenly: the scheduler
keeps zones within one replica of each other, but which zone gets a remainder is its
choice, not the manifests'. A larger maxSkew lets zones differ by more, so it fixes no count.

Pods that are not pinned but spread that way (most published manifests spread over zones
like this and name none) run evenly over whichever zones their nodes are in: the manifests
fix no zone names, but they do fix that the counts differ by at most one (``EvenSpread``),
which the plan's zones can be held to.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry.manifests.loading import Node, Where
from registry.manifests.workloads import ServingWorkload

# Not a plan field: stated by `gate check --manifests` where the pods spread evenly over
# zones they do not name (its value the largest difference between zones, 1).
ZONE_SPREAD = "zone_spread"
ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


@dataclass(frozen=True)
class EvenSpread:
    """One workload's replicas spread over unnamed zones within one replica of each other."""

    replicas: int
    constraint: Where  # where the hard zone spread is written

    def shares(self, zones: int) -> tuple[int, int]:
        """The fewest and the most replicas one of ``zones`` zones runs."""
        return self.replicas // zones, -(-self.replicas // zones)


class ZonesUnknown(Exception):
    """The manifests do not determine replicas per zone; the message says why. ``spread``
    is what they do determine when the pods spread evenly over zones they do not name."""

    def __init__(self, message: str, spread: EvenSpread | None = None) -> None:
        super().__init__(message)
        self.spread = spread


def required_terms(pod: Node) -> list[Node] | None:
    """The nodeSelectorTerms of a pod's required node affinity (alternatives: a node
    matching any one may run it); None when it has none."""
    affinity = pod.mapping("affinity")
    node_affinity = affinity.mapping("nodeAffinity") if affinity else None
    required = (
        node_affinity.mapping("requiredDuringSchedulingIgnoredDuringExecution")
        if node_affinity
        else None
    )
    return None if required is None else required.items("nodeSelectorTerms")


def _affinity_zones(pod: Node) -> list[Node] | None:
    terms = required_terms(pod)
    if terms is None:
        return None
    zones: list[Node] = []
    for term in terms:
        # Terms are alternatives: the pods are pinned only if every term names zones.
        term_zones = [
            value
            for expression in term.items("matchExpressions")
            if (key := expression.string("key")) is not None and key.value in ZONE_KEYS
            if (op := expression.string("operator")) is not None and op.value == "In"
            for value in expression.strings("values")
        ]
        if not term_zones:
            return None
        zones.extend(term_zones)
    return zones or None


def workload_zones(pod: Node) -> list[Node] | None:
    """The zone names a pod may run in, each with where it is written; None if any zone."""
    selector = pod.mapping("nodeSelector")
    if selector is not None:
        for key in ZONE_KEYS:
            pinned = selector.string(key)
            if pinned is not None:
                return [pinned]
    zones = _affinity_zones(pod)
    if zones is None:
        return None
    unique: dict[str, Node] = {}
    for zone in zones:
        unique.setdefault(zone.value, zone)
    return list(unique.values())


def _hard_spread(pod: Node) -> Node | None:
    """The pod's zone spread that the scheduler keeps to one replica (DoNotSchedule,
    maxSkew 1, the default-less field Kubernetes requires); None when it has none."""
    for constraint in pod.items("topologySpreadConstraints"):
        key = constraint.string("topologyKey")
        when = constraint.string("whenUnsatisfiable")
        skew = constraint.integer("maxSkew")
        hard = when is not None and when.value == "DoNotSchedule"
        even = skew is not None and skew.value == 1
        if key is not None and key.value in ZONE_KEYS and hard and even:
            return constraint
    return None


_NO_SPREAD = (
    "no topologySpreadConstraints on topology.kubernetes.io/zone with "
    "whenUnsatisfiable: DoNotSchedule and maxSkew: 1"
)


def _unpinned(workloads: list[ServingWorkload], title: str) -> ZonesUnknown:
    """Why unpinned pods fix no zone counts, and the even spread they may still fix (one
    workload only: two workloads each spread evenly may differ by two in a zone)."""
    message = (
        f"{title} does not pin its pods to zones (no required node affinity or "
        "nodeSelector on topology.kubernetes.io/zone)"
    )
    spread = _hard_spread(workloads[0].pod) if len(workloads) == 1 else None
    if spread is None:
        return ZonesUnknown(message)
    even = EvenSpread(workloads[0].replicas, spread.where)
    return ZonesUnknown(
        f"{message}; its hard zone spread ({spread.where}) runs them within one replica "
        "of each other in whichever zones their nodes are in",
        even,
    )


def replicas_per_zone(
    workloads: list[ServingWorkload],
) -> tuple[dict[str, int], dict[str, Where]]:
    """Replicas in each zone, summed over the workloads, and where each zone is named."""
    counts: dict[str, int] = {}
    sources: dict[str, Where] = {}
    for workload in workloads:
        title = f"{workload.manifest.file}: {workload.manifest.title}"
        zones = workload_zones(workload.placed_by)
        if zones is None:
            raise _unpinned(workloads, title)
        share = workload.replicas
        if len(zones) > 1:
            spread = _hard_spread(workload.pod)
            if spread is None:
                raise ZonesUnknown(
                    f"{title} may run in {len(zones)} zones but does not spread over them "
                    f"evenly ({_NO_SPREAD})"
                )
            if workload.replicas % len(zones):
                raise ZonesUnknown(
                    f"{title}: {workload.replicas} replicas do not spread evenly over "
                    f"{len(zones)} zones; which zone gets more is the scheduler's choice"
                )
            share = workload.replicas // len(zones)
        for zone in zones:
            counts[zone.value] = counts.get(zone.value, 0) + share
            sources.setdefault(zone.value, zone.where)
    return counts, sources
