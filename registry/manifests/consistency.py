"""Do the manifests that ship agree with the plan the gate decides on?

The client reads the manifests (they are its files) and sends the plan fields they state,
each with its file, document and line (`stated_fields`). The server compares them with
the plan version it decides on (`discrepancies`), so the comparison is made against the
exact content the decision rests on, never against a copy the client holds. Only what
the manifests state is compared: admission, retries, the reserve and claims are not in
manifests, and a manifest set that leaves a plan field unstated contradicts nothing.

What the manifests serve (the model, the vLLM image, the accelerator, the dtypes: the
``provider.*`` fields, registry.manifests.identity) is compared with the provider
version the plan pins (``compare_provider``, registry.manifests.provider_match), not
with the plan.

The replicas are compared twice: ``total_replicas`` (what ``replicas_per_zone`` adds up
to) whatever the zones, at the workload's ``replicas:`` line, and each zone's count where
the manifests determine it. Where they do not (pods not pinned to zones, or a count that
does not spread evenly, so the scheduler picks which zone runs more) the total is still
compared and ``notes`` says that the zones were not. Pods not pinned to zones but under a
hard zone spread (``zone_spread``, registry.manifests.zones) run within one replica of each
other in whichever zones their nodes are in: each of the plan's zones is held to that
share of the manifests' total, on the assumption (said in a note) that the nodes are in
exactly the plan's zones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from registry.manifests.from_manifests import TOTAL_REPLICAS
from registry.manifests.identity import CAPACITY, PROVIDER, spot_notes
from registry.manifests.stated import stated_document
from registry.manifests.zones import ZONE_SPREAD

# Sections manifests can state (see from_manifests); anything else is not compared.
SECTIONS = ("replicas_per_zone", "parallelism", "serving", "autoscaling", "drain", "warmup")
ZONES = "replicas_per_zone"
# What the manifests state that is not a plan field: what they serve (compared with the
# provider, registry.manifests.provider_match) and the capacity they run on (a note).
NOT_PLAN = (PROVIDER, CAPACITY)
# One plan's manifests state a few dozen fields (plus one per zone): this is far above
# that and keeps a request, and the decision input it becomes, small.
MAX_FIELDS = 300
MAX_TEXT = 1024

_DOTTED = "|".join((*SECTIONS, *NOT_PLAN))
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT, pattern=r"^[^\x00]*$")]
FieldName = Annotated[
    str,
    StringConstraints(
        max_length=256,
        pattern=rf"^({TOTAL_REPLICAS}|{ZONE_SPREAD}|({_DOTTED})\.[^\x00]+)$",
    ),
]
Digest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
# A stated value is a scalar: maps (replicas_per_zone) are sent one key at a time.
Scalar = bool | int | float | Text | None


class StatedField(BaseModel):
    """One field the manifests state: its value and where it is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: Scalar
    file: Text
    document: int = Field(ge=0, le=2**31 - 1)
    line: int = Field(ge=1, le=2**31 - 1)


class StatedManifests(BaseModel):
    """What a gate check's client read from the manifests: dotted plan field -> source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fields: dict[FieldName, StatedField] = Field(max_length=MAX_FIELDS)
    # A default: clients before it sent the fields alone.
    files: dict[Text, Digest] = Field(
        default_factory=dict,
        max_length=MAX_FIELDS,
        description="The sha256 of each manifest file read (stdin has none).",
    )


class Discrepancy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    plan: Any
    manifests: Any
    file: str
    document: int
    line: int


def stated_fields(paths: Sequence[str]) -> StatedManifests:
    """The plan fields the manifests under ``paths`` state, with their sources, validated
    as the server validates them (see registry.manifests.stated)."""
    return StatedManifests.model_validate(stated_document(paths))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def same(plan: Any, manifests: Any) -> bool:
    """Equal as the plan means them: 9 and 9.0 are one number; true is never 1."""
    if _number(plan) and _number(manifests):
        return float(plan) == float(manifests)
    if isinstance(plan, bool) or isinstance(manifests, bool):
        return plan is manifests
    return bool(plan == manifests)


def _total(plan: dict[str, Any]) -> int | None:
    zones = plan.get(ZONES)
    if not isinstance(zones, dict):
        return None
    return sum(count for count in zones.values() if isinstance(count, int))


def _at(plan: dict[str, Any], name: str) -> Any:
    if name == TOTAL_REPLICAS:
        return _total(plan)
    section, _, rest = name.partition(".")
    value = plan.get(section)
    if section == ZONES:
        # Zone names are map keys, never split on a dot.
        return value.get(rest) if isinstance(value, dict) else None
    for key in rest.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def discrepancies(plan: dict[str, Any], stated: StatedManifests) -> list[Discrepancy]:
    """Every stated field whose value the plan (its content as validated, defaults
    included) does not have, in field order. ``total_replicas`` is compared with what the
    plan's zones add up to, whether or not the zones are stated too."""
    found: list[Discrepancy] = []
    for name, source in sorted(stated.fields.items()):
        if name == ZONE_SPREAD or name.startswith(tuple(f"{section}." for section in NOT_PLAN)):
            continue
        planned = _at(plan, name)
        if not same(planned, source.value):
            found.append(_discrepancy(name, planned, source.value, source))
    zones = {n: s for n, s in stated.fields.items() if n.startswith(f"{ZONES}.")}
    planned_zones = plan.get(ZONES) or {}
    if zones:
        # Manifests that place replicas by zone run none in a zone they do not name: a
        # plan counting replicas there is contradicted, at the first zone they do name.
        first = zones[min(zones)]
        for zone in sorted(planned_zones):
            if f"{ZONES}.{zone}" not in zones and planned_zones[zone] != 0:
                found.append(_discrepancy(f"{ZONES}.{zone}", planned_zones[zone], 0, first))
    found.extend(_spread_discrepancies(plan, stated))
    return sorted(found, key=lambda d: d.field)


def _spread_discrepancies(plan: dict[str, Any], stated: StatedManifests) -> list[Discrepancy]:
    """Each plan zone outside the share an even spread of the manifests' replicas over
    the plan's zones gives it (the fewest or the most, whichever it is nearer)."""
    spread = stated.fields.get(ZONE_SPREAD)
    zones = plan.get(ZONES)
    if spread is None or not isinstance(zones, dict) or not zones:
        return []
    total = stated.fields.get(TOTAL_REPLICAS)
    replicas = total.value if total is not None and _number(total.value) else _total(plan)
    if not isinstance(replicas, int):
        return []
    fewest, most = replicas // len(zones), -(-replicas // len(zones))
    found = []
    for zone, count in sorted(zones.items()):
        if isinstance(count, int) and not fewest <= count <= most:
            share = fewest if count < fewest else most
            found.append(_discrepancy(f"{ZONES}.{zone}", count, share, spread))
    return found


def _discrepancy(name: str, plan: Any, manifests: Any, source: StatedField) -> Discrepancy:
    return Discrepancy(
        field=name,
        plan=plan,
        manifests=manifests,
        file=source.file,
        document=source.document,
        line=source.line,
    )


def notes(plan: dict[str, Any], stated: StatedManifests) -> list[str]:
    """What the manifests leave uncompared although they run the replicas: the plan's
    zones, when the manifests state the total but not which zone runs how many; the spot
    capacity they place the pods on, which no plan field states."""
    return _zone_notes(plan, stated) + _spot_notes(stated)


def _spot_notes(stated: StatedManifests) -> list[str]:
    return spot_notes(
        (name, source.value, source.file, source.line)
        for name, source in sorted(stated.fields.items())
        if name.startswith(f"{CAPACITY}.")
    )


def _zone_notes(plan: dict[str, Any], stated: StatedManifests) -> list[str]:
    total = stated.fields.get(TOTAL_REPLICAS)
    zones = plan.get(ZONES)
    if total is None or not isinstance(zones, dict) or not zones:
        return []
    if any(name.startswith(f"{ZONES}.") for name in stated.fields):
        return []
    spread = stated.fields.get(ZONE_SPREAD)
    if spread is not None:
        return [
            f"{ZONES} is compared as the hard zone spread at {spread.file}:{spread.line} runs "
            f"the manifests' {total.value} replicas: within one of each other, on the "
            f"assumption that the pods' nodes are in exactly the plan's {len(zones)} zones "
            f"({', '.join(sorted(zones))}); a node in another zone would take its share"
        ]
    placed = ", ".join(f"{zone}: {count}" for zone, count in sorted(zones.items()))
    replicas = "replica" if total.value == 1 else "replicas"
    return [
        f"{ZONES} ({placed}) is not compared: the manifests run {total.value} {replicas} "
        f"({total.file}:{total.line}) but leave which zone runs how many to the "
        "scheduler; only their total is compared"
    ]
