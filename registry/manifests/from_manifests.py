"""A capacity plan built from the Kubernetes manifests that will be applied.

The manifests are what ships: every plan field they state is read from them, with the
file, document and line it came from. What they cannot state (admission, retries, the
reserve, claims, the plan's name and references) comes from an overlay, a plan fragment,
or from the caller. A required field stated by neither is an error that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from registry.errors import InvalidInput
from registry.manifests.identity import (
    identity_fields,
    refuse_unservable,
    served_model,
    spot_notes,
    vllm_version,
)
from registry.manifests.loading import Manifest, Where, read_manifests
from registry.manifests.operators import no_workload, not_read
from registry.manifests.operators import note as not_read_note
from registry.manifests.overlay import Overlay, merge, read_overlay, shadowed
from registry.manifests.pods import Fields, grace_period, pipeline_parallel, pre_stop, probes
from registry.manifests.pods import serving_fields as flag_fields
from registry.manifests.problems import ManifestErrors, Problem, place, problems_of
from registry.manifests.scaling import SCALER_KINDS, autoscaling, disruption_budget, hpa_floor
from registry.manifests.workloads import (
    RUNTIME_KINDS,
    WORKLOAD_KINDS,
    ServingWorkload,
    read_workload,
    serving_runtimes,
)
from registry.manifests.zones import ZONE_SPREAD, EvenSpread, ZonesUnknown, replicas_per_zone
from registry.records.documents import validate_record
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
# Every kind read: a document of another kind that cannot be decoded is skipped with a note.
READ_KINDS = frozenset({*WORKLOAD_KINDS, *RUNTIME_KINDS, *SCALER_KINDS, PDB})
T = TypeVar("T")


def reads(group: str, kind: str) -> bool:
    return (group, kind) in READ_KINDS


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
    problems = [
        Problem(
            place(where),
            field,
            f"{value!r} here but {fields[field][0]!r} at {fields[field][1]}: one plan "
            "serves with one configuration",
        )
        for field, (value, where) in more.items()
        if field in fields and fields[field][0] != value
    ]
    if problems:
        raise ManifestErrors(problems)


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
    overlay: Overlay | None,
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
        # Led by the replicas: line, where the manifests say how many run.
        replicas_at = place(workloads[0].replicas_at)
        given = overlay.document.get("replicas_per_zone")
        if not isinstance(given, dict):
            in_overlay = f" ({overlay.file})" if overlay.file else ""
            raise ManifestErrors(
                [
                    Problem(
                        replicas_at,
                        "replicas_per_zone",
                        f"{exc}; give it in the overlay{in_overlay}",
                    )
                ]
            ) from None
        total = sum(w.replicas for w in workloads)
        # Non-integers are left for the plan's validation to name.
        placed = sum(v for v in given.values() if isinstance(v, int))
        if placed != total:
            each = ""
            if len(workloads) > 1:
                each = " (" + ", ".join(f"{w.replicas} at {w.replicas_at}" for w in workloads) + ")"
            problem = (
                f"the manifests run {total} replicas{each}, but the overlay places {placed} "
                f"({overlay.at('replicas_per_zone')})"
            )
            raise ManifestErrors([Problem(replicas_at, "replicas_per_zone", problem)]) from None
        if exc.spread is not None:
            _check_spread(exc.spread, given, overlay)
        notes.append(f"replicas_per_zone from the overlay: {exc}")
        return {}
    fields: Fields = {"replicas_per_zone": (counts, workloads[0].replicas_at)}
    for zone, at in where.items():
        fields[f"replicas_per_zone.{zone}"] = (counts[zone], at)
    return fields


def _check_spread(spread: EvenSpread, given: dict[str, Any], overlay: Overlay) -> None:
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
        f"the hard zone spread runs {spread.replicas} replicas within one of each other, "
        f"{share} in each of the overlay's {len(counts)} zones, but the overlay places "
        f"{placed} ({overlay.at('replicas_per_zone')})"
    )
    # Led by the constraint: the manifests fix the share there.
    raise ManifestErrors([Problem(place(spread.constraint), "replicas_per_zone", problem)])


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


def _collect(problems: list[Problem], read: Callable[..., T], *args: Any) -> tuple[bool, T | None]:
    """``read(*args)``, or its problems added to ``problems``: reading goes on to find
    them all."""
    try:
        return True, read(*args)
    except InvalidInput as exc:
        problems.extend(problems_of(exc))
        return False, None


def manifest_fields(manifests: list[Manifest], overlay: Overlay | None, notes: list[str]) -> Fields:
    """The plan fields the manifests state, each with its source. ``overlay`` None: no
    plan is being built, so zones the manifests leave unknown are just not stated."""
    problems: list[Problem] = []
    fields = _read(manifests, overlay, notes, problems)[0]
    if problems:
        raise ManifestErrors(problems)
    return fields


def compared_fields(
    manifests: list[Manifest], notes: list[str], problems: Sequence[Problem] = ()
) -> Fields:
    """What the manifests state to compare with a plan: the plan fields they state and
    ``total_replicas``, the serving replicas they run in all, located at the first
    workload's ``replicas:`` (or the HPA ``minReplicas`` that stands in for it). The total
    is stated however the replicas spread, also when which zone runs how many is the
    scheduler's choice and ``replicas_per_zone`` is left unstated. And what they serve
    (``provider.*``, registry.manifests.identity), for the provider the plan pins.

    ``problems``: those found reading the files, raised with every one found here."""
    found = list(problems)
    fields, workloads = _read(manifests, None, notes, found)
    if found:
        raise ManifestErrors(found)
    fields[TOTAL_REPLICAS] = (sum(w.replicas for w in workloads), workloads[0].replicas_at)
    # What is served (model, image, accelerator, dtypes), compared with the provider.
    served: Fields = {}
    for workload in workloads:
        ok, more = _collect(found, identity_fields, workload)
        if ok and more is not None and _collect(found, _same, served, more, workload)[0]:
            served.update({k: v for k, v in more.items() if k not in served})
    if found:
        raise ManifestErrors(found)
    return {**fields, **served}


def read_compared(paths: Sequence[str]) -> tuple[Fields, list[str]]:
    """compared_fields of the manifests under ``paths`` (every problem raised at once),
    and the files they were read from."""
    reading = read_manifests(paths, reads=reads)
    fields = compared_fields(reading.manifests, [], reading.problems)
    return fields, list(dict.fromkeys(m.file for m in reading.manifests))


def _read(
    manifests: list[Manifest],
    overlay: Overlay | None,
    notes: list[str],
    problems: list[Problem],
) -> tuple[Fields, list[ServingWorkload]]:
    """The fields and workloads read; every problem found is added to ``problems``, for
    the caller to raise together. What spans documents (zones, a missing
    workload) is judged only when every document read: a document left unread would
    make it wrong."""
    workloads: list[ServingWorkload] = []
    hpas: list[Manifest] = []
    pdbs: list[Manifest] = []
    unread: list[tuple[Manifest, str]] = []  # resources an operator makes pods of
    runtimes = serving_runtimes(manifests)
    for manifest in manifests:
        key = (manifest.api_group, manifest.kind)
        if key in WORKLOAD_KINDS:
            _, workload = _collect(problems, read_workload, manifest, notes, runtimes)
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
        if problems:
            return {}, []  # no workload read: nothing else is judged
        raise no_workload(unread)
    every_document_read = not problems
    replicated = [_collect(problems, _replicas, w, hpas, notes)[1] for w in workloads]
    workloads = [workload for workload in replicated if workload is not None]
    fields: Fields = {}
    for workload in workloads:
        ok, more = _collect(problems, _workload_fields, workload, notes)
        if ok and more is not None and _collect(problems, _same, fields, more, workload)[0]:
            fields.update({k: v for k, v in more.items() if k not in fields})
    if every_document_read and not problems:
        ok, zones = _collect(problems, _zones, workloads, overlay, notes)
        fields.update(zones or {})
    _, scaling = _collect(problems, autoscaling, hpas, workloads, notes)
    fields.update(scaling or {})
    _, budget = _collect(problems, disruption_budget, pdbs, workloads)
    fields.update(budget or {})
    rollouts = [w.rollout_max_unavailable for w in workloads if w.rollout_max_unavailable]
    if rollouts:
        # Workloads roll out independently: at worst all at once.
        fields["drain.rollout_max_unavailable"] = (sum(r[0] for r in rollouts), rollouts[0][1])
    return fields, workloads


def _under(field: str, section: str) -> bool:
    return not section or field == section or field.startswith(section + ".")


def _locate(
    loc: str,
    message: str,
    fields: Fields,
    overlay: Overlay,
    vllm_at: Where | None,
) -> Problem:
    """A problem of the merged plan, led by the file and line where the wrong value is
    written: the manifests' when they state it, else the overlay's; the overlay is
    mentioned second where it takes part."""
    if message == "field required" and loc not in fields:
        # Stated by neither: a serving flag belongs in the vLLM container's args.
        flag = f" (or --{loc})" if loc in CALLER_FIELDS else ""
        in_overlay = f" ({overlay.file})" if overlay.file else ""
        if vllm_at is not None and loc.startswith(("serving.", "parallelism.")):
            text = "not in the manifests (this vLLM container passes no such flag); give it"
            return Problem(place(vllm_at), loc, f"{text} in the overlay{in_overlay}")
        return Problem(overlay.place(loc), loc, f"{NOT_IN_MANIFESTS}{in_overlay}{flag}")
    if loc in fields:
        where = fields[loc][1]
        if overlay.states(loc):
            message += f" (the overlay's value at {overlay.at(loc)} is overridden)"
        return Problem(place(where), loc, message)
    # A rule across fields (a section's or the plan's): led by the manifest field it names.
    below = [f for f in fields if _under(f, loc) and "." not in f.removeprefix(loc)[1:]]
    named = [f for f in below if f.rpartition(".")[2] in message] or below
    if named:
        # Led by the field the message names first (max_replicas of "max_replicas (2) is
        # below min_replicas (9)"), then by where they are written.
        first, *others = sorted(
            named, key=lambda f: (message.find(f.rpartition(".")[2]), fields[f][1])
        )
        also = [f"{f} at {fields[f][1]}" for f in others]
        also += [
            f"{f} in the overlay at {overlay.at(f)}"
            for f in sorted(overlay.lines)
            if _under(f, loc) and f not in fields and f.rpartition(".")[2] in message
        ]
        said = f" ({first} here; {', '.join(also)})" if also else f" ({first} here)"
        return Problem(place(fields[first][1]), loc, message + said)
    return Problem(overlay.place(loc) if overlay.states(loc) else None, loc, message)


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
    problems: list[Problem] = []
    _, read = _collect(problems, read_overlay, overlay)
    overlay_read = read or Overlay()
    reading = read_manifests(paths, skip=[overlay] if overlay else [], reads=reads)
    notes.extend(reading.notes)
    problems.extend(reading.problems)
    if read is None:
        # The overlay could not be read: the manifests' own problems too, but nothing
        # that compares them with it.
        _read(reading.manifests, None, notes, problems)
        raise ManifestErrors(problems)
    fields, workloads = _read(reading.manifests, overlay_read, notes, problems)
    problems += [
        Problem(
            overlay_read.place(path),
            path,
            f"the overlay gives a value here, but the manifests state {field} "
            f"({fields[field][1]}): give its fields, not a value",
        )
        for path, field in shadowed(fields, overlay_read)
    ]
    if problems:
        raise ManifestErrors(problems)
    # Per-zone sources are reported; the plan field itself is the whole map.
    plan_fields = {k: v for k, v in fields.items() if not k.startswith("replicas_per_zone.")}
    document = merge(plan_fields, overlay_read.document, notes)
    for field, value in zip(CALLER_FIELDS, (name, workload, provider), strict=True):
        if value is not None:
            if field in document and document[field] != value:
                notes.append(f"{field}: {value!r} given on the command line, not the overlay's")
            document[field] = value
    try:
        record = validate_record(RecordKind.plan, document)
    except InvalidInput as exc:
        vllm_at = workloads[0].vllm.container.where if workloads else None
        raise ManifestErrors(
            [_locate(p.loc, p.message, fields, overlay_read, vllm_at) for p in exc.problems]
        ) from None
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
