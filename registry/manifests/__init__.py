"""Capacity plans built from the Kubernetes manifests that ship (issue 13)."""

from registry.manifests.from_manifests import ManifestPlan, plan_from_manifests
from registry.manifests.loading import Where

__all__ = ["ManifestPlan", "Where", "plan_from_manifests"]
