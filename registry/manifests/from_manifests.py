"""A capacity plan built from the Kubernetes manifests that will be applied.

The manifests are what ships: every plan field they state is read from them, with the
file, document and line it came from. What they cannot state (admission, retries, the
reserve, claims, the plan's name and references) comes from an overlay, a plan fragment,
or from the caller. A required field stated by neither is an error that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.manifests.identity import (
    identity_fields,
    refuse_unservable,
    served_model,
    spot_notes,
    vllm_version,
)
from registry.manifests.loading import Manifest, Where, load_manifests
from registry.manifests.operators import no_workload, not_read
from registry.manifests.operators import note as not_read_note
from registry.manifests.overlay import merge
from registry.manifests.pods import Fields, grace_period, pipeline_parallel, pre_stop, probes
from registry.manifests.pods import serving_fields as flag_fields
from registry.manifests.scaling import SCALER_KINDS, autoscaling, disruption_budget, hpa_floor
from registry.manifests.workloads import (
    RUNTIME_KINDS,
    WORKLOAD_KINDS,
    ServingWorkload,
    read_workload,
    serving_runtimes,
)
from registry.manifests.zones import ZONE_SPREAD, EvenSpread, ZonesUnknown, replicas_per_zone
from registry.records.documents import load_document, validate_record
from registry.records.kinds import RecordKind

# Kinds read besides the workloads; anything else (Services, ConfigMaps...) is noted.
PDB = ("policy", "PodDisruptionBudget")
NOT_IN_MANIFESTS = "not in the manifests; give it in the overlay"
# What the caller may give besides the overlay (the CLI's --name, --workload, --provider).
CALLER_FIELDS = ("name", "workload", "provider")
# Not a plan field but what the plan's replicas_per_zone adds up to (the gate input's
# plan.total_replicas): compared by `gate check --manifests` whatever the zones.
TOTAL_REPLICAS = "total_replicas"
# Serving fields with a default in the plan schema: when nobody states them the plan
# takes its default, while vLLM takes its own (which varies between versions).
DEFAULTED = (
    "parallelism.tensor_parallel",
    "serving.block_size",
    "serving.enable_chunked_prefill",
    "serving.enable_prefix_caching",
    "serving.scheduling_policy",
)


@dataclass(frozen=True)
class ManifestPlan:
    """The plan document (validates as a CapacityPlan), where each field came from, and
    notes on what was skipped, defaulted or overridden."""

    document: dict[str, Any]
    sources: dict[str, Where]
    notes: list[str]


def _same(fields: Fields, more: Fields, workload: ServingWorkload) -> None:
    """Workloads of one plan (one per zone, say) must serve with the same settings."""
    for field, (value, where) in more.items():
        if field in fields and fields[field][0] != value:
            workload.pod.fail(
                f"{field} is {value!r} at {where} but {fields[field][0]!r} at "
                f"{fields[field][1]}: one plan serves with one configuration"
            )


def _workload_fields(workload: ServingWorkload, notes: list[str]) -> Fields:
    refuse_unservable(workload)
    command = workload.vllm
    fields = flag_fields(command, notes)
    assert workload.gpus_at is not None
    fields["parallelism.gpus_per_replica"] = (workload.gpus_per_replica, workload.gpus_at)
    tp = fields.get("parallelism.tensor_parallel", (1, workload.gpus_at))[0]
    pp = pipeline_parallel(command) or 1
    if tp * pp != workload.gpus_per_replica:
        command.container.fail(
            f"tensor-parallel-size {tp} x pipeline-parallel-size {pp} is {tp * pp} "
            f"GPUs, but a replica holds {workload.gpus_per_replica}"
        )
    fields.update(grace_period(workload.pod, notes))
    fields.update(pre_stop(command.holding("lifecycle"), notes))
    fields.update(probes(command.holding("startupProbe", "readinessProbe")))
    image = command.holding("image").string("image")
    if image is not None:
        version, why = vllm_version(image.value)
        if version is None:
            notes.append(f"runtime: {image.value} at {image.where} {why}")
        else:
            notes.append(f"runtime: {image.value} (vLLM {version}) at {image.where}")
    model = served_model(command)  # also KServe's --model_id or storageUri
    if model is not None:
        notes.append(f"model: {model.text} at {model.where}")
    served = identity_fields(workload).items()
    notes.extend(spot_notes((name, v, at.file, at.line) for name, (v, at) in served))
    return fields


def _zones(
    workloads: list[ServingWorkload],
    overlay: dict[str, Any] | None,
    notes: list[str],
) -> Fields:
    try:
        counts, where = replicas_per_zone(workloads)
    except ZonesUnknown as exc:
        if overlay is None:
            # Only comparing what the manifests state: no zone names, but an even spread
            # still holds the plan's zones within one replica of each other.
            notes.append(f"replicas_per_zone not stated: {exc}")
            return {} if exc.spread is None else {ZONE_SPREAD: (1, exc.spread.constraint)}
        given = overlay.get("replicas_per_zone")
        if not isinstance(given, dict):
            raise InvalidInput(
                str(exc),
                problems=[FieldProblem("replicas_per_zone", f"{exc}; give it in the overlay")],
            ) from None
        total = sum(w.replicas for w in workloads)
        # Non-integers are left for the plan's validation to name.
        placed = sum(v for v in given.values() if isinstance(v, int))
        if placed != total:
            problem = f"the overlay places {placed} replicas, the manifests run {total}"
            raise InvalidInput(
                "the overlay disagrees with the manifests",
                problems=[FieldProblem("replicas_per_zone", problem)],
            ) from None
        if exc.spread is not None:
            _check_spread(exc.spread, given)
        notes.append(f"replicas_per_zone from the overlay: {exc}")
        return {}
    fields: Fields = {"replicas_per_zone": (counts, workloads[0].replicas_at)}
    for zone, at in where.items():
        fields[f"replicas_per_zone.{zone}"] = (counts[zone], at)
    return fields


def _check_spread(spread: EvenSpread, given: dict[str, Any]) -> None:
    """The overlay names the zones; the manifests' hard spread fixes how many each runs."""
    counts = {zone: n for zone, n in given.items() if isinstance(n, int)}
    if not counts:
        return
    fewest, most = spread.shares(len(counts))
    off = {zone: n for zone, n in sorted(counts.items()) if not fewest <= n <= most}
    if not off:
        return
    share = f"{fewest}" if fewest == most else f"{fewest} or {most}"
    placed = ", ".join(f"{zone}: {n}" for zone, n in off.items())
    problem = (
        f"{spread.constraint}: the hard zone spread runs {spread.replicas} replicas within "
        f"one of each other, {share} in each of the overlay's {len(counts)} zones, but "
        f"the overlay places {placed}"
    )
    raise InvalidInput(
        "the overlay disagrees with the manifests",
        problems=[FieldProblem("replicas_per_zone", problem)],
    )


def _replicas(workload: ServingWorkload, hpas: list[Manifest], notes: list[str]) -> ServingWorkload:
    """A workload that states no replicas runs what its HPA keeps at least, else one."""
    if workload.replicas_stated:
        return workload
    title = f"{workload.manifest.file}: {workload.manifest.title}"
    floor = hpa_floor(hpas, workload)
    if floor is None:
        notes.append(f"{title} states no replicas; Kubernetes' default (1) is used")
        return workload
    notes.append(f"{title} states no replicas; its HPA's minReplicas ({floor.value}) is used")
    return replace(workload, replicas=floor.value, replicas_at=floor.where, replicas_stated=True)


def manifest_fields(
    manifests: list[Manifest], overlay: dict[str, Any] | None, notes: list[str]
) -> Fields:
    """The plan fields the manifests state, each with its source. ``overlay`` None: no
    plan is being built, so zones the manifests leave unknown are just not stated."""
    return _read(manifests, overlay, notes)[0]


def compared_fields(manifests: list[Manifest], notes: list[str]) -> Fields:
    """What the manifests state to compare with a plan: the plan fields they state and
    ``total_replicas``, the serving replicas they run in all, located at the first
    workload's ``replicas:`` (or the HPA ``minReplicas`` that stands in for it). The total
    is stated however the replicas spread, also when which zone runs how many is the
    scheduler's choice and ``replicas_per_zone`` is left unstated. And what they serve
    (``provider.*``, registry.manifests.identity), for the provider the plan pins."""
    fields, workloads = _read(manifests, None, notes)
    fields[TOTAL_REPLICAS] = (sum(w.replicas for w in workloads), workloads[0].replicas_at)
    # What is served (model, image, accelerator, dtypes), compared with the provider.
    served: Fields = {}
    for workload in workloads:
        more = identity_fields(workload)
        _same(served, more, workload)
        served.update({k: v for k, v in more.items() if k not in served})
    return {**fields, **served}


def _read(
    manifests: list[Manifest], overlay: dict[str, Any] | None, notes: list[str]
) -> tuple[Fields, list[ServingWorkload]]:
    workloads: list[ServingWorkload] = []
    hpas: list[Manifest] = []
    pdbs: list[Manifest] = []
    unread: list[tuple[Manifest, str]] = []  # resources an operator makes pods of
    runtimes = serving_runtimes(manifests)
    for manifest in manifests:
        key = (manifest.api_group, manifest.kind)
        if key in WORKLOAD_KINDS:
            workload = read_workload(manifest, notes, runtimes)
            if workload is not None:
                workloads.append(workload)
        elif key in RUNTIME_KINDS:
            continue  # read with the InferenceServices that name them
        elif key in SCALER_KINDS:
            hpas.append(manifest)
        elif key == PDB:
            pdbs.append(manifest)
        elif (why := not_read(manifest)) is not None:
            # NIMService, LLMInferenceService...: registry.manifests.operators says why.
            unread.append((manifest, why))
            notes.append(not_read_note(manifest, why))
        else:
            notes.append(f"{manifest.file}: {manifest.title} ({key[0] or 'core'}) ignored")
    if not workloads:
        raise no_workload(unread)
    workloads = [_replicas(workload, hpas, notes) for workload in workloads]
    fields: Fields = {}
    for workload in workloads:
        more = _workload_fields(workload, notes)
        _same(fields, more, workload)
        fields.update({k: v for k, v in more.items() if k not in fields})
    fields.update(_zones(workloads, overlay, notes))
    scaling = autoscaling(hpas, workloads, notes)
    fields.update(scaling)
    fields.update(disruption_budget(pdbs, workloads))
    rollouts = [w.rollout_max_unavailable for w in workloads if w.rollout_max_unavailable]
    if rollouts:
        # Workloads roll out independently: at worst all at once.
        fields["drain.rollout_max_unavailable"] = (sum(r[0] for r in rollouts), rollouts[0][1])
    return fields, workloads


def _required_problems(error: InvalidInput, fields: Fields) -> list[FieldProblem]:
    """A required field stated by neither the manifests nor the overlay says so."""
    problems = []
    for problem in error.problems:
        if problem.message == "field required" and problem.loc not in fields:
            flag = f" (or --{problem.loc})" if problem.loc in CALLER_FIELDS else ""
            problems.append(FieldProblem(problem.loc, NOT_IN_MANIFESTS + flag))
        else:
            problems.append(problem)
    return problems


def _ordered(document: Any, validated: Any) -> Any:
    """``document`` in the schema's field order (as validated dumps it), its values as
    written (300, not 300.0)."""
    if isinstance(document, dict) and isinstance(validated, dict):
        return {key: _ordered(document[key], validated[key]) for key in validated}
    return document


def plan_from_manifests(
    paths: Sequence[str],
    *,
    overlay: Path | None = None,
    workload: str | None = None,
    provider: str | None = None,
    name: str | None = None,
) -> ManifestPlan:
    """The capacity plan the manifests under ``paths`` ship (``-`` reads stdin).

    ``overlay``: a plan fragment for what manifests cannot say; manifest fields win over
    it. ``workload``, ``provider`` and ``name`` win over the overlay's. Raises
    InvalidInput naming file, document, line and field for a bad manifest, and the plan
    field for one neither source states.
    """
    notes: list[str] = []
    overlay_document = load_document(overlay) if overlay is not None else {}
    manifests, skipped = load_manifests(paths, skip=[overlay] if overlay else [])
    notes.extend(skipped)
    fields = manifest_fields(manifests, overlay_document, notes)
    # Per-zone sources are reported; the plan field itself is the whole map.
    plan_fields = {k: v for k, v in fields.items() if not k.startswith("replicas_per_zone.")}
    document = merge(plan_fields, overlay_document, notes)
    for field, value in zip(CALLER_FIELDS, (name, workload, provider), strict=True):
        if value is not None:
            if field in document and document[field] != value:
                notes.append(f"{field}: {value!r} given on the command line, not the overlay's")
            document[field] = value
    try:
        record = validate_record(RecordKind.plan, document)
    except InvalidInput as exc:
        problems = _required_problems(exc, fields)
        first = fields.get(problems[0].loc) if problems else None
        source = str(first[1]) if first else (str(overlay) if overlay else None)
        raise InvalidInput(exc.message, problems=problems, source=source) from None
    plan = record.model_dump(mode="json", exclude_unset=True)
    full = record.model_dump(mode="json")
    for field in DEFAULTED:
        section, _, key = field.partition(".")
        if key not in plan.get(section, {}):
            notes.append(
                f"{field}: stated by neither the manifests nor the overlay; the plan's "
                f"default ({full[section][key]!r}) applies, which need not be vLLM's"
            )
    return ManifestPlan(
        document=_ordered(document, plan),
        sources={field: where for field, (_, where) in sorted(fields.items())},
        notes=list(dict.fromkeys(notes)),  # several workloads may note the same runtime
    )
