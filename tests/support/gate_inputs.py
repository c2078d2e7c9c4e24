"""Random, schema-valid gate inputs of every shape, for the engines' differential tests.

Each input starts from a case of the scenario corpus (tests/gate/inputs) and is
mutated: numbers of other magnitudes and digit counts (ints, integral floats, long
decimals, zero, values either side of the thresholds), zones and classes added,
renamed and removed, collections emptied or cut to one element, evidence duplicated.
Only inputs the contract (registry.policy.engine.validate_input) accepts are kept:
the gate never hands an engine anything else. A seed makes a run repeatable; the tests print it.

`generate` can tally the shapes it drew (``shapes``, names in `SHAPES`): the differential
tests run a budget of inputs and check that every shape was drawn, so a smaller budget
means fewer repeats of each shape, never a shape left out.
"""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from registry.errors import InvalidInput
from registry.policy.engine import validate_input

INPUTS = Path(__file__).resolve().parents[1] / "gate" / "inputs"

# Maps keyed by a class name, as paths from the input's root ("*" any key).
CLASS_MAPS = (
    ("workload", "classes"),
    ("plan", "admission", "classes"),
    ("plan", "claims", "per_class"),
    ("recomputation", "scenarios", "*", "per_class"),
    ("recomputation", "context_fit"),
    ("recomputation", "claims_check"),
    ("evidence", "#", "per_class"),
)

# Every shape `mutate` draws, by name: numbers (`_number`'s eleven choices, and an int
# field given as an integral float), classes, zones and collections.
NUMBER_SHAPES = (
    "zero", "round", "digit_count", "near_original", "decimals", "large", "tiny",
    "rounded", "negative", "original_nudged", "original",
)  # fmt: skip
SHAPES = frozenset(
    {f"number:{name}" for name in NUMBER_SHAPES}
    | {"number:integral_float", "class:added", "class:dropped"}
    | {"zones:none", "zones:one", "zones:many"}
    | {"evidence:empty", "evidence:single", "evidence:duplicated", "evidence:classes_cut"}
)


def corpus() -> list[dict[str, Any]]:
    return [
        json.loads(path.read_text())
        for path in sorted(INPUTS.glob("*.json"))
        if path.name != "expected.json"
    ]


def _number(rng: random.Random, original: float | int, shapes: Counter[str]) -> float | int:
    """A number of a random shape; integers stay integral (the contract's int fields)."""
    integral = isinstance(original, int)
    choice = rng.randrange(11)
    shapes[f"number:{NUMBER_SHAPES[choice]}"] += 1
    if choice == 0:
        value: float = 0.0
    elif choice == 1:
        value = float(rng.choice([1, 2, 3, 9, 10, 11, 99, 100, 101, 999, 1000, 1001]))
    elif choice == 2:  # digit counts 1..9
        value = float(rng.randrange(10 ** rng.randrange(1, 10)))
    elif choice == 3:  # either side of the original, as thresholds are
        value = float(original) * rng.choice([0.5, 0.9, 0.99, 0.999, 1.001, 1.01, 1.1, 2, 10])
    elif choice == 4:  # many decimals
        value = rng.random() * 10 ** rng.randrange(-3, 6)
    elif choice == 5:  # large magnitudes
        value = rng.random() * 10 ** rng.randrange(6, 12)
    elif choice == 6:  # tiny
        value = rng.random() * 10 ** rng.randrange(-9, -3)
    elif choice == 7:
        value = round(rng.random() * 100, rng.randrange(0, 4))
    elif choice == 8:
        value = -float(original) if original else -1.0
    elif choice == 9:
        value = float(original) + rng.choice([-1, 1]) * 10 ** rng.randrange(-6, 3)
    else:
        value = float(original)
    if integral:
        whole = round(value)
        # An int field may be given as an integral float (9.0): the contract accepts it.
        if rng.random() < 0.15:
            shapes["number:integral_float"] += 1
            return float(whole)
        return whole
    if value.is_integer() and rng.random() < 0.5:
        return int(value)
    return value


def _numeric_leaves(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _numeric_leaves(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _numeric_leaves(value, (*path, index))
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield path, doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def _maps(doc: dict[str, Any], pattern: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    found: list[Any] = [doc]
    for part in pattern:
        nxt: list[Any] = []
        for node in found:
            if part == "*" and isinstance(node, dict):
                nxt.extend(node.values())
            elif part == "#" and isinstance(node, list):
                nxt.extend(node)
            elif isinstance(node, dict) and part in node:
                nxt.append(node[part])
        found = nxt
    for node in found:
        if isinstance(node, dict):
            yield node


def _classes(doc: dict[str, Any]) -> list[str]:
    return sorted(doc.get("workload", {}).get("classes", {}))


def _add_class(rng: random.Random, doc: dict[str, Any], shapes: Counter[str]) -> None:
    names = _classes(doc)
    if not names:
        return
    shapes["class:added"] += 1
    source = rng.choice(names)
    new = f"{source}-{rng.randrange(1000)}"
    for pattern in CLASS_MAPS:
        for node in _maps(doc, pattern):
            if source in node:
                node[new] = copy.deepcopy(node[source])
    for evidence in doc.get("evidence", []):
        if source in evidence.get("classes", []) and rng.random() < 0.7:
            evidence["classes"].append(new)


def _drop_class(rng: random.Random, doc: dict[str, Any], shapes: Counter[str]) -> None:
    names = _classes(doc)
    if not names:
        return
    shapes["class:dropped"] += 1
    gone = rng.choice(names)
    everywhere = rng.random() < 0.8
    for pattern in CLASS_MAPS:
        for node in _maps(doc, pattern):
            if gone in node and (everywhere or rng.random() < 0.5):
                del node[gone]
    for evidence in doc.get("evidence", []):
        if gone in evidence.get("classes", []) and everywhere:
            evidence["classes"].remove(gone)


def _zones(rng: random.Random, doc: dict[str, Any], shapes: Counter[str]) -> None:
    count = rng.choice([0, 1, 1, 2, 3, 4, 5, 8, 12])
    shapes["zones:none" if count == 0 else "zones:one" if count == 1 else "zones:many"] += 1
    names = [f"zone-{index}{rng.choice('abc')}" for index in range(count)]
    replicas = {name: rng.choice([0, 1, 2, 3, 9, 10, 11, 40, 100, 101]) for name in names}
    doc["plan"]["replicas_per_zone"] = replicas
    if rng.random() < 0.9:
        doc["plan"]["total_replicas"] = sum(replicas.values())
    if rng.random() < 0.8:
        doc["provider"]["zones"] = list(names)


def _collections(rng: random.Random, doc: dict[str, Any], shapes: Counter[str]) -> None:
    evidence = doc.get("evidence", [])
    action = rng.randrange(4)
    if action == 0:
        shapes["evidence:empty"] += 1
        doc["evidence"] = []
    elif action == 1 and evidence:
        shapes["evidence:single"] += 1
        doc["evidence"] = [rng.choice(evidence)]
    elif action == 2 and evidence:
        shapes["evidence:duplicated"] += 1
        twin = copy.deepcopy(rng.choice(evidence))
        twin["ref"] = f"{twin['ref'].split('@')[0]}-twin@v{rng.randrange(2, 9)}"
        doc["evidence"] = [*evidence, twin]
    else:
        shapes["evidence:classes_cut"] += 1
        for item in evidence:
            if item.get("classes") and rng.random() < 0.5:
                item["classes"] = item["classes"][:1]


def mutate(rng: random.Random, base: dict[str, Any], shapes: Counter[str]) -> dict[str, Any]:
    """A copy of ``base`` mutated; the shapes drawn are added to ``shapes``."""
    doc = copy.deepcopy(base)
    for _ in range(rng.randrange(0, 3)):
        rng.choice([_add_class, _drop_class, _zones, _collections])(rng, doc, shapes)
    leaves = list(_numeric_leaves(doc))
    if leaves:
        for path, value in rng.sample(leaves, min(len(leaves), rng.randrange(1, 25))):
            _set(doc, path, _number(rng, value, shapes))
    return doc


def generate(seed: int, count: int, shapes: Counter[str] | None = None) -> Iterator[dict[str, Any]]:
    """``count`` contract-valid inputs from ``seed`` (invalid mutations are drawn again);
    ``shapes`` tallies the shapes of the inputs kept."""
    rng = random.Random(seed)
    bases = corpus()
    made = 0
    while made < count:
        drawn: Counter[str] = Counter()
        doc = mutate(rng, rng.choice(bases), drawn)
        try:
            validate_input(doc)
        except InvalidInput:
            continue
        made += 1
        if shapes is not None:
            shapes.update(drawn)
        yield doc
