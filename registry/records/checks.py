"""Cross-record checks: what a person expects once a record's references are known."""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel

from registry.errors import FieldProblem, InvalidInput
from registry.records.common import Metadata
from registry.records.evidence import EntryKind, LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.observation import Observation
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.waiver import Waiver
from registry.records.workload import WorkloadProfile


def _check_plan(plan: CapacityPlan, targets: dict[str, BaseModel]) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    provider = cast(ProviderProfile, targets["provider"])
    workload = cast(WorkloadProfile, targets["workload"])
    for zone in plan.replicas_per_zone:
        if zone not in provider.zones:
            problems.append(
                FieldProblem(
                    f"replicas_per_zone.{zone}",
                    f"zone {zone!r} is not one of the provider's zones "
                    f"({', '.join(provider.zones)})",
                )
            )
    class_names = {c.name for c in workload.classes}
    for section, names in (
        ("admission.classes", plan.admission.classes),
        ("claims.per_class", plan.claims.per_class),
    ):
        for name in names:
            if name not in class_names:
                problems.append(
                    FieldProblem(
                        f"{section}.{name}",
                        f"traffic class {name!r} is not in workload {workload.name} "
                        f"({', '.join(sorted(class_names))})",
                    )
                )
    if plan.serving.max_model_len > provider.model.max_context_tokens:
        problems.append(
            FieldProblem(
                "serving.max_model_len",
                f"{plan.serving.max_model_len} exceeds the model's context length "
                f"({provider.model.max_context_tokens})",
            )
        )
    tp, heads = plan.parallelism.tensor_parallel, provider.model.attention_heads
    if heads % tp:
        problems.append(
            FieldProblem(
                "parallelism.tensor_parallel",
                f"{tp} does not divide the model's {heads} attention heads",
            )
        )
    return problems


def _check_observation(
    observation: Observation, targets: dict[str, BaseModel]
) -> list[FieldProblem]:
    """Drift is judged against the workload the plan pins: the two must agree."""
    plan = cast(CapacityPlan, targets["plan"])
    if observation.workload != plan.workload:
        return [
            FieldProblem(
                "workload",
                f"{observation.workload} is not the workload plan {observation.plan} pins "
                f"({plan.workload})",
            )
        ]
    return []


def _check_evidence(
    evidence: LoadTestEvidence, targets: dict[str, BaseModel]
) -> list[FieldProblem]:
    workload = cast(WorkloadProfile, targets["workload"])
    class_names = {c.name for c in workload.classes}
    # An imported record's class came from --class (or the file's own label): say so.
    hint = (
        "; name the class the test offered with --class NAME (API: form field traffic_class)"
        if evidence.provenance.entry is EntryKind.imported
        else ""
    )
    problems = [
        FieldProblem(
            f"results.per_class.{name}",
            f"traffic class {name!r} is not in workload {workload.name} "
            f"({', '.join(sorted(class_names))}){hint}",
        )
        for name in evidence.results.per_class
        if name not in class_names
    ]
    if "plan" in targets:
        plan = cast(CapacityPlan, targets["plan"])
        for role in ("workload", "provider"):
            stated = getattr(evidence.measured_against, role)
            planned = getattr(plan, role)
            if stated != planned:
                problems.append(
                    FieldProblem(
                        f"measured_against.{role}",
                        f"{stated} differs from the plan's {role} ({planned})",
                    )
                )
    return problems


def _check_waiver(waiver: Waiver, targets: dict[str, BaseModel]) -> list[FieldProblem]:
    plan = targets.get("plan")
    if isinstance(plan, CapacityPlan) and plan.name != waiver.plan:
        return [
            FieldProblem(
                "granted_for",
                f"{waiver.granted_for} is a version of plan {plan.name}, not of {waiver.plan}",
            )
        ]
    return []


def cross_check(kind: RecordKind, record: Metadata, targets: dict[str, BaseModel]) -> None:
    if kind is RecordKind.waiver:
        problems = _check_waiver(cast(Waiver, record), targets)
    elif kind is RecordKind.plan:
        problems = _check_plan(cast(CapacityPlan, record), targets)
    elif kind is RecordKind.evidence:
        problems = _check_evidence(cast(LoadTestEvidence, record), targets)
    elif kind is RecordKind.observation:
        problems = _check_observation(cast(Observation, record), targets)
    else:
        problems = []
    if problems:
        raise InvalidInput(f"invalid {kind.value} record", problems=problems)
