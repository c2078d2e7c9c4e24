"""Assembling the gate's input document from the registry and the planner's result.

`gate_input` builds the whole document: the plan, workload and provider sections, the
production signal and the manifests comparison here; the workload's classes, the
evidence and the recomputation from their modules (registry.gate.workload_input,
evidence_input, recomputation_input).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from registry.gate.context import PlanContext
from registry.gate.evidence_input import evidence_input
from registry.gate.recomputation_input import recomputation_input
from registry.gate.workload_input import workload_class_input
from registry.planner.result import PlanRecomputation
from registry.policy.input_document import (
    DriftChangeInput,
    GateInput,
    ManifestDiscrepancyInput,
    ManifestsInput,
    PlanInput,
    ProductionInput,
    ProviderInput,
    WorkloadInput,
)
from registry.policy.input_recomputation import CalibrationInput
from registry.staleness.rules import Change

if TYPE_CHECKING:
    from registry.manifests.consistency import StatedManifests
    from registry.records.provider import ProviderProfile


def _drift_rows(changes: list[Change]) -> list[DriftChangeInput]:
    return [
        DriftChangeInput(
            field=c.field,
            planned=_finite(c.old),
            observed=_finite(c.new),
            threshold=c.threshold,
            rule=c.rule,
        )
        for c in changes
    ]


def _finite(value: Any) -> Any:
    # JSON (and so the policy input) holds no infinities.
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def production_input(context: PlanContext) -> ProductionInput:
    signal = context.production
    if signal is None:
        return ProductionInput(observed=False)
    return ProductionInput(
        observed=True,
        observation=signal.ref,
        window_end=signal.observation.window_end.isoformat(),
        drift=_drift_rows(signal.drift.changes),
        slo_misses=_drift_rows(signal.drift.slo_misses),
    )


def manifests_input(
    plan: dict[str, Any],
    stated: StatedManifests | ManifestsInput | None,
    provider: ProviderProfile | None = None,
) -> ManifestsInput:
    """The manifests section: what the manifests given with the check state against
    ``plan`` (the plan version's content, as validated), and what they serve against
    ``provider`` (the provider version the plan pins). A section already compared (an
    earlier decision's on the same plan version, which a recheck carries over) is kept."""
    if isinstance(stated, ManifestsInput):
        return stated
    if stated is None:
        return ManifestsInput(checked=False, discrepancies=[])
    from registry.manifests.consistency import discrepancies, notes
    from registry.manifests.provider_match import compare_provider
    from registry.policy.input_document import ManifestProviderDiscrepancyInput

    served, not_compared = compare_provider(provider, stated.fields) if provider else ([], [])
    return ManifestsInput(
        checked=True,
        discrepancies=[
            ManifestDiscrepancyInput(**found.model_dump()) for found in discrepancies(plan, stated)
        ],
        notes=[*notes(plan, stated), *not_compared],
        provider_discrepancies=[
            ManifestProviderDiscrepancyInput(**found.model_dump()) for found in served
        ],
        compared_fields=len(stated.fields),
        files=dict(stated.files),
    )


def gate_input(
    context: PlanContext,
    result: PlanRecomputation,
    previous_calibration: tuple[str, CalibrationInput] | None = None,
    manifests: StatedManifests | ManifestsInput | None = None,
) -> GateInput:
    """The input document; ``previous_calibration`` is (decision id, calibration) of the
    plan's previous decision, when it had one; ``manifests`` the fields the manifests
    given with the check state, compared here with the plan version decided on (or the
    comparison an earlier decision on this version made)."""
    plan, workload, provider = context.plan, context.workload, context.provider
    dump: dict[str, Any] = plan.model_dump(mode="json")
    return GateInput(
        plan=PlanInput(
            ref=context.plan_view.ref,
            digest=context.plan_view.digest,
            tensor_parallel=plan.parallelism.tensor_parallel,
            gpus_per_replica=plan.parallelism.gpus_per_replica,
            replicas_per_zone=dict(plan.replicas_per_zone),
            total_replicas=plan.total_replicas,
            serving=dump["serving"],
            admission=dump["admission"],
            autoscaling=dump["autoscaling"],
            drain=dump["drain"],
            warmup=dump["warmup"],
            reserve=dump["reserve"],
            claims=dump["claims"],
        ),
        workload=WorkloadInput(
            ref=context.workload_view.ref,
            digest=context.workload_view.digest,
            classes={c.name: workload_class_input(c) for c in workload.classes},
            peak_rps=sum(c.arrival.peak_rps for c in workload.classes),
            trace_digest=workload.measurement.trace_digest if workload.measurement else None,
        ),
        provider=ProviderInput(
            ref=context.provider_view.ref,
            digest=context.provider_view.digest,
            model=provider.model.name,
            accelerator=provider.accelerator.name,
            accelerator_memory_gib=provider.accelerator.memory_gib,
            interconnect=provider.accelerator.interconnect.kind.value,
            interconnect_bandwidth_gb_s=provider.accelerator.interconnect.bandwidth_gb_s,
            zones=list(provider.zones),
            warmup_s=provider.warmup.cold_start_to_ready_s,
            runtime=provider.runtime.name,
            runtime_version=provider.runtime.version,
        ),
        evidence=[evidence_input(item, context) for item in context.evidence],
        recomputation=recomputation_input(result, context, previous_calibration),
        manifests=manifests_input(dump, manifests, provider),
        production=production_input(context),
    )
